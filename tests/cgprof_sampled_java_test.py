#!/usr/bin/env python3
"""cgprof's sample mode on the JVM, its lines and its times: tests/sampled/Phases.java
runs first() for a second, then second() for a second, first() spending nearly all
its time on the line marked HOT.

- hot lines: `martini report --lines` and `go tool pprof -lines` put first()'s time on
  the HOT line, not on the method's first line;
- the timeline: every sample with its time in the JSON; `martini report --from/--to`
  keeps what was sampled inside the window (first() before the switch, second()
  after); the Chrome trace shows the samples over time (first()'s slices before
  second()'s), not a tree laid out;
- a timeline past its budget (trace=N) is said, and a window of it refused; a window
  of an exact profile refused;
- every sample named: tests/sampled/Zips.java spends its time in zlib under
  Deflater.deflateBytesBytes (a JNI method) and in Math.sin's stub of the JVM's code
  cache; the native frames are named by symbol or library+offset under the Java
  frame, with zlib's callers (deflate, libzip's JNI function) from the unwind tables
  (and without them with MARTINI_SAMPLING_UNWIND=fp), the stub by its code blob's
  name, and at most 1% of the samples stay unnamed; the JIT compiler thread is
  sampled, its stacks libjvm's functions;
- kernel frames (tests/sampled/Reads.java reads /dev/zero): where perf allows them, the
  kernel's read path by symbol on top of libc, libjava and the Java frames; none with
  MARTINI_SAMPLING_KERNEL=0;
- a stack deeper than the sampler's buffer (tests/sampled/Deep.java): cut to its
  innermost frames, the cut stacks counted and said;
- faults (tests/sampled/Churn.java): 1,500 threads that die while sampled, with perf
  events at 1 kHz and with the timers in wall-clock mode, and an attach to a JVM whose
  ten threads keep both cores busy: the program runs to its end, the samples are its
  own.

usage: cgprof_sampled_java_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

build, root, javac = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="cgprof-sampled-")
check = Checks()
source = os.path.join(root, "tests", "sampled", "Phases.java")
classes = os.path.join(work, "classes")
subprocess.run([javac, "-g", "-d", classes, source, os.path.join(root, "tests", "sampled", "Zips.java"),
                os.path.join(root, "tests", "sampled", "Churn.java"), os.path.join(root, "tests", "sampled", "Reads.java"),
                os.path.join(root, "tests", "sampled", "Deep.java")], check=True)
lines = open(source).read().splitlines()
hot = next(i + 1 for i, text in enumerate(lines) if text.rstrip().endswith("// HOT"))


def run(args):
    return subprocess.run(args, capture_output=True, text=True, cwd=work, timeout=300)


def report(*args):
    return run([martini, "report", os.path.join(out, "cgprof.json"), *args])


def self_ms(table, method):
    """The self ms column of `method`'s row in a `martini report` table (0 when absent)."""
    m = re.search(r"^" + re.escape(method) + r"\s+\S+%\s+\S+%\s+([\d.]+)\s", table, re.M)
    return float(m.group(1)) if m else 0.0


out = os.path.join(work, "out")
r = run([martini, "run", "--client", "cgprof=sample=1000,formats=all,top=5", "--output", out, "--",
         "java", "-cp", classes, "Phases", "1000"])
log = r.stdout + r.stderr
check("the sampled run exits 0", r.returncode == 0 and "phases: done" in log, log)

# Hot lines.
r = report("--lines", "--top", "10")
rows = re.findall(r"^Phases\.first\s+Phases\.java:(\d+)\s+([\d.]+)%", r.stdout, re.M)
check("martini report --lines: first()'s top line is the HOT one", r.returncode == 0 and rows and
      int(rows[0][0]) == hot, r.stdout + r.stderr)
share = {int(line): float(pct) for line, pct in rows}
check("the HOT line holds at least 80% of first()'s samples",
      share and share.get(hot, 0) >= 0.8 * sum(share.values()), share)
go = shutil.which("go")
if go is None:
    check("go is installed for `go tool pprof` (scripts/install-deps.sh --test)", False)
else:
    g = subprocess.run([go, "tool", "pprof", "-lines", "-top", os.path.join(out, "cgprof.pb.gz")],
                       capture_output=True, text=True, timeout=300)
    check("go tool pprof -lines: first()'s time on the HOT line",
          g.returncode == 0 and re.search(r"\sPhases\.first Phases\.java:%d\b" % hot, g.stdout), g.stdout + g.stderr)

chromium = shutil.which("chromium")
if chromium is None:
    check("chromium is installed for the HTML report's self-test (scripts/install-deps.sh --test)", False)
