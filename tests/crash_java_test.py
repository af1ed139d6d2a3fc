#!/usr/bin/env python3
"""A client that crashes in a handler ends the JVM (in-process clients cannot be isolated
from a crash); `martini run` then names the client whose code was on the crashing
thread, from the JVM's fatal error log, and exits non-zero. (abort() in a client writes
no error log: the JVM does not catch SIGABRT; martini then gives the exit status alone.)

usage: crash_java_test.py MARTINI_BUILD_DIR SHOP_CLASSES CRASHING_CLIENT
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

build, classes, crashing = (os.path.abspath(a) for a in sys.argv[1:4])
martini = os.path.join(build, "tools", "martini")
check = Checks()

for how in ("after=500",):
    work = tempfile.mkdtemp(prefix="crash-test-")
    r = subprocess.run([martini, "run", "--client", "callcount=out=/dev/null", "--client", f"{crashing}={how}",
                        "--output", os.path.join(work, "out"), "--", "java", "-XX:-CreateCoredumpOnCrash",
                        "-cp", classes, "shop.Shop"], capture_output=True, text=True, cwd=work, timeout=120)
    check(f"{how}: martini exits non-zero", r.returncode != 0, r.stderr[-2000:])
    check(f"{how}: the crashing client is named",
          "the JVM crashed in the code of client" in r.stderr and os.path.basename(crashing) in r.stderr,
          r.stderr[-3000:])
    shutil.rmtree(work, ignore_errors=True)

check.finish()
