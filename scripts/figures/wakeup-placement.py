#!/usr/bin/env python3
"""Where the wakeups of an ftrace text trace (recorded, or written by `schedkit replay
--trace`) go, and what the migrations are:

    python3 scripts/figures/wakeup-placement.py TRACE[.gz] ...

For each wakeup followed by its switch in: whether the wakee was placed on the CPU that woke it
(`sched_waking`'s CPU) or on another one, and whether that CPU was running a task or idle when
the wakee was placed there (`sched_wakeup`), with the median latency from `sched_waking` to the
switch in of each kind. Each `sched_migrate_task` is counted as a wakeup's (between the task's
`sched_waking` and its switch in), a new task's (before its first switch), or the balancer's
(any other).

    python3 scripts/figures/wakeup-placement.py --roles TRACE[.gz] ...

splits a hackbench trace's wakeups by the wakee's role and the waker's (receiver or sender, as
`who-waits.py` tells them) and by where the wakee went, "preempting" where it was switched in
straight after its waker on the waker's CPU, the waker still runnable.

    python3 scripts/figures/wakeup-placement.py --table SCHEDKIT

prints docs/validation.md's table: the suite's recording and its replay under
`eevdf:era=6.18` on `host`, seed 1, of the workloads whose migrations miss. Simulated figures
are deterministic for a given schedkit and trace.
"""
import os
import sys
import tempfile

from ftrace_text import events, field, recording, replay_trace

TABLE = ["hackbench-sock-g2", "hackbench-thread-sock-g2", "messaging-thread", "threadpool"]



def figures(path, by_role=False):
    """(migrations by cause, {kind: sorted latencies in µs}); with `by_role`, each kind is
    (wakee's role, waker's role, placement)."""
    curr, pending, state = {}, {}, {}
    kinds, migrations = {}, {"wakeup": 0, "new": 0, "balance": 0}
    forks = []
    for pid, cpu, ts, ev, rest in events(path):
        if ev == "sched_process_fork":
            forks.append((int(field(rest, "child_pid")), field(rest, "child_comm")))
        elif ev == "sched_waking":
            w = int(field(rest, "pid"))
            pending[w] = [ts, cpu, None, None, pid]
            state[w] = "waking"
        elif ev == "sched_wakeup":
            w = int(field(rest, "pid"))
            if w in pending and pending[w][2] is None:
                target = int(field(rest, "target_cpu"))
                pending[w][2] = target
                pending[w][3] = curr.get(target, 0) == 0
        elif ev == "sched_migrate_task":
            s = state.get(int(field(rest, "pid")))
            migrations["wakeup" if s == "waking" else "new" if s is None else "balance"] += 1
        elif ev == "sched_switch":
            prev, nxt = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            curr[cpu] = nxt
            state[prev] = "queued" if field(rest, "prev_state").startswith("R") else "asleep"
            state[nxt] = "running"
            if nxt in pending and pending[nxt][2] is not None:
                t0, waker_cpu, target, idle, waker = pending.pop(nxt)
                kind = ("same CPU" if waker_cpu == target else "other CPU") + \
                    (", idle" if idle else ", busy")
                if by_role and prev == waker and \
                        field(rest, "prev_state").startswith("R"):
                    kind += ", preempting"
                if by_role:
                    kind = (waker, nxt, kind)
                kinds.setdefault(kind, []).append((ts - t0) * 1e6)
    if by_role:
        roles = who_waits().roles_of(forks)
        merged = {}
        for (waker, wakee, kind), v in kinds.items():
            key = (roles.get(wakee, "other"), roles.get(waker, "other"), kind)
            merged.setdefault(key, []).extend(v)
        kinds = merged
    for v in kinds.values():
        v.sort()
    return migrations, kinds


def who_waits():
    import importlib.util
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "who-waits.py")
    spec = importlib.util.spec_from_file_location("who_waits", here)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def p50(xs):
    return xs[len(xs) // 2] if xs else float("nan")


def show(path, by_role=False):
    migrations, kinds = figures(path, by_role)
    out = [f"{path}: migrations {migrations}"]
    for k in sorted(kinds, key=lambda k: (k[:2], -len(kinds[k])) if by_role else k):
        what = f"{k[0]} woken by {k[1]}, {k[2]}" if by_role else k
        out.append(f"  {what}: {len(kinds[k])} wakeups, latency p50 {p50(kinds[k]):.1f} us")
    return "\n".join(out)


def us(x):
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def table(schedkit):
    print("| workload | | migrations: at a wakeup / other | wakeups onto another CPU, idle "
          "(p50) | onto another CPU, busy (p50) | onto the waker's CPU, busy (p50) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for w in TABLE:
            rec, out = recording(w), os.path.join(tmp, w + ".txt")
            replay_trace(schedkit, w, out)
            for label, path in (("recorded", rec), ("replayed", out)):
                mig, kinds = figures(path)
                cells = []
                for k in ("other CPU, idle", "other CPU, busy", "same CPU, busy"):
                    xs = kinds.get(k, [])
                    cells.append(f"{len(xs)} ({us(p50(xs))} µs)" if xs else "0")
                print(f"| {w if label == 'recorded' else ''} | {label} | {mig['wakeup']} / "
                      f"{mig['new'] + mig['balance']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "--roles":
        for p in sys.argv[2:]:
            print(show(p, by_role=True))
    elif len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    else:
        for p in sys.argv[1:]:
            print(show(p))
