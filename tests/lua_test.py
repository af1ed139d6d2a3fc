#!/usr/bin/env python3
"""martini-lua and `martini run -- lua`: a real interpreter (Lua 5.4) reporting through
the interpreter C ABI.
The bundled program's known call counts, its calling contexts (pcall catching an error
two frames down, tail calls, a coroutine as a virtual thread), the conformance kit on
it, long tail-call loops and deep recursion, closures made and collected by the
thousand, and each kind of bad input.

usage: lua_test.py MARTINI_LUA SOURCE_ROOT MARTINI
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, run  # noqa: E402

martini_lua, source, martini = (os.path.abspath(a) for a in sys.argv[1:4])
program = os.path.join(source, "examples", "lua", "inventory.lua")
work = tempfile.mkdtemp(prefix="martini-lua-")
check = Checks()


def counts(table):
    """callcount's table: method -> calls."""
    return {m.group(3): int(m.group(1))
            for m in re.finditer(r"^\s+(\d+)\s+(\d+)\s+(\S.*)$", table, re.M)}


# The bundled program under callcount, cgprof and the conformance kit at once.
out = os.path.join(work, "out")
r = run([martini_lua, "--client", "callcount=top=40", "--client", "cgprof=formats=all", "--client", "conformance",
         "--output", out, program])
log = r.stdout + r.stderr
check("exit status 0", r.returncode == 0, log)
check("the program ran", "inventory: 120 orders, 15 out of stock" in r.stdout, log)
c = counts(r.stderr)
expected = {"inventory.find": 478, "inventory.insert": 448, "inventory.reserve": 120, "inventory.take": 120,
            "inventory.Tree:get": 120, "inventory.Tree:put": 112, "inventory.Tree.new": 1, "inventory.orders": 1,
            "inventory.(main chunk)": 1, "[C].pcall": 120, "[C].error": 15, "[C].yield": 120}
for method, n in expected.items():
    check(f"{method} called {n} times", c.get(method) == n, f"{method}: {c.get(method)}\n{log}")
check("two threads: main and the coroutine", "on 2 threads" in r.stderr, log)
check("conformance kit passes on the Lua host", re.search(r"conformance: PASS \(\d+ events checked\)", log), log)

# Closures made and dropped by the thousand, of two functions (calls are named through
# a cache keyed by the closure's address, each cached closure kept alive): a collected
# closure's address taken by a closure of the other function is still counted right.
churn = os.path.join(work, "churn.lua")
with open(churn, "w") as f:
    f.write("""local function maker_a(k)
  local function add_one() return k + 1 end
  return add_one
end
local function maker_b(k)
  local function add_two() return k + 2 end
  return add_two
end
local total = 0
for i = 1, 6000 do
  local f = (i % 3 == 0) and maker_b(i) or maker_a(i)
  total = total + f()
  if i % 50 == 0 then collectgarbage() end
end
print("churn " .. total)
""")
r = run([martini_lua, "--client", "callcount=top=40", churn])
c = counts(r.stderr)
check("6,000 closures of two functions: 4,000 and 2,000 calls",
      r.returncode == 0 and c.get("churn.add_one") == 4000 and c.get("churn.add_two") == 2000,
      (c, r.stdout + r.stderr))

# Calling contexts: take under reserve under pcall; find called from get in a tail call
# (so get has already left); the coroutine's frames on a thread of their own.
collapsed = open(os.path.join(out, "cgprof.collapsed")).read()
check("error path: main chunk > pcall > reserve > take > error",
      "inventory.(main_chunk);[C].pcall;inventory.reserve;inventory.take;[C].error " in collapsed, collapsed)
check("tail call: find runs in get's frame, under take",
      "inventory.(main_chunk);[C].pcall;inventory.reserve;inventory.take;inventory.find " in collapsed, collapsed)
check("no frame left behind by the 15 errors: nothing ever ran under error or inside another order",
      "[C].error;" not in collapsed and not re.search(r"pcall;.*pcall", collapsed), collapsed)
profile = json.load(open(os.path.join(out, "cgprof.json")))
check("threads named main and coroutine-1",
      sorted(t["name"] for t in profile["threads"]) == ["coroutine-1", "main"], profile["threads"])
