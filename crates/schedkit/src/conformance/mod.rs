//! The conformance suite as a library: any class, the built-ins' or one written in another
//! crate, run through sequences of scheduling events on both hosts, audited after every
//! event, with the two hosts' decisions compared; and [`golden`], a class's figures on a
//! fixed set of runs, kept in a file and compared.
//!
//! ```no_run
//! use schedkit::conformance::{self, Config};
//! # fn demo<MyClass: schedkit::external::FromEnv>() {
//! // In a test of the crate that defines `MyClass` (a `FromEnv` + `SchedClass`):
//! let report = conformance::check::<MyClass>(&Config::default().cases(64))
//!     .unwrap_or_else(|failure| panic!("{failure}"));
//! println!("{report}");
//! # }
//! ```
//!
//! What a check runs, for each RT balancing mode of the [`Config`] (passive and push/pull by
//! default): first a fixed script on two flat CPUs (eight tasks of every policy, 300 jiffies
//! of ticks, yields, sleeps and wakeups, a nice change, an affinity change that evicts the
//! running task, an exit, a fork), then [`Config::cases`] sequences that proptest draws
//! ([`Sequence`]: 1 to 4 CPUs, flat, SMT or split between two caches; tasks of every policy,
//! nice level and affinity; ticks on any CPUs, yields, sleeps and wakeups from any CPU, a
//! wakeup of a task that has not switched out yet among them, attribute changes by a task
//! itself and from outside, affinity changes, forks, spawns and exits). Each runs on the
//! simulator and on the runtime host, both driven step by step through the scheduler core
//! from the calling thread (no event loop, no worker threads, every cost zero). After every
//! event the CPUs reschedule as they would on return to user space and the audit checks:
//!
//! - every task is in exactly one place: queued once on one runqueue, running on the CPU
//!   whose `curr` names it, or on no runqueue when asleep, new or dead;
//! - each runqueue's `nr_running` matches what it holds;
//! - affinity: a task runs, and (per-CPU runqueues) is queued, only on CPUs it allows;
//! - RT before normal: no CPU picks past a queued RT task that may run there and is more
//!   important than its pick (and, per-CPU runqueues, none waits behind less important work
//!   once the CPUs settle);
//! - the core's own checks of every answer (a CPU the class names exists and is allowed, a
//!   pick was queued, ...);
//! - then the simulator's and the runtime's logs of decisions (each pick, where each woken or
//!   new task went) must be equal line by line: the class must decide from the state the core
//!   hands it, not from which host runs it.
//!
//! A failure is shrunk by proptest to a smallest sequence and explained as a [`Failure`]: the
//! class, the RT balancing mode, the machine, the sequence in words (and as a value to paste
//! into a test for [`check_sequence`]), and the broken invariant with the host and event where
//! it broke, or the first decision on which the hosts disagree, with both decisions and those
//! before them. A class that panics fails the same way, its panic message as the problem.
//!
//! The runtime exists on Linux x86-64 only (`lib.rs`); elsewhere the simulator's half runs
//! alone, audited all the same, and the [`Report`] says so.
//!
//! Must never reach into a host's internals: the hosts are driven through the core and their
//! scripted faces only; it names no concrete policy.

mod audit;
pub mod golden;
mod script;
mod sequences;

#[cfg(test)]
pub(crate) use audit::{audit, curr_of, settle, sleep, spec};
pub use sequences::{AttrTo, Event, NewTask, Sequence, Shape};

use crate::class::{BuildEnv, RtBalance, SchedClass};
use crate::external::FromEnv;
use crate::machine::{Machine, Topology};
use crate::registry::{PolicyKind, WithSched};
use crate::sched_core::scripted::Scripted;
use crate::sched_core::{lockdep, CoreError, Sched};
use proptest::test_runner::{Config as PropConfig, RngSeed, TestCaseError, TestError, TestRunner};
use std::fmt;

/// Whether this build has the runtime host (`lib.rs` gates it to Linux x86-64).
pub const HAS_RUNTIME: bool = cfg!(all(target_os = "linux", target_arch = "x86_64"));

/// The default seed: the same sequences every run.
pub const DEFAULT_SEED: u64 = 2026;

