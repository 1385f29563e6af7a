"""Per-point overhead of a Dask sweep (README "Python"): the same points run one after another
in this process, on a local 2-process Dask cluster with one point per task, and with 8 points
per task. Overhead per point = (cluster wall time x workers - sequential time) / points: the
worker time that was not simulation (dispatch, serialisation, result transfer, idle tails).

    python scripts/dask-overhead.py
"""

import json
import time

import distributed

import schedkit
from schedkit import _native
from schedkit.cluster import sweep_on_dask


def grid(duration, seeds):
    return {"policies": ["goodness", "o1", "cfs", "eevdf", "bfs"], "machines": "smp2-2002",
            "workloads": ["yield:instances=4", "chat:rooms=2,messages=20"], "seeds": seeds,
            "duration": duration}


def main():
    workers = 2
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        client.submit(lambda: 0).result()  # workers up
        for name, g in [("short (1 ms simulated)", grid("1ms", "1..=20")),
                        ("long (2 s simulated)", grid("2s", "1..=2"))]:
            points, record = schedkit.grid_points(g)
            texts = [json.dumps(p) for p in points]
            t = time.perf_counter()
            _native.run_rows(texts, record, 1)
            seq = time.perf_counter() - t
            line = [f"{name}: {len(points)} points, sequential {seq:.3f} s ({seq / len(points) * 1e3:.2f} ms/point)"]
            for batch in (1, 8):
                t = time.perf_counter()
                sweep_on_dask(g, client=client, batch_size=batch)
                wall = time.perf_counter() - t
                over = (wall * workers - seq) / len(points)
                line.append(f"  dask batch {batch}: {wall:.3f} s, overhead {over * 1e3:.2f} ms/point")
            print("\n".join(line))


if __name__ == "__main__":
    main()
