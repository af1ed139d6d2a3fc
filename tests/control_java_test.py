#!/usr/bin/env python3
"""`martini control PID start|stop` (resume|pause) on a running JVM: cgprof starts paused, is resumed
for the middle phase of tests/control/Phases.java and paused again; only that phase's
500 calls are counted. Also: the errors `martini control` names.

usage: control_java_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run, self_by_frame  # noqa: E402

build, source, javac = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="control-test-")
check = Checks()

classes = os.path.join(work, "classes")
run([javac, "-d", classes, os.path.join(source, "tests", "control", "Phases.java")])
out = os.path.join(work, "out")
proc = subprocess.Popen([martini, "run", "--client", "cgprof=paused,include=Phases.*,top=5,formats=json",
                         "--output", out, "--", "java", "-cp", classes, "Phases", work],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    first = proc.stdout.readline()
    m = re.match(r"A done (\d+)", first)
    check("phase A ran", m is not None, first)
    pid = m.group(1) if m else "0"
    r = run([martini, "control", pid, "start"], timeout=30)
    check("martini control start", r.returncode == 0 and f"process {pid}: start" in r.stderr, r.stderr)
    open(os.path.join(work, "go1"), "w").close()
    line = proc.stdout.readline()
    check("phase B ran", line.startswith("B done"), line)
    r = run([martini, "control", pid, "stop"], timeout=30)
    check("martini control stop", r.returncode == 0, r.stderr)
    open(os.path.join(work, "go2"), "w").close()
    rest, err = rest_of(proc, 120)
finally:
    if proc.poll() is None:
        proc.kill()
check("the program finished", proc.returncode == 0 and "C done" in rest, rest + err)
profile = json.load(open(os.path.join(out, "cgprof.json")))
calls = self_by_frame(profile, "calls")
check("only the resumed phase is counted: b 500 times, no a, no c",
      calls.get("Phases.b") == 500 and "Phases.a" not in calls and "Phases.c" not in calls, calls)
check("the JVM's control FIFO is gone after exit", not os.path.exists(f"/tmp/martini-{pid}.ctl"))

r = run([martini, "control", "999999999", "stop"], expect=1)
check("no such process", "no process 999999999 is running" in r.stderr, r.stderr)
r = run([martini, "control", "12x", "stop"], expect=1)
check("a bad process id", "'12x' is not a process id" in r.stderr, r.stderr)
r = run([martini, "control", "1", "halt"], expect=1)
check("an unknown command", "unknown command 'halt'" in r.stderr, r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