/// Which sequences a check draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    /// The same ones for the same number.
    Fixed(u64),
    /// New ones each run (the failure shows the sequence, so it can be replayed).
    Random,
}

/// What a check runs: how many generated sequences, from which seed, on which machines, under
/// which RT balancing modes. `Config::default()`: 256 sequences from seed 2026 (the same ones
/// every run), every machine shape, both RT balancing modes.
///
/// ```
/// use schedkit::conformance::{Config, Seed, Shape};
/// let cfg = Config::default()
///     .cases(64)
///     .seed(Seed::Fixed(7))
///     .shapes(&[Shape::Flat(2), Shape::Smt(2)]);
/// assert_eq!(cfg.cases, 64);
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Generated sequences per check.
    pub cases: u32,
    /// Which ones.
    pub seed: Seed,
    /// The machines sequences are drawn on; empty: every [`Shape`] (1 to 4 flat CPUs, 1 or 2
    /// SMT cores, two caches of two CPUs), which is the default.
    pub shapes: Vec<Shape>,
    /// The RT class's balancing modes each sequence runs under (a class that queues its own
    /// RT tasks, `OWNS_RT`, has none to balance: it runs the same either way).
    pub balances: Vec<RtBalance>,
    /// How many simplifications proptest tries on a failing sequence.
    pub max_shrink_iters: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cases: 256,
            seed: Seed::Fixed(DEFAULT_SEED),
            shapes: Vec::new(),
            balances: vec![RtBalance::Passive, RtBalance::PushPull],
            // A sequence shrinks event by event: give it room.
            max_shrink_iters: 4096,
        }
    }
}

impl Config {
    /// The same with `n` generated sequences.
    pub fn cases(self, n: u32) -> Config {
        Config { cases: n, ..self }
    }

    /// The same drawn from `seed`.
    pub fn seed(self, seed: Seed) -> Config {
        Config { seed, ..self }
    }

    /// The same on these machines only (none: every shape).
    pub fn shapes(self, shapes: &[Shape]) -> Config {
        Config {
            shapes: shapes.to_vec(),
            ..self
        }
    }

    /// The same under these RT balancing modes only.
    pub fn balances(self, balances: &[RtBalance]) -> Config {
        Config {
            balances: balances.to_vec(),
            ..self
        }
    }

    /// The same with what the environment asks: `SCHEDKIT_CONFORMANCE_CASES` (a count) and
    /// `SCHEDKIT_CONFORMANCE_SEED` (a number, or `random`), where set; an error names the
    /// variable and what it holds.
    pub fn with_env(self) -> Result<Config, String> {
        let mut cfg = self;
        if let Ok(v) = std::env::var("SCHEDKIT_CONFORMANCE_CASES") {
            cfg.cases = v.trim().parse().map_err(|_| {
                format!("SCHEDKIT_CONFORMANCE_CASES={v:?}: expected a count of sequences")
            })?;
        }
        if let Ok(v) = std::env::var("SCHEDKIT_CONFORMANCE_SEED") {
            cfg.seed = match v.trim() {
                "random" => Seed::Random,
                n => Seed::Fixed(n.parse().map_err(|_| {
                    format!("SCHEDKIT_CONFORMANCE_SEED={v:?}: expected a number or `random`")
                })?),
            };
        }
        Ok(cfg)
    }

    fn rng_seed(&self) -> RngSeed {
        match self.seed {
            Seed::Fixed(n) => RngSeed::Fixed(n),
            Seed::Random => RngSeed::Random,
        }
    }
}

/// What each kind of event logs when it does something: a check counts them, so that a pass
/// shows the comparisons compared something ([`Report::events_never_taken`]).
pub const EVENTS: &[&str] = &[
    "take their ticks",
    "yields",
    " sleeps on",
    "while current",
    "woken from",
    "sets its nice",
    "from outside: changed true",
    "(evicted)",
    "forks",
    "spawned",
    "exits",
];

