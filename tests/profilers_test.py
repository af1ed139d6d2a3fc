#!/usr/bin/env python3
"""heapprof and threadprof on a replay trace with known allocations, frees, a GC,
contention with known holders and a wait (tests/profilers/heap_threads.jsonl); their
outputs read by consumers; bad options refused.

usage: profilers_test.py MARTINI_BUILD_DIR SOURCE_ROOT
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testlib  # noqa: E402
from testlib import Checks, self_by_frame  # noqa: E402

build, source = sys.argv[1:3]
martini = os.path.join(build, "tools", "martini")
trace = os.path.join(source, "tests", "profilers", "heap_threads.jsonl")
env = dict(os.environ, MARTINI_CLIENT_PATH=os.path.join(build, "clients"))
work = tempfile.mkdtemp(prefix="profilers-test-")
check = Checks()



def run(args, expect=0):
    return testlib.run(args, expect, env=env)



out = os.path.join(work, "both")
r = both = run([martini, "replay", "--client", f"heapprof=exact,top=5,out={out}", "--client",
                f"threadprof=top=5,out={out}", trace])

# -- heapprof ----------------------------------------------------------------------------
check("heapprof table by class", re.search(r"app\.Transfer\s+5\s+120 B\s+3\s+72 B", r.stderr), r.stderr)
check("heapprof allocation sites", re.search(r"app\.Ledger\.run -> app\.Transfer\s+3\s+72 B", r.stderr)
      and re.search(r"app\.Ledger\.apply -> app\.Transfer\s+2\s+48 B", r.stderr), r.stderr)
heap = json.load(open(os.path.join(out, "heapprof.json")))
check("heapprof metrics", [m["name"] for m in heap["metrics"]] == ["alloc_objects", "alloc_space", "inuse_objects",
                                                                   "inuse_space"], heap["metrics"])
alloc = self_by_frame(heap, "alloc_objects")
live = self_by_frame(heap, "inuse_space")
check("exact allocation counts per class", alloc.get("new app.Transfer") == 5 and alloc.get("new app.Ledger") == 1, alloc)
check("live objects at exit (two freed)", live.get("new app.Transfer") == 72, live)
r = run([martini, "report", os.path.join(out, "heapprof.json"), "--top", "3"])
header = r.stdout.splitlines()[1] if r.stdout.count("\n") > 1 else ""
check("martini report on heapprof: the total in bytes, columns apart",
      re.search(r"methods by self alloc_space \(\d+ threads?; alloc_space in all: \d+ B\)", r.stdout)
      and re.fullmatch(r"method +self % +total % +self B +total B", header), r.stdout)
r = run([martini, "report", os.path.join(out, "threadprof.json"), "--top", "3"])
header = r.stdout.splitlines()[1] if r.stdout.count("\n") > 1 else ""
check("martini report on threadprof: blocked time in its unit, columns apart",
      re.search(r"blocked in all: [0-9.]+ us\)", r.stdout)
      and re.fullmatch(r"method +self % +total % +self us +total us", header), r.stdout)
collapsed = sorted(open(os.path.join(out, "heapprof.collapsed")).read().splitlines())
check("allocation stacks (bytes), root first", collapsed == [
    "app.Ledger.main;new_app.Ledger 40", "app.Ledger.main;new_java.lang.Object 16",
    "app.Ledger.run;app.Ledger.apply;new_app.Transfer 48", "app.Ledger.run;new_app.Transfer 72"], collapsed)
check("GC count and pause", heap["counters"]["gc_count"] == 1 and heap["counters"]["gc_pause_total_ns"] == 300,
      heap["counters"])
check("GC pause as a Chrome trace slice", any(e.get("cat") == "gc" and e["dur"] == 0.3 for e in
      json.load(open(os.path.join(out, "heapprof.trace.json")))["traceEvents"]))
go = shutil.which("go")
if go:
    g = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=alloc_space", os.path.join(out, "heapprof.pb.gz")],
                       capture_output=True, text=True, env=dict(env, HOME=work, PPROF_TMPDIR=work))
    check("go tool pprof reads heapprof's profile (alloc_space)",
          g.returncode == 0 and re.search(r"120B.*new app\.Transfer", g.stdout), g.stdout + g.stderr)
    g = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=inuse_objects", os.path.join(out, "heapprof.pb.gz")],
                       capture_output=True, text=True, env=dict(env, HOME=work, PPROF_TMPDIR=work))
    check("pprof inuse_objects", g.returncode == 0 and re.search(r"\b3\s+60(\.00)?%.*new app\.Transfer", g.stdout),
          g.stdout + g.stderr)

# sampled mode: each sample stands for 1 / (1 - e^(-size/interval)) allocations
import math  # noqa: E402
out_s = os.path.join(work, "sampled")
r = run([martini, "replay", "--client", f"heapprof=interval=64,top=0,out={out_s},formats=json", trace])
sampled = json.load(open(os.path.join(out_s, "heapprof.json")))
weight = 1 / (1 - math.exp(-24 / 64))
got = self_by_frame(sampled, "alloc_objects").get("new app.Transfer")
check("sampled mode: Transfer counts scaled to estimates", sampled["mode"] == "sampled" and got is not None
      and abs(got - 5 * weight) <= 3, (got, 5 * weight))
check("sampled mode: bytes scaled too", abs(self_by_frame(sampled, "alloc_space")["new app.Transfer"] - 5 * 24 * weight) < 2)

# heap filter: only app.Transfer tracked
out2 = os.path.join(work, "filtered")
r = run([martini, "replay", "--client", f"heapprof=exact,include=app.Tr*,top=3,out={out2},formats=json", trace])
alloc = self_by_frame(json.load(open(os.path.join(out2, "heapprof.json"))), "alloc_objects")
check("heap filter: only the chosen class", alloc == {"app.Ledger.main": 0, "app.Ledger.run": 0, "app.Ledger.apply": 0,
                                                      "new app.Transfer": 5} or set(k for k, v in alloc.items() if v)
      == {"new app.Transfer"}, alloc)

# -- threadprof --------------------------------------------------------------------------
details = json.load(open(os.path.join(out, "threadprof.threads.json")))
ledger = [m for m in details["monitors"] if m["class"] == "app.Ledger"]
check("contended monitor's class", len(ledger) == 1, details["monitors"])
if ledger:
    m = ledger[0]
    check("contentions and blocked time", m["contentions"] == 2 and m["blocked_ns"] == 500 and m["max_blocked_ns"] == 400, m)
    check("who waited", sorted((w["name"], w["count"], w["blocked_ns"]) for w in m["waiters"])
          == [("teller-a", 1, 100), ("teller-b", 1, 400)], m["waiters"])
    check("who held it", sorted((h["name"], h["count"]) for h in m["holders"]) == [("teller-a", 1), ("teller-b", 1)],
          m["holders"])
obj = [m for m in details["monitors"] if m["class"] == "java.lang.Object"]
check("wait/notify counts and time", obj and obj[0]["waits"] == 1 and obj[0]["woke"] == 1 and obj[0]["waiting_ns"] == 500,
      obj)
threads = {t["name"]: t for t in details["threads"]}
check("thread lifetimes and parents", threads["teller-b"]["start_ns"] == 310 and threads["teller-b"]["end_ns"] == 2300
      and threads["teller-b"]["parent"] == 1 and threads["teller-a"]["blocked_ns"] == 100, threads)
check("interactions", details["interactions"] == {"notify": 1}, details["interactions"])
check("summary names the top contended monitor", re.search(r"app\.Ledger@50: 2 contentions", both.stderr)
      and "held by: teller-a (1), teller-b (1)" in both.stderr, both.stderr)
chrome = json.load(open(os.path.join(out, "threadprof.trace.json")))
xs = [e for e in chrome["traceEvents"] if e.get("ph") == "X"]
check("Chrome trace: contention slice on the waiter's track, naming the holder",
      any(e["tid"] == 3 and e["name"] == "blocked on app.Ledger held by teller-a" and e["ts"] == 1.0 and e["dur"] == 0.4
          for e in xs), xs)
check("Chrome trace: one track per thread (lifetimes)", sorted(e["tid"] for e in xs if e["cat"] == "thread") == [1, 2, 3], xs)
check("Chrome trace: wait slice", any(e["cat"] == "wait" and e["tid"] == 1 and e["dur"] == 0.5 for e in xs), xs)

# monitor filter
out3 = os.path.join(work, "mfilter")
r = run([martini, "replay", "--client", f"threadprof=filter=+java.lang.*,top=3,out={out3},formats=json", trace])
details = json.load(open(os.path.join(out3, "threadprof.threads.json")))
check("monitor filter: app.Ledger's contention not reported",
      all(m["class"] != "app.Ledger" for m in details["monitors"]) and any(m["waits"] for m in details["monitors"]),
      details["monitors"])

# -- names longer than the first buffers: MRTE_ERROR_BUFFER_TOO_SHORT, grown, whole ---------
long_trace = os.path.join(source, "tests", "profilers", "long_names.jsonl")
long_cls = "org.example." + "verylongpackagename." * 6 + "AClassWithAVeryLongNameIndeed"
long_method = "aMethodWhoseNameIsLongerThanSixtyFourCharactersSoBuffersMustGrowX"
long_thread = "a-thread-whose-name-is-much-longer-than-the-sixteen-byte-first-buffer"
out4 = os.path.join(work, "long")
r = run([martini, "replay", "--client", f"cgprof=top=0,out={out4},formats=json", "--client",
         f"heapprof=exact,top=0,out={out4},formats=json", "--client", f"threadprof=top=3,out={out4},formats=json",
         long_trace])
cg_frames = [f["name"] for f in json.load(open(os.path.join(out4, "cgprof.json")))["frames"]]
check("cgprof: long class and method names whole", cg_frames == [f"{long_cls}.{long_method}"], cg_frames)
hp_alloc = self_by_frame(json.load(open(os.path.join(out4, "heapprof.json"))), "alloc_objects")
check("heapprof: a long class name whole", hp_alloc.get(f"new {long_cls}") == 1, hp_alloc)
check("threadprof: the long-named holder", f"held by: {long_thread} (1)" in r.stderr, r.stderr)

# -- bad options ---------------------------------------------------------------------------
for client, options, message in [
        ("heapprof", "interval=0", "option 'interval': between 1 and 2147483647"),
        ("heapprof", "bogus", "unknown option 'bogus'"),
        ("heapprof", "filter=+a|+b c", "blank in pattern"),
        ("heapprof", "include=a,filter=+b", "either filter= or include="),
        ("threadprof", "slices=x", "option 'slices': 'x' is not a count"),
        ("threadprof", "filter=@/nonexistent.json", "cannot read the filter file '/nonexistent.json'"),
        ("threadprof", "formats=svg", "unknown format 'svg'")]:
    r = run([martini, "replay", "--client", f"{client}={options}", trace], expect=1)
    check(f"{client} refuses {options!r}", r.returncode == 1 and message in r.stderr, r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
