#!/usr/bin/env bash
# Times real Mono processes under Martini, against a plain run with the same AOT
# setting, and against Mono's own log profiler, in one interleaved run so that every
# ratio compares runs made side by side on this (shared, noisy) machine.
#
#   bash bench/mono_overhead.sh [BUILD_DIR] [REPETITIONS]      (defaults: build, 5)
#   CONFIGS="plain counts" bash bench/mono_overhead.sh ...      (a subset; plain is always run)
#   WORKLOADS="micro" bash bench/mono_overhead.sh ...           (default: nrefactory micro)
#   OTHER_BUILD=DIR bash bench/mono_overhead.sh ...            (also every Martini configuration
#                 with DIR's module and clients, as other:CONFIG, in the same interleaved
#                 run: to compare two builds of Martini side by side)
#
# Workloads (every run with -O=-aot: AOT-compiled code raises no call events):
#   nrefactory  ../shared/workloads/nrefactory/build.sh: mcs compiling four NRefactory
#               projects, four mono processes, ~340 M calls ($NREFACTORY overrides the path)
#   micro       bench/mono/CallHeavy.cs (~110 M calls: recursion, interface calls, exceptions)
# Configurations:
#   plain        no profiler
#   plain-again  plain once more: the A/A control (how far two identical runs differ)
#   no-inline    no profiler, Mono's inliner off (-O=-aot,-inline): what an instrumented
#                method loses, since Mono never inlines one
#   mono-floor   bench/mono/floor_module.cpp: every method instrumented, empty enter and
#                leave callbacks (Mono's own cost per call, before any profiler code)
#   mono-sample-floor  bench/mono/floor_module.cpp: Mono's sampler at 1000 Hz, an empty
#                sample-hit callback (Mono's own cost of sampling, beside samples)
#   none-wanted  the module with callcount filtering out every class (the filter answers
#                NONE: no method instrumented)
#   counts       every method instrumented, bench/clients/count_only (a per-thread
#                counter: the framework's own cost per call)
#   cgprof-time  cgprof time mode on every method (tree + timestamps at enter and leave;
#                no trace slices, no files)
#   samples      a SampleHit consumer asking for DR_THREAD_ID | DR_VM_CALL_STACK |
#                DR_CPU_TIMESTAMP (providers/mono/tests/events_client.cpp's shape:
#                bench/clients/sample_only), Mono's sampler at MARTINI_MONO_SAMPLE_HZ (1000)
#   cgprof-sample  cgprof=sample: trees from SampleHit at the 100 Hz of process CPU time
#                it asks for (IMpi::SetSamplingRate), no files
#   log-calls    Mono's log profiler, --profile=log:calls (libmono-profiler, installed if missing)
#   log-sample   Mono's log profiler, --profile=log:sample
#   coverage     the coverage client on the program's own classes (mcs's Mono.CSharp.*;
#                CallHeavy's all), an lcov tracefile per process
#   plain-aot    no profiler, Mono's AOT images kept (no -O=-aot): the baseline of
#   mono-coverage  Mono's own coverage profiler, --profile=coverage (libmono-profiler),
#                which with -O=-aot aborts in mcs (../shared/reference/coverage-anchors.md),
#                so it runs with AOT images, covering the JIT-compiled methods only
# Prints the median wall time of each configuration and its ratio to plain.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
reps=${2:-5}
module_dir=$build/providers/mono
count=$build/bench/clients/libcount_only.so
samples=$build/bench/clients/libsample_only.so
floor_dir=$build/bench
[ -f "$module_dir/libmono-profiler-martini.so" ] && [ -f "$count" ] && [ -f "$samples" ] &&
  [ -f "$floor_dir/libmono-profiler-floor.so" ] ||
  { echo "build first: ninja -C $build"; exit 1; }
nrefactory=${NREFACTORY:-$(pwd)/../shared/workloads/nrefactory}
[ -f "$nrefactory/build.sh" ] || nrefactory=/work/shared/workloads/nrefactory
if ! ls /usr/lib/libmono-profiler-log.so* >/dev/null 2>&1; then
  echo "installing libmono-profiler (Mono's log profiler) for the log-* configurations" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libmono-profiler >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -nologo -out:"$work/CallHeavy.exe" bench/mono/CallHeavy.cs
export LD_LIBRARY_PATH="$module_dir:$floor_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

configs=(plain plain-again no-inline mono-floor mono-sample-floor none-wanted counts cgprof-time samples cgprof-sample log-calls log-sample coverage plain-aot mono-coverage)
if [ -n "${CONFIGS:-}" ]; then
  read -r -a chosen <<<"$CONFIGS"
  configs=(plain)
  for c in "${chosen[@]}"; do
    [ "$c" = plain ] && continue
    case " plain-again no-inline mono-floor mono-sample-floor none-wanted counts cgprof-time samples cgprof-sample log-calls log-sample coverage plain-aot mono-coverage " in
      *" $c "*) configs+=("$c") ;;
      *) echo "unknown configuration '$c'"; exit 2 ;;
    esac
  done
