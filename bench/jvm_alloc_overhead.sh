#!/usr/bin/env bash
# Times exact allocation events on a real JVM: bench/java/AllocHeavy.java makes
# 2 million objects of one class, three calls deep, run plain and under heapprof in
# exact mode tracking only that class, in one interleaved run.
#
#   bash bench/jvm_alloc_overhead.sh [BUILD_DIR] [REPETITIONS]    (defaults: build, 5)
#
# Configurations:
#   plain        no agent
#   heapprof     heapprof=exact: object ids, ObjectFree (live objects), stacks
#   heapprof-nolive  the same without ObjectFree
# Prints the median wall time of each configuration and the cost per object against plain.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
agent=$build/providers/jvmti/libmartini-jvmti.so
[ -f "$agent" ] || { echo "build first: ninja -C $build"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac -d "$work" bench/java/AllocHeavy.java
objects=2000000
configs=(plain heapprof heapprof-nolive)
args_for() {
  case $1 in
    plain) ;;
    heapprof) echo "-agentpath:$agent=heapprof=exact,include=AllocHeavy\$Item,top=0,formats=none" ;;
    heapprof-nolive) echo "-agentpath:$agent=heapprof=exact,nolive,include=AllocHeavy\$Item,top=0,formats=none" ;;
  esac
}
declare -A times
for ((r = 1; r <= reps; r++)); do
  for c in "${configs[@]}"; do
    start=$(date +%s.%N)
    # shellcheck disable=SC2046
    java $(args_for "$c") -cp "$work" AllocHeavy >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
    end=$(date +%s.%N)
    grep -q "^sum " "$work/out" || { echo "$c: the program did not finish"; cat "$work/err"; exit 1; }
    times[$c]+="$(echo "$end - $start" | bc) "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(median <<<"${times[plain]}")
printf '%-16s %9s %8s %12s   (median of %d interleaved runs, %d objects)\n' config seconds ratio "ns/object" "$reps" "$objects"
for c in "${configs[@]}"; do
  m=$(median <<<"${times[$c]}")
  printf '%-16s %9.2f %7.2fx %12.0f\n' "$c" "$m" "$(echo "$m / $base" | bc -l)" "$(echo "($m - $base) * 1000000000 / $objects" | bc -l)"
done
