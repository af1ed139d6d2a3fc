#!/usr/bin/env python3
"""Coverage on Mono: `martini run --client coverage -- mono Lines.exe` and `mono
--profile=martini:coverage=...`.
Exact line and function counts of tests/coverage/Lines.cs (one statement per line: a
method called 10 times, an if/else, a call that ends by an exception its caller catches,
loops, mscorlib calls the JIT inlines into a covered method, a method the JIT looked at
but never called, a method nothing calls);
mscorlib's methods left out by default; the tracefile read by genhtml, the Cobertura XML
by xmllint; mscorlib's methods refused (with a message, the program running to its end)
while Mono's JIT inlines, covered with -O=-aot,-inline; the counts read when a signal
ends the run (on a thread Mono does not know).

usage: coverage_mono_test.py MARTINI_BUILD_DIR LINES_EXE
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run, tracefile  # noqa: E402

build, lines_exe = (os.path.abspath(a) for a in sys.argv[1:3])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="coverage-mono-test-")
check = Checks()
# `mono --profile=martini:...` finds the module through LD_LIBRARY_PATH, the clients in the build tree.
mono_env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "providers", "mono") + ":" +
                os.environ.get("LD_LIBRARY_PATH", ""))



def lines_cs(path):
    """The record of Lines.cs in the tracefile at `path` (empty when there is none)."""
    empty = {"DA": {}, "FNDA": {}, "SF": ""}
    return tracefile(path).get("Lines.cs", empty) if os.path.exists(path) else empty


# ---- Lines.cs: every count worked out from the program ------------------------------
# Mono counts each sequence point (statement) of a covered method; a line's count is the
# most times any of its sequence points ran. A `for` line has three (initializer,
# condition, increment): the condition runs once more than the body.
EXPECTED = {
    12: 10,  # return x * x;                 Square, called 10 times
    17: 9,   # if (i % 3 == 0)               Classify, called 9 times
    19: 3,   # total += 1;                   i = 0, 3, 6
    23: 6,   # total += 2;                   the others
    29: 4,   # total += i;                   Fail, called 4 times
    30: 4,   # throw ...;
    35: 1,   # return Math.Max(v, 0) + Math.Abs(v);   mscorlib inlined into a covered method
    45: 0,   # return x + 1;                 Rare: looked at to inline, never called
    50: 11,  # for (int i = 0; i < 10; i++)
    52: 10,  # total += Square(i);
    62: 4,   # Fail(i);                      the call is counted although it ends by an exception
    63: 0,   # }                             after the call: never reached
    66: 4,   # total -= 1;                   the catch block
    70: 6,   # while (n < 5)
    72: 5,   # n = n + 1;
    75: 1,   # Console.WriteLine("lines: " + total);
    79: 0,   # Console.WriteLine("waiting"); no argument: never
}
FUNCTIONS = {"Lines.Square(int)int": 10, "Lines.Classify(int)void": 9, "Lines.Fail(int)void": 4,
             "Lines.Clamp(int)int": 1, "Lines.Rare(int)int": 0, "Lines.Main(string[])void": 1}

out = os.path.join(work, "run")
r = run([martini, "run", "--client", "coverage", "--output", out, "--", "mono", lines_exe], cwd=work, timeout=120)
log = r.stdout + r.stderr
check("martini run: the program ran to its end", r.returncode == 0 and "lines: 305" in r.stdout, log)
info = os.path.join(out, "coverage.info")
rec = lines_cs(info)
got = {n: rec["DA"].get(n) for n in EXPECTED}
check("Lines.cs: each chosen line's count", got == EXPECTED, f"got {got}\nexpected {EXPECTED}")
check("Lines.cs: the calls of each method (FNDA)", rec["FNDA"] == FUNCTIONS, rec["FNDA"])
check("Lines.cs: a method nothing calls is not in the report (Never, line 40)",
      40 not in rec["DA"] and not any("Never" in name for name in rec["FNDA"]), rec)
check("Lines.cs: named by the absolute path in its debug info",
      os.path.isabs(rec["SF"]) and os.path.basename(rec["SF"]) == "Lines.cs", rec["SF"])
files = tracefile(info) if os.path.exists(info) else {}
check("mscorlib's methods are not covered by default: Lines.cs is the only file", list(files) == ["Lines.cs"],
      list(files))
check("no refusal message when no client wanted mscorlib", "mscorlib" not in r.stderr, r.stderr)
check("the summary line", "coverage: 1 files, lines " in r.stderr, r.stderr)

if shutil.which("genhtml"):
    g = run(["genhtml", "-q", "-o", os.path.join(work, "genhtml"), info])
    check("genhtml reads the tracefile", g.returncode == 0 and
          os.path.exists(os.path.join(work, "genhtml", "index.html")), g.stdout + g.stderr)
else:
    print("note: genhtml not installed (scripts/install-deps.sh --test): not checked")
if shutil.which("xmllint"):
    x = run(["xmllint", "--noout", os.path.join(out, "coverage.xml")])
    check("xmllint: the Cobertura XML is well-formed", x.returncode == 0, x.stderr)
else:
    print("note: xmllint not installed (scripts/install-deps.sh --test): not checked")

# ---- mscorlib: refused while the JIT inlines, covered without inlining -----------------
# Mono 6.8's JIT corrupts its heap compiling covered mscorlib methods that inline others
# (docs/mono-provider.md#coverage): the module leaves them out and says so.
inl = os.path.join(work, "inlining.info")
r = run(["mono", "--debug", "-O=-aot", f"--profile=martini:coverage=all,out={inl}", lines_exe],
        env=mono_env, cwd=work, timeout=120)
check("inlining on, coverage=all: the program runs to its end", r.returncode == 0 and "lines: 305" in r.stdout,
      r.stdout + r.stderr)
check("inlining on: the module says mscorlib's methods are not covered, and why",
      "martini: mscorlib's methods are not covered (" in r.stderr and "-O=-aot,-inline" in r.stderr, r.stderr)
check("inlining on: Lines.cs counted as before", lines_cs(inl)["DA"].get(12) == 10, lines_cs(inl))
check("inlining on: no mscorlib method in the report", os.path.exists(inl) and list(tracefile(inl)) == ["Lines.cs"],
      os.path.exists(inl) and list(tracefile(inl)))

noinl = os.path.join(work, "no-inlining.info")
r = run(["mono", "--debug", "-O=-aot,-inline", f"--profile=martini:coverage=all,out={noinl}", lines_exe],
        env=mono_env, cwd=work, timeout=120)
check("inlining off, coverage=all: the program runs to its end", r.returncode == 0 and "lines: 305" in r.stdout,
      r.stdout + r.stderr)
check("inlining off: mscorlib's methods are covered (no symbols: by block only)",
      "mscorlib" not in r.stderr and " methods have no line table" in r.stderr and
      os.path.exists(noinl) and "(no source) System.Console" in tracefile(noinl), r.stderr)
check("inlining off: Lines.cs counted as before", lines_cs(noinl)["DA"].get(12) == 10, lines_cs(noinl))

# ---- the end on a signal: the counts read on Martini's own thread ---------------------
sig_out = os.path.join(work, "signal")
p = subprocess.Popen([martini, "run", "--client", "coverage", "--output", sig_out, "--", "mono", lines_exe, "wait"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
first = p.stdout.readline() + p.stdout.readline()
p.send_signal(signal.SIGTERM)
try:
    rest, err = rest_of(p, timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    rest, err = rest_of(p, timeout=10)
rec = lines_cs(os.path.join(sig_out, "coverage.info"))
check("SIGTERM: the program was waiting after its work", first == "lines: 305\nwaiting\n", first + rest + err)
check("SIGTERM: the tracefile written with the counts so far (Square 10, `waiting` printed once)",
      rec["DA"].get(12) == 10 and rec["DA"].get(79) == 1, f"{rec}\n{err}")

if check.failed == 0:
    shutil.rmtree(work, ignore_errors=True)
check.finish()
