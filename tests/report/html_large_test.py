#!/usr/bin/env python3
"""The HTML report of a large profile stays light (docs/formats.md#html-report): a
synthetic profile of more than a million calling contexts (big_profile.py: two
threads and their merge) converted with `martini convert --to html` gives a page of a
few MB that says what it pruned, whose top table still counts every context, and
that headless Chromium opens within a time budget. The JSON profile is unchanged.

usage: html_large_test.py MARTINI SOURCE_ROOT
Without chromium the page is checked but not opened.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import chromium  # noqa: E402
from testlib import Checks, run  # noqa: E402

MAX_HTML_BYTES = 5 * 1024 * 1024
MAX_OPEN_SECONDS = 45


def main():
    martini, source_root = sys.argv[1:3]
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.json")
        subprocess.run([sys.executable, os.path.join(source_root, "tests/report/big_profile.py"), big, "350000", "2"],
                       check=True)
        html = os.path.join(tmp, "big.html")
        r = run([martini, "convert", big, "--to", "html", "-o", html])
        check("convert --to html succeeds", r.returncode == 0, r.stderr)
        check("convert says what it pruned", "calling contexts pruned" in r.stderr, r.stderr)
        size = os.path.getsize(html) if os.path.exists(html) else 0
        check(f"the page is under {MAX_HTML_BYTES} bytes", 0 < size < MAX_HTML_BYTES, f"{size} bytes")
        page = open(html, encoding="utf-8").read() if size else ""
        m = re.search(r'<script id="martini-html" type="application/json">(.*?)</script>', page, re.S)
        extra = json.loads(m.group(1)) if m else {}
        check("the page's data counts the contexts", extra.get("contexts", 0) > 1000000, str(extra)[:300])
        kept = extra.get("contexts", 0) - extra.get("pruned", 0)
        check("at most the node budget (50,000) is kept", 0 < kept <= 50000, f"kept {kept}")
        # The top table's first row is the method with the largest self wall time,
        # from every context (martini report reads the whole JSON).
        r = run([martini, "report", big, "--top", "1", "--metric", "wall"])
        top = r.stdout.splitlines()[2].split()[0] if len(r.stdout.splitlines()) > 2 else "?"
        if not chromium.available():
            print("SKIP: chromium is not installed (the page was not opened)")
            check.finish()
        dom, seconds, log = chromium.dump_dom(f"file://{html}", timeout=120)
        check("chromium opened the page", bool(dom), log)
        print(f"chromium: {seconds:.1f} s (with its start)")
        check(f"chromium opened it within {MAX_OPEN_SECONDS} s", seconds < MAX_OPEN_SECONDS, f"{seconds:.1f} s")
        note = chromium.element_text(dom, "h-pruned") or ""
        check("the page shows the pruning note", "Pruned to stay light" in note and "calling contexts" in note, note)
        check("the note is visible", re.search(r'id="h-pruned"[^>]*\shidden', dom) is None)
        check("the flame graph has a (N pruned) frame", re.search(r'data-frame="\([0-9,]+ pruned\)"', dom) is not None)
        dom, seconds, log = chromium.dump_dom(f"file://{html}#selftest", timeout=120)
        summary = chromium.element_text(dom, "selftest") or "{}"
        check("the self-test ran", json.loads(summary).get("rows", 0) == 50, summary)
        first = re.search(r'<tr class="top-row[^"]*" data-f="\d+"><td class="rank">1</td><td class="name"[^>]*>([^<]*)<', dom)
        check("the top table's first method is martini report's", first is not None and first.group(1) == top,
              f"page: {first.group(1) if first else None}, martini report: {top}")
    check.finish()


if __name__ == "__main__":
    main()
