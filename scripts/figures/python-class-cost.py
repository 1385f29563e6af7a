#!/usr/bin/env python3
"""What a scheduling class written in Python costs: examples/python_rr.py's RoundRobin against
its Rust twin `rr-rust` (crates/schedkit-py/src/rr.rs, the same decisions), on the same
workloads in one process, as host wall time per simulated event and their ratio. The two runs
of a workload must give the same figures (else the comparison is void and the script fails).

    pip install ./crates/schedkit-py        # a release build: the figures are for it
    python3 scripts/figures/python-class-cost.py [--duration 1s] [--repeat 5]

Each run's time is the simulator's own (`metrics.sim.wall_s`: no JSON, no interpreter start);
the least of `--repeat` runs is kept. `hooks/ev` counts the Python hook calls per event (one
more run, with a RoundRobin that counts them), and `ns/hook` is the extra time per call: what a
Python class costs is per decision it makes, so a workload where the class decides little
(tasks that rarely sleep) costs little more than in Rust.
"""

import argparse
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import schedkit  # noqa: E402
from python_rr import RoundRobin  # noqa: E402

WORKLOADS = ["yield:instances=4", "ctx:procs=4,size=0", "hackbench:groups=2,loops=200"]

HOOKS = ["setup", "enqueue", "dequeue", "pick_next", "tick", "yield_task", "select_cpu"]


class Counted(RoundRobin):
    """RoundRobin counting the hook calls the adapter makes (those RoundRobin overrides, and
    select_cpu; the adapter skips a default that does nothing)."""

    calls = 0


def _counted(hook):
    base = getattr(RoundRobin, hook)

    def f(self, *args):
        Counted.calls += 1
        return base(self, *args)

    return f


for _h in HOOKS:
    setattr(Counted, _h, _counted(_h))


def run(policy, workload, duration):
    r = schedkit.simulate(policy=policy, machine="smp2-2002", workload=workload, duration=duration)
    wall = r["metrics"]["sim"].pop("wall_s")
    r.pop("policy")
    return wall, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="1s")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    print(f"smp2-2002, {a.duration} simulated, least of {a.repeat} runs; python "
          f"{platform.python_version()} on {platform.machine()}")
    print(f"{'workload':<30} {'events':>9} {'hooks/ev':>8} {'rr-rust ns/ev':>14} {'python ns/ev':>13} "
          f"{'ratio':>6} {'ns/hook':>8}")
    for w in WORKLOADS:
        best = {}
        for _ in range(a.repeat):
            for name, pol in (("rust", "rr-rust"), ("python", RoundRobin())):
                wall, r = run(pol, w, a.duration)
                if name in best and r != best[name][1]:
                    sys.exit(f"{w}: two runs of {name} differ")
                best[name] = (min(wall, best.get(name, (wall,))[0]), r)
        if best["rust"][1] != best["python"][1]:
            sys.exit(f"{w}: RoundRobin and rr-rust gave different figures")
        Counted.calls = 0
        if run(Counted(), w, a.duration)[1] != best["rust"][1]:
            sys.exit(f"{w}: the counting RoundRobin gave different figures")
        ev = best["rust"][1]["metrics"]["sim"]["events"]
        rust, py = (best[k][0] * 1e9 / ev for k in ("rust", "python"))
        # Per call only where calls are many enough for the difference to be more than noise.
        extra = (f"{(best['python'][0] - best['rust'][0]) * 1e9 / Counted.calls:>8.0f}"
                 if Counted.calls > ev / 100 else f"{'-':>8}")
        print(f"{w:<30} {ev:>9} {Counted.calls / ev:>8.3f} {rust:>14.0f} {py:>13.0f} "
              f"{py / rust:>6.1f} {extra}")


if __name__ == "__main__":
    main()
