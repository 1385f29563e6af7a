# %% [markdown]
# # A scheduling study from Python
#
# Notebook-style (cells marked `# %%`: open it in Jupyter with jupytext, in VS Code, or run it
# with `python examples/sweep_notebook.py`). Install the package first:
#
#     pip install ./crates/schedkit-py            # plus "dask[distributed]" for the cluster part

# %%
import schedkit

# One run: the dict is what `schedkit sim --json` writes.
r = schedkit.simulate(policy="o1:era=2002", machine="smp8-2002", workload="yield:instances=16",
                      duration="200ms")
print(r["metrics"]["context_switches_per_s"], "switches/s")

# %%
# A sweep: 3 policies x 3 machines x 3 loads x 4 seeds = 108 runs on every core.
grid = {
    "policies": ["goodness", "o1:era=2002", "o1"],
    "machines": ["smp2-2002", "smp4-2002", "smp8-2002"],
    "workloads": ["chat:rooms={2,5,10},messages=100"],
    "seeds": "1..=4",
    "duration": "500ms",
    "record": ["throughput", "wakeup_latency_us", "cpu_time_s.lock_spin"],
}
df = schedkit.sweep(grid)  # a pandas DataFrame, one row per run
print(df.shape)

# %%
# Messages per second by policy and machine (mean over rooms and seeds).
summary = (df.groupby(["machine", "policy"])["metrics.throughput.value"].mean().unstack()
           .round(0))
print(summary)

# %%
# Where 2.4 loses: seconds spun on the runqueue lock, by machine.
print(df[df.policy == "goodness"].groupby("machine")["metrics.cpu_time_s.lock_spin"].mean())

# %%
# A machine of your own, as a dict of the profile's tables (see profiles/*.toml).
import tomllib, pathlib

profile = tomllib.loads(pathlib.Path("profiles/smp2-2002.toml").read_text())
profile["name"] = "smp2-slow-bus"
profile["interconnect"]["bus_mhz"] = 66.0
r = schedkit.simulate(policy="goodness", machine=profile, workload="yield:instances=4",
                      duration="200ms")
print(r["machine"], r["metrics"]["interconnect"]["bus_wait_us"], "us of bus queueing")

# %% [markdown]
# ## On a Dask cluster
# The same grid, shipped to a cluster in batches (start one with `dask scheduler` and
# `dask worker tcp://HOST:8786` on each machine, or a LocalCluster as here):

# %%
try:
    import distributed
except ImportError:
    distributed = None
if distributed is not None and __name__ == "__main__":
    from schedkit.cluster import sweep_on_dask

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1) as cluster, \
            distributed.Client(cluster) as client:
        on_cluster = sweep_on_dask(grid, client=client, batch_size=8)
    # `record` left out the host wall time, the only column that differs between runs.
    print("cluster rows equal the local ones:", on_cluster.equals(df))
