#!/usr/bin/env bash
# Methods at the class file's limits (see java/gen_large_methods.sh): the loop whose
# back edge the rewriter widens to goto_w passes the JVM's verifier (-Xverify:all),
# runs, and its probes pair; the method that would pass 64 KiB and the one whose
# conditional branch would overflow are left alone, byte for byte, and still run.
# usage: large_methods_test.sh MARTINI_INSTRUMENT JAVAC JAVA JAVA_TEST_DIR
set -uo pipefail
instrument=$1 javac=$2 java=$3 src=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$src/gen_large_methods.sh" "$work/LargeMethods.java" || exit 1
"$javac" -d "$work/classes" "$work/LargeMethods.java" || exit 1
"$javac" -d "$work/probes" "$src/probes/martini/runtime/Probes.java" || exit 1
"$instrument" "$work/classes" "$work/out" "$work/map.tsv" 2>"$work/instrument.log" || {
  cat "$work/instrument.log"; exit 1; }

source "$(dirname "$0")/../../../tests/checks.sh"
check() { holds "$@"; }  # check DESCRIPTION COMMAND...
check "tooBig left alone for the 64 KiB limit" \
  grep -q 'left alone: tooBig(II)I: .*64 KiB' "$work/instrument.log"
check "overflow left alone for its conditional branch" \
  grep -q 'left alone: overflow(II)I: a conditional branch' "$work/instrument.log"
check "exactly two methods left alone" \
  test "$(grep -c ': left alone: ' "$work/instrument.log")" = 2
check "nothing unparsable" bash -c '! grep -q "not instrumented" "$1"' _ "$work/instrument.log"

javap=$(dirname "$(readlink -f "$javac")")/javap
if [ -x "$javap" ]; then
  "$javap" -c -p -cp "$work/out" large.LargeMethods >"$work/javap.txt" 2>&1 || cat "$work/javap.txt"
  # The only goto_w of the class is widen's back edge (javac wrote none).
  check "widen's back edge became goto_w" \
    test "$(awk '/static int widen/ {m = 1} /static int overflow/ {m = 0} m && /goto_w/' "$work/javap.txt" | wc -l)" = 1
  check "no goto_w elsewhere" test "$(grep -c goto_w "$work/javap.txt")" = 1
fi

if "$java" -Xverify:all -cp "$work/out:$work/probes" large.LargeMethods >"$work/run.txt" 2>"$work/err.txt"; then ok; else
  fail "instrumented program failed:"; cat "$work/err.txt"
fi
# Same result as the original program.
"$java" -cp "$work/classes" large.LargeMethods >"$work/expected.txt" 2>&1
check "same output as the original" test "$(grep '^large done' "$work/run.txt")" = "$(cat "$work/expected.txt")"

probe() {  # probe METHOD -> "enters leaves exceptional" of its id, or ""
  local id
  id=$(awk -F'\t' -v m="$1" '$3 == m {print $1}' "$work/map.tsv")
  awk -F'\t' -v id="$id" '$1 == "probe" && $2 == id {print $3, $4, $5}' "$work/run.txt"
}
check "widen entered and left once" test "$(probe widen)" = "1 1 0"
check "small entered and left once" test "$(probe small)" = "1 1 0"
check "main entered and left once" test "$(probe main)" = "1 1 0"
check "tooBig has no probes" test -z "$(probe tooBig)"
check "overflow has no probes" test -z "$(probe overflow)"
check "no pairing violations" grep -q $'^violations\t0$' "$work/run.txt"
finish
