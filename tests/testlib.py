"""What the end-to-end tests in Python share: named checks with a summary line, and
running a command with its output kept for the message of a failing check."""
import subprocess
import sys


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
