#!/usr/bin/env bash
# cgprof's self-contained HTML report renders in headless Chromium: the flame graph
# shows the shop trace's methods, and the page's #selftest hook (search, zoom, top
# table) reports sane numbers. Leaves a screenshot for people to look at.
# With LIBHEAPPROF_SO, also heapprof's allocation view (bytes, no calls column).
# usage: html_report_test.sh MARTINI_REPLAY LIBCGPROF_SO SOURCE_ROOT OUTPUT_DIR [LIBHEAPPROF_SO]
# Exits 77 (Meson's skip) when chromium is not installed.
set -euo pipefail

replay=$1
cgprof=$2
source_root=$3
out_dir=$4

tmp=$(mktemp -d)
profile_dir=$(mktemp -d)
trap 'rm -rf "$tmp" "$profile_dir"' EXIT

"$replay" --client "$cgprof=top=0,out=$tmp,formats=html+json" "$source_root/examples/traces/shop.jsonl"
for f in cgprof.html cgprof.json; do
    [[ -s $tmp/$f ]] || { echo "FAIL: $tmp/$f was not written"; exit 1; }
done

chromium=$(command -v chromium || true)
if [[ -z $chromium ]]; then
    echo "SKIP: chromium is not installed"
    exit 77
fi

chrome() {
    timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile_dir" --virtual-time-budget=5000 "$@" 2>"$tmp/chromium.log"
}

url="file://$tmp/cgprof.html#selftest"
chrome --dump-dom "$url" >"$tmp/dom.html" || { cat "$tmp/chromium.log"; echo "FAIL: chromium --dump-dom failed"; exit 1; }

source "$(dirname "$0")/checks.sh"

for name in com.example.shop.OrderService.placeOrder com.example.shop.Main.main; do
    if grep -qF "data-frame=\"$name\"" "$tmp/dom.html"; then
        echo "ok: flame graph has $name"
    else
        fail "no element with data-frame=\"$name\" in the DOM"
    fi
done

# The self-test's JSON summary, from <pre id="selftest">...</pre> (HTML-unescaped).
summary=$(sed -n 's:.*<pre id="selftest"[^>]*>\([^<]*\)</pre>.*:\1:p' "$tmp/dom.html" |
          sed -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&quot;/"/g' -e 's/&amp;/\&/g')
if [[ -z $summary ]]; then
    fail "no self-test summary in the DOM"
else
    echo "self-test: $summary"
    number() { grep -o "\"$1\":[0-9]*" <<<"$summary" | head -n1 | cut -d: -f2; }
    frames=$(number frames); matches=$(number matches); rows=$(number rows)
    zoomed=$(grep -o '"zoomed":"[^"]*"' <<<"$summary" | head -n1 | cut -d: -f2- | tr -d '"')
    [[ -n $frames && $frames -gt 5 ]] || fail "frames=${frames:-?}, want > 5"
    [[ -n $matches && $matches -ge 1 ]] || fail "matches=${matches:-?}, want >= 1"
    [[ -n $rows && $rows -ge 5 ]] || fail "rows=${rows:-?}, want >= 5"
    [[ -n $zoomed ]] || fail "nothing was zoomed"
fi

mkdir -p "$out_dir"
png=$out_dir/cgprof-report.png
rm -f "$png"
chrome --screenshot="$png" --window-size=1400,900 "$url" || { cat "$tmp/chromium.log"; fail "chromium --screenshot failed"; }
size=$(stat -c %s "$png" 2>/dev/null || echo 0)
if [[ $size -gt 5000 ]]; then
    echo "ok: screenshot $png ($size bytes)"
else
    fail "screenshot $png missing or too small ($size bytes)"
fi

if [[ -n ${5:-} ]]; then
    "$replay" --client "$5=exact,top=0,out=$tmp,formats=html" "$source_root/tests/profilers/heap_threads.jsonl"
    chrome --dump-dom "file://$tmp/heapprof.html" >"$tmp/heap.html" || fail "chromium --dump-dom failed on heapprof.html"
    if grep -qF 'data-frame="new app.Transfer"' "$tmp/heap.html"; then echo "ok: allocation view has new app.Transfer"
    else fail "no data-frame=\"new app.Transfer\" in heapprof.html's DOM"; fi
    if grep -qF '120 B' "$tmp/heap.html"; then echo "ok: allocation view shows bytes (120 B)"
    else fail "heapprof.html does not show 120 B"; fi
    if grep -qF 'data-key="calls"' "$tmp/heap.html"; then fail "heapprof.html has a calls column"
    else echo "ok: no calls column in the allocation view"; fi
    chrome --screenshot="$out_dir/heapprof-report.png" --window-size=1400,900 "file://$tmp/heapprof.html" ||
        fail "chromium --screenshot failed on heapprof.html"
fi

if [[ $failed -ne 0 ]]; then
    echo "DOM in $tmp/dom.html:"
    head -c 4000 "$tmp/dom.html"
else
    ok
fi
finish
