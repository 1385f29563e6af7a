//! The policies, one module per historical design, each a [`crate::class::SchedClass`]; the
//! RT class (`rt`) is stacked in front of the per-CPU ones by the scheduler core. The registry
//! of them is `crate::registry`.

pub mod asym;
pub mod bfs;
pub mod cfs;
pub mod cfs_fair_clock;
pub mod deadline;
pub mod eevdf;
pub mod fair_lb;
pub mod goodness;
pub mod o1;
pub mod pelt;
pub mod rt;
pub mod sched_domains;
#[cfg(test)]
pub(crate) mod testkit;
pub mod weight;
