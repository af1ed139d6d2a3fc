#!/usr/bin/env python3
"""`martini report` and `martini convert` on profiles that are not what they should be:
numbers that overflow (1e400 ended in "terminate called ... number overflow" and
SIGABRT), huge integers, negative counts, wrong types, truncated files, then 300 random
mutations of a real profile written by cgprof (a fixed seed). Each run must end with
exit status 0 or 1, never by a signal, and a failure must be one line naming the
problem.

usage: report_input_test.py BUILD_DIR SOURCE_ROOT
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

build, source = sys.argv[1:3]
martini = os.path.join(build, "tools", "martini")
replay = os.path.join(build, "tools", "martini-replay")
env = dict(os.environ, MARTINI_CLIENT_PATH=os.path.join(build, "clients"))
env.pop("MARTINI_STATUS_FILE", None)
work = tempfile.mkdtemp(prefix="martini-report-input-")
check = Checks()


def run(args, expect=0, **kwargs):
    """Runs args; the output text even where a profile's bytes are not UTF-8."""
    r = subprocess.run(args, capture_output=True, text=True, errors="replace", **kwargs)
    if expect is not None and r.returncode != expect:
        print(f"command {args} exited {r.returncode} (expected {expect})\n{r.stdout}{r.stderr}")
    return r


r = run([replay, "--client", "cgprof=top=0,formats=json", "--output", work,
         os.path.join(source, "examples", "traces", "shop.jsonl")], env=env)
good_path = os.path.join(work, "cgprof.json")
good_text = open(good_path).read()
good = json.loads(good_text)
check("cgprof wrote a profile to start from", good["format"] == "martini-profile", r.stderr)

FORMATS = ["collapsed", "chrome", "pprof", "html", "json"]


def commands(path, n):
    """martini report, and martini convert to one of the formats (in turn)."""
    out = os.path.join(work, "converted")
    return [[martini, "report", path], [martini, "convert", path, "--to", FORMATS[n % len(FORMATS)], "-o", out]]


def ended_well(r, expect_error):
    """Exit 0 or 1, never a signal; an error is one line `martini report|convert: ...`."""
    if r.returncode not in (0, 1) or "terminate called" in r.stderr:
        return False
    if r.returncode == 1:
        lines = r.stderr.strip().split("\n")
        return len(lines) == 1 and lines[0].startswith(("martini report: ", "martini convert: "))
    return not expect_error


def profile_with(change):
    """The good profile with `change(p)` applied, as text."""
    p = json.loads(good_text)
    change(p)
    return json.dumps(p)


def set_path(p, path, value):
    target = p
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def raw(text, key, value):
    """The good profile's text with the value of `"key":` at its first use replaced by `value` (JSON text)."""
    p = json.loads(good_text)
    p[key] = "@@"
    return json.dumps(p).replace('"@@"', value, 1)


