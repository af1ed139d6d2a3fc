#!/usr/bin/env python3
"""`martini run --client cgprof -- java ...` on the bundled Java program (the README's
main job): the table, the five files, and counts equal to the program's known calls;
then the errors `martini run` names.

usage: cgprof_java_test.py MARTINI_BUILD_DIR SHOP_CLASSES
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
work = tempfile.mkdtemp(prefix="cgprof-java-")
check = Checks()



def run(args, cwd=work):
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300)


out = os.path.join(work, "out")
r = run([martini, "run", "--client", "cgprof=include=shop.*,top=30,formats=all", "--output", out, "--",
         "java", "-cp", classes, "shop.Shop"])
log = r.stdout + r.stderr
check("exit status 0", r.returncode == 0, log)
check("the program ran", "shop: 120 orders, 16 out of stock" in log, log)
check("top-N table printed", re.search(r"shop\.Shop\$OrderService\.placeOrder\s+120\s", log), log)
files = ["cgprof.json", "cgprof.collapsed", "cgprof.trace.json", "cgprof.pb.gz", "cgprof.html"]
check("martini says where the outputs went", f"outputs in {out}" in log and all(f in log for f in files), log)
check("five files written", all(os.path.getsize(os.path.join(out, f)) > 0 for f in files), os.listdir(out))

profile = json.load(open(os.path.join(out, "cgprof.json")))
frames = [f["name"] for f in profile["frames"]]
calls = {}
for node in profile["merged"]["nodes"][1:]:
    calls[frames[node[1]]] = calls.get(frames[node[1]], 0) + node[2]
known = {"shop.Shop.main": 1, "shop.Shop$OrderService.placeOrder": 120, "shop.Shop$Inventory.reserve": 120,
         "shop.Shop$Warehouse.take": 120, "shop.Shop$PriceCalculator.price": 316,
         "shop.Shop$OutOfStockException.<init>": 16}
for method, count in known.items():
    check(f"{method} called {count} times", calls.get(method) == count, calls.get(method))
check("only included classes", all(f.startswith("shop.") for f in frames), frames)
check("exceptional exits: 16 out-of-stock orders unwind take and reserve",
      profile["counters"]["exception_exits"] == 32, profile["counters"])
names = sorted(t["name"] for t in profile["threads"])
check("threads by name", names == ["main", "worker-0", "worker-1"], names)
check("runtime named", profile["runtime"].startswith("OpenJDK"), profile["runtime"])
# Nesting: take is always called from reserve, reserve from placeOrder.
paths = open(os.path.join(out, "cgprof.collapsed")).read()
check("call paths", "shop.Shop$OrderService.placeOrder;shop.Shop$Inventory.reserve;shop.Shop$Warehouse.take " in paths,
      paths)
go = shutil.which("go")
if go:
    g = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=calls", os.path.join(out, "cgprof.pb.gz")],
                       capture_output=True, text=True, env=dict(os.environ, HOME=work, PPROF_TMPDIR=work))
    check("go tool pprof reads the JVM profile", g.returncode == 0 and re.search(r"316\s.*PriceCalculator\.price", g.stdout),
          g.stdout + g.stderr)
    g = subprocess.run([go, "tool", "pprof", "-raw", os.path.join(out, "cgprof.pb.gz")],
                       capture_output=True, text=True, env=dict(os.environ, HOME=work, PPROF_TMPDIR=work))
    check("pprof: period type of the default metric (wall/nanoseconds in time mode)",
          g.returncode == 0 and re.search(r"PeriodType: wall nanoseconds", g.stdout), g.stdout[:800] + g.stderr)
    check("pprof: functions carry their first line (main's body starts at Shop.java:79)",
          re.search(r"shop\.Shop\.main \S*Shop\.java:79 s=79", g.stdout), g.stdout[-3000:])
    check("pprof: a caller's location is the line of its call (placeOrder is called at Shop.java:88 of the "
          "lambda, which starts at 87)",
          re.search(r"shop\.Shop\.lambda\$main\$0 \S*Shop\.java:88 s=87", g.stdout), g.stdout[-3000:])
# The call sites in the JSON (Node::callLine, "callLines"): reserve is called at line 68 of placeOrder.
merged_nodes = profile["merged"]["nodes"]
call_lines = profile["merged"].get("callLines", [0] * len(merged_nodes))
sites = {(frames[merged_nodes[n[0]][1]] if n[0] > 0 else "", frames[n[1]]): call_lines[i]
         for i, n in enumerate(merged_nodes) if i > 0}
check("JSON: call-site lines (placeOrder calls reserve at Shop.java:68, reserve calls take at 46)",
      sites.get(("shop.Shop$OrderService.placeOrder", "shop.Shop$Inventory.reserve")) == 68
      and sites.get(("shop.Shop$Inventory.reserve", "shop.Shop$Warehouse.take")) == 46, sites)
main_frame = next(f for f in profile["frames"] if f["name"] == "shop.Shop.main")
check("JSON frames carry the method's first line", main_frame.get("line") == 79, main_frame)

# The README's main job exactly: no options, the whole JDK profiled too.
plain = os.path.join(work, "plain")
r = run([martini, "run", "--client", "cgprof", "--output", plain, "--", "java", "-cp", classes, "shop.Shop"])
check("plain `martini run --client cgprof`: table and the default files (JSON and HTML)", r.returncode == 0
      and re.search(r"cgprof: top \d+ of \d+ methods by self wall", r.stderr)
      and sorted(os.listdir(plain)) == ["cgprof.html", "cgprof.json"], r.stderr[-3000:] + str(os.listdir(plain)))
plain_profile = json.load(open(os.path.join(plain, "cgprof.json")))
by_name = {}
for f in plain_profile["frames"]:
    by_name.setdefault(f["name"], set()).add(f.get("signature", ""))
clashes = {n: s for n, s in by_name.items() if len(s) > 1}
check("overloads are told apart (no name shared by two signatures)", not clashes, list(clashes.items())[:5])
check("overloads carry their parameter list", any(re.fullmatch(r"[\w.$]+\([\w,$\[\]]*\)", n) for n in by_name),
      list(by_name)[:50])
# With the whole JDK in the profile, where placeOrder ranks by self time depends on the
# machine's load (the table shows 20 rows): its count is checked in the full report.
full = run([martini, "report", os.path.join(plain, "cgprof.json"), "--top", "100000"])
check("plain run: placeOrder's 120 calls in the profile",
      full.returncode == 0 and re.search(r"shop\.Shop\$OrderService\.placeOrder\s+120\s", full.stdout),
      full.stdout[-3000:] + full.stderr)
shutil.rmtree(plain, ignore_errors=True)

# Counts mode through the same command, default output directory in the cwd.
r = run([martini, "run", "--client", "cgprof=counts,include=shop.*,top=5", "--", "java", "-cp", classes, "shop.Shop"])
p = json.load(open(os.path.join(work, "martini-out", "cgprof.json")))
check("counts mode, default ./martini-out", r.returncode == 0 and p["mode"] == "counts", r.stderr)

# -- errors ------------------------------------------------------------------------------
r = run([martini, "run", "--", "no-such-program"])
check("program not found", r.returncode == 1 and "program not found: 'no-such-program'" in r.stderr, r.stderr)
r = run([martini, "run", "--client", "no-such-client", "--", "java", "-version"])
check("client not found, before the program starts", r.returncode == 1 and "client 'no-such-client' not found" in r.stderr
      and "openjdk" not in r.stderr.lower(), r.stderr)
r = run([martini, "run", "--output", out, "--", "true"])
check("a command that starts no runtime", r.returncode == 1 and "no JVM or Mono runtime started" in r.stderr, r.stderr)
r = run([martini, "run", "--client", "cgprof=bogus", "--output", out, "--", "java", "-cp", classes, "shop.Shop"])
check("a client refusing its options: named before the program starts (no program output)",
      r.returncode == 1 and "client 'cgprof': unknown option 'bogus'" in r.stderr
      and "shop: 120 orders" not in r.stdout + r.stderr, r.stderr)
r = run([martini, "run", "--client", "cgprof=tpo=5", "--output", out, "--", "java", "-cp", classes, "shop.Shop"])
check("a near miss: did you mean", r.returncode == 1 and "(did you mean 'top'?)" in r.stderr
      and "shop: 120 orders" not in r.stdout + r.stderr, r.stderr)
# The agent never started (a library that is no JVMTI agent): said last.
r = subprocess.run([martini, "run", "--output", out, "--", "java", "-version"], capture_output=True, text=True,
                   cwd=work, timeout=300,
                   env=dict(os.environ, MARTINI_JVMTI_AGENT=os.path.join(build, "clients", "cgprof", "libcgprof.so")))
check("an agent that does not start is named last", r.returncode != 0
      and "the JVMTI agent did not start" in r.stderr and "not produced" in r.stderr.strip().split("\n")[-1], r.stderr)
# An output directory that exists but cannot be written: refused before the JVM starts.
ro = os.path.join(work, "read-only")
os.makedirs(ro)
os.chmod(work, 0o755)  # reachable by the unprivileged user the check runs as
os.chmod(ro, 0o555)
r = subprocess.run([martini, "run", "--output", ro, "--", "java", "-cp", classes, "shop.Shop"], capture_output=True,
                   text=True, cwd=work, timeout=300,
                   preexec_fn=(lambda: (os.setgid(65534), os.setuid(65534))) if os.geteuid() == 0 else None)
check("an unwritable output directory: refused before the program starts",
      r.returncode == 1 and f"cannot write to the output directory '{ro}': Permission denied" in r.stderr
      and "shop: 120 orders" not in r.stdout + r.stderr, r.stderr)
r = run([martini, "run", "--output", out, "--", "java", "-cp", classes, "NoSuchMain"])
check("the program's exit status is martini's", r.returncode == 1 and "the program exited with status 1" in r.stderr,
      r.stderr)
r = run([martini, "run"])
check("no program", r.returncode == 1 and "no program given" in r.stderr, r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
