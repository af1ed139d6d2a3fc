#!/usr/bin/env bash
# Fuzzes the JVM provider's class-file reader/rewriter with libFuzzer under
# AddressSanitizer + UndefinedBehaviorSanitizer (providers/jvmti/tests/classfile_fuzzer.cpp).
# Not part of the test suite: the suite's MutatedClassNeverCrashes unit test runs a fixed
# set of mutants instead. Installs clang if missing (run as root then).
#
#   scripts/fuzz-classfile.sh [SECONDS]      default 60
#
# Works in build-fuzz/classfile-fuzzer/ (FUZZ_DIR overrides): the binary, the seed
# corpus (javac-compiled sample classes), the growing corpus in corpus/, and crashing
# inputs in artifacts/. Reproduce one with: $FUZZ_DIR/classfile_fuzzer artifacts/crash-...
# Exits non-zero when libFuzzer finds a crash, a leak, or a broken promise.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
dir=${FUZZ_DIR:-build-fuzz/classfile-fuzzer}
cxx=clang++-14

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
if ! command -v "$cxx" >/dev/null || ! installed libclang-rt-14-dev; then
  echo "fuzz-classfile: installing clang-14 and libclang-rt-14-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
fi
command -v javac >/dev/null || { echo "fuzz-classfile: javac is needed for the seed corpus" >&2; exit 1; }

mkdir -p "$dir/corpus" "$dir/artifacts"
echo "fuzz-classfile: building $dir/classfile_fuzzer"
"$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Iproviders/jvmti/classfile \
  providers/jvmti/classfile/bytecode.cpp providers/jvmti/classfile/class_file.cpp \
  providers/jvmti/classfile/instrumenter.cpp providers/jvmti/classfile/layout.cpp \
  providers/jvmti/classfile/planners.cpp providers/jvmti/tests/classfile_fuzzer.cpp \
  -o "$dir/classfile_fuzzer"

# Seeds: every class of Sample.java (constructors before and after super(), switches,
# lambdas, try/finally, an interface, an enum) and the probes class.
rm -rf "$dir/seed" "$dir/classes"
javac -d "$dir/classes" providers/jvmti/tests/java/sample/Sample.java \
  providers/jvmti/tests/java/probes/martini/runtime/Probes.java
mkdir -p "$dir/seed"
find "$dir/classes" -name '*.class' | while read -r f; do cp "$f" "$dir/seed/$(basename "$f" | tr '$' _)"; done

echo "fuzz-classfile: fuzzing for ${seconds}s"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$dir/classfile_fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" "$dir/seed"