first_node = ["threads", 0, "nodes", 1]
bad = {
    "version 1e400": '{"format":"martini-profile","version":1e400}',
    "version -1e400": '{"format":"martini-profile","version":-1e400}',
    "version a huge integer": '{"format":"martini-profile","version":123456789012345678901234567890}',
    "version a string": '{"format":"martini-profile","version":"1"}',
    "version nested deeply": '{"format":"martini-profile","version":' + "[" * 100000 + "]" * 100000 + "}",
    "periodNs 1e400": raw(good_text, "periodNs", "1e400"),
    "periodNs 2^64": raw(good_text, "periodNs", "18446744073709551616"),
    "a count of 1e400": good_text.replace('"nodes":[[-1,-1,0,0],[0,0,', '"nodes":[[-1,-1,0,0],[0,0,1e400,', 1),
    "a count of 2^64": profile_with(lambda p: set_path(p, first_node + [2], 18446744073709551616)),
    "a negative count": profile_with(lambda p: set_path(p, first_node + [2], -5)),
    "a fractional count": profile_with(lambda p: set_path(p, first_node + [2], 1.5)),
    "a count that is a string": profile_with(lambda p: set_path(p, first_node + [2], "7")),
    "a parent of 2^64": profile_with(lambda p: set_path(p, first_node + [0], 18446744073709551616)),
    "a frame of 2^32": profile_with(lambda p: set_path(p, first_node + [1], 4294967296)),
    "a frame line of 2^40": profile_with(lambda p: set_path(p, ["frames", 0, "line"], 2 ** 40)),
    "a frame line that is negative": profile_with(lambda p: set_path(p, ["frames", 0, "line"], -3)),
    "a span frame of 2^32": profile_with(lambda p: p.update(spans=[[1, 4294967296, 0, 1, "x"]])),
    "a thread id of 1e400": raw(good_text, "threadNames", '[{"id":1e400,"name":"x"}]'),
    "a thread name that is a number": profile_with(lambda p: p.update(threadNames=[{"id": 1, "name": 5}])),
    "a thread id that is a string": profile_with(lambda p: p.update(threadNames=[{"id": "1", "name": "x"}])),
    "threadNames not an array": profile_with(lambda p: p.update(threadNames=7)),
    "a counter of 1e400": raw(good_text, "counters", '{"events":1e400}'),
    "a counter that is an object": profile_with(lambda p: p.update(counters={"events": {}})),
    "metrics a string": profile_with(lambda p: p.update(metrics="calls")),
    "frames holding a number": profile_with(lambda p: p.update(frames=[1])),
    "threads an object": profile_with(lambda p: p.update(threads={})),
    "merged an array": profile_with(lambda p: p.update(merged=[])),
    "a node row that is a string": profile_with(lambda p: set_path(p, first_node, "x")),
    "callLines of 1e400": profile_with(lambda p: p["merged"].update(
        callLines=[0] * len(p["merged"]["nodes"]))).replace('"callLines": [0', '"callLines": [1e400', 1),
    "a top-level array": "[1, 2]",
    "null": "null",
    "an empty file": "",
    "half a profile": good_text[: len(good_text) // 2],
    "a profile cut before its last brace": good_text.rstrip()[:-1],
    "an open brace": "{",
    "not UTF-8": good_text.replace("Main.main", "Main.\xff\xfe", 1).encode("latin-1", "replace").decode("latin-1"),
}
for name, text in bad.items():
    path = os.path.join(work, "bad.json")
    with open(path, "w", encoding="latin-1", errors="replace") as f:
        f.write(text)
    for args in commands(path, 0):
        r = run(args, expect=None, env=env)
        check(f"{args[1]}, {name}: exit 1 with one line naming the problem", r.returncode == 1 and ended_well(r, True),
              f"exit {r.returncode}\n{r.stderr[-2000:]}")

# -- 300 random mutations of the real profile -----------------------------------------
ODD_VALUES = ["1e400", "-1e400", "18446744073709551616", "99999999999999999999999", "-1", "-0", "0.5", "1e-400",
              "null", "true", '""', '"x"', "[]", "{}", "[-1,-1]", "4294967295", "4294967296", "2147483648"]


def mutate(rng, text):
    """One random change: a token replaced by an odd value, bytes flipped, deleted or
    repeated, the file cut short, or a field of the parsed profile given an odd value."""
    kind = rng.randrange(5)
    if kind == 0:  # a number or a string token replaced
        spots = [i for i, c in enumerate(text) if c in "0123456789\"" and i > 0 and text[i - 1] in ":,["]
        i = rng.choice(spots)
        j = i + 1
        while j < len(text) and text[j] not in ",]}":
            j += 1
        return text[:i] + rng.choice(ODD_VALUES) + text[j:]
    if kind == 1:  # bytes changed
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.choice(b'{}[],:"-0123456789.eE \\x\x00\xff')
        return b.decode("latin-1")
    if kind == 2:  # a stretch deleted or repeated
        i = rng.randrange(len(text))
        j = min(len(text), i + rng.randint(1, 200))
        return text[:i] + text[j:] if rng.random() < 0.5 else text[:j] + text[i:j] + text[j:]
    if kind == 3:  # cut short
        return text[: rng.randrange(len(text))]
    p = json.loads(text)  # a field of the parsed profile given an odd value
    spots = []

    def walk(v, path):
        spots.append(path)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, path + [k])
        elif isinstance(v, list):
            for k, x in enumerate(v[:6]):
                walk(x, path + [k])

    walk(p, [])
    path = rng.choice(spots[1:])
    set_path(p, path, "@@")
    return json.dumps(p).replace('"@@"', rng.choice(ODD_VALUES), 1)


rng = random.Random(20240611)
signalled = errors_unclear = 0
detail = []
for n in range(300):
    text = mutate(rng, good_text)
    path = os.path.join(work, "mutated.json")
    with open(path, "w", encoding="latin-1", errors="replace") as f:
        f.write(text)
    for args in commands(path, n):
        r = run(args, expect=None, env=env)
        if not ended_well(r, False):
            if r.returncode not in (0, 1):
                signalled += 1
            else:
                errors_unclear += 1
            if len(detail) < 5:
                keep = os.path.join(work, f"failing-{n}.json")
                shutil.copy(path, keep)
                detail.append(f"{' '.join(args[1:3])} (mutation {n}, kept in {keep}): exit {r.returncode}\n"
                              f"{r.stderr[-600:]}")
check("300 mutations: every run ends with exit status 0 or 1, never a signal", signalled == 0,
      f"{signalled} ended otherwise\n" + "\n".join(detail))
check("300 mutations: every error is one line naming the problem", errors_unclear == 0,
      f"{errors_unclear} unclear\n" + "\n".join(detail))

if check.failed == 0:
    shutil.rmtree(work, ignore_errors=True)
check.finish()