r = run([martini, "report", os.path.join(out, "cgprof.json"), "--top", "5"])
check("martini report reads the profile", r.returncode == 0 and "inventory." in r.stdout, r.stdout + r.stderr)

# Long tail-call loops stay one frame deep; deep recursion unwinds; a finished
# coroutine ends its thread; an uncaught error still leaves the profile.
script = os.path.join(work, "shapes.lua")
with open(script, "w") as f:
    f.write("""
local function loop(n) if n == 0 then return 0 end return loop(n - 1) end
local function deep(n) if n == 0 then return 0 end return 1 + deep(n - 1) end
loop(200000)
assert(deep(10000) == 10000)
for _ = 1, 3 do
  local co = coroutine.create(function(a) return a * 2 end)
  assert(select(2, coroutine.resume(co, 21)) == 42)
end
local function fail() error("the script's own error") end
fail()
""")
r = run([martini_lua, "--client", "callcount", script], expect=1)
log = r.stdout + r.stderr
c = counts(r.stderr)
check("uncaught error: exit status 1", r.returncode == 1, log)
check("uncaught error: message and traceback", "the script's own error" in r.stderr and "traceback" in r.stderr, log)
check("uncaught error: what was collected is still reported", c.get("shapes.loop") == 200001, log)
check("deep recursion counted", c.get("shapes.deep") == 10001, log)
check("each finished coroutine was a thread of its own", "on 4 threads" in r.stderr, log)

# Bad input: each names its cause; none leaves a half-written profile behind.
r = run([martini_lua, os.path.join(work, "missing.lua")], expect=1)
check("missing script named", r.returncode == 1 and "missing.lua" in r.stderr, r.stderr)
r = run([martini_lua, "--bogus", program], expect=1)
check("unknown option named", r.returncode == 1 and "unknown option '--bogus'" in r.stderr, r.stderr)
r = run([martini_lua, "--client", "nosuchclient", program], expect=1)
check("missing client named, nothing run",
      r.returncode == 1 and "nosuchclient" in r.stderr and "Martini could not start" in r.stderr
      and "inventory:" not in r.stdout, r.stderr)
r = run([martini_lua, "--client", "cgprof=bogus=1", "--client", "callcount", program])
check("a client refusing its options is named; the others run",
      r.returncode == 0 and "cgprof" in r.stderr and "bogus" in r.stderr and "inventory.find" in r.stderr,
      r.stdout + r.stderr)
with open(os.path.join(work, "syntax.lua"), "w") as f:
    f.write("local x = = 1\n")
r = run([martini_lua, "--client", "callcount", os.path.join(work, "syntax.lua")], expect=1)
check("syntax error named with file and line", r.returncode == 1 and "syntax.lua:1:" in r.stderr, r.stderr)

# The same through `martini run`, as for java: lua need not be installed.
out2 = os.path.join(work, "run-out")
r = run([martini, "run", "--client", "cgprof=top=5", "--output", out2, "--", "lua", program, "extra-arg"])
log = r.stdout + r.stderr
check("martini run -- lua: exit status 0", r.returncode == 0, log)
check("martini run -- lua: the program ran under martini-lua",
      "inventory: 120 orders, 15 out of stock" in r.stdout and "martini-lua with cgprof" in r.stderr, log)
check("martini run -- lua: outputs listed",
      f"outputs in {out2}" in r.stderr and "cgprof.json" in r.stderr and "cgprof.html" in r.stderr, log)
# A client option with an escaped ';' reaches the client as written (martini run hands
# the clients on to martini-lua with the escapes it needs).
odd = os.path.join(work, "calls;counted.txt")
r = run([martini, "run", "--client", "callcount=out=" + odd.replace(";", "\\;"), "--output", out2, "--",
         "lua", program])
check("martini run -- lua: a ';' in a client's options survives", r.returncode == 0 and os.path.exists(odd)
      and "inventory.find" in open(odd).read(), r.stdout + r.stderr)
r = run([martini, "run", "--", "lua", "-e", "print(1)"], expect=1)
check("martini run -- lua -e: refused, naming why", r.returncode == 1 and "lua's own options" in r.stderr, r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
