//! rt-app JSON workloads (the format of `scheduler-tools/rt-app`, its `workgen` front end,
//! the sched_ext simulator and EAS testing), read into an ordinary schedkit workload.
//!
//! The file is translated into statements of the workload-file language, kept as data
//! (`build.rs`), and the workload is built from them directly; [`to_toml`] writes the same
//! statements as a workload file that [`super::file`] reads back into the same workload.
//! `rt-app` semantics live in this one translation:
//!
//! | rt-app (doc/tutorial.txt)                     | schedkit                                    |
//! |-----------------------------------------------|---------------------------------------------|
//! | task, `instance` (0: created only by `fork`)  | `[[group]]`, `count`                        |
//! | `policy` SCHED_OTHER/BATCH/IDLE/FIFO/RR, `priority` (nice for OTHER, default 0; RT priority, default 10) | `policy`, `nice`, `rt_priority`; per phase: `policy`/`nice` statements |
//! | `policy` SCHED_DEADLINE with `dl-runtime`, `dl-period` (default: the runtime), `dl-deadline` (default: the period), µs, at task level | `policy = "deadline"`, `dl_runtime`, `dl_period`, `dl_deadline` |
//! | `cpus`                                        | `affinity` (per phase: the statement)       |
//! | `delay` (µs)                                  | a first `sleep`                             |
//! | `loop` (task: −1 = forever; phase: default 1) | `loop N|forever` … `end`                    |
//! | `run` (µs of calibrated work)                 | `compute`                                   |
//! | `sleep`                                       | `sleep`                                     |
//! | `timer` {`ref`, `period`, `mode`}            | `timer` on a timer channel: `unique…` refs one per task (`task-timer`), others shared (`timer`); relative mode by default |
//! | `lock` / `unlock` (pthread mutex)             | a `mutex` lock                              |
//! | `wait` {`ref`, `mutex`}, `signal`, `broad`    | `cond-wait`, `cond-signal`, `cond-broadcast` on a `condvar` channel |
//! | `sync` {`ref`, `mutex`}                       | lock, signal, wait, unlock (rt-app's own expansion) |
//! | `yield`                                       | `yield`                                     |
//! | `fork` (task name)                            | `thread` (rt-app forks with pthread_create) |
//!
//! Each pass through a phase's events (or a phase-less task's) counts one activation: the
//! run's throughput is activations per second.
//!
//! Event keys are matched by prefix, as rt-app does (`run0`, `sleep1`), longest name first
//! (`runtime` is not `run`), and run in file order. Keys that appear twice in one object are
//! kept, in order, as `workgen` does by numbering them.
//!
//! Not supported, refused with the key's path: SCHED_DEADLINE set by a phase, `dl-*` keys
//! of a phase or of a task of another policy (6.12's custom slice of SCHED_OTHER), the legacy
//! thread keys `period` and `deadline` (use `dl-period`, `dl-deadline`), `runtime` (wall-clock
//! work), `barrier`, `suspend`/`resume`, `mem`, `iorun`, `util_min`/`util_max`, `taskgroup`,
//! `membind_nodes`, and `pi_enabled: true` (no priority-inheritance mutex in the model).
//! `global` keys about rt-app's own logging and calibration are accepted and have no effect;
//! `global.duration` is accepted but the run lasts `--duration` (a task that loops forever
//! runs until then); `resources` declarations are accepted (rt-app itself creates resources
//! on use).

mod build;

