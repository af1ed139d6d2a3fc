#!/usr/bin/env python3
"""Failing the way users expect: outputs on a full disk (an LD_PRELOAD shim makes
write(2) fail with ENOSPC after N bytes) are complete or absent and named, never left
truncated; `martini run` checks its output directory before the program starts and,
through the run status handshake ($MARTINI_STATUS_FILE), says last and with a non-zero
exit when the profile asked for was not produced; %p/%t in output names; the command
lines (--version, help listing every bundled client, `martini replay --output`,
program arguments passed through untouched).

usage: run_failures_test.py BUILD_DIR SOURCE_ROOT ENOSPC_SHIM MARTINI_LUA_OR_EMPTY
"""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

build, source, shim, martini_lua = sys.argv[1:5]
martini = os.path.join(build, "tools", "martini")
replay = os.path.join(build, "tools", "martini-replay")
env = dict(os.environ, MARTINI_CLIENT_PATH=os.path.join(build, "clients"))
env.pop("MARTINI_STATUS_FILE", None)
trace = os.path.join(source, "examples", "traces", "shop.jsonl")
heap_trace = os.path.join(source, "tests", "profilers", "heap_threads.jsonl")
work = tempfile.mkdtemp(prefix="martini-failures-")
os.chmod(work, 0o755)
check = Checks()
# Under AddressSanitizer (scripts/test.sh's second build) the preloaded shim and the
# unprivileged user are left out: ASan wants its runtime first in the process, and
# LeakSanitizer cannot inspect a process that changed its user.
sanitized = "libasan" in subprocess.run(["ldd", replay], capture_output=True, text=True).stdout
if sanitized:
    print("sanitizer build: the full-disk (preloaded shim) and unprivileged-user cases are left out")


def run(args, expect=0, extra_env=None, **kwargs):
    e = dict(env, **(extra_env or {}))
    r = subprocess.run(args, capture_output=True, text=True, env=e, **kwargs)
    if expect is not None and r.returncode != expect:
        print(f"command {args} exited {r.returncode} (expected {expect})\n{r.stdout}{r.stderr}")
    return r


def full_disk(match, budget=300):
    """The environment of a process whose files under `match` fill the disk after `budget` bytes."""
    return {"LD_PRELOAD": shim, "ENOSPC_SHIM_MATCH": match, "ENOSPC_SHIM_BYTES": str(budget),
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}


