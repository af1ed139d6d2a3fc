#!/usr/bin/env python3
"""cgprof, heapprof, threadprof and a fourth client written against the MPI alone
(callcount) in one JVM through `martini run`, each with its own filter, on
examples/java/bank (known numbers: 4 tellers x 50 transfers through one contended
ledger, 200 Transfer objects, an auditor waiting for 5 notices). Each profiler's
output must match the program's behaviour and hold only its own events.

usage: three_profilers_test.py MARTINI_BUILD_DIR BANK_CLASSES
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

build, classes = (os.path.abspath(a) for a in sys.argv[1:3])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="three-profilers-")
out = os.path.join(work, "out")
check = Checks()




counts_file = os.path.join(work, "callcount.txt")
r = subprocess.run([martini, "run",
                    "--client", "cgprof=filter=+bank.*,top=5,formats=all",
                    "--client", "heapprof=exact,include=bank.Bank$Transfer,top=5",
                    "--client", "threadprof=filter=+bank.*,top=5",
                    "--client", f"callcount=include=bank.Bank$Ledger,out={counts_file}",
                    "--output", out, "--", "java", "-cp", classes, "bank.Bank"],
                   capture_output=True, text=True, cwd=work, timeout=300)
log = r.stdout + r.stderr
check("the program ran to the end", r.returncode == 0 and "bank: 200 transfers, 5 notices audited" in log, log)

# cgprof: calls, only bank.* methods, the tellers' threads
cg = json.load(open(os.path.join(out, "cgprof.json")))
calls = self_by_frame(cg, "calls")
check("cgprof: Ledger.apply called 200 times", calls.get("bank.Bank$Ledger.apply") == 200, calls)
check("cgprof: teller called 4 times", calls.get("bank.Bank.teller") == 4, calls)
check("cgprof: only its filter's methods", all(n.startswith("bank.") for n in calls), list(calls))
names = sorted(t["name"] for t in cg["threads"])
check("cgprof: the tellers' trees", [n for n in names if n.startswith("teller-")] == [f"teller-{i}" for i in range(4)], names)
check("cgprof: call metrics only", [m["name"] for m in cg["metrics"]] == ["calls", "wall"], cg["metrics"])

# heapprof: exactly the chosen class, 200 objects
hp = json.load(open(os.path.join(out, "heapprof.json")))
alloc = {k: v for k, v in self_by_frame(hp, "alloc_objects").items() if k.startswith("new ")}
check("heapprof: 200 Transfer objects, no other class tracked", alloc == {"new bank.Bank$Transfer": 200}, alloc)
sites = open(os.path.join(out, "heapprof.collapsed")).read()
check("heapprof: allocated in teller, called from the teller threads' lambda",
      re.search(r"bank\.Bank\.teller;new_bank\.Bank\$Transfer \d+", sites), sites[:2000])

# threadprof: the contended ledger, its waiters and the auditor's waits
tp = json.load(open(os.path.join(out, "threadprof.threads.json")))
ledger = [m for m in tp["monitors"] if m["class"] == "bank.Bank$Ledger"]
check("threadprof: the ledger is contended", ledger and ledger[0]["contentions"] > 0 and ledger[0]["blocked_ns"] > 0,
      tp["monitors"])
if ledger:
    waiters = {w["name"] for w in ledger[0]["waiters"]}
    check("threadprof: only tellers waited for the ledger", waiters and waiters <= {f"teller-{i}" for i in range(4)},
          waiters)
    holders = {h["name"] for h in ledger[0]["holders"]}
    check("threadprof: the holders are tellers (JVMTI GetObjectMonitorUsage)",
          holders and holders <= {f"teller-{i}" for i in range(4)}, ledger[0]["holders"])
mailbox = [m for m in tp["monitors"] if m["class"] == "bank.Bank$Mailbox"]
check("threadprof: the auditor waited on the mailbox", mailbox and 1 <= mailbox[0]["waits"] <= 5
      and mailbox[0]["woke"] == mailbox[0]["waits"], mailbox)
check("threadprof: its filter keeps java.* monitors out (Thread.join's waits)",
      all(m["class"].startswith("bank.") for m in tp["monitors"]), [m["class"] for m in tp["monitors"]])
check("threadprof: summary names the ledger", re.search(r"bank\.Bank\$Ledger@\d+: \d+ contentions", log), log)
threads = {t["name"] for t in tp["threads"]}
check("threadprof: thread lifetimes by name", {"main", "auditor", "teller-0", "teller-3"} <= threads, threads)
by_name = {t["name"]: t for t in tp["threads"]}
if "main" in by_name:
    parents = {n: by_name[n]["parent"] for n in ["auditor", "teller-0", "teller-1", "teller-2", "teller-3"] if n in by_name}
    check("threadprof: main started the tellers and the auditor (Thread.start site probes)",
          parents and all(p == by_name["main"]["id"] for p in parents.values()), parents)
inter = tp["interactions"]
check("threadprof: interactions: 5 starts and 5 joins by main, 5 notifyAll by the mailbox",
      inter.get("start", 0) >= 5 and inter.get("join", 0) >= 5 and inter.get("notifyAll", 0) >= 5, inter)

# callcount (a client written against the MPI only): its own filter, its own file
text = open(counts_file).read()
check("callcount: Ledger.apply 200 calls", re.search(r"\b200\s+0\s+bank\.Bank\$Ledger\.apply", text), text)
check("callcount: nothing outside its filter", "bank.Bank.teller" not in text and "bank.Bank$Transfer.<init>" not in text, text)

for f in ["cgprof.html", "heapprof.html", "threadprof.trace.json", "heapprof.pb.gz", "cgprof.pb.gz"]:
    check(f"{f} written", os.path.getsize(os.path.join(out, f)) > 0)

shutil.rmtree(work, ignore_errors=True)
check.finish()
