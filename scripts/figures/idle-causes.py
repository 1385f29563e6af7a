#!/usr/bin/env python3
"""What ends each idle period of an ftrace text trace (recorded, or written by `schedkit replay
--trace`): the idle time of every CPU, split by the state, when the CPU went idle, of the task
whose wakeup ended the idle period (the waker of the task switched in after it):

    python3 scripts/figures/idle-causes.py TRACE[.gz] ...

- "waker running": the waker was running on another CPU; it posted the wakeup when it got there.
- "waker queued": the waker was runnable but not running (waiting its turn on a CPU), so the
  idle CPU waited for the waker to be scheduled first.
- "waker asleep": the waker itself slept.
- "interrupt": the wakeup came from an interrupt or the idle task (a timer, I/O).
- "no wakeup": the task switched in was not woken (a migration, a new task).

It also sums, over the same idle periods (those that end inside the trace), the idle time
during which some task waited runnable on another CPU (one a balancer could have pulled,
affinity allowing), and the idle time while no task waited anywhere: every task other than
those running was asleep. A recorded trace that lost events can leave a task counted as
waiting that was not.

    python3 scripts/figures/idle-causes.py --table SCHEDKIT

prints docs/validation.md's table: the suite's recording and its replay under `eevdf:era=6.18`
on `host`, seed 1, of the workloads whose replay idles longest. Simulated figures are
deterministic for a given schedkit and trace.
"""
import os
import sys
import tempfile

from ftrace_text import events, field, recording, replay_trace

CAUSES = ["waker running", "waker queued", "waker asleep", "interrupt", "no wakeup"]
TABLE = ["hackbench-thread-sock-g2", "messaging-thread", "threadpool"]



def causes(path):
    """({cause: idle seconds, "queued elsewhere": s, "nothing queued": s}, span in seconds)"""
    state = {}      # pid -> "running" | "queued" | "asleep"
    idle_since = {}  # cpu -> (ts, snapshot of state at idle start)
    waker_of = {}   # pid -> waker pid of its last sched_waking
    out = {c: 0.0 for c in CAUSES}
    out["queued elsewhere"] = out["nothing queued"] = 0.0
    queued_on = {}  # pid -> the CPU it waits on, runnable and not running
    idle_cpus = set()
    during = {}  # idle cpu -> [s while a task waited elsewhere, s while none waited]
    first = last = None
    prev_ts = None
    for pid, cpu, ts, ev, rest in events(path):
        first = ts if first is None else first
        last = ts
        if prev_ts is not None and ts > prev_ts:
            for c in idle_cpus:
                if any(q != c for q in queued_on.values()):
                    during[c][0] += ts - prev_ts
                elif not queued_on:
                    during[c][1] += ts - prev_ts
        prev_ts = ts
        if ev == "sched_waking":
            w = int(field(rest, "pid"))
            waker_of[w] = pid
            state.setdefault(w, "asleep")
            if state[w] == "asleep":
                state[w] = "queued"
        elif ev == "sched_wakeup":
            w = int(field(rest, "pid"))
            if state.get(w) == "queued":
                queued_on[w] = int(field(rest, "target_cpu"))
        elif ev == "sched_migrate_task":
            w = int(field(rest, "pid"))
            if w in queued_on:
                queued_on[w] = int(field(rest, "dest_cpu"))
        elif ev == "sched_wakeup_new":
            w = int(field(rest, "pid"))
            state[w] = "queued"
            queued_on[w] = int(field(rest, "target_cpu"))
            waker_of.pop(w, None)
        elif ev == "sched_switch":
            prev, nxt = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            if prev != 0:
                state[prev] = "queued" if field(rest, "prev_state").startswith("R") \
                    else "asleep"
                if state[prev] == "queued":
                    queued_on[prev] = cpu
            if nxt == 0:
                idle_since[cpu] = (ts, dict(state))
                idle_cpus.add(cpu)
                during[cpu] = [0.0, 0.0]
                continue
            idle_cpus.discard(cpu)
            queued_on.pop(nxt, None)
            if prev == 0 and cpu in during:
                elsewhere, none = during.pop(cpu)
                out["queued elsewhere"] += elsewhere
                out["nothing queued"] += none
            state[nxt] = "running"
            if prev == 0 and cpu in idle_since:
                t0, snap = idle_since.pop(cpu)
                w = waker_of.pop(nxt, None)
                if w is None:
                    cause = "no wakeup"
                elif w == 0:
                    cause = "interrupt"
                else:
                    cause = {"running": "waker running", "queued": "waker queued"}.get(
                        snap.get(w, "asleep"), "waker asleep")
                out[cause] += ts - t0
            else:
                waker_of.pop(nxt, None)
    return out, (last - first) if first is not None else 0.0


def show(path):
    out, span = causes(path)
    total = sum(out[c] for c in CAUSES)
    parts = ", ".join(f"{c} {v * 1e3:.1f} ms" for c, v in out.items())
    return f"{path}: idle {total * 1e3:.1f} ms over {span * 1e3:.1f} ms: {parts}"


def table(schedkit):
    cols = CAUSES + ["queued elsewhere", "nothing queued"]
    print("| workload | | idle (ms) | ended by: " + " | ".join(CAUSES) +
          " | while a task waited on the other CPU | while none waited |")
    print("|---|---|---|" + "---|" * len(cols))
    with tempfile.TemporaryDirectory() as tmp:
        for w in TABLE:
            rec, out = recording(w), os.path.join(tmp, w + ".txt")
            replay_trace(schedkit, w, out)
            for label, path in (("recorded", rec), ("replayed", out)):
                c, _ = causes(path)
                total = sum(c[k] for k in CAUSES)
                print(f"| {w if label == 'recorded' else ''} | {label} | {total * 1e3:.1f} | "
                      + " | ".join(f"{c[k] * 1e3:.1f}" for k in cols) + " |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
    elif len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    else:
        for p in sys.argv[1:]:
            print(show(p))
