//! The event sequences proptest generates for the conformance suite: a machine ([`Shape`]: 1
//! to 4 CPUs, flat, SMT or split between two caches), the tasks started first, then events
//! ([`Event`]); and `run_case`, which plays one through a scripted host, logging every
//! decision and auditing the invariants after every event. A [`Sequence`] displays as the
//! steps it takes, in words.
//!
//! Must never reach into a host's internals: the hosts are driven through the core and the
//! `Scripted` face only.

use super::audit::{audit, curr_of, schedule_on, settle, sleep, spec};
use super::script::expect_woken;
use crate::machine::TopologySpec;
use crate::sched_core::scripted::{Scripted, TaskSpecT};
use crate::sched_core::{attr, tick, with_rq, CoreError, Host, Leave, Wakee};
use crate::task::{CpuId, CpuMask, SchedPolicy, TaskId};
use proptest::prelude::*;
use std::fmt;

/// The CPUs of a generated machine.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// `n` CPUs, each its own core with its own cache.
    Flat(usize),
    /// `cores` cores of two SMT threads each, all sharing one cache.
    Smt(usize),
    /// Four CPUs, two to a cache.
    TwoCaches,
}

impl Shape {
    pub fn topology(self) -> TopologySpec {
        let (cpus, threads_per_core, cpus_per_cache) = match self {
            Shape::Flat(n) => (n, 1, 1),
            Shape::Smt(cores) => (2 * cores, 2, 2 * cores),
            Shape::TwoCaches => (4, 1, 2),
        };
        TopologySpec {
            cpus,
            threads_per_core,
            cpus_per_cache,
            cpus_per_node: None,
            cpus_per_l2: None,
            cpus_per_package: None,
        }
    }
}

/// A task a sequence creates. `allowed`: a mask of CPUs 0..4, of which those the machine has
/// count (none of them: every CPU).
#[derive(Clone, Copy, Debug)]
pub struct NewTask {
    pub policy: SchedPolicy,
    pub nice: i32,
    pub rt_priority: u8,
    pub allowed: u8,
}

/// An attribute change made from outside the task (`renice`, `chrt -p`).
#[derive(Clone, Copy, Debug)]
pub enum AttrTo {
    Nice(i32),
    Policy(SchedPolicy, u8, i32),
}

/// One event of a sequence. CPU numbers are taken modulo the machine's CPUs; an event whose
/// CPU is idle, or that finds nobody asleep, does nothing (and says so in the log).
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A jiffy passes, and the CPUs of the mask take their tick (others catch up later, as the
    /// runtime's workers do, with the ticks they missed).
    Tick {
        cpus: u8,
    },
    Yield {
        cpu: usize,
    },
    /// The task current on `cpu` blocks.
    Sleep {
        cpu: usize,
    },
    /// The task current on `cpu` asks to block and is woken from `waker` before it switches
    /// out (the "still current" wakeup, `ttwu_runnable`).
    SleepWokenFirst {
        cpu: usize,
        waker: usize,
    },
    /// The `nth` task of those asleep (modulo how many) is woken from `waker`.
    Wake {
        nth: usize,
        waker: usize,
    },
    /// The task current on `cpu` changes its own nice level.
    Nice {
        cpu: usize,
        nice: i32,
    },
    /// Task number `task` (modulo how many there are) is changed from outside.
    SetAttr {
        task: usize,
        to: AttrTo,
    },
    /// The task current on `cpu` binds itself to `allowed` (which may exclude `cpu`).
    Bind {
        cpu: usize,
        allowed: u8,
    },
    /// The task current on `cpu` forks a child (which inherits its attributes).
    Fork {
        cpu: usize,
    },
    /// A task is started from outside.
    Spawn(NewTask),
    /// The task current on `cpu` exits.
    Exit {
        cpu: usize,
    },
}

/// A generated sequence: a machine, the tasks started first, then the events. Its `Display`
/// is the steps in words, its `Debug` the value to paste into a test
/// ([`check_sequence`](super::check_sequence)).
#[derive(Clone, Debug)]
pub struct Sequence {
    pub shape: Shape,
    pub tasks: Vec<NewTask>,
    pub events: Vec<Event>,
}

