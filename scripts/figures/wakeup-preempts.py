#!/usr/bin/env python3
"""Counts, from the runs' own scheduler traces, how often a woken task preempts its waker, and
prints docs/fair.md's tables of it (chat on two CPUs; short pipe rings):

    python3 scripts/figures/wakeup-preempts.py SCHEDKIT chat
    python3 scripts/figures/wakeup-preempts.py SCHEDKIT pipechain

Each case runs `schedkit compare ... --trace` into a temporary directory and reads the ftrace
text it writes:
- wakeups: `sched_waking` events;
- wakee preempts waker: a `sched_waking` issued on CPU c by task W for task T, followed within
  20 µs (inclusive) by a `sched_switch` on c from W to T with W still runnable
  (`prev_state=R...`); each switch counts for at most one waking;
- migrations: `sched_migrate_task` events (the result's migrations).

The simulator is deterministic, so the counts reproduce exactly from the same commit."""
import os
import re
import subprocess
import sys
import tempfile

CASES = {
    # docs/fair.md, "chat on two CPUs: why CFS 2.6.24 switches ten times as often".
    "chat": (["cfs", "cfs:era=2.6.23", "cfs:era=2.6.32", "eevdf"],
             ["--machine", "smp2-2002", "--workload", "chat:rooms=4,messages=100",
              "--duration", "2s"]),
    # docs/fair.md, section 4 of the v19 report's runs: a few short chains.
    "pipechain": (["eevdf", "cfs:era=2.6.32"],
                  ["--machine", "athlonmp2-2007", "--workload", "pipechain:groups=4,len=3",
                   "--duration", "1s"]),
}
# How a policy is labelled in the table's header.
LABELS = {"cfs": "cfs (2.6.24)"}
WINDOW_S = 20e-6

LINE = re.compile(r"^\s*.*?-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
PID = re.compile(r" pid=(\d+)")
FIELD = re.compile(r"(\w+)=(\S+)")


def count(path):
    wakeups = preempts = migrations = 0
    pending = {}  # cpu -> [(time, waker, wakee)] of the last 20 µs
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            pid, cpu, ts, event, args = m.groups()
            cpu, t = int(cpu), float(ts)
            if event == "sched_waking":
                wakeups += 1
                pending.setdefault(cpu, []).append((t, int(pid), int(PID.search(args).group(1))))
            elif event == "sched_migrate_task":
                migrations += 1
            elif event == "sched_switch":
                a = dict(FIELD.findall(args))
                prev, nxt = int(a["prev_pid"]), int(a["next_pid"])
                runnable = a["prev_state"].startswith("R")
                keep, hit = [], False
                for tw, waker, wakee in pending.get(cpu, []):
                    if t - tw > WINDOW_S:
                        continue
                    if not hit and runnable and waker == prev and wakee == nxt:
                        preempts += 1
                        hit = True
                        continue
                    keep.append((tw, waker, wakee))
                pending[cpu] = keep
    return wakeups, preempts, migrations


def spaced(n):
    return f"{n:,}".replace(",", " ")


def main(schedkit, case):
    policies, args = CASES[case]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "run.txt")
        run = subprocess.run([schedkit, "compare", "--quiet", "--policies", ",".join(policies),
                              *args, "--trace", trace], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            sys.exit(f"schedkit compare failed:\n{run.stderr}")
        counts = []
        for p in policies:
            # compare names each run's file after its policy, ':' and '=' and '.' as '_'.
            name = re.sub(r"[:=.]", "_", p)
            counts.append(count(os.path.join(tmp, f"run.{name}.txt")))
    print("| | " + " | ".join(LABELS.get(p, p) for p in policies) + " |")
    print("|---" * (len(policies) + 1) + "|")
    for i, what in enumerate(["wakeups", "wakee preempts waker", "migrations"]):
        print(f"| {what} | " + " | ".join(spaced(c[i]) for c in counts) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
