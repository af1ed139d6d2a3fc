#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: once in a release build, once under
# AddressSanitizer + UndefinedBehaviorSanitizer. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test || exit 1

passed=0 failed=0
run_suite() {  # run_suite BUILD_DIR TEST_OPTIONS [meson setup options...]
  local dir=$1 test_options=$2; shift 2
  echo "== $dir: configure and build"
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; failed=$((failed + 1)); return; }
  else  # a build directory from an earlier run gets this run's options
    meson configure "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; failed=$((failed + 1)); return; }
  fi
  ninja -C "$dir" || { failed=$((failed + 1)); return; }
  echo "== $dir: test"
  # shellcheck disable=SC2086
  meson test -C "$dir" --print-errorlogs --no-rebuild $test_options
  # Count each test program's verdict from Meson's machine-readable log.
  local counts
  counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("result") in ("OK", "EXPECTEDFAIL", "SKIP"):
        ok += 1
    else:
        bad += 1
print(ok, bad)
PY
)
  passed=$((passed + ${counts% *})); failed=$((failed + ${counts#* }))
}

# Warnings are errors here (-Dwerror=true; not a project default). The first build is
# the release build packagers make (-O3, where g++ has false positives the default
# -O2 does not show), with Debian's multiarch libdir spelled out: the installed-martini
# test installs it and runs it from there. The sanitizer build is the default
# buildtype and installs to lib64, so the install test covers a second layout.
run_suite build-ci "" -Dbuildtype=release -Dwerror=true -Dlibdir=lib/x86_64-linux-gnu
# Sanitizers: client libraries are separate DSOs with hidden visibility, so UBSan's
# vptr check cannot see their type info; everything else UBSan checks stays on. Tests
# that load the JVMTI agent into a JVM are left out here (suite jvm-agent): the ASan
# runtime must be first in the process, and java is not built with it; likewise the
# Mono profiler module in mono (suite mono-module). The class-file
# rewriter's JVM tests do run (the sanitized martini-instrument rewrites; java verifies).
# The million-node HTML report (suite large) runs in the release build only: under ASan
# reading its JSON alone takes minutes.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-sanitize "--no-suite jvm-agent --no-suite mono-module --no-suite large" -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbenchmarks=disabled -Dcpp_args=-fno-sanitize=vptr -Dwerror=true -Dlibdir=lib64

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
