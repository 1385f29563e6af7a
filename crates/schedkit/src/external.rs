//! Classes defined outside schedkit: a crate that implements [`SchedClass`] for its own type
//! describes it in an [`ExternalPolicy`] static and [`register`](crate::registry::register)s
//! it; from then on `PolicyKind::parse` finds it by name and both hosts, the CLI (through
//! `schedkit_cli::main_with`) and the operation bench run it like a built-in. See
//! `docs/own-class.md` for a walk through writing one, and `examples/own-class/` for two.
//!
//! The hosts are generic over the class: the simulator's run, the runtime's start and the
//! bench are each compiled once per class, and nothing is dispatched dynamically on a
//! scheduling path. An external class keeps that: [`ExternalPolicy::new`] is generic over the
//! class and instantiates each host's entry for it where the static is defined, storing one
//! function pointer per host. [`PolicyKind::build`](crate::registry::PolicyKind::build) calls
//! the visitor's entry once per run ([`WithSched::run_external`]); from there on the class's
//! hooks are called directly, as a built-in's are.
//!
//! This module is where an external class meets the hosts (and the conformance checker's
//! scripted run of them), so it names them; the registry names only this module's type.

use crate::class::{BuildEnv, SchedClass};
use crate::metrics::RunResult;
use crate::registry::WithSched;
use crate::sched_core::Sched;
use crate::sim::SimError;

/// A class that can be built for a machine: what [`ExternalPolicy::new`] needs besides the
/// [`SchedClass`] hooks. (A built-in's constructor is a line of the registry; an external
/// class's is this.)
pub trait FromEnv: SchedClass + Sized {
    /// Builds the class for a machine: `env` holds the boot-time facts (CPU count, clock,
    /// cache size, the RT class's balancing mode), as the kernel's class sees them at boot.
    fn from_env(env: &BuildEnv) -> Self;
}

/// A policy defined outside schedkit: its name, spellings, description and timer frequency
/// (what `list policies` shows and `--policy` reads), and the hosts' entries compiled for its
/// class. Make one with [`ExternalPolicy::new`] in a `static`, then
/// [`register`](crate::registry::register) it:
///
/// ```ignore
/// static FIFO: ExternalPolicy = ExternalPolicy::new::<Fifo>("fifo", "FIFO, no preemption")
///     .aliases(&["first-come"])
///     .hz(1000);
/// schedkit::registry::register(&FIFO)?;
/// ```
///
/// Two policies are the same policy when their names are the same (registration keeps names
/// unique).
pub struct ExternalPolicy {
    /// The name `--policy` reads and results carry (lowercase).
    pub name: &'static str,
    /// Other spellings `parse` accepts (lowercase).
    pub aliases: &'static [&'static str],
    /// One line for `list policies`: the design and its source.
    pub about: &'static str,
    /// The timer frequency the design's kernel ran at (the runtime's default tick).
    pub hz: u32,
    owns_rt: bool,
    entries: Entries,
}

/// One entry per host visitor, each the library's generic visitor instantiated for the class.
#[derive(Clone, Copy)]
struct Entries {
    simulate: for<'a, 'c> fn(&BuildEnv, crate::sim::Run<'a, 'c>) -> Result<RunResult, SimError>,
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    start: fn(&BuildEnv, crate::runtime::Start) -> <crate::runtime::Start as WithSched>::Out,
    bench_ops: fn(&BuildEnv, crate::bench::OpsBench) -> (f64, f64),
    conform: for<'a> fn(
        &BuildEnv,
        crate::conformance::HostRun<'a>,
    ) -> Result<Vec<String>, crate::sched_core::CoreError>,
}

/// Builds `C`'s class stack (the RT class in front of it unless it owns its RT tasks) and
/// hands it to `v`: [`PolicyKind::build`](crate::registry::PolicyKind::build)'s line for a
/// built-in.
fn entry<C: FromEnv, V: WithSched>(env: &BuildEnv, v: V) -> V::Out {
    v.run(Sched::new(C::from_env(env), env.rt_balance, env.ncpus))
}

fn simulate<C: FromEnv>(env: &BuildEnv, v: crate::sim::Run<'_, '_>) -> Result<RunResult, SimError> {
    entry::<C, _>(env, v)
}

fn conform<C: FromEnv>(
    env: &BuildEnv,
    v: crate::conformance::HostRun<'_>,
) -> Result<Vec<String>, crate::sched_core::CoreError> {
    entry::<C, _>(env, v)
}

impl ExternalPolicy {
    /// Describes class `C` as policy `name`, with the description `about`, no aliases and a
    /// 1000 Hz tick; `const`, for a `static`.
    pub const fn new<C: FromEnv>(name: &'static str, about: &'static str) -> ExternalPolicy {
        ExternalPolicy {
            name,
            aliases: &[],
            about,
            hz: 1000,
            owns_rt: C::OWNS_RT,
            entries: Entries {
                simulate: simulate::<C>,
                #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
                start: entry::<C, crate::runtime::Start>,
                bench_ops: entry::<C, crate::bench::OpsBench>,
                conform: conform::<C>,
            },
        }
    }

    /// The same with other spellings `parse` accepts.
    pub const fn aliases(self, aliases: &'static [&'static str]) -> ExternalPolicy {
        ExternalPolicy { aliases, ..self }
    }

    /// The same with the timer frequency of the design's era (1 to 10000 Hz).
    pub const fn hz(self, hz: u32) -> ExternalPolicy {
        ExternalPolicy { hz, ..self }
    }

    /// Whether the class queues its RT tasks itself ([`SchedClass::OWNS_RT`]).
    pub fn owns_rt(&self) -> bool {
        self.owns_rt
    }

    pub(crate) fn simulate(
        &self,
        env: &BuildEnv,
        v: crate::sim::Run<'_, '_>,
    ) -> Result<RunResult, SimError> {
        (self.entries.simulate)(env, v)
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) fn start(
        &self,
        env: &BuildEnv,
        v: crate::runtime::Start,
    ) -> <crate::runtime::Start as WithSched>::Out {
        (self.entries.start)(env, v)
    }

    pub(crate) fn conform(
        &self,
        env: &BuildEnv,
        v: crate::conformance::HostRun<'_>,
    ) -> Result<Vec<String>, crate::sched_core::CoreError> {
        (self.entries.conform)(env, v)
    }

    pub(crate) fn bench_ops(&self, env: &BuildEnv, v: crate::bench::OpsBench) -> (f64, f64) {
        (self.entries.bench_ops)(env, v)
    }
}

impl std::fmt::Debug for ExternalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalPolicy")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .field("hz", &self.hz)
            .finish_non_exhaustive()
    }
}

impl PartialEq for ExternalPolicy {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ExternalPolicy {}

impl std::hash::Hash for ExternalPolicy {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}
