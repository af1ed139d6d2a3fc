#!/usr/bin/env bash
# The cost of sampling on a real JVM: cgprof's sample mode (SampleHit from
# AsyncGetCallTrace) at 100 Hz and 1 kHz against a plain run and against JFR's
# profile settings, in one interleaved run so that every ratio compares runs made
# side by side on this (shared, noisy) machine.
#
#   bash bench/jvm_sampling.sh [BUILD_DIR] [REPETITIONS]     (defaults: build, 7)
#   CONFIGS="sample-100 jfr-profile" bash bench/jvm_sampling.sh ...   (a subset; plain is always run)
#
# Workload: javac compiling 146 JDK sources (java.util.concurrent, .function, .regex;
# Debian's openjdk-17-source, installed if missing), as bench/jvm_overhead.sh. With
# SOURCES=354, all of java.util and its packages instead: a run about twice as long,
# where start-up weighs half as much.
# Configurations:
#   plain        no agent
#   plain-again  no agent, a second plain run in each round: the A/A control, whose
#                ratio to plain is what this machine's noise alone makes of two equal runs
#   sample-100   cgprof=sample=100 (CPU time, every thread; the JSON and HTML report written)
#   sample-1k    cgprof=sample=1000
#   wall-100     cgprof=sample=100,wall
#   sample-100-timer, sample-1k-timer  the same with the POSIX CPU timers per thread instead
#                of the perf task-clock (MARTINI_SAMPLING_CLOCK=timer)
#   sample-1k-nonative, sample-100-nonative  without the native frames' walk (MARTINI_SAMPLING_NATIVE=0):
#                the cost of native unwinding apart
#   sample-1k-nokernel   without the kernel's call chains (MARTINI_SAMPLING_KERNEL=0): their cost apart
#   sample-1k-fp     native callers by the frame-pointer chain alone (MARTINI_SAMPLING_UNWIND=fp), not
#                    the unwind tables: what DWARF unwinding costs
#   sample-100-nokernel, sample-100-fp  the same two at 100 Hz
#   sample-1k-empty, sample-100-empty  the clocks and their signals with a handler that
#                returns at once (MARTINI_SAMPLING_HANDLER=empty): the floor under the
#                sampler's own work (bench/signal_floor.sh measures it without a JVM)
#   sample-1     cgprof=sample=1: everything sampling switches on, next to no samples
#   sample-1-timer, sample-1-nokernel, sample-1-nonative  at 1 Hz, the timers, no kernel frames, no
#                native walk: what each switches on, apart from the samples
#   sample-1-events, sample-100-events  the same with CompiledMethodLoad events for the
#                debug information (MARTINI_SAMPLING_DEBUG_INFO=events, the fallback)
#                instead of the DebugNonSafepoints flag set through HotSpot's flag table
#   sample-100-nofiles  cgprof=sample=100,formats=none (no report written: what writing costs)
#   debug-info   no agent, -XX:+DebugNonSafepoints: the debug information at every
#                instruction of compiled code that CompiledMethodLoad makes HotSpot keep,
#                which AsyncGetCallTrace needs to name a frame between safepoint polls
#                (the floor of unbiased sampling with AGCT; async-profiler sets it too)
#   jfr-profile  -XX:StartFlightRecording=settings=profile (execution samples every 10 ms
#                per thread, plus JFR's other profile events), written to a file
# Prints the median wall time, the median CPU time (user + system) and the fastest
# wall time of each configuration and their ratios to plain, and the median of the
# per-round wall-time ratios (each run over the plain run of its round) with their
# quartiles and the 95% confidence interval of that median (order statistics); then,
# for the agent's configurations, the CPU its VMDeath line says it spent (last round).
# RAW=FILE keeps every run's times.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-7}
agent=$build/providers/jvmti/libmartini-jvmti.so
[ -f "$agent" ] && [ -f "$build/clients/cgprof/libcgprof.so" ] || { echo "build first: ninja -C $build"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/javac_workload.sh
javac_sources "$work" "${SOURCES:-146}"
echo "javac on $(wc -l <"$work/sources.txt") files" >&2


configs=(plain sample-100 sample-1k wall-100 jfr-profile)
all=" plain-again sample-100 sample-1k wall-100 jfr-profile sample-100-nofiles debug-info sample-100-timer sample-1k-timer sample-1 sample-1-events sample-100-events sample-1k-nonative sample-100-nonative sample-1k-nokernel sample-1k-fp sample-100-fp sample-100-nokernel sample-1k-empty sample-100-empty sample-1-timer sample-1-nokernel sample-1-nonative "
if [ -n "${CONFIGS:-}" ]; then  # a subset: CONFIGS="sample-100 jfr-profile" (plain is always run)
  read -r -a chosen <<<"$CONFIGS"
  configs=(plain)
  for c in "${chosen[@]}"; do
    case $all in
      *" $c "*) configs+=("$c") ;;
      plain) ;;
      *) echo "unknown configuration '$c'"; exit 2 ;;
    esac
  done
