#!/usr/bin/env bash
# SampleHit on a real JVM, through cgprof's sample mode: a known CPU split is
# attributed in proportion (with either CPU clock, and when the kernel refuses perf
# events), wall-clock mode sees a sleeping thread, a counted loop with no safepoint
# poll is attributed to its own method (inlined into its caller too), a sample in a
# method's prologue is walked from its caller and named, 64 threads loading classes
# neither crash nor hang, a rate raised from a SampleHit handler is taken (and the
# JVM still ends), a sampling-only run rewrites no class, and the report's formats say
# the profile is sampled.
# usage: sampling_test.sh AGENT JAVAC JAVA JAVA_DIR NO_PERF_SHIM RATE_CLIENT
set -uo pipefail
agent=$1 javac=$2 java=$3 javadir=$4 noperf=$5 rateclient=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac" -d "$work/classes" "$javadir/sampling/SamplingWorkload.java" || exit 1
source "$(dirname "$0")/checks.sh"
run() {  # run NAME CGPROF_OPTIONS WORKLOAD [JVM FLAGS...]
  local name=$1 options=$2 workload=$3
  shift 3
  mkdir -p "$work/$name/dump"
  MARTINI_DUMP_CLASSES="$work/$name/dump" timeout 120 "$java" "$@" \
    -agentpath:"$agent=cgprof=$options,out=$work/$name,top=5" -cp "$work/classes" SamplingWorkload "$workload" \
    >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}
# self NAME METHOD: the nanoseconds of samples whose innermost frame is METHOD.
self() { awk -v m="$2" '{ n = split($1, f, ";"); if (f[n] == m) s += $2 } END { print s + 0 }' "$work/$1/cgprof.collapsed"; }
# within NAME METHOD: the nanoseconds of samples with METHOD anywhere on the stack.
within() { awk -v m="$2" '{ if (index($1, m)) s += $2 } END { print s + 0 }' "$work/$1/cgprof.collapsed"; }
total() { awk '{ s += $2 } END { print s + 0 }' "$work/$1/cgprof.collapsed"; }
ran() {  # ran NAME WORKLOAD: exit 0, the program's own output, the report files
  if [ "$(cat "$work/$1.rc")" = 0 ] && grep -q "^done $2$" "$work/$1.out" && [ -s "$work/$1/cgprof.json" ]; then ok; else
    fail "$1: exit $(cat "$work/$1.rc"), output '$(head -c 200 "$work/$1.out")'"; tail -5 "$work/$1.err"; fi
}

# 1. CPU mode: spinA uses 1200 ms of CPU, spinB 400 ms, the sleeper none.
run cpu sample=500,formats=json+collapsed+chrome+pprof split
ran cpu split
split_ok() {  # split_ok NAME LABEL: spinA about 1.2e9 ns, spinB 0.4e9, 3:1
  local a b
  a=$(self "$1" SamplingWorkload.spinA) b=$(self "$1" SamplingWorkload.spinB)
  if [ "$b" -gt 0 ] && awk -v a="$a" -v b="$b" 'BEGIN { r = a / b; exit !(r > 2.2 && r < 4.0) }' &&
     awk -v a="$a" 'BEGIN { exit !(a > 0.8e9 && a < 1.6e9) }'; then ok; else
    fail "$2: spinA ${a} ns, spinB ${b} ns (expected about 1.2e9 and 0.4e9, 3:1)"; tail -12 "$work/$1.err"; fi
}
split_ok cpu "CPU split"
# The timers: the split, unless they missed periods (a busy machine: a thread that runs
# in slices shorter than the kernel's tick is often not running when the tick checks
# its timer), which the agent then says in a warning, as it must.
timer_split_ok() {  # timer_split_ok NAME LABEL
  if grep -q "sampling: warning: asked for" "$work/$1.err"; then
    ok; echo "note: $2: the timers missed periods here: $(grep -o 'got about [0-9]* Hz' "$work/$1.err")"
  else split_ok "$1" "$2"; fi
}
sleep=$(within cpu SamplingWorkload.sleeper)
[ "$sleep" -lt 50000000 ] && ok || fail "CPU mode sampled the sleeping thread: ${sleep} ns"
grep -q "cgprof: sampled at 500 Hz of CPU time: [0-9]* samples, [0-9]* could not be walked" "$work/cpu.err" && ok ||
  fail "the report line on the terminal"; 