use super::WorkloadError;
use build::{Group, Stmt, Translation};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value that keeps its objects' keys in order, duplicates included.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(i64::try_from(v).map_or(Node::Float(v as f64), Node::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
                Ok(Node::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Node, E> {
                Ok(Node::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Node::Array(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, Node>()? {
                    v.push((k, x));
                }
                Ok(Node::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Node {
    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Int(_) | Node::Float(_) => "a number",
            Node::Str(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }
}

/// A problem at a key path (`tasks.thread0.phases.p1.run`).
struct At(String, String);

type R<T> = Result<T, At>;

fn at(path: &str, problem: impl Into<String>) -> At {
    At(path.to_string(), problem.into())
}

fn object<'a>(n: &'a Node, path: &str) -> R<&'a [(String, Node)]> {
    match n {
        Node::Object(v) => Ok(v),
        o => Err(at(path, format!("expected an object, found {}", o.kind()))),
    }
}

fn string<'a>(n: &'a Node, path: &str) -> R<&'a str> {
    match n {
        Node::Str(s) => Ok(s),
        o => Err(at(path, format!("expected a string, found {}", o.kind()))),
    }
}

fn int(n: &Node, path: &str, lo: i64, hi: i64) -> R<i64> {
    let v = match n {
        Node::Int(v) => *v,
        Node::Float(f) if f.fract() == 0.0 && f.abs() < 9e15 => *f as i64,
        o => {
            return Err(at(
                path,
                format!("expected a whole number, found {}", o.kind()),
            ))
        }
    };
    if !(lo..=hi).contains(&v) {
        return Err(at(path, format!("{v} is outside {lo}..={hi}")));
    }
    Ok(v)
}

/// A duration in µs (rt-app's unit), at most an hour.
fn micros(n: &Node, path: &str) -> R<i64> {
    int(n, path, 0, 3_600_000_000)
}

/// The events rt-app knows, matched by prefix (longest first).
const EVENTS: [&str; 17] = [
    "runtime", "run", "sleep", "timer", "unlock", "lock", "wait", "signal", "broad", "sync",
    "barrier", "suspend", "resume", "mem", "iorun", "yield", "fork",
];

fn event_of(key: &str) -> Option<&'static str> {
    EVENTS
        .iter()
        .filter(|e| key.starts_with(*e))
        .max_by_key(|e| e.len())
        .copied()
}

/// Names of the resources the events use, turned into safe TOML names.
#[derive(Default)]
struct Names {
    /// (rt-app name, kind, schedkit name)
    all: Vec<(String, &'static str, String)>,
    /// Every name the file itself gives (tasks and resources), which a generated name must
    /// not take.
    taken: std::collections::HashSet<String>,
}

impl Names {
    /// The schedkit name of resource `name` of `kind` ("mutex", "condvar", "timer",
    /// "task-timer"), refusing one name used as two kinds.
    fn get(&mut self, name: &str, kind: &'static str, path: &str) -> R<String> {
        if let Some((_, k, s)) = self.all.iter().find(|(n, _, _)| n == name) {
            if *k != kind {
                return Err(at(
                    path,
                    format!("resource '{name}' is used as a {k} elsewhere and as a {kind} here"),
                ));
            }
            return Ok(s.clone());
        }
        let used: std::collections::HashSet<&str> =
            self.all.iter().map(|(_, _, s)| s.as_str()).collect();
        let safe = if plain(name) && !used.contains(name) {
            name.to_string()
        } else {
            fresh("r", |c| used.contains(c) || self.taken.contains(c))
        };
        self.all.push((name.to_string(), kind, safe.clone()));
        Ok(safe)
    }
}

/// A plain identifier, usable as a schedkit name as it is (statements are split at spaces
/// and channel names at dots).
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The first of `prefix`0, `prefix`1, ... that `taken` does not hold.
fn fresh(prefix: &str, taken: impl Fn(&str) -> bool) -> String {
    (0u64..)
        .map(|n| format!("{prefix}{n}"))
        .find(|c| !taken(c))
        .expect("some number is free")
}

/// Scheduling parameters as rt-app gives them at task or phase level.
#[derive(Clone, Default)]
struct Sched {
    policy: Option<String>,
    priority: Option<i64>,
    /// `dl-runtime`, `dl-period`, `dl-deadline`, µs, with the path of the first given.
    dl: [Option<i64>; 3],
    dl_at: Option<String>,
}

/// The SCHED_DEADLINE reservation of a task level, rt-app's defaults filled in (period: the
/// runtime; deadline: the period), checked as `__checkparam_dl` does.
fn dl_of(s: &Sched, path: &str) -> R<crate::task::DlParams> {
    let runtime = s.dl[0].unwrap_or(0);
    let period = s.dl[1].unwrap_or(runtime);
    let deadline = s.dl[2].unwrap_or(period);
    let us = |v: i64| (v.max(0) as u64).saturating_mul(1000);
    crate::task::DlParams {
        runtime_ns: us(runtime),
        deadline_ns: us(deadline),
        period_ns: us(period),
        reclaim: false,
    }
    .check()
    .map_err(|e| at(path, e))
}

/// `(policy, nice, rt_priority)` in schedkit terms, rt-app's defaults filled in.
fn sched_of(s: &Sched, default_policy: &str, path: &str) -> R<(&'static str, i64, i64)> {
    let p = s.policy.as_deref().unwrap_or(default_policy);
    let (name, rt) = match p {
        "SCHED_OTHER" => ("normal", false),
        "SCHED_BATCH" => ("batch", false),
        "SCHED_IDLE" => ("idle", false),
        "SCHED_FIFO" => ("fifo", true),
        "SCHED_RR" => ("rr", true),
        "SCHED_DEADLINE" => {
            if s.priority.is_some_and(|p| p != 0) {
                return Err(at(path, "SCHED_DEADLINE takes no priority (rt-app's default is 0)"));
            }
            return Ok(("deadline", 0, 0));
        }
        o => {
            return Err(at(
                path,
                format!(
                "unknown policy '{o}' (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE)"
            ),
            ))
        }
    };
    if rt {
        let prio = s.priority.unwrap_or(10);
        if !(1..=99).contains(&prio) {
            return Err(at(path, format!("{p} priority {prio} is outside 1..=99")));
        }
        Ok((name, 0, prio))
    } else {
        let nice = s.priority.unwrap_or(0);
        if !(-20..=19).contains(&nice) {
            return Err(at(
                path,
                format!("{p} priority (the nice level) {nice} is outside -20..=19"),
            ));
        }
        Ok((name, nice, 0))
    }
}

fn cpus(n: &Node, path: &str) -> R<Vec<i64>> {
    let Node::Array(v) = n else {
        return Err(at(
            path,
            format!("expected an array of CPU numbers, found {}", n.kind()),
        ));
    };
    if v.is_empty() {
        return Err(at(path, "an empty CPU list"));
    }
    v.iter()
        .enumerate()
        .map(|(i, c)| int(c, &format!("{path}[{i}]"), 0, 1023))
        .collect()
}

/// Reads scheduling keys (`policy`, `priority`, `cpus`, `loop`) of a task or phase; the
/// other keys are returned in order.
struct Level<'a> {
    sched: Sched,
    cpus: Option<Vec<i64>>,
    loops: Option<i64>,
    rest: Vec<(&'a str, &'a Node, String)>,
}

