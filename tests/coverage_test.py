#!/usr/bin/env python3
"""Coverage on Lua: `martini-lua --client coverage` and `martini run --client coverage --
lua ...`, and `martini coverage merge`.
Exact line and function counts of tests/coverage/lines.lua (one statement per line; a
line whose call ends by an error is counted); every line of tests/coverage/shapes.lua
(coroutines, tail calls, callbacks from C, errors, several functions on one line)
counted as Lua's own line hook counts it, with and without call events; the hooks
martini-lua sets for coverage alone; the tracefile read by genhtml, the Cobertura XML by
xmllint, the HTML's colours; a sample point through `martini control`; merge adding two
runs and refusing what cannot be merged; bad options refused before the program runs.

usage: coverage_test.py MARTINI_LUA SOURCE_ROOT MARTINI
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run, tracefile  # noqa: E402

martini_lua, source, martini = (os.path.abspath(a) for a in sys.argv[1:4])
scripts = os.path.join(source, "tests", "coverage")
lines_lua = os.path.join(scripts, "lines.lua")
work = tempfile.mkdtemp(prefix="coverage-test-")
check = Checks()



def of(path, name):
    """The record of file `name` in the tracefile at `path` (empty when there is none)."""
    empty = {"DA": {}, "FN": {}, "FNDA": {}}
    return tracefile(path).get(name, empty) if os.path.exists(path) else empty


# ---- lines.lua: every count worked out from Lua 5.4's line hook --------------------
# The hook runs when a function starts, when the line changes and when a jump goes
# back; a `for` line is entered once and again by each iteration's loop instruction.
# `local function f ... end` makes the closure on its `end` line (the main chunk's line
# 3 and 9), where the function's own final return, never reached, adds 0.
LINES_DA = {2: 10,   # square's return: 10 calls
            3: 1,    # the main chunk's closure of square
            5: 5,    # check's if: 5 calls
            6: 3,    # error(...): a line whose call ends by an error is counted
            8: 2,    # return n: the 2 calls that did not fail
            9: 1, 10: 1,
            11: 11,  # for i = 1, 10: once, then once per iteration
            12: 10, 14: 1,
            15: 6, 16: 5, 17: 5,
            18: 3,   # the 3 failures
            21: 1}
LINES_FNDA = {"lines.square": 10, "lines.check": 5, "lines.(main chunk)": 1}
LINES_FN = {"lines.square": 2, "lines.check": 5, "lines.(main chunk)": 3}  # each one's first line of code

out = os.path.join(work, "lines")
r = run([martini_lua, "--client", "coverage", "--output", out, lines_lua])
log = r.stdout + r.stderr
check("lines.lua runs under coverage", r.returncode == 0 and r.stdout == "385\t3\n", log)
info = os.path.join(out, "coverage.info")
lines = of(info, "lines.lua")
check("the source file is named by its absolute path", lines.get("SF") == lines_lua, lines.get("SF"))
for n, count in LINES_DA.items():
    check(f"lines.lua:{n} counted {count} times", lines["DA"].get(n) == count, (n, lines["DA"].get(n)))
check("no other line has code", sorted(lines["DA"]) == sorted(LINES_DA), lines["DA"])
check("calls per function (FNDA)", lines["FNDA"] == LINES_FNDA, lines["FNDA"])
check("functions start at their first line of code (FN)", lines["FN"] == LINES_FN, lines["FN"])
check("totals: LF 15, LH 15, FNF 3, FNH 3",
      (lines.get("LF"), lines.get("LH"), lines.get("FNF"), lines.get("FNH")) == (15, 15, 3, 3), lines)
check("the summary is printed", "coverage: 1 files, lines 15/15 (100.0%), functions 3/3 (100.0%), branches 0/0 (-)"
      in r.stderr and re.search(r"100\.0%\s+15/15\s+3/3\s+0/0\s+" + re.escape(lines_lua), r.stderr), r.stderr)
check("the three files are said to be written",
      all(f"coverage: wrote {os.path.join(out, 'coverage.' + e)}" in r.stderr for e in ("info", "xml", "html")),
      r.stderr)

if shutil.which("genhtml"):
    g = run(["genhtml", "-q", "-o", os.path.join(work, "genhtml"), info])
    check("genhtml reads the tracefile", g.returncode == 0 and
          os.path.exists(os.path.join(work, "genhtml", "index.html")), g.stdout + g.stderr)
else:
    print("note: genhtml not installed (scripts/install-deps.sh --test): not checked")
cobertura = os.path.join(out, "coverage.xml")
if shutil.which("xmllint"):
    x = run(["xmllint", "--noout", cobertura])
    check("xmllint: the Cobertura XML is well-formed", x.returncode == 0, x.stderr)
else:
    print("note: xmllint not installed (scripts/install-deps.sh --test): not checked")
root = ElementTree.parse(cobertura).getroot()
hits = {int(e.get("number")): int(e.get("hits")) for c in root.iter("class") for e in c.find("lines")}
check("the Cobertura XML has the tracefile's counts", hits == LINES_DA and root.get("lines-valid") == "15" and
      root.get("line-rate") == "1.0000", (hits, root.attrib))
html = open(os.path.join(out, "coverage.html")).read()
check("the HTML lists the file", f'<a href="#f0">{lines_lua}</a>' in html, html[:2000])
check("the HTML shows each line with its count, coloured",
      '<tr class="hit"><td class="n">2</td><td class="c">10</td><td>  return x * x</td></tr>' in html and
      '<tr><td class="n">1</td><td class="c"></td><td>local function square(x)</td></tr>' in html, html[-3000:])

# A line that never ran: coloured as missed, and counted in the totals.
partial = os.path.join(work, "partial.lua")
with open(partial, "w") as f:
    f.write("local x = 0\nif x > 1 then\n  x = 2\nend\nprint(x)\n")
pout = os.path.join(work, "partial")
r = run([martini_lua, "--client", "coverage=top=0", "--output", pout, partial])
got = of(os.path.join(pout, "coverage.info"), "partial.lua")["DA"]
check("a line that never ran is counted 0", got == {1: 1, 2: 1, 3: 0, 5: 1}, got)
check("top=0: the summary line alone", "lines 3/4 (75.0%)" in r.stderr and "hit/all" not in r.stderr, r.stderr)
html = open(os.path.join(pout, "coverage.html")).read()
check("the HTML colours it as missed", '<tr class="miss"><td class="n">3</td><td class="c">0</td>' in html, html)

# ---- the same through `martini run -- lua` ------------------------------------------
rout = os.path.join(work, "run")
r = run([martini, "run", "--client", "coverage", "--output", rout, "--", "lua", lines_lua])
check("martini run -- lua: the program ran under martini-lua with coverage",
      r.returncode == 0 and r.stdout == "385\t3\n" and "martini-lua with coverage" in r.stderr, r.stdout + r.stderr)
check("martini run -- lua: the outputs listed",
      f"outputs in {rout}" in r.stderr and "coverage.info" in r.stderr and "coverage.html" in r.stderr, r.stderr)
again = of(os.path.join(rout, "coverage.info"), "lines.lua")
check("martini run -- lua: the same counts", again["DA"] == LINES_DA and again["FNDA"] == LINES_FNDA and
      again["FN"] == LINES_FN, again)

# ---- shapes.lua: every line as Lua's own line hook counts it --------------------------
# The oracle runs the script under plain Lua with debug.sethook (in each coroutine too)
# and sums the hook's calls per line: what the coverage client's rule (a line's count
# summed over the functions on it) gives when each line is one block.
shapes = os.path.join(scripts, "shapes.lua")
oracle = os.path.join(work, "oracle.lua")
with open(oracle, "w") as f:
    f.write("""local path = arg[1]
