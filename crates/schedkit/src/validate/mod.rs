//! `schedkit validate`: does the simulated scheduler behave like the kernel that recorded a
//! suite of traces?
//!
//! A *suite* is a folder with a `suite.toml` (what recorded it: kernel release, its
//! `sched_features`, HZ, preemption mode, the machine profile and the fair class that stand
//! for it) and, per workload, a trace recorded with `scripts/record-trace.sh` (plain or
//! gzip-compressed) and what the benchmark itself printed. `scripts/record-suite.sh` records
//! one. For each workload the trace is replayed (`trace::replay`) under the recording kernel's
//! class on the suite's machine, and the replay's own trace is measured exactly as the
//! recorded one (`trace::figures`), so every figure of a row is measured alike:
//!
//! | figure | target (issue 28, item 4) |
//! |---|---|
//! | context switches, wakeups, migrations | within ±15 % |
//! | busy CPU time | within ±10 % |
//! | wakeup latency p50 | within a factor of 2 |
//! | wakeup latency p99, spread of CPU time over tasks | reported, no target |
//!
//! Where the suite names a built-in workload that models the benchmark (`model`), the model is
//! simulated too and its headline figure (hackbench's `Time:`, cyclictest's latency, ...) set
//! against what the real run printed (target ±25 %).
//!
//! Nothing here fits anything: the figures are what the modelled mechanisms give. A miss is
//! reported as a miss; `docs/validation.md` says which mechanism it comes from.
//!
//! Depends on `trace`, `sim` (through `PolicyKind::simulate`), `machine`, `registry`,
//! `workload` and `metrics`; nothing depends on it but the front ends.
//!
//! One job a file: `suite.rs` (`suite.toml` and what it names, loaded and checked), `judge.rs`
//! (the figures compared, their targets and what a workload gave), `run.rs` (the replays and
//! the models run, the rows made), `render.rs` (the text table, the Markdown summary and the
//! HTML page).

mod judge;
mod render;
mod run;
mod suite;
#[cfg(test)]
mod tests;

pub use judge::{cpu_spread, Row, Tolerance, WorkloadResult, FIGURES, MODEL_TOLERANCE};
pub use render::{html, markdown, table};
pub use run::{replay_trace, run, run_workload, Options};
pub use suite::{Headline, ModelFigure, Repeat, Suite, SuiteWorkload};
