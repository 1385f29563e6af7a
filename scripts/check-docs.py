#!/usr/bin/env python3
"""Reruns the commands that print the docs' tables of simulated figures and compares each
printed table with the table of the same header in the doc, cell by cell. The simulator is
deterministic, so every figure must match exactly; a difference prints the doc, the row, the
column, the figure in the doc and the figure printed.

    python3 scripts/check-docs.py [--full] [--schedkit PATH] [--only DOC]

The default (fast) set takes seconds and runs in the test command
(crates/schedkit-cli/tests/docs.rs); --full adds the tables whose runs take minutes
(docs/results.md from scripts/golden.sh, docs/bfs.md from scripts/bfs-0400.sh) and the
`schedkit compare` blocks of docs/fair.md with the output excerpt printed under each. Each check also requires the doc to name its
command within a few lines of the table, so a reader knows what to rerun.

To add a table: make a command print it in the doc's shape (a Markdown table with the same
header line), name the command next to the table in the doc, and add an entry below.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (doc, command with {schedkit} for the binary, the string the doc must show near the table,
#  fast: runs in the test command)
CHECKS = [
    ("docs/fair.md", ["scripts/figures/nice-shares.sh", "{schedkit}"],
     "scripts/figures/nice-shares.sh", True),
    ("docs/validation.md", ["{schedkit}", "validate", "--markdown"],
     "schedkit validate --markdown", True),
    ("docs/fair.md", ["python3", "scripts/figures/wakeup-preempts.py", "{schedkit}", "chat"],
     "scripts/figures/wakeup-preempts.py", False),
    ("docs/fair.md", ["python3", "scripts/figures/wakeup-preempts.py", "{schedkit}",
                      "pipechain"],
     "scripts/figures/wakeup-preempts.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/kernel-ranges.py", "{schedkit}"],
     "scripts/figures/kernel-ranges.py", True),
    ("docs/results.md", ["sh", "-c", "scripts/golden.sh {tmp}/golden > /dev/null && "
                         "python3 scripts/results-tables.py {tmp}/golden"],
     "scripts/results-tables.py", False),
    ("docs/bfs.md", ["sh", "-c", "bash scripts/bfs-0400.sh {tmp}/bfs > /dev/null && "
                     "python3 scripts/figures/bfs-tables.py {tmp}/bfs"],
     "scripts/figures/bfs-tables.py", False),
]

# Docs whose `schedkit compare` blocks are followed by the output they print (an excerpt: each
# of its lines is checked against the line of the same label).
BLOCK_DOCS = ["docs/fair.md"]

# How far from a table (in lines, above its header or below its last row) the doc must name
# the command.
NEAR = 12


def tables(lines):
    """(start index, rows) of each Markdown table: consecutive lines starting with '|'."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append((i, lines[i:j]))
            i = j
        else:
            i += 1
    return out


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def check(doc, cmd, mention, schedkit, tmp):
    """Problems found (strings); empty when the doc agrees with what the command prints."""
    argv = [a.format(schedkit=schedkit, tmp=tmp) for a in cmd]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        return [f"{doc}: `{' '.join(argv)}` failed ({p.returncode}):\n{p.stderr.strip()[-2000:]}"]
    printed = tables(p.stdout.splitlines())
    if not printed:
        return [f"{doc}: `{' '.join(argv)}` printed no table"]
    with open(os.path.join(ROOT, doc)) as f:
        doc_lines = f.read().splitlines()
    in_doc = tables(doc_lines)
    problems = []
    # The k-th printed table with a header is compared with the doc's k-th with that header.
    seen = {}
    for _, rows in printed:
        header = rows[0]
        k = seen.get(header, 0)
        seen[header] = k + 1
        match = [(s, r) for s, r in in_doc if r[0] == header]
        if len(match) <= k:
            problems.append(f"{doc}: no table (number {k + 1}) with the header\n  {header}")
            continue
        start, want = match[k]
        lo, hi = max(0, start - NEAR), min(len(doc_lines), start + len(want) + NEAR)
        if not any(mention in l for l in doc_lines[lo:hi]):
            problems.append(f"{doc}:{start + 1}: the table does not name its command "
                            f"(`{mention}`) within {NEAR} lines")
        head = cells(header)
        if len(want) != len(rows):
            problems.append(f"{doc}:{start + 1}: {len(want) - 2} rows in the doc, "
                            f"{len(rows) - 2} printed")
        for k, (d, g) in enumerate(zip(want[2:], rows[2:])):
            dc, gc = cells(d), cells(g)
            if dc == gc:
                continue
            line = start + 3 + k
            for c, (a, b) in enumerate(zip(dc, gc)):
                if a != b:
                    col = head[c] if c < len(head) else f"column {c + 1}"
                    problems.append(f"{doc}:{line}: row '{dc[0]}', {col}: the doc says "
                                    f"'{a}', the command prints '{b}'")
            if len(dc) != len(gc):
                problems.append(f"{doc}:{line}: row '{dc[0]}' has {len(dc)} cells in the "
                                f"doc, {len(gc)} printed")
    return problems


