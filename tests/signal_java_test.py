#!/usr/bin/env python3
"""A signal that ends `martini run` ends the profiled program the same way: SIGTERM,
SIGINT and SIGHUP sent to martini alone reach the JVM, martini waits for it, the
clients write their outputs, the temporary configuration is removed, and martini
exits with the program's status. (tests/control/Phases.java waits for a file that
never comes: a server that runs until it is stopped.)

usage: signal_java_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC
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
from testlib import Checks, run  # noqa: E402

build, source, javac = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="signal-test-")
check = Checks()
run([javac, "-d", os.path.join(work, "classes"), os.path.join(source, "tests", "control", "Phases.java")])


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is not running
        return f.read().split(")")[-1].split()[0] != "Z"


def dispositions(handler):
    def set_them():
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, handler(s))
    return set_them


def signal_mask(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    return 0


# Started with SIGINT ignored (nohup, a script's background job): martini leaves it
# ignored, as the program does, rather than catch it and wait for a program that
# will never end by it; SIGTERM still ends both.
out = os.path.join(work, "out-ignored")
proc = subprocess.Popen([martini, "run", "--client", "cgprof=include=Phases.*,formats=json", "--output", out,
                         "--", "java", "-cp", os.path.join(work, "classes"), "Phases", work],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                        preexec_fn=dispositions(lambda s: signal.SIG_IGN if s == signal.SIGINT else signal.SIG_DFL))
first = proc.stdout.readline()
check("SIGINT ignored: the program runs", first.startswith("A done"), first)
check("SIGINT ignored: martini leaves it ignored",
      signal_mask(proc.pid, "SigIgn") & (1 << (signal.SIGINT - 1)) != 0
      and signal_mask(proc.pid, "SigCgt") & (1 << (signal.SIGINT - 1)) == 0)
check("SIGINT ignored: SIGTERM is still caught", signal_mask(proc.pid, "SigCgt") & (1 << (signal.SIGTERM - 1)) != 0)
proc.send_signal(signal.SIGTERM)
try:
    _, err = proc.communicate(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    _, err = proc.communicate()
check("SIGINT ignored: SIGTERM ends the program", proc.returncode == 128 + signal.SIGTERM, f"exit {proc.returncode}\n{err}")

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    name = sig.name
    out = os.path.join(work, "out-" + name)
    # A new session: the signal goes to martini alone, as `kill PID` from elsewhere does.
    proc = subprocess.Popen([martini, "run", "--client", "cgprof=include=Phases.*,formats=json", "--output", out,
                             "--", "java", "-cp", os.path.join(work, "classes"), "Phases", work],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=dispositions(lambda s: signal.SIG_DFL))  # as from a terminal
    first = proc.stdout.readline()
    m = re.match(r"A done (\d+)", first)
    check(f"{name}: the program runs", m is not None, first)
    java = int(m.group(1)) if m else 0
    config = None  # the temporary configuration martini run gave the agent (=@PATH)
    if java:
        with open(f"/proc/{java}/cmdline") as f:
            for arg in f.read().split("\0"):
                if arg.startswith("-agentpath:") and "=@" in arg:
                    config = arg.split("=@", 1)[1]
    check(f"{name}: the agent got a temporary configuration", config is not None and os.path.exists(config))
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    check(f"{name}: martini exits with the program's status", proc.returncode == 128 + sig.value,
          f"exit {proc.returncode}\n{err}")
    deadline = time.time() + 10
    while java and alive(java) and time.time() < deadline:
        time.sleep(0.1)
    check(f"{name}: the JVM is not left running", java and not alive(java))
    if java and alive(java):
        os.kill(java, signal.SIGKILL)
    profile = os.path.join(out, "cgprof.json")
    check(f"{name}: the profile was written", os.path.exists(profile), err)
    if os.path.exists(profile):
        calls = {}
        with open(profile) as f:
            p = json.load(f)
        frames = [fr["name"] for fr in p["frames"]]
        k = [mt["name"] for mt in p["metrics"]].index("calls")
        for node in p["merged"]["nodes"][1:]:
            calls[frames[node[1]]] = calls.get(frames[node[1]], 0) + node[2 + k]
        a = [v for fname, v in calls.items() if fname.startswith("Phases.a")]
        check(f"{name}: the calls made before the signal are in it", a == [1000], str(calls))
    check(f"{name}: martini says the signal was passed on", "passed on to the program" in err, err)
    check(f"{name}: the temporary configuration is removed", config is not None and not os.path.exists(config),
          str(config))

shutil.rmtree(work, ignore_errors=True)
check.finish()
