#!/usr/bin/env bash
# The Mono provider on a real Mono: exact call counts per method against the counts the
# C# program proves itself (generics, virtual and interface calls, a static constructor,
# exceptions through 10 frames on 5 threads, finally, lambdas, recursion), the
# conformance kit, a filtered-out method not instrumented, two clients with different
# filters in one process, Environment.Exit and an unhandled exception (frames closed,
# outputs written), bad configurations, a client that throws, the AOT message.
# Then the other events and data requests (events_client.cpp on Work.cs): SampleHit with
# stacks, GcStart/GcEnd paired, moved references, every allocation of a class, contended
# monitors, RunGC from a thread Mono does not know, the shadow-stack call stack inside
# MethodEnter with a short and a long enough buffer.
# usage: mono_test.sh MODULE_DIR BUILD_ROOT TEST_EXE_DIR THROWING_CLIENT EVENTS_CLIENT
set -uo pipefail
moddir=$1 build=$2 exes=$3 throwing=$4 events=$5
callcount=$build/clients/callcount/libcallcount.so
conformance=$build/clients/conformance/libconformance.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$moddir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
source "$(dirname "$0")/../../../tests/checks.sh"

# --- exact counts, with and without Mono's AOT code ---------------------------------------
check_counts() {  # check_counts LABEL CALLCOUNT_TABLE PROGRAM_OUTPUT
  local label=$1 table=$2 out=$3 bad=0
  while read -r _ n method; do
    # callcount's rows: calls exc.exit Class.Method(sig)ret; instances of a generic method summed
    got=$(awk -v m="$method" '$3 ~ /\(/ { name = $3; sub(/\(.*/, "", name); if (name == m) s += $1 } END { print s + 0 }' "$table")
    [ "$got" = "$n" ] || { fail "$label: $method: $got calls, the program made $n"; bad=1; }
  done < <(grep '^EXPECT ' "$out")
  read -r _ n method < <(grep '^EXCEPTIONAL ' "$out")
  got=$(awk -v m="$method" '{ name = $3; sub(/\(.*/, "", name); if (name == m) s += $2 } END { print s + 0 }' "$table")
  [ "$got" = "$n" ] || { fail "$label: $method: $got exceptional exits, expected $n"; bad=1; }
  [ $bad = 0 ] && ok
}
mono --debug -O=-aot --profile=martini:callcount=top=1000,include=Counts.,out=$work/cc.txt \
  "$exes/Counts.exe" >"$work/out1" 2>"$work/err1" || { fail "Counts.exe under callcount:"; cat "$work/err1"; }
check_counts "-O=-aot" "$work/cc.txt" "$work/out1"
mono --debug --profile=martini:callcount=top=1000,include=Counts.,out=$work/cc-aot.txt \
  "$exes/Counts.exe" >"$work/out2" 2>"$work/err2" || fail "Counts.exe with AOT"
check_counts "default AOT" "$work/cc-aot.txt" "$work/out2"

# --- the conformance kit ------------------------------------------------------------------
mono --debug -O=-aot --profile=martini:conformance=report=$work/conf.jsonl "$exes/Counts.exe" \
  >/dev/null 2>"$work/err3"
grep -q "conformance: PASS" "$work/err3" && ok || { fail "conformance:"; grep conformance "$work/err3" | head -20; }

# --- two clients, different filters; a filtered-out method gets no instrumentation --------
cp "$callcount" "$work/libsecond.so"
MARTINI_MONO_VERBOSE=1 mono -O=-aot --profile="martini:callcount=include=Counts.Program,out=$work/a.txt;$work/libsecond.so=include=Counts.Square,out=$work/b.txt" \
  "$exes/Counts.exe" >/dev/null 2>"$work/err4"
if grep -q "Counts.Program.Fib(int)int" "$work/a.txt" && ! grep -q "Counts.Square" "$work/a.txt" &&
   grep -q "Counts.Square.Area()int" "$work/b.txt" && ! grep -q "Counts.Program" "$work/b.txt"; then ok
else fail "two clients with different filters:"; cat "$work/a.txt" "$work/b.txt"; fi
MARTINI_MONO_VERBOSE=1 mono -O=-aot --profile="martini:callcount=include=Counts.Circle,out=$work/c.txt" \
  "$exes/Counts.exe" >/dev/null 2>"$work/err5"
grep -q "martini: 2 methods instrumented for calls;" "$work/err5" && ok ||
  { fail "only the two wanted methods (Circle..ctor, Circle.Area) are instrumented:"; cat "$work/err5"; }

# --- Environment.Exit and an unhandled exception: frames closed, output written -----------
mono -O=-aot --profile=martini:callcount=include=Ending.,out=$work/exit.txt "$exes/Exit.exe" exit >/dev/null 2>"$work/err6"
code=$?
if [ $code = 3 ] && grep -qE "^ +4 +4  Ending.Program.Deep" "$work/exit.txt" &&
   grep -qE "^ +1 +1  Ending.Program.Main" "$work/exit.txt"; then ok
else fail "Environment.Exit (status $code):"; cat "$work/exit.txt" "$work/err6"; fi
mono -O=-aot --profile=martini:callcount=include=Ending.,out=$work/throw.txt "$exes/Exit.exe" throw >/dev/null 2>"$work/err7"
code=$?
if [ $code = 1 ] && grep -qE "^ +4 +4  Ending.Program.Deep" "$work/throw.txt"; then ok
else fail "unhandled exception (status $code):"; cat "$work/throw.txt" "$work/err7"; fi

