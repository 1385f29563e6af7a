#!/usr/bin/env python3
"""Where the migrations of an ftrace text trace (recorded, or written by `schedkit replay
--trace`) come from, and the CPU each interrupt's wakeup of the RCU grace-period thread came
from:

    python3 scripts/figures/irq-wakeups.py TRACE[.gz] ...

A migration is a switch-in on another CPU than the task's last, as `schedkit validate` counts
them (every task, kernel threads included), over the trace's `sched_switch` lines and the
switches a recording lost, put back as validate's importer puts them back
(`ftrace_text.events_with_lost_switches`), so that the totals are validate's. Each is put
down to what happened to the task since it last ran: woken by an interrupt (the waking's
`h`/`s` flag, or the idle task), woken by a task on its way out (the waker's
`sched_process_exit` within 2 ms of the waking: the kernel emits it before `exit_notify` wakes
the parent, a replay near its exit), woken by another task, or moved while runnable (a
balancer pass, or a push). Kernel threads (kworker, rcu_*, ksoftirqd, migration) are counted
apart. For `rcu_preempt` (woken from the softirq of whichever CPU reports a quiescent state),
it counts its wakings whose `sched_waking` is on another CPU than the one it last ran on, and
those after which it ran on another CPU than that one.

    python3 scripts/figures/irq-wakeups.py --table SCHEDKIT

prints docs/validation.md's table: make-j2 of the suite, make-j3 of the holdout, and make -j3
and make -j1 recorded on the second machine, each recorded and replayed under
`eevdf:era=6.18`, seed 1, on its suite's profile (`host`; the second machine's
`calibrated.toml`).

    python3 scripts/figures/irq-wakeups.py --rcu-table SCHEDKIT

prints its table of `rcu_preempt`'s wakeups in the second machine's make -j1, recorded and
replayed, by where the waking ran (the CPU `rcu_preempt` last ran on, or the other), whether
that CPU and the last one were idle then (by the trace: the idle task the last switched in)
and whether `rcu_preempt` then ran on another CPU, beside what 6.18's rules do on a machine
of two CPUs sharing a cache (`select_task_rq_fair`: `wake_affine_idle`, then
`select_idle_sibling`). Simulated figures are deterministic for a given schedkit and trace."""
import os
import re
import sys
import tempfile

from ftrace_text import ROOT, events_with_lost_switches, field, replay_file

# Kernel threads, as recorded ("rcu_preempt") or renamed by a replay ("t2_15_rcu_preempt").
KTHREAD = re.compile(r"^(t\d+_\d+_)?(kworker|rcu_|ksoftirqd|migration|kcompactd)")
RCU = re.compile(r"^(t\d+_\d+_)?rcu_preempt$")
KINDS = ["irq", "exiting task", "task", "runnable"]


def count(path):
    evs = list(events_with_lost_switches(path))
    exit_at = {}
    for _, pid, _, _, ts, name, _ in evs:
        if name == "sched_process_exit":
            exit_at.setdefault(pid, ts)
    last_cpu, why = {}, {}
    rcu_pending = {}
    curr = {}  # CPU -> the task the last switch there left running (0: idle)
    out = {"migrations": 0, "rcu_wakings": 0, "rcu_from_other": 0, "rcu_moved": 0}
    for k in KINDS:
        out[k] = out[k + " kthread"] = 0
    out["rcu_cases"] = {}
    for _, pid, cpu, flags, ts, name, rest in evs:
        if name == "sched_waking":
            wp = int(field(rest, " pid"))
            if pid == 0 or "h" in flags or "s" in flags:
                why[wp] = "irq"
            elif pid in exit_at and abs(exit_at[pid] - ts) < 2e-3:
                why[wp] = "exiting task"
            else:
                why[wp] = "task"
            if RCU.match(field(rest, "comm")) and wp in last_cpu:
                out["rcu_wakings"] += 1
                out["rcu_from_other"] += cpu != last_cpu[wp]
                prev_cpu = last_cpu[wp]
                case = (cpu == prev_cpu, curr.get(cpu, 0) == 0, curr.get(prev_cpu, 0) == 0)
                rcu_pending[wp] = (prev_cpu, case)
        elif name == "sched_switch":
            prev, nxt = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            curr[cpu] = nxt
            if prev != 0:
                last_cpu[prev] = cpu
                if field(rest, "prev_state").startswith("R"):
                    why[prev] = "runnable"
            if nxt == 0:
                continue
            if nxt in last_cpu and last_cpu[nxt] != cpu:
                out["migrations"] += 1
                kind = why.get(nxt, "runnable")
                out[kind + (" kthread" if KTHREAD.match(field(rest, "next_comm")) else "")] += 1
            if nxt in rcu_pending:
                prev_cpu, case = rcu_pending.pop(nxt)
                out["rcu_moved"] += prev_cpu != cpu
                key = case + (prev_cpu != cpu,)
                out["rcu_cases"][key] = out["rcu_cases"].get(key, 0) + 1
            last_cpu[nxt] = cpu
            why.pop(nxt, None)
    return out


