"""Sweeps on a Dask cluster: ``schedkit sweep GRID --engine dask --address ADDR`` or
``python -m schedkit.cluster GRID -o OUT.parquet --address ADDR``.

The grid's points are shipped to the cluster in batches (one Dask task per batch: a few points
amortise the task's dispatch); each worker runs its batch with the schedkit package installed
there and returns the rows. The client appends each batch's rows to the output's journal as
the batch finishes, so the file holds what is done, and writes the same Parquet and CSV tables
``schedkit sweep`` writes. A worker killed mid-sweep loses only its batches in flight: Dask
reruns them on the other workers (its tasks are pure: same inputs, same rows), and a batch's
rows are written once, when its future first completes; a rerun of the command resumes from
the journal like a local sweep.

Why Dask rather than Ray: Dask's ``distributed`` is pure Python (one ``pip install``, no
object store or raylet to start), its ``LocalCluster`` starts real worker processes for tests,
and it reschedules the tasks of a lost worker by itself; our points need nothing else (no
actors, no GPUs, no shared objects).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Optional

from . import _native, _resume, _finish, grid_points, GridLike


def run_batch(points_json: list, record: Optional[list]) -> list:
    """What a worker runs: the rows (JSON text) of a batch of points, one thread."""
    return _native.run_rows(points_json, record, 1)


def sweep_on_dask(
    grid: GridLike,
    output=None,
    address: Optional[str] = None,
    client=None,
    batch_size: int = 8,
    on_batch=None,
):
    """Run a grid on a Dask cluster and return the pandas DataFrame of its rows (grid order).

    Give ``client`` (a ``distributed.Client``) or ``address`` (the scheduler's). With
    ``output`` the rows are journalled and tabled as in ``schedkit.sweep``. ``on_batch(done,
    total)`` is called after each batch's rows are in (the progress hook the tests use).
    """
    from distributed import Client, as_completed

    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    points, record = grid_points(grid)
    journal, have, todo = _resume(output, points)
    own = client is None
    if own:
        if address is None:
            raise ValueError("give a Dask client or the scheduler's address")
        client = Client(address)
    try:
        texts = [json.dumps(p) for p in todo]
        batches = [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]
        # pure=False: two batches with equal inputs (a grid never has them) would still both run.
        futures = [client.submit(run_batch, b, record, pure=False) for b in batches]
        j = open(journal, "a") if journal is not None else None
        try:
            done = 0
            for fut in as_completed(futures):
                for r in fut.result():
                    d = json.loads(r)
                    if d["key"] in have:
                        continue  # written once, whatever the engine did
                    have[d["key"]] = d
                    if j is not None:
                        j.write(r + "\n")
                        j.flush()
                done += 1
                if on_batch is not None:
                    on_batch(done, len(batches))
        finally:
            if j is not None:
                j.close()
    finally:
        if own:
            client.close()
    return _finish(output, points, have)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m schedkit.cluster",
        description="Run a schedkit sweep grid on a Dask cluster (see README, 'Python').",
    )
    ap.add_argument("grid", help="the grid TOML file")
    ap.add_argument("-o", "--output", required=True, help="NAME.parquet or NAME.csv (both are written, and NAME.jsonl)")
    ap.add_argument("--address", required=True, help="the Dask scheduler, e.g. tcp://10.0.0.5:8786")
    ap.add_argument("--batch-size", type=int, default=8, help="points per Dask task (default 8)")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    a = ap.parse_args(argv)
    t0 = time.time()

    def progress(done, total):
        if not a.quiet:
            print(f"\r{done}/{total} batches, {time.time() - t0:.0f} s", end="", file=sys.stderr, flush=True)

    try:
        df = sweep_on_dask(a.grid, a.output, address=a.address, batch_size=a.batch_size, on_batch=progress)
    except (ValueError, OSError) as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 2
    print(f"\n{len(df)} runs -> {a.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
