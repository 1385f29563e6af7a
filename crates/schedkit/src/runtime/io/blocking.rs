//! A helper pool for calls that cannot be made non-blocking (regular files, name lookups,
//! `fsync`, a C library that blocks): the task hands the call to a helper thread and parks
//! until it returns, so its worker runs other tasks meanwhile. Tokio's `spawn_blocking` is
//! the model: threads are started on demand up to a limit and leave after 10 s idle.

use crate::runtime::sync::Once;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Most helper threads at once (Tokio's default `max_blocking_threads`); later calls queue.
const MAX_THREADS: usize = 512;
/// A helper idle this long leaves.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    state: Mutex<PoolState>,
    work: Condvar,
}

struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
}

static POOL: Pool = Pool {
    state: Mutex::new(PoolState {
        queue: VecDeque::new(),
        threads: 0,
        idle: 0,
    }),
    work: Condvar::new(),
};

fn lock(m: &Mutex<PoolState>) -> MutexGuard<'_, PoolState> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on a helper thread and returns what it returns, parking the calling task (not
/// its worker) meanwhile; a panic in `f` is resumed in the caller. Called from a thread that
/// is not a task, it runs `f` there.
pub fn spawn_blocking<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    if crate::runtime::current_ops().is_none() {
        return f();
    }
    let slot = Arc::new(Once::new());
    let done = slot.clone();
    submit(Box::new(move || {
        done.set(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    }));
    match slot.wait_take() {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    }
}

fn submit(job: Job) {
    let mut g = lock(&POOL.state);
    g.queue.push_back(job);
    // As many idle helpers as queued jobs: one of them takes it.
    if g.idle >= g.queue.len() {
        POOL.work.notify_one();
        return;
    }
    if g.threads < MAX_THREADS {
        g.threads += 1;
        let spawned = std::thread::Builder::new()
            .name("schedkit-blocking".into())
            .spawn(helper);
        if spawned.is_err() {
            // No thread to be had: a running helper will take the job when it is free;
            // with none, run it here rather than lose it.
            g.threads -= 1;
            if g.threads == 0 {
                let job = g.queue.pop_back().expect("just queued");
                drop(g);
                job();
            }
        }
    }
}

fn helper() {
    // Started from a task, it would inherit its worker's single core.
    crate::runtime::worker::unpin_to_process_cpus();
    let mut g = lock(&POOL.state);
    loop {
        if let Some(job) = g.queue.pop_front() {
            drop(g);
            job();
            g = lock(&POOL.state);
            continue;
        }
        g.idle += 1;
        let (ng, t) = POOL
            .work
            .wait_timeout(g, KEEP_ALIVE)
            .unwrap_or_else(|e| e.into_inner());
        g = ng;
        g.idle -= 1;
        if t.timed_out() && g.queue.is_empty() {
            g.threads -= 1;
            return;
        }
    }
}
