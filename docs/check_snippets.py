#!/usr/bin/env python3
"""Keeps the C++ shown in the docs true.

Every ```cpp block of the pages given carries, on the line just above its fence, one
of these markers:

  <!-- compiled: ID -->                    a whole translation unit of client code,
                                           compiled against martini-mpi
  <!-- compiled: ID, fragment -->          client statements, compiled inside a function
                                           that has pMpi, g_pMpiApi, clientId,
                                           m_clientId, methodId and data (NewMethod data)
  <!-- compiled: ID, fragment, provider --> provider statements, compiled against
                                           martini-core inside a function that has
                                           provider, optionText and anchorDir
  <!-- quoted: PATH -->                    a quote of PATH (from the source root): its
                                           lines appear there in this order, one after
                                           another; a line "..." stands for any lines
  <!-- not checked: WHY -->                says why the block is not real code

Whitespace and line breaks do not count in a quote, nor a leading "//" (a quote of a
comment) or a trailing "\\" (a quote of a macro).

Also, every path into the repository that a page names (bench/jvm_overhead.sh,
examples/traces/shop.jsonl, ...: the commands shown use them) must exist, and every
link to a section of a page in docs/ (page.md#section, #section) must find it.

usage: check_snippets.py SOURCE_ROOT BUILD_ROOT PAGE.md...
"""
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*(compiled|quoted|not checked):\s*(.*?)\s*-->\s*$")

CLIENT_PRELUDE = """#include <MpiAPI.h>
#include <vector>
using namespace Martini::MPI;
static IMpi *g_pMpiApi = nullptr;
static TId m_clientId = 0;
void DocSnippet(IMpi *pMpi, TId clientId, TId methodId, SNewMethodEventData &data) {
"""
PROVIDER_PRELUDE = """#include <martini/core/client_spec.h>
#include <martini/core/core.h>
#include <string>
#include <vector>
void DocSnippet(martini::core::Provider &provider, const std::string &optionText,
                const std::string &anchorDir) {
"""


def blocks(page):
    """(marker kind, marker argument, fence language, first line number, code) per block."""
    lines = open(page, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        yield (marker.group(1) if marker else None, marker.group(2) if marker else None,
               lang, start + 2, "\n".join(lines[i + 1:j]))
        i = j + 1


def normalize(text):
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if line.endswith("\\"):
            line = line[:-1].rstrip()
        if line.startswith("//"):
            line = line[2:].strip()
        if line:
            out.append(line)
    return " " + re.sub(r"\s+", " ", " ".join(out)) + " "


REPO_PATH = re.compile(r"(?<![\w./-])((?:bench|examples|tests|tools|clients|providers|filters|mpi|"
                       r"martini-core|docs|scripts)/[\w.+/-]*[\w/])")


def check_paths(root, page):
    """The repository paths the page names that do not exist, with their line numbers."""
    missing = []
    for number, line in enumerate(open(page, encoding="utf-8"), 1):
        for m in REPO_PATH.finditer(line):
            if not os.path.exists(os.path.join(root, m.group(1))):
                missing.append(f"{number}: {m.group(1)}")
    return missing


LINK = re.compile(r"\]\(([\w.-]*\.md)?#([\w-]+)\)")


def anchors(page):
    """GitHub's ids of a page's headings."""
    ids = set()
    for line in open(page, encoding="utf-8"):
        m = re.match(r"^#+\s+(.*?)\s*$", line)
        if m:
            title = m.group(1).lower().replace("`", "")
            ids.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return ids


def check_links(page):
    broken = []
    here = os.path.dirname(page)
    for number, line in enumerate(open(page, encoding="utf-8"), 1):
        for m in LINK.finditer(line):
            target = os.path.join(here, m.group(1)) if m.group(1) else page
            if not os.path.isfile(target) or m.group(2) not in anchors(target):
                broken.append(f"{number}: {m.group(1) or ''}#{m.group(2)}")
    return broken


def check_quote(root, path, code):
    source = os.path.join(root, path)
    if not os.path.isfile(source):
        return f"quotes {path}, which does not exist"
    text = normalize(open(source, encoding="utf-8").read())
    pos = 0
    segments = re.split(r"^\s*\.\.\.\s*$", code, flags=re.M)
    for segment in segments:
        wanted = normalize(segment)
        if wanted.strip() == "":
            continue
        found = text.find(wanted, pos)
        if found < 0:
            first = next((l for l in segment.split("\n") if l.strip()), "")
            return (f"is not in {path} as quoted (the part starting {first.strip()!r} "
                    f"differs or moved): quote the source again")
        pos = found + len(wanted) - 1
    return None


def cflags(build, package):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(build, "meson-uninstalled"))
    r = subprocess.run(["pkg-config", "--cflags", package], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"pkg-config --cflags {package} failed: {r.stderr}")
    return r.stdout.split()


def check_compiled(build, page, line, arg, code, work):
    options = [o.strip() for o in arg.split(",")]
    name, fragment, provider = options[0], "fragment" in options, "provider" in options
    if provider:
        prelude, package = PROVIDER_PRELUDE, "martini-core"
    else:
        prelude, package = CLIENT_PRELUDE, "martini-mpi"
    body = f'#line {line} "{page}"\n{code}\n'
    text = prelude + body + "}\n" if fragment else body
    source = os.path.join(work, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".cpp")
    open(source, "w", encoding="utf-8").write(text)
    flags = ["-Wall", "-Wextra", "-Werror"]
    if fragment:
        flags += ["-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-unused-parameter"]
    cxx = os.environ.get("CXX", "c++").split()
    r = subprocess.run(cxx + ["-fsyntax-only", "-std=c++20"] + flags + cflags(build, package) + [source],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"({name}) does not compile:\n{r.stderr}"
    return None


def main():
    root, build, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
    passed, failures = 0, []
    with tempfile.TemporaryDirectory() as work:
        for page in pages:
            shown = os.path.relpath(page, root)
            missing = check_paths(root, page) + check_links(page)
            if missing:
                failures.append(f"{shown}: names paths or sections that do not exist: " + ", ".join(missing))
            else:
                passed += 1
            for kind, arg, lang, line, code in blocks(page):
                where = f"{shown}:{line}"
                if kind is None:
                    if lang == "cpp":
                        failures.append(f"{where}: a cpp block without a marker (compiled, quoted "
                                        f"or not checked; see docs/check_snippets.py)")
                    continue
                if kind == "not checked":
                    continue
                if kind == "quoted":
                    error = check_quote(root, arg, code)
                else:
                    error = check_compiled(build, shown, line, arg, code, work)
                if error:
                    failures.append(f"{where}: the block {error}")
                else:
                    passed += 1
    for f in failures:
        print(f)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
