#!/usr/bin/env bash
# The JVMTI agent on a real JVM: exact call counts (checked against a JVMTI
# MethodEntry oracle in the same JVM), pairing under exceptions and threads (the
# conformance kit), filters (a filtered-out class is not rewritten), two clients with
# different filters in one JVM, and bad configurations that leave the JVM running.
# usage: agent_test.sh AGENT ORACLE_AGENT CALLCOUNT_LIB JAVAC JAVA SAMPLE_SOURCE
set -uo pipefail
agent=$1 oracle=$2 callcount=$3 javac=$4 java=$5 sample=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" -d "$work/classes" "$sample" || exit 1
source "$(dirname "$0")/checks.sh"
run() { "$java" "$@" -cp "$work/classes" sample.Sample; }

# 1. Exact counts: every sample.* method, against JVMTI MethodEntry.
run -agentpath:"$oracle=Lsample/,$work/oracle.tsv" \
    -agentpath:"$agent=callcount=top=100000,include=sample.,out=$work/cc.txt" >"$work/out1" 2>"$work/err1"
calls_match_oracle "$work/cc.txt" "$work/oracle.tsv" "$work/err1"
grep -q $'^sample.Sample.fib(I)I\t9865$' "$work/martini.tsv" && ok || fail "fib(I)I is not 9865"
grep -q '^ *20 *20  sample.Sample.thrower(I)V' "$work/cc.txt" && ok || fail "thrower: 20 calls, 20 exceptional exits"
grep -q '^ *15 *5  sample.Sample\$Child.<init>(IZ)V' "$work/cc.txt" && ok || fail "Child(int,boolean): 5 exceptional exits"
grep -q "sample done" "$work/out1" && ok || fail "the program's own output"

# A StackOverflowError thrown by the call to the enter probe: the call is not seen, and
# the agent says how many such calls there were; the counts match the oracle's less that.
"$javac" -d "$work/overflow" "$(dirname "$0")/java/overflow/Overflow.java" || exit 1
"$java" -agentpath:"$oracle=Loverflow/,$work/oracle-overflow.tsv" \
    -agentpath:"$agent=callcount=include=overflow.,out=$work/cc-overflow.txt" -cp "$work/overflow" overflow.Overflow \
    >"$work/out-overflow" 2>"$work/err-overflow"
oracle_down=$(awk -F'\t' '$1 == "overflow.Overflow.down()V" {print $2}' "$work/oracle-overflow.tsv")
counted_down=$(awk '$3 == "overflow.Overflow.down()V" {print $1}' "$work/cc-overflow.txt")
said_lost=$(sed -n 's/.* \([0-9]*\) method calls were not seen: the thread.s stack was full.*/\1/p' "$work/err-overflow")
if grep -q "overflow done 20" "$work/out-overflow" && [ -n "$oracle_down" ] && [ -n "$counted_down" ] &&
   [ "$((oracle_down - counted_down))" = "${said_lost:-0}" ]; then ok; else
  fail "stack overflows: oracle ${oracle_down:-?} calls, callcount ${counted_down:-?}, the agent said ${said_lost:-nothing} lost"
  tail -5 "$work/err-overflow"
fi

# 2. MPI's ordering and pairing promises (threads, exceptions, JDK classes too).
run -agentpath:"$agent=conformance=report=$work/conformance.jsonl" >"$work/out2" 2>"$work/err2"
grep -q "conformance: PASS" "$work/err2" && ok || { fail "conformance:"; tail -20 "$work/err2"; }
# ModuleLoad: JDK classes come from their JPMS module, the sample's from its class
# directory (the conformance kit checked the order, GetModuleInfo's answers, and that
# GetMethodInfo's module is GetClassInfo's); GetMethodInfo places the methods there.
grep '"name":"java.base"' "$work/conformance.jsonl" | grep -qE '"methods":[1-9]' &&
  grep -F "\"name\":\"$work/classes\"" "$work/conformance.jsonl" | grep -qE '"classes":[1-9][0-9]*,"methods":[1-9]' &&
  ok || { fail "modules: java.base and the class directory, with their methods:"; grep module "$work/conformance.jsonl"; }
# A class from a jar whose path needs URL encoding: the jar, decoded.
mkdir "$work/my jars" && (cd "$work/classes" && "$(dirname "$javac")/jar" cf "$work/my jars/sample app.jar" .)
"$java" -agentpath:"$agent=conformance=report=$work/conformance-jar.jsonl" -cp "$work/my jars/sample app.jar" \
  sample.Sample >/dev/null 2>"$work/err2b"
