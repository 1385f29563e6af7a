//! What a trace says happened, computed one way for every trace: a recorded one
//! (`replay --policies recorded`) and a simulated run's own (each policy's column of
//! `replay`), so that the columns of a comparison are measured alike.
//!
//! Definitions (the same as the simulator's metrics where both exist):
//! - CPU time of a task: the sum of its intervals from a `sched_switch` in to the next one
//!   out (a task running when the trace starts counts from the start).
//! - Context switches: `sched_switch` events (idle included, as the kernel's `nr_switches`).
//! - Migrations: switch-ins on a CPU other than the one the task last ran on.
//! - Wakeups and their latency: from `sched_waking` (or the `sched_wakeup_new` of a task the
//!   trace forks) of a task that is not on a CPU to its next switch-in. The tasks a simulation
//!   or a replay starts, with no fork in the trace, are not wakeups: the recorded kernel had
//!   them before its trace began.
//! - Runqueue wait: from becoming runnable (woken, forked, or switched out still runnable)
//!   to the next switch-in; a task still waiting at the end counts until the end (a started
//!   task's wait for its first run is left out with its start).

use super::*;
use hdrhistogram::Histogram;
use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TaskFigures {
    pub pid: u32,
    pub comm: String,
    pub cpu_ms: f64,
    /// Times it was switched in.
    pub runs: u64,
    pub wakeups: u64,
    pub max_wakeup_latency_us: f64,
    pub runqueue_wait_ms: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figures {
    pub span_s: f64,
    pub cpus: u32,
    /// CPU time of all tasks (the idle task excluded), seconds.
    pub busy_cpu_s: f64,
    pub idle_fraction: f64,
    pub context_switches: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub wakeup_latency_us: crate::metrics::Latency,
    /// `[µs, fraction]` pairs of the wakeup latencies (see `metrics::latency_cdf`).
    pub wakeup_latency_cdf_us: Vec<[f64; 2]>,
    pub runqueue_wait_total_ms: f64,
    pub runqueue_wait_max_us: f64,
    pub forks: u64,
    pub exits: u64,
    pub tasks: Vec<TaskFigures>,
}

#[derive(Clone, Default)]
struct State {
    clock: RunClock,
    last_cpu: Option<u32>,
    runnable_since: Option<u64>,
    woken_at: Option<u64>,
    cpu_ns: u64,
    runs: u64,
    wakeups: u64,
    max_lat: u64,
    wait_ns: u64,
}

fn latency(h: &Histogram<u64>) -> crate::metrics::Latency {
    let us = |v: u64| v as f64 / 1000.0;
    crate::metrics::Latency {
        p50: if h.is_empty() {
            0.0
        } else {
            us(h.value_at_quantile(0.5))
        },
        p99: if h.is_empty() {
            0.0
        } else {
            us(h.value_at_quantile(0.99))
        },
        max: if h.is_empty() { 0.0 } else { us(h.max()) },
        count: h.len(),
    }
}

/// The figures of `trace`.
pub fn figures(trace: &Trace) -> Figures {
    let n = trace.tasks.len();
    let mut st = vec![State::default(); n];
    let mut cpu_curr: Vec<Option<TaskIdx>> = vec![None; trace.ncpus as usize];
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid bounds");
    let (mut switches, mut migrations, mut forks, mut exits) = (0, 0, 0, 0);
    let mut max_wait = 0u64;
    // The histogram's max is rounded to its precision; the exact one is kept here.
    let mut max_lat = 0u64;
    let start = trace.start_ns;
    // A task's `sched_wakeup_new` is a wakeup only where the trace holds its fork. A task
    // created otherwise was there before the trace began, or was started by what made the
    // trace (a simulation's or a replay's tasks at its start: a replay recreates every task
    // the recording began with that way), and the kernel that recorded the trace woke none
    // of them: counting those would add one wakeup per such task to a replay alone.
    let mut forked = vec![false; n];
    for e in &trace.events {
        if let EventKind::Fork { child, .. } = e.kind {
            forked[child] = true;
        }
    }
    for e in &trace.events {
        let ts = e.ts;
        match e.kind {
            EventKind::Switch {
                prev,
                prev_state,
                next,
            } => {
                switches += 1;
                if let Some(p) = prev {
                    let s = &mut st[p];
                    s.cpu_ns = s.cpu_ns.saturating_add(s.clock.stop(ts, start));
                    s.last_cpu = Some(e.cpu);
                    if prev_state == PrevState::Runnable {
                        s.runnable_since = Some(ts);
                    }
                }
                if let Some(nx) = next {
                    // Clock skew: a task still marked running elsewhere stops there now.
                    if st[nx].clock.running() {
                        let ran = st[nx].clock.stop(ts, start);
                        st[nx].cpu_ns = st[nx].cpu_ns.saturating_add(ran);
                        if let Some(slot) = cpu_curr.iter_mut().find(|c| **c == Some(nx)) {
                            *slot = None;
                        }
                    }
                    let s = &mut st[nx];
                    s.clock.start(ts);
                    s.runs += 1;
                    if s.last_cpu.is_some_and(|l| l != e.cpu) {
                        migrations += 1;
                    }
                    s.last_cpu = Some(e.cpu);
                    if let Some(w) = s.woken_at.take() {
                        let lat = ts.saturating_sub(w).max(1);
                        hist.saturating_record(lat);
                        max_lat = max_lat.max(lat);
                        s.max_lat = s.max_lat.max(lat);
                    }
                    if let Some(r) = s.runnable_since.take() {
                        let wait = ts.saturating_sub(r);
                        s.wait_ns = s.wait_ns.saturating_add(wait);
                        max_wait = max_wait.max(wait);
                    }
                }
                if let Some(c) = cpu_curr.get_mut(e.cpu as usize) {
                    *c = next;
                }
            }
            EventKind::WakeupNew { task, .. } if !forked[task] => {}
            EventKind::Waking { task, .. } | EventKind::WakeupNew { task, .. } => {
                let s = &mut st[task];
                if !s.clock.running() && s.woken_at.is_none() {
                    s.woken_at = Some(ts);
                    s.wakeups += 1;
                    s.runnable_since.get_or_insert(ts);
                }
            }
            EventKind::Fork { .. } => forks += 1,
            EventKind::Exit { .. } => exits += 1,
            _ => {}
        }
    }
    let end = trace.end_ns.max(start);
    for s in st.iter_mut() {
        if s.clock.running() {
            s.cpu_ns = s.cpu_ns.saturating_add(s.clock.stop(end, start));
        }
        if let Some(r) = s.runnable_since.take() {
            let wait = end.saturating_sub(r);
            s.wait_ns = s.wait_ns.saturating_add(wait);
            max_wait = max_wait.max(wait);
        }
    }
    let span = end - start;
    let busy: u64 = st.iter().map(|s| s.cpu_ns).fold(0u64, u64::saturating_add);
    let cap = span as f64 * trace.ncpus.max(1) as f64;
    Figures {
        span_s: span as f64 / 1e9,
        cpus: trace.ncpus,
        busy_cpu_s: busy as f64 / 1e9,
        idle_fraction: if cap > 0.0 {
            (1.0 - busy as f64 / cap).clamp(0.0, 1.0)
        } else {
            0.0
        },
        context_switches: switches,
        migrations,
        wakeups: st.iter().map(|s| s.wakeups).sum(),
        wakeup_latency_us: {
            // The percentiles are the histogram's bucket bounds, which may lie above the exact
            // maximum: none is larger than it.
            let max = max_lat as f64 / 1e3;
            let l = latency(&hist);
            crate::metrics::Latency {
                max,
                p50: l.p50.min(max),
                p99: l.p99.min(max),
                ..l
            }
        },
        wakeup_latency_cdf_us: crate::metrics::latency_cdf(&hist),
        runqueue_wait_total_ms: st.iter().map(|s| s.wait_ns).fold(0u64, u64::saturating_add) as f64
            / 1e6,
        runqueue_wait_max_us: max_wait as f64 / 1e3,
        forks,
        exits,
        tasks: trace
            .tasks
            .iter()
            .zip(&st)
            .map(|(t, s)| TaskFigures {
                pid: t.pid,
                comm: t.comm.clone(),
                cpu_ms: s.cpu_ns as f64 / 1e6,
                runs: s.runs,
                wakeups: s.wakeups,
                max_wakeup_latency_us: s.max_lat as f64 / 1e3,
                runqueue_wait_ms: s.wait_ns as f64 / 1e6,
            })
            .collect(),
    }
}

/// Where a trace's forked tasks started (docs/validation.md, "Where a forked task starts"):
/// on the CPU their parent forked them on, or another, and how often another CPU was idle
/// then. Mainline 6.18's fork placement (`sched_balance_find_dst_cpu`) never keeps a child on
/// its parent's CPU while an idle CPU that the child may use shares the parent's core, or
/// shares its last-level cache where no core of that cache has SMT siblings and no cluster
/// level (CLS, a shared L2) splits it: the level that splits the two then has single-CPU
/// groups, where the idle CPU's group has one idle CPU and spare capacity and the parent's
/// none, so the walk leaves the parent's CPU. (Farther away, a group holding an idle CPU may
/// still be overloaded, and a NUMA level may keep a child home on purpose; a trace does not
/// record affinity, so a child pinned to its parent's CPU would count too.) A recording with
/// such starts came from a kernel that places forks by another rule, which no class models.
/// In a recording a waking marks the wakee's last CPU busy until the wakee migrates or runs;
/// in a simulated trace the waking names the CPU chosen for it.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ForkStarts {
    /// `sched_wakeup_new` of tasks the trace forks.
    pub forks: u64,
    /// Of those, started on the CPU the fork ran on.
    pub on_parent_cpu: u64,
    /// Forks while another CPU was idle: running its idle task, with no task woken,
    /// migrated or preempted there since, that has not run yet.
    pub beside_idle_cpu: u64,
    /// Of those, started on the parent's CPU anyway.
    pub beside_idle_cpu_on_parent_cpu: u64,
}

