#!/usr/bin/env python3
"""Where each wakee last ran, against its waker's CPU, in an ftrace text trace (recorded, or
written by `schedkit replay --trace`; docs/validation.md, "Why the replay of hackbench-sock-g2
wakes most receivers on their sender's CPU" and "schbench's migrations"):

    python3 scripts/figures/wakee-last-cpu.py TRACE[.gz] ...

For each task-to-task wakeup (`sched_waking` in task context): whether the wakee's last CPU
(its CPU at its last switch) is the waker's, and whether it was woken on that last CPU (the
`sched_wakeup` target); for a wakee whose last CPU is not the waker's, what moved it there last
(the balancer: a switch-in on another CPU than the task's last `sched_wakeup` target or last
CPU; a placement: a `sched_wakeup` target other than its last CPU; none). Then the share of
wakeups that find their wakee on the waker's CPU in each 20 ms, and, at each switch to idle,
whether a task waited runnable on another CPU and whether every such task ran within 0.5 ms
(`sysctl_sched_migration_cost`: cache-hot, which no new-idle pass takes). With `--groups`, a
hackbench trace's share of each group's CPU time on CPU 0 from 40 to 180 ms (fork order gives
the group: per group 20 receivers, then 20 senders).

Simulated traces: deterministic for a given schedkit and trace.
"""
import collections
import re
import sys

from ftrace_text import events, field

HOT_S = 0.0005


def figures(path, groups=False):
    last, tgt, cause, pend = {}, {}, {}, {}
    state, where, lastoff = {}, {}, {}
    kinds, moved, bins = collections.Counter(), collections.Counter(), {}
    idle = collections.Counter()
    forks, runstart, cputime = [], {}, collections.defaultdict(lambda: [0.0, 0.0])
    t0 = None
    for pid, cpu, ts, ev, rest in events(path):
        t0 = ts if t0 is None else t0
        if ev == "sched_process_fork":
            if re.sub(r"^t\d+_\d+_", "", field(rest, "child_comm")) == "hackbench":
                forks.append(int(field(rest, "child_pid")))
        elif ev == "sched_waking":
            w = int(field(rest, "pid"))
            if w in last and pid != 0:
                pend[w] = (cpu, last[w], cause.get(w, "none"))
                b = bins.setdefault(int((ts - t0) * 50) * 20, [0, 0])
                b[last[w] == cpu] += 1
        elif ev in ("sched_wakeup", "sched_wakeup_new"):
            w, t = int(field(rest, "pid")), int(field(rest, "target_cpu"))
            state[w], where[w] = "queued", t
            if w in pend:
                wc, prev, cs = pend.pop(w)
                here = "woken on its last CPU" if t == prev else "woken elsewhere"
                if prev == wc:
                    kinds[("last CPU is the waker's", here)] += 1
                else:
                    kinds[("last CPU is not the waker's", here)] += 1
                    moved[cs] += 1
                if t != prev:
                    cause[w] = "placement"
            tgt[w] = t
        elif ev == "sched_migrate_task":
            where[int(field(rest, "pid"))] = int(field(rest, "dest_cpu"))
        elif ev == "sched_switch":
            p, n = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            if n and n in tgt and tgt[n] != cpu:
                cause[n] = "balancer"
            tgt.pop(n, None)
            if p:
                tgt[p] = cpu
                state[p] = "queued" if field(rest, "prev_state").startswith("R") else "asleep"
                where[p], lastoff[p] = cpu, ts
            if n:
                state[n], where[n] = "running", cpu
            last[p], last[n] = cpu, cpu
            if n == 0 and p != 0:
                waiting = [t for t, s in state.items() if s == "queued" and where.get(t) != cpu]
                idle["idle entries"] += 1
                if waiting:
                    idle["... a task waiting on another CPU"] += 1
                    if all(ts - lastoff.get(t, -1.0) < HOT_S for t in waiting):
                        idle["... every such task cache-hot"] += 1
            if p in runstart:
                c, s0 = runstart.pop(p)
                lo, hi = max(s0, t0 + 0.04), min(ts, t0 + 0.18)
                if hi > lo and c < 2:
                    cputime[p][c] += hi - lo
            runstart[n] = (cpu, ts)
    print(f"{path}:")
    for k, v in sorted(kinds.items()):
        print(f"  {k[0]}, {k[1]}: {v}")
    print("  last CPU not the waker's, moved there last by: " +
          ", ".join(f"{k} {v}" for k, v in sorted(moved.items())))
    print("  wakeups finding their wakee on the waker's CPU, % per 20 ms: " +
          " ".join(f"{k}:{100 * v[1] // max(1, sum(v))}" for k, v in sorted(bins.items())))
    print("  " + ", ".join(f"{k} {v}" for k, v in idle.items()))
    if groups:
        kids = forks[-(len(forks) // 40) * 40:] if len(forks) >= 40 else []
        for g in range(len(kids) // 40):
            a = sum(cputime[p][0] for p in kids[g * 40:(g + 1) * 40])
            b = sum(cputime[p][1] for p in kids[g * 40:(g + 1) * 40])
            print(f"  group {g + 1}, 40-180 ms: {a * 1e3:.1f} ms on CPU 0, {b * 1e3:.1f} ms on "
                  f"CPU 1 ({100 * a / max(a + b, 1e-12):.0f} % on CPU 0)")


if __name__ == "__main__":
    args = sys.argv[1:]
    groups = "--groups" in args
    paths = [a for a in args if a != "--groups"]
    if not paths or any(p.startswith("-") for p in paths):
        sys.exit(__doc__)
    for p in paths:
        figures(p, groups)
