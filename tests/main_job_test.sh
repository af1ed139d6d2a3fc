#!/usr/bin/env bash
# The replay main job (the bundled client over the bundled trace, no runtime) prints the
# program's known counts, and bad client configurations fail with a named cause.
# usage: main_job_test.sh MARTINI_REPLAY SOURCE_ROOT
set -uo pipefail
replay=$1 root=$2
trace="$root/examples/traces/shop.jsonl"
source "$(dirname "$0")/checks.sh"
check() {  # check NAME EXPECTED_EXIT PATTERN -- COMMAND...
  local name=$1 want_rc=$2 pattern=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -eq "$want_rc" ] && grep -qE -- "$pattern" <<<"$out"; then ok; else
    fail "$name (exit $rc, wanted $want_rc; pattern '$pattern')"; echo "$out" | head -20
  fi
}
check "callcount counts placeOrder 120 times" 0 \
  ' 120 +0  com\.example\.shop\.OrderService\.placeOrder\(Lcom/example/shop/Order;\)Z' -- \
  "$replay" --client callcount "$trace"
check "callcount sees 16 exceptional exits of reserve" 0 \
  ' 120 +16  com\.example\.shop\.Inventory\.reserve\(II\)V' -- "$replay" --client callcount "$trace"
check "callcount summary names both threads" 0 'on 2 threads \(32 exceptional exits\)' -- \
  "$replay" --client callcount "$trace"
check "time option adds each method's inclusive wall time (synthetic trace clock)" 0 \
  ' 120 +0 +[0-9]+\.[0-9]{3}  com\.example\.shop\.OrderService\.placeOrder' -- \
  "$replay" --client callcount=time,top=3 "$trace"
check "unknown client is named" 1 "client 'nosuch' not found" -- "$replay" --client nosuch "$trace"
check "bad option refuses to start with the option named" 1 "unknown option 'colour'" -- \
  "$replay" --client callcount=colour=red "$trace"
check "bad option names the instantiate result" 1 "MPICL_Instantiate returned MRTE_ERROR_ILLEGAL_ARGUMENT" -- \
  "$replay" --client callcount=top=0 "$trace"
check "one bad client does not stop a good one" 0 ' 120 +0  com\.example\.shop\.OrderService' -- \
  "$replay" --client nosuch --client /nonexistent/libx.so --client callcount "$trace"
check "missing trace file is named" 1 "cannot open trace '/nonexistent.jsonl'" -- \
  "$replay" --client callcount /nonexistent.jsonl
bad=$(mktemp); trap 'rm -f "$bad"' EXIT
head -n 1500 "$trace" > "$bad"; echo '{"event":"MethodEnter","thread":1}' >> "$bad"
check "bad record stops playback, exit 2, data already collected is printed" 2 \
  'callcount: [0-9]+ calls' -- "$replay" --client callcount "$bad"
check "bad record is named with file and line" 2 ":1501: missing field \"method\"" -- \
  "$replay" --client callcount "$bad"
# One client given twice: two instances, each with its own output.
two=$(mktemp -d); trap 'rm -f "$bad"; rm -rf "$two"' EXIT
holds "one client twice: both run" \
  "$replay" --client "callcount=out=$two/A.txt" --client "callcount=out=$two/B.txt,top=1" "$trace"
holds "one client twice: the first output" grep -qE ' 120 +0  com\.example\.shop\.OrderService\.placeOrder' "$two/A.txt"
holds "one client twice: the second, with its own options" test "$(grep -c '^ *[0-9]' "$two/B.txt")" = 1
finish