/// What a passed check ran.
#[derive(Clone, Debug)]
pub struct Report {
    /// The classes checked (their names with options).
    pub classes: Vec<String>,
    /// Whether the fixed script ran before the generated sequences (it does in every public
    /// check).
    pub fixed_script: bool,
    /// Generated sequences run (each under every balancing mode, for every class).
    pub cases: u32,
    /// Whether the runtime ran each too and the hosts' decisions were compared (false where
    /// the runtime does not exist: [`HAS_RUNTIME`]).
    pub both_hosts: bool,
    /// Decisions logged by the simulator over all runs (and matched by the runtime's).
    pub decisions: u64,
    /// For each kind of event ([`EVENTS`]), how many times one took effect in the first
    /// class's generated runs.
    pub events: Vec<(&'static str, u64)>,
}

impl Report {
    /// The kinds of event that never took effect (a check of few cases may miss some; at 32
    /// cases or more, with every shape, none should be missing).
    pub fn events_never_taken(&self) -> Vec<&'static str> {
        self.events
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(w, _)| *w)
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts = if self.both_hosts {
            "the simulator and the runtime decided alike"
        } else {
            "the simulator alone (no runtime on this target)"
        };
        writeln!(
            f,
            "conformance of {}: {}{} generated sequences passed the audits; {hosts} ({} decisions)",
            self.classes.join(", "),
            if self.fixed_script {
                "the fixed script and "
            } else {
                ""
            },
            self.cases,
            self.decisions
        )?;
        let events: Vec<String> = self
            .events
            .iter()
            .map(|(w, n)| format!("'{}' {n}", w.trim()))
            .collect();
        write!(f, "events that took effect: {}", events.join(", "))
    }
}

/// Which host a problem showed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    Simulator,
    Runtime,
}

impl fmt::Display for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HostKind::Simulator => "the simulator",
            HostKind::Runtime => "the runtime",
        })
    }
}

/// What went wrong in a failed check.
#[derive(Clone, Debug)]
pub enum Problem {
    /// An invariant broke, the core refused an answer of the class, or the class panicked, in
    /// one host; `what` says where (the event or step) and what.
    Broken { host: HostKind, what: String },
    /// Both hosts ran the sequence, and their logs of decisions differ first at `decision`
    /// (`None` on one side: that host's log ended there); `before` holds the decisions before
    /// it (up to eight).
    Disagree {
        decision: usize,
        simulator: Option<String>,
        runtime: Option<String>,
        before: Vec<String>,
    },
}

/// A failed check, explained: the class, the RT balancing mode, the machine, the smallest
/// sequence found (`None`: the fixed script) and the problem. Its `Display` is the whole
/// explanation.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The class's name (with its options).
    pub class: String,
    pub rt_balance: RtBalance,
    /// The machine in words.
    pub machine: String,
    /// The sequence that fails, shrunk (`None`: the fixed script failed).
    pub sequence: Option<Sequence>,
    pub problem: Problem,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "conformance: class `{}` ({:?} RT balancing) fails on {}",
            self.class, self.rt_balance, self.machine
        )?;
        match &self.problem {
            Problem::Broken { host, what } => writeln!(f, "  in {host}, {what}")?,
            Problem::Disagree {
                decision,
                simulator,
                runtime,
                before,
            } => {
                let side =
                    |d: &Option<String>| d.clone().unwrap_or_else(|| "(its log ends here)".into());
                writeln!(
                    f,
                    "  the simulator and the runtime decide differently at decision {decision}:"
                )?;
                writeln!(f, "    simulator: {}", side(simulator))?;
                writeln!(f, "    runtime:   {}", side(runtime))?;
                writeln!(f, "  after:")?;
                for l in before {
                    writeln!(f, "    {l}")?;
                }
            }
        }
        match &self.sequence {
            None => write!(
                f,
                "in the fixed script (two flat CPUs; conformance/script.rs)"
            ),
            Some(s) => {
                writeln!(f, "the smallest failing sequence found:")?;
                for l in s.to_string().lines() {
                    writeln!(f, "  {l}")?;
                }
                write!(f, "(as a value, for conformance::check_sequence: {s:?})")
            }
        }
    }
}

impl std::error::Error for Failure {}

// ----- running a script on one host -----

/// What to run through the hosts.
#[derive(Clone, Copy)]
pub(crate) enum Script<'a> {
    Fixed,
    Generated(&'a Sequence),
}

