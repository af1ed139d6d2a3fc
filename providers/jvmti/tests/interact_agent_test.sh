#!/usr/bin/env bash
# Thread interactions and thread parents on a real JVM: a client observing
# ThreadInteraction gets exactly the program's notify/notifyAll/start/join/sleep/
# interrupt calls from the methods its filter accepts, with the receiver's class, the
# calling thread, and a timestamp; ThreadStart (and GetThreadInfo) name the starting
# thread as parent of the threads started from probed Thread.start() sites (parents
# do not depend on the interaction filter: every start site gets a probe when a client
# wants DR_THREAD_PARENT_ID). Without parents wanted, methods and classes the filter
# rejects are not rewritten; call counts stay
# equal to the JVMTI MethodEntry oracle's with site probes in the same methods.
# usage: interact_agent_test.sh AGENT ORACLE_AGENT INTERACT_CLIENT CALLCOUNT_LIB JAVAC JAVA JAVAP JAVA_TEST_DIR
set -uo pipefail
agent=$1 oracle=$2 client=$3 callcount=$4 javac=$5 java=$6 javap=$7 src=$8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" -d "$work/classes" "$src/interact/Interactions.java" "$src/interact/Quiet.java" "$src/interact/old/OldSync.java" || exit 1
source "$(dirname "$0")/checks.sh"
run() { "$java" "$@" -cp "$work/classes" interact.Interactions; }
opts="include=interact.,exclude=interact.Quiet,skip=quiet"

# 1. Exact counts per type, with the receiver's class.
run -agentpath:"$agent=$client=$opts,out=$work/ev.tsv" >"$work/out1" 2>"$work/err1"
grep -q "interactions done" "$work/out1" && ok || { fail "the program's own output:"; cat "$work/err1"; }
ev="$work/ev.tsv"
expect() {  # expect TYPE "class count;..." 
  local got
  got=$(awk -F'\t' -v t="$1" '$1 == "interaction" && $2 == t {print $3}' "$ev" | sort | uniq -c |
        awk '{printf "%s %s;", $2, $1}')
  [ "$got" = "$2" ] && ok || fail "$1: '$got', wanted '$2'"
}
expect notify 'java.lang.Object 3;'
expect notifyAll 'interact.Interactions$Box 2;'
expect start 'interact.Interactions$Sleeper 1;interact.Interactions$Worker 2;java.lang.Thread 1;'
expect join 'interact.Interactions$Sleeper 1;interact.Interactions$Worker 2;java.lang.Thread 1;'
expect sleep '- 2;'
expect interrupt 'interact.Interactions$Sleeper 1;'
[ "$(grep -c '^interaction' "$ev")" = 16 ] && ok || fail "$(grep -c '^interaction' "$ev") interactions, wanted 16"
main=$(awk -F'\t' '$1 == "thread" && $3 == "main" {print $2}' "$ev")
# Every interaction but the Sleeper's own sleep is made by main; all have timestamps.
[ "$(awk -F'\t' -v m="$main" '$1 == "interaction" && $4 != m' "$ev" | cut -f2)" = sleep ] && ok ||
  fail "interactions off the main thread: $(awk -F'\t' -v m="$main" '$1 == "interaction" && $4 != m' "$ev" | tr '\n' ' ')"
[ "$(awk -F'\t' '$1 == "interaction" && $6 != 1' "$ev" | wc -l)" = 0 ] && ok || fail "interactions without timestamp"
# Receivers have object ids; the same Sleeper is started, interrupted and joined.
[ "$(awk -F'\t' '$1 == "interaction" && $2 != "sleep" && $5 == 0' "$ev" | wc -l)" = 0 ] && ok || fail "receivers without object id"
[ "$(awk -F'\t' '$1 == "interaction" && $3 == "interact.Interactions$Sleeper" {print $5}' "$ev" | sort -u | wc -l)" = 1 ] &&
  ok || fail "the Sleeper has more than one object id"

# 2. Parents: the program's five threads (four counted above, and Quiet's, whose start
#    site gets a probe for the parent only) were started by main; the event and
#    GetThreadInfo agree; threads started before VMInit have none.
parents=$(awk -F'\t' -v m="$main" '$1 == "thread" && $4 == m && $5 == m {print $3}' "$ev" |
          grep -x 'plain\|quiet\|sleeper\|worker-.' | sort | tr '\n' ' ')
[ "$parents" = "plain quiet sleeper worker-1 worker-2 " ] && ok || fail "threads with main as parent: '$parents'"
[ -n "$main" ] && [ "$(awk -F'\t' -v m="$main" '$1 == "thread" && $2 == m {print $4}' "$ev")" = 0 ] && ok ||
  fail "main has a parent, or was not seen"

# 3. The filter (no parents wanted): Quiet is not rewritten, nor any JDK class; in
#    Interactions, quiet() is javac's code.
mkdir "$work/dump"
MARTINI_DUMP_CLASSES="$work/dump" run -agentpath:"$agent=$client=$opts,noparents,out=$work/np.tsv" >"$work/out3" 2>&1
grep -q "interactions done" "$work/out3" && [ "$(grep -c '^interaction' "$work/np.tsv")" = 16 ] && ok ||
  fail "without parents: $(grep -c '^interaction' "$work/np.tsv") interactions; $(tail -3 "$work/out3")"
[ "$(ls "$work/dump" | sort | tr '\n' ' ')" = 'interact.Interactions$Box.class interact.Interactions$Sleeper.class interact.Interactions.class ' ] &&
  ok || fail "rewritten classes: $(ls "$work/dump" | tr '\n' ' ')"
method_code() {  # method_code CLASSFILE METHOD -> javap -c of that method's code
  "$javap" -c -p "$1" | awk -v m="$2" '$0 ~ ("static void " m "\\(") {on=1; next} on && /^$/ {exit} on'
}
method_code "$work/classes/interact/Interactions.class" quiet >"$work/quiet.orig"
method_code "$work/dump/interact.Interactions.class" quiet >"$work/quiet.new"
[ -s "$work/quiet.orig" ] && diff -q "$work/quiet.orig" "$work/quiet.new" >/dev/null && ok ||
  fail "quiet() was rewritten: $(diff "$work/quiet.orig" "$work/quiet.new" | head -5)"
method_code "$work/dump/interact.Interactions.class" signal | grep -q 'martini/runtime/Probes.interaction' && ok ||
  fail "signal() has no site probe"

# 4. With call probes in the same methods: call counts equal the oracle's, the
#    interaction counts do not change.
run -agentpath:"$oracle=Linteract/,$work/oracle.tsv" \
    -agentpath:"$agent=callcount=top=100000,include=interact.,out=$work/cc.txt;$client=$opts,out=$work/both.tsv" \
    >"$work/out4" 2>"$work/err4"
calls_match_oracle "$work/cc.txt" "$work/oracle.tsv" "$work/err4"
diff <(grep '^interaction' "$ev" | cut -f2,3 | sort) <(grep '^interaction' "$work/both.tsv" | cut -f2,3 | sort) >/dev/null &&
  ok || fail "interactions with call probes differ"

finish
