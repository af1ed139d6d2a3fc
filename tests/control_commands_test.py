#!/usr/bin/env python3
"""Every `martini control` command end to end on a JVM under `martini run`, with cgprof,
heapprof, threadprof and a client written to the MPI document (tests/control/ec_client.cpp, which logs
every external-control event it gets): per-thread pause and resume (by name), a named
sample point, an interval point (cgprof's exact mode, heapprof and threadprof say they keep
none), global pause and resume, a new output directory, a custom command and
terminate. tests/control/Workers.java runs phases with known call counts on two
threads, so what cgprof counted is known exactly. Also: bad commands, unknown
threads, unknown processes, a process without Martini.

usage: control_commands_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC EC_CLIENT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run  # noqa: E402

build, source, javac, ec_client = (os.path.abspath(a) for a in sys.argv[1:5])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="control-commands-test-")
check = Checks()
classes = os.path.join(work, "classes")
run([javac, "-d", classes, os.path.join(source, "tests", "control", "Workers.java")])
log = os.path.join(work, "events.log")
out = os.path.join(work, "out")
out2 = os.path.join(work, "out2")

proc = subprocess.Popen([martini, "run", "--client", "cgprof=include=Workers.?,counts,top=0,formats=json",
                         "--client", "heapprof=exact,include=Workers$Box,top=0,formats=json",
                         "--client", "threadprof=top=0,formats=json",
                         "--client", f"{ec_client}={log}", "--output", out, "--", "java", "-cp", classes,
                         "Workers", work], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
printed = []


def control(*args, expect=0):
    r = run([martini, "control", pid, *args], expect=expect, timeout=60)
    return r


def phase(n):
    """Runs phase n on both threads and waits until both printed it."""
    open(os.path.join(work, f"go{n}"), "w").close()
    want = {f"worker-a {n}", f"worker-b {n}"}
    while want:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the program ended before phase {n} was done")
        printed.append(line.strip())
        want.discard(line.strip())


try:
    first = proc.stdout.readline()
    pid = first.split()[1] if first.startswith("ready ") else "0"
    check("the program started", pid != "0", first)
    phase(1)  # a(): counted on both threads
    # Another local user (nobody, through setpriv) reaches none of it: pause, output,
    # terminate and attach against this process are refused, and nothing happens.
    if os.geteuid() == 0 and shutil.which("setpriv"):
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        theirs = os.path.join(tempfile.gettempdir(), f"martini-nobody-{os.getpid()}")
        for args in (["control", pid, "pause"], ["control", pid, "output", theirs], ["control", pid, "terminate"],
                     ["attach", pid, "--duration", "1s"]):
            r = run(nobody + [martini, *args], expect=1, timeout=60)
            check(f"another user's {' '.join(args[::2][:2])}: refused", r.returncode == 1, r.stderr)
        check("another user's output: no directory made", not os.path.exists(theirs))
    # Nothing Martini made is writable by other users.
    fifo = f"/tmp/martini-{pid}.ctl"
    check("the control FIFO is the user's alone", os.path.exists(fifo) and (os.stat(fifo).st_mode & 0o077) == 0,
          oct(os.stat(fifo).st_mode) if os.path.exists(fifo) else "missing")
    r = control("pause", "--thread", "worker-b")
    check("pause one thread by name", r.returncode == 0 and "pause-thread" in r.stderr, r.stderr)
    phase(2)  # b(): counted on worker-a only
    r = control("resume", "--thread", "worker-b")
    check("resume it", r.returncode == 0, r.stderr)
    r = control("sample", "after-b")
    check("a named sample point", r.returncode == 0 and "sample after-b" in r.stderr, r.stderr)
    r = control("interval", "i1")
    check("an interval point", r.returncode == 0 and "interval i1" in r.stderr, r.stderr)
    r = control("pause")
    check("pause every thread", r.returncode == 0, r.stderr)
    phase(3)  # c(): counted nowhere
    r = control("resume")
    check("resume every thread", r.returncode == 0, r.stderr)
    r = control("output", out2)
    check("a new output directory", r.returncode == 0, r.stderr)
    r = control("custom", "300", "hello world")
    check("a custom command", r.returncode == 0, r.stderr)
    phase(4)  # d(): counted on both
    r = control("terminate")
    check("terminate", r.returncode == 0 and "terminate" in r.stderr, r.stderr)
    phase(5)  # e(): the program runs on, nothing is counted
    # Bad commands on a live process, after terminate: nobody listens any more.
    r = control("pause", expect=1)
    check("after terminate nobody listens", "no Martini agent is listening" in r.stderr, r.stderr)
    rest, err = rest_of(proc, 120)
    printed += rest.split("\n")
finally:
    if proc.poll() is None:
        proc.kill()
check("the program ran to its end", proc.returncode == 0 and any(p.startswith("end ") for p in printed), f"status {proc.returncode}\n" +
      "\n".join(printed) + err)
check("clients without intervals say so at an interval point and write nothing",
      all(f"{tool}: interval point 'i1' not written: {tool} keeps no intervals" in err
          for tool in ("cgprof", "heapprof", "threadprof")) and
      not any("-i1." in f for f in os.listdir(out)), err)


def calls(path):
    p = json.load(open(path))
    frames = [f["name"] for f in p["frames"]]
    k = [m["name"] for m in p["metrics"]].index("calls")
    per_thread = {}
    for t in p["threads"]:
        counts = per_thread.setdefault(t["name"], {})
        for node in t["nodes"][1:]:
            counts[frames[node[1]]] = counts.get(frames[node[1]], 0) + node[2 + k]
    return per_thread


snap = os.path.join(out, "cgprof-after-b.json")
check("the sample point's profile is written, named after it", os.path.exists(snap), os.listdir(out))
if os.path.exists(snap):
    c = calls(snap)
    check("sample point: a() on both threads, b() only on the thread not paused",
          c.get("worker-a") == {"Workers.a": 100, "Workers.b": 200} and c.get("worker-b") == {"Workers.a": 100}, c)
final = os.path.join(out2, "cgprof.json")
check("terminate wrote the profile in the new output directory", os.path.exists(final),
      os.listdir(out2) if os.path.exists(out2) else "no " + out2)
if os.path.exists(final):
    c = calls(final)
    check("final: c() paused away, d() counted, e() after terminate not",
          c.get("worker-a") == {"Workers.a": 100, "Workers.b": 200, "Workers.d": 50} and
          c.get("worker-b") == {"Workers.a": 100, "Workers.d": 50}, c)
check("no profile written at exit over the old directory", not os.path.exists(os.path.join(out, "cgprof.json")))


def boxes(path):
    """Box allocations per thread in a heapprof profile."""
    p = json.load(open(path))
    frames = [f["name"] for f in p["frames"]]
    per_thread = {}
    for t in p["threads"]:
        n = sum(node[2] for node in t["nodes"][1:] if frames[node[1]] == "new Workers$Box")
        if n:
            per_thread[t["name"]] = n
    return per_thread


heap_snap = os.path.join(out, "heapprof-after-b.json")
check("heapprof's sample point", os.path.exists(heap_snap) and boxes(heap_snap) == {"worker-a": 300, "worker-b": 100},
      boxes(heap_snap) if os.path.exists(heap_snap) else os.listdir(out))
heap_final = os.path.join(out2, "heapprof.json")
check("heapprof's end: paused phase not counted, the new directory",
      os.path.exists(heap_final) and boxes(heap_final) == {"worker-a": 350, "worker-b": 150},
      boxes(heap_final) if os.path.exists(heap_final) else "missing")
check("threadprof's sample point and end", os.path.exists(os.path.join(out, "threadprof-after-b.json")) and
      os.path.exists(os.path.join(out2, "threadprof.json")), os.listdir(out))

events = [line.rstrip("\n") for line in open(log)]
tid = next((e.split()[2].strip("[]") for e in events if e.startswith("EcCustomCommand 2 ")), "?")
expected = ["Instantiate", f"EcSetOutputDirectory {os.path.realpath(out)}",
            f"EcCustomCommand 2 [{tid}] thread worker-b", f"EcCustomCommand 3 [{tid}] thread worker-b",
            "EcCustomCommand 1 [after-b]", "EcCustomCommand 4 [i1]", "EcStop", "EcStart", f"EcSetOutputDirectory {os.path.realpath(out2)}",
            "EcCustomCommand 300 [hello world]", "EcDetach", "VmShutdown"]
check("the MPI-document client saw every command, in order", events == expected,
      "\n".join(events) + "\n--- expected\n" + "\n".join(expected))

# Bad input: named, nothing raised.
java = subprocess.Popen(["java", "-cp", classes, "Workers", work + "/none"], stdout=subprocess.PIPE, text=True)
plain_pid = java.stdout.readline().split()[1]
r = run([martini, "control", plain_pid, "pause"], expect=1)
check("a JVM without Martini", "no Martini agent is listening in process " + plain_pid in r.stderr, r.stderr)
java.kill()
r = run([martini, "control", "999999999", "pause"], expect=1)
check("an unknown process", "no process 999999999 is running" in r.stderr, r.stderr)
# A failed `output DIR` leaves no DIR behind (nor the parents it made for it).
made = os.path.join(work, "made-for-nothing")
r = run([martini, "control", "999999999", "output", os.path.join(made, "deeper")], expect=1)
check("a failed output command leaves no directory", not os.path.exists(made), r.stderr)
java = subprocess.Popen(["java", "-cp", classes, "Workers", work + "/none2"], stdout=subprocess.PIPE, text=True)
plain_pid = java.stdout.readline().split()[1]
r = run([martini, "control", plain_pid, "output", made], expect=1)
check("output to a JVM without Martini leaves no directory", not os.path.exists(made), r.stderr)
java.kill()
r = run([martini, "control", "12x", "pause"], expect=1)
check("a bad process id", "'12x' is not a process id" in r.stderr, r.stderr)
r = run([martini, "control", "1", "fly"], expect=1)
check("an unknown command", "unknown command 'fly'" in r.stderr, r.stderr)
r = run([martini, "control", "1", "sample"], expect=1)
check("sample without a name", "'sample' takes one name" in r.stderr, r.stderr)
r = run([martini, "control", "1", "sample", "--thread", "x", "n"], expect=1)
check("--thread with another command", "--thread goes with pause and resume" in r.stderr, r.stderr)

# Errors the process itself gives: a second run, for the thread and argument checks.
work2 = os.path.join(work, "second")
os.makedirs(work2)
proc = subprocess.Popen([martini, "run", "--client", "cgprof=counts,top=0,formats=json", "--output",
                         os.path.join(work, "out3"), "--", "java", "-cp", classes, "Workers", work2],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    pid = proc.stdout.readline().split()[1]
    r = control("pause", "--thread", "nosuch", expect=1)
    check("an unknown thread", "no live thread has the id or name 'nosuch'" in r.stderr and "worker-a" in r.stderr,
          r.stderr)
    r = control("custom", "5", "x", expect=1)
    check("a custom id below 256", "a custom command's id is a number from 256" in r.stderr, r.stderr)
    r = control("sample", "a/b", expect=1)
    check("a sample name with '/'", "without '/'" in r.stderr, r.stderr)
    r = control("detach")
    check("detach a JVM started under martini run", r.returncode == 0, r.stderr)
    for n in range(1, 6):
        open(os.path.join(work2, f"go{n}"), "w").close()
    rest, err = rest_of(proc, 120)
    check("it runs to its end after the detach", proc.returncode == 0 and "end " in rest, rest + err)
finally:
    if proc.poll() is None:
        proc.kill()

for dirpath, dirnames, filenames in os.walk(out):
    for name in dirnames + filenames:
        mode = os.lstat(os.path.join(dirpath, name)).st_mode
        check(f"{name}: not writable by others", (mode & 0o002) == 0, oct(mode))

shutil.rmtree(work, ignore_errors=True)
check.finish()
