//! Behaviour of the runtime host. Every test runs under a watchdog, so a lost wakeup fails
//! the test instead of hanging the suite.
//!
//! One file per topic: `tasks` (spawn, join, wakeups, sleeps, attributes, shutdown),
//! `policies` (priority order and CPU shares), `preemption` (and the save area, and the suite
//! re-run in child processes), `sync` (the primitives), `futures` (async tasks), `stackprobe`
//! (painting a task's stack to see how deep it went). This file holds the helpers they share,
//! which the I/O tests use too. Tests reach the runtime only through `runtime` and its private
//! modules; never `sim`, the workload model or `metrics`.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod futures;
mod policies;
mod preemption;
mod stackprobe;
mod sync;
mod tasks;

/// Says in the test log that `test` did not run its check on this machine, and why: written
/// to the process's stderr directly, past the harness's capture, so a CI log shows it.
pub(super) fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// Runs `f` on its own thread and fails if it takes longer than `secs`.
pub(super) fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("test did not finish within {secs} s (lost wakeup or deadlock?)"),
    }
}

/// Tests that measure CPU shares or wakeup delays on real threads hold this while they run,
/// so that two of them never take each other's cores: on a 2-vCPU machine the fair server's
/// 2.5 s of hogs beside the nice test made BFS's nice 0 : nice 10 share 7.65 where 10.35 is
/// promised. (Other tests still run beside them; their bounds allow for that.)
pub(super) fn measuring_alone() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// True in the child processes that re-run this suite with a forced save area or without
/// preemption. Tests that measure CPU shares skip there: the child runs beside the parent's
/// own tests, whose load takes cores away from its workers and skews loop counts; those
/// policy figures are checked by the parent run, and the children exist for the preemption
/// paths.
pub(super) fn in_forced_child() -> bool {
    std::env::var(SAVE_AREA_ENV).is_ok() || std::env::var(PREEMPT_ENV).is_ok()
}

fn rt(policy: Policy, cpus: usize) -> Runtime {
    Runtime::builder()
        .policy(policy)
        .cpus(cpus)
        .build()
        .expect("runtime builds")
}

/// [`rt`] with its tick at `hz`.
fn rt_hz(policy: Policy, cpus: usize, hz: u32) -> Runtime {
    Runtime::builder()
        .policy(policy)
        .cpus(cpus)
        .hz(hz)
        .build()
        .expect("runtime builds")
}
