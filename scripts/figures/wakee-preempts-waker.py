#!/usr/bin/env python3
"""Counts, in an ftrace text trace (recorded, or written by `schedkit replay --trace`), the
wakeups after which the wakee was switched in straight after its waker on the waker's CPU,
the waker still runnable (switched out in state R: preempted by its wakee), and how long that
took from `sched_waking`; with every wakeup's median latency for comparison:

    python3 scripts/figures/wakee-preempts-waker.py TRACE[.gz] ...

docs/validation.md reads messaging-proc's recording and its replay this way:

    schedkit replay traces/validation/messaging-proc.txt.gz --policies eevdf:era=6.18 \\
        --machine host --trace /tmp/mp.txt
    python3 scripts/figures/wakee-preempts-waker.py traces/validation/messaging-proc.txt.gz /tmp/mp.txt
"""
import gzip
import re
import sys

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S*\s*([\d.]+):\s+(\w+):\s+(.*)$')


def count(path):
    opener = gzip.open if path.endswith(".gz") else open
    waking, lat = {}, []
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            _, pid, cpu, ts, ev, rest = m.groups()
            ts, cpu = float(ts), int(cpu)
            if ev == "sched_waking":
                wp, tc = re.search(r'pid=(\d+)', rest), re.search(r'target_cpu=(\d+)', rest)
                if wp and tc:
                    waking[int(wp.group(1))] = (ts, cpu, int(tc.group(1)), int(pid))
            elif ev == "sched_switch":
                nxt = int(re.search(r'next_pid=(\d+)', rest).group(1))
                state = re.search(r'prev_state=(\S+)', rest).group(1)
                if nxt in waking:
                    t0, wcpu, target, waker = waking.pop(nxt)
                    preempted = int(pid) == waker and state.startswith("R") and wcpu == cpu
                    lat.append(((ts - t0) * 1e6, preempted))
    if not lat:
        return f"{path}: no wakeup followed by its switch"
    lat.sort()
    pre = [x for x, p in lat if p]
    med = lambda xs: xs[len(xs) // 2] if xs else float("nan")
    return (f"{path}: {len(lat)} wakeups, latency p50 {med([x for x, _ in lat]):.2f} us; "
            f"wakee preempted its waker {len(pre)} times, p50 {med(pre):.2f} us")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    for p in sys.argv[1:]:
        print(count(p))
