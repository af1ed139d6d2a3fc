#!/usr/bin/env bash
# CPU sampling on Mono at the rate asked for (cgprof=sample=HZ on Busy.exe, whose main
# thread and a thread it starts each burn 1200 ms of their own CPU time in
# Busy.Program.Burn while a third sleeps):
#   - perf events: at 1 kHz Burn has at least 900 stacks per second of its CPU time
#     (2160 for 2400 ms), and so has the started thread alone (1080, through
#     BurnOnThread); at 200 Hz about 200 per second; the sleeping thread next to none;
#   - POSIX CPU timers (MARTINI_SAMPLING_CLOCK=timer, or perf events refused) and
#     Mono's own sampler (MARTINI_SAMPLING_CLOCK=mono) fire at the kernel's tick: at
#     1 kHz the periods they miss are not raised as samples (Burn well under 1080) and a
#     warning names the rate asked for, the rate got and why;
#   - a rate a client raises from its SampleHit handler while sampling runs (the JVM
#     agent's tests/rate_client.cpp: 50 Hz, then 400 Hz and one more at every sample)
#     is taken at once, and the run ends (no deadlock with the stop).
# usage: sampling_test.sh MODULE_DIR BUILD_ROOT BUSY_EXE [NO_PERF_SHIM [RATE_CLIENT]] ('' for none)
set -uo pipefail
moddir=$1 build=$2 busy=$3 noperf=${4:-} rateclient=${5:-}
cgprof=$build/clients/cgprof/libcgprof.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$moddir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
source "$(dirname "$0")/../../../tests/checks.sh"

