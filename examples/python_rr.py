"""Round robin, written in Python: one FIFO queue per CPU; the task at its head runs for
`slice_ticks` timer ticks, then goes to the back. No preemption at wakeup, no balancing: a task
wakes on the CPU it last ran on (schedkit.Policy's default select_cpu).

    python examples/python_rr.py [DURATION]   # runs it against o1 on yield:instances=4 (1s)

Its Rust twin, `rr-rust` (crates/schedkit-py/src/rr.rs), makes the same decisions.
"""

import sys
from collections import deque

import schedkit


class RoundRobin(schedkit.Policy):
    name = "python-rr"

    def __init__(self, slice_ticks=10):
        self.slice_ticks = slice_ticks

    def setup(self, ncpus):  # at the start of every run
        self.queues = [deque() for _ in range(ncpus)]  # the running task stays at the head
        self.ticks = {}  # ticks of its slice each queued task has used

    def enqueue(self, cpu, task, nice, now, why):
        self.queues[cpu].append(task)
        self.ticks[task] = 0  # a fresh slice

    def dequeue(self, cpu, task, now, why):
        self.queues[cpu].remove(task)
        del self.ticks[task]

    def pick_next(self, cpu, now):
        q = self.queues[cpu]
        return q[0] if q else None

    def tick(self, cpu, task, now):
        self.ticks[task] += 1
        if self.ticks[task] < self.slice_ticks:
            return False
        self.to_back(cpu, task)
        return True  # reschedule: the new head runs

    def yield_task(self, cpu, task, now):
        self.to_back(cpu, task)
        return True

    def to_back(self, cpu, task):
        self.queues[cpu].remove(task)
        self.queues[cpu].append(task)
        self.ticks[task] = 0


if __name__ == "__main__":
    for policy in (RoundRobin(), "o1"):
        r = schedkit.simulate(policy=policy, machine="smp2-2002", workload="yield:instances=4",
                              duration=sys.argv[1] if len(sys.argv) > 1 else "1s")
        m = r["metrics"]
        print(f"{r['policy']:>10}: {m['throughput']['value']:>12,.0f} yields/s, "
              f"{m['context_switches_per_s']:>12,.0f} switches/s")
