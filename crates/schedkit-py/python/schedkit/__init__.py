"""schedkit from Python: simulate historical Linux CPU schedulers and sweep their parameters.

    >>> import schedkit
    >>> r = schedkit.simulate(policy="o1", machine="smp2-2002",
    ...                       workload="yield:instances=4", duration="100ms")
    >>> r["metrics"]["throughput"]["value"] > 0
    True
    >>> df = schedkit.sweep({"policies": ["goodness", "o1"], "machines": "smp2-2002",
    ...                      "workloads": "yield:instances={2,4}", "seeds": "1..=2",
    ...                      "duration": "50ms"})
    >>> len(df)
    8
    >>> class Fifo(schedkit.Policy):         # a class of your own, in Python
    ...     def setup(self, ncpus): self.q = [[] for _ in range(ncpus)]
    ...     def enqueue(self, cpu, task, nice, now, why): self.q[cpu].append(task)
    ...     def dequeue(self, cpu, task, now, why): self.q[cpu].remove(task)
    ...     def pick_next(self, cpu, now): return self.q[cpu][0] if self.q[cpu] else None
    >>> schedkit.simulate(policy=Fifo(), workload="yield:instances=4", duration="10ms")["policy"]
    'Fifo'

Every run is the pure function of its inputs that ``schedkit sim`` computes: the same point
gives the same figures, bit for bit, from the CLI, from a local sweep, from here or on a Dask
cluster (``schedkit.cluster``). DataFrames are pandas (see the README for why).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from . import _native
from .policy import Policy, PolicyError

__version__ = _native.__version__

__all__ = ["simulate", "sweep", "grid_points", "SweepError", "Policy", "PolicyError"]

GridLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


class SweepError(ValueError):
    """A grid, a point or a run was refused; the message names the problem (and the line)."""


def _duration_ns(duration: Union[str, int, float]) -> int:
    """Nanoseconds of a duration given as seconds (a number) or as text, read by the very parser
    of the CLI and the workload files (``schedkit._native.parse_duration``)."""
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        # A number is seconds, as a bare number is on the command line.
        text = repr(float(duration))
    else:
        text = str(duration)
    try:
        ns = _native.parse_duration(text)
    except ValueError as e:
        raise SweepError(f"duration {duration!r}: {e}") from None
    if ns <= 0:
        raise SweepError(f"duration {duration!r} must be longer than 0")
    return ns


def _toml_of(d: Mapping[str, Any], what: str) -> str:
    try:
        return _native.json_to_toml(json.dumps(d))
    except (TypeError, ValueError) as e:
        raise SweepError(f"{what}: {e}") from None


def simulate(
    policy: Union[str, Policy] = "o1",
    machine: Union[str, Mapping[str, Any]] = "smp2-2002",
    workload: Union[str, Mapping[str, Any]] = "yield:instances=4",
    seed: int = 1,
    duration: Union[str, int, float] = "10s",
    rt_balance: str = "passive",
    lock_mode: str = "handoff",
    governor: Optional[str] = None,
) -> dict:
    """Simulate one run and return its result as a dict (the JSON of ``schedkit sim --json``).

    ``machine`` is a shipped profile's name, a path to a profile, or a dict of the profile's
    TOML tables (``{"name": ..., "topology": {"cpus": 4, ...}, "clock": ..., ...}``);
    ``workload`` is a built-in spec (``"chat:rooms=10,messages=100"``), a path, or a dict of a
    workload file's tables (``{"group": [{"name": "w", "program": [...]}]}``). ``duration`` is
    seconds or a string (``"500ms"``). The GIL is released while the simulation runs.

    ``policy`` is a policy's name, or an instance of a :class:`schedkit.Policy` subclass: a
    scheduling class written in Python, run in the simulator by the same core (holding the GIL,
    which its hooks need). A hook that raises or returns a value the simulator refuses ends the
    run with a :class:`schedkit.PolicyError` naming the class, the hook and the problem.
    """
    if isinstance(policy, Policy):
        name = policy.name or type(policy).__name__
        if not isinstance(name, str):
            raise PolicyError(f"class {type(policy).__name__}: name {name!r} is not a string")
        missing = [h for h in ("enqueue", "dequeue", "pick_next")
                   if getattr(type(policy), h) is getattr(Policy, h)]
        if missing:
            raise PolicyError(f"class {name}: {', '.join(missing)} not defined (a Policy must "
                              "define enqueue, dequeue and pick_next)")
    elif isinstance(policy, str):
        name = policy
    else:
        raise SweepError(f"policy {policy!r}: a policy's name or a schedkit.Policy instance, "
                         f"not {type(policy).__name__}")
    point = {
        "policy": name,
        "machine": machine if isinstance(machine, str) else "machine dict",
        "workload": workload if isinstance(workload, str) else "workload dict",
        "seed": int(seed),
        "duration_ns": _duration_ns(duration),
        "rt_balance": rt_balance,
        "lock_mode": lock_mode,
        "governor": governor,
    }
    machine_toml = None if isinstance(machine, str) else _toml_of(machine, "machine")
    workload_toml = None if isinstance(workload, str) else _toml_of(workload, "workload")
    try:
        if isinstance(policy, Policy):
            text = _native.simulate_class_json(policy, name, json.dumps(point), machine_toml,
                                               workload_toml)
        else:
            text = _native.simulate_json(json.dumps(point), machine_toml, workload_toml)
    except ValueError as e:
        raise SweepError(str(e)) from None
    except RuntimeError as e:
        if isinstance(policy, Policy):
            raise PolicyError(str(e)) from None
        raise
    return json.loads(text)


def _dict_file(d: Mapping[str, Any], what: str) -> str:
    """A dict machine or workload of a grid, as a TOML file named by its content (so the same
    dict gives the same path, and the same point key, in every session on this machine)."""
    import hashlib
    import tempfile

    text = _toml_of(d, what)
    folder = Path(tempfile.gettempdir()) / "schedkit-dicts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{what}-{hashlib.sha1(text.encode()).hexdigest()[:16]}.toml"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return str(path)


def _grid_text(grid: GridLike) -> tuple:
    """(TOML text, name for errors, folder machine paths are relative to)."""
    if isinstance(grid, Mapping):
        g = dict(grid)
        pols = g.get("policies")
        for p in pols if isinstance(pols, (list, tuple)) else [pols]:
            if isinstance(p, Policy):
                # A sweep runs its points on threads without the GIL, or on a cluster.
                raise SweepError(f"grid: policy {type(p).__name__} is a Python class; sweeps run "
                                 "named policies only (call schedkit.simulate for each point)")
        for key, what in (("machines", "machine"), ("workloads", "workload")):
            v = g.get(key)
            if isinstance(v, Mapping):
                g[key] = _dict_file(v, what)
            elif isinstance(v, (list, tuple)):
                g[key] = [_dict_file(x, what) if isinstance(x, Mapping) else x for x in v]
        return _toml_of(g, "grid"), "grid dict", os.getcwd()
    path = Path(grid)
    try:
        text = path.read_text()
    except OSError as e:
        raise SweepError(f"sweep grid {path}: cannot read it: {e}") from None
    return text, str(path), str(path.parent)


def grid_points(grid: GridLike) -> tuple:
    """The points of a grid (dicts, in grid order, each with its ``key``) and its ``record``
    list (or None)."""
    text, name, base = _grid_text(grid)
    try:
        pts, record, notes = _native.grid_points(text, name, base)
    except ValueError as e:
        raise SweepError(str(e)) from None
    for n in notes:
        # A value given twice on an axis: its point runs once.
        warnings.warn(f"sweep grid {name}: {n}", stacklevel=2)
    return [json.loads(p) for p in pts], record


def _frame(rows: Sequence[dict]):
    import pandas as pd

    inputs = ["key", "policy", "machine", "workload", "seed", "duration_s", "rt_balance",
              "lock_mode", "governor", "error"]
    rest = sorted({k for r in rows for k in r} - set(inputs))
    return pd.DataFrame.from_records(list(rows), columns=inputs + rest)


def _resume(output: Optional[Union[str, "os.PathLike[str]"]], points: list):
    """Rows already in the output's journal (by key), and the points still to run."""
    if output is None:
        return None, {}, points
    journal = _native.journal_path(str(output))
    rows, note = _native.recover_journal(journal)
    if note:
        warnings.warn(note)
    # Rows whose inputs do not match their key's point are left out (that point runs again).
    kept, notes = _native.resumable_rows([json.dumps(p) for p in points], rows)
    for n in notes:
        warnings.warn(f"{journal}: {n}")
    have = {}
    for r in kept:
        d = json.loads(r)
        have.setdefault(d["key"], d)
    todo = [p for p in points if p["key"] not in have]
    return journal, have, todo


