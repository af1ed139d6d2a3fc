#!/usr/bin/env python3
"""Writes a replay trace (docs/replay-format.md) in which one method is slower: each
of its calls lasts EXTRA_NS more. Each thread's later records are moved by what its
own calls of the method added, so only that method's self time (and its callers'
totals) grows; other threads' times are unchanged.

usage: slow_trace.py IN.jsonl OUT.jsonl METHOD_ID EXTRA_NS
"""
import json
import sys


def main():
    src, dst, method, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    shift = {}  # thread -> ns its records move by
    current = None
    with open(src) as lines, open(dst, "w") as out:
        for line in lines:
            text = line.strip()
            if not text or text.startswith("#"):
                out.write(line)
                continue
            record = json.loads(text)
            current = record.get("thread", current)
            if record.get("event") == "MethodLeave" and record.get("method") == method:
                shift[current] = shift.get(current, 0) + extra
            if "t" in record:
                record["t"] += shift.get(current, 0)
            out.write(json.dumps(record, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
