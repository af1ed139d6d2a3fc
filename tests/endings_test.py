#!/usr/bin/env python3
"""Every way a Mono or Lua program ends keeps its profile: SIGTERM and SIGINT sent to
the runtime itself or to `martini run`, and Lua's os.exit deep in the stack. The
program's status is kept (the signal that ended it, or os.exit's code), and martini
says what was written. (The JVM's endings: signal_java_test.py.)

usage: endings_test.py MARTINI_BUILD_DIR MARTINI_LUA|'' MONO_TEST_DIR|''
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, rest_of, run  # noqa: E402

build = os.path.abspath(sys.argv[1])
martini_lua = sys.argv[2]
mono_dir = sys.argv[3]
martini = os.path.join(build, "tools", "martini")
work = tempfile.mkdtemp(prefix="endings-test-")
check = Checks()


def calls_of(out, prefix):
    """cgprof.json in `out`: the calls of the methods whose names start with `prefix`."""
    path = os.path.join(out, "cgprof.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        p = json.load(f)
    frames = [fr["name"] for fr in p["frames"]]
    k = [mt["name"] for mt in p["metrics"]].index("calls")
    return sum(node[2 + k] for node in p["merged"]["nodes"][1:] if frames[node[1]].startswith(prefix))


def until_ready_then(args, sig, env=None):
    """Starts args in a new session, waits for its "ready" line, sends sig; (rc, stderr)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    first = proc.stdout.readline()
    if "ready" not in first:
        proc.kill()
        _, err = rest_of(proc, 30)
        return None, f"no 'ready' line: {first!r}\n{err}"
    proc.send_signal(sig)
    try:
        _, err = rest_of(proc, 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = rest_of(proc, 30)
    return proc.returncode, err


if martini_lua:
    spin = os.path.join(work, "spin.lua")
    with open(spin, "w") as f:
        f.write("local function step(i) return i + 1 end\n"
                "for i = 1, 1000 do step(i) end\n"
                "io.write('ready\\n') io.flush()\n"
                "local i = 0\n"
                "while true do i = step(i) end\n")
    deep = os.path.join(work, "deep.lua")
    with open(deep, "w") as f:
        f.write("local function work(i) return i * 2 end\n"
                "local function down(n, code)\n"
                "  if n == 0 then os.exit(code) end\n"
                "  return down(n - 1, code) + 0\n"
                "end\n"
                "for i = 1, 100 do work(i) end\n"
                "io.write('before the exit\\n')\n"
                "down(5, tonumber(arg[1]))\n")
    client = "cgprof=formats=json"
    for code in (3, 0):
        out = os.path.join(work, f"lua-exit-{code}")
        r = run([martini_lua, "--client", client, "--output", out, deep, str(code)], expect=None)
        check(f"lua os.exit({code}) deep in the stack: its status", r.returncode == code, r.stderr)
        check(f"lua os.exit({code}): what the script printed", "before the exit" in r.stdout, r.stdout)
        check(f"lua os.exit({code}): the profile has the calls before it", calls_of(out, "deep.work") == 100,
              f"{calls_of(out, 'deep.work')}\n{r.stderr}")
        out = os.path.join(work, f"run-lua-exit-{code}")
        r = run([martini, "run", "--client", client, "--output", out, "--", "lua", deep, str(code)], expect=None)
        check(f"martini run -- lua, os.exit({code}): its status", r.returncode == code, r.stderr)
        check(f"martini run -- lua, os.exit({code}): the profile", calls_of(out, "deep.work") == 100, r.stderr)
        check(f"martini run -- lua, os.exit({code}): said to be written",
              "cgprof.json" in r.stderr and "no output files were written" not in r.stderr, r.stderr)
    for sig in (signal.SIGTERM, signal.SIGINT):
        out = os.path.join(work, f"lua-{sig.name}")
        rc, err = until_ready_then([martini_lua, "--client", client, "--output", out, spin], sig)
        check(f"{sig.name} to martini-lua: it ends by the signal", rc == -sig.value, f"exit {rc}\n{err}")
        n = calls_of(out, "spin.step")
        check(f"{sig.name} to martini-lua: the profile was written", n is not None and n >= 1000, f"{n}\n{err}")
        out = os.path.join(work, f"run-lua-{sig.name}")
        rc, err = until_ready_then([martini, "run", "--client", client, "--output", out, "--", "lua", spin], sig)
        check(f"{sig.name} to martini run -- lua: the program's status", rc == 128 + sig.value, f"exit {rc}\n{err}")
        n = calls_of(out, "spin.step")
        check(f"{sig.name} to martini run -- lua: the profile was written", n is not None and n >= 1000,
              f"{n}\n{err}")
        check(f"{sig.name} to martini run -- lua: said to be written", "cgprof.json" in err, err)

if mono_dir:
    exe = os.path.join(mono_dir, "Spin.exe")
    env = dict(os.environ, LD_LIBRARY_PATH=mono_dir + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    for sig in (signal.SIGTERM, signal.SIGINT):
        out = os.path.join(work, f"mono-{sig.name}")
        rc, err = until_ready_then(["mono", "--debug", "-O=-aot", f"--profile=martini:cgprof=formats=json,out={out}",
                                    exe], sig, env)
        check(f"{sig.name} to mono: it ends by the signal", rc == -sig.value, f"exit {rc}\n{err}")
        n = calls_of(out, "Spinning.Program.Step")
        check(f"{sig.name} to mono: the profile was written", n is not None and n >= 1000, f"{n}\n{err}")
        out = os.path.join(work, f"run-mono-{sig.name}")
        rc, err = until_ready_then([martini, "run", "--client", "cgprof=formats=json", "--output", out, "--",
                                    "mono", exe], sig)
        check(f"{sig.name} to martini run -- mono: the program's status", rc == 128 + sig.value, f"exit {rc}\n{err}")
        n = calls_of(out, "Spinning.Program.Step")
        check(f"{sig.name} to martini run -- mono: the profile was written", n is not None and n >= 1000,
              f"{n}\n{err}")
        check(f"{sig.name} to martini run -- mono: said to be written",
              "cgprof.json" in err and "no output files were written" not in err, err)

shutil.rmtree(work, ignore_errors=True)
check.finish()
