#!/usr/bin/env python3
"""Reliability run: Martini on real JVMs under every way a program can end, bad
clients and configurations, full disks, many threads, and exact counts against a
JVMTI MethodEntry oracle. Each case ends as one of

  passed   the program ran as it does without Martini (output, exit status) and the
           profile asked for is complete, or the failure was said in one clear line
  lost     the program ran, but part of the profile is missing or wrong and nothing said so
  crashed  the JVM died (signal, hs_err file) or hung

and the totals are printed last (docs/reliability.md keeps the latest). Also the test
`reliability-java`; each defect it found has a test of its own too.

usage: python3 bench/reliability.py [BUILD_DIR]     (default: build)
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))
martini = os.path.join(build, "tools", "martini")
agent = os.path.join(build, "providers", "jvmti", "libmartini-jvmti.so")
oracle = os.path.join(build, "providers", "jvmti", "liboracle_agent.so")
shim = os.path.join(build, "tests", "libenospc-shim.so")
crashing = os.path.join(build, "examples", "libcrashing_client.so")
for f in (martini, agent, oracle, shim, crashing):
    if not os.path.exists(f):
        sys.exit(f"reliability: {f} is missing; build first (ninja -C {build})")

work = tempfile.mkdtemp(prefix="martini-reliability-")
TIMEOUT = 180
results = []  # (group, case, outcome, detail)


def compile_java(name, sources):
    out = os.path.join(work, name)
    subprocess.run(["javac", "-nowarn", "-d", out] + sources, check=True, capture_output=True)
    return out


endings = compile_java("endings", [os.path.join(root, "bench", "java", "reliability", "Endings.java")])
many_threads = compile_java("threads", [os.path.join(root, "bench", "java", "ManyThreads.java")])
programs = {  # name: (class directory, main class, class prefix for the oracle, args)
    "sample": (compile_java("sample", [os.path.join(root, "providers/jvmti/tests/java/sample/Sample.java")]),
               "sample.Sample", "sample", []),
    "overflow": (compile_java("overflow", [os.path.join(root, "providers/jvmti/tests/java/overflow/Overflow.java")]),
                 "overflow.Overflow", "overflow", []),
    "shop": (compile_java("shop", [os.path.join(root, "examples/java/shop/Shop.java")]), "shop.Shop", "shop", []),
    "bank": (compile_java("bank", [os.path.join(root, "examples/java/bank/Bank.java")]), "bank.Bank", "bank", []),
    "interactions": (compile_java("interact", glob.glob(os.path.join(root, "providers/jvmti/tests/java/interact/**/*.java"),
                                                          recursive=True)),
                     "interact.Interactions", "interact", []),
    "allocations": (compile_java("alloc", glob.glob(os.path.join(root, "providers/jvmti/tests/java/alloc/**/*.java"), recursive=True)),
                    "alloc.AllocSample", "alloc", []),
    "endings": (endings, "rel.Endings", "rel", ["normal"]),
}


def record(group, case, outcome, detail=""):
    results.append((group, case, outcome, detail))
    print(f"{outcome:8} {group:12} {case}{'  -- ' + detail if detail and outcome != 'passed' else ''}", flush=True)


def run(args, cwd, env=None, timeout=TIMEOUT, **kw):
    e = dict(os.environ, **(env or {}))
    try:
        return subprocess.run(args, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as t:
        return subprocess.CompletedProcess(args, None, t.stdout or "", t.stderr or "")


def case_dir(name):
    d = os.path.join(work, re.sub(r"[^A-Za-z0-9_.-]", "_", name))
    os.makedirs(d, exist_ok=True)
    return d


def died(r, d):
    """Why the JVM died, or ''."""
    if r.returncode is None:
        return "hung (timeout)"
    if glob.glob(os.path.join(d, "hs_err_pid*.log")):
        return "hs_err file"
    if r.returncode < 0:
        return f"killed by signal {-r.returncode}"
    if "the JVM crashed" in (r.stderr or ""):
        return "JVM crashed"
    return ""


def callcount_table(path):
    """callcount's out= file: {method: calls}."""
    counts = {}
    if not os.path.exists(path):
        return None
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[0].isdigit():
            counts[f[2]] = int(f[0])
    return counts


def json_ok(path):
    try:
        json.load(open(path))
        return True
    except (OSError, ValueError):
        return False