/// At most this many tasks in a sequence (forks and spawns beyond it do nothing).
const MAX_TASKS: usize = 40;

fn mask_of(bits: u8, ncpus: usize) -> CpuMask {
    let mut m = CpuMask::empty();
    for c in (0..ncpus).filter(|c| bits & (1 << c) != 0) {
        m.set(c);
    }
    if m.is_empty() {
        CpuMask::first_n(ncpus)
    } else {
        m
    }
}

/// `policy` if the class stack has it, else `SCHED_NORMAL`.
fn supported<H: Host>(h: &H, policy: SchedPolicy) -> SchedPolicy {
    if h.sched().check_policy(policy).is_ok() {
        policy
    } else {
        SchedPolicy::Normal
    }
}

impl NewTask {
    fn spec<H: Host>(&self, h: &H) -> TaskSpecT {
        let policy = supported(h, self.policy);
        let prio = if policy.is_rt() { self.rt_priority } else { 0 };
        spec(policy, self.nice, prio, mask_of(self.allowed, h.ncpus()))
    }
}

fn policy() -> impl Strategy<Value = SchedPolicy> {
    prop_oneof![
        4 => Just(SchedPolicy::Normal),
        1 => Just(SchedPolicy::Batch),
        1 => Just(SchedPolicy::Idle),
        1 => Just(SchedPolicy::Iso),
        2 => Just(SchedPolicy::Fifo),
        2 => Just(SchedPolicy::Rr),
    ]
}

/// A mask of CPUs 0..4, every CPU (0) half the time.
fn cpus_mask() -> impl Strategy<Value = u8> {
    prop_oneof![Just(0u8), 1u8..16]
}

fn new_task() -> impl Strategy<Value = NewTask> {
    (policy(), -20i32..=19, 1u8..=99, cpus_mask()).prop_map(
        |(policy, nice, rt_priority, allowed)| NewTask {
            policy,
            nice,
            rt_priority,
            allowed,
        },
    )
}

fn event() -> impl Strategy<Value = Event> {
    let cpu = || 0usize..4;
    let attr = prop_oneof![
        (-20i32..=19).prop_map(AttrTo::Nice),
        (policy(), 1u8..=99, -20i32..=19).prop_map(|(p, prio, nice)| AttrTo::Policy(p, prio, nice)),
    ];
    prop_oneof![
        8 => prop_oneof![Just(0b1111u8), 0u8..16].prop_map(|cpus| Event::Tick { cpus }),
        2 => cpu().prop_map(|cpu| Event::Yield { cpu }),
        3 => cpu().prop_map(|cpu| Event::Sleep { cpu }),
        2 => (cpu(), cpu()).prop_map(|(cpu, waker)| Event::SleepWokenFirst { cpu, waker }),
        4 => (0usize..8, cpu()).prop_map(|(nth, waker)| Event::Wake { nth, waker }),
        1 => (cpu(), -20i32..=19).prop_map(|(cpu, nice)| Event::Nice { cpu, nice }),
        1 => (0usize..MAX_TASKS, attr).prop_map(|(task, to)| Event::SetAttr { task, to }),
        1 => (cpu(), cpus_mask()).prop_map(|(cpu, allowed)| Event::Bind { cpu, allowed }),
        1 => cpu().prop_map(|cpu| Event::Fork { cpu }),
        1 => new_task().prop_map(Event::Spawn),
        1 => cpu().prop_map(|cpu| Event::Exit { cpu }),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        3 => (1usize..=4).prop_map(Shape::Flat),
        2 => (1usize..=2).prop_map(Shape::Smt),
        1 => Just(Shape::TwoCaches),
    ]
}

pub(super) fn sequence(shapes: &[Shape]) -> impl Strategy<Value = Sequence> {
    let shape = if shapes.is_empty() {
        shape().boxed()
    } else {
        proptest::sample::select(shapes.to_vec()).boxed()
    };
    (
        shape,
        proptest::collection::vec(new_task(), 1..8),
        proptest::collection::vec(event(), 1..120),
    )
        .prop_map(|(shape, tasks, events)| Sequence {
            shape,
            tasks,
            events,
        })
}