impl Script<'_> {
    fn run<H: Scripted>(self, h: &mut H) -> Result<Vec<String>, CoreError> {
        match self {
            Script::Fixed => script::run_script(h),
            Script::Generated(seq) => sequences::run_case(h, seq),
        }
    }
}

/// A script run on one host, for whichever class the policy builds: a visitor, so that a
/// registered class ([`ExternalPolicy`](crate::external::ExternalPolicy)) has its entry
/// compiled for it. Returns the log of every decision.
pub struct HostRun<'a> {
    host: HostKind,
    machine: &'a Machine,
    script: Script<'a>,
}

impl WithSched for HostRun<'_> {
    type Out = Result<Vec<String>, CoreError>;
    fn run_external(
        self,
        policy: &'static crate::external::ExternalPolicy,
        env: &BuildEnv,
    ) -> Self::Out {
        policy.conform(env, self)
    }
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        let (machine, script) = (self.machine, self.script);
        match self.host {
            HostKind::Simulator => crate::sim::scripted::run(sched, machine, |h| script.run(h)),
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            HostKind::Runtime => {
                let (topology, hz) = (machine.topology.clone(), machine.hz());
                crate::runtime::scripted::run(sched, topology, hz, |h| script.run(h))
            }
            #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
            HostKind::Runtime => {
                let _ = sched;
                Err(CoreError::new("no runtime on this target"))
            }
        }
    }
}

/// A class to check: its name and how to run a script on it.
pub(crate) struct Subject<'a> {
    pub(crate) name: String,
    #[allow(clippy::type_complexity)]
    pub(crate) build: Box<dyn Fn(&BuildEnv, HostRun<'_>) -> Result<Vec<String>, CoreError> + 'a>,
}

impl Subject<'static> {
    /// A policy of the registry (a built-in or a registered class).
    pub(crate) fn policy(kind: PolicyKind) -> Subject<'static> {
        Subject {
            name: kind.label(),
            build: Box::new(move |env, v| kind.build(env, v)),
        }
    }

    /// Class `C`, built as an external class's entry builds it.
    pub(crate) fn class<C: FromEnv>() -> Subject<'static> {
        let env = BuildEnv::of_machine(&costless_machine(), RtBalance::Passive);
        Subject {
            name: C::from_env(&env).name().to_string(),
            build: Box::new(|env, v| {
                v.run(Sched::new(C::from_env(env), env.rt_balance, env.ncpus))
            }),
        }
    }
}

/// Runs one host, a panic of the class caught as an error.
fn run_host(
    subject: &Subject<'_>,
    env: &BuildEnv,
    host: HostKind,
    machine: &Machine,
    script: Script<'_>,
) -> Result<Vec<String>, Problem> {
    let run = std::panic::AssertUnwindSafe(|| {
        (subject.build)(
            env,
            HostRun {
                host,
                machine,
                script,
            },
        )
    });
    match std::panic::catch_unwind(run) {
        Ok(Ok(log)) => Ok(log),
        Ok(Err(e)) => Err(Problem::Broken {
            host,
            what: e.what().to_string(),
        }),
        Err(payload) => {
            // The panic may have left this thread marked as holding runqueue locks.
            lockdep::forget_held();
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Err(Problem::Broken {
                host,
                what: format!("the class (or the core under it) panicked: {msg}"),
            })
        }
    }
}

/// A machine of `shape` whose every cost is zero (the scripted simulator's).
pub(crate) fn machine_of(shape: Shape) -> Machine {
    crate::sim::scripted::costless_machine(&shape.topology())
}

/// Two flat CPUs, every cost zero: the fixed script's machine.
pub(crate) fn costless_machine() -> Machine {
    machine_of(Shape::Flat(2))
}

/// The machine in words, for failure messages.
fn describe(t: &Topology) -> String {
    let caches = t.cache.iter().copied().max().map_or(0, |m| m + 1);
    format!("{} CPUs ({} cores, {caches} caches)", t.ncpus, t.ncores())
}

