#!/usr/bin/env python3
"""The tables of docs/modern.md's "Hybrid cores": eevdf:era=6.18 against eevdf and cfs on the
two hybrid profiles (examples/hybrid-mix.toml and cpujob), and the mix with its workers clamped
(uclamp = [0, 30]) under eevdf:era=6.18. One `schedkit sim --json` run each, seed 1; the cells
are read from the JSON (power.by_core_type for where the busy time and the energy went).

    python3 scripts/figures/hybrid-tables.py [SCHEDKIT]
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEDKIT = sys.argv[1] if len(sys.argv) > 1 else "schedkit"
POLICIES = ["eevdf:era=6.18", "eevdf", "cfs"]
HEADER = ("| policy | time (s) | throughput | energy (J) | J per unit | big/P busy share "
          "| big/P cores' J | small cores' J | mean busy MHz | migrations | longest wait (ms) |")


def run(tmp, machine, policy, workload, duration):
    out = os.path.join(tmp, "run.json")
    subprocess.run([SCHEDKIT, "sim", "--machine", machine, "--policy", policy, "--workload",
                    workload, "--duration", duration, "--json", out],
                   cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    with open(out) as f:
        r = json.load(f)
    m = r["metrics"]
    p = m["power"]
    types = p["by_core_type"]
    busy = sum(t["busy_s"] for t in types)
    big = sum(t["busy_s"] for t in types if t["biggest"])
    big_j = sum(t["energy_j"] for t in types if t["biggest"])
    small_j = sum(t["energy_j"] for t in types if not t["biggest"])
    units = m["throughput"]["value"] * r["simulated_s"]
    mhz = sum(f["mhz"] * f["share"] for f in p["busy_at_mhz"])
    return (f"| `{policy}` | {r['simulated_s']:.2f} | {m['throughput']['value']:.2f} "
            f"{m['throughput']['unit']} | {p['energy_j']:.1f} | {p['energy_j'] / max(units, 1e-9):.3f} "
            f"| {big / busy:.2f} | {big_j:.1f} | {small_j:.1f} | {mhz:.0f} | {m['migrations']} "
            f"| {m['longest_runnable_wait_us'] / 1000:.2f} |")


def table(tmp, machine, workload, duration, policies=POLICIES):
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for pol in policies:
        print(run(tmp, machine, pol, workload, duration))
    print()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        mix = "examples/hybrid-mix.toml"
        with open(os.path.join(ROOT, mix)) as f:
            text = f.read()
        clamped = os.path.join(tmp, "hybrid-mix-clamped.toml")
        with open(clamped, "w") as f:
            f.write(text.replace('name = "worker"\ncount = 3\n',
                                 'name = "worker"\ncount = 3\nuclamp = [0, 30]\n'))
        table(tmp, "exynos5422", mix, "10s")
        table(tmp, "exynos5422", "cpujob:threads=2,work=2s", "60s")
        table(tmp, "exynos5422", clamped, "10s", ["eevdf:era=6.18"])
        table(tmp, "alderlake-12900k", mix, "10s")
        table(tmp, "alderlake-12900k", "cpujob:threads=20,work=2s", "60s")


main()
