"""What the end-to-end tests in Python share: named checks with a summary line, and
running a command with its output kept for the message of a failing check."""
import os
import subprocess
import sys
import threading


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {name}" + (f"\n{detail}" if detail else ""))

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


def run(args, expect=0, **kwargs):
    """Runs args, text output captured; says so when the exit status is not `expect`."""
    r = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if expect is not None and r.returncode != expect:
        print(f"command {args} exited {r.returncode} (expected {expect})\n{r.stdout}{r.stderr}")
    return r


def rest_of(proc, timeout):
    """Waits for proc and returns (stdout, stderr): what its pipes still hold, read through
    their file objects. Popen.communicate() reads the file descriptors and so loses what an
    earlier proc.stdout.readline() left in the file object's buffer (a line the program
    printed just after the one readline() returned). Raises subprocess.TimeoutExpired."""
    got = {}

    def drain(name, stream):
        got[name] = stream.read() if stream else ""

    readers = [threading.Thread(target=drain, args=(n, s), daemon=True)
               for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    proc.wait(timeout=timeout)
    for r in readers:
        r.join(timeout=timeout)
        if r.is_alive():
            raise subprocess.TimeoutExpired(proc.args, timeout)
    return got["out"], got["err"]


def self_by_frame(profile, metric):
    """Sum of a metric's self values per frame name over a JSON profile's merged tree."""
    frames = [f["name"] for f in profile["frames"]]
    k = [m["name"] for m in profile["metrics"]].index(metric)
    totals = {}
    for node in profile["merged"]["nodes"][1:]:
        totals[frames[node[1]]] = totals.get(frames[node[1]], 0) + node[2 + k]
    return totals


def tree_paths(profile, metric):
    """The merged tree of a JSON profile as sorted "frame;frame value" lines (non-zero
    self values of `metric`), unfolded: what the tree holds, whatever the collapsed
    stacks fold."""
    frames = [f["name"].replace(";", ":").replace(" ", "_") for f in profile["frames"]]
    k = [m["name"] for m in profile["metrics"]].index(metric)
    nodes = profile["merged"]["nodes"]
    path = [""] * len(nodes)
    lines = []
    for i, node in enumerate(nodes[1:], start=1):
        parent = path[node[0]]
        path[i] = (parent + ";" if parent else "") + frames[node[1]]
        if node[2 + k]:
            lines.append(f"{path[i]} {node[2 + k]}")
    return sorted(lines)


def tracefile(path):
    """An lcov tracefile read for checks: {source file's base name: {"SF": path,
    "DA": {line: n}, "FN": {name: line}, "FNDA": {name: n},
    "BRDA": {(line, block, branch): n or None}, "LF": n, "LH": n, ...}}."""
    files, current = {}, None
    for text in open(path):
        key, _, value = text.rstrip("\n").partition(":")
        if key == "SF":
            current = files.setdefault(os.path.basename(value),
                                       {"DA": {}, "FN": {}, "FNDA": {}, "BRDA": {}, "SF": value})
        elif key == "DA":
            n, count = value.split(",")[:2]
            current["DA"][int(n)] = int(count)
        elif key == "FN":
            n, name = value.split(",", 1)
            current["FN"][name] = int(n)
        elif key == "FNDA":
            count, name = value.split(",", 1)
            current["FNDA"][name] = int(count)
        elif key == "BRDA":
            a, b, c, d = value.split(",")
            current["BRDA"][(int(a), int(b), int(c))] = None if d == "-" else int(d)
        elif key in ("LF", "LH", "FNF", "FNH", "BRF", "BRH"):
            current[key] = int(value)
    return files
