//! What both front ends (the text lines, `tracedat`'s records) hand over, and the builder that
//! turns it into a trace: raw events sorted, PIDs made tasks (PID reuse, switches put back,
//! overlapping runs).

use super::*;

/// A task as an event names it: PID and, if known, its name and priority.
#[derive(Clone, Debug)]
pub(crate) struct Ref {
    pub(crate) pid: u32,
    pub(crate) comm: Option<String>,
    pub(crate) prio: Option<i32>,
}

/// An event as a front end decoded it, before PIDs become tasks.
#[derive(Clone, Debug)]
pub(crate) enum RawKind {
    Switch {
        prev: Ref,
        state: PrevState,
        next: Ref,
    },
    /// `waking`: a `sched_waking` (true) or a `sched_wakeup` (false).
    Wake {
        task: Ref,
        cpu: u32,
        waking: bool,
    },
    WakeupNew {
        task: Ref,
        cpu: u32,
    },
    Fork {
        parent: Ref,
        child: Ref,
    },
    Exit {
        task: Ref,
    },
    Migrate {
        task: Ref,
        orig: u32,
        dest: u32,
    },
    Freq {
        cpu: u32,
        khz: u64,
    },
    Idle {
        cpu: u32,
        state: Option<u32>,
    },
    Mark {
        begin: bool,
        pid: u32,
        name: String,
    },
    /// `syscalls:sys_enter_sched_setscheduler`: the calling task asks for `policy` (the
    /// syscall's number, SCHED_RESET_ON_FORK masked off) for `pid` (0: itself).
    SetSchedulerEnter {
        pid: u32,
        policy: u32,
    },
    /// `syscalls:sys_exit_sched_setscheduler`: the call returned `ret` (0: done).
    SetSchedulerExit {
        ret: i64,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Raw {
    pub(crate) ts: u64,
    pub(crate) cpu: u32,
    /// The task running where the event fired (the line's header).
    pub(crate) current: Ref,
    pub(crate) tgid: Option<u32>,
    pub(crate) irq: bool,
    /// The preemption depth recorded with the event, where the trace has one.
    pub(crate) depth: Option<u8>,
    pub(crate) kind: RawKind,
}

/// What both front ends (the text lines above, `tracedat`'s records) hand over: the events as
/// decoded, in file order, and everything not used. [`Builder::finish`] sorts them and turns
/// PIDs into tasks ([`Resolver`]: PID reuse, switches put back, overlapping runs), so that a
/// trace.dat and its `trace-cmd report` text give one trace.
pub(crate) struct Builder {
    pub(crate) stats: ImportStats,
    header_cpus: Option<u32>,
    raws: Vec<Raw>,
    max_ts: u64,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            stats: ImportStats::default(),
            header_cpus: None,
            raws: Vec::new(),
            max_ts: 0,
        }
    }

    /// The machine's CPUs, as a header gives them (the last one given counts).
    pub(crate) fn cpus(&mut self, n: u32) {
        self.header_cpus = Some(n);
    }

    /// An event of the model, in file order.
    pub(crate) fn event(&mut self, r: Raw) {
        if r.ts < self.max_ts {
            self.stats.out_of_order += 1;
        }
        self.max_ts = self.max_ts.max(r.ts);
        self.raws.push(r);
    }

    /// An event of a kind the model does not use.
    pub(crate) fn other(&mut self, name: &str) {
        match self.stats.other_events.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.stats.other_events.insert(name.to_string(), 1);
            }
        }
    }

    /// Something that could not be read, described with where it is.
    pub(crate) fn malformed(&mut self, example: String) {
        self.stats.malformed += 1;
        if self.stats.malformed_examples.len() < 5 {
            self.stats.malformed_examples.push(example);
        }
    }

    /// Events the kernel's ring buffer dropped.
    pub(crate) fn lost(&mut self, n: u64) {
        self.stats.lost_events = self.stats.lost_events.saturating_add(n);
    }

    /// The trace; `unit` names what `stats.lines` counts, for the error when there is no
    /// scheduler event at all.
    pub(crate) fn finish(self, unit: &str) -> Result<Trace, ImportError> {
        let Builder {
            stats,
            header_cpus,
            mut raws,
            ..
        } = self;
        if raws.is_empty() {
            let mut why = format!(
                "no scheduler events (sched_switch, sched_waking, …) in {} {unit}",
                stats.lines
            );
            if let Some(ex) = stats.malformed_examples.first() {
                why += &format!("; {} malformed, first at {ex}", stats.malformed);
            }
            return Err(ImportError::Empty(why));
        }
        raws.sort_by_key(|r| r.ts);
        let has_waking = raws
            .iter()
            .any(|r| matches!(r.kind, RawKind::Wake { waking: true, .. }));
        let n = raws.len();
        let t = Resolver::new(stats, header_cpus).run(raws, has_waking);
        let names_a_task = |e: &Event| match e.kind {
            EventKind::Switch { prev, next, .. } => prev.is_some() || next.is_some(),
            EventKind::CpuFrequency { .. } | EventKind::CpuIdle { .. } => false,
            _ => true,
        };
        if !t.events.iter().any(names_a_task) {
            return Err(ImportError::Empty(format!(
                "none of the {n} scheduler events names a task other than the idle task"
            )));
        }
        Ok(t)
    }
}

