#!/usr/bin/env python3
"""Reruns the commands that print the docs' tables of simulated figures and compares each
printed table with the table of the same header in the doc, cell by cell. The simulator is
deterministic, so every figure must match exactly; a difference prints the doc, the row, the
column, the figure in the doc and the figure printed. With --shapes, checks the shape of the
docs' tables of figures measured on a machine (the runtime's benchmarks), whose values no rerun
can match.

    python3 scripts/check-docs.py [--full | --shapes] [--schedkit PATH] [--only DOC]

The default (fast) set takes seconds and runs in the test command
(crates/schedkit-cli/tests/docs.rs); --full adds the tables whose runs take minutes
(docs/results.md from scripts/golden.sh, docs/bfs.md from scripts/bfs-0400.sh, docs/modern.md's
EEVDF-against-CFS table from scripts/figures/eevdf-postings.py, about 3 minutes), the
`schedkit compare` blocks of docs/fair.md with the output excerpt printed under each, and the
--shapes checks. Each check also requires the doc to name its command within a few lines of
the table, so a reader knows what to rerun.

--shapes runs only the checks of SHAPES (about a minute here; real time, so not in the test
command): each table of machine-measured figures must carry its machine and date, and its
command is run once with a short --duration. A table that a command reprints in its shape
(scripts/figures/runtime-tables.py) must have the same header, the same set of row labels, and a
figure in every cell where the doc has one (a range or an em dash in the doc may be printed as
a figure; text must be the same); a difference prints the doc, the row, the column, the doc's
cell and the printed cell. A table that summarises ranges over several runs must name the
command(s) they came from, say how many runs it summarises, keep its header and rows, hold a
figure in each figure cell, and the command's one run must give a number for every workload and
runner or policy each row refers to.

To add a table: make a command print it in the doc's shape (a Markdown table with the same
header line), name the command next to the table in the doc, and add an entry below (to
SHAPES for figures measured on a machine).
"""
import argparse
import fnmatch
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (doc, command with {schedkit} for the binary, the string the doc must show near the table,
#  fast: runs in the test command[, offset: see check()])
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
    ("docs/traces.md", ["python3", "scripts/figures/replay-vm.py", "{schedkit}"],
     "scripts/figures/replay-vm.py", True),
    # The holdout's table has the suite's header: it is the doc's second table of that header.
    ("docs/validation.md", ["{schedkit}", "validate", "traces/holdout", "--markdown"],
     "schedkit validate traces/holdout --markdown", True, 1),
    # The second machine's holdout has the same header again: the doc's third such table.
    ("docs/validation.md", ["{schedkit}", "validate", "traces/holdout-xeon", "--markdown"],
     "schedkit validate traces/holdout-xeon --markdown", True, 2),
    ("docs/validation.md", ["python3", "scripts/figures/second-machine.py", "{schedkit}"],
     "scripts/figures/second-machine.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/irq-wakeups.py", "--table",
                            "{schedkit}"],
     "scripts/figures/irq-wakeups.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/irq-wakeups.py", "--rcu-table",
                            "{schedkit}"],
     "irq-wakeups.py --rcu-table", False),
    ("docs/validation.md", ["python3", "scripts/figures/kernel-ranges.py", "{schedkit}"],
     "scripts/figures/kernel-ranges.py", True),
    ("docs/validation.md", ["python3", "scripts/figures/calibrated.py", "{schedkit}"],
     "scripts/figures/calibrated.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/lost-wakeups.py", "{schedkit}"],
     "scripts/figures/lost-wakeups.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/model-costs.py", "{schedkit}"],
     "scripts/figures/model-costs.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/who-waits.py", "--table", "{schedkit}"],
     "scripts/figures/who-waits.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/wakeup-placement.py", "--table",
                            "{schedkit}"],
     "scripts/figures/wakeup-placement.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/idle-causes.py", "--table",
                            "{schedkit}"],
     "scripts/figures/idle-causes.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/idle-prev.py", "--table",
                            "{schedkit}"],
     "scripts/figures/idle-prev.py", False),
    ("docs/validation.md", ["python3", "scripts/figures/fork-placement.py", "--table",
                            "{schedkit}"],
     "scripts/figures/fork-placement.py", False),
    ("docs/results.md", ["sh", "-c", "scripts/golden.sh {tmp}/golden > /dev/null && "
                         "python3 scripts/results-tables.py {tmp}/golden"],
     "scripts/results-tables.py", False),
    # The same golden.sh run as docs/results.md's (made once per check-docs run, in {tmp}).
    ("docs/rt.md", ["sh", "-c", "[ -f {tmp}/golden/locks.json ] || "
                    "scripts/golden.sh {tmp}/golden > /dev/null && "
                    "python3 scripts/figures/golden-tables.py {tmp}/golden rt"],
     "scripts/figures/golden-tables.py", False),
    ("docs/locks.md", ["sh", "-c", "[ -f {tmp}/golden/locks.json ] || "
                       "scripts/golden.sh {tmp}/golden > /dev/null && "
                       "python3 scripts/figures/golden-tables.py {tmp}/golden locks"],
     "scripts/figures/golden-tables.py", False),
    ("docs/bfs.md", ["sh", "-c", "bash scripts/bfs-0400.sh {tmp}/bfs > /dev/null && "
                     "python3 scripts/figures/bfs-tables.py {tmp}/bfs"],
     "scripts/figures/bfs-tables.py", False),
    ("docs/modern.md", ["python3", "scripts/figures/hybrid-tables.py", "{schedkit}"],
     "scripts/figures/hybrid-tables.py", True),
    ("docs/modern.md", ["python3", "scripts/figures/eevdf-postings.py", "--table",
                        "{schedkit}"],
     "scripts/figures/eevdf-postings.py", False),
    # Measured on a lent machine once; the rows it kept are committed, so the tables are
    # reprinted from them exactly (no binary is run).
    ("docs/runtime.md", ["python3", "scripts/figures/runtime-scaling.py",
                         "docs/data/runtime-xeon16-2026-11-27"],
     "scripts/figures/runtime-scaling.py", True),
]

