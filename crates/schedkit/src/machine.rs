//! Machine profiles: CPUs and topology, clock and tick, and the cost of every hardware and
//! kernel operation the simulator charges. Profiles are TOML files; every number in a shipped
//! profile carries a comment naming its source. Profiles hold facts, never tuning knobs.

use crate::task::CpuMask;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Shipped profiles: (name, TOML text).
pub const BUILTIN_PROFILES: &[(&str, &str)] = &[
    ("up-2002", include_str!("../../../profiles/up-2002.toml")),
    (
        "smp2-2002",
        include_str!("../../../profiles/smp2-2002.toml"),
    ),
    (
        "smp4-2002",
        include_str!("../../../profiles/smp4-2002.toml"),
    ),
    (
        "smp8-2002",
        include_str!("../../../profiles/smp8-2002.toml"),
    ),
    (
        "athlonmp2-2007",
        include_str!("../../../profiles/athlonmp2-2007.toml"),
    ),
    ("host", include_str!("../../../profiles/host.toml")),
];

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

/// How the CPUs are put together.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// Logical CPUs.
    pub cpus: usize,
    /// SMT threads per core (1 = no SMT).
    #[serde(default = "one")]
    pub threads_per_core: usize,
    /// Logical CPUs sharing one last-level cache.
    #[serde(default = "one")]
    pub cpus_per_cache: usize,
    /// Logical CPUs per NUMA node (default: all on one node).
    #[serde(default)]
    pub cpus_per_node: Option<usize>,
}

fn one() -> usize {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    /// Core clock, MHz.
    pub mhz: f64,
    /// Timer interrupts per second (CONFIG_HZ).
    pub hz: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Size of the last-level cache a task's working set lives in, KB.
    pub size_kb: u64,
}

/// Hardware costs, ns unless named otherwise.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// Latency of a load that hits the last-level cache.
    pub cache_latency_ns: f64,
    /// Latency of a load from main memory (also a cache line moving between CPUs).
    pub mem_latency_ns: f64,
    /// Sustained memory read bandwidth, MB/s: refilling a cold working set runs at this rate.
    pub mem_read_mb_s: f64,
    /// A locked read-modify-write (spin_lock fast path) on a line this CPU already owns.
    pub atomic_ns: f64,
    /// Entering and leaving the kernel for a system call.
    pub syscall_ns: f64,
    /// The switch itself: registers, stack, address space, TLB (scheduler work excluded).
    pub context_switch_ns: f64,
    /// Handling one timer interrupt (scheduler_tick's own work excluded).
    pub timer_irq_ns: f64,
    /// Sending an inter-processor interrupt, and the receiver's handling of it.
    pub ipi_send_ns: f64,
    /// Delay between sending an IPI and the target CPU taking it.
    pub ipi_latency_ns: f64,
    /// Waking an idle CPU out of its idle state (halt/hypervisor), on top of the IPI.
    #[serde(default)]
    pub idle_exit_ns: f64,
}

/// Kernel work the workloads invoke (measured syscall costs with the switch removed).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    pub pipe_write_ns: f64,
    pub pipe_read_ns: f64,
    pub sock_send_ns: f64,
    pub sock_recv_ns: f64,
    pub fork_ns: f64,
    pub exit_ns: f64,
    pub wait_ns: f64,
    pub exec_ns: f64,
    /// User-space start-up of /bin/sh before it runs its command.
    pub shell_startup_ns: f64,
}

/// A machine profile as written in TOML.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineProfile {
    pub name: String,
    pub description: String,
    pub topology: TopologySpec,
    pub clock: ClockSpec,
    pub cache: CacheSpec,
    pub costs: CostSpec,
    pub kernel: KernelSpec,
}

/// Topology facts per CPU, derived from a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub ncpus: usize,
    /// Physical core of each CPU (SMT siblings share it).
    pub core: Vec<usize>,
    /// Last-level cache domain of each CPU.
    pub cache: Vec<usize>,
    /// NUMA node of each CPU.
    pub node: Vec<usize>,
}

impl Topology {
    pub fn from_spec(s: &TopologySpec) -> Topology {
        let n = s.cpus;
        let per_node = s.cpus_per_node.unwrap_or(n).max(1);
        Topology {
            ncpus: n,
            core: (0..n).map(|c| c / s.threads_per_core.max(1)).collect(),
            cache: (0..n).map(|c| c / s.cpus_per_cache.max(1)).collect(),
            node: (0..n).map(|c| c / per_node).collect(),
        }
    }