local source = "@" .. path
local counts = {}
local function hook(_, line)
  if debug.getinfo(2, "S").source == source then counts[line] = (counts[line] or 0) + 1 end
end
local create, wrap = coroutine.create, coroutine.wrap
coroutine.create = function(f) return create(function(...) debug.sethook(hook, "l") return f(...) end) end
coroutine.wrap = function(f) return wrap(function(...) debug.sethook(hook, "l") return f(...) end) end
local chunk = assert(loadfile(path))
debug.sethook(hook, "l")
chunk()
debug.sethook()
for line, n in pairs(counts) do io.stderr:write(line, " ", n, "\\n") end
""")
SHAPES_OUTPUT = "2\t0\t120\t6\t3\tA B C\t6\tx!\t0\n"
lua = shutil.which("lua5.4") or shutil.which("lua")
if lua:
    o = run([lua, oracle, shapes])
    expected = {int(a): int(b) for a, b in (line.split() for line in o.stderr.split("\n") if line)}
    check("the oracle ran the script", o.stdout == SHAPES_OUTPUT and len(expected) > 40, o.stdout + o.stderr)
    for clients, what in ((["coverage"], "coverage alone (no call events)"),
                          (["coverage", "callcount=out=" + os.path.join(work, "calls.txt")], "with callcount")):
        sout = os.path.join(work, "shapes-" + str(len(clients)))
        args = [martini_lua, "--output", sout]
        for c in clients:
            args += ["--client", c]
        r = run(args + [shapes])
        got = of(os.path.join(sout, "coverage.info"), "shapes.lua")["DA"]
        wrong = {n: (got.get(n), expected.get(n)) for n in set(got) | set(expected)
                 if got.get(n) != expected.get(n, 0 if n in got else None)}
        check(f"shapes.lua, {what}: every line counted as Lua's line hook counts it",
              r.stdout == SHAPES_OUTPUT and not wrong, f"line: (martini-lua, oracle) {wrong}\n{r.stderr}")
    calls = open(os.path.join(work, "calls.txt")).read()
    check("with callcount: the calls counted too", re.search(r"^\s+51\s+\d+\s+shapes\.countdown$", calls, re.M), calls)
else:
    print("note: no lua5.4 to run the oracle: shapes.lua not checked")

# The hooks martini-lua sets: coverage alone needs no return hook, and without coverage
# no line hook (a program pays for lines only when they are counted).
mask_lua = os.path.join(work, "mask.lua")
with open(mask_lua, "w") as f:
    f.write("print(select(2, debug.gethook()))\n")
callcount_out = "callcount=out=" + os.path.join(work, "mask-calls.txt")
for clients, mask in ((["coverage=formats=none"], "cl"), ([callcount_out], "cr"),
                      (["coverage=formats=none", callcount_out], "crl")):
    args = [martini_lua]
    for c in clients:
        args += ["--client", c]
    r = run(args + [mask_lua])
    check(f"{' and '.join(c.split('=')[0] for c in clients)}: hooks '{mask}'", r.stdout == mask + "\t0\n",
          r.stdout + r.stderr)

# Options: include and exclude choose chunks (a Lua function's class is its chunk's
# name); out= names the tracefile.
r = run([martini_lua, "--client", "coverage=exclude=lines,formats=lcov", "--output", os.path.join(work, "ex"),
         lines_lua])
check("exclude=lines: nothing covered", "coverage: 0 files" in r.stderr and
      tracefile(os.path.join(work, "ex", "coverage.info")) == {}, r.stderr)
r = run([martini_lua, "--client", "coverage=include=shapes,formats=lcov", "--output", os.path.join(work, "in"),
         lines_lua])
check("include=shapes: lines.lua not covered", "coverage: 0 files" in r.stderr, r.stderr)
custom = os.path.join(work, "elsewhere", "run.info")
r = run([martini_lua, "--client", "coverage=formats=lcov,out=" + custom, lines_lua])
check("out=FILE: the tracefile there", r.returncode == 0 and of(custom, "lines.lua")["DA"] == LINES_DA, r.stderr)

# ---- a sample point: the counts so far, the run going on --------------------------------
phases = os.path.join(scripts, "phases.lua")
sout = os.path.join(work, "sample")
proc = subprocess.Popen([martini_lua, "--client", "coverage=formats=lcov", "--output", sout, phases],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
first = proc.stdout.readline()
if first == "ready\n":
    s = run([martini, "control", str(proc.pid), "sample", "phase1"], timeout=60)
    check("martini control sample: done", s.returncode == 0, s.stdout + s.stderr)
    proc.stdin.write("\n")
    proc.stdin.close()
else:
    proc.kill()
pout_, perr = rest_of(proc, 60)
check("phases.lua ran to its end", first == "ready\n" and proc.returncode == 0 and pout_ == "7\n", first + perr)
mid = of(os.path.join(sout, "coverage-phase1.info"), "phases.lua")["DA"]
end = of(os.path.join(sout, "coverage.info"), "phases.lua")["DA"]
check("the sample point has the counts until io.read",
      mid == {2: 3, 3: 1, 4: 1, 5: 4, 6: 3, 8: 1, 9: 1, 10: 1, 11: 0, 12: 0, 14: 0}, mid)
check("the end has them all", end == {2: 7, 3: 1, 4: 1, 5: 4, 6: 3, 8: 1, 9: 1, 10: 1, 11: 5, 12: 4, 14: 1}, end)
check("the sample point's files are said to be written", "coverage-phase1.info" in perr, perr)

# ---- martini coverage merge --------------------------------------------------------------
merged = os.path.join(work, "merged.info")
m = run([martini, "coverage", "merge", "-o", merged, "--xml", os.path.join(work, "merged.xml"),
         "--html", os.path.join(work, "merged.html"), info, os.path.join(rout, "coverage.info")])
both = of(merged, "lines.lua")
check("merge: exit 0, the files said to be written", m.returncode == 0 and
      all(f"martini: wrote {os.path.join(work, n)}" in m.stderr for n in ("merged.info", "merged.xml", "merged.html")),
      m.stdout + m.stderr)
check("merge: two runs, every count doubled", both["DA"] == {n: 2 * c for n, c in LINES_DA.items()} and
      both["FNDA"] == {n: 2 * c for n, c in LINES_FNDA.items()} and both["FN"] == LINES_FN, both)
check("merge: the summary", "coverage: 1 files, lines 15/15 (100.0%)" in m.stdout, m.stdout)
check("merge: the HTML has the source", "  return x * x" in open(os.path.join(work, "merged.html")).read(), "")
if shutil.which("xmllint"):
    x = run(["xmllint", "--noout", os.path.join(work, "merged.xml")])
    check("merge: xmllint reads the XML", x.returncode == 0, x.stderr)

# A function that starts on another line: the files were made from different sources.
moved = os.path.join(work, "moved.info")
with open(moved, "w") as f:
    f.write(open(info).read().replace("FN:2,lines.square", "FN:4,lines.square"))
refused = os.path.join(work, "refused.info")
m = run([martini, "coverage", "merge", "-o", refused, info, moved], expect=1)
check("merge: a function moved to another line refused, the file named",
      m.returncode == 1 and f"{moved}: {lines_lua}: function lines.square starts on line 4, on line 2" in m.stderr
      and "cannot be merged" in m.stderr and not os.path.exists(refused), m.stderr)
# A file that is not a tracefile, and one that does not exist.
bad = os.path.join(work, "bad.info")
with open(bad, "w") as f:
    f.write("SF:x.lua\nDA:1,1\nDA:oops\nend_of_record\n")
m = run([martini, "coverage", "merge", "-o", refused, info, bad], expect=1)
check("merge: a malformed tracefile refused, its file and line named", m.returncode == 1 and
      f"{bad}:3: expected DA:<line>,<count> (not an lcov tracefile line: 'DA:oops')" in m.stderr and
      not os.path.exists(refused), m.stderr)
m = run([martini, "coverage", "merge", "-o", refused, os.path.join(work, "nothing.info")], expect=1)
check("merge: a missing file named", m.returncode == 1 and "cannot read" in m.stderr and "nothing.info" in m.stderr,
      m.stderr)
m = run([martini, "coverage", "merge", info], expect=None)
check("merge: -o is required", m.returncode != 0 and "--output" in m.stderr, m.stderr)
# Relative source paths found with --sources; a source found nowhere is said.
relative = os.path.join(work, "relative.info")
with open(relative, "w") as f:
    f.write("SF:lines.lua\nDA:2,1\nend_of_record\nSF:gone.lua\nDA:1,0\nend_of_record\n")
page = os.path.join(work, "relative.html")
m = run([martini, "coverage", "merge", "-o", os.path.join(work, "rel-out.info"), "--html", page, "--sources", scripts,
         relative], cwd=work)
html = open(page).read() if os.path.exists(page) else ""
check("merge --html --sources: a relative path's source found there", m.returncode == 0 and
      '<tr class="hit"><td class="n">2</td><td class="c">1</td><td>  return x * x</td></tr>' in html, m.stderr)
check("merge --html: a source found nowhere is said", "Source not found: gone.lua" in html, html[-1500:])

# ---- bad options: refused before the program runs, the option named -------------------------
for option, said in (("formats=pdf", "option 'formats': unknown format 'pdf'"),
                     ("bogus", "unknown option 'bogus' (known: include, exclude, all, formats, sources, out, top)"),
                     ("formts=lcov", "unknown option 'formts' (did you mean 'formats'?)"),
                     ("top=x", "option 'top': 'x' is not a count"),
                     ("all=yes", "option 'all' takes no value"),
                     ("include=", "option 'include' needs a value")):
    r = run([martini, "run", "--client", "coverage=" + option, "--output", os.path.join(work, "bad"), "--", "lua",
             lines_lua], expect=1)
    check(f"martini run: coverage={option} refused before the run",
          r.returncode == 1 and f"martini run: client 'coverage': {said}" in r.stderr and r.stdout == "", r.stderr)
r = run([martini_lua, "--client", "coverage=bogus", lines_lua], expect=1)
check("martini-lua: coverage=bogus refused, the program not run", r.returncode == 1 and
      "coverage: unknown option 'bogus'" in r.stderr and "Martini could not start" in r.stderr and r.stdout == "",
      r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
