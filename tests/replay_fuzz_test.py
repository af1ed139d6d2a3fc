#!/usr/bin/env python3
"""martini-replay on mutated traces: every run ends by itself with 0, 1 or 2 (a bad
record named), never by a signal or a hang. The mutations (a deterministic seed): a
line cut short, dropped or repeated, a field removed or given another type, numbers
made huge, negative or fractional, bytes flipped.

usage: replay_fuzz_test.py MARTINI_REPLAY SOURCE_ROOT [RUNS]      (default: 400; 10000 in the reliability figures)
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks  # noqa: E402

replay, source = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 400
lines = open(os.path.join(source, "examples", "traces", "shop.jsonl")).read().splitlines()
rng = random.Random(20261125)
work = tempfile.mkdtemp(prefix="replay-fuzz-")
check = Checks()
ODD = [None, True, -1, 0, 2**64, 2**70, -2**63, 1e400, 1.5, "", "x" * 300, [], {}, "\u0000"]


def mutate_record(line):
    try:
        rec = json.loads(line)
    except ValueError:
        return line
    if not rec:
        return line
    key = rng.choice(list(rec))
    choice = rng.random()
    if choice < 0.3:
        del rec[key]
    else:
        rec[key] = rng.choice(ODD)
    try:
        return json.dumps(rec)
    except (ValueError, OverflowError):
        return json.dumps(rec, allow_nan=True)


def mutate(trace):
    t = list(trace)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(t))
        kind = rng.randrange(5)
        if kind == 0:
            t[i] = t[i][: rng.randrange(len(t[i]) + 1)]
        elif kind == 1:
            del t[i]
        elif kind == 2:
            t.insert(i, t[i])
        elif kind == 3:
            t[i] = mutate_record(t[i])
        else:
            b = bytearray(t[i].encode())
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
            t[i] = b.decode("utf-8", "replace")
    return t


bad = []
for n in range(runs):
    path = os.path.join(work, "t.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(mutate(lines)) + "\n")
    try:
        r = subprocess.run([replay, "--client", "callcount=top=3", "--client", "cgprof=top=0,formats=json",
                            "--output", os.path.join(work, "out"), path], capture_output=True, timeout=30)
        if r.returncode not in (0, 1, 2):
            bad.append((n, f"exit {r.returncode}", r.stderr[-300:].decode("utf-8", "replace")))
            shutil.copy(path, os.path.join(work, f"bad-{n}.jsonl"))
    except subprocess.TimeoutExpired:
        bad.append((n, "hung", ""))
check(f"{runs} mutated traces: each ends with 0, 1 or 2", not bad, "\n".join(map(str, bad[:5])))
if not bad:
    shutil.rmtree(work, ignore_errors=True)
else:
    print(f"the traces are kept in {work}")
check.finish()
