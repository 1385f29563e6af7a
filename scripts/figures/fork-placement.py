#!/usr/bin/env python3
"""Where a forked task starts, in an ftrace text trace (recorded, or written by
`schedkit replay --trace`; docs/validation.md, "Where a forked task starts"):

    python3 scripts/figures/fork-placement.py TRACE[.gz] ...
    python3 scripts/figures/fork-placement.py --table SCHEDKIT

For each `sched_process_fork`, the child's `sched_wakeup_new` says the CPU it starts on: the
parent's (the CPU the fork ran on) or another. Counted apart: forks while another CPU was idle
(running its idle task, nothing woken, migrated or preempted onto it, no wakeup bound for it
in flight), with the switches the recording lost put back as the importer puts them back
(`ftrace_text.events_with_lost_switches`). On a machine of two CPUs under one cache (both
project VMs), mainline v6.18's slow path (`sched_balance_find_dst_group`) never keeps such a
child on its parent's CPU: the parent's group has no idle CPU, the other has one, and the
parent's group is either of a busier type or has fewer idle CPUs.

`--table` prints the markdown table of docs/validation.md: the fork-heavy recordings of both
machines against their replays under eevdf:era=6.18 (seed 1; the first machine's on host, the
second's on its calibrated profile). Deterministic for a given schedkit and trace.
"""
import os
import sys
import tempfile

from ftrace_text import ROOT, events_with_lost_switches, field, replay_file

TABLE = [("validation", "make-j2", "host"), ("validation", "make-j4", "host"),
         ("validation", "hackbench-sock-g8", "host"), ("validation", "messaging-proc", "host"),
         ("holdout-xeon", "make-j1", "traces/holdout-xeon/calibrated.toml"),
         ("holdout-xeon", "make-j3", "traces/holdout-xeon/calibrated.toml"),
         ("holdout-xeon", "messaging-pipe-g3", "traces/holdout-xeon/calibrated.toml")]


def figures(path):
    c = {"forks": 0, "kept": 0, "moved": 0, "idle": 0, "idle kept": 0}
    curr, queued, inflight, bound, forked = {}, {}, {}, {}, {}

    def idle(cpu):
        return curr.get(cpu, 0) == 0 and not queued.get(cpu) and not inflight.get(cpu)

    for _, pid, cpu, _, _, ev, rest in events_with_lost_switches(path):
        curr.setdefault(cpu, pid)
        if ev == "sched_process_fork":
            forked[int(field(rest, "child_pid"))] = cpu
        elif ev == "sched_waking":
            w = int(field(rest, "pid"))
            t = field(rest, "target_cpu")
            if t is not None and w not in bound:
                bound[w] = int(t)
                inflight[int(t)] = inflight.get(int(t), 0) + 1
        elif ev in ("sched_wakeup", "sched_wakeup_new"):
            w, t = int(field(rest, "pid")), int(field(rest, "target_cpu"))
            if w in bound:
                inflight[bound.pop(w)] -= 1
            if ev == "sched_wakeup_new" and w in forked:
                here = forked.pop(w)
                others_idle = any(idle(x) for x in curr if x != here)
                c["forks"] += 1
                c["kept" if t == here else "moved"] += 1
                if others_idle:
                    c["idle"] += 1
                    c["idle kept"] += t == here
            for s in queued.values():
                s.discard(w)
            if w not in curr.values():
                queued.setdefault(t, set()).add(w)
        elif ev == "sched_migrate_task":
            w, d = int(field(rest, "pid")), int(field(rest, "dest_cpu"))
            was = any(w in s for s in queued.values())
            for s in queued.values():
                s.discard(w)
            if was:
                queued.setdefault(d, set()).add(w)
        elif ev == "sched_switch":
            p, n = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            if n in bound:
                # Running: any wakeup still in flight for it is over (its sched_wakeup lost).
                inflight[bound.pop(n)] -= 1
            for s in queued.values():
                s.discard(n)
                s.discard(p)
            if p and (field(rest, "prev_state") or "").startswith("R"):
                queued.setdefault(cpu, set()).add(p)
            curr[cpu] = n
            if n == 0:
                # A CPU that switches to its idle task has nothing queued (a wakeup whose
                # switch-in the recording lost would otherwise stay queued for ever).
                queued[cpu] = set()
    return c


def row(c):
    return f"{c['forks']} | {c['kept']} | {c['moved']} | {c['idle']} | {c['idle kept']}"


def table(schedkit):
    print("| workload | | forks | kept on the parent's CPU | moved | another CPU idle | "
          "of those, kept |")
    print("|---|---|---|---|---|---|---|")
    for suite, w, machine in TABLE:
        rec = os.path.join(ROOT, "traces", suite, w + ".txt.gz")
        print(f"| {w} ({suite}) | recorded | {row(figures(rec))} |")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "replay.txt")
            replay_file(schedkit, rec, machine, out)
            print(f"|  | replayed | {row(figures(out))} |")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    if argv[0] == "--table":
        if len(argv) != 2:
            sys.exit("--table needs SCHEDKIT")
        table(argv[1])
        return
    for path in argv:
        c = figures(path)
        print(f"{path}: {c['forks']} forks, {c['kept']} kept on the parent's CPU, "
              f"{c['moved']} moved; {c['idle']} while another CPU was idle, "
              f"{c['idle kept']} of those kept")


if __name__ == "__main__":
    main(sys.argv[1:])