fi
if [ -n "${OTHER_BUILD:-}" ]; then
  OTHER_BUILD=$(cd "$OTHER_BUILD" && pwd)
  for f in providers/mono/libmono-profiler-martini.so bench/clients/libcount_only.so bench/clients/libsample_only.so; do
    [ -f "$OTHER_BUILD/$f" ] || { echo "OTHER_BUILD: build $OTHER_BUILD first ($f is missing)"; exit 1; }
  done
  for c in "${configs[@]}"; do
    case $c in none-wanted|counts|cgprof-time|samples|cgprof-sample) configs+=("other:$c") ;; esac
  done
fi
read -r -a workloads <<<"${WORKLOADS:-nrefactory micro}"
# The library path a configuration's mono runs with: the other build's module first for
# other:CONFIG (Mono finds --profile=martini by name).
libs_for() {
  if [ "${1#other:}" != "$1" ]; then echo "$OTHER_BUILD/providers/mono:$floor_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else echo "$LD_LIBRARY_PATH"; fi
}
args_for() {
  local count=$count samples=$samples config=$1
  if [ "${config#other:}" != "$config" ]; then
    count=$OTHER_BUILD/bench/clients/libcount_only.so
    samples=$OTHER_BUILD/bench/clients/libsample_only.so
    config=${config#other:}
  fi
  case $config in
    plain|plain-again) echo "-O=-aot" ;;
    no-inline) echo "-O=-aot,-inline" ;;
    mono-floor) echo "-O=-aot --profile=floor" ;;
    mono-sample-floor) echo "-O=-aot --profile=floor:sample" ;;
    none-wanted) echo "-O=-aot --profile=martini:callcount=include=No.Such.Namespace.,out=/dev/null" ;;
    counts) echo "-O=-aot --profile=martini:$count" ;;
    cgprof-time) echo "-O=-aot --profile=martini:cgprof=top=0,formats=none,trace=0" ;;
    samples) echo "-O=-aot --profile=martini:$samples" ;;
    cgprof-sample) echo "-O=-aot --profile=martini:cgprof=sample,top=0,formats=none" ;;
    log-calls) echo "-O=-aot --profile=log:calls,nodefaults,output=$work/calls.mlpd" ;;
    log-sample) echo "-O=-aot --profile=log:sample,nodefaults,output=$work/sample.mlpd" ;;
    coverage) echo "-O=-aot --profile=martini:coverage=include=Mono.CSharp.,include=CallHeavy,formats=lcov,top=0,out=$work/cov-%p.info" ;;
    plain-aot) echo "" ;;
    mono-coverage) echo "--profile=coverage:output=$work/mono-cov.xml" ;;
  esac
}

declare -A times
for workload in "${workloads[@]}"; do
  echo "== $workload" >&2
  for ((r = 1; r <= reps; r++)); do
    # Each round starts one configuration later than the one before, so that no
    # configuration always runs right after the same other (caches, CPU frequency).
    n=${#configs[@]}
    for ((i = 0; i < n; i++)); do
      c=${configs[$(((i + r - 1) % n))]}
      start=$(date +%s.%N)
      # shellcheck disable=SC2046
      if [ "$workload" = nrefactory ]; then
        rm -rf "$work/out"; LD_LIBRARY_PATH=$(libs_for "$c") sh "$nrefactory/build.sh" "$work/out" $(args_for "$c") \
          >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
      else
        LD_LIBRARY_PATH=$(libs_for "$c") mono $(args_for "$c") "$work/CallHeavy.exe" >/dev/null 2>"$work/err" ||
          { cat "$work/err"; exit 1; }
      fi
      end=$(date +%s.%N)
      times[$workload/$c]+="$(echo "$end - $start" | bc) "
      rm -f "$work"/*.mlpd "$work"/cov-*.info "$work"/mono-cov.xml
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-11s %-18s %10s %8s   (median of %d interleaved runs, with -O=-aot but plain-aot and mono-coverage)\n' workload config seconds ratio "$reps"
for workload in "${workloads[@]}"; do
  base=$(median <<<"${times[$workload/plain]}")
  for c in "${configs[@]}"; do
    m=$(median <<<"${times[$workload/$c]}")
    printf '%-11s %-18s %10.2f %7.2fx\n' "$workload" "$c" "$m" "$(echo "$m / $base" | bc -l)"
  done
done
