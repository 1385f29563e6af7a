//! schedkit: the great Linux CPU schedulers behind one `sched_class`-style interface, hosted
//! by a deterministic SMP simulator.
//!
//! - [`class`]: the scheduler interface every policy implements and every host drives.
//! - [`ds`]: the kernel's data structures below it (lists, priority arrays, the rbtree, the RT
//!   runqueue, work accounting).
//! - [`policy`]: one module per design (`goodness` = Linux 2.4, `o1` = the O(1) scheduler).
//! - [`sim`]: the simulated machine that hosts a policy.
//! - [`machine`]: machine profiles (topology, clock, costs).
//! - [`workload`]: built-in benchmarks and workload files.
//! - [`metrics`]: what a run reports; [`report`]: tables.
//! - [`bench`]: real-time benchmarks of the policies and the simulator.
//!
//! ```
//! use schedkit::{machine::Machine, registry::PolicyKind, sim::SimConfig, workload::Workload};
//! let m = Machine::load("smp2-2002").unwrap();
//! let w = Workload::parse("yield:instances=4").unwrap();
//! let cfg = SimConfig { duration_ns: 50_000_000, ..Default::default() };
//! let r = PolicyKind::O1.simulate(&m, &w, cfg).unwrap();
//! assert!(r.metrics.context_switches > 0);
//! ```

/// An internal invariant: asserted in debug builds, and in optimised ones built with the
/// `checks` feature (`cargo build --release --features checks`), which the long fuzz passes and
/// the golden runs use; compiled out otherwise.
#[macro_export]
#[doc(hidden)]
macro_rules! check {
    ($($t:tt)*) => {
        if cfg!(any(debug_assertions, feature = "checks")) {
            assert!($($t)*);
        }
    };
}

pub mod bench;
pub mod calibrate;
pub mod class;
pub mod ds;
pub mod infile;
pub mod machine;
pub mod metrics;
pub mod outfile;
pub mod policy;
pub mod registry;
pub mod report;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod runtime;
pub mod sched_core;
pub mod sim;
pub mod sleeplock;
pub mod sweep;
pub mod task;
pub mod trace;
pub mod validate;
pub mod workload;