/// Turns PIDs into tasks in time order (a PID seen again after its task died is a new task),
/// and checks each CPU's switches against what it was known to run.
pub(super) struct Resolver {
    pub(super) trace: Trace,
    pub(super) live: HashMap<u32, TaskIdx>,
    /// Tasks whose last switch-out was as dead: their PID's next use is a new task.
    pub(super) dead: Vec<bool>,
    /// The CPU each running task is on.
    pub(super) on_cpu: HashMap<TaskIdx, u32>,
    pub(super) cpu_curr: HashMap<u32, Option<TaskIdx>>,
    /// The last event's time on each CPU.
    pub(super) cpu_last: HashMap<u32, u64>,
    /// When each task was last named by an event, and the time of the event at hand.
    pub(super) last_seen: Vec<u64>,
    pub(super) now: u64,
    /// `sched_waking`s of a task on a CPU, by wakee: the waking's time stamp, and whether the
    /// task has since switched out to sleep (see `Trace::wakings_of_blocking`).
    pub(super) waking_on_cpu: HashMap<TaskIdx, (u64, bool)>,
    /// `sched_setscheduler()` calls entered and not yet returned, by caller: the task named
    /// and the policy asked for.
    pub(super) setscheduler: HashMap<TaskIdx, (Option<TaskIdx>, u32)>,
}

impl Resolver {
    pub(super) fn new(stats: ImportStats, header_cpus: Option<u32>) -> Resolver {
        Resolver {
            trace: Trace {
                ncpus: header_cpus.unwrap_or(0),
                stats,
                ..Default::default()
            },
            live: HashMap::new(),
            dead: Vec::new(),
            on_cpu: HashMap::new(),
            cpu_curr: HashMap::new(),
            cpu_last: HashMap::new(),
            last_seen: Vec::new(),
            now: 0,
            waking_on_cpu: HashMap::new(),
            setscheduler: HashMap::new(),
        }
    }

    pub(super) fn new_task(&mut self, r: &Ref) -> TaskIdx {
        let i = self.trace.tasks.len();
        self.trace.tasks.push(TraceTask {
            pid: r.pid,
            tgid: None,
            comm: String::new(),
            prio: 120,
        });
        self.dead.push(false);
        self.last_seen.push(self.now);
        self.live.insert(r.pid, i);
        i
    }

    /// The task a reference names (None: the idle task), creating or renewing it.
    pub(super) fn task(&mut self, r: &Ref) -> Option<TaskIdx> {
        if r.pid == 0 {
            return None;
        }
        let i = match self.live.get(&r.pid) {
            Some(&i) if !self.dead[i] => i,
            Some(_) => {
                self.trace.stats.pid_reuse += 1;
                self.new_task(r)
            }
            None => self.new_task(r),
        };
        let t = &mut self.trace.tasks[i];
        match r.comm.as_deref() {
            Some("<...>") => self.trace.stats.unknown_comms += 1,
            Some(c) if !c.is_empty() => t.comm = truncate_comm(c),
            _ => {}
        }
        if let Some(p) = r.prio {
            t.prio = p;
        }
        self.last_seen[i] = self.now;
        Some(i)
    }

