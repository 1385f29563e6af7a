//! schedkit: the great Linux CPU schedulers (2.4's goodness, the O(1) scheduler, CFS of
//! 2.6.23/2.6.24/2.6.32, BFS 0.404, EEVDF of 6.6 and 6.18, the RT class with 2.6.25's push/pull)
//! behind one `sched_class`-style interface, hosted two ways: a deterministic discrete-event
//! model of an SMP machine, and a user-space runtime that schedules a program's own tasks on
//! worker threads with the same policy code.
//!
//! - [`class`]: the scheduler interface every policy implements and every host drives.
//! - [`ds`]: the kernel's data structures below it (lists, priority arrays, the rbtree, the RT
//!   runqueue, work accounting).
//! - [`policy`]: one module per design; [`registry`]: the policies as data (names, eras,
//!   constructors).
//! - [`external`]: a class written in another crate, described by an `ExternalPolicy` and
//!   [registered](registry::register), runs on both hosts as a built-in does
//!   (`docs/own-class.md`).
//! - [`conformance`]: the cross-host conformance suite and the golden figures as a library:
//!   `conformance::check::<MyClass>()` audits a class on both hosts and explains a failure.
//! - [`sched_core`]: every scheduling path once (`try_to_wake_up`, `schedule`,
//!   `scheduler_tick`, `load_balance`, RT push/pull), shared by both hosts, as `core.c` is.
//! - [`sim`]: the simulated machine that hosts a policy; [`machine`]: machine profiles
//!   (topology, clock, caches, costs, frequency and power); [`calibrate`]: a profile measured
//!   on this machine.
//! - `runtime` (Linux x86-64): the same policies scheduling real tasks on worker threads,
//!   with preemption, sleeping locks ([`sleeplock`], shared with the simulator) and I/O.
//! - [`workload`]: built-in benchmarks, workload files and rt-app JSON.
//! - [`trace`]: recorded traces (ftrace text, `perf script`, trace-cmd's trace.dat) imported,
//!   replayed and written (ftrace text, Perfetto); [`validate`]: a recorded suite against the
//!   model.
//! - [`metrics`]: what a run reports; [`report`]: tables and the HTML page; [`sweep`]: grids of
//!   runs on N threads (the CLI's `sweep` and the Python package's).
//! - [`bench`](mod@bench): real-time benchmarks of the policies' operations and the simulator.
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
pub mod conformance;
pub mod diff;
pub mod ds;
pub mod external;
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
