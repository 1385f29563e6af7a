"""The Python package against the CLI: the same point gives the same figures from
``schedkit sim``, ``schedkit sweep``, ``schedkit.simulate``, ``schedkit.sweep`` and a Dask
cluster of two worker processes, one of which is killed mid-sweep."""

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

import schedkit

REPO = Path(__file__).resolve().parents[3]

GRID = {
    "policies": ["goodness", "o1"],
    "machines": "smp2-2002",
    "workloads": ["yield:instances={2,4}", "chat:rooms=2,messages=20"],
    "seeds": "1..=3",
    "duration": "50ms",
}


def cli():
    """The schedkit binary the Rust tests built (or SCHEDKIT_BIN)."""
    for p in [os.environ.get("SCHEDKIT_BIN"), REPO / "target/debug/schedkit", REPO / "target/release/schedkit"]:
        if p and Path(p).is_file():
            return str(p)
    pytest.skip("no schedkit binary: run cargo build first or set SCHEDKIT_BIN")


def without_wall(d):
    return {k: v for k, v in d.items() if k != "metrics.sim.wall_s"}


def grid_file(tmp_path):
    lines = []
    for k, v in GRID.items():
        lines.append(f"{k} = {json.dumps(v)}")
    p = tmp_path / "grid.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_simulate_is_what_sim_gives(tmp_path):
    out = tmp_path / "one.json"
    subprocess.run(
        [cli(), "sim", "--policy", "o1", "--machine", "smp2-2002", "--workload", "chat:rooms=2,messages=20",
         "--seed", "3", "--duration", "50ms", "--quiet", "--json", str(out)],
        check=True, capture_output=True,
    )
    want = json.loads(out.read_text())
    got = schedkit.simulate(policy="o1", machine="smp2-2002", workload="chat:rooms=2,messages=20", seed=3,
                            duration="50ms")
    for d in (want, got):
        d["metrics"]["sim"].pop("wall_s")
        d.pop("timeline", None)
    assert got == want


def test_sweep_is_what_the_cli_sweep_gives_and_resumes(tmp_path):
    g = grid_file(tmp_path)
    subprocess.run([cli(), "sweep", str(g), "-o", str(tmp_path / "cli.parquet"), "--quiet"], check=True,
                   capture_output=True)
    cli_rows = [json.loads(l) for l in (tmp_path / "cli.jsonl").read_text().splitlines()]
    df = schedkit.sweep(GRID)
    assert len(df) == 2 * 3 * 3
    assert list(df.columns[:4]) == ["key", "policy", "machine", "workload"]
    by_key = {r["key"]: without_wall(r) for r in cli_rows}
    for rec in df.to_dict("records"):
        mine = without_wall({k: v for k, v in rec.items() if k in by_key[rec["key"]]})
        assert mine.keys() == by_key[rec["key"]].keys()
        for k, v in by_key[rec["key"]].items():
            m = mine[k]
            assert (m == v) or (v is None and (m is None or m != m)), (rec["key"], k, m, v)

    # A sweep with an output journal, cut after 5 rows and a half line, resumes to the same table.
    out = tmp_path / "py.parquet"
    full = schedkit.sweep(GRID, output=out)
    lines = (tmp_path / "py.jsonl").read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])
    with pytest.warns(UserWarning, match="cut short"):
        resumed = schedkit.sweep(GRID, output=tmp_path / "cut.csv")
    keys = [json.loads(l)["key"] for l in (tmp_path / "cut.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 18
    a = full.drop(columns=["metrics.sim.wall_s"])
    b = resumed.drop(columns=["metrics.sim.wall_s"])
    assert a.equals(b)
    import pandas as pd

    from_file = pd.read_parquet(tmp_path / "cut.parquet").drop(columns=["metrics.sim.wall_s"])
    assert list(from_file["key"]) == list(a["key"])
    assert (from_file["metrics.throughput.value"].values == a["metrics.throughput.value"].values).all()


def test_dicts_and_errors():
    w = {"group": [{"name": "w", "count": 2, "program": ["loop forever", "compute 1ms", "yield", "end"]}]}
    r = schedkit.simulate(workload=w, duration="20ms")
    assert r["metrics"]["context_switches"] > 0
    df = schedkit.sweep({"policies": "o1", "machines": "smp2-2002", "workloads": [w, "yield:instances=2"],
                         "duration": "20ms"})
    assert len(df) == 2
    assert df["metrics.context_switches"][0] == r["metrics"]["context_switches"]
    with pytest.raises(schedkit.SweepError, match="line 3"):
        schedkit.sweep({"policies": "o1", "machines": "smp2-2002", "workloads": ["yield", "nosuch:x=1"]})
    with pytest.raises(schedkit.SweepError, match="duration"):
        schedkit.simulate(duration="-1s")


def test_durations_are_read_by_the_clis_own_parser():
    # Python once had its own copy, which refused "2m" and "10" and "μs" that the CLI takes.
    from schedkit import _duration_ns
    assert _duration_ns("2m") == 120_000_000_000
    assert _duration_ns("10") == 10_000_000_000
    assert _duration_ns(0.25) == 250_000_000
    assert _duration_ns("250μs") == _duration_ns("250us") == 250_000
    assert _duration_ns("1.5e3us") == 1_500_000
    with pytest.raises(schedkit.SweepError, match="unknown unit"):
        _duration_ns("3 fortnights")
    with pytest.raises(schedkit.SweepError, match="longer than 0"):
        _duration_ns("0ms")
    with pytest.raises(schedkit.SweepError):
        schedkit.simulate(machine={"name": "broken"})


def test_a_dask_sweep_survives_a_killed_worker(tmp_path):
    distributed = pytest.importorskip("distributed")
    from schedkit.cluster import sweep_on_dask

    grid = dict(GRID, seeds="1..=6", duration="200ms")  # 36 points
    local = schedkit.sweep(grid).drop(columns=["metrics.sim.wall_s"])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        assert len(pids) == 2
        killed = []

        def kill_one(done, total):
            if done == 1 and not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        df = sweep_on_dask(grid, tmp_path / "dask.parquet", client=client, batch_size=2, on_batch=kill_one)
        assert killed
        # The nanny started a new worker in place of the killed one.
        assert pids[0] not in client.run(os.getpid).values()
    keys = [json.loads(l)["key"] for l in (tmp_path / "dask.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == len(local)
    assert df.drop(columns=["metrics.sim.wall_s"]).equals(local)


def test_the_cli_sends_a_sweep_to_a_dask_scheduler(tmp_path):
    distributed = pytest.importorskip("distributed")
    import sys

    g = grid_file(tmp_path)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        p = subprocess.run(
            [cli(), "sweep", str(g), "-o", str(tmp_path / "c.parquet"), "--engine", "dask",
             "--address", cluster.scheduler_address],
            capture_output=True, text=True, env=dict(os.environ, SCHEDKIT_PYTHON=sys.executable),
        )
    assert p.returncode == 0, p.stderr
    import pandas as pd

    got = pd.read_parquet(tmp_path / "c.parquet").drop(columns=["metrics.sim.wall_s"])
    want = schedkit.sweep(GRID).drop(columns=["metrics.sim.wall_s"])
    assert list(got["key"]) == list(want["key"])
    assert (got["metrics.context_switches"].values == want["metrics.context_switches"].values).all()