def _finish(output, points: list, have: dict):
    rows = [have[p["key"]] for p in points]
    if output is not None:
        _native.write_tables([json.dumps(r) for r in rows], str(output))
    return _frame(rows)


def sweep(
    grid: GridLike,
    output: Optional[Union[str, "os.PathLike[str]"]] = None,
    jobs: Optional[int] = None,
):
    """Run every point of a grid on this machine's cores and return a pandas DataFrame, one row
    per run in grid order (the columns of ``schedkit sweep``'s table).

    ``grid`` is a path to a grid TOML file or a dict of the same keys (``policies``,
    ``machines``, ``workloads``, ``seeds``, ``duration``, ``rt_balance``, ``lock_mode``,
    ``governor``, ``record``). In a dict grid, a machine or a workload may itself be a dict (a
    profile's or a workload file's tables): it is written to a file named by its content under
    the temporary folder, and that path is the run's ``machine`` or ``workload`` column (on a
    cluster, the workers must see that folder). With ``output`` (``NAME.parquet`` or ``NAME.csv``) the rows are
    also journalled to ``NAME.jsonl`` as they finish (a rerun resumes from it) and written to
    ``NAME.parquet`` and ``NAME.csv``, exactly as ``schedkit sweep`` does.
    """
    points, record = grid_points(grid)
    journal, have, todo = _resume(output, points)
    jobs = jobs or os.cpu_count() or 1
    if todo:
        texts = [json.dumps(p) for p in todo]
        # With a journal, each row goes to it as its point finishes (in Rust, as the CLI does).
        for r in _native.run_rows(texts, record, jobs, journal):
            d = json.loads(r)
            have[d["key"]] = d
    return _finish(output, points, have)
