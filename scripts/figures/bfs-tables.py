#!/usr/bin/env python3
"""Prints docs/bfs.md's tables from the JSON that scripts/bfs-0400.sh writes: section 1 (the
CPU-bound jobs on the i7-m620: time and energy under each governor), section 2 (make -jN with
the probe on the i7-m620 and the Phenom II X6: completion time, the share of busy time at the
lowest P-state with the energy, and the probe's latency), section 3 (x264 on the Xeon X3360),
section 4 (rtmix on the Athlon MP) and section 5 (the laptop beside a desktop):

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


def spaced(v):
    return f"{v:,.0f}".replace(",", " ")


def short(v):
    """A latency in µs: one decimal below 100, else whole with spaced thousands."""
    return f"{v:.1f}" if v < 100 else spaced(v)


def seconds(v):
    return f"{v:.2f}" if v < 100 else f"{v:.1f}"


def x264_table(d):
    with open(f"{d}/xeon-x264.json") as f:
        runs = {r["policy"]: r for r in json.load(f)
                if r["metrics"]["power"]["governor"] == "ondemand"}
    print("| policy | s | J | migrations | cache refill CPU-s | idle CPU-s "
          "| probe p50 / p99 / max µs |")
    print("|---" * 7 + "|")
    for p in POLICIES:
        r = runs[p]
        m = r["metrics"]
        lat = m["probe_latency_us"]
        print(f"| {p} | {r['simulated_s']:.2f} | {m['power']['energy_j']:.0f} | "
              f"{spaced(m['migrations'])} | {m['cpu_time_s']['cache_refill']:.2f} | "
              f"{m['cpu_time_s']['idle']:.2f} | {lat['p50']:.1f} / {short(lat['p99'])} / "
              f"{spaced(lat['max'])} |")
    print()


def rtmix_table(d):
    with open(f"{d}/rtmix-athlon.json") as f:
        runs = json.load(f)
    print("| policy | RT lateness p50 / p99 / max µs | migrations | fairness (Jain) |")
    print("|---|---|---|---|")
    modes = {"passive": "passive", "pushpull": "push/pull"}
    for r in runs:
        m = r["metrics"]
        label = r["policy"]
        if r.get("rt_balance"):
            label += ", " + modes[r["rt_balance"]]
        lat = m["probe_latency_us"]
        print(f"| {label} | {lat['p50']:.1f} / {spaced(lat['p99'])} / {spaced(lat['max'])} | "
              f"{spaced(m['migrations'])} | {m['fairness_jain']:.3f} |")
    print()


DESKTOP_POLICIES = ["bfs", "bfs:sticky=off", "cfs:era=2.6.32"]


def desktop_table(d):
    print("| job | " + " | ".join(DESKTOP_POLICIES) + " |")
    print("|---" * (1 + len(DESKTOP_POLICIES)) + "|")
    for name, job in [("cpujob-1", "cpujob:threads=1"), ("cpujob-2", "cpujob:threads=2"),
                      ("makej-1", "makej:jobs=1"), ("makej-2", "makej:jobs=2"),
                      ("makej-4", "makej:jobs=4")]:
        with open(f"{d}/i7-{name}-desktop.json") as f:
            runs = {(r["policy"], r["metrics"]["power"]["governor"]): r for r in json.load(f)}
        cells = []
        for p in DESKTOP_POLICIES:
            od, perf = runs[(p, "ondemand")], runs[(p, "performance")]
            cell = f"{seconds(od['simulated_s'])} / {seconds(perf['simulated_s'])}"
            # The CPU-bound jobs' energy, given once (for BFS) in the doc's table.
            if job.startswith("cpujob") and p == "bfs":
                cell += (f" ({od['metrics']['power']['energy_j']:.0f} / "
                         f"{perf['metrics']['power']['energy_j']:.0f} J)")
            cells.append(cell)
        print(f"| `{job}` | " + " | ".join(cells) + " |")


def later_sections(d):
    x264_table(d)
    rtmix_table(d)
    desktop_table(d)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
    print()
    later_sections(sys.argv[1])
