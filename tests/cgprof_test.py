#!/usr/bin/env python3
"""cgprof on replay traces: golden trees on a synthetic clock, filters, the depth cap,
bad options; every output format checked by a consumer; `martini report/convert`.

usage: cgprof_test.py MARTINI_BUILD_DIR SOURCE_ROOT
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testlib  # noqa: E402
from testlib import Checks, self_by_frame, tree_paths  # noqa: E402

build, source = sys.argv[1:3]
replay = os.path.join(build, "tools", "martini-replay")
martini = os.path.join(build, "tools", "martini")
trace = os.path.join(source, "tests", "cgprof", "golden.jsonl")
golden_dir = os.path.join(source, "tests", "cgprof")
env = dict(os.environ, MARTINI_CLIENT_PATH=os.path.join(build, "clients"))
work = tempfile.mkdtemp(prefix="cgprof-test-")
check = Checks()



def run(args, expect=0):
    return testlib.run(args, expect, env=env)


def cgprof(options, name):
    out = os.path.join(work, name)
    r = run([replay, "--client", f"cgprof={options},out={out}", trace])
    return out, r


def collapsed(path):
    return sorted(open(path).read().splitlines())


# -- golden trees --------------------------------------------------------------------
out, r = cgprof("top=5,formats=all", "time")
expected = open(os.path.join(golden_dir, "expected-time.collapsed")).read().splitlines()
got = tree_paths(json.load(open(os.path.join(out, "cgprof.json"))), "wall")
check("time mode: exact tree and exclusive wall times", got == expected, "\n".join(got))
got = collapsed(os.path.join(out, "cgprof.collapsed"))
check("collapsed stacks fold direct recursion (rec;rec;rec -> rec, values added)", got == [
    "a.A.main 400", "a.A.main;a.A.rec 190", "a.A.main;a.A.rec;a.A.leaf 10", "a.A.main;a.A.work 220",
    "a.A.main;a.A.work;a.A.leaf 80", "a.A.work 90", "a.A.work;a.A.leaf 90"], "\n".join(got))
check("folding said on the terminal in one line",
      len(re.findall(r"cgprof: collapsed stacks: recursion folded \(2 calling contexts", r.stderr)) == 1, r.stderr)
check("top table on stderr", re.search(r"a\.A\.main\s+1\s+37\.0%\s+83\.3%", r.stderr) is not None, r.stderr)
check("recursion's total counted once (rec: 200 of 1080 ns)", re.search(r"a\.A\.rec\s+3\s+17\.6%\s+18\.5%", r.stderr) is not None, r.stderr)
check("files reported", r.stderr.count("cgprof: wrote ") == 5, r.stderr)

profile = json.load(open(os.path.join(out, "cgprof.json")))
counters = profile["counters"]
check("leave without enter (entered while paused) counted", counters["leaves_without_enter"] == 1, counters)
check("exception exits counted", counters["exception_exits"] == 2, counters)
check("thread names from ThreadStart", sorted(t["name"] for t in profile["threads"]) == ["main", "worker"],
      profile["threads"])
check("metrics of time mode", [m["name"] for m in profile["metrics"]] == ["calls", "wall"], profile["metrics"])
frames = [f["name"] for f in profile["frames"]]
leaf = frames.index("a.A.leaf")
spans = profile["spans"]
check("trace slices: every call of time mode", len(spans) == 12, len(spans))
check("a slice is [thread, frame, start, duration]", [1, leaf, 300, 50, "call"] in spans, spans[:4])
check("signature and source file kept", any(f.get("signature") == "(I)I" and f.get("file") == "A.java"
                                            for f in profile["frames"]), profile["frames"])

out, r = cgprof("counts,top=0,formats=all", "counts")
expected = open(os.path.join(golden_dir, "expected-counts.collapsed")).read().splitlines()
got = tree_paths(json.load(open(os.path.join(out, "cgprof.json"))), "calls")
check("counts mode: exact call counts per path", got == expected, "\n".join(got))
check("counts mode has no table when top=0", "top " not in r.stderr, r.stderr)
p = json.load(open(os.path.join(out, "cgprof.json")))
check("counts mode measures no time", [m["name"] for m in p["metrics"]] == ["calls"] and p["spans"] == [], p["metrics"])

chrome = json.load(open(os.path.join(out, "cgprof.trace.json")))
check("counts mode: the Chrome trace is a flame chart laid out from the tree (marked synthesized)",
      chrome["otherData"]["synthesized"] is True
      and any(e.get("ph") == "X" and e["name"] == "a.A.leaf" and e["args"]["calls"] == 2 for e in chrome["traceEvents"]),
      chrome["otherData"])

# cpu: thread CPU time per call from DR_THREAD_CPU_TIME (the trace's "cpu" fields)
cpu_trace = os.path.join(work, "cpu.jsonl")
with open(cpu_trace, "w") as f:
    for rec in [{"event": "ThreadStart", "t": 0, "thread": 1, "name": "main"},
                {"event": "ClassLoad", "t": 1, "thread": 1, "class": 10, "name": "a.A"},
                {"event": "NewMethod", "t": 2, "method": 1, "class": 10, "name": "outer", "sig": "()V"},
                {"event": "NewMethod", "t": 3, "method": 2, "class": 10, "name": "inner", "sig": "()V"},
                {"event": "VmInit", "t": 10, "thread": 1},
                {"event": "MethodEnter", "t": 100, "thread": 1, "method": 1, "cpu": 1000},
                {"event": "MethodEnter", "t": 200, "thread": 1, "method": 2, "cpu": 1050},
                {"event": "MethodLeave", "t": 300, "thread": 1, "method": 2, "cpu": 1250},
                {"event": "MethodLeave", "t": 400, "thread": 1, "method": 1, "cpu": 1400},
                {"event": "VmShutdown", "t": 500}]:
        f.write(json.dumps(rec) + "\n")
out_cpu = os.path.join(work, "cpu")
r = run([replay, "--client", f"cgprof=cpu,top=0,out={out_cpu},formats=json", cpu_trace])
p = json.load(open(os.path.join(out_cpu, "cgprof.json")))
cpu = self_by_frame(p, "cpu")
check("cpu: thread CPU time, exclusive per method", cpu == {"a.A.outer": 200, "a.A.inner": 200}, cpu)


# The table over the threads that used CPU (the threads' CPU times from the trace's
# "cpu" fields): "main" works 300 ns on 250 ns of CPU; "pool" waits 1000 ns on `pool_cpu`
# (asked at its first event and at its ThreadEnd; main's at the end of the run).
def waits_trace(name, pool_cpu):
    path = os.path.join(work, name + ".jsonl")
    cpu = (lambda n: {"cpu": n}) if pool_cpu is not None else (lambda n: {})
    with open(path, "w") as f:
        for rec in [{"event": "ThreadStart", "t": 0, "thread": 1, "name": "main"},
                    {"event": "ThreadStart", "t": 0, "thread": 2, "name": "pool"},
                    {"event": "ClassLoad", "t": 1, "thread": 1, "class": 10, "name": "a.A"},
                    {"event": "NewMethod", "t": 2, "method": 1, "class": 10, "name": "work", "sig": "()V"},
                    {"event": "NewMethod", "t": 3, "method": 2, "class": 10, "name": "idle", "sig": "()V"},
                    {"event": "VmInit", "t": 10, "thread": 1},
                    {"event": "MethodEnter", "t": 100, "thread": 1, "method": 1, **cpu(0)},
                    {"event": "MethodEnter", "t": 100, "thread": 2, "method": 2, **cpu(0)},
                    {"event": "MethodLeave", "t": 400, "thread": 1, "method": 1, **cpu(250)},
                    {"event": "MethodLeave", "t": 1100, "thread": 2, "method": 2},
                    {"event": "ThreadEnd", "t": 1100, "thread": 2, **cpu(pool_cpu)},
                    {"event": "VmShutdown", "t": 1200}]:
            f.write(json.dumps(rec) + "\n")
    out = os.path.join(work, name)
    return out, run([replay, "--client", f"cgprof=top=5,formats=json,out={out}", path])


out, r = waits_trace("waited", 12)
check("table: a thread that mostly waited is left out, and the header says so",
      "cgprof: top 1 of 1 methods by self wall (1 of 2 threads: those that used CPU; wall in all: 0.300 us)\n"
      "  left out: 1 thread that mostly waited (on CPU under 5% of its time in calls): pool; "
      f"martini report {os.path.join(out, 'cgprof.json')} --thread NAME shows any thread\n" in r.stderr
      and "a.A.idle" not in r.stderr, r.stderr)
p = json.load(open(os.path.join(out, "cgprof.json")))
check("table: the JSON keeps the thread left out", sorted(t["name"] for t in p["threads"]) == ["main", "pool"],
      p["threads"])
out, r = waits_trace("worked", 30)
check("table: a thread with 10% of the busiest thread's CPU stays, however long it waited",
      "by self wall (2 threads; wall in all: 1.300 us)" in r.stderr and "left out" not in r.stderr, r.stderr)
out, r = waits_trace("unknown", None)
check("table: without CPU times, every thread (the header as before)",
      "cgprof: top 2 of 2 methods by self wall (2 threads; wall in all: 1.300 us)\n" in r.stderr
      and re.search(r"a\.A\.idle\s+1\s+76\.9%", r.stderr), r.stderr)

out, r = cgprof("trace=3,top=0,formats=json+chrome", "trace3")
p = json.load(open(os.path.join(out, "cgprof.json")))
check("trace=N bounds the slices", len(p["spans"]) == 3, p["spans"])
frames = [f["name"] for f in p["frames"]]
main_spans = [s for s in p["spans"] if frames[s[1]] == "a.A.main"]
check("trace=N keeps the first calls entered: the outermost frame has its whole slice",
      len(main_spans) == 1 and all(main_spans[0][2] <= s[2] and s[2] + s[3] <= main_spans[0][2] + main_spans[0][3]
                                   for s in p["spans"] if s[0] == main_spans[0][0]),
      p["spans"])
check("calls left out of the trace counted", p["counters"]["trace_calls_not_kept"] == 9, p["counters"])
check("the cut said on the terminal, with the option that keeps them all",
      "cgprof: trace cut after 3 calls (9 later calls not kept" in r.stderr and "use trace=12 to keep them all" in r.stderr,
      r.stderr)
chrome = json.load(open(os.path.join(out, "cgprof.trace.json")))
check("the cut said in the trace (otherData and an instant event)",
      "trace cut after 3 calls" in chrome["otherData"].get("cut", "")
      and any(e.get("ph") == "i" and "use trace=12" in e["name"] for e in chrome["traceEvents"]), chrome["otherData"])
out, r = cgprof("top=0", "default")
check("default files: the JSON profile and the HTML report",
      sorted(os.listdir(out)) == ["cgprof.html", "cgprof.json"] and r.stderr.count("cgprof: wrote ") == 2,
      str(os.listdir(out)) + r.stderr)
check("no cut note when the trace holds every call", "trace cut" not in r.stderr, r.stderr)

# Deep recursion: 20,000 nested calls of one method (kept to depth=4096), and a cycle of
# two methods; the collapsed stacks stay a few lines, and the terminal says why.
deep_trace = os.path.join(work, "deep.jsonl")
with open(deep_trace, "w") as f:
    f.write('{"event":"ThreadStart","t":0,"thread":1,"name":"main"}\n'
            '{"event":"ClassLoad","t":1,"thread":1,"class":10,"name":"d.DeepRecursionExample"}\n')
    for method, name in [(1, "descendTheTree"), (2, "even"), (3, "odd")]:
        f.write(json.dumps({"event": "NewMethod", "t": 1 + method, "method": method, "class": 10, "name": name,
                            "sig": "(I)I"}) + "\n")
    f.write('{"event":"VmInit","t":10,"thread":1}\n')
    t = 100
    calls = [1] * 20000 + [2, 3] * 1000
    for m in calls:
        f.write(f'{{"event":"MethodEnter","t":{t},"thread":1,"method":{m}}}\n')
        t += 1
    for m in reversed(calls):
        f.write(f'{{"event":"MethodLeave","t":{t},"thread":1,"method":{m}}}\n')
        t += 1
    f.write(f'{{"event":"VmShutdown","t":{t}}}\n')
out = os.path.join(work, "deep")
r = run([replay, "--client", f"cgprof=counts,top=0,formats=all,out={out}", deep_trace])
size = os.path.getsize(os.path.join(out, "cgprof.collapsed"))
lines = open(os.path.join(out, "cgprof.collapsed")).read().splitlines()
check("deep recursion: collapsed stacks in proportion (a line per distinct folded path)",
      lines == ["d.DeepRecursionExample.descendTheTree 4096"] and size < 100, lines[:3])
check("deep recursion: folding said on the terminal, once",
      r.stderr.count("cgprof: collapsed stacks: recursion folded (4095 calling contexts") == 1, r.stderr)
check("deep recursion: the JSON keeps the tree as recorded (4096 contexts)",
      len(json.load(open(os.path.join(out, "cgprof.json")))["merged"]["nodes"]) == 4097)
check("deep recursion: pprof bounded too", os.path.getsize(os.path.join(out, "cgprof.pb.gz")) < 50000,
      os.path.getsize(os.path.join(out, "cgprof.pb.gz")))
out = os.path.join(work, "deep-cycle")
r = run([replay, "--client", f"cgprof=counts,top=0,formats=collapsed,depth=30000,out={out}", deep_trace])
lines = open(os.path.join(out, "cgprof.collapsed")).read().splitlines()
check("depth=30000: direct recursion and a cycle of two folded",
      sorted(lines) == ["d.DeepRecursionExample.descendTheTree 20000",
                        "d.DeepRecursionExample.descendTheTree;d.DeepRecursionExample.even 1",
                        "d.DeepRecursionExample.descendTheTree;d.DeepRecursionExample.even;d.DeepRecursionExample.odd 1000",
                        "d.DeepRecursionExample.descendTheTree;d.DeepRecursionExample.even;d.DeepRecursionExample.odd;"
                        "d.DeepRecursionExample.even 999"], lines[:5])

# -- filters and the depth cap ---------------------------------------------------------
out, r = cgprof("include=*.rec,top=0,formats=json", "include")
got = tree_paths(json.load(open(os.path.join(out, "cgprof.json"))), "wall")
check("include: callees of left-out methods attach to the nearest profiled caller",
      got == ["a.A.rec 110", "a.A.rec;a.A.rec 60", "a.A.rec;a.A.rec;a.A.rec 30"], "\n".join(got))
out, r = cgprof("exclude=a.A.l?af,top=0,formats=collapsed", "exclude")
got = collapsed(os.path.join(out, "cgprof.collapsed"))
check("exclude with ? wildcard: leaf's time becomes its callers' own",
      "a.A.main;a.A.work 300" in got and not any("leaf" in line for line in got), "\n".join(got))
out, r = cgprof("filter=-*.leaf|+a.*,top=0,formats=collapsed", "rules")
got = collapsed(os.path.join(out, "cgprof.collapsed"))
check("filter= rule set (one-line): first match wins", not any("leaf" in l for l in got) and "a.A.main 400" in got,
      "\n".join(got))
rules_file = os.path.join(work, "rules.json")
json.dump({"rules": [{"action": "include", "class": "a.A", "method": "rec", "signature": "(I)I",
                      "access": "class_internal"}]}, open(rules_file, "w"))
out, r = cgprof(f"filter=@{rules_file},top=0,formats=json", "rulesjson")
got = tree_paths(json.load(open(os.path.join(out, "cgprof.json"))), "wall")
check("filter=@file.json: class, method, signature and access", got ==
      ["a.A.rec 110", "a.A.rec;a.A.rec 60", "a.A.rec;a.A.rec;a.A.rec 30"], "\n".join(got))
open(rules_file, "w").write('{"rules": [{"action": "include", "clas": "a.*"}]}')
r = run([replay, "--client", f"cgprof=filter=@{rules_file}", trace], expect=1)
check("a bad rule set: file, position and reason; cgprof refuses to start",
      f"cgprof: {rules_file}: rules[0].clas: unknown field" in r.stderr and "does not start" in r.stderr, r.stderr)
r = run([replay, "--client", "cgprof=filter=+a.*|bogus", trace], expect=1)
check("a bad one-line rule: position and reason", "filter rule 2 (column 6) \"bogus\": a rule starts with +" in r.stderr,
      r.stderr)
r = run([replay, "--client", f"cgprof=filter=@{work}/missing.json", trace], expect=1)
check("an unreadable rule file is named", "cannot read the filter file" in r.stderr and "missing.json" in r.stderr, r.stderr)

out, r = cgprof("nodes=4,top=0,formats=json+collapsed", "budget")
got = collapsed(os.path.join(out, "cgprof.collapsed"))
marker = "(more_call_paths:_nodes=4_reached)"
check("node budget: new paths kept per method under a marker, times stay additive", got == sorted([
    "a.A.main 400", "a.A.main;a.A.work 220", "a.A.main;a.A.work;a.A.leaf 80",
    f"{marker};a.A.rec 190", f"{marker};a.A.leaf 10", "a.A.work 90", "a.A.work;a.A.leaf 90"]), "\n".join(got))
p = json.load(open(os.path.join(out, "cgprof.json")))
calls = self_by_frame(p, "calls")
check("node budget: per-method calls stay exact", calls["a.A.rec"] == 3 and calls["a.A.leaf"] == 5, calls)
check("node budget: counted", p["counters"]["calls_beyond_node_budget"] == 4, p["counters"])

out, r = cgprof("depth=3,top=0,formats=json+collapsed", "depth")
got = collapsed(os.path.join(out, "cgprof.collapsed"))
p = json.load(open(os.path.join(out, "cgprof.json")))
check("depth cap: overflow counted", p["counters"]["depth_overflows"] == 2, p["counters"])
check("depth cap: no path deeper than 3", max(line.split(" ")[0].count(";") for line in got) == 2, "\n".join(got))

# -- bad options: the client refuses to start, naming the cause ------------------------
for options, message in [("bogus", "unknown option 'bogus'"), ("top=x", "option 'top': 'x' is not a count"),
                         ("formats=svg", "option 'formats': unknown format 'svg'"), ("counts,cpu", "option 'cpu' needs time mode"),
                         ("name=a/b", "option 'name': a base name"), ("depth=0", "option 'depth'")]:
    r = run([replay, "--client", f"cgprof={options}", trace], expect=1)
    check(f"bad option {options!r} refused", r.returncode == 1 and f"cgprof: {message}" in r.stderr, r.stderr)
r = run([replay, "--client", f"cgprof=bogus;callcount=top=1", trace], expect=0)
check("a refused cgprof does not stop another client", "callcount:" in r.stderr and "unknown option" in r.stderr, r.stderr)
outdir = os.path.join(work, "not-a-dir")
open(outdir, "w").write("a file")
r = run([replay, "--client", f"cgprof=top=1,out={outdir}", trace])
check("an unwritable output directory is reported and the table still printed",
      "cannot create the output directory" in r.stderr and "a.A.main" in r.stderr, r.stderr)

# -- the formats, read by their consumers ------------------------------------------------
out = os.path.join(work, "time")
for f in ["cgprof.json", "cgprof.trace.json"]:
    r = subprocess.run([sys.executable, "-m", "json.tool", os.path.join(out, f)], capture_output=True)
    check(f"{f} is JSON (python3 -m json.tool)", r.returncode == 0, r.stderr)
chrome = json.load(open(os.path.join(out, "cgprof.trace.json")))
xs = [e for e in chrome["traceEvents"] if e.get("ph") == "X"]
check("chrome trace: complete events with microsecond times",
      any(e["name"] == "a.A.leaf" and e["ts"] == 0.3 and e["dur"] == 0.05 for e in xs), xs[:3])
check("chrome trace: thread names", any(e.get("name") == "thread_name" and e["args"]["name"] == "worker"
                                        for e in chrome["traceEvents"]))
lines = open(os.path.join(out, "cgprof.collapsed")).read().splitlines()
check("collapsed stacks parse (frames;frames count)",
      all(re.fullmatch(r"[^ ;]+(;[^ ;]+)* [0-9]+", line) for line in lines), lines)
check("collapsed stacks sum to the profile's total", sum(int(l.rsplit(" ", 1)[1]) for l in lines) == 1080)
raw = gzip.open(os.path.join(out, "cgprof.pb.gz")).read()
check("pprof file is gzipped protobuf", len(raw) > 50 and raw[0] == 0x0a, raw[:8])
go = shutil.which("go")
if go:
    r = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=wall", os.path.join(out, "cgprof.pb.gz")],
                       capture_output=True, text=True, env=dict(env, HOME=work, PPROF_TMPDIR=work))
    check("go tool pprof -top reads it", r.returncode == 0 and re.search(r"400ns\s+37\.04%.*a\.A\.main", r.stdout),
          r.stdout + r.stderr)
    r = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=calls", "-tagfocus=thread=worker",
                        os.path.join(out, "cgprof.pb.gz")], capture_output=True, text=True,
                       env=dict(env, HOME=work, PPROF_TMPDIR=work))
    check("pprof: thread labels (worker's calls only)", r.returncode == 0 and re.search(r"\b2\s.*a\.A\.leaf", r.stdout)
          and "a.A.main" not in r.stdout, r.stdout + r.stderr)
else:
    print("SKIP: go tool pprof (Debian's golang-go) is not installed")

# -- sample mode (SampleHit) -------------------------------------------------------------
strace = os.path.join(source, "tests", "cgprof", "samples.jsonl")
sout = os.path.join(work, "sampled")
r = run([replay, "--client", f"cgprof=sample,top=5,formats=all,out={sout}", strace])
p = json.load(open(os.path.join(sout, "cgprof.json")))
check("sample mode: sample counts per path, the unwalkable sample kept under the root",
      tree_paths(p, "samples") == ["(stack_not_walkable) 1", "a.A.leaf 4", "a.A.main 2", "a.A.main;a.A.work 3",
                                   "a.A.main;a.A.work;a.A.leaf 5"], tree_paths(p, "samples"))
pout = os.path.join(work, "sample-paths")
run([replay, "--client", f"cgprof=sample,top=0,formats=json,out={pout}",
     os.path.join(source, "tests", "cgprof", "sample_paths.jsonl")])
pp = json.load(open(os.path.join(pout, "cgprof.json")))
check("sample mode: samples that share frames with the one before, then part, each on its own path",
      tree_paths(pp, "samples") == ["a.A.main;a.A.leaf 1", "a.A.main;a.A.work 1", "a.A.main;a.A.work;a.A.leaf 4",
                                    "a.A.main;a.A.work;a.A.leaf;a.A.work 1", "a.A.work 1"], tree_paths(pp, "samples"))
check("sample mode: estimated CPU time = samples x 10 ms at 100 Hz",
      "a.A.main;a.A.work;a.A.leaf 50000000" in tree_paths(p, "cpu"), tree_paths(p, "cpu"))
check("sample mode: metrics, default metric, mode, period",
      [m["name"] + "/" + m["unit"] for m in p["metrics"]] == ["samples/count", "cpu/nanoseconds"] and
      p["defaultMetric"] == "cpu" and p["mode"] == "sampled 100 Hz cpu" and p["periodNs"] == 10000000, p)
check("sample mode: counters say how many samples and how many could not be walked",
      p["counters"]["samples"] == 15 and p["counters"]["samples_not_walkable"] == 1 and
      p["counters"]["sampling_hz"] == 100, p["counters"])
check("sample mode: the terminal says it is sampled, at what rate, what failed",
      "cgprof: sampled at 100 Hz of CPU time: 15 samples, 1 could not be walked\n" in r.stderr and
      re.search(r"a\.A\.leaf\s+60\.0%\s+60\.0%\s+90\.0\s+90\.0", r.stderr), r.stderr)
check("sample mode: thread names", sorted(t["name"] for t in p["threads"]) == ["main", "worker"], p["threads"])
chrome = json.load(open(os.path.join(sout, "cgprof.trace.json")))
check("sample mode: the Chrome trace is a synthesized flame chart",
      "synthesized" in json.dumps(chrome) and any(e.get("name") == "a.A.leaf" for e in chrome["traceEvents"]))
raw = gzip.open(os.path.join(sout, "cgprof.pb.gz")).read()
check("sample mode: pprof written", len(raw) > 50 and raw[0] == 0x0a, raw[:8])
if go:
    r = subprocess.run([go, "tool", "pprof", "-raw", os.path.join(sout, "cgprof.pb.gz")], capture_output=True,
                       text=True, env=dict(env, HOME=work, PPROF_TMPDIR=work))
    check("sample mode: pprof sample types samples/count, cpu/nanoseconds; period 10 ms of cpu",
          r.returncode == 0 and "samples/count cpu/nanoseconds" in r.stdout and "PeriodType: cpu nanoseconds" in r.stdout
          and "Period: 10000000" in r.stdout, r.stdout + r.stderr)
sout = os.path.join(work, "sampled-wall")
r = run([replay, "--client", f"cgprof=sample=1000,wall,top=0,out={sout}", strace])
p = json.load(open(os.path.join(sout, "cgprof.json")))
check("sample mode, wall: wall metric at 1 ms a sample",
      p["mode"] == "sampled 1000 Hz wall" and "a.A.leaf 4000000" in tree_paths(p, "wall"), tree_paths(p, "wall"))
for bad, said in [("sample=0", "option 'sample': '0' is not a rate in Hz"), ("wall", "option 'wall' needs sample mode"),
                  ("sample,include=a.*", "sample mode takes none of"), ("sample=x", "is not a rate in Hz")]:
    r = run([replay, "--client", f"cgprof={bad}", strace], expect=None)
    check(f"sample mode: bad option {bad}", said in r.stderr, r.stderr)

# -- martini report / convert ----------------------------------------------------------
profile_path = os.path.join(out, "cgprof.json")
r = run([martini, "report", profile_path, "--top", "2"])
check("martini report prints the table", re.search(r"a\.A\.main\s+1\s+37\.0%", r.stdout) and "a.A.leaf" not in r.stdout,
      r.stdout)
r = run([martini, "report", profile_path, "--thread", "worker", "--metric", "calls"])
check("martini report --thread --metric", re.search(r"a\.A\.work\s+2\s+50\.0%\s+100\.0%", r.stdout), r.stdout)
for fmt, name in [("collapsed", "c.collapsed"), ("chrome", "c.trace.json"), ("pprof", "c.pb.gz"),
                  ("html", "c.html"), ("json", "c.json")]:
    target = os.path.join(work, name)
    r = run([martini, "convert", profile_path, "--to", fmt, "-o", target])
    check(f"martini convert --to {fmt}", r.returncode == 0 and os.path.getsize(target) > 0, r.stderr)
check("convert to collapsed equals cgprof's own",
      collapsed(os.path.join(work, "c.collapsed")) == collapsed(os.path.join(out, "cgprof.collapsed")))
check("JSON round trip is exact", json.load(open(os.path.join(work, "c.json"))) == json.load(open(profile_path)))
r = run([martini, "convert", profile_path, "--to", "svg"], expect=1)
check("convert: unknown format named", "unknown format 'svg'" in r.stderr, r.stderr)
r = run([martini, "report", os.path.join(work, "missing.json")], expect=1)
check("report: unreadable profile named", "cannot read" in r.stderr and "missing.json" in r.stderr, r.stderr)
bad = os.path.join(work, "bad.json")
json.dump({"format": "martini-profile", "version": 1, "tool": "x", "metrics": [{"name": "calls", "unit": "count"}],
           "frames": [], "threads": [{"id": 1, "nodes": [[-1, -1, 0], [0, 7, 1]]}]}, open(bad, "w"))
r = run([martini, "report", bad], expect=1)
check("report: malformed profile, position named", "threads[0].nodes[1]: frame 7 is not in \"frames\"" in r.stderr, r.stderr)
open(bad, "w").write('{"format": "martini-profile", "version": 1, "tool": ')
r = run([martini, "report", bad], expect=1)
check("report: truncated profile", "not JSON" in r.stderr, r.stderr)
r = run([martini, "report", os.path.join(work, "c.json"), "--thread", "nobody"], expect=1)
check("report: unknown thread lists the known ones", "no thread 'nobody'" in r.stderr and "(worker)" in r.stderr,
      r.stderr)
for cmd in ["run", "report", "convert", "replay"]:
    r = run([martini, cmd, "--help"])
    check(f"martini {cmd} --help", r.returncode == 0 and "usage: martini" in r.stdout, r.stdout)
r = run([martini, "frobnicate"], expect=1)
check("unknown command named", "unknown command 'frobnicate'" in r.stderr, r.stderr)
r = run([martini, "replay", "--client", "cgprof=top=1,formats=none", trace])
check("martini replay is martini-replay", "a.A.main" in r.stderr, r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
