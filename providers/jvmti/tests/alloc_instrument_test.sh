#!/usr/bin/env bash
# Allocation probes (exact allocation mode) from the rewriter pass the JVM's own
# verifier (-Xverify:all), run, and report every object exactly once, by its
# most-derived class: a class hierarchy with this(...) delegation, a branch before
# super(), a loop right after it, a constructor that throws, a constructor allocating
# its own class, objects made in two threads and through reflection, and classes of
# file version 48 (allocByClassId). Array probes after newarray/anewarray/
# multianewarray report each array once, with a branch to the instruction right after
# an allocation not running its probe (version 48 too). Alone (--no-calls) and together with call probes,
# which must still pair.
# usage: alloc_instrument_test.sh MARTINI_INSTRUMENT JAVAC JAVA JAVA_TEST_DIR
set -uo pipefail
instrument=$1 javac=$2 java=$3 src=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" --release 8 -d "$work/classes" "$src/alloc/old/Old.java" || exit 1
"$javac" -cp "$work/classes" -d "$work/classes" "$src/alloc/AllocSample.java" || exit 1
"$javac" -d "$work/probes" "$src/probes/martini/runtime/Probes.java" || exit 1
source "$(dirname "$0")/checks.sh"
make_version_48 "$work"/classes/old/*.class  # before 49, no class constants


for mode in alloc-only alloc-and-calls; do
  flags=(--alloc --arrays)
  [ "$mode" = alloc-only ] && flags+=(--no-calls)
  out="$work/$mode"
  mkdir -p "$out"
  "$instrument" --prefix alloc/ --prefix old/ "${flags[@]}" "$work/classes" "$out/classes" "$out/map.tsv" \
    2>"$out.log" || { cat "$out.log"; exit 1; }
  if grep -q ": left alone: \|: not instrumented: \|: no allocation probe: \|: no array probes: " "$out.log"; then
    fail "$mode: the rewriter left something alone:"; cat "$out.log"; continue; fi
  if ! "$java" -Xverify:all -cp "$out/classes:$work/probes" alloc.AllocSample old >"$out/run.txt" 2>"$out/err.txt"; then
    fail "$mode: the instrumented program failed:"; cat "$out/err.txt"; continue; fi
  grep -q "alloc sample done" "$out/run.txt" && ok || fail "$mode: the program's own output"

  # Objects reported, per class (the map names each class's probe id).
  expect_alloc() {  # expect_alloc CLASS COUNT
    local id got
    id=$(awk -F'\t' -v c="$1" '$2 == c && $3 == "<alloc>" {print $1}' "$out/map.tsv")
    got=$(awk -F'\t' -v id="$id" '$1 == "alloc" && $2 == id {print $3}' "$out/run.txt")
    [ -n "$id" ] && [ "${got:-0}" = "$2" ] && ok || fail "$mode: $1: ${got:-0} objects reported, wanted $2"
  }
  expect_alloc 'alloc/AllocSample$A' 180        # 2 per round, 80 rounds in two threads; 20 by reflection
  expect_alloc 'alloc/AllocSample$B' 163        # 2 per round; 3 by reflection (B(String) -> this())
  expect_alloc 'alloc/AllocSample$C' 80         # not counted as B or A too
  expect_alloc 'alloc/AllocSample$Circle' 80
  expect_alloc 'alloc/AllocSample$Branchy' 80
  expect_alloc 'alloc/AllocSample$Looper' 80    # the back edge after super() skips the probe
  expect_alloc 'alloc/AllocSample$Filtered' 80
  expect_alloc 'alloc/AllocSample$Leaf' 5
  expect_alloc 'alloc/AllocSample$Thrower' 5    # 2 of them throw after super()
  grep -q $'\talloc/AllocSample$Shape\t<alloc>' "$out/map.tsv" && fail "$mode: abstract Shape got a probe" || ok
  grep -q $'^duplicates\t0$' "$out/run.txt" && ok || fail "$mode: some object was reported twice"

  # Arrays, per array class and allocating method (the map names each site).
  expect_array() {  # expect_array ARRAY_CLASS METHOD COUNT
    local got
    got=$(awk -F'\t' -v c="$1" -v m="$2" '
      NR == FNR { split($4, w, " "); if ($3 == "<array>" && w[1] == c && w[2] == m) want[$1] = 1; next }
      $1 == "array" && ($2 in want) { n += $4 } END { print n + 0 }' "$out/map.tsv" "$out/run.txt")
    [ "$got" = "$3" ] && ok || fail "$mode: $1 arrays from $2: $got, wanted $3"
  }
  expect_array 'int[]' makeArrays 30            # newarray (the int[][]'s rows are the JVM's)
  expect_array 'java.lang.String[]' makeArrays 30
  expect_array 'int[][]' makeArrays 30          # multianewarray
  expect_array 'alloc.AllocSample$Elem[]' makeArrays 30
  expect_array 'alloc.AllocSample$Filtered[]' makeArrays 30
  expect_array 'long[]' makeArrays 20           # the null branch lands after the probe
  expect_array 'java.lang.Object[]' make 1      # version 48
  grep -q $'^array\t[0-9]*\t\[\[I\t30$' "$out/run.txt" && ok || fail "$mode: no int[][] reported as [[I"

  # Version 48: allocByClassId reports from every constructor; the agent keeps those
  # whose object's class is the probe's. By that test: 7 of each class.
  by_id() {  # by_id PROBE_CLASS RUNTIME_CLASS
    local id
    id=$(awk -F'\t' -v c="$1" '$2 == c && $3 == "<alloc>" {print $1}' "$out/map.tsv")
    awk -F'\t' -v id="$id" -v c="$2" '$1 == "allocById" && $2 == id && $3 == c {print $4}' "$out/run.txt"
  }
  [ "$(by_id old/Old old/Old)" = 7 ] && [ "$(by_id 'old/Old$OldChild' 'old/Old$OldChild')" = 7 ] &&
    [ "$(by_id old/Old 'old/Old$OldChild')" = 7 ] && ok ||
    fail "$mode: version 48 classes: $(grep allocById "$out/run.txt" | tr '\n' ' ')"
  still_version_48 "$mode" "$out/classes/old/Old.class"

  if [ "$mode" = alloc-and-calls ]; then
    # Call probes still count and pair with the allocation probes in the same constructors.
    probes_paired "$mode" "$out/run.txt"
    calls() {  # calls CLASS METHOD DESC -> "enters leaves exceptional"
      local id
      id=$(awk -F'\t' -v c="$1" -v m="$2" -v d="$3" '$2 == c && $3 == m && $4 == d {print $1}' "$out/map.tsv")
      awk -F'\t' -v id="$id" '$1 == "probe" && $2 == id {print $3, $4, $5}' "$out/run.txt"
    }
    [ "$(calls 'alloc/AllocSample$Thrower' '<init>' '(Z)V')" = "5 3 2" ] && ok ||
      fail "$mode: Thrower(boolean): $(calls 'alloc/AllocSample$Thrower' '<init>' '(Z)V'), wanted 5 3 2"
    [ "$(calls 'alloc/AllocSample$Leaf' '<init>' '(I)V')" = "5 5 0" ] && ok ||
      fail "$mode: Leaf(int): $(calls 'alloc/AllocSample$Leaf' '<init>' '(I)V'), wanted 5 5 0"
    [ "$(calls 'alloc/AllocSample$C' '<init>' '()V')" = "80 80 0" ] && ok ||
      fail "$mode: C(): $(calls 'alloc/AllocSample$C' '<init>' '()V'), wanted 80 80 0"
  fi
done
finish
