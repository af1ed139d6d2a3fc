#!/usr/bin/env bash
# Times real JVMs under Martini, against a plain run, in one interleaved run so that
# every ratio compares runs made side by side on this (shared, noisy) machine.
#
#   bash bench/jvm_overhead.sh [BUILD_DIR] [REPETITIONS]     (defaults: build, 5)
#   CONFIGS="plain counts" bash bench/jvm_overhead.sh ...     (a subset; plain is always run)
#   WORKLOADS="micro" bash bench/jvm_overhead.sh ...           (default: javac micro)
#   OTHER_BUILD=DIR bash bench/jvm_overhead.sh ...            (also every configuration with
#                 DIR's agent and clients, as other:CONFIG, in the same interleaved run: to
#                 compare two builds of Martini side by side)
#
# Workloads:
#   javac  javac compiling 146 JDK sources (java.util.concurrent, .function, .regex;
#          Debian's openjdk-17-source, installed if missing)
#   micro  bench/java/CallHeavy.java (~100 M calls: recursion, virtual calls, exceptions)
# Configurations:
#   plain         no agent
#   plain-again   plain once more: the A/A control (how far two identical runs differ)
#   none-wanted   the agent with callcount filtering out every class (classes parsed, none rewritten)
#   counts        every method instrumented, bench/clients/count_only (a per-thread counter:
#                 the framework's own cost per call)
#   counts+time   the same with DR_CPU_TIMESTAMP at every enter and leave
#   callcount     callcount on every method (a real client: a hash map update per call)
#   cgprof-counts cgprof counts mode on every method (calling-context tree, no clock)
#   cgprof-time   cgprof time mode (tree + TSC timestamps at enter and leave; no
#                 trace slices, no files: the per-call cost alone)
#   cgprof-lines  cgprof-time with `lines` (a stack walk of a few frames per new
#                 calling context, for pprof's call-site lines)
#   jvmti-entry   a JVMTI agent counting MethodEntry events (the approach Martini avoids)
#   cgprof-sample cgprof's sample mode at 100 Hz, no files (no instrumentation: on the
#                 micro program, what sampling adds to start-up and exit)
# Prints the median wall time of each configuration and its ratio to plain.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
agent=$build/providers/jvmti/libmartini-jvmti.so
oracle=$build/providers/jvmti/liboracle_agent.so
count=$build/bench/clients/libcount_only.so
[ -f "$agent" ] && [ -f "$oracle" ] && [ -f "$count" ] || { echo "build first: ninja -C $build"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/javac_workload.sh
javac_sources "$work"
javac -d "$work/micro" bench/java/CallHeavy.java

micro_cmd() { java "$@" -cp "$work/micro" CallHeavy; }

configs=(plain plain-again none-wanted counts counts+time callcount cgprof-counts cgprof-time cgprof-lines jvmti-entry)
if [ -n "${CONFIGS:-}" ]; then
  read -r -a chosen <<<"$CONFIGS"
  configs=(plain)
  for c in "${chosen[@]}"; do
    [ "$c" = plain ] && continue
    case " plain-again none-wanted counts counts+time callcount cgprof-counts cgprof-time cgprof-lines jvmti-entry cgprof-sample " in
      *" $c "*) configs+=("$c") ;;
      *) echo "unknown configuration '$c'"; exit 2 ;;
    esac
  done
fi
if [ -n "${OTHER_BUILD:-}" ]; then
  for f in providers/jvmti/libmartini-jvmti.so bench/clients/libcount_only.so; do
    [ -f "$OTHER_BUILD/$f" ] || { echo "OTHER_BUILD: build $OTHER_BUILD first ($f is missing)"; exit 1; }
  done
  for c in "${configs[@]}"; do
    case $c in plain|plain-again|jvmti-entry) ;; *) configs+=("other:$c") ;; esac
  done
fi
args_for() {
  local agent=$agent count=$count config=$1
  if [ "${config#other:}" != "$config" ]; then
    agent=$OTHER_BUILD/providers/jvmti/libmartini-jvmti.so
    count=$OTHER_BUILD/bench/clients/libcount_only.so
    config=${config#other:}
  fi
  case $config in
    plain|plain-again) ;;
    none-wanted) echo "-agentpath:$agent=callcount=include=no.such.package.,out=/dev/null" ;;
    counts) echo "-agentpath:$agent=$count" ;;
    counts+time) echo "-agentpath:$agent=$count=time" ;;
    callcount) echo "-agentpath:$agent=callcount=out=/dev/null" ;;
    cgprof-counts) echo "-agentpath:$agent=cgprof=counts,top=0,formats=none" ;;
    cgprof-time) echo "-agentpath:$agent=cgprof=top=0,formats=none,trace=0" ;;
    cgprof-lines) echo "-agentpath:$agent=cgprof=top=0,formats=none,trace=0,lines" ;;
    jvmti-entry) echo "-agentpath:$oracle=L,/dev/null" ;;
    cgprof-sample) echo "-agentpath:$agent=cgprof=sample=100,top=0,formats=none" ;;
  esac
}

read -r -a workloads <<<"${WORKLOADS:-javac micro}"
declare -A times
for workload in "${workloads[@]}"; do
  echo "== $workload" >&2
  for ((r = 1; r <= reps; r++)); do
    # Each round starts one configuration later than the one before, so that no
    # configuration always runs right after the same other (caches, CPU frequency).
    n=${#configs[@]}
    for ((i = 0; i < n; i++)); do
      c=${configs[$(((i + r - 1) % n))]}
      # shellcheck disable=SC2046
      start=$(date +%s.%N)
      if [ "$workload" = javac ]; then
        rm -rf "$work/out"; javac_cmd $(args_for "$c") >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
      else
        micro_cmd $(args_for "$c") >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
      fi
      end=$(date +%s.%N)
      times[$workload/$c]+="$(echo "$end - $start" | bc) "
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-8s %-18s %10s %8s   (median of %d interleaved runs)\n' workload config seconds ratio "$reps"
for workload in "${workloads[@]}"; do
  base=$(median <<<"${times[$workload/plain]}")
  for c in "${configs[@]}"; do
    m=$(median <<<"${times[$workload/$c]}")
    printf '%-8s %-18s %10.3f %7.3fx\n' "$workload" "$c" "$m" "$(echo "$m / $base" | bc -l)"
  done
done
