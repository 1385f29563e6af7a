#!/usr/bin/env python3
"""Prints the tables of docs/rt.md (rt-migrate-test on the 2002 SMP profiles, passive against
push/pull balancing) and docs/locks.md (AIM7 with the big kernel lock as a hand-off or an
opportunistic semaphore) from the JSON that scripts/golden.sh writes (its `rt` and `locks`
runs, the same commands the docs show):

    python3 scripts/figures/golden-tables.py DIR rt       # docs/rt.md
    python3 scripts/figures/golden-tables.py DIR locks    # docs/locks.md

The simulator is deterministic, so the tables reproduce exactly from the same commit."""
import json
import os
import sys


def load(d, name):
    with open(os.path.join(d, f"{name}.json")) as f:
        return json.load(f)


def thousands(v):
    return f"{v:,.0f}"


def delay(us):
    # A start delay of a tick or more reads as whole µs; the short ones keep a decimal.
    return f"{us:.1f}" if us < 20 else f"{us:.0f}"


def rt_table(runs):
    print("| machine | mode | failed iterations (of 50) | worst start delay of the highest thread "
          "| per-thread worst start delay, lowest → highest (µs) | pushes / pulls "
          "| RT inversions seen by the audit |")
    print("|---" * 7 + "|")
    for r in runs:
        m = r["metrics"]
        mig, rt = m["rtmigrate"], m["rt"]
        failed = str(mig["failed_iterations"])
        if mig["first_failure"] is not None:
            failed += f" (first: iteration {mig['first_failure']})"
        per_thread = ", ".join(delay(s["max"]) for s in mig["start_delay_us"])
        moves = "–" if r["rt_balance"] == "passive" else f"{rt['pushes']} / {rt['pulls']}"
        print(f"| {r['machine']} | {r['rt_balance']} | {failed} | "
              f"{delay(mig['worst_start_delay_highest_us'])} µs | {per_thread} | {moves} | "
              f"{rt['inversions']} |")


def locks_table(runs):
    print("| machine | mode | jobs/min | idle | switches/s | BKL acquisitions / contended / "
          "hand-offs / steals | BKL wait total / max | console task wakeup p50 / p99 µs "
          "(samples) | simulated s |")
    print("|---" * 9 + "|")
    for r in runs:
        m = r["metrics"]
        bkl = next(l for l in m["sleep_locks"] if l["name"] == "bkl")
        lat = m["interactive_wakeup_latency_us"]
        counts = " / ".join(thousands(bkl[k])
                            for k in ("acquisitions", "contended", "handoffs", "steals"))
        print(f"| {r['machine']} | {r['lock_mode']} | {thousands(m['throughput']['value'])} | "
              f"{m['idle_fraction']:.3f} | {thousands(m['context_switches_per_s'])} | {counts} | "
              f"{thousands(bkl['wait_us_total'] / 1e6)} s / {thousands(bkl['wait_us_max'] / 1e3)} ms | "
              f"{lat['p50']:.1f} / {thousands(lat['p99'])} ({lat['count']}) | "
              f"{r['simulated_s']:.2f} |")


TABLES = {"rt": rt_table, "locks": locks_table}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in TABLES:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    TABLES[sys.argv[2]](load(sys.argv[1], sys.argv[2]))
