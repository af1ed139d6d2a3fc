"""Headless Chromium for the report tests: the DOM a page has after its scripts ran
(flags as tests/html_report_test.sh uses them)."""
import os
import shutil
import subprocess
import tempfile
import time


def available():
    return shutil.which("chromium") is not None


def dump_dom(url, timeout=60, budget_ms=5000):
    """Returns (dom, seconds, log): the DOM after the page's scripts ran ("" when
    Chromium failed or took longer than `timeout`) and the wall time it took."""
    with tempfile.TemporaryDirectory() as profile_dir:
        args = ["timeout", str(timeout), shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile_dir}",
                f"--virtual-time-budget={budget_ms}", "--dump-dom", url]
        start = time.monotonic()
        r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, HOME=profile_dir))
        seconds = time.monotonic() - start
    return (r.stdout if r.returncode == 0 else ""), seconds, r.stderr[-2000:]


def element_text(dom, element_id):
    """The text of the element with this id (HTML-unescaped), or None."""
    import html
    import re
    m = re.search(r'<(\w+)[^>]*\bid="' + re.escape(element_id) + r'"[^>]*>(.*?)</\1>', dom, re.S)
    return None if m is None else html.unescape(re.sub(r"<[^>]*>", "", m.group(2)))
