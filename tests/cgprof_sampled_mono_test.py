#!/usr/bin/env python3
"""cgprof's sample mode on Mono, its lines and times: tests/sampled/Phases.cs spends
nearly all its time on the line marked HOT. `martini report --lines` and pprof put the
time on that line (each sampled frame's line from its native offset, through the line
tables noted at JIT time); every sample is in the timeline; `--interval` is refused
for Mono before the program starts.

usage: cgprof_sampled_mono_test.py MARTINI_BUILD_DIR PHASES_EXE PHASES_SOURCE
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

build, exe, source = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="cgprof-sampled-mono-")
check = Checks()
hot = next(i + 1 for i, text in enumerate(open(source).read().splitlines()) if text.rstrip().endswith("// HOT"))


def run(args):
    return subprocess.run(args, capture_output=True, text=True, cwd=work, timeout=300)


out = os.path.join(work, "out")
r = run([martini, "run", "--client", "cgprof=sample=1000,top=0,formats=json+pprof", "--output", out, "--",
         "mono", exe, "1000"])
check("the sampled Mono run exits 0", r.returncode == 0 and "phases: done" in r.stdout + r.stderr,
      r.stdout + r.stderr)
r = run([martini, "report", os.path.join(out, "cgprof.json"), "--lines", "--top", "5"])
rows = re.findall(r"^Phases\.First\s+\S*Phases\.cs:(\d+)\s+([\d.]+)%", r.stdout, re.M)
check("martini report --lines: First()'s top line is the HOT one, with most of the time",
      rows and int(rows[0][0]) == hot and float(rows[0][1]) >= 80, r.stdout + r.stderr)
go = shutil.which("go")
if go is None:
    check("go is installed for `go tool pprof` (scripts/install-deps.sh --test)", False)
else:
    g = subprocess.run([go, "tool", "pprof", "-lines", "-top", os.path.join(out, "cgprof.pb.gz")],
                       capture_output=True, text=True, timeout=300)
    check("go tool pprof -lines: First()'s time on the HOT line",
          g.returncode == 0 and re.search(r"\sPhases\.First \S*Phases\.cs:%d\b" % hot, g.stdout), g.stdout + g.stderr)
profile = json.load(open(os.path.join(out, "cgprof.json")))
timeline = profile.get("timeline", [])
check("every sample in the timeline, in time order",
      len(timeline) == profile["counters"]["samples"] and len(timeline) > 500 and
      all(a[0] <= b[0] for a, b in zip(timeline, timeline[1:])), (len(timeline), profile["counters"]))
r = run([martini, "run", "--interval", "1s", "--", "mono", exe, "10"])
check("--interval under Mono refused before the start, naming why",
      r.returncode == 1 and "the Mono module starts no control channel" in r.stderr and "phases:" not in r.stdout,
      r.stdout + r.stderr)

shutil.rmtree(work, ignore_errors=True)
sys.exit(check.finish())
