#!/usr/bin/env python3
"""The views people use, end to end (docs/formats.md): collapsed stacks per thread
(`martini convert --to collapsed --per-thread`) of the shop trace's profile.

usage: views_test.py MARTINI MARTINI_REPLAY LIBCGPROF_SO SOURCE_ROOT
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from testlib import Checks, run  # noqa: E402


def thread_totals(profile, metric):
    """Each thread's total of `metric`, by name."""
    k = [m["name"] for m in profile["metrics"]].index(metric)
    return {t["name"]: sum(n[2 + k] for n in t["nodes"]) for t in profile["threads"]}


def check_per_thread(check, martini, profile_path, tmp):
    profile = json.load(open(profile_path))
    out = os.path.join(tmp, "threads.collapsed")
    r = run([martini, "convert", profile_path, "--to", "collapsed", "--per-thread", "-o", out])
    check("convert --to collapsed --per-thread", r.returncode == 0, r.stderr)
    lines = open(out).read().splitlines() if os.path.exists(out) else []
    sums = {}
    for line in lines:
        stack, value = line.rsplit(" ", 1)
        sums[stack.split(";")[0]] = sums.get(stack.split(";")[0], 0) + int(value)
    want = thread_totals(profile, profile["defaultMetric"])
    check("each line's first frame is its thread", set(sums) == set(want) == {"main", "worker-1"}, f"{sums} {want}")
    check("each thread's lines sum to its total", sums == want, f"{sums} {want}")
    check("a thread's methods follow it",
          any(line.startswith("worker-1;com.example.shop.Main.worker;") for line in lines), "\n".join(lines[:5]))
    merged = os.path.join(tmp, "merged.collapsed")
    run([martini, "convert", profile_path, "--to", "collapsed", "-o", merged])
    first = {line.rsplit(" ", 1)[0].split(";")[0] for line in open(merged).read().splitlines()} if os.path.exists(merged) else set()
    check("without --per-thread the lines start with methods", first == {"com.example.shop.Main.main",
                                                                           "com.example.shop.Main.worker"}, str(first))
    r = run([martini, "convert", profile_path, "--to", "html", "--per-thread"], expect=1)
    check("--per-thread with another format: exit 1, said",
          r.returncode == 1 and "--per-thread is for --to collapsed only" in r.stderr, r.stderr)


def main():
    martini, replay, cgprof, source_root = sys.argv[1:5]
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        r = run([replay, "--client", f"{cgprof}=top=0,out={tmp},formats=json+html",
                 os.path.join(source_root, "examples/traces/shop.jsonl")])
        check("martini-replay with cgprof", r.returncode == 0, r.stderr)
        check_per_thread(check, martini, os.path.join(tmp, "cgprof.json"), tmp)
    check.finish()


if __name__ == "__main__":
    main()
