//! Who ran on each CPU, when: the per-CPU timeline of a short window of a run, small enough
//! to travel in a run's JSON and to draw in the HTML report.
//!
//! Built from a [`Trace`] the way a trace viewer draws its CPU tracks: a `sched_switch` ends
//! one slice and starts the next; what ran before a CPU's first switch of the window is the
//! trace's `running_at_start`, or else what the first event's line header names (the switch's
//! `prev`, a waking's waker), as ftrace readers take it.

use super::{header_task, EventKind, TaskIdx, Trace};
use serde::{Deserialize, Serialize};

/// Width of the window a run's timeline shows by default (the last whole one before the run
/// ended): at HZ=100 five ticks, enough to see time slices; for switch-heavy loads the
/// slice cap below shortens it.
pub const DEFAULT_WIDTH_NS: u64 = 50_000_000;

/// At most this many slices: a window of a switch-heavy load ends early rather than weigh
/// megabytes in the JSON and the page.
pub const MAX_SLICES: usize = 4000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The window shown, ns of simulated (or traced) time.
    pub from_ns: u64,
    pub to_ns: u64,
    pub cpus: u32,
    /// The tasks the slices name.
    pub tasks: Vec<TimelineTask>,
    /// Sorted by CPU, then start.
    pub slices: Vec<Slice>,
    /// The window was cut short at `to_ns` to stay under [`MAX_SLICES`].
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineTask {
    pub pid: u32,
    pub comm: String,
}

/// `task` (an index into `Timeline::tasks`) ran on `cpu` from `start_ns` to `end_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub cpu: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub task: u32,
}

impl Timeline {
    /// The timeline of `trace` over its whole span, cut short after `max_slices` slices.
    pub fn from_trace(trace: &Trace, max_slices: usize) -> Timeline {
        let n = trace.ncpus as usize;
        // Per CPU: what runs (None: idle) and since when; `known` once anything said.
        let mut curr: Vec<Option<TaskIdx>> = vec![None; n];
        let mut since = vec![trace.start_ns; n];
        let mut known = vec![false; n];
        for (&cpu, &t) in &trace.running_at_start {
            if let Some(c) = curr.get_mut(cpu as usize) {
                *c = Some(t);
                known[cpu as usize] = true;
            }
        }
        let mut raw: Vec<(u32, u64, u64, TaskIdx)> = Vec::new();
        let mut to_ns = trace.end_ns;
        let mut truncated = false;
        for e in &trace.events {
            let cpu = e.cpu as usize;
            if cpu >= n || e.ts < trace.start_ns || e.ts > trace.end_ns {
                continue;
            }
            if raw.len() >= max_slices {
                to_ns = e.ts;
                truncated = true;
                break;
            }
            let mut close = |curr: &mut Option<TaskIdx>, since: &mut u64, next, at: u64| {
                if let Some(t) = *curr {
                    if at > *since {
                        raw.push((e.cpu, *since, at, t));
                    }
                }
                *curr = next;
                *since = at;
            };
            if let Some(h) = header_task(&e.kind) {
                if !known[cpu] {
                    // It ran since the window began.
                    curr[cpu] = h;
                    known[cpu] = true;
                } else if h != curr[cpu] {
                    close(&mut curr[cpu], &mut since[cpu], h, e.ts);
                }
            }
            if let EventKind::Switch { next, .. } = e.kind {
                close(&mut curr[cpu], &mut since[cpu], next, e.ts);
                known[cpu] = true;
            }
        }
        for cpu in 0..n {
            if let Some(t) = curr[cpu] {
                if to_ns > since[cpu] {
                    raw.push((cpu as u32, since[cpu], to_ns, t));
                }
            }
        }
        // Number the tasks in order of first appearance.
        let mut index = std::collections::HashMap::new();
        let mut tasks = Vec::new();
        raw.sort_by_key(|&(cpu, start, _, _)| (cpu, start));
        let slices = raw
            .into_iter()
            .map(|(cpu, start_ns, end_ns, t)| {
                let task = *index.entry(t).or_insert_with(|| {
                    tasks.push(TimelineTask {
                        pid: trace.tasks[t].pid,
                        comm: trace.tasks[t].comm.clone(),
                    });
                    tasks.len() as u32 - 1
                });
                Slice {
                    cpu,
                    start_ns,
                    end_ns,
                    task,
                }
            })
            .collect();
        Timeline {
            from_ns: trace.start_ns,
            to_ns,
            cpus: trace.ncpus,
            tasks,
            slices,
            truncated,
        }
    }