fn level<'a>(entries: &'a [(String, Node)], path: &str) -> R<Level<'a>> {
    let mut l = Level {
        sched: Sched::default(),
        cpus: None,
        loops: None,
        rest: Vec::new(),
    };
    for (k, v) in entries {
        let p = format!("{path}.{k}");
        match k.as_str() {
            "policy" => l.sched.policy = Some(string(v, &p)?.to_string()),
            "priority" => l.sched.priority = Some(int(v, &p, -20, 99)?),
            "cpus" => l.cpus = Some(cpus(v, &p)?),
            "loop" => l.loops = Some(int(v, &p, -1, 1_000_000_000)?),
            "dl-runtime" | "dl-period" | "dl-deadline" => {
                let i = match k.as_str() {
                    "dl-runtime" => 0,
                    "dl-period" => 1,
                    _ => 2,
                };
                l.sched.dl[i] = Some(int(v, &p, 0, 1 << 40)?);
                l.sched.dl_at.get_or_insert(p);
            }
            "period" | "deadline" => {
                return Err(at(
                    &p,
                    format!("the legacy thread key '{k}' is not supported: use 'dl-{k}'"),
                ))
            }
            "util_min" | "util_max" | "taskgroup" | "membind_nodes" => {
                return Err(at(
                    &p,
                    format!("'{k}' is not supported (no utilization clamping, task groups or NUMA in the model)"),
                ))
            }
            _ => l.rest.push((k.as_str(), v, p)),
        }
    }
    Ok(l)
}

struct Ctx<'a> {
    names: Names,
    task_names: &'a [(String, String)],
    default_policy: String,
}

