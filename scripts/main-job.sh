#!/usr/bin/env bash
# The main job: install, build, and profile the bundled Java program
# (examples/java/shop) under the JVMTI agent with the bundled call-count client.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
set -x
java -agentpath:build/providers/jvmti/libmartini-jvmti.so=callcount=include=shop.,top=15 \
     -cp build/examples/shop-classes shop.Shop
