#!/usr/bin/env python3
"""Prints docs/validation.md's table of how much the kernel varies from run to run: for six
workloads of the committed suite, each figure's range over the suite's repeated recordings of
the same command, as `schedkit validate --json` reports it (`kernel_range`):

    python3 scripts/figures/kernel-ranges.py SCHEDKIT

The ranges come from the recordings alone (no simulated figure), so they reproduce exactly
while the suite in traces/validation is unchanged."""
import json
import os
import subprocess
import sys
import tempfile

WORKLOADS = ["pipe", "messaging-proc", "hackbench-pipe-g2", "hackbench-sock-g2", "make-j2",
             "cyclictest-hogs"]
# (the figure's name in the JSON, the column's header)
FIGURES = [("context switches", "switches"), ("wakeups", "wakeups"),
           ("migrations", "migrations"), ("busy CPU time (ms)", "busy CPU (ms)"),
           ("wakeup latency p50 (us)", "wakeup p50 (µs)")]


def spaced(v):
    return f"{v:,.0f}".replace(",", " ")


def main(schedkit):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "validate.json")
        run = subprocess.run([schedkit, "validate", "--quiet", "--only", ",".join(WORKLOADS),
                              "--json", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        # validate exits 0 (no --check); anything else is a failure to report.
        if run.returncode != 0:
            sys.exit(f"schedkit validate failed:\n{run.stderr}")
        with open(out) as f:
            data = json.load(f)
    by_name = {w["name"]: w["result"] for w in data["workloads"]}
    print("| workload | " + " | ".join(h for _, h in FIGURES) + " |")
    print("|---" * (len(FIGURES) + 1) + "|")
    for name in WORKLOADS:
        rows = {r["figure"]: r for r in by_name[name]["rows"]}
        cells = []
        for fig, _ in FIGURES:
            lo, hi = rows[fig]["kernel_range"]
            cells.append(f"{spaced(lo)}–{spaced(hi)}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
