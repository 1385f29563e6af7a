#!/usr/bin/env python3
"""Where a wakee goes when the CPU it last ran on is idle, in an ftrace text trace (recorded,
or written by `schedkit replay --trace`; docs/validation.md, "The recording kernel packs
wakees onto a busy vCPU"):

    python3 scripts/figures/idle-prev.py TRACE[.gz] ...
    python3 scripts/figures/idle-prev.py --table SCHEDKIT [WORKLOAD ...]

Mainline v6.18 has one answer for a task woken by a task on another CPU while the CPU the wakee
last ran on is idle and shares the waker's LLC: the wakee goes back to its idle CPU.
`wake_wide` leaves `new_cpu` at `prev_cpu`; otherwise `wake_affine_idle` returns `this_cpu`
for a sync wakeup on a CPU running one task and `prev_cpu` when it is idle, and
`select_idle_sibling(p, prev, target)` returns `target` if idle, else `prev` if idle and
cache-affine (fair.c of v6.18, `wake_affine_idle`, `select_idle_sibling`). The busy waker's
CPU is never chosen over an idle `prev`.

For each `sched_waking` from a task (not from the idle task, which is an interrupt on an idle
CPU) of a task that is not a per-CPU kernel thread, the script takes the wakee's last CPU
(its CPU at its last switch or migration) and whether that CPU was idle at the waking: running
the idle task with no task woken or migrated onto it or preempted there, waiting, and no
wakeup bound for it still in flight (`sched_waking` seen, its `sched_wakeup` not yet: a
remote wakeup queued on the CPU's wakelist makes `idle_cpu` false). Then,
at the `sched_wakeup`, where the wakee went. Counted: wakeups whose last CPU is another, idle
CPU, woken there (mainline's answer) or on the waker's busy CPU (not mainline's); and for
comparison wakeups whose last CPU is the waker's while another CPU is idle, kept on the
waker's CPU or sent to the idle one (`select_idle_cpu`, which SIS_UTIL may skip: both are
mainline answers).

`--table` prints the markdown table of docs/validation.md: each workload's recording
(traces/validation or traces/holdout) against its replay under eevdf:era=6.18 on host, seed 1.
Deterministic for a given schedkit and trace.
"""
import os
import re
import subprocess
import sys
import tempfile

from ftrace_text import ROOT, events, field

# docs/validation.md's table: the suite's workloads that wake tasks from tasks, and the
# holdout's pipe-threads.
DEFAULT = ["pipe", "pipe-threads", "messaging-proc", "messaging-thread", "hackbench-pipe-g2",
           "hackbench-sock-g2", "hackbench-thread-sock-g2", "hackbench-pipe-g8",
           "hackbench-sock-g8", "threadpool", "schbench", "make-j2", "make-j4"]

PERCPU_KTHREAD = re.compile(r"^(kworker/\d+:|ksoftirqd/|migration/|cpuhp/|idle_inject/|rcuc/)")


def wakeup_targets(path):
    """The CPU each `sched_waking` ended on (its task's next `sched_wakeup`), in trace order:
    a wakeup queued on a remote CPU's wakelist shows its `sched_wakeup` there only later, and
    meanwhile `idle_cpu` is false there (`rq->ttwu_pending`)."""
    targets, open_ = [], {}
    for _, _, _, ev, rest in events(path):
        if ev == "sched_waking":
            open_.setdefault(int(field(rest, "pid")), []).append(len(targets))
            targets.append(None)
        elif ev in ("sched_wakeup", "sched_wakeup_new"):
            for i in open_.pop(int(field(rest, "pid")), []):
                targets[i] = int(field(rest, "target_cpu"))
    return targets


