#!/usr/bin/env python3
"""cgprof's table at the end of a JVM run is over the threads that used CPU: on
tests/cgprof_table/Waits.java (one thread burning 300 ms of CPU in Waits.spin, four that
sleep, wait and park for a second, main joining them) the table ranks Waits.spin first,
leaves the waiting threads and their methods out and says so under its header (naming
them, and where every thread is shown), while the JSON keeps every thread. With `cpu`
it ranks by self CPU time.

usage: cgprof_table_java_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, run, self_by_frame  # noqa: E402

build, source, javac = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="cgprof-table-")
check = Checks()

classes = os.path.join(work, "classes")
run([javac, "-d", classes, os.path.join(source, "tests", "cgprof_table", "Waits.java")])
WAITING_THREADS = ["main", "sleeper", "waiter", "parker-1", "parker-2"]
WAITING_METHODS = ["Waits.sleeping", "Waits.waiting", "Waits.parking", "Waits.main"]


def profile_run(options, name):
    out = os.path.join(work, name)
    r = run([martini, "run", "--client", f"cgprof=include=Waits*,{options}", "--output", out, "--",
             "java", "-cp", classes, "Waits"], timeout=300)
    return out, r


def table(stderr):
    """(header, the line under it, the rows' method names) of the table on stderr."""
    lines = stderr.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("cgprof: top ")), None)
    if at is None:
        return "", "", []
    rows = []
    for line in lines[at + 1:]:
        if line.startswith("cgprof:") or (line.startswith("  ") and rows):
            break
        if not line.startswith("  ") and not line.startswith("method "):
            rows.append(line.split()[0])
    return lines[at], lines[at + 1], rows


out, r = profile_run("top=10", "wall")
check("the program ran", r.returncode == 0 and "waits: done" in r.stdout, r.stdout + r.stderr)
header, under, rows = table(r.stderr)
check("the header says which threads are shown: 1 of the 6 (those that used CPU)",
      re.fullmatch(r"cgprof: top \d+ of \d+ methods by self wall \(1 of 6 threads: those that used CPU; "
                   r"wall in all: [\d.]+ ms\)", header), r.stderr)
check("the busy method ranks first", rows[:1] == ["Waits.spin"], r.stderr)
check("the waiting methods are not in the table", not set(rows) & set(WAITING_METHODS), r.stderr)
check("the line under the header names the threads left out",
      under.startswith("  left out: 5 threads that mostly waited (on CPU under 5% of their time in calls): ")
      and all(t in under for t in WAITING_THREADS), r.stderr)
json_path = os.path.join(out, "cgprof.json")
check("... and where every thread is shown",
      f"martini report {json_path} --thread NAME, or {os.path.join(out, 'cgprof.html')}, shows every thread" in under,
      under)
profile = json.load(open(json_path))
names = sorted(t["name"] for t in profile["threads"])
check("the JSON keeps every thread", names == sorted(WAITING_THREADS + ["busy"]), names)
wall = self_by_frame(profile, "wall")
check("... and the waits (about a second each)",
      all(wall.get(m, 0) >= 900_000_000 for m in ["Waits.sleeping", "Waits.waiting", "Waits.parking"]), wall)
r = run([martini, "report", json_path, "--thread", "sleeper"])
check("martini report --thread shows a thread left out", re.search(r"^Waits\.sleeping\s", r.stdout, re.M), r.stdout)

# cpu: ranked by self CPU time, over the same threads; no files: the note says how to get them.
out, r = profile_run("cpu,top=10,formats=none", "cpu")
header, under, rows = table(r.stderr)
check("cpu: ranked by self cpu over the threads that used CPU",
      re.match(r"cgprof: top \d+ of \d+ methods by self cpu \(1 of 6 threads: those that used CPU; ", header)
      and rows[:1] == ["Waits.spin"] and not set(rows) & set(WAITING_METHODS), r.stderr)
check("cpu: without files, the note says how to keep every thread",
      under.endswith("the profile's files show every thread (out=DIR, formats=json+html)"), under)

shutil.rmtree(work, ignore_errors=True)
check.finish()
