//! The registry of policies: data, one line per policy.
//!
//! Each line names a class (its module, its spellings on the command line, the HZ its era ran
//! at, a description with its source) and how to build it from the facts of the machine it
//! will run on. Everything that iterates over policies — the CLI's `--policy` and `list`, the
//! benches, the runtime's `Policy`, the conformance suite and every test that loops over
//! policies — reads [`PolicyKind::ALL`] and [`PolicyKind::build`]; adding a policy is a module
//! and one line below. A class defined outside schedkit is [`register`]ed instead (see
//! [`crate::external`]): [`PolicyKind::parse`] and [`PolicyKind::all`] then know it. The registry builds class stacks ([`Sched`]) and hands them to a
//! [`WithSched`] visitor; it knows nothing of the hosts that run them.

use crate::class::RtBalance;
use crate::class::SchedClass;
use crate::policy::{bfs, cfs, cfs_fair_clock, eevdf, goodness, o1};
use crate::sched_core::Sched;
use std::sync::RwLock;

pub use crate::class::BuildEnv;
pub use crate::external::ExternalPolicy;

/// Something to do with a class stack, whatever its class: run it in the simulator, start a
/// runtime on it, measure it.
pub trait WithSched {
    type Out;
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out;
    /// The same for a class defined outside schedkit and [`register`]ed: its class type is
    /// not known here, so the visitor takes the entry `policy` compiled for it at its
    /// definition ([`ExternalPolicy::new`] instantiates the library's own visitors, the
    /// simulator's, the runtime's and the operation bench's, for that class). A visitor that
    /// no such entry exists for (one defined outside schedkit, a test's) says here what it
    /// does instead.
    fn run_external(self, policy: &'static ExternalPolicy, env: &BuildEnv) -> Self::Out;
}

/// The classes registered from outside schedkit ([`register`]), in registration order, after
/// the built-ins everywhere policies are listed.
static EXTERNAL: RwLock<Vec<&'static ExternalPolicy>> = RwLock::new(Vec::new());

/// The registered external classes.
fn external() -> Vec<&'static ExternalPolicy> {
    match EXTERNAL.read() {
        Ok(v) => v.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Registers a class defined outside schedkit under its name and aliases, so that
/// [`PolicyKind::parse`] finds it and [`PolicyKind::all`] lists it (the CLI's `--policy`,
/// `--policies`, `list policies`, sweep points, replay and validate runs). Call it at the
/// start of `main`, before anything parses a policy name. Registering the same static twice is
/// harmless; a name or alias that is not lowercase (`parse` lowercases what it reads), that is
/// empty or holds a space or a comma, or that another policy (built-in or registered) already
/// answers to, is an error naming both.
pub fn register(policy: &'static ExternalPolicy) -> Result<(), String> {
    let mut list = match EXTERNAL.write() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if list.iter().any(|p| std::ptr::eq(*p, policy)) {
        return Ok(());
    }
    if !(1..=10_000).contains(&policy.hz) {
        return Err(format!(
            "class '{}': hz = {} is outside 1..=10000",
            policy.name, policy.hz
        ));
    }
    for n in std::iter::once(&policy.name).chain(policy.aliases) {
        if n.is_empty() || n.trim() != *n || n.to_ascii_lowercase() != *n || n.contains([',', ' '])
        {
            return Err(format!(
                "class '{}': the name '{n}' must be non-empty lowercase text without spaces or commas (policy names are read lowercased and comma-separated)",
                policy.name
            ));
        }
        if n.starts_with("bfs:") {
            return Err(format!(
                "class '{}': the name '{n}' is taken by bfs's options (bfs:...)",
                policy.name
            ));
        }
        let builtin = PolicyKind::ALL
            .iter()
            .find(|k| k.name() == *n || k.aliases().contains(n));
        if let Some(k) = builtin {
            return Err(format!(
                "class '{}': the name '{n}' is already the built-in policy '{}'",
                policy.name,
                k.name()
            ));
        }
        if let Some(p) = list.iter().find(|p| p.name == *n || p.aliases.contains(n)) {
            return Err(format!(
                "class '{}': the name '{n}' is already the registered class '{}'",
                policy.name, p.name
            ));
        }
    }
    list.push(policy);
    Ok(())
}

macro_rules! registry {
    ($( $variant:ident $(($opt_ty:ty = $opt_default:expr, $opt:ident))? => {
        name: $name:literal,
        aliases: [$($alias:literal),*],
        hz: $hz:literal,
        about: $about:literal,
        build: |$env:ident| $ctor:expr $(,)?
    } )*) => {
        /// The policies schedkit ships, by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum PolicyKind {
            $($variant $(($opt_ty))?,)*
            /// A class defined outside schedkit and [`register`]ed.
            External(&'static ExternalPolicy),
        }

        impl PolicyKind {
            /// Every built-in policy, in the order `list policies` shows them.
            /// (A policy with options appears once, with its defaults.) [`PolicyKind::all`]
            /// adds the registered external classes.
            pub const ALL: &'static [PolicyKind] = &[$(PolicyKind::$variant $(($opt_default))?,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(PolicyKind::$variant { .. } => $name,)*
                    PolicyKind::External(p) => p.name,
                }
            }

            /// Other spellings `parse` accepts.
            pub fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(PolicyKind::$variant { .. } => &[$($alias),*],)*
                    PolicyKind::External(p) => p.aliases,
                }
            }

