"""Scheduling classes written in Python (``schedkit.Policy``) run in the simulator: the
round robin of examples/python_rr.py shares the CPUs, is deterministic, and decides exactly as
its Rust twin ``rr-rust``; a hook that raises or answers nonsense ends the run with an error
naming the class and the hook; the cost measurement of scripts/figures/python-class-cost.py
runs."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import schedkit

REPO = Path(__file__).resolve().parents[3]

_spec = importlib.util.spec_from_file_location("python_rr", REPO / "examples/python_rr.py")
python_rr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(python_rr)
RoundRobin = python_rr.RoundRobin

# The seeds' workloads: the announcement's yield loop and chat, and a pipe one (hackbench).
WORKLOADS = ["yield:instances=4", "chat:rooms=2,messages=50", "hackbench:groups=2,loops=50"]


def sim(policy, workload="yield:instances=4", duration="100ms", **kw):
    return schedkit.simulate(policy=policy, machine="smp2-2002", workload=workload,
                             duration=duration, **kw)


def figures(r):
    """A result without what may differ between equal runs (the host's wall time) and the
    policy's name."""
    r = dict(r)
    r["metrics"] = dict(r["metrics"], sim=dict(r["metrics"]["sim"], wall_s=None))
    r.pop("policy")
    return r


def test_rr_shares_the_cpus_by_its_slices():
    # 4 busy loops on 2 CPUs: each CPU's two share it only because tick() rotates them.
    r = sim(RoundRobin(), "loops:n=4", "200ms")
    assert r["policy"] == "python-rr"
    assert r["metrics"]["fairness_jain"] > 0.99
    assert r["metrics"]["longest_runnable_wait_us"] <= 100_100  # 10 ticks of the other, at 1000 Hz

    class NoSlice(RoundRobin):
        def tick(self, cpu, task, now):
            return False

    starved = sim(NoSlice(), "loops:n=4", "200ms")
    assert starved["policy"] == "python-rr"
    assert starved["metrics"]["fairness_jain"] < 0.6  # two loops ran, two waited


@pytest.mark.parametrize("workload", WORKLOADS)
def test_rr_runs_a_seed_workload_as_its_rust_twin_does(workload):
    a = sim(RoundRobin(), workload)
    assert a["metrics"]["throughput"]["value"] > 0
    assert a["metrics"]["tasks_created"] > 1
    # Every decision the same as rr-rust's (crates/schedkit-py/src/rr.rs): every figure equal.
    assert figures(a) == figures(sim("rr-rust", workload))


def test_a_python_class_is_deterministic():
    rr = RoundRobin()
    a = sim(rr, "chat:rooms=2,messages=50", seed=3)
    b = sim(rr, "chat:rooms=2,messages=50", seed=3)  # the same instance: setup() starts afresh
    assert figures(a) == figures(b)
    assert figures(a) == figures(sim(RoundRobin(), "chat:rooms=2,messages=50", seed=3))


def test_name_defaults_to_the_class_name():
    class Mine(RoundRobin):
        name = None

    assert sim(Mine(), duration="5ms")["policy"] == "Mine"

    class Numbered(RoundRobin):
        name = 5

    with pytest.raises(schedkit.PolicyError, match="class Numbered: name 5 is not a string"):
        sim(Numbered(), duration="5ms")


class Bomb(RoundRobin):
    """Raises in `hook` at its `after`-th call."""

    def __init__(self, hook, after=5):
        super().__init__()
        self.hook, self.after = hook, after

    def setup(self, ncpus):
        super().setup(ncpus)
        self.calls = 0

    def __getattribute__(self, name):
        if name in ("enqueue", "pick_next", "tick", "select_cpu", "setup") and name == object.__getattribute__(self, "hook"):
            base = object.__getattribute__(self, name)

            def hook(*args):
                if name != "setup":
                    self.calls += 1
                if name == "setup" or self.calls >= self.after:
                    return 1 / 0
                return base(*args)

            return hook
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("hook", ["setup", "enqueue", "pick_next", "select_cpu"])
def test_an_exception_in_a_hook_ends_the_run_naming_the_hook(hook):
    with pytest.raises(schedkit.PolicyError) as e:
        sim(Bomb(hook), "chat:rooms=2,messages=50")
    msg = str(e.value)
    assert msg.startswith("class python-rr: ")
    assert f" {hook}(" in msg
    assert "ZeroDivisionError: division by zero" in msg
    assert "Traceback" in msg and "test_policy.py" in msg


def test_a_required_hook_left_out_is_named():
    class Half(schedkit.Policy):
        def enqueue(self, cpu, task, nice, now, why):
            pass

    with pytest.raises(schedkit.PolicyError, match=r"class Half: dequeue, pick_next not defined"):
        sim(Half(), duration="10ms")


class Liar(RoundRobin):
    def __init__(self, hook, value):
        super().__init__()
        self.hook, self.value = hook, value

    def pick_next(self, cpu, now):
        return self.value if self.hook == "pick_next" else super().pick_next(cpu, now)

    def select_cpu(self, *args):
        return self.value if self.hook == "select_cpu" else super().select_cpu(*args)

    def tick(self, cpu, task, now):
        return self.value if self.hook == "tick" else super().tick(cpu, task, now)


@pytest.mark.parametrize("hook,value,why", [
    ("pick_next", 999, r"returned 999 \(int\): a task not queued on CPU \d \(its runqueue holds \[[\d, ]+\].*\)"),
    ("pick_next", "a", r"returned 'a' \(str\): expected a task id \(int\) or None"),
    ("pick_next", True, r"returned True \(bool\): expected a task id"),
    ("select_cpu", 7, r"returned 7 \(int\): a CPU outside the machine's 0\.\.2"),
    ("select_cpu", -1, r"returned -1 \(int\): expected a CPU number"),
    ("select_cpu", 1.0, r"returned 1\.0 \(float\): expected a CPU number"),
    ("tick", 1, r"returned 1 \(int\): expected True, False or None"),
])
def test_a_wrong_answer_is_refused_naming_the_hook_and_value(hook, value, why):
    with pytest.raises(schedkit.PolicyError, match=rf"class python-rr: {hook}\(.*\) {why}"):
        sim(Liar(hook, value), "chat:rooms=2,messages=50")


def test_a_task_queued_on_the_other_cpu_is_refused():
    class Thief(RoundRobin):
        def pick_next(self, cpu, now):  # the other CPU's head when this one has nothing
            return super().pick_next(cpu, now) or super().pick_next(1 - cpu, now)

    # chat: tasks sleep, so a CPU finds its own queue empty while the other's is not.
    with pytest.raises(schedkit.PolicyError, match=r"pick_next\(cpu=\d, now=\d+\) returned \d+ \(int\): a task not queued on CPU"):
        sim(Thief(), "chat:rooms=2,messages=50")


def test_a_long_runqueue_is_shown_in_part():
    with pytest.raises(schedkit.PolicyError,
                       match=r"returned 999 \(int\): a task not queued on CPU \d \(its runqueue holds \[(\d+, ){15}\d+\], the first 16 of \d+\)"):
        sim(Liar("pick_next", 999), "loops:n=40")


def test_the_affinity_is_kept():
    class Everywhere(RoundRobin):
        def select_cpu(self, task, prev_cpu, waker_cpu, allowed, nr_running, fork):
            return 1  # whatever the task allows

    wl = {"group": [{"name": "pinned", "count": 2, "affinity": [0],
                     "program": ["loop forever", "compute 1ms", "sleep 1ms", "end"]}]}
    with pytest.raises(schedkit.PolicyError,
                       match=r"select_cpu\(task=\d+, .*\) returned 1 \(int\): a CPU outside the task's affinity \[0\]"):
        sim(Everywhere(), wl, "20ms")


def test_a_sweep_refuses_a_python_class():
    with pytest.raises(schedkit.SweepError, match="RoundRobin is a Python class"):
        schedkit.sweep({"policies": [RoundRobin()], "machines": "smp2-2002",
                        "workloads": "yield:instances=2", "duration": "1ms"})


def test_the_cost_per_event_is_measured():
    # The figure script, short: it fails if RoundRobin and rr-rust decide differently, and
    # prints each workload's ns per event of both and their ratio (timings are not asserted).
    out = subprocess.run([sys.executable, str(REPO / "scripts/figures/python-class-cost.py"),
                          "--duration", "20ms", "--repeat", "1"],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [r[0] for r in rows] == ["yield:instances=4", "ctx:procs=4,size=0",
                                    "hackbench:groups=2,loops=200"]
    for r in rows:
        events, rust, py, ratio = int(r[1]), float(r[3]), float(r[4]), float(r[5])
        assert events > 0 and rust > 0 and py > 0
        assert ratio == pytest.approx(py / rust, abs=0.06)


def test_the_examples_run():
    out = subprocess.run([sys.executable, str(REPO / "examples/python_rr.py"), "100ms"],
                         capture_output=True, text=True, check=True).stdout
    assert "python-rr:" in out and "o1:" in out
    nb = subprocess.run([sys.executable, str(REPO / "examples/own_class_notebook.py")],
                        capture_output=True, text=True, check=True, cwd=REPO,
                        env=dict(os.environ, NOTEBOOK_DURATION="200ms")).stdout
    for w in ("yield", "chat", "hackbench"):
        for p in ("python-rr", "o1", "eevdf"):
            assert any(line.split()[:2] == [w, p] for line in nb.splitlines()), (w, p)
    assert "python-rr+wake" in nb
    assert "class python-rr: pick_next(cpu=0, now=0) returned 42 (int): a task not queued on CPU 0" in nb
