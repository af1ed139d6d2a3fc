#!/usr/bin/env python3
"""Writes a large synthetic JSON profile (docs/formats.md): THREADS threads of NODES
calling contexts each over FRAMES methods, deep and bushy like a real program's, with
heavy-tailed wall times (most contexts tiny, a few large), calls and wall metrics.
Deterministic (seeded). The merged tree is left for the reader to rebuild.

usage: big_profile.py OUTPUT.json [NODES [THREADS [FRAMES]]]
"""
import random
import sys


def tree(rng, nodes, frames):
    """Node rows "[parent,frame,calls,wall]" of one thread."""
    rows = ["[-1,-1,0,0]"]
    stack = [0]
    for i in range(1, nodes):
        if len(stack) > 1 and rng.random() < 0.4:
            del stack[max(1, len(stack) - rng.randint(1, 4)):]
        parent = stack[-1]
        wall = int(rng.paretovariate(1.1) * 1000)
        rows.append(f"[{parent},{rng.randrange(frames)},{rng.randint(1, 9)},{wall}]")
        if len(stack) < 80 and rng.random() < 0.6:
            stack.append(i)
    return rows


def main():
    out = sys.argv[1]
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 500000
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    frames = int(sys.argv[4]) if len(sys.argv) > 4 else 20000
    rng = random.Random(42)
    with open(out, "w") as f:
        f.write('{"format":"martini-profile","version":1,"tool":"cgprof","runtime":"synthetic","mode":"time",'
                '"metrics":[{"name":"calls","unit":"count"},{"name":"wall","unit":"nanoseconds"}],'
                '"defaultMetric":"wall","frames":[')
        f.write(",".join(f'{{"name":"org.big.p{i % 97}.C{i // 7}.m{i % 7}","class":"org.big.p{i % 97}.C{i // 7}",'
                         f'"method":"m{i % 7}","signature":"(I)V","file":"C{i // 7}.java","line":{10 + i % 50}}}'
                         for i in range(frames)))
        f.write('],"threads":[')
        for t in range(threads):
            if t:
                f.write(",")
            f.write(f'{{"id":{t + 1},"name":"worker-{t + 1}","nodes":[' + ",".join(tree(rng, nodes, frames)) + "]}")
        f.write("]}\n")


if __name__ == "__main__":
    main()