grep -q '"mode":"sampled 500 Hz cpu"' "$work/cpu/cgprof.json" && grep -q '"periodNs":2000000' "$work/cpu/cgprof.json" &&
  grep -q '"samples_not_walkable":' "$work/cpu/cgprof.json" && grep -q '"name":"cpu","unit":"nanoseconds"' "$work/cpu/cgprof.json" &&
  ok || fail "the JSON does not say it is sampled, at what rate, how many failed"
grep -q synthesized "$work/cpu/cgprof.trace.json" && ok || fail "the Chrome trace is not a synthesized flame chart"
python3 - "$work/cpu/cgprof.pb.gz" <<'EOF' && ok || fail "pprof: no samples/count and cpu/nanoseconds sample types"
import gzip, sys
data = gzip.open(sys.argv[1]).read()
sys.exit(0 if all(s in data for s in (b"samples", b"count", b"cpu", b"nanoseconds", b"spinA")) else 1)
EOF
# The CPU clock: a perf task-clock by default, a signal at each period, so every sample
# is a stack of its own; MARTINI_SAMPLING_CLOCK=timer takes the POSIX CPU timers, which
# fire at the kernel's tick (250 Hz here): at 200 Hz they keep up and the split holds.
line=$(grep -o "sampling: [0-9]* samples raised at 500 Hz of CPU time ([^)]*)" "$work/cpu.err")
raised=$(sed -n 's/.*sampling: \([0-9]*\) samples.*/\1/p' <<<"$line") signals=$(sed -n 's/.*, \([0-9]*\) signals).*/\1/p' <<<"$line")
case $line in
  *"perf task-clock"*)
    [ -n "$signals" ] && [ "$signals" -ge $((raised * 9 / 10)) ] && ok ||
      fail "perf task-clock: ${signals:-no} signals for $raised samples (one each expected): $line" ;;
  *"perf_event_open refused"*) echo "note: perf events refused here, the timers were used: $line" ;;
  *) fail "the default clock: the sampling line names no perf task-clock: $(grep sampling: "$work/cpu.err")" ;;
esac
MARTINI_SAMPLING_CLOCK=timer run cpu-timer sample=200,formats=json+collapsed split
ran cpu-timer split
timer_split_ok cpu-timer "CPU split with the POSIX CPU timers"
grep -q "Hz of CPU time (POSIX CPU timers, MARTINI_SAMPLING_CLOCK=timer, [0-9]* signals" "$work/cpu-timer.err" && ok ||
  fail "the timers' sampling line: $(grep sampling: "$work/cpu-timer.err")"
# A kernel that refuses perf events (tests/no_perf_shim.cpp): the timers instead, the
# line says why, and the split holds.
LD_PRELOAD=$noperf run cpu-noperf sample=200,formats=json+collapsed split
ran cpu-noperf split
timer_split_ok cpu-noperf "CPU split with perf events refused"
grep -q "Hz of CPU time (POSIX CPU timers: perf_event_open refused, Permission denied, [0-9]* signals" \
  "$work/cpu-noperf.err" && ok || fail "perf events refused: $(grep sampling: "$work/cpu-noperf.err")"

# True rates at 1 kHz: with perf events a busy thread gives at least 900 stacks per
# second of its CPU (spinA uses 1200 ms: at least 1080 samples, 1e6 ns each); with the
# timers the rate cannot be met, the periods missed are not raised as samples (spinA
# well under its 1200 ms), and a warning says so.
run cpu-1k sample=1000,formats=json+collapsed split
ran cpu-1k split
a=$(self cpu-1k SamplingWorkload.spinA)
if grep -q "perf task-clock" "$work/cpu-1k.err"; then
  awk -v a="$a" 'BEGIN { exit !(a >= 1.08e9) }' && ok ||
    fail "1 kHz with perf events: spinA has $((a / 1000000)) stacks for 1200 ms of CPU (at least 1080 wanted)"
else
  echo "note: perf events refused here: $(grep sampling: "$work/cpu-1k.err")"
fi
MARTINI_SAMPLING_CLOCK=timer run cpu-1k-timer sample=1000,formats=json+collapsed split
ran cpu-1k-timer split
a=$(self cpu-1k-timer SamplingWorkload.spinA)
awk -v a="$a" 'BEGIN { exit !(a < 0.9e9) }' && ok ||
  fail "1 kHz with timers: spinA has ${a} ns: the missed periods were raised as samples"
grep -q "sampling: warning: asked for 1000 Hz of CPU time, got about [0-9]* Hz: MARTINI_SAMPLING_CLOCK=timer" \
  "$work/cpu-1k-timer.err" && ok || fail "1 kHz with timers: no warning: $(grep sampling: "$work/cpu-1k-timer.err")"

