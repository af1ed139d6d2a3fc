#!/usr/bin/env python3
"""martini diff (docs/formats.md#comparing-two-profiles): two profiles of the shop
trace, the second with Warehouse.take made slower (slow_trace.py: 5 us more per call,
120 calls), give a table with take on top (+600 us), and diff.html, a differential
flame graph that headless Chromium opens, take coloured red and the unchanged methods
grey. Bad input (a missing file, a file that is not a profile, profiles without the
metric in common, an unknown --metric) is one line on stderr and exit 1. Also: go
tool pprof -diff_base on the two pprof files puts take on top (when go is installed).

usage: diff_test.py MARTINI MARTINI_REPLAY LIBCGPROF_SO SOURCE_ROOT
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import chromium  # noqa: E402
from testlib import Checks, run  # noqa: E402

TAKE = "com.example.shop.Warehouse.take"
TAKE_ID = 130  # its method id in examples/traces/shop.jsonl


def profile(replay, cgprof, trace, out, options=""):
    r = run([replay, "--client", f"{cgprof}=top=0,out={out},formats=json+pprof{options}", trace])
    return r.returncode == 0, os.path.join(out, "cgprof.json")


def table_rows(stdout):
    """The table's data rows, split into cells."""
    return [line.split() for line in stdout.splitlines()[2:] if line.strip()]


def check_table(check, martini, base, new, tmp):
    out = os.path.join(tmp, "out")
    r = run([martini, "diff", base, new, "--output", out, "--top", "5"])
    check("martini diff succeeds", r.returncode == 0, r.stderr)
    rows = table_rows(r.stdout)
    check("the header names the metric and both wholes",
          r.stdout.startswith("diff of self wall per method: base 995.0 us, new 1595.0 us (+600.0 us, x1.60)"), r.stdout)
    check("--top 5: five rows", len(rows) == 5, r.stdout)
    check("the slower method is on top: base, new, delta, ratio",
          bool(rows) and rows[0] == [TAKE, "34.0", "634.0", "+600.0", "x18.65"], r.stdout)
    check("the unchanged methods follow with no change", all(row[3] == "0" and row[4] == "x1.00" for row in rows[1:]), r.stdout)
    header = r.stdout.splitlines()[1].split() if len(r.stdout.splitlines()) > 1 else []
    check("columns: method, base, new, delta, ratio", header == ["method", "base", "us", "new", "us", "delta", "us", "ratio"],
          str(header))
    r = run([martini, "diff", base, new, "--metric", "calls", "--top", "1"])
    check("--metric calls: no change in calls", table_rows(r.stdout)[0][3:] == ["0", "x1.00"] if r.stdout else False, r.stdout)
    html = os.path.join(out, "diff.html")
    check("diff.html written", os.path.getsize(html) > 0 if os.path.exists(html) else False)
    return html


def check_page(check, html):
    if not chromium.available():
        print("SKIP: chromium is not installed (diff.html was not opened)")
        return
    dom, seconds, log = chromium.dump_dom(f"file://{html}#selftest")
    check("chromium opened diff.html", bool(dom), log)
    colours = dict(re.findall(r'data-frame="([^"]*)" style="background-color:([^;]*);', dom))
    check("the slower method is red", colours.get(TAKE, "").startswith("hsl(0,80%"), str(colours))
    check("an unchanged method is grey", colours.get("com.example.shop.OrderService.validate") == "hsl(0,0%,88%)", str(colours))
    first = re.search(r'<tr class="top-row[^"]*" data-f="\d+"><td class="rank">1</td><td class="name">([^<]*)</td>'
                      r'<td>([^<]*)</td><td>([^<]*)</td><td class="up">([^<]*)</td>', dom)
    check("the page's table: take first, base and new, delta red",
          first is not None and first.groups() == (TAKE, "0.034 ms", "0.634 ms", "+0.600 ms"), first.groups() if first else dom[:0])
    note = chromium.element_text(dom, "h-diff") or ""
    check("the page says what it compares", "Comparing wall: base" in note and "(+0.600 ms" in note, note)
    summary = json.loads(chromium.element_text(dom, "selftest") or "{}")
    check("the page's self-test ran", summary.get("rows") == 10, str(summary))


def check_errors(check, martini, replay, cgprof, base, new, source_root, tmp):
    def fails(name, args, words):
        r = run([martini, "diff"] + args, expect=1)
        lines = r.stderr.strip().splitlines()
        check(f"{name}: exit 1, one line saying so", r.returncode == 1 and len(lines) == 1 and words in r.stderr, r.stderr)
    fails("a missing file", [os.path.join(tmp, "missing.json"), new], "cannot read")
    fails("not a profile", [base, os.path.join(source_root, "examples/traces/shop.jsonl")], "is not a Martini profile")
    ok, counts = profile(replay, cgprof, os.path.join(source_root, "examples/traces/shop.jsonl"),
                         os.path.join(tmp, "counts"), ",counts")
    fails("metrics not in common", [counts, new], "no metric 'wall' in the base profile; it has calls")
    fails("an unknown --metric", [base, new, "--metric", "cpu"], "no metric 'cpu' in the new profile; it has calls, wall")
    blocked = os.path.join(tmp, "file")
    open(blocked, "w").close()
    fails("an output directory that cannot be made", [base, new, "--output", os.path.join(blocked, "dir")],
          "cannot create the output directory")


def check_pprof(check, base, new):
    go = shutil.which("go")
    if go is None:
        print("SKIP: go is not installed (go tool pprof -diff_base not checked)")
        return
    r = subprocess.run([go, "tool", "pprof", "-top", "-diff_base", base, new], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PPROF_TMPDIR=os.path.dirname(new)))
    top = [line for line in r.stdout.splitlines() if line.strip().endswith(TAKE)]
    check("go tool pprof -top -diff_base: take +600us flat", r.returncode == 0 and top and top[0].split()[0] == "600us",
          r.stdout + r.stderr)


def main():
    martini, replay, cgprof, source_root = sys.argv[1:5]
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        shop = os.path.join(source_root, "examples/traces/shop.jsonl")
        slow = os.path.join(tmp, "slow.jsonl")
        subprocess.run([sys.executable, os.path.join(source_root, "tests/report/slow_trace.py"), shop, slow, str(TAKE_ID),
                        "5000"], check=True)
        ok1, base = profile(replay, cgprof, shop, os.path.join(tmp, "base"))
        ok2, new = profile(replay, cgprof, slow, os.path.join(tmp, "new"))
        check("two profiles", ok1 and ok2)
        html = check_table(check, martini, base, new, tmp)
        check_page(check, html)
        check_errors(check, martini, replay, cgprof, base, new, source_root, tmp)
        check_pprof(check, base.replace(".json", ".pb.gz"), new.replace(".json", ".pb.gz"))
    check.finish()


if __name__ == "__main__":
    main()
