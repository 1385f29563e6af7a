#!/usr/bin/env python3
"""Who waits in a hackbench run: for the receivers and the senders of `hackbench` (recorded,
or replayed with `schedkit replay --trace`), the wakeups each role gets, their latency from
`sched_waking` to the switch in (p50), the time the role's tasks spend runnable but not
running (ms, summed over tasks), and how long each of their runs lasts (switch in to switch
out, p50):

    python3 scripts/figures/who-waits.py TRACE[.gz] ...

hackbench forks, for each group, its 20 receivers and then its 20 senders (rt-tests'
hackbench.c, `group()`), so a task's role follows from its fork order among the
`sched_process_fork` events whose child is a hackbench task. docs/validation.md reads
hackbench-pipe-g2's recording and replay this way:

    schedkit replay traces/validation/hackbench-pipe-g2.txt.gz --policies eevdf:era=6.18 \\
        --machine host --trace /tmp/hp.txt
    python3 scripts/figures/who-waits.py traces/validation/hackbench-pipe-g2.txt.gz /tmp/hp.txt

or, to print docs/validation.md's table (the replay run by the script itself):

    python3 scripts/figures/who-waits.py --table SCHEDKIT

Simulated figures: deterministic for a given schedkit and trace.
"""
import re
import sys

from ftrace_text import events, field, recording, replay_trace

FDS = 20  # hackbench's default number of senders and receivers per group



def roles_of(forks):
    """Role of each hackbench child, by fork order: the first is the parent's own fork
    (`hackbench` starting `hackbench`) when the trace holds it, then per group FDS receivers
    and FDS senders."""
    roles = {}
    # A replayed trace names each task t<index>_<recorded pid>_<comm>.
    kids = [pid for pid, comm in forks if re.sub(r"^t\d+_\d+_", "", comm) == "hackbench"]
    # The main hackbench process itself is forked by the shell: skip children until the
    # count fits whole groups.
    while kids and len(kids) % (2 * FDS) != 0:
        kids.pop(0)
    for i, pid in enumerate(kids):
        roles[pid] = "receiver" if (i % (2 * FDS)) < FDS else "sender"
    return roles


def figures(path):
    """Per role: (tasks, wakeup latencies in µs, runs in µs, µs runnable not running)."""
    forks, waking, lat, wait = [], {}, {}, {}
    runnable_since, on_cpu, runs = {}, {}, {}
    for pid, _, ts, ev, rest in events(path):
        if ev == "sched_process_fork":
            forks.append((int(field(rest, "child_pid")), field(rest, "child_comm")))
        elif ev == "sched_waking":
            w = int(field(rest, "pid"))
            waking[w] = ts
            runnable_since.setdefault(w, ts)
        elif ev == "sched_wakeup_new":
            runnable_since.setdefault(int(field(rest, "pid")), ts)
        elif ev == "sched_switch":
            prev, nxt = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            if prev in on_cpu:
                runs.setdefault(prev, []).append((ts - on_cpu.pop(prev)) * 1e6)
            on_cpu[nxt] = ts
            if field(rest, "prev_state").startswith("R"):
                runnable_since[prev] = ts
            if nxt in waking:
                lat.setdefault(nxt, []).append((ts - waking.pop(nxt)) * 1e6)
            if nxt in runnable_since:
                wait[nxt] = wait.get(nxt, 0.0) + ts - runnable_since.pop(nxt)
    roles = roles_of(forks)
    out = {}
    for role in ("receiver", "sender"):
        pids = [p for p, r in roles.items() if r == role]
        out[role] = (len(pids), sorted(x for p in pids for x in lat.get(p, [])),
                     sorted(x for p in pids for x in runs.get(p, [])),
                     sum(wait.get(p, 0.0) for p in pids) * 1e6)
    return out


def p50(xs):
    return xs[len(xs) // 2] if xs else float("nan")


def count(path):
    out = [f"{path}:"]
    for role, (n, xs, rs, w_us) in figures(path).items():
        out.append(f"  {n} {role}s: {len(xs)} wakeups ({len(xs) / max(n, 1):.1f} a task), "
                   f"latency p50 {p50(xs):.1f} us, runnable not running {w_us / 1e3:.1f} ms; "
                   f"{len(rs)} runs, p50 {p50(rs):.1f} us")
    return "\n".join(out)


def spaced(v):
    return f"{v:,.0f}".replace(",", " ")


def table(schedkit):
    """docs/validation.md's table: hackbench-pipe-g2 recorded, and replayed under
    eevdf:era=6.18 on host, seed 1."""
    import os
    import tempfile
    rec = recording("hackbench-pipe-g2")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "replay.txt")
        replay_trace(schedkit, "hackbench-pipe-g2", out)
        rows = [("recorded", figures(rec)), ("replayed", figures(out))]
    print("| | receivers' wakeups | their latency p50 | receivers' run p50 "
          "| receivers runnable, not running | senders runnable, not running |")
    print("|---|---|---|---|---|---|")
    for label, f in rows:
        n, xs, rs, w = f["receiver"]
        print(f"| {label} | {spaced(len(xs))} ({len(xs) / max(n, 1):.0f} a task) | "
              f"{spaced(p50(xs))} µs | {spaced(p50(rs))} µs | {spaced(w / 1e3)} ms | "
              f"{spaced(f['sender'][3] / 1e3)} ms |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
    elif len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    else:
        for p in sys.argv[1:]:
            print(count(p))