# Sampling only: no class rewritten, no retransformation.
[ -z "$(ls -A "$work/cpu/dump")" ] && ok || fail "a sampling-only run rewrote classes: $(ls "$work/cpu/dump" | head -3)"

# 2. Wall-clock mode: the sleeper's 1500 ms are seen (sleeping threads are sampled too).
run wall sample=200,wall,formats=json+collapsed split
ran wall split
sleep=$(within wall SamplingWorkload.sleeper)
awk -v s="$sleep" 'BEGIN { exit !(s > 1.0e9 && s < 2.0e9) }' && ok ||
  fail "wall mode: the sleeper got ${sleep} ns (expected about 1.5e9)"
grep -q "cgprof: sampled at 200 Hz of wall-clock time" "$work/wall.err" && ok || fail "wall mode's report line"

# 3. A counted loop with no safepoint poll in it: its own method, not its caller.
run counted sample=500,formats=json+collapsed counted -XX:-UseCountedLoopSafepoints -XX:LoopStripMiningIter=0
ran counted counted
# The loop runs for 1000 ms of the thread's CPU time, whatever else the machine does;
# its caller (where a sample the loop's code could not name would go) has next to none.
# (The array's making and filling before it, SamplingWorkload.filled, takes longer the
# busier the machine is: page faults, and the JIT compiling it later.)
loop=$(self counted SamplingWorkload.countedLoop) caller=$(self counted SamplingWorkload.counted)
awk -v l="$loop" -v c="$caller" 'BEGIN { exit !(l > 0.8e9 && l / (l + c) > 0.8) }' && ok ||
  fail "counted loop: countedLoop has ${loop} ns (1e9 of CPU), its caller ${caller} ns"

# 3b. The same kind of loop inlined into its caller: named only with debug information
# at every instruction of compiled code (DebugNonSafepoints, which the agent sets);
# without it most of the loop's time goes to its callers.
inlined_ok() {  # inlined_ok NAME LABEL: innerLoop has most of the time
  local loop all
  loop=$(self "$1" SamplingWorkload.innerLoop) all=$(total "$1")
  awk -v l="$loop" -v t="$all" 'BEGIN { exit !(t > 0 && l / t > 0.8) }' && ok ||
    fail "$2: innerLoop has ${loop} of ${all} ns: $(grep sampling: "$work/$1.err")"
}
flags=(-XX:-UseCountedLoopSafepoints -XX:LoopStripMiningIter=0)
run inlined sample=500,formats=json+collapsed inlined "${flags[@]}"
ran inlined inlined
inlined_ok inlined "inlined counted loop"
grep -q "from DebugNonSafepoints, set through HotSpot's flag table" "$work/inlined.err" && ok ||
  fail "the debug information's source: $(grep sampling: "$work/inlined.err")"
# The fallback for a JVM whose flag table cannot be read (CompiledMethodLoad, which
# makes HotSpot record the same debug information), taken on purpose: the same.
MARTINI_SAMPLING_DEBUG_INFO=events run inlined-events sample=500,formats=json+collapsed inlined "${flags[@]}"
ran inlined-events inlined
inlined_ok inlined-events "inlined counted loop with CompiledMethodLoad"
grep -q "from CompiledMethodLoad events" "$work/inlined-events.err" && ok ||
  fail "the fallback's source: $(grep sampling: "$work/inlined-events.err")"

# 3c. Samples in a compiled method's prologue or epilogue, which AGCT cannot walk: walked
# again from the caller, and the interrupted frame named after the compiled method its
# address lies in (found in HotSpot's code heap, or with the fallback from the code
# events), not left unknown.
named_ok() {  # named_ok NAME LABEL
  local line recovered retried named
  line=$(grep -o "[0-9]* of [0-9]* walked from the caller of an unknown frame ([0-9]* of those" "$work/$1.err")
  read -r recovered _ retried _ <<<"$line"
  named=$(sed -n 's/.*(\([0-9]*\) of those$/\1/p' <<<"$line")
  [ "${retried:-0}" -gt 10 ] && [ "${named:-0}" -ge $((recovered / 2)) ] && ok ||
    fail "$2: frames walked from the caller are not named: '${line:-no such line}'; $(grep sampling: "$work/$1.err")"
}
flags=(-XX:CompileCommand=quiet -XX:CompileCommand=dontinline,SamplingWorkload::tiny)
run calls sample=1000,formats=json+collapsed calls "${flags[@]}"
ran calls calls
named_ok calls "prologue samples"
MARTINI_SAMPLING_DEBUG_INFO=events run calls-events sample=1000,formats=json+collapsed calls "${flags[@]}"
ran calls-events calls
named_ok calls-events "prologue samples with CompiledMethodLoad"

