#!/usr/bin/env python3
"""`martini run -- ANY COMMAND`: what users launch (ant, mvn, a project's run.sh) starts
its JVMs and Mono runtimes itself. Each of them is profiled (JAVA_TOOL_OPTIONS,
MONO_ENV_OPTIONS), each process writes to DIR/<its pid>, and all the outputs are listed
at the end; a command that starts no runtime is said to have done so, exit 1.

usage: launchers_test.py MARTINI_BUILD_DIR SHOP_CLASSES BANK_EXE|''
"""
import glob
import json
import os
import shutil
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, run  # noqa: E402

build, classes = (os.path.abspath(a) for a in sys.argv[1:3])
bank = sys.argv[3] if len(sys.argv) > 3 else ""
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="launchers-test-")
check = Checks()


def script(name, body):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def calls(path, method):
    with open(path) as f:
        p = json.load(f)
    frames = [fr["name"] for fr in p["frames"]]
    k = [m["name"] for m in p["metrics"]].index("calls")
    return sum(n[2 + k] for n in p["merged"]["nodes"][1:] if frames[n[1]] == method)


client = "cgprof=include=shop.*,formats=json"
place = "shop.Shop$OrderService.placeOrder"

# A project's launcher: its own JVM options, then exec java.
launcher = script("run.sh", 'JAVA_OPTS="-Xss2m -Dshop.mode=test"\nexec java $JAVA_OPTS -cp "$1" shop.Shop\n')
out = os.path.join(work, "one")
r = run([martini, "run", "--client", client, "--output", out, "--", launcher, classes], expect=None)
profiles = glob.glob(os.path.join(out, "*", "cgprof.json"))
check("launcher script: exit 0", r.returncode == 0, r.stderr)
check("launcher script: the program's output", "shop: 120 orders" in r.stdout + r.stderr, r.stdout + r.stderr)
check("launcher script: one profile, in DIR/PID", len(profiles) == 1, f"{profiles}\n{r.stderr}")
if profiles:
    check("launcher script: its calls", calls(profiles[0], place) == 120, profiles[0])
    pid = os.path.basename(os.path.dirname(profiles[0]))
    check("launcher script: listed at the end", f"{pid}/cgprof.json" in r.stderr.split("outputs in")[-1], r.stderr)

# A script that starts two JVMs, one after the other: two profiles.
two = script("two.sh", 'java -cp "$1" shop.Shop >/dev/null\njava -Xmx256m -cp "$1" shop.Shop\n')
out = os.path.join(work, "two")
r = run([martini, "run", "--client", client, "--output", out, "--", two, classes], expect=None)
profiles = sorted(glob.glob(os.path.join(out, "*", "cgprof.json")))
check("two JVMs: exit 0", r.returncode == 0, r.stderr)
check("two JVMs: two profiles", len(profiles) == 2, f"{profiles}\n{r.stderr}")
check("two JVMs: each with all its calls", [calls(p, place) for p in profiles] == [120, 120], profiles)
check("two JVMs: both listed", all(os.path.relpath(p, out) in r.stderr for p in profiles), r.stderr)

# A command that starts no runtime: said, and exit 1 (the profile asked for was not made).
for command in (["true"], ["sh", "-c", "echo hello"]):
    r = run([martini, "run", "--client", client, "--output", os.path.join(work, "none"), "--"] + command,
            expect=None)
    check(f"{command[0]}: no runtime started, said", r.returncode == 1 and
          "no JVM or Mono runtime started under the command" in r.stderr, f"exit {r.returncode}\n{r.stderr}")

# A script that runs a Mono program.
if bank:
    mono_script = script("bank.sh", f'exec mono "{bank}"\n')
    out = os.path.join(work, "mono")
    r = run([martini, "run", "--client", "cgprof=include=Bank.*,formats=json", "--output", out, "--", mono_script],
            expect=None)
    profiles = glob.glob(os.path.join(out, "*", "cgprof.json"))
    check("Mono launcher: exit 0 and one profile in DIR/PID", r.returncode == 0 and len(profiles) == 1,
          f"{profiles}\n{r.stderr}")

shutil.rmtree(work, ignore_errors=True)
check.finish()