/// Program statements of one sequence of events.
fn events(cx: &mut Ctx, evs: &[(&str, &Node, String)], prog: &mut Vec<Stmt>) -> R<()> {
    for (k, v, p) in evs {
        let Some(e) = event_of(k) else {
            return Err(at(
                p,
                format!("unknown key '{k}' (not an rt-app event or property)"),
            ));
        };
        match e {
            "run" => prog.push(Stmt::Compute(micros(v, p)?)),
            "sleep" => prog.push(Stmt::Sleep(micros(v, p)?)),
            "yield" => prog.push(Stmt::Yield),
            "lock" | "unlock" => {
                let m = cx.names.get(string(v, p)?, "mutex", p)?;
                prog.push(if e == "lock" {
                    Stmt::Lock(m)
                } else {
                    Stmt::Unlock(m)
                });
            }
            "signal" | "broad" => {
                let c = cx.names.get(string(v, p)?, "condvar", p)?;
                prog.push(if e == "signal" {
                    Stmt::CondSignal(c)
                } else {
                    Stmt::CondBroadcast(c)
                });
            }
            "wait" | "sync" => {
                let o = object(v, p)?;
                let (mut cond, mut mutex) = (None, None);
                for (kk, vv) in o {
                    let pp = format!("{p}.{kk}");
                    match kk.as_str() {
                        "ref" => cond = Some(cx.names.get(string(vv, &pp)?, "condvar", &pp)?),
                        "mutex" => mutex = Some(cx.names.get(string(vv, &pp)?, "mutex", &pp)?),
                        _ => return Err(at(&pp, format!("unknown key '{kk}' (ref, mutex)"))),
                    }
                }
                let cond = cond.ok_or_else(|| at(p, "needs \"ref\": the condition"))?;
                let mutex = mutex.ok_or_else(|| at(p, "needs \"mutex\""))?;
                if e == "sync" {
                    // rt-app's expansion of sync (doc/tutorial.txt).
                    prog.push(Stmt::Lock(mutex.clone()));
                    prog.push(Stmt::CondSignal(cond.clone()));
                    prog.push(Stmt::CondWait(cond, mutex.clone()));
                    prog.push(Stmt::Unlock(mutex));
                } else {
                    prog.push(Stmt::CondWait(cond, mutex));
                }
            }
            "timer" => {
                let o = object(v, p)?;
                let (mut name, mut period, mut absolute) = (None, None, false);
                for (kk, vv) in o {
                    let pp = format!("{p}.{kk}");
                    match kk.as_str() {
                        "ref" => name = Some(string(vv, &pp)?.to_string()),
                        "period" => period = Some(int(vv, &pp, 1, 3_600_000_000)?),
                        "mode" => {
                            absolute = match string(vv, &pp)? {
                                "relative" => false,
                                "absolute" => true,
                                m => {
                                    return Err(at(
                                        &pp,
                                        format!("timer mode '{m}' (relative or absolute)"),
                                    ))
                                }
                            }
                        }
                        _ => {
                            return Err(at(&pp, format!("unknown key '{kk}' (ref, period, mode)")))
                        }
                    }
                }
                let name = name.ok_or_else(|| at(p, "needs \"ref\": the timer's name"))?;
                let period = period.ok_or_else(|| at(p, "needs \"period\" (µs)"))?;
                // rt-app: a ref starting with "unique" is one timer per thread.
                let kind = if name.starts_with("unique") {
                    "task-timer"
                } else {
                    "timer"
                };
                let timer = cx.names.get(&name, kind, p)?;
                prog.push(Stmt::Timer {
                    timer,
                    period_us: period,
                    absolute,
                });
            }
            "fork" => {
                let name = string(v, p)?;
                let Some(g) = cx.task_names.iter().position(|(n, _)| n == name) else {
                    return Err(at(p, format!("forks '{name}', which is not a task of the file")));
                };
                prog.push(Stmt::Thread(g));
            }
            "runtime" => {
                return Err(at(
                    p,
                    "'runtime' (work for a wall-clock time whatever the CPU gets) is not supported; use 'run'",
                ))
            }
            "barrier" | "suspend" | "resume" | "mem" | "iorun" => {
                return Err(at(p, format!("the '{e}' event is not supported")))
            }
            _ => unreachable!("every event is handled"),
        }
    }
    Ok(())
}

