#!/usr/bin/env python3
"""Prints docs/validation.md's table of what a message costs in the suite's hackbench and
messaging recordings against what it costs in the built-in model that stands for each: the
recorded busy CPU time per message (the recording's busy CPU time, as `schedkit validate`
measures it, over the benchmark's message count), the model's (its simulated CPU time, idle
excluded, over the same count), and the model's headline figure against the real run's:

    python3 scripts/figures/model-costs.py SCHEDKIT

The message count is hackbench's: groups x 20 senders x 20 receivers x loops (the model's
own `count`, checked against it). Simulated figures: deterministic for a given schedkit."""
import json
import os
import re
import subprocess
import sys
import tempfile


def run(args):
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{r.stderr}")


def main(schedkit):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "validate.json")
        run([schedkit, "validate", "--quiet", "--json", out])
        with open(out) as f:
            data = json.load(f)
        print("| workload | model | messages | recorded CPU per message (µs) "
              "| model CPU per message (µs) | model ÷ recorded headline |")
        print("|---|---|---|---|---|---|")
        for w in data["workloads"]:
            r = w["result"]
            model = r.get("model")
            spec = next((s["model"] for s in suite() if s["name"] == w["name"]), None)
            if not model or not spec or not spec.startswith("hackbench:"):
                continue
            opts = dict(kv.split("=") for kv in spec.split(":", 1)[1].split(","))
            msgs = int(opts["groups"]) * 20 * 20 * int(opts["loops"])
            busy_ms = next(x["recorded"] for x in r["rows"] if x["figure"] == "busy CPU time (ms)")
            sim = os.path.join(tmp, w["name"] + ".json")
            run([schedkit, "sim", "--quiet", "--policy", data["policy"], "--machine",
                 data["machine"], "--workload", spec, "--duration", "60s", "--json", sim])
            with open(sim) as f:
                m = json.load(f)["metrics"]
            if m["throughput"]["count"] != msgs:
                sys.exit(f"{spec}: counted {m['throughput']['count']} messages, not {msgs}")
            cpu = sum(v for k, v in m["cpu_time_s"].items() if k != "idle")
            count = f"{msgs:,}".replace(",", " ")
            print(f"| {w['name']} | `{spec}` | {count} | {busy_ms * 1e3 / msgs:.2f} | "
                  f"{cpu * 1e6 / msgs:.2f} | {model['replayed'] / model['recorded']:.2f} |")


def suite():
    """The suite's workloads: (name, model) from traces/validation/suite.toml."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "traces", "validation", "suite.toml")).read()
    out = []
    for block in text.split("[[workload]]")[1:]:
        name = re.search(r'^name = "([^"]+)"', block, re.M)
        model = re.search(r'^model = "([^"]+)"', block, re.M)
        out.append({"name": name.group(1), "model": model.group(1) if model else None})
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
