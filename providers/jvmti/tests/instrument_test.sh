#!/usr/bin/env bash
# The rewriter's output passes the JVM's own verifier (-Xverify:all), runs, and its
# probes count every call exactly, with every leave paired with its enter, including
# exceptional exits through several frames, constructors that throw before and after
# super(), loops whose back edge targets offset 0, switches, lambdas and bridges.
# usage: instrument_test.sh MARTINI_INSTRUMENT JAVAC JAVA JAVA_TEST_DIR
set -uo pipefail
instrument=$1 javac=$2 java=$3 src=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" -d "$work/classes" "$src/sample/Sample.java" || exit 1
"$javac" -d "$work/probes" "$src/probes/martini/runtime/Probes.java" || exit 1
cp -r "$work/classes" "$work/pristine"
"$instrument" --prefix sample/ "$work/classes" "$work/out" "$work/map.tsv" 2>"$work/instrument.log" || {
  cat "$work/instrument.log"; exit 1; }
if grep -q ": left alone: \|: not instrumented: " "$work/instrument.log"; then cat "$work/instrument.log"; exit 1; fi
"$java" -Xverify:all -cp "$work/out:$work/probes" sample.Sample >"$work/run.txt" 2>"$work/err.txt" || {
  echo "instrumented program failed:"; cat "$work/err.txt"; exit 1; }

source "$(dirname "$0")/checks.sh"
expect() {  # expect CLASS METHOD DESC ENTERS EXCEPTIONAL
  local row
  row=$(join -t$'\t' <(awk -F'\t' -v c="$1" -v m="$2" -v d="$3" '$2==c && $3==m && $4==d {print $1}' "$work/map.tsv") \
        <(grep '^probe' "$work/run.txt" | cut -f2- | sort -k1,1) 2>/dev/null)
  local enters leaves exc
  enters=$(cut -f2 <<<"$row"); leaves=$(cut -f3 <<<"$row"); exc=$(cut -f4 <<<"$row")
  if [ "$enters" = "$4" ] && [ "$exc" = "$5" ] && [ "$enters" = "$((leaves + exc))" ]; then ok; else
    fail "$1.$2$3: enters=$enters leaves=$leaves exceptional=$exc, wanted $4 and $5"
  fi
}
# work() runs 5 times (4 threads + main).
expect sample/Sample fib '(I)I' 9865 0                      # fib(15) = 1973 calls
expect sample/Sample countdown '(I)I' 5 0                   # back edge to offset 0
expect sample/Sample thrower '(I)V' 20 20                   # 4 frames unwound per deep()
expect sample/Sample deep '()I' 5 0                         # catches it
expect sample/Sample check '(I)I' 15 5
expect 'sample/Sample$Child' '<init>' '(IZ)V' 15 5          # throws before super()
expect 'sample/Sample$Child' '<init>' '(Ljava/lang/String;)V' 5 5  # throws after super()
expect 'sample/Sample$Child' '<init>' '(I)V' 5 0            # this(...) delegation
expect 'sample/Sample$Square' compareTo '(Ljava/lang/Object;)I' 5 0  # bridge method
expect sample/Sample 'lambda$lambdas$0' '(I)I' 25 0         # lambda body
expect sample/Sample tableSwitch '(I)I' 25 0
expect sample/Sample lookupSwitch '(I)I' 10 0
expect sample/Sample tryFinally '(I)I' 10 0
expect sample/Sample longs '(JD)J' 5 0                      # synchronized, long/double
expect sample/Sample '<clinit>' '()V' 1 0
expect 'sample/Sample$Shape' describe '()Ljava/lang/String;' 5 0  # interface default method

# Every probe pairs, and the Java-side pairing check saw no violation.
probes_paired "sample" "$work/run.txt"
# The program still does what it did.
holds "output" grep -q "sample done" "$work/run.txt"
finish
