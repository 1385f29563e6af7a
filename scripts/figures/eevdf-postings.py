#!/usr/bin/env python3
"""The table of docs/modern.md's "EEVDF against CFS on the Zen 3 server": the workloads of the
EEVDF series' test reports (hackbench, schbench, tbench, netperf TCP_RR) at a few loads on
`epyc-7763-2s` (2 x EPYC 7763, NPS1), under `cfs:era=2.6.32` (the latest CFS the project has;
the reports compared against 6.5's) and `eevdf:era=6.6`. One `schedkit sim --json` run per
cell, seed 1; the cells are read from the JSON. Two runs at a time (the machine's CPUs).

    python3 scripts/figures/eevdf-postings.py --table SCHEDKIT   # the doc's table
    python3 scripts/figures/eevdf-postings.py --raw SCHEDKIT     # every run's metrics, as JSON
"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MACHINE = "epyc-7763-2s"
CFS, EEVDF = "cfs:era=2.6.32", "eevdf:era=6.6"

# (row label, load label, workload, duration, figure): the figure is "time" (the run's
# simulated time: hackbench's Time, lower is better), "p99" (the workers' wakeup latency p99,
# schbench's figure, lower is better) or "rate" (the throughput, higher is better, in the
# workload's unit).
ROWS = [
    ("hackbench (pipes, processes)", "4 groups", "hackbench:groups=4,loops=1000", "10s", "time"),
    ("", "8 groups", "hackbench:groups=8,loops=1000", "10s", "time"),
    ("", "16 groups", "hackbench:groups=16,loops=1000", "10s", "time"),
    ("schbench (2 messengers)", "32 workers", "schbench:messages=2,workers=16", "500ms", "p99"),
    ("", "128 workers", "schbench:messages=2,workers=64", "500ms", "p99"),
    ("", "256 workers", "schbench:messages=2,workers=128", "500ms", "p99"),
    ("", "512 workers", "schbench:messages=2,workers=256", "500ms", "p99"),
    ("tbench", "16 clients", "tbench:clients=16", "100ms", "rate"),
    ("", "128 clients", "tbench:clients=128", "100ms", "rate"),
    ("", "256 clients", "tbench:clients=256", "100ms", "rate"),
    ("", "512 clients", "tbench:clients=512", "100ms", "rate"),
    ("netperf TCP_RR", "16 instances", "netperf:instances=16", "100ms", "rate"),
    ("", "128 instances", "netperf:instances=128", "100ms", "rate"),
    ("", "256 instances", "netperf:instances=256", "100ms", "rate"),
    ("", "512 instances", "netperf:instances=512", "100ms", "rate"),
    ("SPECrate-style copies", "512 copies", "examples/specrate-copies.toml", "1s", "rate"),
]

HEADER = ("| workload | load | figure | cfs:era=2.6.32 | eevdf:era=6.6 | eevdf / cfs "
          "| switches/s (cfs / eevdf) | migrations (cfs / eevdf) | idle share (cfs / eevdf) "
          "| longest wait, ms (cfs / eevdf) |")


def run(schedkit, tmp, n, policy, workload, duration, kind):
    out = os.path.join(tmp, f"run{n}.json")
    argv = [schedkit, "sim", "--machine", MACHINE, "--policy", policy, "--workload", workload,
            "--duration", duration, "--seed", "1", "--json", out]
    if kind != "time":
        # The second half is the measured phase; the first is the warm-up (schbench's -w,
        # the pairs settling where the wakeups put them).
        argv += ["--phases", half(duration)]
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    with open(out) as f:
        return json.load(f)


def half(duration):
    for unit in ("ms", "s"):
        if duration.endswith(unit):
            return f"{int(duration[:-len(unit)]) * (1000 if unit == 's' else 1) // 2}ms"
    raise ValueError(duration)


def measured(r, kind):
    """(figure, switches/s, migrations) of the measured part: hackbench's whole run, the
    others' second half."""
    m = r["metrics"]
    if kind == "time":
        return r["simulated_s"] * 1000, m["context_switches_per_s"], m["migrations"]
    p = r["phases"][-1]
    fig = p["interactive_wakeup_latency_us"]["p99"] if kind == "p99" else p["throughput"]
    return fig, p["context_switches_per_s"], p["migrations"]


FIGURE = {"time": "Time (ms)", "p99": "wakeup p99 (us)"}


def fmt(v, kind):
    if kind == "rate":
        return f"{v / 1e6:.3f} M" if v >= 1e6 else f"{v:,.0f}".replace(",", " ")
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def short(v):
    """A rate in three figures: 63.7 k, 1.85 M."""
    for div, unit in ((1e6, " M"), (1e3, " k")):
        if v >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:.3g}"


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("--table", "--raw"):
        print(__doc__, file=sys.stderr)
        return 2
    schedkit = sys.argv[2]
    jobs = [(pol, w, d, k) for _, _, w, d, k in ROWS for pol in (CFS, EEVDF)]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda nj: run(schedkit, tmp, nj[0], *nj[1]), enumerate(jobs)))
    by = {(pol, w): r for (pol, w, _, _), r in zip(jobs, results)}
    if sys.argv[1] == "--raw":
        json.dump([{"policy": p, "workload": w, "result": r} for (p, w), r in by.items()],
                  sys.stdout, indent=1)
        return 0
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, load, w, _, kind in ROWS:
        c, e = by[(CFS, w)], by[(EEVDF, w)]
        (fc, sc, mc), (fe, se, me) = measured(c, kind), measured(e, kind)
        cm, em = c["metrics"], e["metrics"]
        name = FIGURE.get(kind) or cm["throughput"]["unit"]
        print(f"| {label} | {load} | {name} | {fmt(fc, kind)} | {fmt(fe, kind)} "
              f"| {fe / fc:.3f} | {short(sc)} / {short(se)} | {mc} / {me} "
              f"| {cm['idle_fraction']:.3f} / {em['idle_fraction']:.3f} "
              f"| {cm['longest_runnable_wait_us'] / 1000:.2f} / "
              f"{em['longest_runnable_wait_us'] / 1000:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
