//! Machine profiles: CPUs and topology, clock and tick, and the cost of every hardware and
//! kernel operation the simulator charges. Profiles are TOML files; every number in a shipped
//! profile carries a comment naming its source. Profiles hold facts, never tuning knobs.
//!
//! One job a file: this one holds the shipped profiles ([`BUILTIN_PROFILES`]), [`Machine`]
//! (a profile loaded by name or path, and validated) and its errors; `profile.rs` the profile's
//! TOML types, `check.rs` their validation (errors name the field), `topology.rs` the per-CPU
//! facts a profile's topology gives, `host.rs` the `host` profile's topology and cpufreq read
//! from `/sys`.
//!
//! Must never depend on a policy, a host (`sim`, `runtime`), `sched_core` or a workload: a
//! profile describes a machine, whatever runs on it.

pub(crate) mod check;
mod host;
pub mod hybrid;
mod profile;
#[cfg(test)]
mod tests;
mod topology;

pub use hybrid::{EmDomain, EmState};
pub use profile::{
    CacheSpec, ClockSpec, CoreTypeSpec, CostSpec, CpufreqSpec, FreqDomain, Governor,
    InterconnectSpec, KernelSpec, MachineProfile, NumaSpec, PowerSpec, SmtSpec, TopologySpec,
};
pub use topology::{Topology, LOCAL_DISTANCE, REMOTE_DISTANCE};

use std::path::Path;

/// Shipped profiles: (name, TOML text).
pub const BUILTIN_PROFILES: &[(&str, &str)] = &[
    ("up-2002", include_str!("../../../../profiles/up-2002.toml")),
    (
        "smp2-2002",
        include_str!("../../../../profiles/smp2-2002.toml"),
    ),
    (
        "smp4-2002",
        include_str!("../../../../profiles/smp4-2002.toml"),
    ),
    (
        "smp8-2002",
        include_str!("../../../../profiles/smp8-2002.toml"),
    ),
    (
        "athlonmp2-2007",
        include_str!("../../../../profiles/athlonmp2-2007.toml"),
    ),
    ("i7-m620", include_str!("../../../../profiles/i7-m620.toml")),
    (
        "xeon-x3360",
        include_str!("../../../../profiles/xeon-x3360.toml"),
    ),
    (
        "phenom-x6",
        include_str!("../../../../profiles/phenom-x6.toml"),
    ),
    (
        "prescott-ht",
        include_str!("../../../../profiles/prescott-ht.toml"),
    ),
    (
        "epyc-7763-2s",
        include_str!("../../../../profiles/epyc-7763-2s.toml"),
    ),
    (
        "spr-8480-2s",
        include_str!("../../../../profiles/spr-8480-2s.toml"),
    ),
    (
        "alderlake-12900k",
        include_str!("../../../../profiles/alderlake-12900k.toml"),
    ),
    (
        "exynos5422",
        include_str!("../../../../profiles/exynos5422.toml"),
    ),
    ("host", include_str!("../../../../profiles/host.toml")),
];

/// The shipped profiles' names grouped by their `era`, the eras in the order of their first
/// profile in [`BUILTIN_PROFILES`] (a profile without one goes under "other"), for `schedkit
/// list machines`.
pub fn builtin_by_era() -> Result<Vec<(String, Vec<&'static str>)>, MachineError> {
    let mut eras: Vec<(String, Vec<&'static str>)> = Vec::new();
    for (name, text) in BUILTIN_PROFILES {
        let era = Machine::from_toml(text, name)?
            .profile
            .era
            .unwrap_or_else(|| "other".into());
        match eras.iter_mut().find(|(e, _)| *e == era) {
            Some((_, names)) => names.push(name),
            None => eras.push((era, vec![name])),
        }
    }
    Ok(eras)
}

#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error("unknown machine '{0}' (known: {1}); or give a path to a .toml profile")]
    Unknown(String, String),
    /// (The cause is in the message; it is not also chained as a source, which printed it
    /// twice.)
    #[error("cannot read machine profile {path}: {problem}")]
    Io { path: String, problem: String },
    #[error("machine profile {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("machine profile {origin}: {field}: {problem}")]
    Invalid {
        origin: String,
        field: String,
        problem: String,
    },
}

