#!/usr/bin/env bash
# Site probes (thread interactions) from the rewriter pass the JVM's own verifier
# (-Xverify:all), run, and report each call once with its receiver: notify and
# notifyAll on an Object and on `this`, Thread.start/join/interrupt through a subclass
# and through Thread, join(J) and join(JI) (arguments spilled to new locals), the
# static sleep (no receiver), and a class of file version 48. Alone (--no-calls) and
# with call probes, which must still pair.
# usage: interact_instrument_test.sh MARTINI_INSTRUMENT JAVAC JAVA JAVA_TEST_DIR
set -uo pipefail
instrument=$1 javac=$2 java=$3 src=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" --release 8 -d "$work/classes" "$src/interact/old/OldSync.java" || exit 1
"$javac" -cp "$work/classes" -d "$work/classes" "$src/interact/Interactions.java" "$src/interact/Quiet.java" || exit 1
"$javac" -d "$work/probes" "$src/probes/martini/runtime/Probes.java" || exit 1
source "$(dirname "$0")/checks.sh"
make_version_48 "$work"/classes/interact/old/*.class  # no StackMapTable


for mode in sites-only sites-and-calls; do
  flags=(--sites)
  [ "$mode" = sites-only ] && flags+=(--no-calls)
  out="$work/$mode"
  mkdir -p "$out"
  "$instrument" --prefix interact/ "${flags[@]}" "$work/classes" "$out/classes" "$out/map.tsv" 2>"$out.log" ||
    { cat "$out.log"; exit 1; }
  if grep -q ": left alone: \|: not instrumented: \|: no site probes: " "$out.log"; then
    fail "$mode: the rewriter left something alone:"; cat "$out.log"; continue; fi
  if ! "$java" -Xverify:all -cp "$out/classes:$work/probes" interact.Interactions old >"$out/run.txt" 2>"$out/err.txt"; then
    fail "$mode: the instrumented program failed:"; cat "$out/err.txt"; continue; fi
  grep -q "interactions done" "$out/run.txt" && ok || fail "$mode: the program's own output"
  grep -q "sleeper was not interrupted" "$out/run.txt" && fail "$mode: the interrupt did not arrive" || ok

  # site METHOD CALL DESC -> "receiver-class count" lines of that site's reports
  site() {
    local ids
    ids=$(awk -F'\t' -v m="$1" -v c="$2" -v d="$3" '$3 == "<site>" {split($4, f, " ");
          if (f[2] == m && f[4] ~ ("\\." c "$") && f[5] == d) print $1}' "$out/map.tsv")
    for id in $ids; do awk -F'\t' -v id="$id" '$1 == "site" && $2 == id {print $3, $4}' "$out/run.txt"; done | sort | tr '\n' ';'
  }
  expect() {  # expect METHOD CALL DESC WANTED
    local got
    got=$(site "$1" "$2" "$3")
    [ "$got" = "$4" ] && ok || fail "$mode: $1 -> $2$3: '$got', wanted '$4'"
  }
  expect signal notify '()V' 'java/lang/Object 3;'
  expect ping notifyAll '()V' 'interact/Interactions$Box 1;'
  expect main notifyAll '()V' 'interact/Interactions$Box 1;'
  expect startAll start '()V' 'interact/Interactions$Worker 2;java/lang/Thread 1;'
  expect joinAll join '()V' 'interact/Interactions$Worker 1;'
  expect joinAll join '(J)V' 'interact/Interactions$Worker 1;'   # argument spilled
  expect joinAll join '(JI)V' 'java/lang/Thread 1;'              # two arguments spilled
  expect main sleep '(JI)V' '- 1;'
  expect run sleep '(J)V' '- 1;- 1;'                              # Sleeper.run, OldSync.run
  expect main interrupt '()V' 'interact/Interactions$Sleeper 1;'
  expect main join '()V' 'interact/Interactions$Sleeper 1;'
  # version 48, verified by type inference
  [ "$(awk -F'\t' '$2 == "interact/old/OldSync" && $3 == "<site>"' "$out/map.tsv" | wc -l)" = 4 ] && ok ||
    fail "$mode: OldSync sites: $(grep OldSync "$out/map.tsv" | tr '\n' ' ')"
  still_version_48 "$mode" "$out/classes/interact/old/OldSync.class"
  if [ "$mode" = sites-and-calls ]; then
    probes_paired "$mode" "$out/run.txt"
  fi
done
finish