    /// An event's line names the task running on its CPU. If the CPU was last seen running
    /// another task (or idle) with no `sched_switch` between, the switch was not recorded
    /// (some kernels drop the switch out of idle: on the project VM, every one on CPU 1; a
    /// buffer may also lose events). The switch is put back, at the CPU's previous event or
    /// the task's own (its wakeup, its fork), whichever is later: the earliest it can have
    /// happened. It is counted.
    pub(super) fn infer_switch(
        &mut self,
        cpu: u32,
        ts: u64,
        current: Option<TaskIdx>,
        seen_before: Option<u64>,
    ) {
        let Some(&known) = self.cpu_curr.get(&cpu) else {
            self.cpu_curr.insert(cpu, current);
            if let Some(c) = current {
                self.on_cpu.insert(c, cpu);
                self.trace.running_at_start.insert(cpu, c);
            }
            return;
        };
        if known == current {
            return;
        }
        let at = self
            .cpu_last
            .get(&cpu)
            .copied()
            .unwrap_or(ts)
            .max(seen_before.unwrap_or(0))
            .min(ts);
        self.trace.stats.inferred_switches += 1;
        if let Some(k) = known {
            self.on_cpu.remove(&k);
        }
        if let Some(c) = current {
            if let Some(other) = self.on_cpu.insert(c, cpu) {
                if other != cpu {
                    self.trace.stats.overlapping_runs += 1;
                    self.cpu_curr.insert(other, None);
                }
            }
        }
        self.cpu_curr.insert(cpu, current);
        self.trace.events.push(Event {
            ts: at,
            cpu,
            kind: EventKind::Switch {
                prev: known,
                prev_state: PrevState::Runnable,
                next: current,
            },
        });
    }