/// Runs `script` through both hosts for `subject` with `balance` on `machine`; returns the
/// simulator's log, or the failure (without its sequence).
pub(crate) fn conform(
    subject: &Subject<'_>,
    balance: RtBalance,
    machine: &Machine,
    script: Script<'_>,
) -> Result<Vec<String>, Failure> {
    let env = BuildEnv::of_machine(machine, balance);
    let fail = |problem| Failure {
        class: subject.name.clone(),
        rt_balance: balance,
        machine: describe(&machine.topology),
        sequence: None,
        problem,
    };
    let sim = run_host(subject, &env, HostKind::Simulator, machine, script).map_err(fail)?;
    if HAS_RUNTIME {
        let rt = run_host(subject, &env, HostKind::Runtime, machine, script).map_err(fail)?;
        compare(&sim, &rt).map_err(fail)?;
    }
    Ok(sim)
}

/// The first difference of two hosts' logs, with what led to it.
fn compare(sim: &[String], rt: &[String]) -> Result<(), Problem> {
    let before = |upto: usize| sim[upto.saturating_sub(8)..upto].to_vec();
    let at = sim.iter().zip(rt).position(|(a, b)| a != b);
    let at = at.or((sim.len() != rt.len()).then(|| sim.len().min(rt.len())));
    match at {
        Some(i) => Err(Problem::Disagree {
            decision: i,
            simulator: sim.get(i).cloned(),
            runtime: rt.get(i).cloned(),
            before: before(i),
        }),
        None => Ok(()),
    }
}

