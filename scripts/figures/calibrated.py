#!/usr/bin/env python3
"""Prints docs/validation.md's two tables of the suite on calibrated profiles: how many figures
meet their targets on `host` and on two profiles that `schedkit calibrate` wrote on the project
machine (docs/data/calibration-2026-11-27/cal-1.toml and cal-2.toml, committed as written), and
the built-in models' headline figures on each, beside what the benchmark printed:

    python3 scripts/figures/calibrated.py SCHEDKIT

The second table has one more column, an experiment: cal-1.toml with its two AF_UNIX socket
costs (`sock_send_ns`, `sock_recv_ns`) replaced by host's, every other value kept. The profiles
are files, so the tables reproduce exactly while the suite and the model are unchanged."""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "docs", "data", "calibration-2026-11-27")
HOST = os.path.join(ROOT, "profiles", "host.toml")


def validate(schedkit, machine, tmp):
    out = os.path.join(tmp, "validate.json")
    run = subprocess.run([schedkit, "validate", "--quiet", "--machine", machine, "--json", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # validate exits 0 without --check; anything else is a failure to report.
    if run.returncode != 0:
        sys.exit(f"schedkit validate --machine {machine} failed:\n{run.stderr}")
    with open(out) as f:
        return {w["name"]: w["result"] for w in json.load(f)["workloads"]}


def host_value(key):
    """A [kernel] value of profiles/host.toml, read as the profile states it."""
    with open(HOST) as f:
        for line in f:
            m = re.match(rf"\s*{key}\s*=\s*([0-9.]+)", line)
            if m:
                return m.group(1)
    sys.exit(f"{HOST}: no {key}")


def with_host_sockets(src, dst):
    """cal-1.toml with host's two socket costs; fails if either line is missing."""
    with open(src) as f:
        text = f.read()
    for key in ("sock_send_ns", "sock_recv_ns"):
        text, n = re.subn(rf"(?m)^{key}\s*=\s*[0-9.]+.*$",
                          f"{key} = {host_value(key)}  # host's value (experiment)", text)
        if n != 1:
            sys.exit(f"{src}: expected one {key} line, found {n}")
    with open(dst, "w") as f:
        f.write(text)


def rows_of(result):
    rows = list(result["rows"])
    if result.get("model"):
        rows.append(result["model"])
    return [r for r in rows if r["within"] is not None]


def summary(name, results):
    figures = [r for res in results.values() for r in rows_of(res)]
    within = sum(r["within"] for r in figures)
    some = sum(bool(r["within_some_run"]) for r in figures)
    busy = [r for res in results.values() for r in res["rows"]
            if r["figure"] == "busy CPU time (ms)"]
    models = [res["model"] for res in results.values() if res.get("model")]
    return (f"| {name} | {within} of {len(figures)} | {some} of {len(figures)} | "
            f"{sum(r['within'] for r in busy)} of {len(busy)} | "
            f"{sum(r['within'] for r in models)} of {len(models)} |")


def model_cell(result):
    m = result["model"]
    return f"{m['replayed']:.3f} ({m['error'] * 100:+.0f} %)".replace("-", "−")


def main(schedkit):
    profiles = [("host", HOST), ("cal-1.toml", os.path.join(DATA, "cal-1.toml")),
                ("cal-2.toml", os.path.join(DATA, "cal-2.toml"))]
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: validate(schedkit, path, tmp) for name, path in profiles}
        swapped = os.path.join(tmp, "cal-1-host-sockets.toml")
        with_host_sockets(profiles[1][1], swapped)
        results["cal-1.toml, host's socket costs"] = validate(schedkit, swapped, tmp)
    print("| profile | figures within target | within target of a recording "
          "| busy CPU within ±10 % | model within ±25 % |")
    print("|---|---|---|---|---|")
    for name, _ in profiles:
        print(summary(name, results[name]))
    print()
    names = list(results)
    print("| workload | printed | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 2) + "|")
    for workload, res in results["host"].items():
        if not res.get("model"):
            continue
        cells = [model_cell(results[n][workload]) for n in names]
        print(f"| {workload} | {res['model']['recorded']:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