    /// A flat SMP machine of `n` CPUs, each with its own cache.
    pub fn flat(n: usize) -> Topology {
        Topology::from_spec(&TopologySpec {
            cpus: n,
            threads_per_core: 1,
            cpus_per_cache: 1,
            cpus_per_node: None,
        })
    }

    pub fn all_cpus(&self) -> CpuMask {
        CpuMask::first_n(self.ncpus)
    }

    pub fn ncaches(&self) -> usize {
        self.cache.iter().copied().max().map_or(0, |m| m + 1)
    }
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
            let text = std::fs::read_to_string(path).map_err(|e| MachineError::Io {
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
        validate(&profile, origin)?;
        let topology = Topology::from_spec(&profile.topology);
        Ok(Machine { profile, topology })
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

    /// Replaces the topology with this machine's, read from /sys (Linux). Leaves the profile's
    /// topology in place where /sys cannot be read.
    fn read_host_topology(&mut self) {
        let ncpus = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(CpuMask::MAX_CPUS);
        let read = |p: String| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        let mut core = Vec::with_capacity(ncpus);
        let mut cache = Vec::with_capacity(ncpus);
        let mut node = Vec::with_capacity(ncpus);
        let mut core_keys: Vec<String> = Vec::new();
        let mut cache_keys: Vec<String> = Vec::new();
        for c in 0..ncpus {
            let base = format!("/sys/devices/system/cpu/cpu{c}");
            let sib =
                read(format!("{base}/topology/thread_siblings_list")).unwrap_or(c.to_string());
            let pkg = read(format!("{base}/topology/physical_package_id")).unwrap_or_default();
            let key = format!("{pkg}/{sib}");
            let ci = core_keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                core_keys.push(key);
                core_keys.len() - 1
            });
            core.push(ci);
            // The highest cache index is the last-level cache.
            let mut llc = c.to_string();
            for idx in (0..8).rev() {
                if let Some(s) = read(format!("{base}/cache/index{idx}/shared_cpu_list")) {
                    llc = s;
                    break;
                }
            }
            let ki = cache_keys
                .iter()
                .position(|k| *k == llc)
                .unwrap_or_else(|| {
                    cache_keys.push(llc);
                    cache_keys.len() - 1
                });
            cache.push(ki);
            let n = (0..64)
                .find(|n| Path::new(&format!("{base}/node{n}")).exists())
                .unwrap_or(0);
            node.push(n);
        }
        self.topology = Topology {
            ncpus,
            core,
            cache,
            node,
        };
        self.profile.topology.cpus = ncpus;
        if let Some(kb) = read("/sys/devices/system/cpu/cpu0/cache/index3/size".into())
            .or_else(|| read("/sys/devices/system/cpu/cpu0/cache/index2/size".into()))
            .and_then(|s| s.trim_end_matches('K').parse::<u64>().ok())
        {
            self.profile.cache.size_kb = kb;
        }
    }
}

