#!/usr/bin/env bash
# The floor under signal-based sampling on this machine (bench/signal_floor.c): one
# CPU-bound thread with an empty SIGPROF handler, signalled every period of its CPU
# time by each clock a sampler can use, in interleaved rounds. What a clock costs here
# before the sampler does any work: the timer interrupt and the signal's delivery.
#
#   bash bench/signal_floor.sh [BUILD_DIR] [REPETITIONS] [HZ]    (defaults: build, 7, 1000)
#
# Prints each mode's median time, its ratio to no clock, the signals it took and the
# cost of one (the median's difference from no clock over the signals).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-7}
hz=${3:-1000}
floor=$build/bench/signal_floor
[ -x "$floor" ] || { echo "build first: ninja -C $build"; exit 1; }
modes=(none raise cpu-timer wall-timer task-clock cpu-clock task-clock-callchain)
declare -A seconds count
for ((r = 1; r <= reps; r++)); do
  n=${#modes[@]}
  for ((k = 0; k < n; k++)); do
    m=${modes[$(((r + k) % n))]}
    read -r _ s c < <("$floor" "$m" "$hz")
    seconds[$m]+="$s "
    count[$m]+="$c "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(median <<<"${seconds[none]}")
printf '%-22s %9s %8s %9s %12s   (%d Hz, %d interleaved runs)\n' mode seconds ratio signals "us/signal" "$hz" "$reps"
for m in "${modes[@]}"; do
  s=$(median <<<"${seconds[$m]}")
  c=$(median <<<"${count[$m]}")
  per=$(awk -v s="$s" -v b="$base" -v c="$c" 'BEGIN { if (c > 0) printf "%.1f", (s - b) / c * 1e6; else print "-" }')
  printf '%-22s %9.3f %7.3fx %9d %12s\n' "$m" "$s" "$(echo "$s / $base" | bc -l)" "$c" "$per"
done