/// The [`ForkStarts`] of `trace`, counting as "another CPU idle" only a CPU that
/// `near(parent's CPU, cpu)` says is near enough for the rule above (the caller knows the
/// topology: the trace does not).
pub fn fork_starts(trace: &Trace, near: &dyn Fn(u32, u32) -> bool) -> ForkStarts {
    let ncpus = trace.ncpus as usize;
    let ntasks = trace.tasks.len();
    let mut out = ForkStarts::default();
    // What each CPU runs, from what the trace says ran when it started.
    let mut curr: Vec<Option<TaskIdx>> = vec![None; ncpus];
    for (&c, &t) in &trace.running_at_start {
        if let Some(slot) = curr.get_mut(c as usize) {
            *slot = Some(t);
        }
    }
    // Where each runnable task waits to run (its wakeup's target, its migration's
    // destination, the CPU that preempted it), and each CPU's such tasks (a task listed
    // there counts only while `waits_on` still names that CPU).
    let mut waits_on: Vec<Option<u32>> = vec![None; ntasks];
    let mut waiting: Vec<Vec<TaskIdx>> = vec![Vec::new(); ncpus];
    let mut forked_on: Vec<Option<u32>> = vec![None; ntasks];
    // Woken while still on its CPU on its way to sleep: queued once it has switched out.
    let mut woken_blocking = vec![false; ntasks];
    let wait = |waits_on: &mut Vec<Option<u32>>, waiting: &mut Vec<Vec<TaskIdx>>, t, c: u32| {
        waits_on[t] = Some(c);
        let list = &mut waiting[c as usize];
        list.push(t);
        if list.len() > 64 {
            list.retain(|&u| waits_on[u] == Some(c));
        }
    };
    for e in &trace.events {
        let cpu = e.cpu as usize;
        if cpu >= ncpus {
            continue;
        }
        match e.kind {
            EventKind::Fork { child, .. } => forked_on[child] = Some(e.cpu),
            EventKind::WakeupNew { task, target_cpu } => {
                if let Some(here) = forked_on[task].take() {
                    let idle = |c: usize| {
                        curr[c].is_none()
                            && waiting[c].iter().all(|&t| waits_on[t] != Some(c as u32))
                    };
                    let beside_idle =
                        (0..ncpus).any(|c| c != here as usize && near(here, c as u32) && idle(c));
                    let kept = target_cpu == here;
                    out.forks += 1;
                    out.on_parent_cpu += u64::from(kept);
                    out.beside_idle_cpu += u64::from(beside_idle);
                    out.beside_idle_cpu_on_parent_cpu += u64::from(beside_idle && kept);
                }
                if (target_cpu as usize) < ncpus {
                    wait(&mut waits_on, &mut waiting, task, target_cpu);
                }
            }
            EventKind::Waking {
                task, target_cpu, ..
            } if (target_cpu as usize) < ncpus => {
                if !curr.contains(&Some(task)) {
                    wait(&mut waits_on, &mut waiting, task, target_cpu);
                } else if trace.wakings_of_blocking.contains(&(e.ts, task)) {
                    woken_blocking[task] = true;
                }
            }
            EventKind::Migrate { task, dest_cpu, .. }
                if waits_on[task].is_some() && (dest_cpu as usize) < ncpus =>
            {
                wait(&mut waits_on, &mut waiting, task, dest_cpu);
            }
            EventKind::Switch {
                prev,
                prev_state,
                next,
            } => {
                if let Some(n) = next {
                    waits_on[n] = None;
                    woken_blocking[n] = false;
                }
                if let Some(p) = prev {
                    waits_on[p] = None;
                    if prev_state == PrevState::Runnable || std::mem::take(&mut woken_blocking[p]) {
                        // Preempted, or woken on its way to sleep: queued where it ran
                        // (a migration that follows moves it).
                        wait(&mut waits_on, &mut waiting, p, e.cpu);
                    }
                }
                curr[cpu] = next;
                if next.is_none() {
                    // A CPU that switches to its idle task has nothing queued (a wakeup
                    // whose switch-in the recording lost would otherwise wait for ever).
                    for t in waiting[cpu].drain(..) {
                        if waits_on[t] == Some(e.cpu) {
                            waits_on[t] = None;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_percentile_is_above_the_maximum() {
        // One wakeup of 1 234 567 ns: the histogram's bucket of it ends above it (3
        // significant digits), and p50 and p99 used to be that bound, above the max.
        let text = "\
# #P:1
 a-1 [000] d..4. 0.000000: sched_waking: comm=b pid=2 prio=120 target_cpu=000
 a-1 [000] d..2. 0.001234567: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120
";
        let f = figures(&import::parse(text).unwrap());
        let l = &f.wakeup_latency_us;
        assert_eq!(l.count, 1);
        assert_eq!(l.max, 1234.567);
        assert!(l.p99 <= l.max && l.p50 <= l.max, "{l:?}");
    }

    #[test]
    fn a_task_new_in_the_trace_is_a_wakeup_only_where_the_trace_forks_it() {
        // a forks c (its wakeup_new counts: 3 µs to its switch-in); d appears with a
        // wakeup_new and no fork (a task the trace's maker started: not the kernel's wakeup).
        let text = "\
# #P:2
 a-1 [000] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 x-0 [001] d..3. 0.000000: sched_wakeup_new: comm=d pid=4 prio=120 target_cpu=001
 x-0 [001] d..2. 0.000001: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=d next_pid=4 next_prio=120
 a-1 [000] ..... 0.000002: sched_process_fork: comm=a pid=1 child_comm=c child_pid=3
 a-1 [000] d..3. 0.000002: sched_wakeup_new: comm=c pid=3 prio=120 target_cpu=000
 a-1 [000] d..2. 0.000005: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=c next_pid=3 next_prio=120
";
        let f = figures(&import::parse(text).unwrap());
        assert_eq!(f.wakeups, 1);
        assert_eq!(f.wakeup_latency_us.count, 1);
        assert_eq!(f.wakeup_latency_us.max, 3.0);
        assert_eq!(f.forks, 1);
    }

    #[test]
    fn hand_computed_trace() {
        // CPU 0: a runs from the start (0) to 10 µs and sleeps; b, woken by a at 5 µs on
        // CPU 1, runs 7..20 µs there; a, woken at 12 µs, runs on CPU 1 from 20 µs (a
        // migration) until the end at 30 µs.
        let text = "\
# #P:2
 a-1 [000] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] d..4. 0.000005: sched_waking: comm=b pid=2 prio=120 target_cpu=001
 x-0 [001] d..2. 0.000007: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 a-1 [000] d..2. 0.000010: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 b-2 [001] d..4. 0.000012: sched_waking: comm=a pid=1 prio=120 target_cpu=001
 b-2 [001] d..2. 0.000020: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=a next_pid=1 next_prio=120
 a-1 [001] d..2. 0.000030: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=0 next_prio=120
";
        let t = import::parse(text).unwrap();
        let f = figures(&t);
        assert_eq!(f.context_switches, 5);
        assert_eq!(f.migrations, 1);
        assert_eq!(f.wakeups, 2);
        // Latencies 2 µs (b) and 8 µs (a).
        assert_eq!(f.wakeup_latency_us.max, 8.0);
        assert_eq!(f.wakeup_latency_us.count, 2);
        let a = f.tasks.iter().find(|x| x.pid == 1).unwrap();
        let b = f.tasks.iter().find(|x| x.pid == 2).unwrap();
        assert_eq!(a.cpu_ms, 0.020);
        assert_eq!(b.cpu_ms, 0.013);
        assert!((f.busy_cpu_s - 33e-6).abs() < 1e-12);
        assert_eq!(f.span_s, 30e-6);
        // Waits: b 2 µs, a 8 µs; a preempted at the end waits 0 µs more (the end).
        assert!((f.runqueue_wait_total_ms - 0.010).abs() < 1e-12);
    }

    #[test]
    fn fork_starts_count_children_kept_beside_an_idle_cpu() {
        // CPU 1 idle from the start. a forks c at 1 µs and keeps it on CPU 0 while CPU 1 is
        // idle (counted as kept beside an idle CPU); b is woken onto CPU 1 at 3 µs, so at the
        // fork of d (4 µs, kept on CPU 0) CPU 1 has a task waiting: not idle; b runs 5..6 µs
        // and CPU 1 goes idle; e, forked at 7 µs, starts on CPU 1 (moved beside an idle CPU).
        let text = "\
# #P:2
 a-1 [000] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 x-0 [001] d..2. 0.000000: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 a-1 [000] ..... 0.000001: sched_process_fork: comm=a pid=1 child_comm=c child_pid=3
 a-1 [000] d..3. 0.000001: sched_wakeup_new: comm=c pid=3 prio=120 target_cpu=000
 a-1 [000] d..4. 0.000003: sched_waking: comm=b pid=2 prio=120 target_cpu=001
 a-1 [000] ..... 0.000004: sched_process_fork: comm=a pid=1 child_comm=d child_pid=4
 a-1 [000] d..3. 0.000004: sched_wakeup_new: comm=d pid=4 prio=120 target_cpu=000
 x-0 [001] d..2. 0.000005: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [001] d..2. 0.000006: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 a-1 [000] ..... 0.000007: sched_process_fork: comm=a pid=1 child_comm=e child_pid=5
 a-1 [000] d..3. 0.000007: sched_wakeup_new: comm=e pid=5 prio=120 target_cpu=001
";
        let f = fork_starts(&import::parse(text).unwrap(), &|_, _| true);
        assert_eq!(
            f,
            ForkStarts {
                forks: 3,
                on_parent_cpu: 2,
                beside_idle_cpu: 2,
                beside_idle_cpu_on_parent_cpu: 1,
            }
        );
        // A CPU running a task from the trace's start (its first line names it) is busy.
        let busy = "\
# #P:2
 a-1 [000] ..... 0.000001: sched_process_fork: comm=a pid=1 child_comm=c child_pid=3
 a-1 [000] d..3. 0.000001: sched_wakeup_new: comm=c pid=3 prio=120 target_cpu=000
 b-2 [001] d..2. 0.000009: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
";
        let f = fork_starts(&import::parse(busy).unwrap(), &|_, _| true);
        assert_eq!((f.forks, f.beside_idle_cpu), (1, 0));
        // With CPU 1 too far away to count, no fork is beside an idle CPU.
        let f = fork_starts(&import::parse(text).unwrap(), &|a, b| a == b);
        assert_eq!((f.forks, f.beside_idle_cpu), (3, 0));
    }
}
