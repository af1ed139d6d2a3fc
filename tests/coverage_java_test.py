#!/usr/bin/env python3
"""Coverage on the JVM: `martini run --client coverage -- java ...`.
Exact line, function and branch counts on programs with one statement per line
(tests/coverage/Lines.java, Plain.java): a line whose call ends by an exception is
counted; 8 threads running the same lines give exact totals; a class unloaded before
the end keeps its counts; class files of versions
48 (no stack maps), 51, 52, 55 and 61 and a class compiled without debug information
(counted by block, said); the JDK's own code covered on request verifies and runs; the
tracefile is read by genhtml, the Cobertura XML by xmllint; callcount=counters gives
the calls from the same counters; `martini attach` covers a running JVM and restores
its classes at detach, with a sample point in between; tracefiles of several processes
(`--output 'DIR/%p'`) merge.

usage: coverage_java_test.py MARTINI_BUILD_DIR SOURCE_ROOT JAVAC
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run, tracefile  # noqa: E402

build, source, javac = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="coverage-java-")
check = Checks()
shutil.copy(os.path.join(source, "tests", "coverage", "Lines.java"), work)
shutil.copy(os.path.join(source, "tests", "coverage", "Plain.java"), work)


def cover(name, classpath, main, options="", expect=0):
    out = os.path.join(work, name)
    client = "coverage" + ("=" + options if options else "")
    r = run([martini, "run", "--client", client, "--output", out, "--", "java", "-cp", classpath, main],
            expect=expect, cwd=work, timeout=300)
    return r, out


# Lines: one statement per line.
run([javac, "-g", "-d", os.path.join(work, "lines"), os.path.join(work, "Lines.java")])
r, out = cover("lines", "lines", "Lines")
check("Lines runs under coverage", r.returncode == 0 and "385 4" in r.stdout, r.stdout + r.stderr)
lines = tracefile(os.path.join(out, "coverage.info")).get("Lines.java", {"DA": {}, "FNDA": {}, "BRDA": {}})
expected = {3: 800010,  # square: 10 calls from main, 8 threads x 100000
            7: 5, 8: 3, 10: 2,  # check: the throw line 3 times, the return twice
            14: 451, 15: 1, 17: 450,  # recurse: line 17's call always ends by an exception: counted
            21: 1, 22: 11, 23: 10, 25: 1, 26: 6, 28: 5, 29: 3, 30: 3, 34: 1, 35: 1, 36: 1,
            41: 800008, 42: 800000, 50: 1}
for n, count in expected.items():
    check(f"Lines.java:{n} entered {count} times", lines["DA"].get(n) == count, (n, lines["DA"].get(n)))
check("the constructor never ran: its line 0", lines["DA"].get(1) == 0, lines["DA"])
check("calls per method, from the entry counters",
      lines["FNDA"].get("Lines.square(I)I") == 800010 and lines["FNDA"].get("Lines.recurse(I)I") == 451 and
      lines["FNDA"].get("Lines.lambda$main$0()V") == 8, lines["FNDA"])
check("check's if: 3 times into the throw, twice past it",
      sorted(v for (ln, _, _), v in lines["BRDA"].items() if ln == 7) == [2, 3], lines["BRDA"])
check("only the program's own classes by default", list(tracefile(os.path.join(out, "coverage.info"))) ==
      ["Lines.java"], r.stderr)
check("the summary names the file", re.search(r"coverage: 1 files, lines \d+/\d+", r.stderr), r.stderr)
if shutil.which("genhtml"):
    g = run(["genhtml", "-q", "-o", os.path.join(work, "genhtml"), os.path.join(out, "coverage.info")], cwd=work)
    check("genhtml reads the tracefile", g.returncode == 0, g.stderr)
if shutil.which("xmllint"):
    x = run(["xmllint", "--noout", os.path.join(out, "coverage.xml")])
    check("the Cobertura XML is well-formed", x.returncode == 0, x.stderr)
html = open(os.path.join(out, "coverage.html")).read()
check("the HTML shows the source with its counts", "800010" in html and "recurse(n - 1)" in html, html[:300])

# Branch outcomes, counted or had from the block only one outcome enters: if/else
# chains, && and the conditional operator, loops, a loop at offset 0 (whose jump back
# makes the method's entries a counter of their own), and switches (cases sharing a
# target, the default shared with a break, cases falling through). Expected from the
# program.
shutil.copy(os.path.join(source, "tests", "coverage", "Branches.java"), work)
run([javac, "-g", "-d", os.path.join(work, "branches"), os.path.join(work, "Branches.java")])
r, out = cover("branches", "branches", "Branches", "formats=lcov")
br = tracefile(os.path.join(out, "coverage.info")).get("Branches.java", {"DA": {}, "FNDA": {}, "BRDA": {}})
outcomes = {}  # line -> [not taken, taken] per branch, in code order, as javac compiles them
def outcome(line, k, jumped):
    pairs = outcomes.setdefault(line, [])
    while len(pairs) <= k:
        pairs.append([0, 0])
    pairs[k][1 if jumped else 0] += 1
spins = 0
switches = {}  # line -> target -> the i that went there
for i in range(30):
    outcome(8, 0, i % 3 != 0)  # ifne: jumps when not 0
    if i % 3 != 0:
        outcome(10, 0, i % 3 != 1)
    n = i % 4
    while True:  # ifle: jumps out when n <= 0
        outcome(3, 0, n <= 0)
        if n <= 0:
            break
        n -= 1
        spins += 1
    a, b = i % 5 - 2, i % 7 - 3
    outcome(15, 0, a <= 0)
    if a > 0:
        outcome(15, 1, b <= 0)
    if not (a > 0 and b > 0):
        outcome(17, 0, a <= b)  # if_icmple
    outcome(21, 0, False)
    switches.setdefault(26, {}).setdefault({0: 0, 1: 1, 2: 1, 3: 3}.get(i % 5, 4), []).append(i)
    switches.setdefault(37, {}).setdefault(i % 4 if i % 4 in (0, 2) else "default", []).append(i)
outcome(21, 0, True)
for line, pairs in sorted(outcomes.items()):
    want = sorted(v for pair in pairs for v in pair)
    got = sorted(v for (ln, _, _), v in br["BRDA"].items() if ln == line)
    check(f"Branches.java:{line}: branch outcomes {want}", got == want, (got, br["BRDA"]))
for line, targets in switches.items():
    want = sorted(len(v) for v in targets.values())
    got = sorted(v for (ln, _, _), v in br["BRDA"].items() if ln == line)
    check(f"Branches.java:{line}: switch outcomes {want}, one per target", got == want, (got, br["BRDA"]))
check("a switch whose cases fall through into each other is not counted",
      not any(ln == 45 for (ln, _, _) in br["BRDA"]), br["BRDA"])
check("the loop at offset 0: entries and lines exact",
      br["FNDA"].get("Branches.spin(I)I") == 30 and br["DA"].get(3) == 30 + spins and br["DA"].get(4) == spins and
      br["DA"].get(5) == 30, (br["FNDA"], br["DA"]))
check("entries had from the first block", br["FNDA"].get("Branches.pick(I)I") == 30 and
      br["FNDA"].get("Branches.both(II)I") == 30 and br["DA"].get(9) == 10 and br["DA"].get(12) == 10, br)

# Lines inside straight code take the count of the line before minus the exceptions that
# left it (Throws.java: steps' calls to fail() throw on some runs; no handler in steps).
shutil.copy(os.path.join(source, "tests", "coverage", "Throws.java"), work)
run([javac, "-g", "-d", os.path.join(work, "throws"), os.path.join(work, "Throws.java")])
r, out = cover("throws", "throws", "Throws", "formats=lcov")
th = tracefile(os.path.join(out, "coverage.info")).get("Throws.java", {"DA": {}, "FNDA": {}})
want = {10: 0, 11: 0, 12: 0, 13: 0, 14: 0}
for i in range(30):
    a = i + 1
    want[10] += 1
    want[11] += 1
    if a % 3 == 0:
        continue
    want[12] += 1
    want[13] += 1
    if (2 * a + 1) % 3 == 0:
        continue
    want[14] += 1
check("Throws runs under coverage", r.returncode == 0, r.stdout + r.stderr)
check(f"a line after one whose call threw: exact counts {want}",
      {n: th["DA"].get(n) for n in want} == want and th["FNDA"].get("Throws.steps(I)I") == 30, th)

# A class that is unloaded before the end: its counts are kept (Unload.java loads Gone
# through a loader of its own, runs it, drops the loader and collects).
shutil.copy(os.path.join(source, "tests", "coverage", "Gone.java"), work)
shutil.copy(os.path.join(source, "tests", "coverage", "Unload.java"), work)
run([javac, "-g", "-d", os.path.join(work, "gone"), os.path.join(work, "Gone.java")])
run([javac, "-g", "-d", os.path.join(work, "unload"), os.path.join(work, "Unload.java")])
un_out = os.path.join(work, "unloaded")
r = run([martini, "run", "--client", "coverage=include=Gone,formats=lcov", "--output", un_out, "--", "java",
         "-Xlog:class+unload=info", "-cp", "unload", "Unload", os.path.join(work, "gone")], cwd=work, timeout=300)
check("Gone was unloaded before the end", "unloading class Gone" in r.stdout and "loader collected" in r.stdout,
      r.stdout + r.stderr)
gone = tracefile(os.path.join(un_out, "coverage.info")).get("Gone.java", {"DA": {}})
check("an unloaded class's counts are kept: its loop line entered 7 times, its test 8",
      gone["DA"].get(5) == 7 and gone["DA"].get(4) == 8 and gone["DA"].get(7) == 1, gone["DA"])

# callcount from the same counters.
r = run([martini, "run", "--client", "callcount=counters,include=Lines", "--", "java", "-cp", "lines", "Lines"],
        cwd=work, timeout=300)
check("callcount=counters: exact calls", re.search(r"^\s+800010\s+-\s+Lines\.square\(I\)I$", r.stderr, re.M) and
      re.search(r"^\s+451\s+-\s+Lines\.recurse\(I\)I$", r.stderr, re.M), r.stderr)
r = run([martini, "run", "--client", "callcount=counters,time", "--", "java", "-cp", "lines", "Lines"], expect=1,
        cwd=work, timeout=300)
check("callcount=counters,time refused before the run", "exclude each other" in r.stderr, r.stderr)

# callcount=counters beside the coverage client: the methods coverage wants get their
# blocks counted (its line counts exact), the calls come from the same counters; a
# method only callcount wants gets one counter, its calls (DR_COVERAGE_CALLS).
both = os.path.join(work, "both")
r = run([martini, "run", "--client", "callcount=counters", "--client", "coverage=formats=lcov", "--output", both,
         "--", "java", "-cp", "lines", "Lines"], cwd=work, timeout=300)
both_lines = tracefile(os.path.join(both, "coverage.info")).get("Lines.java", {"DA": {}})["DA"]
check("callcount=counters beside coverage: both exact",
      re.search(r"^\s+800010\s+-\s+Lines\.square\(I\)I$", r.stderr, re.M) and
      all(both_lines.get(n) == count for n, count in expected.items()), (r.stderr[-1500:], both_lines))

# Every class-file version the JDK runs, and a class without debug information.
plain = os.path.join(work, "Plain.java")
for release in ("7", "8", "11", "17"):
    run([javac, "-nowarn", "--release", release, "-d", os.path.join(work, "r" + release), plain])
shutil.copytree(os.path.join(work, "r8"), os.path.join(work, "r48"))
with open(os.path.join(work, "r48", "Plain.class"), "r+b") as f:
    f.seek(6)
    f.write(b"\x00\x30")  # version 48: verified by type inference, no StackMapTable
for release in ("48", "7", "8", "11", "17"):
    r, out = cover("v" + release, "r" + release, "Plain", "formats=lcov")
    got = tracefile(os.path.join(out, "coverage.info")).get("Plain.java", {"DA": {}})["DA"]
    want = {5: 30, 7: 10, 9: 10, 11: 10, 17: 30, 18: 8, 20: 22, 22: 8}
    check(f"class file of release {release}: runs and counts exactly",
          "sum 615" in r.stdout and all(got.get(k) == v for k, v in want.items()), (r.stderr, got))
run([javac, "-g:none", "-d", os.path.join(work, "nog"), plain])
r, out = cover("nog", "nog", "Plain")
check("without line tables: counted by block, and said", "sum 615" in r.stdout and
      "4 of 4 methods have no line table" in r.stderr and
      "no line table" in open(os.path.join(out, "coverage.html")).read(), r.stderr)

# The JDK's own code, asked for: rewritten, verified and run (java.util, String).
r, out = cover("jdk", "lines", "Lines", "include=java.util.,include=java.lang.String,include=Lines,formats=lcov")
jdk = tracefile(os.path.join(out, "coverage.info"))
check("JDK classes covered on request run as before", r.returncode == 0 and "385 4" in r.stdout and
      "VerifyError" not in r.stderr and "ArrayList.java" in jdk and "String.java" in jdk, r.stderr[-2000:])

# A program run as a module (`java -m`): its module graph has only what it needs
# (jdk.compiler), and the counters still work.
hello = os.path.join(work, "Hello.java")
open(hello, "w").write("class Hello { public static void main(String[] a) { System.out.println(1); } }\n")
r = run([martini, "run", "--client", "coverage=include=com.sun.tools.javac.main.,formats=lcov", "--output",
         os.path.join(work, "javac-cov"), "--", "java", "-m", "jdk.compiler/com.sun.tools.javac.Main", "-d",
         os.path.join(work, "hello"), hello], cwd=work, timeout=300)
javac_cov = tracefile(os.path.join(work, "javac-cov", "coverage.info"))
check("javac run as a module: its classes covered", r.returncode == 0 and
      javac_cov.get("JavaCompiler.java", {"FNDA": {}})["FNDA"].get(
          "com.sun.tools.javac.main.JavaCompiler.compile(Ljava/util/Collection;Ljava/util/Collection;"
          "Ljava/lang/Iterable;Ljava/util/Collection;)V") == 1, (r.stderr[-1500:], list(javac_cov)))

# Methods the rewriter cannot give counters (two would pass 64 KiB with an add of 9
# bytes per line, one a conditional branch's reach): left alone and named, never a
# verifier error; the rest covered.
large = os.path.join(work, "LargeMethods.java")
run(["bash", os.path.join(source, "providers", "jvmti", "tests", "java", "gen_large_methods.sh"), large])
run([javac, "-d", os.path.join(work, "large"), large])
r, out = cover("large", "large", "large.LargeMethods", "include=large.,formats=lcov")
check("methods too large for counters: named, the program verified and ran",
      r.returncode == 0 and r.stdout.startswith("large done") and "VerifyError" not in r.stderr and
      re.search(r"3 methods without coverage probes .*tooBig\(II\)I: the instrumented code would exceed", r.stderr),
      r.stderr)

# Several processes, then merged.
for k in range(2):
    run([martini, "run", "--client", "coverage=formats=lcov", "--output", os.path.join(work, "many", "%p"), "--",
         "java", "-cp", "r17", "Plain"], cwd=work, timeout=300)
parts = [os.path.join(d, "coverage.info") for d in (os.path.join(work, "many", p)
                                                    for p in sorted(os.listdir(os.path.join(work, "many"))))]
m = run([martini, "coverage", "merge", "-o", os.path.join(work, "merged.info")] + parts, cwd=work)
merged = tracefile(os.path.join(work, "merged.info")).get("Plain.java", {"DA": {}})["DA"]
check("two processes merged: counts added", len(parts) == 2 and merged.get(17) == 60 and merged.get(18) == 16,
      (parts, merged, m.stderr))

# Attach: cover a running JVM, a sample point, detach restores the class.
attached = os.path.join(work, "attached")
run([javac, "-d", attached, os.path.join(source, "tests", "control", "Attached.java")])
stop = os.path.join(work, "stop")
digests = os.path.join(work, "digests")
proc = subprocess.Popen(["java", "-cp", attached, "Attached", stop], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True, env=dict(os.environ, MARTINI_BYTECODE_DIGESTS=digests + ":Attached"))
pid = proc.stdout.readline().split()[1]
try:
    out = os.path.join(work, "attach-out")
    attacher = subprocess.Popen([martini, "attach", pid, "--client", "coverage=formats=lcov", "--output", out,
                                 "--duration", "3s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    s = run([martini, "control", pid, "sample", "mid"], timeout=60)
    _, err = attacher.communicate(timeout=120)
    check("attached: detached, the class restored", attacher.returncode == 0 and
          "1 classes restored to their original bytes" in err, err)
    check("a sample point while attached", s.returncode == 0, s.stderr)
finally:
    open(stop, "w").close()
    pout, perr = rest_of(proc, 60)
check("the program ran on as without Martini", proc.returncode == 3 and "sum " in pout, perr)
final = tracefile(os.path.join(out, "coverage.info")).get("Attached.java", {"DA": {}})["DA"]
mid = tracefile(os.path.join(out, "coverage-mid.info")).get("Attached.java", {"DA": {}})["DA"] \
    if os.path.exists(os.path.join(out, "coverage-mid.info")) else {}
check("attached: work()'s loop counted, the sample point before the end",
      0 < mid.get(11, 0) <= final.get(11, 0), (mid, final))
phases = {}
for line in open(digests):
    phase, method, digest = line.split()
    phases.setdefault(phase, set()).add((method, digest))
check("restored bytecodes equal the original ones", phases.get("before") == phases.get("restored") and
      phases.get("probed") != phases.get("before"), phases)

shutil.rmtree(work, ignore_errors=True)
check.finish()
