#!/usr/bin/env bash
# Peak memory of a JVM against the number of threads it started, under Martini: memory
# must follow the live threads and the profile's size, not the threads ever started.
#
#   bash bench/jvm_threads_memory.sh [BUILD_DIR] [THREADS...]   (defaults: build, 5000 20000)
#
# Workload: bench/java/ManyThreads.java (short threads, 100 alive at a time, 11 calls each).
# Configurations: plain; callcount; cgprof counts mode writing no files (its calling-context
# trees alone). Prints peak RSS and the bytes per started thread above plain.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(5000 20000)
agent=$build/providers/jvmti/libmartini-jvmti.so
[ -f "$agent" ] || { echo "build first: ninja -C $build"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac -d "$work" bench/java/ManyThreads.java

peak_kib() {  # peak RSS (KiB) of one command, run as a fresh child
  python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sys.exit(r.returncode) if r.returncode else print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

# The slope between the smallest and the largest thread count is what each started
# thread costs; the fixed cost (classes, the agent, the clients) cancels out.
first=${counts[0]}
last=${counts[${#counts[@]}-1]}
printf '%-12s' config
for n in "${counts[@]}"; do printf ' %14s' "$n thr MiB"; done
printf ' %18s\n' "bytes/thread"
for config in plain "callcount=out=/dev/null" "cgprof=counts,formats=none,top=0"; do
  declare -A kib=()
  for n in "${counts[@]}"; do
    if [ "$config" = plain ]; then
      kib[$n]=$(peak_kib java -cp "$work" ManyThreads "$n")
    else
      kib[$n]=$(peak_kib java "-agentpath:$agent=$config" -cp "$work" ManyThreads "$n")
    fi
  done
  printf '%-12s' "${config%%=*}"
  for n in "${counts[@]}"; do printf ' %14.1f' "$(echo "${kib[$n]} / 1024" | bc -l)"; done
  if [ "$first" != "$last" ]; then
    printf ' %18.0f\n' "$(echo "(${kib[$last]} - ${kib[$first]}) * 1024 / ($last - $first)" | bc -l)"
  else
    printf ' %18s\n' -
  fi
  unset kib
done
