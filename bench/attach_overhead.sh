#!/usr/bin/env bash
# Whether a JVM pays anything once Martini has attached to it and detached: the same
# workload (bench/java/GatedJavac.java: javac compiling 146 JDK sources in one JVM) runs
# WARMUP compilations, waits for a gate, then is timed for ROUNDS compilations. In
# "plain" nothing attaches; in "detached" `martini attach` profiles the warm-up with
# cgprof on every javac class (com.sun.tools.javac.*: they are retransformed with
# probes) for ATTACH seconds and detaches (they get their original bytes back) before
# the gate opens. The two alternate in one run, so every ratio compares runs made side
# by side. The first timed compilation after the detach carries the JIT's work on the
# restored methods (their compiled code went with each retransformation); the later
# ones show the JVM once it settled.
#
#   bash bench/attach_overhead.sh [BUILD_DIR] [REPETITIONS]    (defaults: build, 5)
#   WARMUP=2 ROUNDS=3 ATTACH=3 ...                              (defaults)
# Prints each configuration's median timed phase and the ratio detached / plain.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
warmup=${WARMUP:-2}
rounds=${ROUNDS:-3}
attach=${ATTACH:-3}
martini=$build/tools/martini
[ -x "$martini" ] && [ -f "$build/providers/jvmti/libmartini-jvmti.so" ] || { echo "build first: ninja -C $build"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/javac_workload.sh
javac_sources "$work"
javac --add-exports jdk.compiler/com.sun.tools.javac=ALL-UNNAMED -d "$work/driver" bench/java/GatedJavac.java

# One run: prints the timed rounds in ms.
one() {
  local config=$1 gate="$work/gate-$RANDOM"
  rm -f "$gate"
  coproc JVM { java --add-exports jdk.compiler/com.sun.tools.javac=ALL-UNNAMED -cp "$work/driver" GatedJavac \
    "$gate" "$warmup" "$rounds" -nowarn -XDignore.symbol.file --patch-module java.base="$work/java.base" \
    -d "$work/out" @"$work/sources.txt" 2>/dev/null; }
  local line pid attacher=
  read -r line <&"${JVM[0]}"
  pid=${line#ready }
  if [ "$config" = detached ]; then
    "$martini" attach "$pid" --client 'cgprof=include=com.sun.tools.javac.*,top=0,formats=json' \
      --duration "${attach}s" --output "$work/profile" 2>"$work/attach.log" >/dev/null &
    attacher=$!
  fi
  read -r line <&"${JVM[0]}"  # warm
  if [ -n "$attacher" ]; then
    wait "$attacher" || { cat "$work/attach.log" >&2; exit 1; }
  fi
  touch "$gate"
  read -r line <&"${JVM[0]}"
  wait "$JVM_PID" 2>/dev/null || true
  echo "${line#elapsed }"
}

declare -A first later
for ((r = 1; r <= reps; r++)); do
  for config in plain detached; do
    read -r -a t <<<"$(one "$config")"
    first[$config]+="${t[0]} "
    rest=0
    for ((i = 1; i < ${#t[@]}; i++)); do rest=$((rest + t[i])); done
    later[$config]+="$rest "
    echo "rep $r $config: ${t[*]} ms" >&2
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
pf=$(echo "${first[plain]}" | median)
df=$(echo "${first[detached]}" | median)
pl=$(echo "${later[plain]}" | median)
dl=$(echo "${later[detached]}" | median)
printf '%-10s %22s %8s %22s %8s\n' config "first round, median ms" ratio "later rounds, median ms" ratio
printf '%-10s %22s %8s %22s %8s\n' plain "$pf" 1.00 "$pl" 1.00
printf '%-10s %22s %8.3f %22s %8.3f\n' detached "$df" "$(echo "$df / $pf" | bc -l)" "$dl" "$(echo "$dl / $pl" | bc -l)"
