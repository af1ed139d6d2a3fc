#!/usr/bin/env bash
# Exact allocation mode on a real JVM: a client asking for every allocation
# (interval 0) gets one ObjectAlloc per object of the classes its heap filter accepts,
# with exact counts per class (a hierarchy with this(...) delegation, two threads,
# reflection, a constructor that throws, a constructor allocating its own class,
# class files of version 48), each object once, and a stack whose innermost frame is
# the allocating method. Classes the filters leave out are not rewritten, nor is
# java.lang.Object; sampled mode rewrites nothing; call-graph events stay exact
# (against the JVMTI MethodEntry oracle) with allocation probes in the same
# constructors. Arrays (array probes after newarray/anewarray/multianewarray): exact
# counts per array class from the allocating method, DR_ARRAY_INFO, arrays of a class
# the filter leaves out not reported; with the filter wanting int[], String[] and
# Object[], JDK classes get array probes too and the program still runs.
# usage: alloc_agent_test.sh AGENT ORACLE_AGENT ALLOC_CLIENT CALLCOUNT_LIB JAVAC JAVA JAVA_TEST_DIR
set -uo pipefail
agent=$1 oracle=$2 client=$3 callcount=$4 javac=$5 java=$6 src=$7
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" --release 8 -d "$work/classes" "$src/alloc/old/Old.java" || exit 1
"$javac" -cp "$work/classes" -d "$work/classes" "$src/alloc/AllocSample.java" || exit 1
source "$(dirname "$0")/checks.sh"
make_version_48 "$work"/classes/old/*.class  # probes without class constants
run() { "$java" "$@" -cp "$work/classes" alloc.AllocSample old; }
tracked='include=alloc.|old.,exclude=alloc.AllocSample$Filtered'

# 1. Every object of the tracked classes, once. Lines: class, object id, size, thread
#    id, frame 0, frame 1, allocation site (see alloc_client.cpp).
run -agentpath:"$agent=$client=$tracked,out=$work/events.tsv" >"$work/out1" 2>"$work/err1"
grep -q "alloc sample done" "$work/out1" && ok || { fail "the program's own output:"; cat "$work/err1"; }
ev="$work/events.tsv"
count() { awk -F'\t' -v c="$1" '$1 == c' "$ev" | wc -l; }
expect_count() {  # expect_count CLASS N
  [ "$(count "$1")" = "$2" ] && ok || fail "$1: $(count "$1") ObjectAlloc events, wanted $2"
}
expect_count 'alloc.AllocSample$A' 180      # 2 per round (one through this()), 80 rounds; 20 by reflection
expect_count 'alloc.AllocSample$B' 163      # 2 per round; 3 by reflection
expect_count 'alloc.AllocSample$C' 80       # reported as C only, not as B or A
expect_count 'alloc.AllocSample$Circle' 80  # its abstract superclass Shape is never reported
expect_count 'alloc.AllocSample$Branchy' 80
expect_count 'alloc.AllocSample$Looper' 80
expect_count 'alloc.AllocSample$Leaf' 5
expect_count 'alloc.AllocSample$Thrower' 5  # 2 of them throw after super()
expect_count 'old.Old' 7                    # class file version 48
expect_count 'old.Old$OldChild' 7
expect_count 'alloc.AllocSample$Filtered' 0
expect_count 'alloc.AllocSample$Elem[]' 30      # anewarray of an application class
expect_count 'alloc.AllocSample$Filtered[]' 0   # its element class is excluded: no probes
[ "$(cut -f1 "$ev" | sort -u | grep -cv '^alloc\.\|^old\.')" = 0 ] && ok ||
  fail "events for classes no filter accepts: $(cut -f1 "$ev" | sort -u | grep -v '^alloc\.\|^old\.' | head -3)"
[ -s "$ev" ] && [ -z "$(cut -f2 "$ev" | sort | uniq -d)" ] && ! cut -f2 "$ev" | grep -qx 0 && ok ||
  fail "object ids are not one per event"
awk -F'\t' '$3 < 12' "$ev" | grep -q . && fail "objects with no size: $(awk -F'\t' '$3 < 12' "$ev" | head -2)" || ok
# Two threads: main makes 50 rounds, alloc-worker 30.
[ "$(awk -F'\t' '$1 == "alloc.AllocSample$C" {print $4}' "$ev" | sort | uniq -c | awk '{print $1}' | sort -n | tr '\n' ' ')" = "30 50 " ] &&
  ok || fail "C objects per thread: $(awk -F'\t' '$1 == "alloc.AllocSample$C" {print $4}' "$ev" | sort | uniq -c | tr '\n' ' ')"

# 2. The innermost frame is the allocating method: no probe frame, no constructor of the
#    object's own class (this(...) delegations included) except where a constructor
#    allocates another object of its class (Leaf).
site() {  # site CLASS FRAME0 -> events
  awk -F'\t' -v c="$1" -v f="$2" '$1 == c && $5 == f' "$ev" | wc -l
}
expect_site() {  # expect_site CLASS FRAME0 N
  [ "$(site "$1" "$2")" = "$3" ] && ok || fail "$1 allocated in $2: $(site "$1" "$2"), wanted $3"
}
for c in A B C Circle Branchy Looper; do
  expect_site "alloc.AllocSample\$$c" alloc.AllocSample.makeObjects \
    "$([ "$c" = A ] || [ "$c" = B ] && echo 160 || echo 80)"
done
expect_site 'alloc.AllocSample$Leaf' 'alloc.AllocSample$Leaf.<init>' 4
expect_site 'alloc.AllocSample$Leaf' alloc.AllocSample.main 1
expect_site 'alloc.AllocSample$Thrower' alloc.AllocSample.throwers 5
expect_site old.Old old.Old.make 7
expect_site 'old.Old$OldChild' old.Old.make 7
# Reflection: the innermost frame is the JDK's constructor accessor.
reflected=$(awk -F'\t' '($1 == "alloc.AllocSample$A" || $1 == "alloc.AllocSample$B") && $5 ~ /^jdk\.internal\.reflect\./' "$ev" | wc -l)
[ "$reflected" = 23 ] && ok || fail "objects made by reflection with a jdk.internal.reflect frame innermost: $reflected, wanted 23"
grep -q $'\tmartini\.runtime\.Probes\.' "$ev" && fail "a Probes frame is on an allocation stack" || ok
# The frame below makeObjects is its caller: main (main thread) or the worker's lambda.
[ "$(awk -F'\t' '$5 == "alloc.AllocSample.makeObjects" && $6 != "alloc.AllocSample.main" && $6 != "alloc.AllocSample.lambda$main$0"' "$ev" | wc -l)" = 0 ] &&
  ok || fail "frame 1 under makeObjects: $(awk -F'\t' '$5 == "alloc.AllocSample.makeObjects" {print $6}' "$ev" | sort | uniq -c | tr '\n' ' ')"
# DR_ALLOC_LOCATION names the same method as frame 0.
[ "$(awk -F'\t' '$5 != $7' "$ev" | wc -l)" = 0 ] && ok || fail "allocation site differs from frame 0: $(awk -F'\t' '$5 != $7' "$ev" | head -2)"

# Arrays of an application class: allocated in makeArrays, called by main.
expect_site 'alloc.AllocSample$Elem[]' alloc.AllocSample.makeArrays 30
[ "$(awk -F'\t' '$1 == "alloc.AllocSample$Elem[]" && $6 == "alloc.AllocSample.main"' "$ev" | wc -l)" = 30 ] && ok ||
  fail "Elem[]: frame 1 is not main"
# DR_ARRAY_INFO: OAT_OBJECT (1) and the lengths 0..29 (sum 435); objects have none.
[ "$(awk -F'\t' '$1 == "alloc.AllocSample$Elem[]" {split($8, a, ":"); if (a[1] == 1) n += a[2]; else bad++} END {print n + 0, bad + 0}' "$ev")" = "435 0" ] &&
  ok || fail "Elem[] array info: $(awk -F'\t' '$1 == "alloc.AllocSample$Elem[]" {print $8}' "$ev" | sort | uniq -c | head -3 | tr '\n' ' ')"
[ "$(awk -F'\t' '$1 !~ /\[\]$/ && $8 != "-"' "$ev" | wc -l)" = 0 ] && ok || fail "objects with array info"

# 2b. Arrays of JDK classes and primitive arrays: the filter wants them everywhere, so
#     JDK classes get array probes too (and are verified); counted where makeArrays
#     (main thread) and old.Old.make (version 48) allocate them.
run -Xverify:all -agentpath:"$agent=$client=name=int[]|long[]|int[][]|java.lang.String[]|java.lang.Object[],out=$work/arrays.tsv" \
  >"$work/out2b" 2>"$work/err2b"
grep -q "alloc sample done" "$work/out2b" && ok || { fail "the program with JDK array probes:"; tail -5 "$work/err2b"; }
grep -q "no array probes\|without array probes\|left as it is\|left as they are" "$work/err2b" && fail "array probes left out: $(grep 'no array probes\|without array probes\|left as it is\|left as they are' "$work/err2b" | head -3)" || ok
arrays() {  # arrays CLASS FRAME0 -> events
  awk -F'\t' -v c="$1" -v f="$2" '$1 == c && $5 == f' "$work/arrays.tsv" | wc -l
}
for want in 'int[] alloc.AllocSample.makeArrays 30' 'java.lang.String[] alloc.AllocSample.makeArrays 30' \
            'int[][] alloc.AllocSample.makeArrays 30' 'long[] alloc.AllocSample.makeArrays 20' \
            'java.lang.Object[] old.Old.make 1'; do
  set -- $want
  [ "$(arrays "$1" "$2")" = "$3" ] && ok || fail "$1 allocated in $2: $(arrays "$1" "$2"), wanted $3"
done
# Only the classes wanted; several JDK methods allocate them too.
[ -z "$(cut -f1 "$work/arrays.tsv" | sort -u | grep -vx 'int\[\]\|long\[\]\|int\[\]\[\]\|java\.lang\.String\[\]\|java\.lang\.Object\[\]')" ] &&
  [ "$(awk -F'\t' '$5 !~ /^(alloc|old)\./' "$work/arrays.tsv" | wc -l)" -gt 0 ] && ok ||
  fail "array classes reported: $(cut -f1 "$work/arrays.tsv" | sort | uniq -c | tr '\n' ' ')"
# The allocating method is innermost, its caller next; the allocation site is frame 0;
# array info: int[][] has 2 elements of type OAT_OBJECT (1), long[] 2 of OAT_LONG (7).
grep -q $'\tmartini\.runtime\.Probes\.' "$work/arrays.tsv" && fail "a Probes frame is on an array's stack" || ok
[ "$(awk -F'\t' '$5 == "alloc.AllocSample.makeArrays" && ($6 != "alloc.AllocSample.main" || $7 != $5)' "$work/arrays.tsv" | wc -l)" = 0 ] &&
  ok || fail "makeArrays arrays: frame 1 or site wrong: $(awk -F'\t' '$5 == "alloc.AllocSample.makeArrays"' "$work/arrays.tsv" | head -2)"
[ "$(awk -F'\t' '$5 == "alloc.AllocSample.makeArrays" && $1 == "int[][]" {print $8}' "$work/arrays.tsv" | sort -u)" = "1:2" ] &&
  [ "$(awk -F'\t' '$5 == "alloc.AllocSample.makeArrays" && $1 == "long[]" {print $8}' "$work/arrays.tsv" | sort -u)" = "7:2" ] &&
  ok || fail "array info: $(awk -F'\t' '$5 == "alloc.AllocSample.makeArrays" {print $1, $8}' "$work/arrays.tsv" | sort | uniq -c | tr '\n' ' ')"
[ -z "$(cut -f2 "$work/arrays.tsv" | sort | uniq -d)" ] && ok || fail "an array reported twice"

# 3. Only the classes some filter wants are rewritten (no call-graph client here).
mkdir "$work/dump"
MARTINI_DUMP_CLASSES="$work/dump" run -agentpath:"$agent=$client=name=alloc.AllocSample\$B,out=$work/b.tsv" \
  >/dev/null 2>"$work/err3"
[ "$(ls "$work/dump")" = 'alloc.AllocSample$B.class' ] && ok ||
  fail "rewritten classes with only alloc.AllocSample\$B wanted: $(ls "$work/dump" | head -5 | tr '\n' ' ')"
[ "$(cut -f1 "$work/b.tsv" | sort | uniq -c | awk '{print $1, $2}')" = '163 alloc.AllocSample$B' ] && ok ||
  fail "B alone: $(cut -f1 "$work/b.tsv" | sort | uniq -c | tr '\n' ' ')"
# java.lang.Object is never rewritten, even when a filter wants it (by its exact name:
# a prefix would take in java.lang.Object[], whose sites get array probes); the program runs.
mkdir "$work/dump-object"
MARTINI_DUMP_CLASSES="$work/dump-object" run -agentpath:"$agent=$client=name=java.lang.Object,out=$work/o.tsv" \
  >"$work/out3" 2>&1
[ -z "$(ls "$work/dump-object")" ] && grep -q "alloc sample done" "$work/out3" && ok ||
  fail "java.lang.Object was rewritten, or the program failed: $(ls "$work/dump-object") $(tail -3 "$work/out3")"
# Sampled mode (interval > 0) uses SampledObjectAlloc and rewrites nothing.
mkdir "$work/dump-sampled"
MARTINI_DUMP_CLASSES="$work/dump-sampled" run -agentpath:"$agent=$client=$tracked,interval=65536,out=$work/s.tsv" \
  >"$work/out4" 2>&1
[ -z "$(ls "$work/dump-sampled")" ] && grep -q "alloc sample done" "$work/out4" && ok ||
  fail "sampled mode rewrote classes: $(ls "$work/dump-sampled" | head -3)"

# 4. Call-graph events with allocation probes in the same constructors: call counts
#    equal the JVMTI MethodEntry oracle's, allocation counts stay exact.
run -agentpath:"$oracle=Lalloc/,$work/oracle.tsv" \
    -agentpath:"$agent=callcount=top=100000,include=alloc.,out=$work/cc.txt;$client=$tracked,out=$work/both.tsv" \
    >"$work/out5" 2>"$work/err5"
calls_match_oracle "$work/cc.txt" "$work/oracle.tsv" "$work/err5"
cut -f1 "$ev" | sort | uniq -c >"$work/counts1"
cut -f1 "$work/both.tsv" | sort | uniq -c >"$work/counts5"
diff -u "$work/counts1" "$work/counts5" >/dev/null && ok || fail "allocation counts with call probes: $(diff "$work/counts1" "$work/counts5")"

finish