# --- No output directory given: the files go to the current directory, and it is said ----
mkdir -p "$work/cwd"
(cd "$work/cwd" && mono -O=-aot --profile=martini:cgprof=include=Counts.*,top=0,formats=json "$exes/Counts.exe" \
  >/dev/null 2>"$work/err-cwd")
if [ -s "$work/cwd/cgprof.json" ] && grep -qF "the clients write their files to $work/cwd" "$work/err-cwd"; then ok
else fail "no output directory: cgprof.json in the current directory, and said:"; cat "$work/err-cwd"; fi

# --- bad configurations: one line naming the problem, the program runs on -----------------
bad() {  # bad LABEL EXPECTED_MESSAGE CONFIG
  mono --profile="martini:$3" "$exes/Foo.exe" >"$work/bad.out" 2>"$work/bad.err"
  local code=$?
  if [ $code = 0 ] && grep -qF -- "$2" "$work/bad.err"; then ok
  else fail "$1 (status $code), expected '$2':"; cat "$work/bad.err"; fi
}
bad "missing client" "/nonexistent/libx.so" "/nonexistent/libx.so;callcount=include=none."
bad "bad client option" "callcount: unknown option 'colour'" "callcount=colour=red"
bad "no client" "no client given" ""
bad "unreadable file" "nosuch.json" "@$work/nosuch.json"
bad "client that throws" "throwing" "$throwing"
bad "AOT message" "ran as AOT-compiled code" "callcount=include=System.Collections.Generic.List,out=$work/list.txt"

# --- other events, data requests ---------------------------------------------------------
mono --debug --profile="martini:$events" "$exes/Work.exe" >"$work/work.out" 2>"$work/work.err" ||
  fail "Work.exe under the events client"
fact() { sed -n "s/^events: $1 //p" "$work/work.err"; }
read -r samples _ spin <<<"$(fact samples)"
[ "${samples:-0}" -gt 0 ] && [ "${spin:-0}" -ge 10 ] && ok ||
  fail "SampleHit: $samples samples, $spin in Spin (a 1000 ms busy loop)"
# cgprof's sample mode: the rate it asks for (IMpi::SetSamplingRate) is taken, and the
# 1000 ms busy loop is where the samples are.
mkdir -p "$work/sampled"
mono --debug --profile="martini:$build/clients/cgprof/libcgprof.so=sample=200,top=0,formats=json,out=$work/sampled" \
  "$exes/Work.exe" >"$work/sampled.out" 2>"$work/sampled.err" || fail "Work.exe under cgprof=sample"
if grep -q "did not take" "$work/sampled.err"; then fail "cgprof=sample=200: the rate was refused: $(cat "$work/sampled.err")"
else ok; fi
python3 - "$work/sampled/cgprof.json" <<'PY' && ok || fail "cgprof=sample=200: no samples in Work.Spin ($work/sampled.err: $(tail -3 "$work/sampled.err"))"
import json, sys
p = json.load(open(sys.argv[1]))
frames = [f["name"] for f in p["frames"]]
k = [m["name"] for m in p["metrics"]].index("samples")
spin = sum(n[2 + k] for n in p["merged"]["nodes"][1:] if "Spin" in frames[n[1]])
sys.exit(0 if spin >= 10 and p.get("periodNs") == 5000000 else 1)
PY
read -r starts ends _ unpaired <<<"$(fact gc)"
[ "${starts:-0}" -ge 2 ] && [ "$starts" = "$ends" ] && [ "$unpaired" = 0 ] && ok ||
  fail "GcStart/GcEnd: $starts starts, $ends ends, $unpaired out of order"
[ "$(fact moved)" -gt 0 ] 2>/dev/null && ok || fail "GcMovedReferences: $(fact moved)"
[ "$(fact nodes)" = 100000 ] && ok || fail "ObjectAlloc: $(fact nodes) Work.Node objects, the program made 100000"
read -r contended _ entered <<<"$(fact contended)"
[ "${contended:-0}" -ge 1 ] && [ "$contended" = "$entered" ] && ok ||
  fail "contended monitors: $contended enter, $entered entered"
[ "$(fact rungc)" = MRTE_RESULT_OK ] && ok || fail "RunGC from a thread Mono does not know: $(fact rungc)"
[ "$(fact stack)" = "Work.Program.Leaf<Work.Program.Middle<Work.Program.Main" ] && ok ||
  fail "call stack inside MethodEnter: $(fact stack)"
[ "$(fact short)" = "MRTE_ERROR_BUFFER_TOO_SHORT 3" ] && ok || fail "call stack into 2 entries: $(fact short)"
read -r waits _ waited _ timedout <<<"$(fact waits)"
[ "${waits:-0}" -ge 2 ] && [ "$waits" = "$waited" ] && [ "$timedout" = 1 ] && ok ||
  fail "MonitorWait/MonitorWaited: $waits waits, $waited waited, $timedout timed out (a pulsed wait, a 10 ms one)"
read -r _ notify _ start _ join _ sleep <<<"$(fact interactions)"
[ "${notify:-0}" = 1 ] && [ "${start:-0}" = 3 ] && [ "${join:-0}" = 3 ] && [ "${sleep:-0}" -ge 1 ] && ok ||
  fail "ThreadInteraction: notify $notify (1), start $start (3), join $join (3), sleep $sleep (>= 1)"
grep -v "^events: " "$work/work.err" | grep . && fail "unexpected messages from Work.exe"

finish
