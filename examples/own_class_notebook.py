# %% [markdown]
# # Write your own scheduler, in Python
#
# Notebook-style (cells marked `# %%`: open it in Jupyter with jupytext, in VS Code, or run it
# with `python examples/own_class_notebook.py`). Install the package first:
#
#     pip install ./crates/schedkit-py
#
# A scheduling class is a subclass of `schedkit.Policy`: it keeps its own runqueues and
# answers the core's questions (who runs next on this CPU? should the running task give way
# at this tick?). The simulator runs it through the same core as its built-in classes, so it
# can be compared with them on the same workloads, figure for figure.

# %%
import os
from collections import deque

import pandas as pd

import schedkit


class RoundRobin(schedkit.Policy):
    """One FIFO queue per CPU, the running task at its head; it runs `slice_ticks` ticks,
    then goes to the back."""

    name = "python-rr"

    def __init__(self, slice_ticks=10):
        self.slice_ticks = slice_ticks

    def setup(self, ncpus):  # every run starts here
        self.queues = [deque() for _ in range(ncpus)]
        self.ticks = {}

    def enqueue(self, cpu, task, nice, now, why):
        self.queues[cpu].append(task)
        self.ticks[task] = 0

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
        self.yield_task(cpu, task, now)
        return True

    def yield_task(self, cpu, task, now):  # to the back, with a fresh slice
        self.queues[cpu].remove(task)
        self.queues[cpu].append(task)
        self.ticks[task] = 0
        return True


# %% [markdown]
# ## Against O(1) and EEVDF
# The announcement's workloads (the yield loop, chat) and a pipe one (hackbench), on the
# 2-way machine of 2002, one second each.

# %%
WORKLOADS = ["yield:instances=4", "chat:rooms=2,messages=200", "hackbench:groups=2,loops=200"]
DURATION = os.environ.get("NOTEBOOK_DURATION", "1s")  # the tests run it shorter
POLICIES = [RoundRobin(), "o1", "eevdf"]

rows = []
for w in WORKLOADS:
    for p in POLICIES:
        r = schedkit.simulate(policy=p, machine="smp2-2002", workload=w, duration=DURATION)
        m = r["metrics"]
        rows.append({"workload": w.split(":")[0], "policy": r["policy"],
                     "throughput": m["throughput"]["value"], "unit": m["throughput"]["unit"],
                     "switches/s": m["context_switches_per_s"],
                     "wakeup p99 (us)": m["wakeup_latency_us"]["p99"],
                     "idle": m["idle_fraction"], "wall (s)": m["sim"]["wall_s"]})
table = pd.DataFrame(rows).set_index(["workload", "policy"])
pd.set_option("display.width", 140)
pd.set_option("display.max_columns", None)
pd.set_option("display.multi_sparse", False)
print(table.round(3))

# %% [markdown]
# Round robin never balances and never preempts at a wakeup: under chat a woken task waits
# at the back of its CPU's queue, a slice for each task ahead of it (the p99 of a quarter of a
# second), and one CPU sits idle while the other has the queue (`idle`). O(1) and EEVDF do
# both. Few switches, though: the tasks run whole slices, and hackbench's throughput is the
# better for it.
#
# ## A quick idea: a woken task preempts
# One hook more. `wakeup_preempt` is asked when a task is enqueued on a CPU running another of
# this class; answering True reschedules, and putting the woken task at the head makes it the
# next pick.

# %%
class WakeFirst(RoundRobin):
    name = "python-rr+wake"

    def wakeup_preempt(self, cpu, curr, woken, now):
        q = self.queues[cpu]
        q.remove(woken)
        q.appendleft(woken)
        return True


for w in WORKLOADS[1:]:
    for p in (RoundRobin(), WakeFirst()):
        m = schedkit.simulate(policy=p, machine="smp2-2002", workload=w, duration=DURATION)["metrics"]
        print(f"{w.split(':')[0]:>10} {p.name:>15}: {m['throughput']['value']:>12,.0f} "
              f"{m['throughput']['unit']}, wakeup p99 {m['wakeup_latency_us']['p99']:>9,.0f} us")

# %% [markdown]
# ## What went wrong, when something does
# A hook that raises, or answers something the core cannot use (a task not queued on that
# CPU, a CPU outside the machine), ends the run with a `schedkit.PolicyError` naming the class,
# the hook, its arguments and the Python traceback or the value.

# %%
class Broken(RoundRobin):
    def pick_next(self, cpu, now):
        return 42  # no such task queued here

try:
    schedkit.simulate(policy=Broken(), machine="smp2-2002", workload="yield:instances=4",
                      duration="10ms")
except schedkit.PolicyError as e:
    print(e)