            /// One line: the design, its era and its source.
            pub fn about(self) -> &'static str {
                match self {
                    $(PolicyKind::$variant { .. } => $about,)*
                    PolicyKind::External(p) => p.about,
                }
            }

            /// The timer frequency the design's kernels ran at (the runtime's default tick).
            pub fn native_hz(self) -> u32 {
                match self {
                    $(PolicyKind::$variant { .. } => $hz,)*
                    PolicyKind::External(p) => p.hz,
                }
            }

            /// Builds this policy's class stack for a machine and hands it to `v`.
            pub fn build<V: WithSched>(self, env: &BuildEnv, v: V) -> V::Out {
                let env = &BuildEnv {
                    rt_balance: self.rt_balance_for(env.rt_balance),
                    ..*env
                };
                match self {
                    $(PolicyKind::$variant $(($opt))? => {
                        let $env = env;
                        v.run(Sched::new($ctor, env.rt_balance, env.ncpus))
                    })*
                    PolicyKind::External(p) => v.run_external(p, env),
                }
            }
        }
    };
}

registry! {
    Goodness => {
        name: "goodness",
        aliases: ["2.4", "linux-2.4"],
        hz: 100,
        about: "Linux 2.4: one global runqueue and lock, O(n) goodness() loop, epoch recalculation over all tasks",
        build: |_env| goodness::Goodness,
    }
    O1 => {
        name: "o1",
        aliases: ["o(1)"],
        hz: 1000,
        about: "Ingo Molnar's O(1) as 2.6.11 has it (o1:era=2002 is the patch as announced): per-CPU active/expired priority arrays, bitmap pick, sleep_avg estimator, balancer",
        build: |env| o1::O1::from_env(env),
    }
    O12002 => {
        name: "o1:era=2002",
        aliases: ["o1:2002"],
        hz: 100,
        about: "The O(1) scheduler as announced on 4 Jan 2002 (2.5.2 era): o1's arrays, bitmap and balancer with 10-300 ms timeslices, a 4 x 1 s load-history estimator that only punishes (reconstructed), no interactive reinsertion, nice +19 batch-scheduled, yield as prio++; RT balanced actively (standing in for its global RT queue)",
        build: |env| o1::O1::era_2002(env),
    }
    Cfs2623 => {
        name: "cfs:era=2.6.23",
        aliases: ["2.6.23"],
        hz: 1000,
        about: "CFS as released in Linux 2.6.23 (the v19/v20 model): per-CPU fair_clock, wait_runtime within +-runtime_limit, fair_key = fair_clock - wait_runtime in a red-black tree, sleeper credit and sleeper_bonus, granularity rules of that era; scheduling domains from the topology",
        build: |env| cfs_fair_clock::CfsFairClock::v2_6_23(env.ncpus),
    }
    Cfs => {
        name: "cfs",
        aliases: ["cfs:era=2.6.24"],
        hz: 1000,
        about: "CFS of Linux 2.6.24 (the first with vruntime): per-CPU red-black timeline, min_vruntime, sched_slice, START_DEBIT and sleeper placement, wakeup granularity; scheduling domains from the topology, wake_affine",
        build: |env| cfs::Cfs::v2_6_24(env.ncpus),
    }
    Cfs2632 => {
        name: "cfs:era=2.6.32",
        aliases: ["2.6.32"],
        hz: 1000,
        about: "CFS of Linux 2.6.32: as cfs with 5 ms latency / 1 ms granularities, GENTLE_FAIR_SLEEPERS, wakeup_preempt_entity with the wakee's granularity, LAST_BUDDY, child_runs_first off, SCHED_IDLE weight 3 and never-preempting batch/idle wakees; scheduling domains from the topology",
        build: |env| cfs::Cfs::v2_6_32(env.ncpus),
    }
    Eevdf => {
        name: "eevdf",
        aliases: ["6.6", "eevdf:era=6.6"],
        hz: 1000,
        about: "EEVDF of Linux 6.6+: eligible (lag >= 0) task with the earliest virtual deadline, avg_vruntime sums, deadline tree augmented with min vruntime, lag kept across sleep (PLACE_LAG), RUN_TO_PARITY; scheduling domains balancing PELT load averages, select_idle_sibling",
        build: |env| eevdf::Eevdf::v6_6(env.ncpus),
    }
    Eevdf618(eevdf::FairServerOpts = eevdf::FairServerOpts::DEFAULT, fair_server) => {
        name: "eevdf:era=6.18",
        aliases: ["6.18"],
        hz: 250,
        about: "EEVDF of Linux 6.18 (the kernel of this project's machine): eevdf's tree and lag with 6.18's features.h defaults: 0.70 ms base slice, DELAY_DEQUEUE/DELAY_ZERO (a sleeper that is not eligible stays queued until picked or woken in place), RUN_TO_PARITY through the protected vruntime vprot, PREEMPT_SHORT and per-task slices, PLACE_REL_DEADLINE, 6.18's yield; wake_wide, wake_affine and select_idle_sibling of 6.18; today's sched_balance_rq (group types, imbalance in tasks or load) with new-idle gating (avg_idle, max_newidle_lb_cost, NI_RANDOM); on a hybrid machine (docs/modern.md) 6.18's capacity- and energy-aware rules: find_energy_efficient_cpu over the Energy Model, select_idle_capacity, misfit tasks, asym packing by ITMT priority, active balance, uclamp; the fair server (6.12+ dl_server: each CPU's deadline reservation, 50 ms every 1 s, that runs normal tasks RT tasks would starve, deferred to its zero-laxity instant; options fair_server_runtime=NS, fair_server_period=NS)",
        build: |env| eevdf::Eevdf::v6_18_with(env.ncpus, fair_server),
    }
    Bfs(bfs::BfsTunables = bfs::BfsTunables::DEFAULT, tunables) => {
        name: "bfs",
        aliases: ["bfs:0.404"],
        hz: 1000,
        about: "Con Kolivas' BFS 0.404 (2.6.38, 2011): one global queue and lock, 103 priority lists with a bitmap, virtual deadlines from prio_ratios and rr_interval (6 ms), earliest-deadline scan with affinity and the sticky bias (skipped on throttled CPUs), try_preempt of the worst running task, locality-ranked idle CPU choice, SCHED_ISO and IDLEPRIO; options bfs:sticky=off, rr_interval=N, iso_cpu=N",
        build: |env| bfs::Bfs::new(env.ncpus, tunables),
    }
}

