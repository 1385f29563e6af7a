//! Sweeps: a grid of simulator runs (policies x machines x workloads x knobs x seeds), each a
//! pure function of its inputs, run on every core and recorded one flat row per run.
//!
//! A grid is a TOML file:
//!
//! ```toml
//! policies  = ["goodness", "o1:era=2002", "o1"]
//! machines  = ["smp2-2002", "smp8-2002"]          # shipped names or .toml paths (relative
//!                                                  # to the grid file)
//! workloads = ["chat:rooms={5,10,20},messages=100", "yield:instances=4"]
//! seeds     = "1..=8"          # or [1, 2, 3], or 7; "a..b" excludes b as Rust ranges do
//! duration  = "2s"             # one value, or a list: another axis
//! rt_balance = ["passive", "pushpull"]   # optional axes: rt_balance, lock_mode, governor
//! record    = ["throughput", "context_switches_per_s", "wakeup_latency_us"]  # optional
//! ```
//!
//! `{a,b,c}` in a workload spec is an axis of its own: each brace group multiplies the
//! specs (`chat:rooms={5,10},messages={100,1000}` is four workloads). Every entry is checked
//! when the grid is read (the policy is registered, the machine loads, the workload parses), and
//! an error names the grid's line. `record` keeps the metric columns named by one of the given
//! names or their dotted parents, with or without `metrics.` (`wakeup_latency_us` keeps
//! `metrics.wakeup_latency_us.p99`; `context_switches` does not keep
//! `metrics.context_switches_per_s`) (default: all of them).
//!
//! A row is the point's inputs (`policy`, `machine`, `workload`, `seed`, `duration_s`,
//! `rt_balance`, `lock_mode`, `governor`, and the point's `key`) followed by the run's result
//! flattened to dotted columns (`metrics.wakeup_latency_us.p99`); lists of objects are indexed
//! (`metrics.sleep_locks.0.acquisitions`), and the long per-sample lists (the latency CDF, the
//! per-iteration `rtmigrate` records, the timeline) are left out: `schedkit sim --json` has them.
//! A point that fails (a workload too big for its machine, say) gives a row whose `error`
//! column says why.
//!
//! Every run of a point gives the same row (bit for bit, except `metrics.sim.wall_s`, the host
//! time it took), whichever host ran it: [`run_point`] is what `schedkit sim` runs, with the
//! same defaults.
//!
//! One job a file: `grid.rs` (a grid file read, checked and expanded to points),
//! `point.rs` ([`Point`], its key, columns and JSON), `run.rs` (a point run, its row, points
//! run on N threads), `journal.rs` (the journal a sweep appends to and resumes from), and
//! `tables.rs` (CSV and Parquet, behind the `tables` feature). Must not depend on the CLI:
//! the CLI and the Python extension both call it.

mod grid;
mod journal;
mod point;
mod run;
#[cfg(feature = "tables")]
pub mod tables;
#[cfg(test)]
mod tests;

pub use grid::{
    expand_braces, load_grid, parse_grid, parse_grid_limited, Grid, GridError, MAX_POINTS,
};
pub use journal::{journal_path, resumable, Journal};
pub use point::Point;
pub use run::{records, row, run_class_on, run_on, run_point, run_points, Row};
