#!/usr/bin/env bash
# The replay provider passes the conformance kit on the bundled trace.
# usage: conformance_replay_test.sh MARTINI_REPLAY SOURCE_ROOT
set -euo pipefail
out=$("$1" --client conformance "$2/examples/traces/shop.jsonl" 2>&1) || { echo "$out"; exit 1; }
echo "$out"
grep -q "conformance: PASS" <<<"$out"
source "$(dirname "$0")/checks.sh"
ok
finish