fi
args_for() {  # -timer, -events, -nonative, -nokernel and -fp change the environment only (below)
  local base=${1%-timer}
  base=${base%-events}
  base=${base%-nonative}
  base=${base%-nokernel}
  base=${base%-fp}
  base=${base%-empty}
  case $base in
    plain | plain-again) ;;
    sample-1) echo "-agentpath:$agent=cgprof=sample=1,top=0,out=$work/cg" ;;
    sample-100) echo "-agentpath:$agent=cgprof=sample=100,top=0,out=$work/cg" ;;
    sample-1k) echo "-agentpath:$agent=cgprof=sample=1000,top=0,out=$work/cg" ;;
    sample-100-nofiles) echo "-agentpath:$agent=cgprof=sample=100,top=0,formats=none" ;;
    wall-100) echo "-agentpath:$agent=cgprof=sample=100,wall,top=0,out=$work/cg" ;;
    debug-info) echo "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints" ;;
    jfr-profile) echo "-XX:StartFlightRecording=filename=$work/profile.jfr,settings=profile" ;;
  esac
}

declare -A wall cpu spent
TIMEFORMAT='%R %U %S'
for ((r = 1; r <= reps; r++)); do
  echo "round $r/$reps" >&2
  # Each round starts at another configuration, so that none always runs first or
  # after the same neighbour.
  n=${#configs[@]}
  for ((k = 0; k < n; k++)); do
    c=${configs[$(((r + k) % n))]}
    rm -rf "$work/out" "$work/cg" "$work/profile.jfr"
    # shellcheck disable=SC2046
    clock=perf
    [ "${c%-timer}" != "$c" ] && clock=timer
    debug=flag
    [ "${c%-events}" != "$c" ] && debug=events
    native=1
    [ "${c%-nonative}" != "$c" ] && native=0  # the native frames' walk left out: its cost apart
    kernel=1
    [ "${c%-nokernel}" != "$c" ] && kernel=0
    unwind=dwarf
    [ "${c%-fp}" != "$c" ] && unwind=fp
    handler=full
    [ "${c%-empty}" != "$c" ] && handler=empty
    { time MARTINI_SAMPLING_HANDLER=$handler MARTINI_SAMPLING_UNWIND=$unwind MARTINI_SAMPLING_KERNEL=$kernel MARTINI_SAMPLING_NATIVE=$native MARTINI_SAMPLING_CLOCK=$clock MARTINI_SAMPLING_DEBUG_INFO=$debug javac_cmd $(args_for "$c") >/dev/null 2>"$work/err"; } 2>"$work/time" ||
      { cat "$work/err"; exit 1; }
    read -r real user sys <"$work/time"
    spent[$c]=$(grep -o 'CPU spent: .*' "$work/err" || true)  # the agent's own account, last round's
    wall[$c]+="$real "
    cpu[$c]+="$(echo "$user + $sys" | bc) "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The fastest run: this machine's noise only ever slows a run down.
best() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
# Paired: each round's wall time over the plain run of the same round, then the median
# and the quartiles of those ratios (slow drift of the machine's load cancels out).
paired() {
  paste <(tr ' ' '\n' <<<"${wall[$1]}" | grep -v '^$') <(tr ' ' '\n' <<<"${wall[plain]}" | grep -v '^$') |
    awk '{print $1 / $2}' | sort -g |
    awk '{a[NR]=$1} END {q=int((NR+2)/4); if (q < 1) q=1; m=(NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2);
         # the 95% confidence interval of the median: the order statistics n/2 -+ 0.98 sqrt(n)
         lo=int(NR/2 - 0.98*sqrt(NR)); if (lo < 1) lo=1; hi=NR+1-lo;
         printf "%.3fx (%.3f-%.3f; %.3f-%.3f)", m, a[q], a[NR+1-q], a[lo], a[hi]}'
}
printf '%-18s %8s %8s %8s %8s %8s %8s  %-34s (javac, %d interleaved runs)\n' config "wall s" ratio "cpu s" ratio \
  "best s" ratio "paired wall (quartiles; 95% CI)" "$reps"
base_wall=$(median <<<"${wall[plain]}")
base_cpu=$(median <<<"${cpu[plain]}")
base_best=$(best <<<"${wall[plain]}")
for c in "${configs[@]}"; do
  w=$(median <<<"${wall[$c]}")
  u=$(median <<<"${cpu[$c]}")
  b=$(best <<<"${wall[$c]}")
  printf '%-18s %8.2f %7.3fx %8.2f %7.3fx %8.2f %7.3fx  %s\n' "$c" "$w" "$(echo "$w / $base_wall" | bc -l)" "$u" \
    "$(echo "$u / $base_cpu" | bc -l)" "$b" "$(echo "$b / $base_best" | bc -l)" "$(paired "$c")"
done
if [ -n "${RAW:-}" ]; then  # every run's wall and CPU time, one line per configuration
  for c in "${configs[@]}"; do echo "$c wall ${wall[$c]}"; echo "$c cpu ${cpu[$c]}"; done >"$RAW"
fi
for c in "${configs[@]}"; do
  if [ -n "${spent[$c]}" ]; then printf '%-18s %s\n' "$c" "${spent[$c]}"; fi
done
