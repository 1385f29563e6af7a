#!/usr/bin/env python3
"""hackbench's wake-all against `wake_wide`, in an ftrace text trace (recorded, or written by
`schedkit replay --trace`; gzip or plain; docs/validation.md, "Misses not explained yet", the
77 of hackbench-sock-g2's 80 children):

    python3 scripts/figures/wake-all-flips.py [--max-base N] TRACE[.gz] ...

The parent is the task that forks the most `hackbench` children; its wake-all, the run of
`sched_waking`s of its children it issues after its last fork. For each such wakeup: the
wakee's previous CPU (`sched_waking`'s target_cpu), the CPU it was woken on, and whether that
is the parent's CPU while the previous one was not ("pulled").

Then fair.c's `record_wakee` (v6.18: the waker is `current` on the CPU that emits the
`sched_waking`, in interrupt context too; only wakeups of fair tasks, prio >= 100, reach
`select_task_rq_fair`, and only those of a task allowed on more than one CPU: a recorded
per-CPU kernel thread, kworker/N:M or ksoftirqd/N, does not count) is replayed over the whole trace, each task forked inside it starting
with its parent's `wakee_flips` and `last_wakee` (`dup_task_struct`), each task present at the
trace's start with B flips and no last wakee, no decay (a trace shorter than HZ; a decay
before the trace's first record_wakee is folded into B). For each B from 0 to --max-base it
prints the parent's and the children's flips at the wake-all and how many of its wakeups of a
child whose previous CPU is not the parent's `wake_wide(B)` gets right, taking a wide wakeup
to keep the child on its previous CPU and a non-wide one to pull it to the parent's CPU (what
`wake_affine` does there: a sync wakeup of a CPU running only the parent, or one whose load is
far below the previous CPU's), with `sd_llc_size` the trace's CPU count (#P).

Deterministic for a given trace.
"""
import re
import sys

from ftrace_text import events, field


# A recorded per-CPU kernel thread: allowed on one CPU, so select_task_rq (core.c) does not
# call select_task_rq_fair for it, and its waker's record_wakee does not run. (A replay lets
# these run anywhere, and names them t<N>_<pid>_<comm>: not matched.)
PERCPU = re.compile(r"^(kworker/\d+:|ksoftirqd/|cpuhp/|rcuc/|idle_inject/)")


def ncpus(path):
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            m = re.search(r"#P:(\d+)", line)
            if m:
                return int(m.group(1))
            if not line.startswith("#"):
                break
    return 2


def wake_wide(master, slave, factor):
    if master < slave:
        master, slave = slave, master
    return not (slave < factor or master < slave * factor)