/// A loaded, validated machine.
#[derive(Clone, Debug)]
pub struct Machine {
    pub profile: MachineProfile,
    pub topology: Topology,
}

impl Machine {
    /// Loads a shipped profile by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Machine, MachineError> {
        if let Some((_, text)) = BUILTIN_PROFILES.iter().find(|(n, _)| *n == name_or_path) {
            let mut m = Machine::from_toml(text, name_or_path)?;
            if name_or_path == "host" {
                m.read_host_topology();
            }
            return Ok(m);
        }
        let path = Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "toml") || path.exists() {
            let text = crate::infile::read_to_string(
                path,
                crate::infile::MAX_TEXT_INPUT,
                "machine profile",
            )
            .map_err(|e| MachineError::Io {
                path: name_or_path.to_string(),
                problem: e.to_string(),
            })?;
            return Machine::from_toml(&text, name_or_path);
        }
        Err(MachineError::Unknown(
            name_or_path.to_string(),
            BUILTIN_PROFILES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        ))
    }

    pub fn from_toml(text: &str, origin: &str) -> Result<Machine, MachineError> {
        let profile: MachineProfile = toml::from_str(text).map_err(|e| MachineError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        check::validate(&profile, origin)?;
        let mut topology = Topology::from_spec(&profile.topology);
        if let Some(numa) = &profile.numa {
            topology.node_distance = numa.distance.iter().flatten().copied().collect();
        }
        hybrid::apply(&mut topology, &profile);
        Ok(Machine { profile, topology })
    }

    /// The machine cut down to its first `n` CPUs (a smaller machine of the same parts and
    /// costs: each sharing count capped at `n`, the NUMA table cut to the nodes left, a
    /// separate L2 merged into the LLC where a single core is left under it), named
    /// `name:cpus=n`; for measuring how the simulator scales with CPUs (`schedkit bench sim
    /// --cpus`). An error names `n` where the topology cannot be cut there (`n` must be a
    /// multiple of every sharing count below it).
    pub fn first_cpus(&self, n: usize) -> Result<Machine, MachineError> {
        let mut p = self.profile.clone();
        let origin = format!("{}:cpus={n}", p.name);
        let t = &mut p.topology;
        let cap = |v: Option<usize>| v.map(|v| v.min(n));
        t.cpus = n;
        t.threads_per_core = t.threads_per_core.min(n);
        t.cpus_per_cache = t.cpus_per_cache.min(n);
        t.cpus_per_l2 = cap(t.cpus_per_l2);
        t.cpus_per_node = cap(t.cpus_per_node);
        t.cpus_per_package = cap(t.cpus_per_package);
        if t.cpus_per_l2.is_some_and(|l2| l2 >= t.cpus_per_cache) {
            // One core left under its LLC: its L2 and the LLC are one level for it.
            t.cpus_per_l2 = None;
            p.cache.l2_kb = None;
            p.costs.llc_read_mb_s = None;
        }
        if let Some(numa) = p.numa.as_mut() {
            let nodes = n.div_ceil(t.cpus_per_node.unwrap_or(n).max(1));
            numa.distance.truncate(nodes);
            for row in &mut numa.distance {
                row.truncate(nodes);
            }
        }
        p.name = origin.clone();
        check::validate(&p, &origin)?;
        let mut topology = Topology::from_spec(&p.topology);
        if let Some(numa) = &p.numa {
            topology.node_distance = numa.distance.iter().flatten().copied().collect();
        }
        Ok(Machine {
            profile: p,
            topology,
        })
    }

    pub fn name(&self) -> &str {
        &self.profile.name
    }

    pub fn ncpus(&self) -> usize {
        self.topology.ncpus
    }

    pub fn hz(&self) -> u32 {
        self.profile.clock.hz
    }
}