# ---- 1. Exact counts against the JVMTI MethodEntry oracle ------------------------------
for name, (classes, main, prefix, args) in programs.items():
    d = case_dir("oracle-" + name)
    r = run(["java", f"-agentpath:{oracle}=L{prefix}/,{d}/oracle.tsv",
             f"-agentpath:{agent}=callcount=top=100000,include={prefix}.,out={d}/cc.txt", "-cp", classes, main] + args, d)
    why = died(r, d)
    if why:
        record("oracle", name, "crashed", why)
        continue
    expected = {}
    for line in open(os.path.join(d, "oracle.tsv")) if os.path.exists(os.path.join(d, "oracle.tsv")) else []:
        m, c = line.rstrip("\n").split("\t")
        if "$$Lambda$" not in m:  # hidden classes reach no bytecode agent (docs/jvm-provider.md)
            expected[m] = int(c)
    got = callcount_table(os.path.join(d, "cc.txt")) or {}
    said = sum(int(n) for n in re.findall(r"(\d+) method calls were not seen", r.stderr))
    missing = sum(expected.values()) - sum(got.get(m, 0) for m in expected)
    wrong = [m for m in expected if got.get(m, 0) > expected[m]] + [m for m in got if m not in expected]
    if not expected:
        record("oracle", name, "lost", "the oracle saw no calls")
    elif wrong:
        record("oracle", name, "lost", f"counts above the oracle's: {wrong[:3]}")
    elif missing != said:
        record("oracle", name, "lost", f"{missing} calls missing, {said} said")
    else:
        record("oracle", name, "passed", f"{sum(expected.values())} calls{f', {said} said lost' if said else ''}")

def until_ready_then(args, sig, d):
    """Starts args in a new session (signals as from a terminal, whatever this script
    inherited), waits for its "ready" line, sends sig; the completed process (None: hung)."""
    p = subprocess.Popen(args, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGHUP)])
    deadline = time.time() + 60
    line = ""
    while time.time() < deadline and "ready" not in line:
        line = p.stdout.readline()
        if not line and p.poll() is not None:
            break
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=60)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return subprocess.CompletedProcess(p.args, None, out, err)


# ---- 2. Every way a program ends, under `martini run` ---------------------------------
CLIENTS = ["--client", "callcount=include=rel.,out=calls.txt", "--client", "cgprof=include=rel.,top=5"]


def plain_status(mode, extra=()):
    r = run(["java", *extra, "-cp", endings, "rel.Endings", mode], work)
    return r.returncode


def check_profile(group, case, r, d, status, want_calls=True):
    why = died(r, d)
    if why and not (status is not None and status > 128 and r.returncode == status):
        record(group, case, "crashed", why)
        return
    if r.returncode != status:
        record(group, case, "lost", f"exit status {r.returncode}, without Martini {status}")
        return
    out = os.path.join(d, "out")
    calls = callcount_table(os.path.join(d, "calls.txt"))  # callcount's out= is relative to the working directory
    problems = []
    if calls is None:
        problems.append("no callcount output")
    elif want_calls and calls.get("rel.Endings.counted(I)J") != 1000:
        problems.append(f"counted(I)J: {calls.get('rel.Endings.counted(I)J')} calls, not 1000")
    if not json_ok(os.path.join(out, "cgprof.json")):
        problems.append("cgprof.json missing or incomplete")
    leftovers = [f for f in os.listdir(out) if f.endswith(".tmp")] if os.path.isdir(out) else []
    if leftovers:
        problems.append(f"temporary files left: {leftovers}")
    if problems:
        said = "not produced" in r.stderr or "was not written" in r.stderr or "could not" in r.stderr
        record(group, case, "passed" if said and r.returncode != 0 else "lost",
               "; ".join(problems) + (" (said)" if said else ""))
    else:
        record(group, case, "passed")


for mode in ["normal", "exit3", "uncaught", "thread-uncaught", "daemons", "halt", "oom", "overflow", "badclass"]:
    d = case_dir("ending-" + mode)
    extra = ["-Xmx64m"] if mode == "oom" else []
    status = plain_status(mode, extra)
    r = run([martini, "run", *CLIENTS, "--output", os.path.join(d, "out"), "--", "java", *extra, "-cp", endings,
             "rel.Endings", mode], d)
    check_profile("ending", mode, r, d, status)

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    d = case_dir("signal-" + sig.name)
    r = until_ready_then([martini, "run", *CLIENTS, "--output", os.path.join(d, "out"), "--", "java", "-cp", endings,
                          "rel.Endings", "wait"], sig, d)
    check_profile("signal", sig.name, r, d, 128 + sig)

# ---- 3. Bad clients, configurations and disks ------------------------------------------
plain_normal = ["-cp", endings, "rel.Endings", "normal"]