/// What a sequence run keeps between events.
struct Driver {
    log: Vec<String>,
    /// Tasks put to sleep, in order, not yet woken.
    sleepers: Vec<TaskId>,
    jiffies: u64,
    /// The jiffy of each CPU's last tick.
    last_tick: Vec<u64>,
    tick_ns: u64,
}

/// Runs a generated sequence; returns the log of every decision, checking the invariants
/// after every event.
pub(crate) fn run_case<H: Scripted>(h: &mut H, case: &Sequence) -> Result<Vec<String>, CoreError> {
    let n = h.ncpus();
    let mut d = Driver {
        log: Vec::new(),
        sleepers: Vec::new(),
        jiffies: 5,
        last_tick: vec![5; n],
        tick_ns: 1_000_000_000 / h.hz() as u64,
    };
    h.at(d.jiffies * d.tick_ns);
    for (i, nt) in case.tasks.iter().enumerate() {
        let sp = nt.spec(h);
        let t = h.add_task(&sp, None);
        let cpu = sp.allowed.iter(n).nth(i % sp.allowed.count()).unwrap_or(0);
        attr::fork(h, cpu, None, t, None)
            .map_err(|e| CoreError::new(format!("starting {t} from cpu{cpu}: {}", e.what())))?;
        d.log
            .push(format!("new {t} ({:?}) on cpu{}", sp.policy, h.task_cpu(t)));
    }
    settle(h, &mut d.log)?;
    audit(h).map_err(|e| CoreError::new(format!("once the tasks are created: {}", e.what())))?;
    for (i, ev) in case.events.iter().enumerate() {
        apply(h, &mut d, i, ev)
            .and_then(|()| settle(h, &mut d.log))
            .and_then(|()| audit(h))
            .map_err(|e| CoreError::new(format!("at event {i}, {ev:?}: {}", e.what())))?;
        let running: Vec<_> = (0..n).map(|c| curr_of(h, c)).collect();
        d.log.push(format!("{i}: running {running:?}"));
    }
    Ok(d.log)
}

