#!/usr/bin/env python3
"""An installed Martini works from its installed files alone: `meson install` into a
temporary DESTDIR, then, with the build and source trees' Martini out of reach (no
MARTINI_* variables, no LD_LIBRARY_PATH, run from an empty directory), the installed
`martini` profiles the Java example, replays a trace and profiles the Lua example with
the bundled cgprof, and a client built with g++ from the installed pkg-config files
alone runs under `martini replay`. Inputs (class files, the trace, the Lua script)
come from the build and source trees; every Martini binary, library and header comes
from the installation. The layout is the build's own prefix, bindir and libdir
(Debian's default libdir is lib/x86_64-linux-gnu; scripts/test.sh configures it).

usage: install_test.py MESON BUILD_DIR SOURCE_DIR [SHOP_CLASSES]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

meson, build, source = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
shop_classes = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else ""
check = Checks()
work = tempfile.mkdtemp(prefix="martini-install-")
destdir = os.path.join(work, "destdir")

options = {o["name"]: o["value"] for o in json.loads(
    subprocess.run([meson, "introspect", "--buildoptions", build], capture_output=True, text=True,
                   check=True).stdout)}
prefix, bindir, libdir = options["prefix"], options["bindir"], options["libdir"]
print(f"layout: prefix {prefix}, bindir {bindir}, libdir {libdir}")


def staged(*parts):
    """An installed path (prefix-relative parts, or absolute ones) under DESTDIR."""
    return destdir + os.path.join(prefix, *parts)


r = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--quiet", "--skip-subprojects",
                    "--destdir", destdir], capture_output=True, text=True)
if r.returncode != 0:
    print(f"meson install failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    sys.exit(1)

BIN, LIB = staged(bindir), staged(libdir)
martini = os.path.join(BIN, "martini")

# ---- The layout ------------------------------------------------------------------
lua_built = os.path.exists(os.path.join(build, "providers", "interp", "martini-lua"))
jvm_built = os.path.exists(os.path.join(build, "providers", "jvmti", "libmartini-jvmti.so"))
mono_built = os.path.exists(os.path.join(build, "providers", "mono", "libmono-profiler-martini.so"))
expected = [os.path.join(BIN, "martini"), os.path.join(BIN, "martini-replay"),
            os.path.join(LIB, "libmartini-interp.so"), os.path.join(LIB, "libmartini-core.a"),
            os.path.join(LIB, "libmartini-report.a"), os.path.join(LIB, "libmartini-filters.a")]
expected += [os.path.join(LIB, "martini", "clients", f"lib{c}.so")
             for c in ("cgprof", "callcount", "heapprof", "threadprof", "conformance")]
expected += [os.path.join(LIB, "pkgconfig", f"{p}.pc")
             for p in ("martini-mpi", "martini-core", "martini-interp", "martini-report", "martini-filters",
                       "martini-clients")]
expected += [staged(options["includedir"], h) for h in (
    "martini-mpi/MpiAPI.h", "martini-report/martini/report/profile.h",
    "martini-filters/martini/filters/rule_set.h", "martini-filters/martini/filters/glob.h",
    "martini-clients/martini/clients/names.h", "martini-clients/martini/clients/output.h",
    "martini-clients/martini/clients/support.h")]
if lua_built:
    expected.append(os.path.join(BIN, "martini-lua"))
if jvm_built:
    expected += [os.path.join(LIB, "martini", "libmartini-jvmti.so"),
                 os.path.join(LIB, "martini", "martini-probes.jar")]
if mono_built:
    expected.append(os.path.join(LIB, "martini", "libmono-profiler-martini.so"))
for path in expected:
    check(f"installed: {os.path.relpath(path, destdir)}", os.path.isfile(path))

# No installed program or library reaches into the build tree: RUNPATHs are relative.
readelf = shutil.which("readelf")
if readelf:
    elves = [os.path.join(BIN, "martini"), os.path.join(BIN, "martini-replay"),
             os.path.join(LIB, "libmartini-interp.so")] + ([os.path.join(BIN, "martini-lua")] if lua_built else [])
    for path in filter(os.path.isfile, elves):
        dyn = subprocess.run([readelf, "-d", path], capture_output=True, text=True).stdout
        check(f"{os.path.basename(path)}: no build-tree RUNPATH", build not in dyn and source not in dyn, dyn)

# ---- Running it, from the installation alone --------------------------------------
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("MARTINI_", "PKG_CONFIG")) and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
run_dir = os.path.join(work, "run")
os.makedirs(run_dir)


def run(args, run_env=None):
    return subprocess.run(args, capture_output=True, text=True, cwd=run_dir, env=run_env or env, timeout=240)


def inside_install(log):
    """The clients martini says it loads are the installed ones (it names no build path)."""
    return build not in log


# The Java example under the installed agent and cgprof. Not in a sanitized build: the
# ASan runtime must come first in the process, and java is not built with it.
sanitized = options.get("b_sanitize", "none") not in ("none", [], ["none"])
if jvm_built and shop_classes and not sanitized and shutil.which("java", path=env.get("PATH")):
    out = os.path.join(work, "java-out")
    r = run([martini, "run", "--client", "cgprof=include=shop.*", "--output", out, "--",
             "java", "-cp", shop_classes, "shop.Shop"])
    log = r.stdout + r.stderr
    check("java: martini run exits 0", r.returncode == 0, log)
    check("java: the program ran", "shop: 120 orders" in log, log)
    check("java: installed agent and client only", inside_install(log), log)
    path = os.path.join(out, "cgprof.json")
    check("java: cgprof.json written", os.path.isfile(path), log)
    frames = [f["name"] for f in json.load(open(path))["frames"]] if os.path.isfile(path) else []
    check("java: shop methods profiled", "shop.Shop$OrderService.placeOrder" in frames, frames)
else:
    print("SKIP: the Java example (no JVM provider, or a sanitized build)")

# The C# example under the installed Mono module and cgprof (not sanitized: as for java).
bank = os.path.join(build, "examples", "Bank.exe")
if mono_built and os.path.isfile(bank) and not sanitized and shutil.which("mono", path=env.get("PATH")):
    out = os.path.join(work, "mono-out")
    r = run([martini, "run", "--client", "cgprof=filter=+Bank.*", "--output", out, "--", "mono", bank])
    log = r.stdout + r.stderr
    check("mono: martini run exits 0", r.returncode == 0 and "bank: 200 transfers" in log, log)
    check("mono: installed module and client only", inside_install(log), log)
    path = os.path.join(out, "cgprof.json")
    frames = [f["name"] for f in json.load(open(path))["frames"]] if os.path.isfile(path) else []
    check("mono: Bank methods profiled", "Bank.Ledger.Apply" in frames, frames)
else:
    print("SKIP: the C# example (no Mono provider, or a sanitized build)")

# A trace replayed by the installed martini and martini-replay.
trace = os.path.join(source, "examples", "traces", "shop.jsonl")
out = os.path.join(work, "replay-out")
r = run([martini, "replay", "--client", f"cgprof=out={out},top=5", trace])
log = r.stdout + r.stderr
check("replay: martini replay exits 0", r.returncode == 0, log)
check("replay: cgprof wrote its profile", os.path.isfile(os.path.join(out, "cgprof.json")), log)
check("replay: the top table names the trace's methods", "com.example.shop.OrderService.placeOrder" in log, log)
r = run([os.path.join(BIN, "martini-replay"), "--client", "callcount", trace])
check("replay: martini-replay finds the installed callcount", r.returncode == 0, r.stdout + r.stderr)

# The Lua example under the installed martini-lua.
if lua_built:
    out = os.path.join(work, "lua-out")
    r = run([martini, "run", "--client", "cgprof", "--output", out, "--",
             "lua", os.path.join(source, "examples", "lua", "inventory.lua")])
    log = r.stdout + r.stderr
    check("lua: martini run exits 0", r.returncode == 0, log)
    check("lua: installed martini-lua and client only", inside_install(log), log)
    path = os.path.join(out, "cgprof.json")
    check("lua: cgprof.json written", os.path.isfile(path), log)
    check("lua: a Lua profile", os.path.isfile(path) and "inventory.lua" in open(path).read(), log)
    # martini-lua by itself: libmartini-interp (its RUNPATH) finds cgprof by name from <libdir>.
    out = os.path.join(work, "lua-host-out")
    r = run([os.path.join(BIN, "martini-lua"), "--client", "cgprof=top=3", "--output", out,
             os.path.join(source, "examples", "lua", "inventory.lua")])
    check("lua: installed martini-lua finds libmartini-interp and cgprof by itself", r.returncode == 0
          and os.path.isfile(os.path.join(out, "cgprof.json")), r.stdout + r.stderr)
else:
    print("SKIP: the Lua example (martini-lua not built)")

# A client built out of the tree from the installed pkg-config files alone. Under
# DESTDIR, pkg-config's sysroot puts DESTDIR before the paths the .pc files name.
packages = ["martini-mpi", "martini-filters", "martini-report", "martini-clients"]
pc_env = dict(env, PKG_CONFIG_PATH=os.path.join(LIB, "pkgconfig"), PKG_CONFIG_SYSROOT_DIR=destdir)
r = run(["pkg-config", "--cflags", "--libs"] + packages, pc_env)
check("client: pkg-config knows the client packages", r.returncode == 0, r.stdout + r.stderr)
flags = r.stdout.split()
check("client: pkg-config names no build or source tree", build not in r.stdout and source not in r.stdout,
      r.stdout)
lib = os.path.join(work, "libinstalled_client.so")
r = run(["g++", "-shared", "-fPIC", "-o", lib, os.path.join(source, "tests", "install", "installed_client.cpp")]
        + flags)
check("client: g++ builds it with the installed flags only", r.returncode == 0, r.stdout + r.stderr)
for tool in ([martini, "replay"], [os.path.join(BIN, "martini-replay")]):
    name = os.path.basename(tool[0]) + " " + " ".join(tool[1:])
    out = os.path.join(work, "client-out-" + str(len(tool)))
    config = os.path.join(work, "client.json")
    with open(config, "w") as f:
        json.dump({"clients": [{"client": lib, "options": f"filter=+com.example.shop.*|-*,out={out}"},
                               {"client": "callcount"}]}, f)
    r = run(tool + ["--client", "@" + config, trace])
    log = r.stdout + r.stderr
    check(f"client: {name.strip()} runs it beside a bundled client", r.returncode == 0, log)
    path = os.path.join(out, "installed.json")
    check(f"client: {name.strip()}: its report written", os.path.isfile(path), log)
    calls = {}
    if os.path.isfile(path):
        profile = json.load(open(path))
        frames = [f["name"] for f in profile["frames"]]
        calls = {frames[n[1]]: n[2] for n in profile["merged"]["nodes"][1:]}
    check(f"client: {name.strip()}: its filter and names", calls.get("com.example.shop.OrderService.placeOrder") == 120
          and all(m.startswith("com.example.shop.") for m in calls), calls)

# The installed tree moved elsewhere (a tarball unpacked, a container layer): the .pc
# files name their paths from where they are, so pkg-config and g++ still work.
moved = os.path.join(work, "moved")
shutil.copytree(staged(), moved, symlinks=True)
moved_pc = os.path.join(moved, os.path.relpath(LIB, staged()), "pkgconfig")
r = run(["pkg-config", "--cflags", "--libs"] + packages, dict(env, PKG_CONFIG_PATH=moved_pc))
check("moved: pkg-config names the moved tree", r.returncode == 0 and moved in r.stdout and
      staged() not in r.stdout and " -I" + prefix not in " " + r.stdout, r.stdout + r.stderr)
lib = os.path.join(work, "libmoved_client.so")
r = run(["g++", "-shared", "-fPIC", "-o", lib, os.path.join(source, "tests", "install", "installed_client.cpp")]
        + r.stdout.split())
check("moved: g++ builds a client with its flags", r.returncode == 0, r.stdout + r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
