#!/usr/bin/env python3
"""Prints docs/bfs.md's section 1 table (the CPU-bound jobs on the i7-m620: time and energy
under each governor) and section 2's (make -jN with the probe on the i7-m620 and the Phenom II
X6: completion time, the share of busy time at the lowest P-state with the energy, and the
probe's latency) from the JSON that scripts/bfs-0400.sh writes:

    bash scripts/bfs-0400.sh DIR > /dev/null && python3 scripts/figures/bfs-tables.py DIR

The simulator is deterministic, so the tables reproduce exactly from the same commit."""
import json
import sys

POLICIES = ["bfs", "bfs:sticky=off", "o1", "cfs", "eevdf"]
RUNS = [("i7-m620", "i7", [1, 2, 4]), ("phenom-x6", "phenom", [1, 3, 6, 9, 12])]
# The energy table's rows: the light loads, where the governor's choice shows.
ENERGY_ROWS = [("i7-m620", 1), ("phenom-x6", 1), ("phenom-x6", 3)]
# The probe table's rows.
PROBE_ROWS = [("i7-m620", 1), ("i7-m620", 4), ("phenom-x6", 1), ("phenom-x6", 6),
              ("phenom-x6", 9), ("phenom-x6", 12)]


def load(d):
    runs = {}
    for machine, short, jobs in RUNS:
        for j in jobs:
            with open(f"{d}/{short}-makej-{j}.json") as f:
                for r in json.load(f):
                    gov = r["metrics"]["power"]["governor"]
                    runs[(machine, j, r["policy"], gov)] = r
    return runs


def header():
    print("| machine | -j | " + " | ".join(POLICIES) + " |")
    print("|---" * (2 + len(POLICIES)) + "|")


def cpujob_table(d):
    print("| threads | governor | " + " | ".join(POLICIES) + " |")
    print("|---" * (2 + len(POLICIES)) + "|")
    for n in (1, 2):
        with open(f"{d}/i7-cpujob-{n}.json") as f:
            runs = {(r["policy"], r["metrics"]["power"]["governor"]): r for r in json.load(f)}
        for gov in ("ondemand", "performance", "powersave"):
            cells = [f"{runs[(p, gov)]['simulated_s']:.1f} s / "
                     f"{runs[(p, gov)]['metrics']['power']['energy_j']:.0f} J" for p in POLICIES]
            print(f"| {n} | {gov} | " + " | ".join(cells) + " |")
    print()


def main(d):
    cpujob_table(d)
    runs = load(d)
    header()
    for machine, _, jobs in RUNS:
        for j in jobs:
            cells = [f"{runs[(machine, j, p, 'ondemand')]['simulated_s']:.2f} / "
                     f"{runs[(machine, j, p, 'performance')]['simulated_s']:.2f}"
                     for p in POLICIES]
            print(f"| {machine} | {j} | " + " | ".join(cells) + " |")
    print()
    header()
    for machine, j in ENERGY_ROWS:
        cells = []
        for p in POLICIES:
            power = runs[(machine, j, p, "ondemand")]["metrics"]["power"]
            lowest = min(power["busy_at_mhz"], key=lambda b: b["mhz"])
            cells.append(f"{lowest['share'] * 100:.1f} % / {power['energy_j']:.0f} J")
        print(f"| {machine} | {j} | " + " | ".join(cells) + " |")
    print()
    header()
    for machine, j in PROBE_ROWS:
        cells = []
        for p in POLICIES:
            lat = runs[(machine, j, p, "ondemand")]["metrics"]["probe_latency_us"]
            cells.append(f"{lat['p50']:.1f} / {lat['p99']:.1f} / {lat['max']:.0f}")
        print(f"| {machine} | {j} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
