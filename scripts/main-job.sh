#!/usr/bin/env bash
# The main job: install, build, and profile the bundled Java program
# (examples/java/shop) with cgprof through `martini run`: a top-N table on the
# terminal, and the JSON profile and the HTML flame graph in martini-out/ (the other
# formats: `cgprof=formats=all` or `martini convert`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build -Dwerror=true >/dev/null
ninja -C build >/dev/null
set -x
build/tools/martini run --client cgprof --output martini-out -- \
  java -cp build/examples/shop-classes shop.Shop