def analyse(path, max_base):
    evs = list(events(path))
    forks = {}
    for pid, cpu, ts, ev, rest in evs:
        if ev == "sched_process_fork" and re.sub(r"^t\d+_\d+_", "", field(rest, "child_comm")) == "hackbench":
            forks.setdefault(int(field(rest, "pid")), []).append(int(field(rest, "child_pid")))
    parent = max(forks, key=lambda p: len(forks[p]))
    children = set(forks[parent])
    last_fork = max(i for i, e in enumerate(evs)
                    if e[3] == "sched_process_fork" and e[0] == parent)
    # The wake-all: the parent's wakings of its children after its last fork, until it wakes
    # something else or stops.
    # A task's CPU (task_cpu): where it last switched in, was placed or was moved to; the
    # `sched_waking` of a recording names it too, but a simulated trace's names the target.
    wakeall, placed, where = [], {}, {}
    for i in range(len(evs)):
        pid, cpu, ts, ev, rest = evs[i]
        if ev == "sched_switch":
            where[int(field(rest, "next_pid"))] = cpu
        elif ev in ("sched_wakeup_new", "sched_wakeup") and i <= last_fork:
            where[int(field(rest, "pid"))] = int(field(rest, "target_cpu"))
        elif ev == "sched_migrate_task" and i <= last_fork:
            where[int(field(rest, "pid"))] = int(field(rest, "dest_cpu"))
        if i <= last_fork:
            continue
        if ev == "sched_waking" and pid == parent:
            w = int(field(rest, "pid"))
            if w not in children or w in (x[1] for x in wakeall):
                break
            wakeall.append((i, w, where.get(w), cpu))
        if ev == "sched_wakeup":
            w = int(field(rest, "pid"))
            if w in children and w not in placed:
                placed[w] = int(field(rest, "target_cpu"))
    if not wakeall:
        sys.exit(f"{path}: no wake-all found")
    factor = ncpus(path)
    print(f"== {path}: parent {parent}, {len(children)} children, wake-all of {len(wakeall)} "
          f"at {evs[wakeall[0][0]][2]:.6f} on CPU {wakeall[0][3]}")
    rows = [(k, w, prev, placed.get(w), wcpu)
            for k, (i, w, prev, wcpu) in enumerate(wakeall, 1)]
    stay = sum(1 for r in rows if r[3] == r[2])
    pulled = [r[0] for r in rows if r[2] != r[4] and r[3] == r[4]]
    print(f"  woken on their previous CPU: {stay} of {len(rows)}; pulled to the parent's CPU "
          f"(wakeup number): {pulled}; previous CPU the parent's: "
          f"{[r[0] for r in rows if r[2] == r[4]]}")
    # Ancestry of the parent inside the trace, and the fair wakeups each issued before the
    # wake-all (what record_wakee counted on them).
    forked_by = {}
    for pid, cpu, ts, ev, rest in evs:
        if ev == "sched_process_fork":
            forked_by.setdefault(int(field(rest, "child_pid")), pid)
    chain, p = [parent], parent
    while p in forked_by:
        p = forked_by[p]
        chain.append(p)
    first = wakeall[0][0]
    for a in reversed(chain):
        ws = [(round(ts, 6), field(rest, "comm"), int(field(rest, "prio")))
              for pid, cpu, ts, ev, rest in evs[:first]
              if ev == "sched_waking" and pid == a]
        print(f"  {a}{' (present at start)' if a not in forked_by else ''}: "
              f"wakings before the wake-all {ws}")
    # record_wakee over the trace for each base B.
    ok_by_base = []
    in_wakeall = {x[0] for x in wakeall}
    for base in range(max_base + 1):
        flips, last = {}, {}
        at = {}
        for i, (pid, cpu, ts, ev, rest) in enumerate(evs):
            if ev == "sched_process_fork":
                c, par = int(field(rest, "child_pid")), pid
                flips[c] = flips.get(par, base)
                last[c] = last.get(par)
            elif (ev == "sched_waking" and pid != 0 and int(field(rest, "prio")) >= 100
                  and not PERCPU.match(field(rest, "comm"))):
                w = int(field(rest, "pid"))
                f = flips.get(pid, base)
                if last.get(pid) != w:
                    last[pid] = w
                    f += 1
                flips[pid] = f
                if i in in_wakeall:
                    at[i] = (f, flips.get(w, base))
        good, tests, kids = 0, 0, []
        for (i, w, prev, wcpu), r in zip(wakeall, rows):
            m, s = at[i]
            kids.append(s)
            if prev == wcpu or r[3] is None:
                continue
            tests += 1
            wide = wake_wide(m, s, factor)
            good += (r[3] == prev) == wide
        pf = at[wakeall[0][0]][0]
        ok_by_base.append((base, pf, min(kids), max(kids), good, tests))
    print(f"  B  parent's flips at wakeup 1  children's flips  wake_wide right (of wakeups "
          f"from another CPU), llc {factor}")
    for base, pf, lo, hi, good, tests in ok_by_base:
        print(f"  {base:2d} {pf:5d} {lo:5d}-{hi:<5d} {good}/{tests}")


def main():
    args = sys.argv[1:]
    max_base = 8
    if args[:1] == ["--max-base"]:
        max_base = int(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    for path in args:
        analyse(path, max_base)


if __name__ == "__main__":
    main()
