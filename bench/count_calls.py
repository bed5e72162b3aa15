#!/usr/bin/env python3
"""Calls per action of the runtime's retain/release and allocation functions, from two
callgrind profiles of `moonflow-bench feature` (MOONFLOW_BENCH_ONLY_C) at two action
counts: the difference cancels start-up and loading, leaving what each action costs.

Usage: count_calls.py SMALL.out SMALL_ACTIONS LARGE.out LARGE_ACTIONS
(the actions each profile ran in all: runs times actions per run).
"""
import re
import sys

WATCHED = ["swift_retain", "swift_release", "swift_bridgeObjectRetain", "swift_bridgeObjectRelease",
           "swift_allocObject", "malloc", "free"]


def calls(path):
    """Total calls into each watched function, and the instructions run, of one profile."""
    names = {}
    counts = {name: 0 for name in WATCHED}
    instructions = 0
    target = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if m:
                    if m.group(2) is not None:
                        names[m.group(1)] = m.group(2)
                    target = names.get(m.group(1))
                else:
                    target = line[4:].strip()
            elif line.startswith("fn="):
                m = re.match(r"fn=\((\d+)\) (.*)", line.rstrip("\n"))
                if m:
                    names[m.group(1)] = m.group(2)
            elif line.startswith("calls="):
                if target in counts:
                    counts[target] += int(line.split()[0][6:])
                target = None
            elif line.startswith("summary:") or line.startswith("totals:"):
                instructions = int(line.split()[1])
    return counts, instructions


def main():
    small, small_n, large, large_n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    (a, ia), (b, ib) = calls(small), calls(large)
    actions = large_n - small_n
    for name in WATCHED:
        print(f"  {name + ' per action':32} {(b[name] - a[name]) / actions:10.1f}")
    print(f"  {'instructions per action':32} {(ib - ia) / actions:10.0f}")


if __name__ == "__main__":
    main()
