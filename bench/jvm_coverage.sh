#!/usr/bin/env bash
# What coverage costs on the JVM, in one interleaved run (each round in a rotated order)
# so that every ratio compares runs made side by side on this shared, noisy machine.
#
#   bash bench/jvm_coverage.sh [BUILD_DIR] [REPETITIONS]      (defaults: build, 5)
#   WORKLOADS="javac" bash bench/jvm_coverage.sh ...           (default: javac micro11)
#   CONFIGS="coverage callcount" bash bench/jvm_coverage.sh ...  (a subset; plain is always run)
#   BEFORE=OTHER_BUILD_DIR bash bench/jvm_coverage.sh ...     (adds coverage-before: that build's agent)
#
# Workloads:
#   javac    javac compiling 146 JDK sources (as bench/jvm_overhead.sh), every class of
#            javac itself (com.sun.tools.javac.*) covered
#   micro11  bench/java/CallHeavy.java compiled with --release 11, so that JaCoCo 0.8.6
#            (Debian's, which reads class files up to Java 15) can cover it too
# Configurations:
#   plain, plain-again   no agent (the second: the A/A control)
#   coverage             the coverage client (lines, branches, calls; formats=none)
#   coverage-before      the same with the agent of the build in $BEFORE (when set)
#   callcount-counters   callcount=counters on every method (calls from the counters)
#   callcount            callcount on every method, one event per call (the comparison)
#   jacoco               JaCoCo's agent (micro11 only: it cannot read javac's classes)
# Prints the median wall time of each configuration and its ratio to plain.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
agent=$(cd "$build" && pwd)/providers/jvmti/libmartini-jvmti.so
[ -f "$agent" ] || { echo "build first: ninja -C $build"; exit 1; }
before_agent=${BEFORE:+$(cd "$BEFORE" && pwd)/providers/jvmti/libmartini-jvmti.so}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -f /usr/share/java/org.jacoco.agent.rt.jar ] || [ ! -f /usr/share/java/asm-tree.jar ]; then
  echo "installing libjacoco-java and libasm-java for the jacoco configuration" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libjacoco-java libasm-java >/dev/null
fi
source bench/javac_workload.sh
javac_sources "$work"
javac --release 11 -d "$work/micro11" bench/java/CallHeavy.java

# Debian splits JaCoCo into jars and ships no runnable agent: the union of the runtime,
# the core and ASM, with PreMain as its Premain-Class (../shared/reference/coverage-anchors.md).
mkdir -p "$work/jacoco"
(cd "$work/jacoco" && for j in org.jacoco.agent.rt org.jacoco.core asm asm-commons asm-tree asm-analysis; do
   unzip -q -o "/usr/share/java/$j.jar" -x 'META-INF/*'; done
 printf 'Premain-Class: org.jacoco.agent.rt.internal.PreMain\n' >manifest.txt
 jar cfm ../jacocoagent.jar manifest.txt org)

micro_cmd() { java "$@" -cp "$work/micro11" CallHeavy; }

coverage_options=coverage=include=com.sun.tools.javac.,include=CallHeavy,formats=none,top=0
args_for() {
  case $1 in
    plain|plain-again) ;;
    coverage) echo "-agentpath:$agent=$coverage_options" ;;
    coverage-before) echo "-agentpath:$before_agent=$coverage_options" ;;
    callcount-counters) echo "-agentpath:$agent=callcount=counters,out=/dev/null" ;;
    callcount) echo "-agentpath:$agent=callcount=out=/dev/null" ;;
    jacoco) echo "-javaagent:$work/jacocoagent.jar=destfile=$work/jacoco.exec,excludes=org.jacoco.*:org.objectweb.*" ;;
  esac
}

read -r -a workloads <<<"${WORKLOADS:-javac micro11}"
declare -A times
for workload in "${workloads[@]}"; do
  configs=(plain plain-again coverage callcount-counters callcount)
  if [ -n "${BEFORE:-}" ]; then configs+=(coverage-before); fi
  if [ -n "${CONFIGS:-}" ]; then read -r -a configs <<<"plain $CONFIGS"; fi
  [ "$workload" = micro11 ] && configs+=(jacoco)
  echo "== $workload" >&2
  for ((r = 1; r <= reps; r++)); do
    n=${#configs[@]}
    for ((i = 0; i < n; i++)); do
      c=${configs[$(((i + r - 1) % n))]}
      rm -f "$work/jacoco.exec"
      start=$(date +%s.%N)
      # shellcheck disable=SC2046
      if [ "$workload" = javac ]; then
        rm -rf "$work/out"; javac_cmd $(args_for "$c") >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
      else
        micro_cmd $(args_for "$c") >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
      fi
      end=$(date +%s.%N)
      times[$workload/$c]+="$(echo "$end - $start" | bc) "
    done
  done
  times[$workload/configs]="${configs[*]}"
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-8s %-20s %10s %8s   (median of %d interleaved runs)\n' workload config seconds ratio "$reps"
for workload in "${workloads[@]}"; do
  base=$(median <<<"${times[$workload/plain]}")
  for c in ${times[$workload/configs]}; do
    m=$(median <<<"${times[$workload/$c]}")
    printf '%-8s %-20s %10.2f %7.2fx\n' "$workload" "$c" "$m" "$(echo "$m / $base" | bc -l)"
  done
done