/// Statements that set a phase's scheduling parameters (only those it gives).
fn phase_sched(cx: &Ctx, l: &Level, current: &Sched, path: &str, prog: &mut Vec<Stmt>) -> R<Sched> {
    let mut s = current.clone();
    if let Some(p) = &l.sched.dl_at {
        return Err(at(
            p,
            "a phase cannot set SCHED_DEADLINE parameters (give them, with the policy, at the task's level)",
        ));
    }
    if l.sched.policy.is_some() {
        s.policy = l.sched.policy.clone();
        // A new policy starts from its default priority unless the phase gives one.
        s.priority = l.sched.priority;
    } else if l.sched.priority.is_some() {
        s.priority = l.sched.priority;
    }
    if l.sched.policy.is_some() || l.sched.priority.is_some() {
        let (pol, nice, rt) = sched_of(&s, &cx.default_policy, path)?;
        if pol == "deadline" {
            return Err(at(
                path,
                "a phase cannot switch to SCHED_DEADLINE (it needs admission control): make it the task's policy",
            ));
        }
        prog.push(Stmt::Policy(pol, rt));
        if rt == 0 {
            prog.push(Stmt::Nice(nice));
        }
    }
    if let Some(c) = &l.cpus {
        prog.push(Stmt::Affinity(c.clone()));
    }
    Ok(s)
}

fn translate(root: &Node, name: &str) -> R<Translation> {
    let top = object(root, "(top level)")?;
    let mut tasks = None;
    let mut default_policy = "SCHED_OTHER".to_string();
    for (k, v) in top {
        match k.as_str() {
            "tasks" => tasks = Some(object(v, "tasks")?),
            "resources" => {
                object(v, "resources")?;
            }
            "global" => {
                for (gk, gv) in object(v, "global")? {
                    let p = format!("global.{gk}");
                    match gk.as_str() {
                        "default_policy" => default_policy = string(gv, &p)?.to_string(),
                        "pi_enabled" => {
                            if *gv == Node::Bool(true) {
                                return Err(at(
                                    &p,
                                    "priority-inheritance mutexes are not modelled",
                                ));
                            }
                        }
                        "duration" | "calibration" | "lock_pages" | "logdir" | "log_basename"
                        | "log_size" | "ftrace" | "gnuplot" | "io_device" | "mem_buffer_size"
                        | "cumulative_slack" => {}
                        _ => return Err(at(&p, format!("unknown global key '{gk}'"))),
                    }
                }
            }
            _ => {
                return Err(at(
                    k,
                    format!("unknown top-level key '{k}' (global, resources, tasks)"),
                ))
            }
        }
    }
    let tasks = tasks.ok_or_else(|| at("(top level)", "no \"tasks\" object"))?;
    if tasks.is_empty() {
        return Err(at("tasks", "no tasks"));
    }
    // Group names, unique and safe: a task's own name where it is a plain identifier, else a
    // generated one that no task of the file is called.
    let mut task_names: Vec<(String, String)> = Vec::new();
    let own: std::collections::HashSet<String> = tasks.iter().map(|(n, _)| n.clone()).collect();
    for (n, _) in tasks.iter() {
        if task_names.iter().any(|(m, _)| m == n) {
            return Err(at(
                &format!("tasks.{n}"),
                format!("task '{n}' is defined twice"),
            ));
        }
        let g = if plain(n) {
            n.clone()
        } else {
            fresh("t", |c| {
                own.contains(c) || task_names.iter().any(|(_, h)| h == c)
            })
        };
        task_names.push((n.clone(), g));
    }
    let mut cx = Ctx {
        names: Names {
            all: Vec::new(),
            taken: own.clone(),
        },
        task_names: &task_names,
        default_policy,
    };
    let mut groups = Vec::with_capacity(tasks.len());
    for ((tname, t), (_, gname)) in tasks.iter().zip(task_names.iter()) {
        let tp = format!("tasks.{tname}");
        let l = level(object(t, &tp)?, &tp)?;
        let mut instance = 1;
        let mut delay = None;
        let mut phases = None;
        let mut direct = Vec::new();
        for (k, v, p) in &l.rest {
            match *k {
                "instance" => instance = int(v, p, 0, 100_000)?,
                "delay" => delay = Some(micros(v, p)?),
                "phases" => phases = Some((object(v, p)?, p.clone())),
                _ => direct.push((*k, *v, p.clone())),
            }
        }
        if phases.is_some() && !direct.is_empty() {
            return Err(at(
                &direct[0].2,
                "a task with \"phases\" lists its events inside them",
            ));
        }
        let (pol, nice, rt) = sched_of(&l.sched, &cx.default_policy, &tp)?;
        let dl = if pol == "deadline" {
            Some(dl_of(&l.sched, &tp)?)
        } else if let Some(p) = &l.sched.dl_at {
            return Err(at(
                p,
                "dl-* parameters (a deadline reservation) need \"policy\": \"SCHED_DEADLINE\" (6.12's custom slice of SCHED_OTHER is not supported)",
            ));
        } else {
            None
        };
        let mut prog: Vec<Stmt> = Vec::new();
        if let Some(d) = delay {
            prog.push(Stmt::Sleep(d));
        }
        // The task's loop (rt-app default: forever) around its phases.
        let loops = l.loops.unwrap_or(-1);
        if loops == 0 {
            return Err(at(&format!("{tp}.loop"), "a loop of 0 runs nothing"));
        }
        prog.push(Stmt::Loop((loops > 0).then_some(loops)));
        match phases {
            None => {
                events(&mut cx, &direct, &mut prog)?;
                prog.push(Stmt::Count);
            }
            Some((ph, pp)) => {
                if ph.is_empty() {
                    return Err(at(&pp, "no phases"));
                }
                let mut current = l.sched.clone();
                for (pn, pv) in ph {
                    let path = format!("{pp}.{pn}");
                    let pl = level(object(pv, &path)?, &path)?;
                    current = phase_sched(&cx, &pl, &current, &path, &mut prog)?;
                    let n = pl.loops.unwrap_or(1);
                    if n < 1 {
                        return Err(at(&format!("{path}.loop"), "a phase runs at least once"));
                    }
                    if pl.rest.is_empty() {
                        return Err(at(&path, "a phase without events"));
                    }
                    prog.push(Stmt::Loop(Some(n)));
                    events(&mut cx, &pl.rest, &mut prog)?;
                    prog.push(Stmt::Count);
                    prog.push(Stmt::End);
                }
            }
        }
        prog.push(Stmt::End);
        groups.push(Group {
            task: tname.clone(),
            name: gname.clone(),
            instance,
            policy: pol,
            nice,
            rt_priority: rt,
            dl,
            cpus: l.cpus.clone(),
            prog,
        });
    }
    Ok(Translation {
        name: name.to_string(),
        resources: cx.names.all,
        groups,
    })
}

