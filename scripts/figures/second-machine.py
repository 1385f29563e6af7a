#!/usr/bin/env python3
"""Prints docs/validation.md's summary of the holdout set recorded on a second machine
(traces/holdout-xeon: the same six commands as traces/holdout, recorded on an Intel Xeon VM)
beside the first machine's holdout (traces/holdout, the AMD EPYC VM): for each suite and
machine profile, how many figures meet their targets, how many meet them against at least one
of the kernel's five recordings of the command, busy CPU time within ±10 % and the built-in
models within ±25 %:

    python3 scripts/figures/second-machine.py SCHEDKIT

The Xeon set is replayed on the profile its suite names (calibrated.toml, written by
`schedkit calibrate` on that machine while it was recorded), on a second calibration taken a
minute later (calibrated-2.toml) and on `host` (the first machine's profile). Every profile is
a committed file, so the table reproduces exactly while the suites and the model are
unchanged."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RUNS = [
    ("traces/holdout", "first (AMD EPYC)", None),
    ("traces/holdout-xeon", "second (Intel Xeon)", None),
    ("traces/holdout-xeon", "second (Intel Xeon)", "traces/holdout-xeon/calibrated-2.toml"),
    ("traces/holdout-xeon", "second (Intel Xeon)", "host"),
]


def validate(schedkit, suite, machine, tmp):
    out = os.path.join(tmp, "validate.json")
    argv = [schedkit, "validate", os.path.join(ROOT, suite), "--quiet", "--json", out]
    if machine:
        argv += ["--machine", machine if machine == "host" else os.path.join(ROOT, machine)]
    run = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{run.stderr}")
    with open(out) as f:
        doc = json.load(f)
    return doc["machine"], [w["result"] for w in doc["workloads"]]


def judged(result):
    rows = list(result["rows"])
    if result.get("model"):
        rows.append(result["model"])
    return [r for r in rows if r["within"] is not None]


def main(schedkit):
    print("| recorded on | suite | profile | figures within target | within target of a "
          "recording | busy CPU within ±10 % | model within ±25 % |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for suite, machine_name, profile in RUNS:
            name, results = validate(schedkit, suite, profile, tmp)
            figures = [r for res in results for r in judged(res)]
            busy = [r for res in results for r in res["rows"]
                    if r["figure"] == "busy CPU time (ms)"]
            models = [res["model"] for res in results if res.get("model")]
            shown = os.path.basename(profile) if profile and profile != "host" else (
                profile or f"the suite's ({name})")
            n = len(figures)
            print(f"| {machine_name} | `{suite}` | {shown} | "
                  f"{sum(r['within'] for r in figures)} of {n} | "
                  f"{sum(bool(r['within_some_run']) for r in figures)} of {n} | "
                  f"{sum(r['within'] for r in busy)} of {len(busy)} | "
                  f"{sum(r['within'] for r in models)} of {len(models)} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