# Tables of figures measured on a machine (real time, on real threads): a rerun cannot match
# them, so --shapes runs each one's command once, with a short --duration, and checks the shape
# of what it prints. Each must carry, within NEAR lines, the machine it was measured on and the
# date (YYYY-MM-DD).
#
# kind "table": the command prints the doc's table in its shape (the same header line). The
# header must be the doc's, the set of row labels the doc's, and each cell shaped as the doc's
# (see `shape`: a figure where the doc has one).
#
# kind "summary": the doc's table gives ranges over several runs, which no one run reprints.
# The doc must name the command its runs came from (`mention`) and say the table is "a summary
# of {runs} runs"; its header and row labels must be those below; every cell outside the label
# and the `text` columns must hold a figure or be empty; and one run of the command (`run`, at a
# short --duration, writing JSON rows to {json}) must give a number for every (workload,
# runner, policy) each row refers to. A policy is a glob over the schedkit runner's policies
# ("*": every one, at least one); None stands for a peer's one variant. A row's label is its
# first cell (its first `label_columns` cells, joined by a space).
RT = ["python3", "scripts/figures/runtime-tables.py", "{schedkit}"]
BENCH = ["{schedkit}", "bench", "runtime", "--json", "{json}"]
MACHINE = "2 vCPUs"
SHAPES = [
    dict(kind="table", doc="README.md", cmd=RT + ["readme-server", "--duration", "200ms"],
         mention="scripts/figures/runtime-tables.py SCHEDKIT readme-server", machine=MACHINE),
    dict(kind="table", doc="README.md", cmd=RT + ["readme-bench", "--duration", "50ms"],
         mention="scripts/figures/runtime-tables.py SCHEDKIT readme-bench", machine=MACHINE),
    dict(kind="table", doc="docs/runtime.md", cmd=RT + ["server", "--duration", "200ms"],
         mention="scripts/figures/runtime-tables.py SCHEDKIT server", machine=MACHINE),
    dict(kind="summary", doc="docs/runtime.md",
         header="| target | measured | met? |",
         mention=["two full `schedkit bench runtime` runs",
                  "`schedkit bench runtime --workloads pingpong,spawn,yield,chat,wakeup "
                  "--runners schedkit,tokio`"],
         run=BENCH + ["--duration", "50ms"], runs=6, machine=MACHINE, text=["met?"],
         rows=[
             ("wakeup lateness under hogs, nice 0, p50 within 2× of OS threads",
              [("wakeup-nice0/p50", "schedkit", "*"), ("wakeup-nice0/p50", "os-threads", None)]),
             ("… p99 no worse than OS threads",
              [("wakeup-nice0/p99", "schedkit", p) for p in ("goodness", "o1", "cfs", "eevdf")]
              + [("wakeup-nice0/p99", "os-threads", None)]),
             ("pingpong within 1.5× of Tokio, pair on one worker",
              [("pingpong", "schedkit", f"{p} same cpu") for p in ("o1", "cfs", "eevdf")]
              + [("pingpong", "tokio", None)]),
             ("… pair across workers", [("pingpong", "schedkit", "* cross cpu")]),
             ("spawn+join within 2× of Tokio",
              [("spawn", "schedkit", p) for p in ("o1", "goodness", "cfs", "eevdf")]
              + [("spawn", "tokio", None)]),
             ("yield ≥ 2× Tokio per core",
              [("yield", "schedkit", p) for p in ("o1", "cfs", "eevdf")]
              + [("yield", "tokio", None)]),
         ]),
    dict(kind="summary", doc="docs/runtime.md",
         header="| figure | runs 1-2 | runs 3-6 | met? |",
         mention="`schedkit bench runtime --workloads yield,pingpong --runners schedkit,tokio "
                 "--policies goodness,o1,cfs,eevdf,eevdf:era=6.18,bfs`",
         run=BENCH + ["--workloads", "yield,pingpong", "--runners", "schedkit,tokio",
                      "--policies", "goodness,o1,cfs,eevdf,eevdf:era=6.18,bfs",
                      "--duration", "50ms"],
         runs=6, machine=MACHINE, text=["met?"],
         rows=[
             ("pingpong, pair on one worker: O(1) / Tokio",
              [("pingpong", "schedkit", "o1 same cpu"), ("pingpong", "tokio", None)]),
             ("… CFS 2.6.24", [("pingpong", "schedkit", "cfs same cpu")]),
             ("… EEVDF 6.6 / 6.18", [("pingpong", "schedkit", "eevdf same cpu"),
                                     ("pingpong", "schedkit", "eevdf:era=6.18 same cpu")]),
             ("yield per core: O(1) / Tokio",
              [("yield", "schedkit", "o1"), ("yield", "tokio", None)]),
             ("… CFS, EEVDF 6.6, EEVDF 6.18",
              [("yield", "schedkit", p) for p in ("cfs", "eevdf", "eevdf:era=6.18")]),
         ]),
    dict(kind="summary", doc="docs/runtime.md",
         header="| figure | schedkit | Tokio | ratio | met? |",
         mention="`schedkit bench runtime --workloads yield,pingpong --runners schedkit,tokio "
                 "--policies o1,cfs,eevdf,eevdf:era=6.18 --cpus 1`",
         run=BENCH + ["--workloads", "yield,pingpong", "--runners", "schedkit,tokio",
                      "--policies", "o1,cfs,eevdf,eevdf:era=6.18", "--cpus", "1",
                      "--duration", "50ms"],
         runs=3, machine=MACHINE, text=["met?"],
         rows=[
             ("pingpong: O(1)",
              [("pingpong", "schedkit", "o1 same cpu"), ("pingpong", "tokio", None)]),
             ("… CFS 2.6.24", [("pingpong", "schedkit", "cfs same cpu")]),
             ("… EEVDF 6.6 / 6.18", [("pingpong", "schedkit", "eevdf same cpu"),
                                     ("pingpong", "schedkit", "eevdf:era=6.18 same cpu")]),
             ("yield per core: O(1) / CFS",
              [("yield", "schedkit", "o1"), ("yield", "schedkit", "cfs"),
               ("yield", "tokio", None)]),
             ("… EEVDF 6.6 / 6.18",
              [("yield", "schedkit", "eevdf"), ("yield", "schedkit", "eevdf:era=6.18")]),
         ]),
    # The runtime's columns are two runs; the simulator's are deterministic and named with them.
    dict(kind="summary", doc="docs/rt.md",
         header="| policy | mode | runtime: failed iterations (of 20), two runs | runtime: worst "
                "start of the highest task | simulator: failed (of 15) | simulator: worst start "
                "of the highest |",
         mention="`schedkit bench runtime --workloads rtmigrate --runners schedkit`",
         run=BENCH + ["--workloads", "rtmigrate", "--runners", "schedkit"],
         runs=2, machine=MACHINE, text=[],
         rows=[(f"{p} {m}", [(w, "schedkit", f"{p} {m}")
                             for w in ("rtmigrate", "rtmigrate/highest")])
               for p in ("o1", "eevdf") for m in ("passive", "pushpull")],
         label_columns=2),
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


def check(doc, cmd, mention, schedkit, tmp, offset=0):
    """Problems found (strings); empty when the doc agrees with what the command prints. The
    k-th printed table with a header is compared with the doc's (k + offset)-th table with that
    header (an offset lets two commands print tables of one header into one doc)."""
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
        k = seen.get(header, 0) + offset
        seen[header] = k + 1 - offset
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


# A figure as the docs write one: digits grouped by spaces or commas, a decimal part, or dotted
# (a version such as 2.6.24); a sign where one starts a word; a range of two (6–40, 1.13-1.16).
NUM = r"\d{1,3}(?:[ ,]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*"
FIG = re.compile(rf"(?:(?<![^\s(\[])[-−+])?(?:{NUM})(?:\s*[–-]\s*(?:{NUM}))?")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def shape(cell):
    """A cell with each figure (or range) replaced by N: '2 278 (3.1×)' -> 'N (N×)'."""
    return FIG.sub("N", cell)


def same_shape(doc_cell, printed):
    """Whether the printed cell has the doc's shape: its text the same, a figure where the doc
    has a figure or a range, and a figure or an em dash where the doc has an em dash."""
    want, got = shape(doc_cell), shape(printed)
    if want == got:
        return True
    pattern = "".join("(?:—|N)" if ch == "—" else re.escape(ch) for ch in want)
    return re.fullmatch(pattern, got) is not None


def near_text(doc_lines, start, n):
    """The doc's text within NEAR lines of a table (n lines from start), whitespace joined."""
    lo, hi = max(0, start - NEAR), min(len(doc_lines), start + n + NEAR)
    return " ".join(" ".join(doc_lines[lo:hi]).split())


def stamp_problems(doc, doc_lines, start, n, e):
    """What a table of measured figures must say within NEAR lines: its command(s), the
    machine, the date and, for a summary, how many runs it summarises."""
    text, out = near_text(doc_lines, start, n), []
    mentions = e["mention"] if isinstance(e["mention"], list) else [e["mention"]]
    for m in mentions:
        if m not in text:
            out.append(f"{doc}:{start + 1}: the table does not name its command ({m}) "
                       f"within {NEAR} lines")
    if e["machine"] not in text:
        out.append(f"{doc}:{start + 1}: the table does not name its machine "
                   f"('{e['machine']}') within {NEAR} lines")
    if not DATE.search(text):
        out.append(f"{doc}:{start + 1}: the table carries no date (YYYY-MM-DD) within "
                   f"{NEAR} lines")
    if e["kind"] == "summary" and f"a summary of {e['runs']} runs" not in text:
        out.append(f"{doc}:{start + 1}: the doc does not say within {NEAR} lines that the "
                   f"table is a summary of {e['runs']} runs")
    return out


def run(argv):
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"`{' '.join(argv)}` failed ({p.returncode}):\n{p.stderr.strip()[-2000:]}"
    return p.stdout, None


def check_shape_table(e, doc_lines, schedkit, tmp):
    """A command that prints the doc's table in its shape (kind "table")."""
    doc = e["doc"]
    argv = [a.format(schedkit=schedkit, tmp=tmp) for a in e["cmd"]]
    out, err = run(argv)
    if err:
        return [f"{doc}: {err}"]
    printed = tables(out.splitlines())
    if not printed:
        return [f"{doc}: `{' '.join(argv)}` printed no table"]
    in_doc, problems, seen = tables(doc_lines), [], {}
    # As in check(): the doc's table number `offset` of a header the doc repeats.
    offset = e.get("offset", 0)
    for _, rows in printed:
        header = rows[0]
        k = seen.get(header, 0) + offset
        seen[header] = k + 1 - offset
        match = [(s, r) for s, r in in_doc if r[0] == header]
        if len(match) <= k:
            problems.append(f"{doc}: no table (number {k + 1}) with the header\n  {header}")
            continue
        start, want = match[k]
        problems += stamp_problems(doc, doc_lines, start, len(want), e)
        head = cells(header)
        got = {cells(r)[0]: cells(r) for r in rows[2:]}
        labels = []
        for i, d in enumerate(want[2:]):
            dc, line = cells(d), start + 3 + i
            labels.append(dc[0])
            gc = got.get(dc[0])
            if gc is None:
                problems.append(f"{doc}:{line}: row '{dc[0]}': the command prints no such row")
                continue
            for c, (a, b) in enumerate(zip(dc, gc)):
                if c > 0 and not same_shape(a, b):
                    col = head[c] if c < len(head) else f"column {c + 1}"
                    problems.append(f"{doc}:{line}: row '{dc[0]}', {col}: the doc says "
                                    f"'{a}', the command prints '{b}'")
            if len(dc) != len(gc):
                problems.append(f"{doc}:{line}: row '{dc[0]}' has {len(dc)} cells in the "
                                f"doc, {len(gc)} printed")
        for label in got:
            if label not in labels:
                problems.append(f"{doc}:{start + 1}: the command prints a row '{label}' that "
                                "the doc's table lacks")
    return problems


def check_summary(e, doc_lines, schedkit, tmp):
    """A table of ranges over several runs of a command (kind "summary")."""
    doc = e["doc"]
    match = [(s, r) for s, r in tables(doc_lines) if r[0] == e["header"]]
    if not match:
        return [f"{doc}: no table with the header\n  {e['header']}"]
    start, want = match[0]
    problems = stamp_problems(doc, doc_lines, start, len(want), e)
    head, nlab = cells(want[0]), e.get("label_columns", 1)
    expected = [label for label, _ in e["rows"]]
    labels = []
    for i, d in enumerate(want[2:]):
        dc, line = cells(d), start + 3 + i
        labels.append(" ".join(dc[:nlab]))
        for c in range(nlab, len(dc)):
            col = head[c] if c < len(head) else f"column {c + 1}"
            if col not in e["text"] and dc[c] and not FIG.search(dc[c]):
                problems.append(f"{doc}:{line}: row '{labels[-1]}', {col}: the doc's cell "
                                f"'{dc[c]}' holds no figure")
        if len(dc) != len(head):
            problems.append(f"{doc}:{line}: row '{labels[-1]}' has {len(dc)} cells, the "
                            f"header {len(head)}")
    if labels != expected:
        for label in expected:
            if label not in labels:
                problems.append(f"{doc}:{start + 1}: the table has no row '{label}'")
        for label in labels:
            if label not in expected:
                problems.append(f"{doc}:{start + 1}: the table has a row '{label}' that the "
                                "check does not know (add it to SHAPES)")
        if sorted(labels) == sorted(expected):
            problems.append(f"{doc}:{start + 1}: the rows are not in the order the check "
                            f"lists: {labels}")
    path = os.path.join(tmp, "rows.json")
    if os.path.exists(path):
        os.remove(path)  # another entry's run
    argv = [a.format(schedkit=schedkit, json=path) for a in e["run"]]
    _, err = run(argv)
    if err:
        return problems + [f"{doc}: {err}"]
    with open(path) as f:
        rows = json.load(f)
    for i, (label, keys) in enumerate(e["rows"]):
        line = start + 3 + i
        for workload, runner, policy in keys:
            vals = [r["value"] for r in rows if r["workload"] == workload
                    and r["runner"] == runner
                    and (policy is None or fnmatch.fnmatchcase(r["policy"], policy))]
            who = f"{workload} on {runner}" + (f" ({policy})" if policy else "")
            if not vals:
                problems.append(f"{doc}:{line}: row '{label}': `{' '.join(argv)}` printed no "
                                f"figure for {who}")
            elif not all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals):
                problems.append(f"{doc}:{line}: row '{label}': `{' '.join(argv)}` printed "
                                f"{vals} for {who}, not a number")
    return problems