impl PolicyKind {
    /// Every policy: the built-ins ([`PolicyKind::ALL`]), then the classes [`register`]ed from
    /// outside schedkit, in the order they were registered.
    pub fn all() -> Vec<PolicyKind> {
        let mut v = PolicyKind::ALL.to_vec();
        v.extend(external().into_iter().map(PolicyKind::External));
        v
    }

    pub fn parse(name: &str) -> Result<PolicyKind, String> {
        let n = name.trim().to_ascii_lowercase();
        if let Some(opts) = n.strip_prefix("bfs:").filter(|o| *o != "0.404") {
            return bfs::BfsTunables::parse(opts).map(PolicyKind::Bfs);
        }
        if let Some(opts) = n
            .strip_prefix("eevdf:era=6.18,")
            .or_else(|| n.strip_prefix("6.18,"))
        {
            return eevdf::FairServerOpts::parse(opts).map(PolicyKind::Eevdf618);
        }
        let all = PolicyKind::all();
        all.iter()
            .copied()
            .find(|k| k.name() == n || k.aliases().contains(&n.as_str()))
            .ok_or_else(|| {
                format!(
                    "unknown policy '{n}' (known: {})",
                    all.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
                )
            })
    }

    /// The name with the options it was given, as `parse` reads it back (`bfs:sticky=off`).
    pub fn label(self) -> String {
        match self {
            PolicyKind::Bfs(t) if !t.suffix().is_empty() => format!("bfs:{}", t.suffix()),
            PolicyKind::Eevdf618(o) if !o.suffix().is_empty() => {
                format!("eevdf:era=6.18,{}", o.suffix())
            }
            k => k.name().to_string(),
        }
    }

    /// The RT balancing a policy runs with when `asked` is requested: `o1:era=2002` always
    /// balances actively (push/pull stands in for the announcement's global RT queue).
    pub fn rt_balance_for(self, asked: RtBalance) -> RtBalance {
        match self {
            PolicyKind::O12002 => RtBalance::PushPull,
            _ => asked,
        }
    }

