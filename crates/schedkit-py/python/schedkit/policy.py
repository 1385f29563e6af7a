"""Scheduling classes written in Python: subclass :class:`Policy`, give an instance to
``schedkit.simulate(policy=...)``, and the simulator runs it through the scheduler core as it
runs a class written in Rust (``crates/schedkit-py/src/policy.rs`` is the adapter).

Slower than Rust (see ``docs/own-class.md``, "Classes in Python", for the cost per event), but
short and readable: for teaching and for trying an idea. Simulator only.
"""

from __future__ import annotations

from typing import Optional, Sequence

__all__ = ["Policy", "PolicyError"]


class PolicyError(RuntimeError):
    """A Python class's hook raised, or returned a value the simulator refuses. The message names
    the class, the hook with its arguments, and the exception with its traceback or the value."""


class Policy:
    """Base class of a scheduling class written in Python.

    The class owns its runqueues (any Python objects: a ``deque`` per CPU, a heap, a dict...);
    the hooks receive plain values (task ids and CPU numbers are ints, ``now`` is the simulated
    clock in ns, ``nice`` the task's nice level) and return plain values. The core calls them as
    it calls a Rust class's (``crates/schedkit/src/class.rs``):

    - :meth:`enqueue` / :meth:`dequeue`: a task becomes runnable on ``cpu``'s runqueue / stops
      being runnable there. The running task stays enqueued until it sleeps, moves or exits.
    - :meth:`pick_next`: the task to run next on ``cpu``, one enqueued there (the running one
      may be picked again), or None for nothing.
    - :meth:`tick`, :meth:`yield_task`, :meth:`wakeup_preempt`: return True to have the CPU
      reschedule (then :meth:`pick_next` is asked again).
    - :meth:`select_cpu`: the CPU a waking or new task is enqueued on.

    Must override: :meth:`enqueue`, :meth:`dequeue`, :meth:`pick_next`. The others have the
    defaults documented on each. Build per-run state in :meth:`setup`, which every run calls
    first (an instance may run many times). ``name`` (default: the class's name) is what results
    carry as their ``policy``.

    What is refused, ending the run with a :class:`PolicyError`: an exception in any hook; a
    yes/no hook returning anything but True, False or None; :meth:`pick_next` returning a task not
    enqueued on that CPU or something other than an int or None; :meth:`select_cpu` returning a
    CPU outside the machine or the task's affinity, or something other than an int.

    Not offered to Python classes (yet): the periodic load balancer (tasks move between CPUs
    only where :meth:`select_cpu` places them), RT tasks (the stacked RT class schedules
    SCHED_FIFO/RR tasks before yours, as in the kernel), and the runtime host.
    """

    name: Optional[str] = None

    def setup(self, ncpus: int) -> None:
        """Called at the start of every run, before any task exists, with the machine's CPU count:
        build the runqueues here. Default: nothing."""

    def enqueue(self, cpu: int, task: int, nice: int, now: int, why: str) -> None:
        """``task`` becomes runnable on ``cpu``. ``why``: ``"wakeup"``, ``"new"`` (first
        enqueue after fork), ``"migrate"`` (moved here: an affinity change) or ``"restore"``
        (back after a nice or policy change)."""
        raise NotImplementedError("a Policy must define enqueue(cpu, task, nice, now, why)")

    def dequeue(self, cpu: int, task: int, now: int, why: str) -> None:
        """``task`` stops being runnable on ``cpu``. ``why``: ``"sleep"``, ``"migrate"``,
        ``"save"`` (before a nice or policy change; enqueued again at once) or ``"exit"``."""
        raise NotImplementedError("a Policy must define dequeue(cpu, task, now, why)")

    def pick_next(self, cpu: int, now: int) -> Optional[int]:
        """The task to run next on ``cpu`` (one enqueued there), or None."""
        raise NotImplementedError("a Policy must define pick_next(cpu, now)")

    def put_prev(self, cpu: int, task: int, now: int) -> None:
        """``task`` stops running on ``cpu`` (it may still be enqueued: preempted, yielding).
        Default: nothing."""

    def tick(self, cpu: int, task: int, now: int) -> bool:
        """A timer tick on ``cpu`` while ``task`` runs there; True to reschedule. Default: False
        (no preemption by time)."""
        return False

    def yield_task(self, cpu: int, task: int, now: int) -> bool:
        """``task``, running on ``cpu``, called ``sched_yield()``; True to reschedule. Default:
        True, with nothing moved (so :meth:`pick_next` decides whether another task runs)."""
        return True

    def wakeup_preempt(self, cpu: int, curr: Optional[int], woken: int, now: int) -> bool:
        """``woken`` was just enqueued on ``cpu``, where ``curr`` (of this class) runs; True to
        preempt it. Default: False."""
        return False

    def select_cpu(self, task: int, prev_cpu: int, waker_cpu: int, allowed: Sequence[int],
                   nr_running: Sequence[int], fork: bool) -> int:
        """The CPU to enqueue a waking (``fork`` False) or new (``fork`` True) task on.
        ``prev_cpu``: where it last ran (for a new task, its parent's CPU); ``waker_cpu``: where
        the wakeup runs; ``allowed``: the CPUs its affinity allows; ``nr_running[c]``: the
        runnable tasks CPU ``c`` published. Default: a waking task's previous CPU if allowed,
        else the allowed CPU with the fewest runnable tasks (the first of those)."""
        if not fork and prev_cpu in allowed:
            return prev_cpu
        return min(allowed, key=lambda c: nr_running[c])

    def fork(self, task: int, parent: Optional[int], cpu: int) -> bool:
        """A new task, forked by ``parent`` running on ``cpu`` (None: created from nothing),
        before its first enqueue; True asks the parent to reschedule. Default: False."""
        return False

    def exit(self, task: int) -> None:
        """``task`` leaves the system (after its last dequeue). Default: nothing."""