def check_shapes(e, schedkit, tmp):
    with open(os.path.join(ROOT, e["doc"])) as f:
        doc_lines = f.read().splitlines()
    if e["kind"] == "table":
        return check_shape_table(e, doc_lines, schedkit, tmp)
    return check_summary(e, doc_lines, schedkit, tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true",
                    help="also the tables whose runs take minutes, and the --shapes checks")
    ap.add_argument("--shapes", action="store_true",
                    help="only the shape checks of the tables of machine-measured figures")
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
        if not a.shapes:
            for doc, cmd, mention, fast, *offset in CHECKS:
                if (not fast and not a.full) or (a.only and a.only != doc):
                    continue
                ran += 1
                problems += check(doc, cmd, mention, a.schedkit, tmp, *offset)
        # The command-and-output blocks (their runs take minutes: the full check only).
        if a.full:
            for doc in BLOCK_DOCS:
                if a.only and a.only != doc:
                    continue
                p, n = check_blocks(doc, a.schedkit)
                problems += p
                ran += n
        # The tables of machine-measured figures: their shape (--shapes, and the full check).
        if a.shapes or a.full:
            for e in SHAPES:
                if a.only and a.only != e["doc"]:
                    continue
                ran += 1
                problems += check_shapes(e, a.schedkit, tmp)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{ran} commands rerun, {len(problems)} differences", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
