#!/usr/bin/env bash
# ThreadSanitizer over the concurrency tests that run without a runtime: the core's
# dispatch, loading and control channel, the thread registry (core-tests: core, and its
# ThreadRegistry.ManyThreadsAtOnce), the interpreter provider (interp-abi: OS and
# virtual threads, control from another thread) and the replay provider. The JVM's and
# Mono's own code cannot run under TSan (the runtime would have to be built with it).
# Ends with "N passed, N failed" like the other scripts; not part of scripts/test.sh
# (a third full build).
#   bash scripts/tsan.sh [BUILD_DIR]      (default: build-tsan)
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-tsan}
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Db_sanitize=thread -Db_lundef=false -Dbenchmarks=disabled -Djvm=disabled -Dmono=disabled \
    -Dwerror=true >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; echo "0 passed, 1 failed"; exit 1; }
fi
# halt_on_error: a race is a failure, not a line in a log. (meson test builds what the
# three tests need: their programs and the clients they load.)
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  meson test -C "$dir" --print-errorlogs core interp-abi replay
status=$?
if [ $status -eq 0 ]; then echo "3 passed, 0 failed"; else echo "fewer than 3 passed, some failed"; fi
exit $status