# 4. 64 threads defining classes, at 1 kHz, in both modes: no crash, no hang, samples counted.
for mode in cpu wall; do
  opts=sample=1000,formats=json
  [ $mode = wall ] && opts=$opts,wall
  run stress-$mode "$opts" stress
  ran stress-$mode stress
  samples=$(sed -n 's/.*"samples":\([0-9]*\).*/\1/p' "$work/stress-$mode/cgprof.json")
  threads=$(grep -o '"name":"loader-[0-9]*"' "$work/stress-$mode/cgprof.json" | sort -u | wc -l)
  [ "${samples:-0}" -gt 100 ] && [ "$threads" -ge 16 ] && ok ||
    fail "stress ($mode): ${samples:-no} samples, $threads loader threads in the report"
done

# 5. A rate raised while sampling runs, from a client's SampleHit handler on the sampler
# thread (tests/rate_client.cpp: 50 Hz, then 400 Hz and one more at every sample, those
# raised while sampling stops at VMDeath too): the thread's timer or perf event takes
# the new rate, and the JVM ends (no deadlock with the stop). One thread spins for 1500
# ms of CPU; the rates are the client's samples over their timestamps' span.
# The timers raise to 200 Hz (under the kernel's 250 Hz tick), perf events to 400 Hz.
for clock in timer perf; do
  if [ $clock = timer ]; then high=200 factor=2.5; else high=400 factor=4; fi
  MARTINI_SAMPLING_CLOCK=$clock timeout -k 5 120 "$java" -agentpath:"$agent=$rateclient=$work/rate-$clock.txt,50,$high" \
    -cp "$work/classes" SamplingWorkload inlined >"$work/rate-$clock.out" 2>"$work/rate-$clock.err"
  rc=$?
  if [ $rc = 0 ] && grep -q "^done inlined$" "$work/rate-$clock.out" && grep -q "^raise 0$" "$work/rate-$clock.txt"; then
    ok
  else
    fail "rate raised ($clock): exit $rc$( { [ $rc = 124 ] || [ $rc = 137 ]; } && echo ", hung"), $(tr '\n' ' ' <"$work/rate-$clock.txt" 2>/dev/null)"
    tail -3 "$work/rate-$clock.err"
  fi
  # phase SAMPLES SPAN_NS, before the raise and after
  read -r r0 r1 < <(awk '$1 == "phase" { r[n++] = $3 > 0 ? ($2 - 1) * 1e9 / $3 : 0 } END { print r[0] + 0, r[1] + 0 }' \
    "$work/rate-$clock.txt" 2>/dev/null)
  awk -v a="${r0:-0}" -v b="${r1:-0}" -v f="$factor" 'BEGIN { exit !(a > 10 && a < 80 && b > f * a) }' && ok ||
    fail "rate raised ($clock): ${r0:-?} samples/s at 50 Hz, then ${r1:-?} samples/s at $high+ Hz ($factor times as many expected)"
done

# 6. Bad options: one line naming the problem, and the program runs on.
bad() {  # bad CGPROF_OPTIONS EXPECTED (or bad CLIENT=OPTIONS EXPECTED)
  local spec=$1
  case $spec in callcount=*|heapprof=*|threadprof=*) ;; *) spec=cgprof=$spec ;; esac
  "$java" -agentpath:"$agent=$spec" -cp "$work/classes" SamplingWorkload noop >"$work/bad.out" 2>"$work/bad.err"
  grep -q -- "$2" "$work/bad.err" && ok || fail "$spec: expected '$2', got: $(head -3 "$work/bad.err")"
}
bad sample=0 "option 'sample': '0' is not a rate in Hz"
bad sample=20000 "not a rate in Hz (1 to 10000)"
bad wall "option 'wall' needs sample mode"
bad sample,counts "sample mode takes none of counts"
# The bundled clients that cannot use samples say so.
bad callcount=sample "callcount: cannot use samples (SampleHit)"
bad heapprof=sample "cannot use samples (SampleHit): heapprof samples allocations"
bad threadprof=sample "cannot use samples (SampleHit): threadprof records monitor"

finish
