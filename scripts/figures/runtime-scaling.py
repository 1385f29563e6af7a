#!/usr/bin/env python3
"""Prints docs/runtime.md's tables of the runtime on a many-core machine from the JSON rows
that `scripts/bench-runtime-scaling.sh` kept (one file per step), without running anything:

    python3 scripts/figures/runtime-scaling.py DIR

- "per worker count": yield (per core), same-worker and cross-worker pingpong, chat and the
  lock at 1, 2, 4, 8 and 16 workers (scaling-N.json, all-16.json), every schedkit policy and
  every peer the run had;
- "the server with 8 workers" (server-8.json), in docs/runtime.md's server table's shape.

The figures are those of the machine and date the directory names (its machine.txt says what
the machine was); `scripts/check-docs.py` checks that the doc's tables are what this prints
from the committed directory.
"""
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("runtime_tables",
                                              os.path.join(HERE, "runtime-tables.py"))
rt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rt)

COUNTS = [1, 2, 4, 8, 16]
PEERS = [("os-threads", "OS threads"), ("tokio", "Tokio"), ("go", "Go")]
# (label, workload, schedkit policy suffix, unit, scale)
ROWS = [
    ("yield, M/s per core", "yield", "", 1e-6),
    ("pingpong same worker, ns", "pingpong", " same cpu", 1),
    ("pingpong cross worker, ns", "pingpong", " cross cpu", 1),
    ("chat, M msgs/s", "chat", "", 1e-6),
]


def load(d):
    by_count = {}
    for n in COUNTS:
        name = f"all-{n}.json" if n == 16 else f"scaling-{n}.json"
        path = os.path.join(d, name)
        if os.path.exists(path):
            with open(path) as f:
                by_count[n] = rt.Rows(json.load(f))
    return by_count


def scaling(by_count):
    header = ["workload", "runner"] + [f"{n} worker{'s' if n > 1 else ''}" for n in COUNTS]
    out = []
    policies = next(iter(by_count.values())).policies("yield")
    policies = [p for p in policies if p != "raw switch"]
    for label, workload, suffix, scale in ROWS:
        runners = [("schedkit", p + suffix, f"schedkit, {rt.POLICY.get(p, p)}") for p in policies]
        # A peer cannot pin a pair to one worker: its one pingpong figure goes on the
        # same-worker row only.
        if suffix != " cross cpu":
            runners += [(r, None, name) for r, name in PEERS]
        for runner, policy, name in runners:
            cells = []
            for n in COUNTS:
                rows = by_count.get(n)
                v = rows.get(workload, runner, policy) if rows else None
                cells.append(rt.fig(v * scale if v is not None else None))
            if all(c == "—" for c in cells):
                continue
            out.append([label, name] + cells)
    return rt.table(header, out)


def server(d):
    with open(os.path.join(d, "server-8.json")) as f:
        rows = rt.Rows(json.load(f))
    text = rt.server(rows)
    # Its own header, so that it is not taken for the one-worker table of the project's VM.
    return text.replace("| runner |", "| runner, 8 workers |", 1)


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    d = sys.argv[1]
    if not os.path.isdir(d):
        sys.exit(f"runtime-scaling.py: {d}: no such directory")
    by_count = load(d)
    if not by_count:
        sys.exit(f"runtime-scaling.py: {d}: no scaling-N.json or all-16.json")
    print(scaling(by_count))
    print()
    print(server(d))


if __name__ == "__main__":
    main()