run() {  # run NAME CGPROF_OPTIONS: cgprof.json in $work/NAME, stderr in $work/NAME.err
  mkdir -p "$work/$1"
  MARTINI_MONO_VERBOSE=1 mono --debug --profile="martini:$cgprof=$2,top=0,formats=json,out=$work/$1" \
    "$busy" 1200 >"$work/$1.out" 2>"$work/$1.err" || fail "$1: Busy.exe under cgprof=$2: $(tail -3 "$work/$1.err")"
}
# stacks NAME: "<stacks through Busy.Program.Burn> <stacks of the sleeping thread> <Burn's CPU ms>
# <stacks through BurnOnThread> <the started thread's CPU ms>"
stacks() {
  python3 - "$work/$1/cgprof.json" $(sed -n 's/^BURN_CPU_NS //p' "$work/$1.out") <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
nodes, frames = p["merged"]["nodes"], p["frames"]
k = [m["name"] for m in p["metrics"]].index("samples")
def through(i, name):
    while i > 0:
        if frames[nodes[i][1]]["name"] == name: return True
        i = nodes[i][0]
    return False
burn = sum(nodes[i][2 + k] for i in range(1, len(nodes)) if through(i, "Busy.Program.Burn"))
sleeper = sum(nodes[i][2 + k] for i in range(1, len(nodes)) if through(i, "System.Threading.Thread.Sleep"))
started = sum(nodes[i][2 + k] for i in range(1, len(nodes)) if through(i, "Busy.Program.BurnOnThread"))
main_ns, thread_ns = int(sys.argv[2]), int(sys.argv[3])
print(burn, sleeper, (main_ns + thread_ns) // 1000000, started, thread_ns // 1000000)
PY
}
line() { grep "martini: sampling: [0-9]* samples" "$work/$1.err"; }

# --- perf events: true rates ---------------------------------------------------------------
run cpu-1k sample=1000
read -r burn sleeper ms started started_ms <<<"$(stacks cpu-1k)"
if line cpu-1k | grep -q "(perf task-clock, "; then
  [ "$burn" -ge $((ms * 9 / 10)) ] && ok ||
    fail "1 kHz with perf events: Burn has $burn stacks for $ms ms of CPU (at least $((ms * 9 / 10)) wanted)"
  [ "$started" -ge $((started_ms * 9 / 10)) ] && ok ||
    fail "1 kHz: the started thread has $started stacks for $started_ms ms of CPU (at least $((started_ms * 9 / 10)) wanted)"
  # Its start and its way into the sleep take a millisecond or two of CPU; asleep it takes none.
  [ "$sleeper" -le 5 ] && ok || fail "1 kHz of CPU time: the sleeping thread has $sleeper stacks (at most 5 wanted)"
  grep -q "sampling: warning" "$work/cpu-1k.err" && fail "a warning with perf events: $(cat "$work/cpu-1k.err")" || ok
  run cpu-200 sample=200
  read -r burn _ ms _ _ <<<"$(stacks cpu-200)"
  [ "$burn" -ge $((ms * 18 / 100)) ] && [ "$burn" -le $((ms * 22 / 100)) ] && ok ||
    fail "200 Hz with perf events: Burn has $burn stacks for $ms ms of CPU (about $((ms / 5)) wanted)"
elif line cpu-1k | grep -q "(POSIX CPU timers, perf_event_open refused"; then
  echo "note: perf events refused here: $(line cpu-1k)"
else
  fail "1 kHz: no sampling line naming the clock: $(cat "$work/cpu-1k.err")"
fi

# --- the clocks that fire at the kernel's tick: missed periods counted, not raised, said ---
tick_ok() {  # tick_ok NAME WHY: Burn well under its CPU time, and the warning with WHY
  local burn sleeper ms
  read -r burn sleeper ms _ _ <<<"$(stacks "$1")"
  [ "${burn:-0}" -gt 0 ] && [ "$burn" -lt $((ms * 9 / 10)) ] && ok ||
    fail "$1: Burn has $burn stacks for $ms ms of CPU: the periods missed were raised as samples?"
  grep -q "martini: sampling: warning: asked for 1000 Hz of CPU time, got about [0-9]* Hz: $2" "$work/$1.err" && ok ||
    fail "$1: no warning naming the rate got and why: $(cat "$work/$1.err")"
}
MARTINI_SAMPLING_CLOCK=timer run cpu-timer sample=1000
tick_ok cpu-timer "the POSIX CPU timers were used (MARTINI_SAMPLING_CLOCK=timer)"
MARTINI_SAMPLING_CLOCK=mono run cpu-mono sample=1000
tick_ok cpu-mono "Mono's sampler was used (MARTINI_SAMPLING_CLOCK=mono)"
if [ -n "$noperf" ]; then
  LD_PRELOAD=$noperf run cpu-noperf sample=1000
  tick_ok cpu-noperf "the POSIX CPU timers were used (perf_event_open refused, Permission denied)"
fi

if [ -n "$rateclient" ] && line cpu-1k | grep -q "(perf task-clock, "; then
  timeout -k 5 120 mono --debug --profile="martini:$rateclient=$work/rate.txt,50,400" "$busy" 1500 \
    >"$work/rate.out" 2>"$work/rate.err"
  rc=$?
  [ $rc = 0 ] && grep -q "^raise 0$" "$work/rate.txt" && ok ||
    fail "rate raised from SampleHit: exit $rc$( { [ $rc = 124 ] || [ $rc = 137 ]; } && echo ", hung"), $(tr '\n' ' ' <"$work/rate.txt" 2>/dev/null)"
  # phase SAMPLES SPAN_NS, before the raise and after
  read -r r0 r1 < <(awk '$1 == "phase" { r[n++] = $3 > 0 ? ($2 - 1) * 1e9 / $3 : 0 } END { print r[0] + 0, r[1] + 0 }' \
    "$work/rate.txt" 2>/dev/null)
  awk -v a="${r0:-0}" -v b="${r1:-0}" 'BEGIN { exit !(a > 10 && b > 4 * a) }' && ok ||
    fail "rate raised from SampleHit: ${r0:-?} samples/s at 50 Hz, then ${r1:-?} samples/s at 400+ Hz"
fi

finish
