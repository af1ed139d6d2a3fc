#!/usr/bin/env python3
"""`martini attach` on a running JVM started without Martini: profile, detach, attach
again until Ctrl-C, detach. The program's output and exit status are those of a run without
Martini; the bytecodes of its class are byte for byte the original ones after each
detach (digests of JVMTI GetBytecodes, written by the agent's test hook
MARTINI_BYTECODE_DIGESTS) and differ while attached; the methods already running at
attach are named. Also: the errors of `martini attach` (unknown process, not a JVM,
attach disabled, already attached).

usage: attach_java_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run, self_by_frame  # noqa: E402

build, source, javac = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="attach-test-")
check = Checks()
classes = os.path.join(work, "classes")
run([javac, "-d", classes, os.path.join(source, "tests", "control", "Attached.java")])


def start(stop, env=None, extra=(), cwd=None):
    proc = subprocess.Popen(["java", *extra, "-cp", classes, "Attached", stop], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    line = proc.stdout.readline()
    return proc, line.split()[1] if line.startswith("ready ") else "0"


def finish(proc, stop):
    open(stop, "w").close()
    out, err = rest_of(proc, 60)
    return out, err, proc.returncode


# The program alone.
stop = os.path.join(work, "stop-plain")
proc, _ = start(stop)
time.sleep(0.3)
plain_out, _, plain_rc = finish(proc, stop)
check("the program alone exits with 3", plain_rc == 3, plain_out)

# Attached twice.
digests = os.path.join(work, "digests")
stop = os.path.join(work, "stop")
proc, pid = start(stop, env=dict(os.environ, MARTINI_BYTECODE_DIGESTS=digests + ":Attached"))
try:
    outs = []
    for i in (1, 2):
        out = os.path.join(work, f"out{i}")
        command = [martini, "attach", pid, "--client", "cgprof=include=Attached.*,formats=json,top=0", "--output", out]
        if i == 1:
            r = run(command + ["--duration", "700ms"], timeout=120)
        else:
            # No duration: until Ctrl-C, which detaches.
            attacher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            # Sample points while main calls work() as fast as it can: copies of a tree
            # that changes under them.
            for k in range(3):
                sample = run([martini, "control", pid, "sample", f"busy{k}"], timeout=60)
                check(f"sample point {k} while attached", sample.returncode == 0, sample.stderr)
            attacher.send_signal(signal.SIGINT)
            stdout, stderr = attacher.communicate(timeout=60)
            r = subprocess.CompletedProcess(command, attacher.returncode, stdout, stderr)
        check(f"attach {i}: exit status 0", r.returncode == 0, r.stderr)
        check(f"attach {i}: detached and listed the output",
              f"detached from process {pid}" in r.stderr and "cgprof.json" in r.stderr, r.stderr)
        check(f"attach {i}: the methods running at attach are named",
              "methods were already running when attached" in r.stderr and "Attached.loop" in r.stderr, r.stderr)
        check(f"attach {i}: the probed class restored", "1 classes restored to their original bytes" in r.stderr,
              r.stderr)
        outs.append(out)
    # Another attach while one is on: refused by the agent, the first goes on.
    first = subprocess.Popen([martini, "attach", pid, "--client", "cgprof=include=Attached.*,formats=json,top=0",
                              "--duration", "2s", "--output", os.path.join(work, "out3")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    r = run([martini, "attach", pid, "--duration", "1s", "--output", os.path.join(work, "out4")], expect=1,
            timeout=60)
    check("a second attach at once is refused", "the agent refused to start" in r.stderr, r.stderr)
    _, err3 = first.communicate(timeout=60)
    check("the first attach goes on and detaches", first.returncode == 0 and "detached" in err3, err3)
finally:
    out, err, rc = finish(proc, stop) if proc.poll() is None else ("", "", proc.returncode)
check("output unchanged by attaching", out == plain_out, f"{out!r} vs {plain_out!r}")
check("exit status unchanged by attaching", rc == plain_rc, str(rc))

for i, out in enumerate(outs, 1):
    calls = self_by_frame(json.load(open(os.path.join(out, "cgprof.json"))), "calls")
    check(f"attach {i}: Attached.work's calls counted", calls.get("Attached.work", 0) > 100, calls)
snapshots = [self_by_frame(json.load(open(os.path.join(outs[1], f"cgprof-busy{k}.json"))), "calls").get(
    "Attached.work", 0) for k in range(3)]
final = self_by_frame(json.load(open(os.path.join(outs[1], "cgprof.json"))), "calls").get("Attached.work", 0)
check("sample points grow, and the end has them all", 0 < snapshots[0] <= snapshots[1] <= snapshots[2] <= final,
      (snapshots, final))

# Digests: each attach writes "before" (as the JVM ran it), "probed", "restored".
phases = {}
for line in open(digests):
    phase, method, digest = line.split()
    phases.setdefault(phase, []).append((method, digest))
check("three attaches, three of each phase", all(len(phases.get(p, [])) == 3 * 4 for p in ("before", "probed",
                                                                                          "restored")), phases.keys())
before, probed, restored = (sorted(set(phases.get(p, []))) for p in ("before", "probed", "restored"))
check("restored bytecodes equal the original ones", before == restored and len(before) == 4, (before, restored))
work_before = dict(before).get("Attached.work(J)J")
work_probed = dict(probed).get("Attached.work(J)J")
check("while attached the bytecodes differ (the check sees probes)", work_before and work_probed != work_before,
      (work_before, work_probed))

# Sampling attached: `martini attach PID --client cgprof=sample`, twice (the sampler
# stops at the detach and starts again at the next attach), a sample point in between.
# While sampling, HotSpot keeps debug information at every instruction of the code it
# compiles (DebugNonSafepoints, which the agent sets); after the detach the flag is as
# it was (read with the JDK's jcmd, where installed; a diagnostic flag is listed only
# in a JVM started with -XX:+UnlockDiagnosticVMOptions).
jcmd = shutil.which("jcmd")


def debug_non_safepoints(pid):
    if jcmd is None:
        return None
    r = run([jcmd, pid, "VM.flags", "-all"], timeout=60)
    m = re.search(r"\bDebugNonSafepoints\s+= (true|false)", r.stdout)
    return m.group(1) if m else r.stdout + r.stderr


stop = os.path.join(work, "stop-sampled")
proc, pid = start(stop, extra=("-XX:+UnlockDiagnosticVMOptions",))
try:
    for i in (1, 2):
        out = os.path.join(work, f"sampled{i}")
        attacher = subprocess.Popen([martini, "attach", pid, "--client", "cgprof=sample=500,formats=json,top=0",
                                     "--duration", "3s", "--output", out],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        flag = debug_non_safepoints(pid)
        check(f"sampled attach {i}: DebugNonSafepoints on while sampling", flag in (None, "true"), flag)
        sample = run([martini, "control", pid, "sample", "mid"], timeout=60)
        check(f"sampled attach {i}: a sample point", sample.returncode == 0, sample.stderr)
        _, err = attacher.communicate(timeout=60)
        check(f"sampled attach {i}: detached", attacher.returncode == 0 and f"detached from process {pid}" in err, err)
        check(f"sampled attach {i}: no class rewritten", "classes restored" not in err or
              "0 classes restored" in err, err)
        flag = debug_non_safepoints(pid)
        check(f"sampled attach {i}: DebugNonSafepoints back off after the detach", flag in (None, "false"), flag)
        for name in ("cgprof-mid.json", "cgprof.json"):
            path = os.path.join(out, name)
            samples = self_by_frame(json.load(open(path)), "samples") if os.path.exists(path) else {}
            check(f"sampled attach {i}: {name} has Attached.work's samples", samples.get("Attached.work", 0) > 10,
                  (samples, err))
finally:
    out, err, rc = finish(proc, stop) if proc.poll() is None else ("", "", proc.returncode)
check("sampled: output and exit status unchanged", out == plain_out and rc == plain_rc, (out, rc, err))

# Main sleeps between short bursts of work and ran before the attach: after the
# program has run half a second, its samples in a 3 s attach come to about its CPU
# time (read from /proc before and after) at 500 Hz. A walk that finds no Java frame
# (a signal taken in the kernel or a stub) must not make the sampler drop a thread it
# never saw start.
def cpu_ns_by_thread(pid):
    times = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                times[tid] = int(f.read().split()[0])
        except OSError:
            pass
    return times


stop = os.path.join(work, "stop-sleepy")
proc, pid = start(stop)
try:
    time.sleep(0.5)
    before = cpu_ns_by_thread(pid)
    out = os.path.join(work, "sleepy")
    r = run([martini, "attach", pid, "--client", "cgprof=sample=500,formats=json,top=0", "--duration", "3s",
             "--output", out], timeout=120)
    after = cpu_ns_by_thread(pid)
    busiest_ms = max(after[t] - before.get(t, 0) for t in after) / 1e6
    path = os.path.join(out, "cgprof.json")
    samples = sum(self_by_frame(json.load(open(path)), "samples").values()) if os.path.exists(path) else 0
    check("sleepy thread: sampled in proportion to its CPU time", samples >= 0.6 * busiest_ms / 2,
          (samples, f"{busiest_ms:.0f} ms of CPU on the busiest thread", r.stderr))
finally:
    if proc.poll() is None:
        finish(proc, stop)

# Errors.
r = run([martini, "attach", "999999999", "--duration", "1s"], expect=1)
check("unknown process", "no process 999999999 is running" in r.stderr, r.stderr)
r = run([martini, "attach", "12x"], expect=1)
check("a bad process id", "'12x' is not a process id" in r.stderr, r.stderr)
sleeper = subprocess.Popen(["sleep", "30"])
try:
    r = run([martini, "attach", str(sleeper.pid), "--duration", "1s"], expect=1)
    check("not a JVM", "is not a Java virtual machine" in r.stderr, r.stderr)
    check("the non-JVM process was not signalled", sleeper.poll() is None)
finally:
    sleeper.kill()
stop = os.path.join(work, "stop-disabled")
proc, pid = start(stop, extra=("-XX:+DisableAttachMechanism",))
try:
    r = run([martini, "attach", pid, "--duration", "1s"], expect=1)
    check("attach disabled", "-XX:+DisableAttachMechanism" in r.stderr, r.stderr)
    r = run([martini, "attach", pid, "--duration", "soon"], expect=1)
    check("a bad duration", "--duration 'soon' is not a time" in r.stderr, r.stderr)
    r = run([martini, "attach", pid, "--client", "nosuchclient"], expect=1)
    check("an unknown client", "nosuchclient" in r.stderr, r.stderr)
finally:
    finish(proc, stop)

# What other users may plant. A socket at /tmp/.java_pid<pid> before the JVM opens its
# own: owned by another user, or served by another process; martini attach sends it
# nothing (the agent's path and configuration) and says why.
import socket  # noqa: E402
import threading  # noqa: E402


def planted_listener(path, received):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(15)

    def serve():
        try:
            conn, _ = srv.accept()
            conn.settimeout(5)
            try:
                received.append(conn.recv(4096))
            except OSError:
                pass
            conn.sendall(b"0\nreturn code: 0\n")
            conn.close()
        except OSError:
            pass
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, t


for n, case in enumerate(("another user's", "another process's")):
    stop = os.path.join(work, f"stop-planted-{n}")
    proc, pid = start(stop)
    path = f"/tmp/.java_pid{pid}"
    received = []
    srv, t = planted_listener(path, received)
    if case == "another user's":
        os.chown(path, 65534, 65534)
    os.chmod(path, 0o600)
    try:
        r = run([martini, "attach", pid, "--client", "callcount", "--duration", "1s"], expect=1)
        check(f"{case} socket: refused", "nothing was sent" in r.stderr and r.returncode == 1, r.stderr)
        check(f"{case} socket: said whose", ("not to the JVM's user" if case == "another user's"
                                            else "not by the JVM") in r.stderr, r.stderr)
        srv.close()
        t.join(timeout=2)
        check(f"{case} socket: got nothing of the command", not any(received), received)
    finally:
        srv.close()
        if os.path.exists(path):
            os.unlink(path)
        finish(proc, stop)

# A link planted as the attach trigger in the JVM's working directory: never followed
# (the trigger goes to the JVM's /tmp instead); the link's target is not created.
cwd = os.path.join(work, "cwd")
os.makedirs(cwd)
stop = os.path.join(work, "stop-link")
proc, pid = start(stop, cwd=cwd)
victim = os.path.join(work, "victim")
os.symlink(victim, os.path.join(cwd, f".attach_pid{pid}"))
try:
    r = run([martini, "attach", pid, "--client", "cgprof=include=Attached.*,formats=json", "--duration", "1s",
             "--output", os.path.join(work, "out-link")], expect=None)
    check("a planted trigger link: not followed", not os.path.exists(victim), r.stderr)
    check("a planted trigger link: the attach still works", r.returncode == 0, f"exit {r.returncode}\n{r.stderr}")
finally:
    finish(proc, stop)

shutil.rmtree(work, ignore_errors=True)
check.finish()