/// Event `i` of a sequence, logged.
fn apply<H: Scripted>(h: &mut H, d: &mut Driver, i: usize, ev: &Event) -> Result<(), CoreError> {
    let n = h.ncpus();
    let idle = |c: CpuId| format!("cpu{c} is idle");
    let line = match *ev {
        Event::Tick { cpus } => {
            d.jiffies += 1;
            h.at(d.jiffies * d.tick_ns);
            let ticked: Vec<CpuId> = (0..n).filter(|c| cpus & (1 << c) != 0).collect();
            for &cpu in &ticked {
                let missed = (d.jiffies - d.last_tick[cpu]) as u32;
                d.last_tick[cpu] = d.jiffies;
                let curr = curr_of(h, cpu);
                tick::scheduler_tick(h, cpu, curr, curr.is_none(), missed, d.jiffies)?;
            }
            format!("jiffy {}: cpus {ticked:?} take their ticks", d.jiffies)
        }
        Event::Yield { cpu } => {
            let c = cpu % n;
            match curr_of(h, c) {
                Some(t) => {
                    let sw = schedule_on(h, c, Some(t), Leave::Yield)?;
                    format!("{t} yields on cpu{c} -> {:?}", sw.next)
                }
                None => idle(c),
            }
        }
        Event::Sleep { cpu } => {
            let c = cpu % n;
            match curr_of(h, c) {
                Some(t) => {
                    let sw = sleep(h, c, t)?;
                    d.sleepers.push(t);
                    format!("{t} sleeps on cpu{c} -> {:?}", sw.next)
                }
                None => idle(c),
            }
        }
        Event::SleepWokenFirst { cpu, waker } => {
            let (c, w) = (cpu % n, waker % n);
            match curr_of(h, c) {
                Some(t) => {
                    let _ = h.begin_sleep(t);
                    expect_woken(h.wake(t, w)?, Wakee::StillCurrent, t)?;
                    let leave = h.sleep_leave(t);
                    let sw = schedule_on(h, c, Some(t), leave)?;
                    format!(
                        "{t} asks to sleep on cpu{c}, is woken from cpu{w} while current -> {:?}",
                        sw.next
                    )
                }
                None => idle(c),
            }
        }
        Event::Wake { nth, waker } => {
            if d.sleepers.is_empty() {
                "nobody is asleep".to_string()
            } else {
                let t = d.sleepers.remove(nth % d.sleepers.len());
                let w = waker % n;
                expect_woken(h.wake(t, w)?, Wakee::Asleep, t)?;
                format!(
                    "{t} woken from cpu{w}, {:?} on cpu{}",
                    h.task_state(t),
                    h.task_cpu(t)
                )
            }
        }
        Event::Nice { cpu, nice } => {
            let c = cpu % n;
            match curr_of(h, c) {
                Some(t) => {
                    attr::change_attr(h, c, t, |p| p.nice = nice)?;
                    format!("{t} on cpu{c} sets its nice to {nice}")
                }
                None => idle(c),
            }
        }
        Event::SetAttr { task, to } => {
            let t = TaskId((task % h.ntasks()) as u32);
            let was = h.task_state(t);
            let (to, done) = match to {
                AttrTo::Nice(nice) => (to, attr::set_task_attr(h, t, true, |p| p.nice = nice)?),
                AttrTo::Policy(policy, prio, nice) => {
                    let policy = supported(h, policy);
                    let prio = if policy.is_rt() { prio } else { 0 };
                    let done = attr::set_task_attr(h, t, false, |p| {
                        p.policy = policy;
                        p.rt_priority = prio;
                        p.nice = nice;
                    })?;
                    (AttrTo::Policy(policy, prio, nice), done)
                }
            };
            format!("{t} ({was:?}) set to {to:?} from outside: changed {done}")
        }
        Event::Bind { cpu, allowed } => {
            let c = cpu % n;
            match curr_of(h, c) {
                Some(t) => {
                    let m = mask_of(allowed, n);
                    attr::change_attr(h, c, t, |p| p.cpus_allowed = m)?;
                    let evicted = if m.contains(c) { "" } else { " (evicted)" };
                    format!("{t} on cpu{c} binds itself to {m:?}{evicted}")
                }
                None => idle(c),
            }
        }
        Event::Fork { cpu } => {
            let c = cpu % n;
            match curr_of(h, c) {
                Some(p) if h.ntasks() < MAX_TASKS => {
                    let sp = with_rq(h, c, |_, ctx, _, _| {
                        let q = &ctx.tasks[p];
                        spec(q.policy, q.nice, q.rt_priority, q.cpus_allowed)
                    });
                    let child = h.add_task(&sp, Some(p));
                    attr::fork(h, c, Some(p), child, Some(c))?;
                    format!("{p} forks {child} onto cpu{}", h.task_cpu(child))
                }
                Some(_) => "too many tasks to fork".to_string(),
                None => idle(c),
            }
        }
        Event::Spawn(nt) => {
            if h.ntasks() < MAX_TASKS {
                let sp = nt.spec(h);
                let t = h.add_task(&sp, None);
                let cpu = sp.allowed.iter(n).next().unwrap_or(0);
                attr::fork(h, cpu, None, t, None)?;
                format!("spawned {t} ({:?}) onto cpu{}", sp.policy, h.task_cpu(t))
            } else {
                "too many tasks to spawn".to_string()
            }
        }
        Event::Exit { cpu } => {
            let c = cpu % n;
            match curr_of(h, c) {
                Some(t) => {
                    let sw = schedule_on(h, c, Some(t), Leave::Exit)?;
                    format!("{t} exits on cpu{c} -> {:?}", sw.next)
                }
                None => idle(c),
            }
        }
    };
    d.log.push(format!("{i}: {line}"));
    Ok(())
}

