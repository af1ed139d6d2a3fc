#!/usr/bin/env python3
"""The bundled C# example (examples/mono/Bank.cs: 4 tellers x 50 transfers through one
contended ledger, every tenth refused by an exception three frames down, 200 Transfer
objects) under `martini run ... -- mono`: the README's main job (cgprof alone), then
cgprof, heapprof, threadprof and callcount in one process, each with its own filter.
Then the run status handshake: a module that Mono cannot load is reported, the run
fails instead of passing unprofiled.

usage: mono_profilers_test.py MARTINI_BUILD_DIR BANK_EXE
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, self_by_frame  # noqa: E402

build, bank = (os.path.abspath(a) for a in sys.argv[1:3])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="mono-profilers-")
check = Checks()


def run(args, env=None):
    return subprocess.run([martini, "run"] + args, capture_output=True, text=True, cwd=work, timeout=300,
                          env=dict(os.environ, **(env or {})))


# The main job: cgprof alone, default options (AOT off, debug info on).
out1 = os.path.join(work, "main")
r = run(["--output", out1, "--", "mono", bank])
log = r.stdout + r.stderr
check("main job: the program ran to the end", r.returncode == 0 and "bank: 200 transfers" in log, log)
cg = json.load(open(os.path.join(out1, "cgprof.json")))
calls = self_by_frame(cg, "calls")
check("main job: Ledger.Apply called 200 times", calls.get("Bank.Ledger.Apply") == 200, calls)
check("main job: Teller called 4 times", calls.get("Bank.Program.Teller") == 4, calls)
check("main job: mscorlib's methods too (AOT off)", any(n.startswith("System.Collections.Generic.List") for n in calls),
      list(calls)[:50])
for f in ["cgprof.json", "cgprof.html"]:
    check(f"main job: {f} written", os.path.getsize(os.path.join(out1, f)) > 0)

# Four clients, four filters.
out = os.path.join(work, "out")
counts_file = os.path.join(work, "callcount.txt")
r = run(["--client", "cgprof=filter=+Bank.*,top=5",
         "--client", "heapprof=exact,include=Bank.Transfer,top=5",
         "--client", "threadprof=filter=+Bank.*,top=5",
         "--client", f"callcount=include=Bank.Ledger,out={counts_file}",
         "--output", out, "--", "mono", bank])
log = r.stdout + r.stderr
check("four clients: the program ran to the end", r.returncode == 0 and "bank: 200 transfers" in log, log)
cg = json.load(open(os.path.join(out, "cgprof.json")))
calls = self_by_frame(cg, "calls")
check("cgprof: Ledger.Apply 200, Limit 200", calls.get("Bank.Ledger.Apply") == 200 and calls.get("Bank.Ledger.Limit") == 200,
      calls)
check("cgprof: only its filter's methods", calls and all(n.startswith("Bank.") for n in calls), list(calls))
names = sorted(t["name"] for t in cg["threads"])
check("cgprof: the tellers' trees", [n for n in names if n.startswith("teller-")] == [f"teller-{i}" for i in range(4)], names)
hp = json.load(open(os.path.join(out, "heapprof.json")))
alloc = {k: v for k, v in self_by_frame(hp, "alloc_objects").items() if k.startswith("new ")}
check("heapprof: 200 Transfer objects, no other class tracked", alloc == {"new Bank.Transfer": 200}, alloc)
sites = open(os.path.join(out, "heapprof.collapsed")).read()
check("heapprof: allocated in Teller", re.search(r"Bank\.Program\.Teller;new_Bank\.Transfer \d+", sites), sites[:2000])
tp = json.load(open(os.path.join(out, "threadprof.threads.json")))
ledger = [m for m in tp["monitors"] if m["class"] == "Bank.Ledger"]
check("threadprof: the ledger is contended", ledger and ledger[0]["contentions"] > 0, tp["monitors"])
if ledger:
    waiters = {w["name"] for w in ledger[0]["waiters"]}
    check("threadprof: only tellers waited for the ledger", waiters and waiters <= {f"teller-{i}" for i in range(4)},
          waiters)
check("threadprof: its filter keeps System.* monitors out",
      all(m["class"].startswith("Bank.") for m in tp["monitors"]), [m["class"] for m in tp["monitors"]])
threads = {t["name"] for t in tp["threads"]}
check("threadprof: thread lifetimes by name", {"Main", "teller-0", "teller-3"} <= threads, threads)
text = open(counts_file).read()
check("callcount: Ledger.Apply 200 calls, 20 refused", re.search(r"\b200\s+20\s+Bank\.Ledger\.Apply", text), text)
rows = re.findall(r"^\s*\d+\s+\d+\s+([^(\s]+)\(", text, re.M)
check("callcount: nothing outside its filter", rows and all(n.startswith("Bank.Ledger.") for n in rows), text)

# The handshake: Mono says nothing when it cannot load a profiler module.
fake = os.path.join(work, "fake")
os.makedirs(fake)
shutil.copy(os.path.join(build, "clients", "callcount", "libcallcount.so"),
            os.path.join(fake, "libmono-profiler-martini.so"))
r = run(["--client", "callcount", "--output", os.path.join(work, "fake-out"), "--", "mono", bank],
        env={"MARTINI_MONO_MODULE": os.path.join(fake, "libmono-profiler-martini.so")})
check("a module Mono did not load: reported, exit status 1",
      r.returncode == 1 and "the Mono profiler module did not start" in r.stderr, r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