    /// The last whole `width`-ns window of `trace` (aligned to multiples of `width`, as a
    /// rolling recorder keeps), or all of it if it is shorter.
    pub fn last_window(trace: &Trace, width: u64) -> (u64, u64) {
        let width = width.max(1);
        let k = trace.end_ns / width;
        if k == 0 || (k - 1) * width < trace.start_ns {
            (trace.start_ns, trace.end_ns)
        } else {
            ((k - 1) * width, k * width)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Event, PrevState, TraceTask};

    fn task(pid: u32, comm: &str) -> TraceTask {
        TraceTask {
            pid,
            tgid: None,
            comm: comm.into(),
            prio: 120,
        }
    }

    fn switch(ts: u64, cpu: u32, prev: Option<usize>, next: Option<usize>) -> Event {
        Event {
            ts,
            cpu,
            kind: EventKind::Switch {
                prev,
                prev_state: PrevState::Sleep,
                next,
            },
        }
    }

    /// Two CPUs by hand: CPU 0 runs a (known at the start) until 30, idles, runs b from 60;
    /// CPU 1's first switch names c as prev, so c ran from the start until 40.
    #[test]
    fn slices_from_switches_and_headers() {
        let trace = Trace {
            ncpus: 2,
            tasks: vec![task(10, "a"), task(11, "b"), task(12, "c")],
            events: vec![
                switch(30, 0, Some(0), None),
                switch(40, 1, Some(2), None),
                switch(60, 0, None, Some(1)),
            ],
            start_ns: 0,
            end_ns: 100,
            running_at_start: [(0, 0)].into_iter().collect(),
            ..Default::default()
        };
        let tl = Timeline::from_trace(&trace, 100);
        let got: Vec<(u32, u64, u64, &str)> = tl
            .slices
            .iter()
            .map(|s| {
                (
                    s.cpu,
                    s.start_ns,
                    s.end_ns,
                    tl.tasks[s.task as usize].comm.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![(0, 0, 30, "a"), (0, 60, 100, "b"), (1, 0, 40, "c")]
        );
        assert!(!tl.truncated);
        // Capped at one slice: the window ends at the event that would have made a second.
        let short = Timeline::from_trace(&trace, 1);
        assert!(short.truncated);
        assert_eq!(short.to_ns, 40);
        assert_eq!(short.slices.len(), 1);
    }

    #[test]
    fn last_whole_window() {
        let t = |start_ns, end_ns| Trace {
            start_ns,
            end_ns,
            ..Default::default()
        };
        assert_eq!(Timeline::last_window(&t(0, 125), 50), (50, 100));
        assert_eq!(Timeline::last_window(&t(0, 30), 50), (0, 30));
        assert_eq!(Timeline::last_window(&t(70, 120), 50), (70, 120));
    }

    /// A rolling recorder keeps the last whole window, with what ran when it began.
    #[test]
    fn rolling_recorder_keeps_the_last_whole_window() {
        let mut rec = crate::trace::TraceRecorder::rolling(100);
        rec.begin(1, 1000);
        let a = rec.task(1, "a", 120);
        let b = rec.task(2, "b", 120);
        rec.push(
            10,
            0,
            EventKind::Switch {
                prev: None,
                prev_state: PrevState::Runnable,
                next: Some(a),
            },
        );
        rec.push(
            150,
            0,
            EventKind::Switch {
                prev: Some(a),
                prev_state: PrevState::Runnable,
                next: Some(b),
            },
        );
        rec.push(
            230,
            0,
            EventKind::Switch {
                prev: Some(b),
                prev_state: PrevState::Sleep,
                next: None,
            },
        );
        rec.end(260);
        let trace = rec.finish();
        assert_eq!((trace.start_ns, trace.end_ns), (100, 200));
        assert_eq!(trace.running_at_start.get(&0), Some(&a));
        let tl = Timeline::from_trace(&trace, 100);
        let got: Vec<(u64, u64, u32)> = tl
            .slices
            .iter()
            .map(|s| (s.start_ns, s.end_ns, tl.tasks[s.task as usize].pid))
            .collect();
        assert_eq!(got, vec![(100, 150, 1), (150, 200, 2)]);
    }
}