/// The fixed script through both hosts for each subject and balancing mode of `cfg`; the
/// simulator's logs.
pub(crate) fn check_fixed(
    subjects: &[Subject<'_>],
    cfg: &Config,
) -> Result<Vec<Vec<String>>, Failure> {
    let m = costless_machine();
    let mut logs = Vec::new();
    for s in subjects {
        for &balance in &cfg.balances {
            logs.push(conform(s, balance, &m, Script::Fixed)?);
        }
    }
    Ok(logs)
}

/// One sequence through both hosts for every subject and balancing mode; returns the log of
/// the first run.
pub(crate) fn conform_all(
    subjects: &[Subject<'_>],
    cfg: &Config,
    seq: &Sequence,
) -> Result<Vec<String>, Failure> {
    conform_counted(subjects, cfg, seq).map(|(log, _)| log)
}

/// [`conform_all`], with the number of decisions all runs logged.
fn conform_counted(
    subjects: &[Subject<'_>],
    cfg: &Config,
    seq: &Sequence,
) -> Result<(Vec<String>, u64), Failure> {
    let m = machine_of(seq.shape);
    let mut first = None;
    let mut n = 0;
    for s in subjects {
        for &balance in &cfg.balances {
            let log = conform(s, balance, &m, Script::Generated(seq)).map_err(|mut f| {
                f.sequence = Some(seq.clone());
                f
            })?;
            n += log.len() as u64;
            first.get_or_insert(log);
        }
    }
    Ok((first.unwrap_or_default(), n))
}

/// `cfg.cases` generated sequences, each through every subject and balancing mode (the same
/// sequences for each, from `cfg.seed`); a failure is shrunk and run again for its
/// explanation.
pub(crate) fn check_generated(subjects: &[Subject<'_>], cfg: &Config) -> Result<Report, Failure> {
    let mut runner = TestRunner::new(PropConfig {
        cases: cfg.cases,
        failure_persistence: None,
        max_shrink_iters: cfg.max_shrink_iters,
        rng_seed: cfg.rng_seed(),
        ..PropConfig::default()
    });
    let seen = std::cell::RefCell::new(vec![0u64; EVENTS.len()]);
    let decisions = std::cell::Cell::new(0u64);
    let last = std::cell::RefCell::new(None::<Failure>);
    let outcome = runner.run(
        &sequences::sequence(&cfg.shapes),
        |seq| match conform_counted(subjects, cfg, &seq) {
            Ok((log, n)) => {
                let mut seen = seen.borrow_mut();
                for (n, what) in seen.iter_mut().zip(EVENTS) {
                    *n += log.iter().filter(|l| l.contains(what)).count() as u64;
                }
                decisions.set(decisions.get() + n);
                Ok(())
            }
            Err(f) => {
                let msg = f.to_string();
                *last.borrow_mut() = Some(f);
                Err(TestCaseError::fail(msg))
            }
        },
    );
    match outcome {
        Ok(()) => Ok(Report {
            classes: subjects.iter().map(|s| s.name.clone()).collect(),
            fixed_script: false,
            cases: cfg.cases,
            both_hosts: HAS_RUNTIME,
            decisions: decisions.get(),
            events: EVENTS.iter().copied().zip(seen.into_inner()).collect(),
        }),
        Err(TestError::Fail(why, seq)) => {
            // Run again for the failure of the very sequence shown.
            match conform_all(subjects, cfg, &seq) {
                Err(f) => Err(f),
                Ok(_) => {
                    // The last failure recorded (a sequence that fails only sometimes: the
                    // class depends on something outside the sequence).
                    let mut f = last.into_inner().unwrap_or_else(|| Failure {
                        class: names(subjects),
                        rt_balance: RtBalance::Passive,
                        machine: describe(&machine_of(seq.shape).topology),
                        sequence: Some(seq.clone()),
                        problem: Problem::Broken {
                            host: HostKind::Simulator,
                            what: why.to_string(),
                        },
                    });
                    if let Problem::Broken { what, .. } = &mut f.problem {
                        what.push_str(" (it passes when run again)");
                    }
                    Err(f)
                }
            }
        }
        Err(TestError::Abort(why)) => Err(Failure {
            class: names(subjects),
            rt_balance: RtBalance::Passive,
            machine: "(none)".into(),
            sequence: None,
            problem: Problem::Broken {
                host: HostKind::Simulator,
                what: format!("proptest gave up: {why}"),
            },
        }),
    }
}

/// The subjects' names, for a failure not tied to one.
fn names(subjects: &[Subject<'_>]) -> String {
    let names: Vec<&str> = subjects.iter().map(|s| s.name.as_str()).collect();
    names.join(", ")
}

fn check_subjects(subjects: &[Subject<'_>], cfg: &Config) -> Result<Report, Failure> {
    let fixed = check_fixed(subjects, cfg)?;
    let mut report = check_generated(subjects, cfg)?;
    report.decisions += fixed.iter().map(|l| l.len() as u64).sum::<u64>();
    report.fixed_script = true;
    Ok(report)
}

/// Checks class `C`: the fixed script, then `cfg.cases` generated sequences, each on both
/// hosts under every balancing mode of `cfg`, audited after every event, the hosts'
/// decisions compared. `C` is built as its [`ExternalPolicy`](crate::external::ExternalPolicy)
/// builds it (`FromEnv`, the RT class in front unless `C::OWNS_RT`); it need not be
/// registered.
///
/// ```no_run
/// # fn demo<Fifo: schedkit::external::FromEnv>() {
/// use schedkit::conformance::{check, Config};
/// let cfg = Config::default().cases(64).with_env().unwrap();
/// if let Err(failure) = check::<Fifo>(&cfg) {
///     panic!("{failure}"); // the class, the machine, the sequence, the broken invariant
/// }
/// # }
/// ```
pub fn check<C: FromEnv>(cfg: &Config) -> Result<Report, Failure> {
    check_subjects(&[Subject::class::<C>()], cfg)
}

/// [`check`] for a policy of the registry: a built-in (`PolicyKind::O1`) or a registered
/// class (`PolicyKind::External(&MY_POLICY)`, or by name through `PolicyKind::parse`).
pub fn check_policy(policy: PolicyKind, cfg: &Config) -> Result<Report, Failure> {
    check_policies(&[policy], cfg)
}

/// [`check`] for several policies at once, each run on the same sequences (the report's
/// event counts are the first one's).
pub fn check_policies(policies: &[PolicyKind], cfg: &Config) -> Result<Report, Failure> {
    let subjects: Vec<_> = policies.iter().map(|&k| Subject::policy(k)).collect();
    check_subjects(&subjects, cfg)
}

/// Runs one sequence (a failure's, pasted into a regression test) on class `C` through both
/// hosts under every balancing mode of `cfg`, audited: the simulator's log of decisions of the
/// first mode, or the failure.
pub fn check_sequence<C: FromEnv>(seq: &Sequence, cfg: &Config) -> Result<Vec<String>, Failure> {
    conform_all(&[Subject::class::<C>()], cfg, seq)
}