def code_blocks(lines):
    """(start index, end index, content lines) of each fenced code block."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append((i, j, lines[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


def norm(line):
    return " ".join(line.split())


def sections(text_lines):
    """The printed output of `compare`: (machine, workload, label) -> the line, normalized."""
    out, machine, workload = {}, "", ""
    for l in text_lines:
        t = norm(l)
        if t.startswith("machine:"):
            machine, workload = t.split(":", 1)[1].strip(), ""
            continue
        if t.startswith("workload:"):
            workload = t.split(":", 1)[1].strip()
            continue
        if not t or set(t) <= {"-"}:
            continue
        # The label is the text before the first run of two spaces (the figures follow).
        out[(machine, workload, l.split("  ")[0].strip())] = t
    return out


def check_blocks(doc, schedkit):
    """A doc's `schedkit compare ...` block followed at once by an output block: every line of
    the output block (an excerpt) must equal the line of the same label, in the same machine's
    and workload's section, of what the command prints now. A line whose label is a machine's
    name heads that machine's rows (in place of compare's `metric` header)."""
    with open(os.path.join(ROOT, doc)) as f:
        lines = f.read().splitlines()
    problems, ran = [], 0
    blocks = code_blocks(lines)
    for k in range(len(blocks) - 1):
        s, e, cmd = blocks[k]
        s2, _, out = blocks[k + 1]
        if not cmd or not cmd[0].startswith("schedkit compare ") or s2 != e + 1:
            continue
        command = " ".join(l.rstrip("\\").strip() for l in cmd)
        argv = ["sh", "-c", schedkit + command[len("schedkit"):] + " --quiet"]
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        ran += 1
        if p.returncode != 0:
            problems.append(f"{doc}:{s + 2}: `{command}` failed: {p.stderr.strip()[-500:]}")
            continue
        now = sections(p.stdout.splitlines())
        machines = {m for m, _, _ in now}
        machine, workload = None, None
        for i, l in enumerate(out):
            t = norm(l)
            where = f"{doc}:{s2 + 2 + i}"
            if t.startswith("workload:"):
                workload = t.split(":", 1)[1].strip()
                continue
            if not t or set(t) <= {"-"}:
                continue
            label = l.split("  ")[0].strip()
            if label in machines:
                machine = label
                continue
            if label == "metric":
                continue
            got = {v for (m, w, lab), v in now.items()
                   if lab == label and machine in (None, m) and workload in (None, w)}
            if not got:
                problems.append(f"{where}: the command prints no '{label}' line")
            elif t not in got:
                problems.append(f"{where}: '{label}': the doc says '{t}', the command "
                                f"prints '{sorted(got)[0]}'")
    return problems, ran


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="also the tables whose runs take minutes")
    ap.add_argument("--schedkit", default=os.path.join(ROOT, "target/release/schedkit"),
                    help="the schedkit binary (default target/release/schedkit)")
    ap.add_argument("--only", help="check this doc only (e.g. docs/fair.md)")
    a = ap.parse_args()
    if not os.access(a.schedkit, os.X_OK):
        print(f"no schedkit binary at {a.schedkit} (cargo build --release -p schedkit-cli, "
              "or --schedkit PATH)", file=sys.stderr)
        return 2
    problems, ran = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for doc, cmd, mention, fast in CHECKS:
            if (not fast and not a.full) or (a.only and a.only != doc):
                continue
            ran += 1
            problems += check(doc, cmd, mention, a.schedkit, tmp)
        # The command-and-output blocks (their runs take minutes: the full check only).
        if a.full:
            for doc in BLOCK_DOCS:
                if a.only and a.only != doc:
                    continue
                p, n = check_blocks(doc, a.schedkit)
                problems += p
                ran += n
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{ran} commands rerun, {len(problems)} differences", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
