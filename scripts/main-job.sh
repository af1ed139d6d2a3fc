#!/usr/bin/env bash
# The main job: install, build, and profile the bundled example program with the
# bundled client; prints the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
build/tools/martini-replay --client callcount=top=10 examples/traces/shop.jsonl
