#!/usr/bin/env python3
"""cgprof's memory follows the live threads and the size of the profile, not the number
of threads ever started: 20,000 short-lived threads, each making one call, replayed
through cgprof (counts mode, no files) and through callcount. cgprof may use at most
8 KiB more per thread than callcount (about 0.7 KiB in a release build, 2.9 KiB under
AddressSanitizer's redzones; it used 64 KiB per thread: 1.3 GB here).

usage: cgprof_threads_memory_test.py MARTINI_BUILD_DIR
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

build = os.path.abspath(sys.argv[1])
replay = os.path.join(build, "tools", "martini-replay")
work = tempfile.mkdtemp(prefix="threads-memory-test-")
check = Checks()
threads = 20000

trace = os.path.join(work, "threads.jsonl")
with open(trace, "w") as f:
    t = 0

    def record(**r):
        global t
        t += 10
        r["t"] = t
        f.write(json.dumps(r) + "\n")

    record(event="ThreadStart", thread=1, name="main", group="main")
    record(event="ClassLoad", thread=1, **{"class": 10}, name="app.Worker", source="Worker.java")
    record(event="NewMethod", method=100, **{"class": 10}, name="run", sig="()V", access="package_api")
    record(event="VmInit", thread=1)
    for i in range(threads):
        record(event="ThreadStart", thread=i + 2, name=f"worker-{i}", group="main", parent=1)
        record(event="MethodEnter", thread=i + 2, method=100)
        record(event="MethodLeave", thread=i + 2, method=100)
        record(event="ThreadEnd", thread=i + 2)
    record(event="VmShutdown")


def peak_rss_kib(client):
    """Peak RSS of one martini-replay run (a fresh child process: its own maximum)."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.stderr.write(r.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, replay, "--client", client, trace],
                       capture_output=True, text=True, cwd=work)
    status, rss = r.stdout.split()
    check(f"{client} ran", status == "0", r.stderr)
    return int(rss)


baseline = peak_rss_kib("callcount=out=/dev/null")
cgprof = peak_rss_kib("cgprof=counts,formats=none,top=0")
per_thread = (cgprof - baseline) * 1024 / threads
print(f"peak RSS: callcount {baseline / 1024:.1f} MiB, cgprof {cgprof / 1024:.1f} MiB "
      f"({per_thread:.0f} bytes more per thread started)")
check("cgprof keeps at most 8 KiB more than callcount per thread started", per_thread <= 8192,
      f"{per_thread:.0f} bytes per thread")

shutil.rmtree(work, ignore_errors=True)
check.finish()