def bad_input(case, args, expect_message, expect_status, env=None, program_must_run=True):
    d = case_dir("bad-" + case)
    r = run(args, d, env)
    why = died(r, d)
    if why:
        record("bad input", case, "crashed", why)
    elif not re.search(expect_message, r.stderr):
        record("bad input", case, "lost", f"no message matching /{expect_message}/: {r.stderr.strip()[-200:]}")
    elif r.returncode != expect_status:
        record("bad input", case, "lost", f"exit status {r.returncode}, expected {expect_status}")
    elif program_must_run and "done normal" not in r.stdout:
        record("bad input", case, "lost", "the program did not run to its end")
    else:
        record("bad input", case, "passed")
    return d, r


bad_input("missing client", [martini, "run", "--client", "nosuch", "--", "java", *plain_normal],
          r"client 'nosuch' not found", 1, program_must_run=False)
bad_input("client refuses its options", [martini, "run", "--client", "cgprof=tpo=5", "--", "java", *plain_normal],
          r"tpo", 1, program_must_run=False)
bad_input("agent: missing client", ["java", f"-agentpath:{agent}=nosuch;callcount=out=/dev/null", *plain_normal],
          r"nosuch", 0)
os.makedirs(os.path.join(work, "a-directory"), exist_ok=True)
bad_input("agent: a directory as the config", ["java", f"-agentpath:{agent}=@{work}/a-directory", *plain_normal],
          r"directory", 0)
with open(os.path.join(work, "bad.json"), "w") as f:
    f.write('{"clients": [ {"name": "cgprof", ')
bad_input("agent: malformed JSON config", ["java", f"-agentpath:{agent}=@{work}/bad.json", *plain_normal], r"bad.json", 0)
bad_input("agent: bad option string", ["java", f"-agentpath:{agent}=callcount=top=lots", *plain_normal], r"top", 0)
bad_input("output under a file", [martini, "run", "--output", "/etc/passwd/out", "--", "java", *plain_normal],
          r"/etc/passwd/out", 1, program_must_run=False)
d, r = bad_input("client throws in a handler",
                 ["java", f"-agentpath:{agent}={crashing}=throw,after=10;callcount=include=rel.,out=calls.txt",
                  *plain_normal], r"[1-9]\d* handler and \d+ filter failures contained", 0)
if results[-1][2] == "passed" and (callcount_table(os.path.join(d, "calls.txt")) or {}).get("rel.Endings.counted(I)J") != 1000:
    results[-1] = ("bad input", "client throws in a handler", "lost", "the other client's counts are wrong")
full = os.path.join(work, "full-disk")
os.makedirs(full, exist_ok=True)
d, r = bad_input("full disk", [martini, "run", *CLIENTS, "--output", full, "--", "java", *plain_normal],
                 r"No space left on device", 1, env={"LD_PRELOAD": shim, "ENOSPC_SHIM_MATCH": full,
                                                     "ENOSPC_SHIM_BYTES": "2000"})
if [f for f in os.listdir(full) if f.endswith(".tmp")]:
    results[-1] = ("bad input", "full disk", "lost", "temporary files left")
for how in ("segv", "abort"):
    d = case_dir("crashing-client-" + how)
    opts = "abort" if how == "abort" else "after=100"
    r = run([martini, "run", "--client", f"{crashing}={opts}", "--", "java", *plain_normal], d)
    # In-process clients cannot be isolated from a crash (docs/client-guide.md): counted
    # as crashed; what matters is that the culprit is named (a segfault leaves the JVM's
    # error log to name it from; abort() leaves none, and the exit status says SIGABRT).
    if how == "segv":
        named = "the JVM crashed in the code of client" in r.stderr and "crashing_client" in r.stderr
        record("bad input", f"client crashes ({how})", "crashed", "client named" if named else "client NOT named")
    else:
        said = r.returncode == 128 + signal.SIGABRT
        record("bad input", f"client crashes ({how})", "crashed",
               "exit status 134 (SIGABRT) given" if said else f"exit status {r.returncode}")

# ---- 4. Load ----------------------------------------------------------------------------
for n in (2000, 20000):
    d = case_dir(f"threads-{n}")
    r = run([martini, "run", "--client", "callcount=include=ManyThreads,out=calls.txt", "--client",
             "cgprof=include=ManyThreads,top=0", "--output", os.path.join(d, "out"), "--", "java", "-cp",
             many_threads, "ManyThreads", str(n)], d)
    why = died(r, d)
    calls = callcount_table(os.path.join(d, "calls.txt")) or {}
    if why:
        record("load", f"{n} threads", "crashed", why)
    elif r.returncode != 0 or calls.get("ManyThreads.work(I)J") != n or not json_ok(os.path.join(d, "out", "cgprof.json")):
        record("load", f"{n} threads", "lost", f"exit {r.returncode}, work(I)J {calls.get('ManyThreads.work(I)J')}")
    else:
        record("load", f"{n} threads", "passed")

