#!/usr/bin/env python3
"""Prints the three tables of docs/results.md ("Figures", "The counters that explain them" and
the 8-way chat at three nice settings) from the JSON that scripts/golden.sh writes:
`python3 scripts/results-tables.py DIR`.
The simulator is deterministic, so the tables reproduce exactly from the same commit."""
import json
import sys

POL = ["goodness", "o1:era=2002", "o1"]
MACHINES = ["up-2002", "smp2-2002", "smp4-2002", "smp8-2002"]


def load(d):
    runs = []
    for name in ["results-up", "results-smp2", "results-smp4", "results-smp8",
                 "results-chat-up", "results-chat-smp"]:
        with open(f"{d}/{name}.json") as f:
            runs += json.load(f)
    return runs


def workload_label(w):
    # ctx:procs=2 prints as ctx:procs=2,size=0 (the size default made explicit).
    if w == "ctx:procs=2":
        return "ctx:procs=2,size=0"
    return w


def figure(r):
    m = r["metrics"]
    w = r["workload"]
    if w.startswith("yield"):
        return "yields/s", m["throughput"]["value"], "rate"
    if w.startswith("fork"):
        mode = w.split("mode=")[1]
        return f"µs per fork+{mode}", list(m["per_op_us"].values())[0], "time"
    if w.startswith("ctx"):
        return "µs per hop", m["per_op_us"]["us_per_hop"], "time"
    return "messages/s", m["throughput"]["value"], "rate"


def fmt(v, kind):
    if kind == "rate":
        return f"{v:,.0f}"
    return f"{v:.2f}" if v < 100 else f"{v:.1f}"


ORDER = ["yield", "fork:mode=exit", "fork:mode=exec", "fork:mode=sh", "ctx:procs=16,size=16",
         "ctx:procs=2,size=0", "chat:rooms=10,messages=100", "chat:rooms=10,messages=100,nice=19",
         "chat:rooms=10,messages=1000", "chat:rooms=10,messages=1000,nice=19",
         "chat:rooms=10,messages=1000,client_nice=19"]


def rank(w):
    for i, p in enumerate(ORDER):
        if w == p or (p == "yield" and w.startswith("yield")):
            return i
    return len(ORDER)


def main():
    runs = load(sys.argv[1] if len(sys.argv) > 1 else "target/golden")
    by = {(r["machine"], r["workload"], r["policy"]): r for r in runs}
    keys = sorted({(r["machine"], r["workload"]) for r in runs},
                  key=lambda k: (MACHINES.index(k[0]), rank(k[1])))
    print("| machine | workload | figure | goodness | o1:era=2002 | o1 | 2002/goodness |")
    print("|---|---|---|---|---|---|---|")
    for mach, w in keys:
        vals = [figure(by[(mach, w, p)]) for p in POL]
        name, _, kind = vals[0]
        g, e = vals[0][1], vals[1][1]
        ratio = e / g if kind == "rate" else g / e
        cells = " | ".join(fmt(v[1], kind) for v in vals)
        print(f"| {mach} | `{workload_label(w)}` | {name} | {cells} | {ratio:.2f}x |")
    print()
    print("| machine | workload | policy | lock spin s | migrations | coherence transfers (cross-bus) | bus wait ms | COW faults / copies | mm line transfers | scanned |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mach, w in keys:
        if mach == "up-2002" or w.startswith("ctx"):
            continue
        for p in POL:
            m = by[(mach, w, p)]["metrics"]
            ic = m.get("interconnect") or {}
            mm = m.get("mm") or {}
            print(f"| {mach} | `{workload_label(w)}` | {p} | {m['cpu_time_s']['lock_spin']:.2f} | "
                  f"{m['migrations']:,} | {ic.get('transfers', 0):,} ({ic.get('cross_bus', 0):,}) | "
                  f"{ic.get('bus_wait_us', 0) / 1000:,.1f} | {mm.get('cow_faults', 0):,} / "
                  f"{mm.get('cow_copies', 0):,} | {mm.get('line_transfers', 0):,} | "
                  f"{m['sched_ops']['tasks_scanned']:,} |")
    print()
    # chat on the 8-way, 10 rooms x 1000 messages, at three nice settings (thousands a second).
    print("| | goodness | o1:era=2002 | o1 |")
    print("|---|---|---|---|")
    for label, w in [("all at nice 0", "chat:rooms=10,messages=1000"),
                     ("clients at nice 19", "chat:rooms=10,messages=1000,client_nice=19"),
                     ("all at nice 19", "chat:rooms=10,messages=1000,nice=19")]:
        cells = " | ".join(f"{by[('smp8-2002', w, p)]['metrics']['throughput']['value'] / 1000:.0f} k/s"
                           for p in POL)
        print(f"| {label} | {cells} |")


main()