grep -q "conformance: PASS" "$work/err2b" && grep -qF "\"name\":\"$work/my jars/sample app.jar\"" "$work/conformance-jar.jsonl" &&
  ok || { fail "modules: the jar:"; grep module "$work/conformance-jar.jsonl"; tail -5 "$work/err2b"; }

# 3. A class no filter wants is not rewritten; the wanted one is.
mkdir "$work/dump"
MARTINI_DUMP_CLASSES="$work/dump" run -agentpath:"$agent=callcount=include=sample.Sample\$Child" >/dev/null 2>&1
[ -f "$work/dump/sample.Sample\$Child.class" ] && ok || fail "the wanted class was not rewritten"
[ "$(ls "$work/dump" | wc -l)" = 1 ] && ok || fail "classes nobody wants were rewritten: $(ls "$work/dump" | head)"

# java.lang.Object is never probed, even when a filter wants it (C2 crashed compiling a
# probed Object.<init>), and the program runs.
mkdir "$work/dump-object"
MARTINI_DUMP_CLASSES="$work/dump-object" run -agentpath:"$agent=callcount=include=java.lang.Object" \
  >"$work/out3" 2>&1
[ ! -f "$work/dump-object/java.lang.Object.class" ] && grep -q "sample done" "$work/out3" && ok ||
  fail "java.lang.Object was rewritten, or the program failed"

# A JDK class loaded before VMInit that a filter wants is rewritten (retransformed at
# VMInit) and its calls counted; the classes loaded before VMInit that no filter wants
# are declared from JVMTI and left alone (not one other class is rewritten).
mkdir "$work/dump-jdk"
MARTINI_DUMP_CLASSES="$work/dump-jdk" run -agentpath:"$agent=callcount=include=java.util.ArrayList,out=$work/jdk.txt" \
  >"$work/out3b" 2>&1
if [ -f "$work/dump-jdk/java.util.ArrayList.class" ] && [ -z "$(ls "$work/dump-jdk" | grep -v '^java\.util\.ArrayList')" ] &&
   grep -q 'java.util.ArrayList.add(Ljava/lang/Object;)Z' "$work/jdk.txt" && grep -q "sample done" "$work/out3b"; then ok; else
  fail "a wanted JDK class loaded before VMInit:"; ls "$work/dump-jdk" | head; head -5 "$work/jdk.txt"; tail -5 "$work/out3b"; fi

# 4. Two clients with different filters in one JVM, each sees only its own methods.
cp "$callcount" "$work/libsecond.so"
run -agentpath:"$agent=callcount=include=sample.Sample\$Child,out=$work/a.txt;$work/libsecond.so=include=sample.Sample\$Square,out=$work/b.txt" \
    >/dev/null 2>"$work/err4"
if grep -q 'Child.<init>' "$work/a.txt" && ! grep -q 'Square' "$work/a.txt" &&
   grep -q 'Square.area' "$work/b.txt" && ! grep -q 'Child' "$work/b.txt"; then ok; else
  fail "two clients' filters:"; cat "$work/a.txt" "$work/b.txt" "$work/err4"; fi

# 5. Bad configurations: one line naming the problem, the JVM runs on.
bad() {  # bad NAME PATTERN CONFIG
  "$java" -agentpath:"$agent=$3" -cp "$work/classes" sample.Sample >"$work/outb" 2>"$work/errb"
  if grep -q "sample done" "$work/outb" && grep -qE -- "$2" "$work/errb"; then ok; else
    fail "$1: wanted '$2' and the program's output"; cat "$work/errb"; fi
}
bad "unknown client" "martini: client 'nosuch' not found" "nosuch"
bad "library that does not load" "martini: client '/nonexistent/libx.so' not loaded: cannot load the library" \
    "/nonexistent/libx.so;callcount=include=none."
bad "bad client option" "callcount: unknown option 'colour'" "callcount=colour=red"
bad "empty configuration" "martini: no client given" ""
echo '{"clients": [{"client": "callcount", "optoins": "top=1"}]}' >"$work/bad.json"
bad "unknown field in the JSON configuration" "unknown field \"optoins\"" "@$work/bad.json"
bad "unreadable JSON configuration" "cannot read the configuration file" "@$work/missing.json"
bad "a directory as the configuration" "configuration file '\\.' is a directory" "@."
bad "a directory as the configuration" "configuration file '$work' is a directory" "@$work"
echo '{"clients": [{"client": "callcount", "options": "include=sample.Sample$Square,top=3"}]}' >"$work/good.json"
bad "JSON configuration" "Square.area" "@$work/good.json"

finish