# Attach and detach 20 times in a row to one JVM beside a CPU hog, then a client that
# fails to load (its attach refused, the JVM untouched), then once more.
attached = compile_java("attached", [os.path.join(root, "tests", "control", "Attached.java")])
failing = os.path.join(build, "martini-core", "tests", "libfailing_client.so")
d = case_dir("attach-20")
stop = os.path.join(d, "stop")
hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
jvm = subprocess.Popen(["java", "-cp", attached, "Attached", stop], cwd=d, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
try:
    ready = jvm.stdout.readline()
    problems = []
    for i in range(20):
        r = run([martini, "attach", str(jvm.pid), "--client", "cgprof=include=Attached.*,formats=json",
                 "--duration", "300ms", "--output", os.path.join(d, f"out{i}")], d)
        if r.returncode != 0 or not json_ok(os.path.join(d, f"out{i}", "cgprof.json")):
            problems.append(f"attach {i + 1}: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    if os.path.exists(failing):
        r = run([martini, "attach", str(jvm.pid), "--client", failing, "--duration", "300ms"], d)
        if r.returncode != 1 or "refused" not in r.stderr:
            problems.append(f"a client that fails to load: exit {r.returncode}: {r.stderr.strip()[-200:]}")
        r = run([martini, "attach", str(jvm.pid), "--client", "cgprof=include=Attached.*,formats=json",
                 "--duration", "300ms", "--output", os.path.join(d, "after")], d)
        if r.returncode != 0:
            problems.append(f"the attach after it: exit {r.returncode}")
    open(stop, "w").close()
    out, err = jvm.communicate(timeout=60)
    if jvm.returncode != 3:
        record("load", "attach and detach 20 times under load", "crashed" if jvm.returncode > 128 else "lost",
               f"the JVM exited with {jvm.returncode}: {err[-300:]}")
    else:
        record("load", "attach and detach 20 times under load", "lost" if problems else "passed", "; ".join(problems))
finally:
    hog.kill()
    if jvm.poll() is None:
        jvm.kill()

# ---- 5. Mono and Lua: every way a program ends, under `martini run` ---------------------
mono_dir = os.path.join(build, "providers", "mono")
lua_host = os.path.join(build, "providers", "interp", "martini-lua")


def calls_in(path, name):
    """The calls of the frames called `name` in a cgprof JSON profile; None when unreadable."""
    try:
        p = json.load(open(path))
    except (OSError, ValueError):
        return None
    frames = [f["name"] for f in p["frames"]]
    k = [m["name"] for m in p["metrics"]].index("calls")
    return sum(n[2 + k] for n in p["merged"]["nodes"][1:] if frames[n[1]] == name)


def check_runtime_case(group, case, r, d, status, method, least):
    """Exit status as without Martini; cgprof.json with at least `least` calls of `method`."""
    if r.returncode is None:
        record(group, case, "crashed", "hung (timeout)")
        return
    if r.returncode != status:
        record(group, case, "crashed" if r.returncode > 128 and status < 128 else "lost",
               f"exit status {r.returncode}, without Martini {status}")
        return
    n = calls_in(os.path.join(d, "out", "cgprof.json"), method)
    if n is None or n < least:
        said = "not produced" in r.stderr
        record(group, case, "passed" if said and r.returncode != 0 else "lost",
               f"{method}: {n} calls, at least {least} wanted" + (" (said)" if said else ""))
    else:
        record(group, case, "passed")


if os.path.exists(os.path.join(mono_dir, "libmono-profiler-martini.so")) and shutil.which("mono"):
    exe = lambda name: os.path.join(mono_dir, name + ".exe")  # noqa: E731
    cases = [("normal", [exe("Counts")], 0, None, 1),
             ("Environment.Exit(3)", [exe("Exit"), "exit"], 3, "Ending.Program.Deep", 4),
             ("unhandled exception", [exe("Exit"), "throw"], 1, "Ending.Program.Deep", 4)]
    for case, program, status, method, least in cases:
        d = case_dir("mono-" + case)
        r = run([martini, "run", "--client", "cgprof=formats=json,top=0", "--output", os.path.join(d, "out"),
                 "--", "mono", *program], d)
        if method is None:  # the normal end: the most called method of the program, whatever it is
            p_ok = json_ok(os.path.join(d, "out", "cgprof.json"))
            record("mono", case, "passed" if r.returncode == status and p_ok else "lost", f"exit {r.returncode}")
        else:
            check_runtime_case("mono", case, r, d, status, method, least)
    # 2,000 short threads: every thread's calls, the profile complete, the peak memory said.
    d = case_dir("mono-threads")
    threads_exe = os.path.join(d, "ManyThreads.exe")
    subprocess.run(["mcs", "-nologo", "-optimize+", "-out:" + threads_exe,
                    os.path.join(root, "bench", "mono", "ManyThreads.cs")], check=True, capture_output=True)
    r = run(["/usr/bin/time", "-f", "maxrss %M", martini, "run", "--client", "callcount=include=ManyThreads,out=calls.txt",
             "--client", "cgprof=include=ManyThreads.*,formats=json,top=0", "--output", os.path.join(d, "out"), "--",
             "mono", threads_exe, "2000"], d)
    calls = callcount_table(os.path.join(d, "calls.txt")) or {}
    work_calls = sum(v for k, v in calls.items() if k.startswith("ManyThreads.Work"))
    rss = re.findall(r"maxrss (\d+)", r.stderr)
    if r.returncode != 0 or work_calls != 2000 or not json_ok(os.path.join(d, "out", "cgprof.json")):
        record("mono", "2000 threads", "lost", f"exit {r.returncode}, Work {work_calls} calls")
    else:
        record("mono", "2000 threads", "passed")
        print(f"         mono 2000 threads: peak {int(rss[-1]) // 1024 if rss else '?'} MB with callcount and cgprof")
    for sig in (signal.SIGTERM, signal.SIGINT):
        d = case_dir("mono-" + sig.name)
        r = until_ready_then([martini, "run", "--client", "cgprof=formats=json,top=0", "--output",
                              os.path.join(d, "out"), "--", "mono", exe("Spin")], sig, d)
        check_runtime_case("mono", sig.name + " to martini run", r, d, 128 + sig, "Spinning.Program.Step", 1000)

if os.path.exists(lua_host):
    scripts = {
        "normal": ("local function work(i) return i * 2 end\nfor i = 1, 100 do work(i) end\n", 0),
        "error()": ("local function work(i) return i * 2 end\nfor i = 1, 100 do work(i) end\nerror('on purpose')\n", 1),
        "os.exit(3) deep": ("local function work(i) return i * 2 end\nfor i = 1, 100 do work(i) end\n"
                            "local function down(n) if n == 0 then os.exit(3) end return down(n - 1) + 0 end\n"
                            "down(5)\n", 3),
        "os.exit(0) deep": ("local function work(i) return i * 2 end\nfor i = 1, 100 do work(i) end\n"
                            "local function down(n) if n == 0 then os.exit(0) end return down(n - 1) + 0 end\n"
                            "down(5)\n", 0),
    }
    for case, (text, status) in scripts.items():
        d = case_dir("lua-" + case)
        path = os.path.join(d, "work.lua")
        with open(path, "w") as f:
            f.write(text)
        r = run([martini, "run", "--client", "cgprof=formats=json,top=0", "--output", os.path.join(d, "out"),
                 "--", "lua", path], d)
        check_runtime_case("lua", case, r, d, status, "work.work", 100)
    for sig in (signal.SIGTERM, signal.SIGINT):
        d = case_dir("lua-" + sig.name)
        path = os.path.join(d, "work.lua")
        with open(path, "w") as f:
            f.write("local function work(i) return i + 1 end\nfor i = 1, 1000 do work(i) end\n"
                    "io.write('ready\\n') io.flush()\nlocal i = 0\nwhile true do i = work(i) end\n")
        r = until_ready_then([martini, "run", "--client", "cgprof=formats=json,top=0", "--output",
                              os.path.join(d, "out"), "--", "lua", path], sig, d)
        check_runtime_case("lua", sig.name + " to martini run", r, d, 128 + sig, "work.work", 1000)

# ---- Totals -------------------------------------------------------------------------------
totals = {k: sum(1 for r in results if r[2] == k) for k in ("passed", "lost", "crashed")}
print(f"\n{len(results)} cases tried: {totals['passed']} passed, {totals['lost']} lost, {totals['crashed']} crashed")
print("(the crashed cases by design: a client that dereferences null or calls abort() in a handler)")
shutil.rmtree(work, ignore_errors=True)
sys.exit(0 if totals["lost"] == 0 and all(r[2] != "crashed" or "client" in r[1] for r in results) else 1)