fn validate(p: &MachineProfile, origin: &str) -> Result<(), MachineError> {
    let bad = |field: &str, problem: String| MachineError::Invalid {
        origin: origin.to_string(),
        field: field.to_string(),
        problem,
    };
    let t = &p.topology;
    if t.cpus == 0 || t.cpus > CpuMask::MAX_CPUS {
        return Err(bad(
            "topology.cpus",
            format!("must be 1..={}, got {}", CpuMask::MAX_CPUS, t.cpus),
        ));
    }
    for (field, v) in [
        ("topology.threads_per_core", t.threads_per_core),
        ("topology.cpus_per_cache", t.cpus_per_cache),
        ("topology.cpus_per_node", t.cpus_per_node.unwrap_or(t.cpus)),
    ] {
        if v == 0 || !t.cpus.is_multiple_of(v) {
            return Err(bad(
                field,
                format!("must divide topology.cpus ({}), got {v}", t.cpus),
            ));
        }
    }
    // Every number within a physically sensible range (a 1 MHz to 100 GHz clock, costs
    // from nothing to what no machine of any era took), so that no cost arithmetic can
    // overflow and no absurd value makes a machine faster or wraps round.
    let ranged = |field: &str, v: f64, lo: f64, hi: f64, unit: &str| {
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(bad(
                field,
                format!("must be within {lo}..={hi} {unit}, got {v}"),
            ))
        }
    };
    ranged("clock.mhz", p.clock.mhz, 1.0, 100_000.0, "MHz")?;
    if !(10..=10_000).contains(&p.clock.hz) {
        return Err(bad(
            "clock.hz",
            format!("must be within 10..=10000, got {}", p.clock.hz),
        ));
    }
    if !(1..=16 << 20).contains(&p.cache.size_kb) {
        return Err(bad(
            "cache.size_kb",
            format!(
                "must be within 1..={} KB, got {}",
                16u64 << 20,
                p.cache.size_kb
            ),
        ));
    }
    let c = &p.costs;
    let k = &p.kernel;
    ranged(
        "costs.cache_latency_ns",
        c.cache_latency_ns,
        0.0,
        1_000.0,
        "ns",
    )?;
    ranged(
        "costs.mem_latency_ns",
        c.mem_latency_ns,
        0.0,
        10_000.0,
        "ns",
    )?;
    ranged(
        "costs.mem_read_mb_s",
        c.mem_read_mb_s,
        1.0,
        10_000_000.0,
        "MB/s",
    )?;
    ranged("costs.atomic_ns", c.atomic_ns, 0.0, 10_000.0, "ns")?;
    for (field, v) in [
        ("costs.syscall_ns", c.syscall_ns),
        ("costs.context_switch_ns", c.context_switch_ns),
        ("costs.timer_irq_ns", c.timer_irq_ns),
        ("costs.ipi_send_ns", c.ipi_send_ns),
    ] {
        ranged(field, v, 0.0, 1_000_000.0, "ns")?;
    }
    for (field, v) in [
        ("costs.ipi_latency_ns", c.ipi_latency_ns),
        ("costs.idle_exit_ns", c.idle_exit_ns),
    ] {
        ranged(field, v, 0.0, 10_000_000.0, "ns")?;
    }
    for (field, v) in [
        ("kernel.pipe_write_ns", k.pipe_write_ns),
        ("kernel.pipe_read_ns", k.pipe_read_ns),
        ("kernel.sock_send_ns", k.sock_send_ns),
        ("kernel.sock_recv_ns", k.sock_recv_ns),
        ("kernel.fork_ns", k.fork_ns),
        ("kernel.exit_ns", k.exit_ns),
        ("kernel.wait_ns", k.wait_ns),
        ("kernel.exec_ns", k.exec_ns),
        ("kernel.shell_startup_ns", k.shell_startup_ns),
    ] {
        ranged(field, v, 0.0, 1_000_000_000.0, "ns")?;
    }
    // Consistency: the timer interrupt must leave room for work between ticks.
    let tick_ns = 1e9 / p.clock.hz as f64;
    if c.timer_irq_ns >= tick_ns / 2.0 {
        return Err(bad(
            "costs.timer_irq_ns",
            format!(
                "{} ns would take half of every tick or more ({tick_ns} ns at HZ={}): an interrupt must be much shorter than the tick",
                c.timer_irq_ns, p.clock.hz
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_load() {
        for (name, _) in BUILTIN_PROFILES {
            let m = Machine::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(m.ncpus() >= 1);
            assert_eq!(m.topology.core.len(), m.ncpus());
        }
        assert_eq!(Machine::load("smp8-2002").unwrap().ncpus(), 8);
        let a = Machine::load("athlonmp2-2007").unwrap();
        assert_eq!((a.ncpus(), a.hz()), (2, 250));
        assert_eq!(Machine::load("up-2002").unwrap().ncpus(), 1);
    }

    #[test]
    fn bad_profiles_are_rejected_with_the_field() {
        let text = BUILTIN_PROFILES[1].1.replace("cpus = 2", "cpus = 0");
        let e = Machine::from_toml(&text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("topology.cpus"), "{e}");
        let e = Machine::from_toml("name = 3", "y.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("y.toml"), "{e}");
        let e = Machine::load("no-such-machine").unwrap_err().to_string();
        assert!(e.contains("smp8-2002"), "{e}");
    }

    #[test]
    fn topology_from_spec() {
        let t = Topology::from_spec(&TopologySpec {
            cpus: 8,
            threads_per_core: 2,
            cpus_per_cache: 4,
            cpus_per_node: Some(4),
        });
        assert!(
            t.core[0] == t.core[1] && t.core[1] != t.core[2],
            "SMT siblings share a core"
        );
        assert!(t.cache[0] == t.cache[3] && t.cache[3] != t.cache[4]);
        assert_eq!(t.node[5], 1);
        assert_eq!(t.ncaches(), 2);
    }
}