def show(path, c):
    print(f"{path}: {c['migrations']} migrations")
    for k in KINDS:
        label = {"irq": "woken by an interrupt", "exiting task": "woken by an exiting task",
                 "task": "woken by a task", "runnable": "moved while runnable"}[k]
        print(f"  {label}: {c[k]} tasks, {c[k + ' kthread']} kernel threads")
    print(f"  rcu_preempt: {c['rcu_wakings']} wakings, {c['rcu_from_other']} from another CPU "
          f"than its last, {c['rcu_moved']} ran on another CPU")


def table(schedkit):
    # Each replayed on its suite's profile, as `schedkit validate` replays it.
    rows = [("make-j2", "traces/validation/make-j2.txt.gz", "host"),
            ("make-j3 (holdout)", "traces/holdout/make-j3.txt.gz", "host"),
            ("make-j3 (second machine)", "traces/holdout-xeon/make-j3.txt.gz",
             os.path.join(ROOT, "traces/holdout-xeon/calibrated.toml")),
            ("make-j1 (second machine)", "traces/holdout-xeon/make-j1.txt.gz",
             os.path.join(ROOT, "traces/holdout-xeon/calibrated.toml"))]
    print("| workload | | migrations | kernel threads woken by an interrupt | tasks woken by an "
          "interrupt | woken by an exiting task | moved while runnable | rcu_preempt woken "
          "from the other CPU | rcu_preempt moved |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, trace, machine in rows:
            out = os.path.join(tmp, "replay.txt")
            replay_file(schedkit, os.path.join(ROOT, trace), machine, out)
            for side, path in (("recorded", os.path.join(ROOT, trace)), ("replayed", out)):
                c = count(path)
                exiting = c["exiting task"] + c["exiting task kthread"]
                task_irq = c["irq"]
                print(f"| {name if side == 'recorded' else ''} | {side} | {c['migrations']} | "
                      f"{c['irq kthread']} | {task_irq} | {exiting} | "
                      f"{c['runnable'] + c['runnable kthread']} | "
                      f"{c['rcu_from_other']} of {c['rcu_wakings']} | {c['rcu_moved']} |")


# What 6.18's select_task_rq_fair does with each case on two CPUs sharing a cache, keyed by
# (woken from its last CPU, waking CPU idle, last CPU idle).
RULES = {
    # The waking CPU is its last: no wake_affine; select_idle_sibling keeps an idle target
    # and looks for an idle CPU beside a busy one (SIS_UTIL may stop the search).
    (True, True, True): "stays",
    (True, False, False): "moves if the other CPU is idle",
    # wake_affine_idle: an idle waking CPU sharing the cache takes it unless its last CPU is
    # idle too ...
    (False, True, True): "stays",
    (False, True, False): "moves",
    # ... a busy waking CPU leaves it on an idle last CPU ...
    (False, False, True): "stays",
    # ... and with both busy wake_affine_weight chooses (no CPU is idle to look for).
    (False, False, False): "either",
}


def rcu_table(schedkit):
    trace = os.path.join(ROOT, "traces/holdout-xeon/make-j1.txt.gz")
    machine = os.path.join(ROOT, "traces/holdout-xeon/calibrated.toml")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "replay.txt")
        replay_file(schedkit, trace, machine, out)
        rec, rep = count(trace)["rcu_cases"], count(out)["rcu_cases"]
    print("| woken from | waking CPU | its last CPU | 6.18's rules | recorded: moved / stayed | "
          "replayed: moved / stayed |")
    print("|---|---|---|---|---|---|")
    for key, rule in RULES.items():
        same, w_idle, p_idle = key
        cells = [f"{c.get(key + (True,), 0)} / {c.get(key + (False,), 0)}" for c in (rec, rep)]
        print(f"| {'its last CPU' if same else 'the other CPU'} | "
              f"{'-' if same else ('idle' if w_idle else 'busy')} | "
              f"{'idle' if p_idle else 'busy'} | {rule} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--table":
        table(args[1])
    elif len(args) == 2 and args[0] == "--rcu-table":
        rcu_table(args[1])
    elif args and not args[0].startswith("-"):
        for p in args:
            show(p, count(p))
    else:
        sys.exit(__doc__)