    /// Whether RT tasks of this policy go to the stacked RT class (and so `--rt-balance`
    /// applies), rather than to the policy's own queue.
    pub fn has_rt_class(self) -> bool {
        struct Probe;
        impl WithSched for Probe {
            type Out = bool;
            fn run<C: SchedClass>(self, _sched: Sched<C>) -> bool {
                !C::OWNS_RT
            }
            fn run_external(self, policy: &'static ExternalPolicy, _env: &BuildEnv) -> bool {
                !policy.owns_rt()
            }
        }
        let env = BuildEnv {
            ncpus: 1,
            mhz: 1000.0,
            cache_kb: 256,
            rt_balance: RtBalance::Passive,
        };
        self.build(&env, Probe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::FromEnv;
    use crate::machine::Machine;
    use crate::sim::SimConfig;
    use crate::workload::Workload;

    // Built-in classes seen from outside: the same class types behind an `ExternalPolicy`, so
    // that a run through the external entries can be compared with the registry's own line.
    impl FromEnv for goodness::Goodness {
        fn from_env(_env: &BuildEnv) -> Self {
            goodness::Goodness
        }
    }
    impl FromEnv for o1::O1 {
        fn from_env(env: &BuildEnv) -> Self {
            o1::O1::from_env(env)
        }
    }

    static GOODNESS_OUTSIDE: ExternalPolicy =
        ExternalPolicy::new::<goodness::Goodness>("goodness-outside", "2.4 again").hz(100);
    static O1_OUTSIDE: ExternalPolicy =
        ExternalPolicy::new::<o1::O1>("o1-outside", "O(1) again").aliases(&["o1-again"]);

    fn same_run(builtin: PolicyKind, external: &'static ExternalPolicy, workload: &str) {
        let m = Machine::load("smp4-2002").unwrap();
        let w = Workload::parse(workload).unwrap();
        let cfg = || SimConfig {
            duration_ns: 200_000_000,
            audit_every: 1,
            ..Default::default()
        };
        let mut a = builtin.simulate(&m, &w, cfg()).unwrap();
        let mut b = PolicyKind::External(external)
            .simulate(&m, &w, cfg())
            .unwrap();
        a.metrics.sim.wall_s = 0.0;
        b.metrics.sim.wall_s = 0.0;
        assert!(a.metrics.context_switches > 0);
        assert_eq!(a, b, "{} outside schedkit ran differently", builtin.name());
    }

    /// A class run through its external entries runs exactly as through the registry's line:
    /// the entry builds the same class stack (the RT class in front unless the class owns its
    /// RT tasks) and hands it to the same simulator.
    #[test]
    fn an_external_class_runs_as_the_same_builtin_does() {
        same_run(
            PolicyKind::Goodness,
            &GOODNESS_OUTSIDE,
            "hackbench:groups=2+rtmix",
        );
        same_run(PolicyKind::O1, &O1_OUTSIDE, "hackbench:groups=2+rtmix");
        assert!(!PolicyKind::External(&GOODNESS_OUTSIDE).has_rt_class());
        assert!(PolicyKind::External(&O1_OUTSIDE).has_rt_class());
    }

    #[test]
    fn registration_finds_the_class_by_name_and_refuses_clashes() {
        register(&O1_OUTSIDE).unwrap();
        register(&O1_OUTSIDE).unwrap(); // the same static again: nothing happens
        assert_eq!(
            PolicyKind::parse(" O1-Again ").unwrap(),
            PolicyKind::External(&O1_OUTSIDE)
        );
        assert_eq!(
            PolicyKind::all()
                .iter()
                .filter(|k| **k == PolicyKind::External(&O1_OUTSIDE))
                .count(),
            1
        );
        assert_eq!(PolicyKind::parse("o1").unwrap(), PolicyKind::O1);

        static CLASH: ExternalPolicy =
            ExternalPolicy::new::<goodness::Goodness>("mine", "").aliases(&["2.4"]);
        let e = register(&CLASH).unwrap_err();
        assert!(
            e.contains("'mine'") && e.contains("'2.4'") && e.contains("'goodness'"),
            "{e}"
        );
        static CLASH2: ExternalPolicy = ExternalPolicy::new::<goodness::Goodness>("o1-again", "");
        let e = register(&CLASH2).unwrap_err();
        assert!(e.contains("registered class 'o1-outside'"), "{e}");
        static UPPER: ExternalPolicy = ExternalPolicy::new::<goodness::Goodness>("Mine", "");
        assert!(register(&UPPER).unwrap_err().contains("lowercase"));
        static COMMA: ExternalPolicy = ExternalPolicy::new::<goodness::Goodness>("a,b", "");
        assert!(register(&COMMA).unwrap_err().contains("commas"));
        static HZ: ExternalPolicy = ExternalPolicy::new::<goodness::Goodness>("slow", "").hz(0);
        assert!(register(&HZ).unwrap_err().contains("hz = 0"));
        for refused in ["mine", "Mine", "slow", "a,b"] {
            assert!(
                PolicyKind::parse(refused).is_err(),
                "{refused} was registered"
            );
        }
    }
}
