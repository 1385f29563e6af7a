#!/usr/bin/env python3
"""Prints docs/validation.md's table of the wakeups a replay does not repeat: for each workload
of the committed suite with at least 100 recorded task-to-task wakeups, the recorded and the
replayed wakeups, and how many of the recorded task wakeups found the sleeper not yet waiting
in the replay (its waker's token posted first: `tokens_posted_first`, from the simulator's
`sim.sent_unwaited`), as `schedkit validate --json` reports them:

    python3 scripts/figures/lost-wakeups.py SCHEDKIT

Simulated figures: deterministic for a given schedkit and suite."""
import json
import os
import subprocess
import sys
import tempfile


def spaced(v):
    return f"{v:,.0f}".replace(",", " ")


def main(schedkit):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "validate.json")
        run = subprocess.run([schedkit, "validate", "--quiet", "--json", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            sys.exit(f"schedkit validate failed:\n{run.stderr}")
        with open(out) as f:
            data = json.load(f)
    print("| workload | recorded wakeups | replayed | tokens posted before the sleeper waited "
          "| of the recorded task wakeups |")
    print("|---|---|---|---|---|")
    for w in data["workloads"]:
        r = w["result"]
        task_wakeups = r["replay_stats"]["task_wakeups"]
        if task_wakeups < 100:
            continue
        print(f"| {w['name']} | {spaced(r['recorded']['wakeups'])} | "
              f"{spaced(r['replayed']['wakeups'])} | {spaced(r['tokens_posted_first'])} | "
              f"{spaced(task_wakeups)} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
