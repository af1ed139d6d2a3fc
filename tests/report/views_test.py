#!/usr/bin/env python3
"""The views people use, end to end (docs/formats.md): collapsed stacks per thread
(`martini convert --to collapsed --per-thread`) of the shop trace's profile, and the
HTML report's callers view in headless Chromium: asked for by the page's address
(#view=callers, &method=NAME) and toggled by the page's self-test.

usage: views_test.py MARTINI MARTINI_REPLAY LIBCGPROF_SO SOURCE_ROOT
"""
import html
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import chromium  # noqa: E402
from testlib import Checks, run  # noqa: E402

SHOP = "com.example.shop."


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


def drawn(dom):
    """(frame, row) of each frame the flame graph drew, in order."""
    return [(html.unescape(f), int(top) // 18)
            for f, top in re.findall(r'<div class="frame[^"]*" data-i="\d+" data-frame="([^"]*)" style="[^"]*top:(\d+)px', dom)]


def check_callers(check, page):
    if not chromium.available():
        print("SKIP: chromium is not installed (the callers view was not opened)")
        return
    # Who calls Warehouse.take: Inventory.reserve, placeOrder, then both threads' roots.
    dom, _, log = chromium.dump_dom(f"file://{page}#view=callers&method={SHOP}Warehouse.take")
    check("chromium opened the callers view", bool(dom), log)
    check("the page honours #view=callers&method=NAME",
          f'data-view="callers" data-focus="{SHOP}Warehouse.take"' in dom, re.findall(r'<div id="flame"[^>]*>', dom))
    frames = drawn(dom)
    want = [("all", 0), (SHOP + "Warehouse.take", 1), (SHOP + "Inventory.reserve", 2), (SHOP + "OrderService.placeOrder", 3),
            (SHOP + "Main.main", 4), (SHOP + "Main.worker", 4)]
    check("callers below their callee, down to the roots", frames == want, f"{frames}")
    # Without a method: every method by self, each over its callers.
    dom, _, log = chromium.dump_dom(f"file://{page}#view=callers")
    check("the page honours #view=callers", 'data-view="callers" data-focus=""' in dom, log)
    first = {f for f, row in drawn(dom) if row == 1}
    check("bottom-up: the ten methods on the first row", len(first) == 10 and SHOP + "Warehouse.take" in first, str(first))
    check("bottom-up: a leaf method over its caller",
          (SHOP + "Warehouse.take", 1) in drawn(dom) and (SHOP + "Inventory.reserve", 2) in drawn(dom))
    # The self-test toggles the view on the top method and back.
    dom, _, log = chromium.dump_dom(f"file://{page}#selftest")
    summary = json.loads(chromium.element_text(dom, "selftest") or "{}")
    callers = summary.get("callers") or {}
    check("the self-test drew the callers of the top method",
          callers.get("of") == SHOP + "Main.main" and callers.get("depth1") == [SHOP + "Main.main"], str(summary))
    check("and went back to the callees", 'data-view="callees"' in dom, re.findall(r'<div id="flame"[^>]*>', dom))


def main():
    martini, replay, cgprof, source_root = sys.argv[1:5]
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        r = run([replay, "--client", f"{cgprof}=top=0,out={tmp},formats=json+html",
                 os.path.join(source_root, "examples/traces/shop.jsonl")])
        check("martini-replay with cgprof", r.returncode == 0, r.stderr)
        check_per_thread(check, martini, os.path.join(tmp, "cgprof.json"), tmp)
        check_callers(check, os.path.join(tmp, "cgprof.html"))
    check.finish()


if __name__ == "__main__":
    main()