def files_in(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


if not sanitized:
    # -- the shim itself fills the disk ------------------------------------------------------
    probe_dir = os.path.join(work, "probe")
    os.makedirs(probe_dir)
    r = run([sys.executable, "-c", f"open('{probe_dir}/f', 'wb', buffering=0).write(b'x' * 1000)\n"
             f"open('{probe_dir}/g', 'wb', buffering=0).write(b'x')"], expect=None, extra_env=full_disk(probe_dir, 100))
    check("shim: a write past the budget fails with ENOSPC",
          r.returncode != 0 and os.path.getsize(os.path.join(probe_dir, "f")) == 100
          and "No space left on device" in r.stderr, r.stderr)

    # -- a full disk: each client's outputs are complete or absent, and named ------------------
    # callcount out=FILE: before, a 0-byte file and no message.
    d = os.path.join(work, "callcount-full")
    os.makedirs(d)
    target = os.path.join(d, "calls.txt")
    r = run([replay, "--client", f"callcount=out={target}", trace], expect=1, extra_env=full_disk(d))
    check("martini-replay: exit 1 and the file named when an output could not be written",
          r.returncode == 1 and f"1 output file could not be written: {target} (No space left on device)" in r.stderr,
          r.stderr)
    check("callcount out= on a full disk: named with the cause",
          f"cannot write '{target}': No space left on device" in r.stderr, r.stderr)
    check("callcount out= on a full disk: no file, no temporary left", files_in(d) == [], files_in(d))
    check("callcount out= on a full disk: the table printed on stderr instead", "calls to" in r.stderr, r.stderr)

    # cgprof: before, truncated files were left behind.
    d = os.path.join(work, "cgprof-full")
    r = run([replay, "--client", f"cgprof=top=0,formats=all,out={d}", trace], expect=1, extra_env=full_disk(d, 2000))
    check("cgprof on a full disk: each failed file named", r.stderr.count("No space left on device") >= 4
          and "partial file was removed" in r.stderr, r.stderr)
    left = files_in(d)
    check("cgprof on a full disk: no truncated or temporary file left",
          all(not f.endswith(".tmp") for f in left) and len(left) <= 1, left)
    for f in left:  # what is there is complete
        if f.endswith(".json"):
            try:
                json.load(open(os.path.join(d, f)))
                check(f"cgprof on a full disk: {f} that was written is complete", True)
            except ValueError as e:
                check(f"cgprof on a full disk: {f} that was written is complete", False, str(e))

    # heapprof
    d = os.path.join(work, "heapprof-full")
    r = run([replay, "--client", f"heapprof=exact,top=0,out={d}", heap_trace], expect=1, extra_env=full_disk(d, 500))
    check("heapprof on a full disk: named", "No space left on device" in r.stderr and "heapprof:" in r.stderr, r.stderr)
    check("heapprof on a full disk: no truncated or temporary file left (pprof's stdio included)", files_in(d) == [],
          files_in(d))

    # conformance report=FILE: before, a 0-byte report and no message.
    d = os.path.join(work, "conformance-full")
    os.makedirs(d)
    target = os.path.join(d, "report.jsonl")
    r = run([replay, "--client", f"conformance=report={target}", trace], expect=1, extra_env=full_disk(d, 10))
    check("conformance report on a full disk: named", f"cannot write '{target}': No space left on device" in r.stderr,
          r.stderr)
    check("conformance report on a full disk: no report, no temporary", files_in(d) == [], files_in(d))
    # and with room, the report is whole
    r = run([replay, "--client", f"conformance=report={target}", trace])
    check("conformance report with room: complete", open(target).read().rstrip().endswith("}")
          and '"verdict":"pass"' in open(target).read(), r.stderr)

    # threadprof's detailed JSON
    d = os.path.join(work, "threadprof-full")
    r = run([replay, "--client", f"threadprof=top=0,out={d}", heap_trace], expect=1, extra_env=full_disk(d, 100))
    check("threadprof on a full disk: named, nothing truncated", "No space left on device" in r.stderr
          and files_in(d) == [], r.stderr + str(files_in(d)))

# -- an output that is not a regular file ------------------------------------------------
# A FIFO here; /dev/null, a terminal, a pipe alike: written into, never replaced by a
# file renamed over it.
fifo = os.path.join(work, "calls.fifo")
os.mkfifo(fifo)
received = {}


def read_fifo():
    with open(fifo) as f:
        received["text"] = f.read()


reader = threading.Thread(target=read_fifo, daemon=True)
reader.start()
r = run([replay, "--client", f"callcount=out={fifo}", trace], timeout=60)
reader.join(timeout=10)
check("an output that is a FIFO is written into and stays a FIFO",
      stat.S_ISFIFO(os.stat(fifo).st_mode) and "calls" in received.get("text", "")
      and not glob.glob(fifo + ".*.tmp"), f"{r.stderr}\nreceived: {received}")

# -- planted symbolic links in a shared output directory are never written through ------
# Another user who can write to the output directory plants a link at every temporary
# name a client could use (NAME.<pid>.tmp for the next pids) and at the final names, all
# pointing to a file of root's: the client must leave that file alone and write its
# outputs as regular files (before: the victim was truncated and overwritten).
shared = os.path.join(work, "shared")
os.makedirs(shared)
os.chmod(shared, 0o777)
victim = os.path.join(work, "victim.txt")
open(victim, "w").write("precious\n")
finals = ["cgprof.json", "cgprof.pb.gz"]
last_pid = int(open("/proc/sys/kernel/ns_last_pid").read())
for name in finals:
    os.symlink(victim, os.path.join(shared, name))
    for pid in range(last_pid + 1, last_pid + 400):
        os.symlink(victim, os.path.join(shared, f"{name}.{pid}.tmp"))
r = run([replay, "--client", "cgprof=top=0,formats=json+pprof", "--output", shared, trace])
check("planted links: the file they point to is untouched", open(victim, "rb").read() == b"precious\n",
      repr(open(victim, "rb").read()[:100]) + r.stderr)
check("planted links: the outputs are regular files in their place",
      all(stat.S_ISREG(os.lstat(os.path.join(shared, n)).st_mode) for n in finals)
      and json.load(open(os.path.join(shared, "cgprof.json")))["format"] == "martini-profile", r.stderr)
check("planted links: no temporary of the client's left",
      all(os.path.islink(os.path.join(shared, f)) for f in files_in(shared) if f.endswith(".tmp")), files_in(shared))
if os.geteuid() == 0:
    # A link of another user's to something that is not a regular file (a device here)
    # is replaced too, never written through.
    other = os.path.join(shared, "calls.txt")
    os.symlink("/dev/null", other)
    os.lchown(other, 65534, 65534)
    r = run([replay, "--client", f"callcount=out={other}", trace])
    check("a link of another user's to a device at the output name is replaced by the output",
          stat.S_ISREG(os.lstat(other).st_mode) and "calls" in open(other).read(), r.stderr)
# One's own link to a FIFO is written through, as the FIFO itself would be (a link of
# root's alike: callcount=out=/dev/stdout).
own_fifo = os.path.join(work, "own.fifo")
os.mkfifo(own_fifo)
own_link = os.path.join(work, "own-link.txt")
os.symlink(own_fifo, own_link)
got = {}


def read_own_fifo():
    with open(own_fifo) as f:
        got["text"] = f.read()


reader = threading.Thread(target=read_own_fifo, daemon=True)
reader.start()
r = run([replay, "--client", f"callcount=out={own_link}", trace], timeout=60)
reader.join(timeout=10)
check("one's own link to a FIFO is written through and stays a link",
      os.path.islink(own_link) and "calls" in got.get("text", ""), f"{r.stderr}\nreceived: {got}")
r = run([replay, "--client", "callcount=out=/dev/stdout", trace])
check("callcount out=/dev/stdout: the table on stdout", "calls" in r.stdout and os.path.islink("/dev/stdout"),
      r.stdout + r.stderr)

# -- %p and %t in clients' output names ------------------------------------------------
p = subprocess.Popen([replay, "--client", f"callcount=out={work}/calls-%p-%t.txt", trace], env=env,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
out, err = p.communicate()
names = [f for f in files_in(work) if f.startswith("calls-")]
check("callcount out=calls-%p-%t.txt: the pid and the start time",
      len(names) == 1 and re.fullmatch(rf"calls-{p.pid}-\d{{8}}-\d{{6}}\.txt", names[0]), f"{names}\n{err}")
p = subprocess.Popen([replay, "--client", f"cgprof=top=0,formats=json,out={work}/cg-%p", trace], env=env,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
out, err = p.communicate()
check("cgprof out=DIR-%p: the pid", os.path.exists(os.path.join(work, f"cg-{p.pid}", "cgprof.json")), err)

# -- martini replay: --output, its own name, --version -------------------------------
d = os.path.join(work, "replay-output")
r = run([martini, "replay", "--client", "cgprof=top=0,formats=json+collapsed", "--output", d, trace])
check("martini replay --output DIR: clients write there (EcSetOutputDirectory)",
      files_in(d) == ["cgprof.collapsed", "cgprof.json"], r.stderr + str(files_in(d)))
# martini convert: the converted file is complete or absent
profile = os.path.join(d, "cgprof.json")
if not sanitized:
    full = os.path.join(work, "convert-full")
    os.makedirs(full)
    target = os.path.join(full, "cg.html")
    r = run([martini, "convert", profile, "--to", "html", "-o", target], expect=1, extra_env=full_disk(full, 1000))
    check("martini convert on a full disk: exit 1, the file named with the cause",
          r.returncode == 1 and f"cannot write '{target}': No space left on device" in r.stderr, r.stderr)
    check("martini convert on a full disk: no partial file, no temporary", files_in(full) == [], files_in(full))
r = run([martini, "convert", profile, "--to", "pprof", "-o", os.path.join(work, "cg.pb.gz")])
check("martini convert with room: written", r.returncode == 0 and os.path.getsize(os.path.join(work, "cg.pb.gz")) > 0,
      r.stderr)
r = run([martini, "replay", "--help"])
check("martini replay --help calls itself `martini replay`", "usage: martini replay --client" in r.stdout
      and "martini-replay" not in r.stdout.split("\n")[0], r.stdout)
r = run([replay, "--help"])
check("martini-replay --help calls itself martini-replay", r.stdout.startswith("usage: martini-replay --client"),
      r.stdout)
r = run([martini, "replay", "--client", "cgprof"], expect=1)
check("martini replay's errors name it", "martini replay: no trace file given" in r.stderr, r.stderr)
r = run([martini, "replay", "--bogus", trace], expect=1)
check("martini replay: unknown option named", "martini replay:" in r.stderr and "--bogus" in r.stderr, r.stderr)
for cmd in [[martini], [martini, "run"], [martini, "report"], [martini, "convert"], [martini, "replay"],
            [martini, "control"], [replay]]:
    r = run(cmd + ["--version"])
    check(f"{' '.join(os.path.basename(c) for c in cmd)} --version",
          r.returncode == 0 and re.match(r"martini[- a-z]* \d+\.\d+\.\d+", r.stdout), r.stdout + r.stderr)
for cmd in ["run", "report", "convert", "replay", "control"]:
    r = run([martini, cmd, "--help"])
    check(f"martini {cmd} --help: usage and options", r.returncode == 0 and r.stdout.startswith(f"usage: martini {cmd}")
          and "--help" in r.stdout and "--version" in r.stdout, r.stdout)
r = run([martini, "run", "--help"])
check("martini run --help lists every bundled client",
      all(c in r.stdout for c in ["cgprof", "heapprof", "threadprof", "callcount", "conformance"]), r.stdout)
r = run([martini, "report", "x.json", "--top", "many"], expect=1)
check("martini report: a bad number named", "martini report:" in r.stderr and "many" in r.stderr, r.stderr)

# -- martini run (under martini-lua: no JVM needed) --------------------------------------
if martini_lua:
    script = os.path.join(work, "args.lua")
    open(script, "w").write('local function f() return 1 end\nfor i = 1, 10 do f() end\n'
                            'print("args: " .. table.concat(arg, " "))\n')
    out = os.path.join(work, "lua-out")
    r = run([martini, "run", "--client", "callcount", "--output", out, "--", "lua", script,
             "--client", "x", "--help", "--", "-o"])
    check("martini run: program arguments untouched, options and -- included",
          r.returncode == 0 and "args: --client x --help -- -o" in r.stdout, r.stdout + r.stderr)

    r = run([martini, "run", "--client", "callcount", "--output", out, "lua", script, "--x", "--", "y"])
    check("martini run without --: the program's arguments untouched", "args: --x -- y" in r.stdout, r.stdout + r.stderr)
    r = run([martini, "run", "--bogus", "--", "lua", script], expect=1)
    check("martini run: an unknown option of its own named", "unknown option '--bogus'" in r.stderr
          and "args:" not in r.stdout, r.stderr)

    # The output directory is checked before the program starts.
    not_dir = os.path.join(work, "a-file")
    open(not_dir, "w").write("x")
    r = run([martini, "run", "--client", "callcount", "--output", not_dir, "--", "lua", script], expect=1)
    check("martini run: an output directory that cannot be made, before the program starts",
          "cannot create the output directory" in r.stderr and not_dir in r.stderr and "args:" not in r.stdout,
          r.stdout + r.stderr)
    if not sanitized:
        ro = os.path.join(work, "read-only")
        os.makedirs(ro)
        os.chmod(ro, 0o555)
        demote = None
        if os.geteuid() == 0:
            def demote():
                os.setgid(65534)
                os.setuid(65534)
        r = run([martini, "run", "--client", "callcount", "--output", ro, "--", "lua", script], expect=1,
                preexec_fn=demote)
        check("martini run: an unwritable output directory refused before the program starts, with the cause",
              f"cannot write to the output directory '{ro}': Permission denied" in r.stderr
              and "program was not started" in r.stderr and "args:" not in r.stdout, r.stdout + r.stderr)

    # A typo in a bundled client's options: caught before the program starts (its
    # output absent), with the name it was meant to be.
    r = run([martini, "run", "--client", "cgprof=tpo=5", "--output", out, "--", "lua", script], expect=1)
    check("martini run: a client option's typo, before the program starts",
          "client 'cgprof': unknown option 'tpo' (did you mean 'top'?)" in r.stderr and "args:" not in r.stdout,
          r.stdout + r.stderr)
    for name in ("callcount", "heapprof", "threadprof", "conformance"):
        r = run([martini, "run", "--client", f"{name}=bogus-option", "--output", out, "--", "lua", script], expect=1)
        check(f"martini run: {name}'s unknown option, before the program starts",
              f"client '{name}': unknown option 'bogus-option'" in r.stderr and "args:" not in r.stdout,
              r.stdout + r.stderr)
    # No client loaded (one that fails in MPICL_Instantiate, which no check before the run
    # can know): said last, exit status non-zero.
    failing = os.path.join(build, "martini-core", "tests", "libfailing_client.so")
    r = run([martini, "run", "--client", failing, "--output", out, "--", "lua", script], expect=None)
    last = r.stderr.strip().split("\n")[-1]
    check("martini run: no client loaded is an error, said last",
          r.returncode != 0 and "not produced" in last and "no client was loaded" in r.stderr
          and "libfailing_client.so" in r.stderr, r.stderr)
    # One of two clients refused: the profile asked for is incomplete.
    r = run([martini, "run", "--client", failing, "--client", "callcount", "--output", out, "--", "lua", script],
            expect=1)
    check("martini run: one of two clients not loaded is an error, said last",
          "only 1 of 2 clients" in r.stderr and "not produced" in r.stderr.strip().split("\n")[-1], r.stderr)

    if not sanitized:
        # A full disk under martini run: the failed files are not listed, the exit status says so.
        out = os.path.join(work, "lua-full")
        r = run([martini, "run", "--client", "cgprof=top=0", "--output", out, "--", "lua", script], expect=1,
                extra_env=full_disk(out, 2000))
        listed = re.findall(r"^  (\S+)\s+\d+ bytes$", r.stderr, re.M)
        check("martini run on a full disk: exit 1, the missing files named last",
              "not written:" in r.stderr and "No space left on device" in r.stderr
              and "not produced" in r.stderr.strip().split("\n")[-1], r.stderr)
        check("martini run on a full disk: only complete files listed",
              all(os.path.exists(os.path.join(out, f)) and not f.endswith(".tmp") for f in listed)
              and len(listed) == len(files_in(out)), f"{listed} {files_in(out)}\n{r.stderr}")

    # --output with %p: the started program's pid, known after fork.
    r = run([martini, "run", "--client", "callcount", "--output", os.path.join(work, "run-%p-%t"), "--", "lua",
             script])
    m = re.search(r"martini: (?:outputs in|no output files were written to) (\S*run-(\d+)-\d{8}-\d{6})", r.stderr)
    check("martini run --output DIR-%p-%t: expanded for the program", m and os.path.isdir(m.group(1))
          and int(m.group(2)) != os.getpid(), r.stderr)

shutil.rmtree(work, ignore_errors=True)
check.finish()