else:
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--user-data-dir=" + os.path.join(work, "chromium"), "--virtual-time-budget=5000",
                          "--dump-dom", "file://" + os.path.join(out, "cgprof.html") + "#selftest"],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="selftest">([^<]*)', dom)
    summary = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")) if m else {}
    check("the HTML report's hot lines have first()'s HOT line",
          "Phases.first Phases.java:%d" % hot in summary.get("lines", []), summary)

# The timeline.
profile = json.load(open(os.path.join(out, "cgprof.json")))
timeline = profile.get("timeline", [])
check("every sample in the timeline", len(timeline) == profile["counters"]["samples"] and len(timeline) > 1000,
      (len(timeline), profile["counters"]))
check("the timeline in time order", all(a[0] <= b[0] for a, b in zip(timeline, timeline[1:])))
frames = [f["name"] for f in profile["frames"]]


def leaf(sample):
    return frames[profile["threads"][sample[1]]["nodes"][sample[2]][1]]


start = timeline[0][0] if timeline else 0
second_at = next((s[0] - start for s in timeline if leaf(s) == "Phases.second"), None)
check("second() was sampled", second_at is not None)
if second_at is not None:
    before = report("--to", "%dms" % (second_at // 1_000_000 - 100))
    check("--to before the switch: first() and no second()",
          before.returncode == 0 and self_ms(before.stdout, "Phases.first") > 300 and
          self_ms(before.stdout, "Phases.second") == 0, before.stdout + before.stderr)
    after = report("--from", "%.3f" % ((second_at + 100_000_000) / 1e9))
    check("--from after the switch: second() and no first()",
          after.returncode == 0 and self_ms(after.stdout, "Phases.second") > 300 and
          self_ms(after.stdout, "Phases.first") == 0, after.stdout + after.stderr)
    whole = report()
    check("without a window, both", self_ms(whole.stdout, "Phases.first") > 300 and
          self_ms(whole.stdout, "Phases.second") > 300, whole.stdout)
bad = report("--from", "2s", "--to", "1s")
check("an empty window refused", bad.returncode == 1 and "--from must be before --to" in bad.stderr, bad.stderr)

trace = json.load(open(os.path.join(out, "cgprof.trace.json")))
check("the Chrome trace holds real samples, not a laid-out tree",
      trace["otherData"]["synthesized"] is False, trace["otherData"])
slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
firsts = [e for e in slices if e["name"] == "Phases.first"]
seconds = [e for e in slices if e["name"] == "Phases.second"]
check("sample slices of category 'sample'", slices and all(e["cat"] == "sample" for e in slices))
check("first()'s slices end before second()'s begin",
      firsts and seconds and max(e["ts"] + e["dur"] for e in firsts) <= min(e["ts"] for e in seconds) + 2000,
      (len(firsts), len(seconds)))

# Continuous profiling: --interval writes one profile per interval, each holding only
# its own samples; together with the profile at the end they are every sample raised.
iv = os.path.join(work, "intervals")
r = run([martini, "run", "--interval", "500ms", "--client", "cgprof=sample=1000,top=0", "--output", iv, "--",
         "java", "-cp", classes, "Phases", "1000"])
log = r.stdout + r.stderr
numbers = sorted(int(m) for m in re.findall(r"cgprof-(\d+)\.json", " ".join(os.listdir(iv))))
check("--interval 500ms: an interval profile every half second (cgprof-1.json, ...)",
      r.returncode == 0 and len(numbers) >= 3 and numbers == list(range(1, len(numbers) + 1)), (numbers, log))
parts = [json.load(open(os.path.join(iv, f"cgprof-{n}.json"))) for n in numbers]
parts.append(json.load(open(os.path.join(iv, "cgprof.json"))))
raised = re.search(r"sampling: (\d+) samples raised", log)
total = sum(p["counters"]["samples"] for p in parts)
check("the intervals and the end hold every sample raised, none twice",
      raised is not None and total == int(raised.group(1)), (total, raised and raised.group(0)))
spans = [(p["timeline"][0][0], p["timeline"][-1][0]) for p in parts if p.get("timeline")]
# (An interval point right at the program's end leaves the end profile without samples.)
check("each interval holds only its own time",
      all(p.get("timeline") or p["counters"]["samples"] == 0 for p in parts) and len(spans) >= 3 and
      all(a[1] < b[0] for a, b in zip(spans, spans[1:])) and
      all((b - a) < 1_500_000_000 for a, b in spans), spans)
check("cgprof says where the end profile starts", "since interval point %d" % len(numbers) in log, log)
# The same through martini attach: a plain JVM profiled for 1.6 s at 500 ms intervals.
java = subprocess.Popen(["java", "-cp", classes, "Zips", "4000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True, cwd=work)
try:
    time.sleep(1.0)
    attached = os.path.join(work, "attached")
    r = run([martini, "attach", str(java.pid), "--client", "cgprof=sample=1000,top=0,formats=json", "--duration",
             "1600ms", "--interval", "500ms", "--output", attached])
    names = sorted(f for f in os.listdir(attached) if f.endswith(".json")) if os.path.isdir(attached) else []
    check("martini attach --interval: interval profiles, then the rest at the detach",
          r.returncode == 0 and "cgprof-1.json" in names and "cgprof-2.json" in names and "cgprof.json" in names,
          (names, r.stderr[-2000:]))
finally:
    java.kill()
    java.wait()
r = run([martini, "run", "--interval", "soon", "--", "java", "-cp", classes, "Phases", "1"])
check("a bad --interval refused", r.returncode == 1 and "--interval 'soon' is not a time" in r.stderr, r.stderr)
r = run([martini, "run", "--interval", "1s", "--", "mono", "nothing.exe"])
check("--interval under Mono refused before the start, naming why",
      r.returncode == 1 and "the Mono module starts no control channel" in r.stderr, r.stderr)

# Every sample named: native frames under Java frames, stubs by their blob's name; zlib's
# callers inside zlib and libzip from the unwind tables (with MARTINI_SAMPLING_UNWIND=fp,
# the frame-pointer chain, zlib's innermost function straight under the Java frame).
def ancestors(nodes, frames, i):
    """The names (with their files) from node i's parent to the root."""
    out, j = [], nodes[i][0]
    while j > 0:
        f = frames[nodes[j][1]]
        out.append(f["name"] + "@" + f.get("file", ""))
        j = nodes[j][0]
    return out


def zips_run(name, env):
    d = os.path.join(work, name)
    r = subprocess.run([martini, "run", "--client", "cgprof=sample=1000,top=0,formats=json", "--output", d, "--",
                        "java", "-cp", classes, "Zips", "1000"], capture_output=True, text=True, cwd=work,
                       timeout=300, env={**os.environ, **env})
    check(f"the Zips run exits 0 ({name})", r.returncode == 0 and "zips: done" in r.stdout + r.stderr,
          r.stdout + r.stderr)
    zp = json.load(open(os.path.join(d, "cgprof.json")))
    frames, nodes = zp["frames"], zp["merged"]["nodes"]
    selfs, under_jni, through_zlib = {}, 0, 0
    for i, node in enumerate(nodes[1:], 1):
        name = frames[node[1]]["name"]
        selfs[name] = selfs.get(name, 0) + node[2]
        if node[2] and frames[node[1]].get("file", "").startswith("libz.so"):
            up = ancestors(nodes, frames, i)
            if "java.util.zip.Deflater.deflateBytesBytes@Deflater.java" in up:
                under_jni += node[2]
                if any(a.startswith("deflate@libz.so") for a in up) and \
                        "Java_java_util_zip_Deflater_deflateBytesBytes@libzip.so" in up:
                    through_zlib += node[2]
    return frames, selfs, under_jni, through_zlib


zframes, zself, under_jni, through_zlib = zips_run("zips", {})
samples = sum(zself.values())
unnamed = sum(v for k, v in zself.items() if k.startswith("("))
check("zlib's native frames under Deflater.deflateBytesBytes hold the deflate time (a third of it at least)",
      under_jni >= samples // 6, (under_jni, samples))
check("zlib's time under deflate() and libzip's JNI function (callers from the unwind tables)",
      through_zlib >= samples // 6, (through_zlib, under_jni, samples))
stub = sum(v for k, v in zself.items() if any(f["name"] == k and f.get("file") == "[code cache]" for f in zframes))
check("Math.sin's time on a stub named as HotSpot names it, in [code cache]", stub >= samples // 6,
      sorted(((v, k) for k, v in zself.items()), reverse=True)[:6])
check("at most 1% of the samples unnamed", samples > 1500 and unnamed * 100 <= samples,
      (unnamed, samples, {k: v for k, v in zself.items() if k.startswith("(")}))
_, fp_self, fp_under_jni, fp_through = zips_run("zips-fp", {"MARTINI_SAMPLING_UNWIND": "fp"})
check("MARTINI_SAMPLING_UNWIND=fp: zlib's innermost function under the Java frame, its callers lost",
      fp_under_jni >= sum(fp_self.values()) // 6 and fp_through * 20 < fp_under_jni, (fp_through, fp_under_jni))

# Kernel frames, where perf lets a thread's clock count kernel time (root, or
# perf_event_paranoid at most 1): Reads.java reads /dev/zero 8 KiB at a time, and the
# kernel's system-call path (entry, vfs_read, read_zero) stands on top of libc's read,
# libjava's readBytes and the Java frames. With MARTINI_SAMPLING_KERNEL=0, none.
def kernel_chains(directory):
    """(self samples, names innermost first) of each merged node that is the kernel's,
    and the self samples under FileInputStream.readBytes (the kernel's and the rest)."""
    p = json.load(open(os.path.join(directory, "cgprof.json")))
    frames, nodes, out, under_read_bytes = p["frames"], p["merged"]["nodes"], [], 0
    for i, node in enumerate(nodes[1:], 1):
        if node[2] == 0:
            continue
        chain, j = [], i
        while j > 0:
            chain.append(frames[nodes[j][1]]["name"])
            j = nodes[j][0]
        if "java.io.FileInputStream.readBytes" in chain:
            under_read_bytes += node[2]
        if frames[node[1]].get("file") == "[kernel]":
            out.append((node[2], chain))
    return out, under_read_bytes


paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
for name, env in (("reads", {}), ("reads-no-kernel", {"MARTINI_SAMPLING_KERNEL": "0"})):
    d = os.path.join(work, name)
    r = subprocess.run([martini, "run", "--client", "cgprof=sample=1000,top=0,formats=json", "--output", d, "--",
                        "java", "-cp", classes, "Reads", "1000"], capture_output=True, text=True, cwd=work,
                       timeout=300, env={**os.environ, **env})
    chains, total = kernel_chains(d) if r.returncode == 0 else ([], 0)
    if env:
        check("MARTINI_SAMPLING_KERNEL=0: no kernel frames", r.returncode == 0 and not chains, chains[:3])
    elif os.geteuid() != 0 and paranoid > 1:
        print(f"kernel frames not checked: perf_event_paranoid is {paranoid} and this is not root")
    else:
        in_read = [(n, chain) for n, chain in chains if "java.io.FileInputStream.readBytes" in chain]
        syscall = sum(n for n, chain in in_read if "do_syscall_64" in chain)
        read_path = sum(n for n, chain in in_read if any(f in chain for f in ("vfs_read", "ksys_read")))
        check("the kernel's system-call path on top of FileInputStream.readBytes: a fifth of its samples at least, "
              "vfs_read or ksys_read among its frames",
              r.returncode == 0 and syscall >= 50 and syscall * 5 >= total and read_path >= 10 and
              "with kernel frames on top" in r.stderr, (syscall, read_path, total, chains[:3], r.stderr[-600:]))

# A stack deeper than the buffer (Deep.java: 1,500 frames of recursion): each sample
# keeps the innermost frames, and the stacks cut are counted and said.
deep = os.path.join(work, "deep")
r = run([martini, "run", "--client", "cgprof=sample=1000,top=0,formats=json", "--output", deep, "--",
         "java", "-Xss16m", "-cp", classes, "Deep", "1500", "1000"])
cut = re.search(r"(\d+) stacks cut at (\d+) frames", r.stderr)
dp = json.load(open(os.path.join(deep, "cgprof.json"))) if r.returncode == 0 else {"frames": [], "merged": {"nodes": []}}
burn_self = sum(n[2] for n in dp["merged"]["nodes"][1:] if dp["frames"][n[1]]["name"] == "Deep.burn")
check("a stack deeper than the buffer: cut to its innermost frames, the cut stacks counted and said",
      r.returncode == 0 and cut is not None and burn_self >= 100 and int(cut.group(1)) * 10 >= burn_self * 9,
      (cut and cut.group(0), burn_self, r.stderr[-800:]))

# The JVM's own threads: with -Xcomp the C2 compiler thread does most of the work; it is
# sampled, named, and its stacks are libjvm's functions from the thread's start.
jit = os.path.join(work, "jit")
r = run([martini, "run", "--client", "cgprof=sample=1000,top=0,formats=json", "--output", jit, "--",
         "java", "-Xcomp", "-XX:-TieredCompilation", "-cp", classes, "Phases", "100"])
jp = json.load(open(os.path.join(jit, "cgprof.json")))
compiler = [t for t in jp["threads"] if t["name"].startswith("C2 CompilerThre")]
ct = compiler[0] if compiler else {"nodes": []}
c_samples = sum(n[2] for n in ct["nodes"][1:])
c_frames = {jp["frames"][n[1]]["name"]: jp["frames"][n[1]].get("file") for n in ct["nodes"][1:]}
check("the JIT compiler thread is sampled and named", r.returncode == 0 and c_samples >= 200,
      ([t["name"] for t in jp["threads"]], c_samples))
check("its stacks are libjvm's functions, CompileBroker::compiler_thread_loop() among them",
      c_frames.get("CompileBroker::compiler_thread_loop()") == "libjvm.so", sorted(c_frames)[:20])

# A timeline past its budget, and an exact profile: no window.
cut = os.path.join(work, "cut")
r = run([martini, "run", "--client", "cgprof=sample=1000,trace=100,top=0", "--output", cut, "--",
         "java", "-cp", classes, "Phases", "300"])
cp = json.load(open(os.path.join(cut, "cgprof.json")))
check("trace=100: 100 samples kept, the rest counted",
      len(cp.get("timeline", [])) == 100 and cp["counters"].get("timeline_samples_not_kept", 0) > 0, cp["counters"])
r = run([martini, "report", os.path.join(cut, "cgprof.json"), "--from", "0.1"])
check("a window of a cut timeline refused, naming why",
      r.returncode == 1 and "samples past its budget were not kept" in r.stderr, r.stderr)
exact = os.path.join(work, "exact")
r = run([martini, "run", "--client", "cgprof=counts,include=Phases.*,top=0", "--output", exact, "--",
         "java", "-cp", classes, "Phases", "50"])
r = run([martini, "report", os.path.join(exact, "cgprof.json"), "--to", "1s"])
check("a window of an exact profile refused", r.returncode == 1 and "has no timeline" in r.stderr, r.stderr)
r = run([martini, "report", os.path.join(exact, "cgprof.json"), "--lines"])
check("--lines on a profile without lines says so", r.returncode == 0 and "has no lines" in r.stdout, r.stdout)



def self_by_method(profile, thread_prefix=""):
    """Self samples per method name over the threads whose name starts with the prefix."""
    frames, out = profile["frames"], {}
    for t in profile["threads"]:
        if t["name"].startswith(thread_prefix):
            for node in t["nodes"][1:]:
                out[frames[node[1]]["name"]] = out.get(frames[node[1]]["name"], 0) + node[2]
    return out


# Threads that die while sampled: each of 1,500 spends ~3 ms of CPU in churn() and ends.
for name, env, options in (("churn-perf", {}, "sample=1000"),
                           ("churn-timer-wall", {"MARTINI_SAMPLING_CLOCK": "timer"}, "sample=200,wall")):
    d = os.path.join(work, name)
    r = subprocess.run([martini, "run", "--client", f"cgprof={options},top=0,formats=json", "--output", d, "--",
                        "java", "-cp", classes, "Churn", "threads", "1500"], capture_output=True, text=True,
                       cwd=work, timeout=300, env={**os.environ, **env})
    ok = r.returncode == 0 and "churn: done" in r.stdout and os.path.exists(os.path.join(d, "cgprof.json"))
    mine = self_by_method(json.load(open(os.path.join(d, "cgprof.json"))), "churn-") if ok else {}
    total = sum(mine.values())
    check(f"{name}: 1,500 threads dying while sampled: the program ends, churn() has their samples",
          ok and total > 0 and mine.get("Churn.churn", 0) * 10 >= total * 8 and
          (name != "churn-perf" or total >= 1500), (r.returncode, r.stderr[-1500:], total, mine.get("Churn.churn")))

# An attach to a JVM under heavy load: eight threads spinning in burn() and two
# allocating, on two cores. The attach completes, samples at the true rate, detaches,
# and the program runs to its end.
java = subprocess.Popen(["java", "-cp", classes, "Churn", "load", "6000"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, cwd=work)
try:
    time.sleep(1.0)
    loaded = os.path.join(work, "loaded")
    r = run([martini, "attach", str(java.pid), "--client", "cgprof=sample=1000,top=0,formats=json", "--duration",
             "2s", "--output", loaded])
    stdout, _ = java.communicate(timeout=60)
    mine = self_by_method(json.load(open(os.path.join(loaded, "cgprof.json")))) if r.returncode == 0 else {}
    check("attach under heavy load: attached, burn() sampled, detached, the program ended",
          r.returncode == 0 and java.returncode == 0 and "load: done" in stdout and
          mine.get("Churn.burn", 0) >= 1000, (r.returncode, java.returncode, r.stderr[-1500:],
                                               sorted(((v, k) for k, v in mine.items()), reverse=True)[:5]))
finally:
    if java.poll() is None:
        java.kill()
        java.wait()

shutil.rmtree(work, ignore_errors=True)
sys.exit(check.finish())