    pub(super) fn run(mut self, raws: Vec<Raw>, has_waking: bool) -> Trace {
        let mut max_cpu = 0;
        for r in raws {
            max_cpu = max_cpu.max(r.cpu);
            self.now = r.ts;
            // The task running on the CPU: a switch's own prev, else the line's task. (A switch
            // whose prev is not its line's task contradicts itself; its prev is trusted.)
            let running = match &r.kind {
                RawKind::Switch { prev, .. } => {
                    if prev.pid != r.current.pid {
                        self.trace.stats.inconsistent_switches += 1;
                    }
                    prev.clone()
                }
                _ => r.current.clone(),
            };
            // When that task was named before (its switch-in cannot precede that).
            let seen_before = self
                .live
                .get(&running.pid)
                .filter(|&&i| !self.dead[i])
                .map(|&i| self.last_seen[i]);
            let current = self.task(&r.current);
            if let (Some(c), Some(g)) = (current, r.tgid) {
                self.trace.tasks[c].tgid = Some(g);
            }
            let running = if running.pid == r.current.pid {
                current
            } else {
                self.task(&running)
            };
            self.infer_switch(r.cpu, r.ts, running, seen_before);
            self.cpu_last.insert(r.cpu, r.ts);
            let kind = match r.kind {
                RawKind::Switch { prev, state, next } => {
                    let p = self.task(&prev);
                    let n = self.task(&next);
                    if let Some(p) = p {
                        self.on_cpu.remove(&p);
                        if state == PrevState::Dead {
                            self.dead[p] = true;
                        }
                        // A waking while it ran: its sleep now makes it the waking of a task
                        // on its way to sleep, if its sched_wakeup comes next; any other
                        // switch-out means the task went on runnable (it absorbed it).
                        if let Some(w) = self.waking_on_cpu.get_mut(&p) {
                            if state.is_sleep() {
                                w.1 = true;
                            } else {
                                self.waking_on_cpu.remove(&p);
                            }
                        }
                    }
                    if let Some(n) = n {
                        if let Some(other) = self.on_cpu.insert(n, r.cpu) {
                            if other != r.cpu {
                                self.trace.stats.overlapping_runs += 1;
                                self.cpu_curr.insert(other, None);
                            }
                        }
                    }
                    self.cpu_curr.insert(r.cpu, n);
                    EventKind::Switch {
                        prev: p,
                        prev_state: state,
                        next: n,
                    }
                }
                RawKind::Wake { task, cpu, waking } => {
                    if has_waking && !waking {
                        // sched_waking is the one that runs in the waker's context.
                        *self
                            .trace
                            .stats
                            .other_events
                            .entry("sched_wakeup (sched_waking used)".into())
                            .or_default() += 1;
                        if let Some(t) = self.task(&task) {
                            if let Some((ts, true)) = self.waking_on_cpu.remove(&t) {
                                self.trace.wakings_of_blocking.insert((ts, t));
                            }
                        }
                        continue;
                    }
                    let Some(t) = self.task(&task) else {
                        continue;
                    };
                    if waking && self.on_cpu.contains_key(&t) {
                        self.waking_on_cpu.insert(t, (r.ts, false));
                    }
                    max_cpu = max_cpu.max(cpu);
                    EventKind::Waking {
                        waker: current,
                        task: t,
                        target_cpu: cpu,
                        irq: r.irq,
                        // A `sched_wakeup` standing in for a missing `sched_waking` fires with
                        // the runqueue's lock held too: its depth is not the waker's path's.
                        depth: if waking { r.depth } else { None },
                    }
                }
                RawKind::WakeupNew { task, cpu } => {
                    let Some(t) = self.task(&task) else { continue };
                    max_cpu = max_cpu.max(cpu);
                    EventKind::WakeupNew {
                        task: t,
                        target_cpu: cpu,
                    }
                }
                RawKind::Fork { parent, child } => {
                    let p = self.task(&parent);
                    if child.pid != 0 {
                        if let Some(&old) = self.live.get(&child.pid) {
                            // The child's PID names a task still alive here: its exit was not
                            // recorded. The PID is reused all the same.
                            self.dead[old] = true;
                        }
                    }
                    let c = self.task(&child);
                    match (p, c) {
                        (Some(parent), Some(child)) => EventKind::Fork { parent, child },
                        _ => continue,
                    }
                }
                RawKind::Exit { task } => match self.task(&task) {
                    Some(t) => EventKind::Exit { task: t },
                    None => continue,
                },
                RawKind::Migrate { task, orig, dest } => match self.task(&task) {
                    Some(t) => {
                        max_cpu = max_cpu.max(orig).max(dest);
                        EventKind::Migrate {
                            task: t,
                            orig_cpu: orig,
                            dest_cpu: dest,
                        }
                    }
                    None => continue,
                },
                RawKind::Freq { cpu, khz } => {
                    self.trace.stats.events += 1;
                    self.trace.events.push(Event {
                        ts: r.ts,
                        cpu,
                        kind: EventKind::CpuFrequency { khz },
                    });
                    continue;
                }
                RawKind::Idle { cpu, state } => {
                    self.trace.stats.events += 1;
                    self.trace.events.push(Event {
                        ts: r.ts,
                        cpu,
                        kind: EventKind::CpuIdle { state },
                    });
                    continue;
                }
                RawKind::SetSchedulerEnter { pid, policy } => {
                    let Some(caller) = current else { continue };
                    // Another task's PID names a task only if the trace has seen it (no task
                    // is made for a PID no other event names).
                    let target = match pid {
                        0 => Some(caller),
                        p => self.live.get(&p).copied().filter(|&t| !self.dead[t]),
                    };
                    self.setscheduler.insert(caller, (target, policy));
                    continue;
                }
                RawKind::SetSchedulerExit { ret } => {
                    // Only a call that returned 0 changed the policy; an exit whose entry
                    // the trace lacks says nothing.
                    let call = current.and_then(|c| self.setscheduler.remove(&c).map(|x| (c, x)));
                    match call {
                        Some((by, (Some(task), policy))) if ret == 0 => {
                            EventKind::SetPolicy { task, policy, by }
                        }
                        _ => {
                            *self
                                .trace
                                .stats
                                .other_events
                                .entry(
                                    "sched_setscheduler (failed, of a task no other event names, or its entry not recorded)".into(),
                                )
                                .or_default() += 1;
                            continue;
                        }
                    }
                }
                RawKind::Mark { begin, pid, name } => {
                    let t = match pid {
                        0 => current,
                        p => self.task(&Ref {
                            pid: p,
                            comm: None,
                            prio: None,
                        }),
                    };
                    match t {
                        Some(task) => EventKind::LockWait {
                            task,
                            lock: name,
                            begin,
                        },
                        None => continue,
                    }
                }
            };
            self.trace.stats.events += 1;
            self.trace.events.push(Event {
                ts: r.ts,
                cpu: r.cpu,
                kind,
            });
        }
        for t in &mut self.trace.tasks {
            if t.comm.is_empty() {
                t.comm = "<...>".into();
            }
        }
        // Put-back switches sit at their CPU's previous event, which may precede events of
        // other CPUs already pushed.
        self.trace.events.sort_by_key(|e| e.ts);
        self.trace.stats.header_cpus = (self.trace.ncpus > 0).then_some(self.trace.ncpus);
        self.trace.stats.event_cpus = if self.trace.events.is_empty() {
            0
        } else {
            max_cpu + 1
        };
        self.trace.ncpus = self.trace.ncpus.max(max_cpu + 1);
        self.trace.start_ns = self.trace.events.first().map_or(0, |e| e.ts);
        self.trace.end_ns = self.trace.events.last().map_or(0, |e| e.ts);
        self.trace
    }
}
