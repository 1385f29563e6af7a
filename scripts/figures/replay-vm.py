#!/usr/bin/env python3
"""Prints docs/traces.md's table of the two traces recorded on the project VM (traces/pipe-vm.txt
and traces/messaging-vm.txt) replayed under `eevdf` and `o1` on `host`, beside the recorded
figures, as `tests/traces.rs` holds them:

    python3 scripts/figures/replay-vm.py SCHEDKIT

Each row comes from one `schedkit replay TRACE --policies recorded,eevdf,o1 --machine host
--json` (every column measured by the same function, trace/figures.rs); the replay is
deterministic, so the table reproduces exactly."""
import json
import os
import subprocess
import sys
import tempfile

# (trace file, the command it recorded, as the table's first column names it)
TRACES = [("traces/pipe-vm.txt", "`perf bench sched pipe -l 300`"),
          ("traces/messaging-vm.txt", "`perf bench sched messaging -g 1 -l 5 -p`")]
POLICIES = ["eevdf", "o1"]


def replay(schedkit, trace, tmp):
    out = os.path.join(tmp, "replay.json")
    run = subprocess.run([schedkit, "replay", trace, "--policies", "recorded," + ",".join(POLICIES),
                          "--machine", "host", "--json", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"schedkit replay {trace} failed:\n{run.stderr}")
    with open(out) as f:
        return {c["name"]: c["figures"] for c in json.load(f)["columns"]}


def err(v, rec):
    return f"{(v / rec - 1) * 100:+.1f}%".replace("-", "−")


def main(schedkit):
    print("| trace (recorded 2026-11-23) | figure | recorded | "
          + " | ".join(f"{p} | error" for p in POLICIES) + " |")
    print("|---" * (3 + 2 * len(POLICIES)) + "|")
    with tempfile.TemporaryDirectory() as tmp:
        for trace, label in TRACES:
            cols = replay(schedkit, trace, tmp)
            rec = cols["recorded"]
            busy = [f"{rec['busy_cpu_s'] * 1e3:.2f} ms"]
            switches = [f"{rec['context_switches']}"]
            for p in POLICIES:
                f = cols[p]
                busy += [f"{f['busy_cpu_s'] * 1e3:.2f} ms", err(f["busy_cpu_s"], rec["busy_cpu_s"])]
                switches += [f"{f['context_switches']}",
                             err(f["context_switches"], rec["context_switches"])]
            print(f"| {label} | busy CPU time | " + " | ".join(busy) + " |")
            print("| | context switches | " + " | ".join(switches) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