def figures(path):
    targets = iter(wakeup_targets(path))
    inflight = {}             # CPU -> wakeups bound for it whose sched_wakeup is still to come
    inflight_of = {}          # wakee -> the CPU its pending wakeup is bound for
    last = {}                 # task -> the CPU it last ran on
    curr = {}                 # CPU -> the task running there (0: idle)
    queued = {}               # CPU -> tasks woken, migrated or preempted there, not yet run
    pend = {}                 # wakee -> (waker CPU, last CPU, kind)
    c = {k: 0 for k in ("idle-prev", "idle-prev woken there", "idle-prev woken on waker",
                        "waker-prev", "waker-prev kept", "waker-prev to idle")}

    def idle(cpu):
        return curr.get(cpu, 0) == 0 and not queued.get(cpu) and not inflight.get(cpu)

    for pid, cpu, ts, ev, rest in events(path):
        curr.setdefault(cpu, pid)  # an event's task is the one running on its CPU
        if ev == "sched_waking":
            w = int(field(rest, "pid"))
            bound = next(targets)
            comm = field(rest, "comm") or ""
            if pid != 0 and w in last and not PERCPU_KTHREAD.match(comm):
                prev = last[w]
                others = [x for x in curr if x != cpu]
                if prev != cpu and idle(prev):
                    pend[w] = (cpu, prev, "idle-prev")
                elif prev == cpu and any(idle(x) for x in others):
                    pend[w] = (cpu, prev, "waker-prev")
            # Bound for `bound` from now until its sched_wakeup (after this wakeup's own
            # placement was judged above).
            if bound is not None and w not in inflight_of:
                inflight_of[w] = bound
                inflight[bound] = inflight.get(bound, 0) + 1
        elif ev in ("sched_wakeup", "sched_wakeup_new"):
            w, t = int(field(rest, "pid")), int(field(rest, "target_cpu"))
            if w in inflight_of:
                inflight[inflight_of.pop(w)] -= 1
            for s in queued.values():
                s.discard(w)
            if w not in curr.values():  # a wakeup of a running task (ttwu_runnable) queues nothing
                queued.setdefault(t, set()).add(w)
            if w in pend:
                wc, prev, kind = pend.pop(w)
                c[kind] += 1
                if kind == "idle-prev":
                    if t == prev:
                        c["idle-prev woken there"] += 1
                    elif t == wc:
                        c["idle-prev woken on waker"] += 1
                else:
                    c["waker-prev kept" if t == wc else "waker-prev to idle"] += 1
        elif ev == "sched_migrate_task":
            w, d = int(field(rest, "pid")), int(field(rest, "dest_cpu"))
            was_queued = any(w in s for s in queued.values())
            for s in queued.values():
                s.discard(w)
            if was_queued:
                queued.setdefault(d, set()).add(w)
            last[w] = d
        elif ev == "sched_switch":
            p, n = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
            for s in queued.values():
                s.discard(n)
                s.discard(p)
            if p and field(rest, "prev_state").startswith("R"):
                queued.setdefault(cpu, set()).add(p)
            curr[cpu] = n
            if p:
                last[p] = cpu
            if n:
                last[n] = cpu
    return c


def row(c):
    ip, wp = c["idle-prev"], c["waker-prev"]
    return (f"{ip} | {c['idle-prev woken there']} | {c['idle-prev woken on waker']} | "
            f"{wp} | {c['waker-prev kept']} | {c['waker-prev to idle']}")


def table(schedkit, workloads):
    print("| workload | | wakee's last CPU idle, another | woken there | woken on the waker's "
          "busy CPU | wakee's last CPU the waker's, another idle | kept there | sent to the "
          "idle CPU |")
    print("|---|---|---|---|---|---|---|---|")
    for w in workloads:
        rec = None
        for d in ("validation", "holdout"):
            p = os.path.join(ROOT, "traces", d, w + ".txt.gz")
            if os.path.exists(p):
                rec = p
        if rec is None:
            sys.exit(f"no recording named {w} in traces/validation or traces/holdout")
        print(f"| {w} | recorded | {row(figures(rec))} |")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "replay.txt")
            run = subprocess.run([schedkit, "replay", rec, "--policies", "eevdf:era=6.18",
                                  "--machine", "host", "--seed", "1", "--trace", out],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if run.returncode != 0:
                sys.exit(f"schedkit replay {w} failed:\n{run.stderr}")
            print(f"|  | replayed | {row(figures(out))} |")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    if argv[0] == "--table":
        if len(argv) < 2:
            sys.exit("--table needs SCHEDKIT (and optionally WORKLOAD ...)")
        table(argv[1], argv[2:] or DEFAULT)
        return
    for path in argv:
        c = figures(path)
        print(path)
        print(f"  wakee's last CPU another, idle:       {c['idle-prev']:6}  woken there "
              f"{c['idle-prev woken there']}, on the waker's busy CPU "
              f"{c['idle-prev woken on waker']}")
        print(f"  wakee's last CPU the waker's, one idle: {c['waker-prev']:6}  kept "
              f"{c['waker-prev kept']}, sent to the idle CPU {c['waker-prev to idle']}")


if __name__ == "__main__":
    main(sys.argv[1:])
