#!/usr/bin/env python3
"""Runs `schedkit bench runtime` and prints its rows as the docs' tables of runtime figures, in
the docs' shape (the same header line, the same row labels, a figure where the doc has one):

    python3 scripts/figures/runtime-tables.py SCHEDKIT server [--duration 2s] [--json FILE]
    python3 scripts/figures/runtime-tables.py SCHEDKIT readme-server [--duration 2s] [--json FILE]
    python3 scripts/figures/runtime-tables.py SCHEDKIT readme-bench [--duration 500ms] [--json FILE]

- server: docs/runtime.md's server table, from `schedkit bench runtime --workloads server
  --cpus 1 --duration D --json F` (every policy, every runner);
- readme-server: README.md's short table of the same run (the loaded columns of O(1), CFS
  2.6.32, EEVDF 6.18, BFS and the three peers), from the same command with `--policies
  o1,cfs:era=2.6.32,eevdf:era=6.18,bfs`;
- readme-bench: README.md's table of every default workload, from `schedkit bench runtime
  --policies goodness,o1,cfs,eevdf --duration D --json F` (2 workers, every runner).

--json FILE keeps the bench's JSON rows there; --from FILE prints the table of rows kept so
(the bench is not run; SCHEDKIT is then not used). Each figure is measured now, on this machine:
the values are not the doc's (they move from run to run; see the doc for the machine and date
of its figures), the shape is. A figure the bench did not produce prints as an em dash. Row
labels are the docs' own: "the kernel's EEVDF" is the project VM's Linux 6.18, whatever kernel
runs the command.
`scripts/check-docs.py --shapes` runs these with a short --duration and compares the shape.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

# How each schedkit policy is named in the tables.
POLICY = {
    "goodness": "2.4 goodness",
    "o1": "O(1)",
    "o1:era=2002": "O(1) 2002",
    "cfs:era=2.6.23": "CFS 2.6.23",
    "cfs": "CFS 2.6.24",
    "cfs:era=2.6.32": "CFS 2.6.32",
    "eevdf": "EEVDF 6.6",
    "eevdf:era=6.18": "EEVDF 6.18",
    "bfs": "BFS 0.404",
}


def group(s):
    """'12345' -> '12 345' (the docs' thousands separator)."""
    neg = s.startswith("-")
    s = s.lstrip("-")
    out = ""
    while len(s) > 3:
        out = " " + s[-3:] + out
        s = s[:-3]
    return ("-" if neg else "") + s + out


def fig(v, sig=3):
    """A figure as the docs write it: whole numbers from 100 up (grouped by thousands), three
    significant figures below; an em dash for a figure the bench did not produce."""
    if v is None or not math.isfinite(v):
        return "—"
    if abs(v) < 100:
        v = float(f"{v:.{sig}g}")  # rounded first, so that 9.96 is 10 and 99.96 is 100
    if abs(v) >= 100:
        return group(str(round(v)))
    if v == 0:
        return "0"
    digits = max(0, sig - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f}"


def whole(v):
    """A figure rounded to a whole number, as the server tables write them."""
    if v is None or not math.isfinite(v):
        return "—"
    return group(str(round(v)))


def ratio(x):
    """A ratio to two significant figures below 100 (as the docs write them): 48×, 2.5×."""
    if x is None or not math.isfinite(x):
        return "—"
    return fig(x, 2) + "×"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


class Rows:
    """The bench's JSON rows, looked up by (workload, runner, policy)."""

    def __init__(self, rows):
        self.rows = rows
        self.by = {(r["workload"], r["runner"], r["policy"]): r["value"] for r in rows}
        # A peer's first row of each workload (its policy field names the peer's variant, e.g.
        # Go's `net/http`; JSON writes a figure that is not a number as null).
        self.first = {}
        for r in rows:
            self.first.setdefault((r["workload"], r["runner"]), r["value"])

    def get(self, workload, runner, policy=None):
        """The figure, or None; without a policy, the runner's first row of the workload."""
        if policy is None:
            v = self.first.get((workload, runner))
        else:
            v = self.by.get((workload, runner, policy))
        return v if isinstance(v, (int, float)) and math.isfinite(v) else None

    def policies(self, workload):
        """The schedkit policies with a row for `workload`, in the bench's order."""
        seen = []
        for r in self.rows:
            if r["workload"] == workload and r["runner"] == "schedkit" \
                    and r["policy"] not in seen:
                seen.append(r["policy"])
        return seen


def server_row(rows, runner, policy, phases):
    cells = []
    for phase in phases:
        cells += [whole(rows.get(f"server/{phase}/{q}", runner, policy))
                  for q in ("p50", "p99", "p99.9")]
    return cells


SERVER_PEERS = [("os-threads", "OS threads (the kernel's EEVDF)"), ("tokio", "Tokio"),
                ("go", "Go net/http")]


def server(rows):
    """docs/runtime.md, "The server workload"."""
    header = ["runner", "unloaded p50", "p99", "p99.9", "loaded p50", "p99", "p99.9",
              "short req/s loaded", "heavy req/s"]
    out = []
    runners = [("schedkit", p, f"schedkit, {POLICY.get(p, p)}")
               for p in rows.policies("server/loaded/p50")]
    runners += [(r, None, label) for r, label in SERVER_PEERS]
    for runner, policy, label in runners:
        out.append([label] + server_row(rows, runner, policy, ["unloaded", "loaded"]) +
                   [whole(rows.get("server/loaded/short", runner, policy)),
                    whole(rows.get("server/loaded/heavy", runner, policy))])
    return table(header, out)


README_SERVER_POLICIES = ["o1", "cfs:era=2.6.32", "eevdf:era=6.18", "bfs"]
README_SERVER_PEERS = [("os-threads", "OS threads (heavy threads at nice 19)"),
                       ("tokio", "Tokio (no priorities)"),
                       ("go", "Go net/http (no priorities)")]


def readme_server(rows):
    """README.md, "The runtime": short requests beside heavy ones."""
    header = ["runner", "p50", "p99", "p99.9", "short req/s"]
    runners = [("schedkit", p, f"schedkit, {POLICY[p]}") for p in README_SERVER_POLICIES]
    runners += [(r, None, label) for r, label in README_SERVER_PEERS]
    return table(header, [[label] + server_row(rows, runner, policy, ["loaded"]) +
                          [whole(rows.get("server/loaded/short", runner, policy))]
                          for runner, policy, label in runners])


README_BENCH_POLICIES = ["goodness", "o1", "cfs", "eevdf"]


def readme_bench(rows):
    """README.md, "The runtime": every default workload, each figure with its ratio to OS
    threads (> 1 better), as `bench runtime`'s own table orients it."""
    header = ["workload", "unit", "raw switch", "2.4 goodness", "O(1)", "CFS 2.6.24", "EEVDF",
              "OS threads", "Tokio", "Go"]
    peers = ["tokio", "go"]

    def with_ratio(v, base, higher_better, scale):
        if v is None:
            return "—"
        if base is None or base == 0 or v == 0:
            return fig(v / scale)
        return f"{fig(v / scale)} ({ratio(v / base if higher_better else base / v)})"

    def line(label, unit, workload, scale, higher_better, suffix="", peers_too=True,
             raw=False):
        base = rows.get(workload, "os-threads")
        cells = [label, unit]
        cells.append(with_ratio(rows.get(workload, "schedkit", "raw switch"), base,
                                higher_better, scale) if raw else "")
        cells += [with_ratio(rows.get(workload, "schedkit", p + suffix), base, higher_better,
                             scale) for p in README_BENCH_POLICIES]
        cells.append(fig(base / scale) if base is not None else "—")
        cells += [with_ratio(rows.get(workload, r), base, higher_better, scale)
                  if peers_too else "" for r in peers]
        return cells

    out = [
        line("yield", "M yields/s/core", "yield", 1e6, True, raw=True),
        line("pingpong, pair on one worker", "ns/round trip", "pingpong", 1, False,
             suffix=" same cpu"),
        line("pingpong, pair across workers", "ns/round trip", "pingpong", 1, False,
             suffix=" cross cpu", peers_too=False),
        line("chat", "M msgs/s", "chat", 1e6, True),
        line("spawn", "ns/spawn+join", "spawn", 1, False),
    ]
    # Tokio and OS threads cannot pin a pair to one worker: their one figure is the first row's.
    out[2][7] = "(as above)"

    def late(runner, policy=None):
        p50 = rows.get("wakeup-nice0/p50", runner, policy)
        p99 = rows.get("wakeup-nice0/p99", runner, policy)
        return f"{fig(p50)} / {fig(p99)}"

    out.insert(4, ["wakeup, hogs nice 0", "µs late p50 / p99", ""] +
               [late("schedkit", p) for p in README_BENCH_POLICIES] +
               [late("os-threads"), late("tokio"), late("go")])

    def lock(a, b, pa, pb, runner, policy):
        return (f"{a} {fig(scaled(rows.get('lock', runner, policy + pa)))}, "
                f"{b} {fig(scaled(rows.get('lock', runner, policy + pb)))}")

    def scaled(v):
        return None if v is None else v / 1e6

    out.append(["lock, 8 contenders", "M acquisitions/s", ""] +
               [lock("hand-off", "opportunistic", " sem-handoff", " sem-opportunistic",
                     "schedkit", p) for p in README_BENCH_POLICIES] +
               [lock("std", "parking_lot", "std::Mutex", "parking_lot::Mutex",
                     "os-threads", ""), "", ""])
    return table(header, out)


# name: (the bench's arguments, the function printing the table)
TABLES = {
    "server": (["--workloads", "server", "--cpus", "1"], server),
    "readme-server": (["--workloads", "server", "--cpus", "1", "--policies",
                       ",".join(README_SERVER_POLICIES)], readme_server),
    "readme-bench": (["--policies", ",".join(README_BENCH_POLICIES)], readme_bench),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("schedkit", help="the schedkit binary")
    ap.add_argument("table", choices=sorted(TABLES))
    ap.add_argument("--duration", help="the bench's --duration (its default if not given)")
    ap.add_argument("--json", help="keep the bench's JSON rows in this file")
    ap.add_argument("--from", dest="source", metavar="JSON",
                    help="print the table of these JSON rows (a run's --json) instead of running")
    a = ap.parse_args()
    args, show = TABLES[a.table]
    if a.source:
        with open(a.source) as f:
            print(show(Rows(json.load(f))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = a.json or os.path.join(tmp, "rows.json")
        argv = [a.schedkit, "bench", "runtime"] + args + ["--json", path]
        if a.duration:
            argv += ["--duration", a.duration]
        p = subprocess.run(argv, stdout=subprocess.DEVNULL)
        if p.returncode != 0:
            print(f"`{' '.join(argv)}` failed ({p.returncode})", file=sys.stderr)
            return 1
        with open(path) as f:
            rows = Rows(json.load(f))
    print(show(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