// ----- in words -----

fn policy_words(policy: SchedPolicy, rt_priority: u8, nice: i32) -> String {
    if policy.is_rt() {
        format!("{policy:?} priority {rt_priority}")
    } else {
        format!("{policy:?} nice {nice}")
    }
}

fn mask_words(bits: u8, ncpus: usize) -> String {
    let m = mask_of(bits, ncpus);
    if m.count() == ncpus {
        "any CPU".to_string()
    } else {
        let cpus: Vec<String> = m.iter(ncpus).map(|c| format!("cpu{c}")).collect();
        cpus.join(", ")
    }
}

impl Shape {
    /// The machine in words.
    pub fn describe(self) -> String {
        match self {
            Shape::Flat(n) => format!("{n} CPUs, each its own core and cache"),
            Shape::Smt(c) => format!("{} CPUs: {c} cores of two SMT threads, one cache", 2 * c),
            Shape::TwoCaches => "4 CPUs, two to a cache".to_string(),
        }
    }
}

impl Event {
    /// What the event does on a machine of `ncpus` CPUs, in words (CPU numbers taken modulo
    /// the machine's, as the run takes them).
    pub fn describe(&self, ncpus: usize) -> String {
        let c = |cpu: usize| cpu % ncpus.max(1);
        match *self {
            Event::Tick { cpus } => {
                let ticked: Vec<String> = (0..ncpus)
                    .filter(|x| cpus & (1 << x) != 0)
                    .map(|x| format!("cpu{x}"))
                    .collect();
                if ticked.is_empty() {
                    "a jiffy passes; no CPU takes its tick".to_string()
                } else {
                    format!("a jiffy passes; {} take their ticks", ticked.join(", "))
                }
            }
            Event::Yield { cpu } => format!("the task running on cpu{} yields", c(cpu)),
            Event::Sleep { cpu } => format!("the task running on cpu{} sleeps", c(cpu)),
            Event::SleepWokenFirst { cpu, waker } => format!(
                "the task running on cpu{} asks to sleep and is woken from cpu{} before it \
                 switches out",
                c(cpu),
                c(waker)
            ),
            Event::Wake { nth, waker } => format!(
                "sleeper number {nth} (modulo how many sleep, in the order they slept) is woken \
                 from cpu{}",
                c(waker)
            ),
            Event::Nice { cpu, nice } => {
                format!(
                    "the task running on cpu{} sets its own nice to {nice}",
                    c(cpu)
                )
            }
            Event::SetAttr { task, to } => {
                let to = match to {
                    AttrTo::Nice(n) => format!("nice {n}"),
                    AttrTo::Policy(p, prio, nice) => policy_words(p, prio, nice),
                };
                format!("task number {task} (modulo how many exist) is set to {to} from outside")
            }
            Event::Bind { cpu, allowed } => format!(
                "the task running on cpu{} binds itself to {}",
                c(cpu),
                mask_words(allowed, ncpus)
            ),
            Event::Fork { cpu } => format!("the task running on cpu{} forks a child", c(cpu)),
            Event::Spawn(t) => format!("a task is started from outside: {}", t.describe(ncpus)),
            Event::Exit { cpu } => format!("the task running on cpu{} exits", c(cpu)),
        }
    }
}

impl NewTask {
    /// The task in words (a policy the class stack lacks runs as `Normal`).
    pub fn describe(&self, ncpus: usize) -> String {
        format!(
            "{}, on {}",
            policy_words(self.policy, self.rt_priority, self.nice),
            mask_words(self.allowed, ncpus)
        )
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.shape.topology().cpus;
        writeln!(f, "machine: {}", self.shape.describe())?;
        writeln!(f, "tasks started first:")?;
        for (i, t) in self.tasks.iter().enumerate() {
            writeln!(f, "  task{i}: {}", t.describe(n))?;
        }
        writeln!(f, "then:")?;
        for (i, e) in self.events.iter().enumerate() {
            writeln!(f, "  event {i}: {}", e.describe(n))?;
        }
        Ok(())
    }
}