/// Reads rt-app JSON text (`path` names it in errors) and translates it.
fn read(text: &str, path: &str, name: &str) -> Result<Translation, WorkloadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let root = Node::deserialize(&mut de)
        .and_then(|n| de.end().map(|_| n))
        .map_err(|e| WorkloadError::File {
            path: path.into(),
            line: e.line(),
            problem: format!("not rt-app JSON: {e}"),
        })?;
    translate(&root, name).map_err(|At(at, problem)| WorkloadError::RtApp {
        path: path.into(),
        at,
        problem,
    })
}

/// The TOML workload file an rt-app JSON text stands for (`path` names it in errors): an
/// export, which [`super::file`] reads back into the workload [`parse_str`] builds.
pub fn to_toml(text: &str, path: &str, name: &str) -> Result<String, WorkloadError> {
    Ok(read(text, path, name)?.toml())
}

/// Parses an rt-app JSON text into a workload, built as data from the translation.
pub fn parse_str(text: &str, path: &str, name: &str) -> Result<super::Workload, WorkloadError> {
    read(text, path, name)?
        .build(path)
        .map_err(|At(at, problem)| WorkloadError::RtApp {
            path: path.into(),
            at,
            problem,
        })
}

/// Reads an rt-app JSON file.
pub fn load(path: &str) -> Result<super::Workload, WorkloadError> {
    let text = crate::infile::read_to_string(
        std::path::Path::new(path),
        crate::infile::MAX_TEXT_INPUT,
        "rt-app file",
    )
    .map_err(|e| WorkloadError::Io {
        path: path.into(),
        problem: e.to_string(),
    })?;
    let stem = std::path::Path::new(path)
        .file_stem()
        .map_or("rt-app".into(), |s| s.to_string_lossy().into_owned());
    parse_str(&text, path, &stem)
}
