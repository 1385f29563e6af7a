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
    ("i7-m620", include_str!("../../../profiles/i7-m620.toml")),
    (
        "xeon-x3360",
        include_str!("../../../profiles/xeon-x3360.toml"),
    ),
    (
        "phenom-x6",
        include_str!("../../../profiles/phenom-x6.toml"),
    ),
    (
        "prescott-ht",
        include_str!("../../../profiles/prescott-ht.toml"),
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
    /// Logical CPUs sharing one L2 cache, where the L2 is not the last level (default: the
    /// threads of a core when the LLC is shared more widely, else the LLC itself).
    #[serde(default)]
    pub cpus_per_l2: Option<usize>,
    /// Logical CPUs per package (socket), which turbo bins count busy cores in (default: all).
    #[serde(default)]
    pub cpus_per_package: Option<usize>,
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
    /// Size of each L2 cache, KB, where the L2 is a separate level narrower than the LLC
    /// (a core's own L2 under a shared L3): cache warmth then follows both levels. Absent:
    /// one level (the L2 is the LLC, or is not modelled).
    #[serde(default)]
    pub l2_kb: Option<u64>,
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
    /// Sustained read bandwidth from the last-level cache into a core's L2, MB/s: refilling
    /// an L2 from a warm LLC (needed with `cache.l2_kb`).
    #[serde(default)]
    pub llc_read_mb_s: Option<f64>,
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
    /// The receiving CPU's handling of an IPI (interrupt entry and exit). A profile without it
    /// prices an IPI's handling as a timer interrupt's (`timer_irq_ns`), as every profile did
    /// before; in a VM whose tick is the hypervisor's, the two differ.
    #[serde(default)]
    pub ipi_irq_ns: Option<f64>,
    /// The part of a timer interrupt that comes after its handler has woken a sleeping task:
    /// the rest of `hrtimer_interrupt` (reprogramming the clock event device), the EOI and the
    /// exit from the interrupt, up to the schedule() it returns through. A profile that has it
    /// gives every timed sleep an interrupt of its own on the sleeper's CPU, as high-resolution
    /// timers do (v2.6.21 on): `timer_irq_ns` in all, the wakeup this far from its end, and on
    /// an idle CPU the exit from idle before the handler runs. A profile without it keeps the
    /// older model (a sleep ends with no interrupt of its own priced, as timers did when the
    /// tick ran them).
    #[serde(default)]
    pub timer_wake_exit_ns: Option<f64>,
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
    /// A write-protect (copy-on-write) fault without its copy: entry, `do_wp_page`, exit. A
    /// profile that gives it gets the fork/exec/exit model of address spaces (`sim/mm.rs`).
    #[serde(default)]
    pub cow_fault_ns: Option<f64>,
}

/// Simultaneous multithreading: what a thread loses while its sibling runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SmtSpec {
    /// Throughput of one thread while its sibling thread is busy, as a fraction of the
    /// thread running alone on the core (both busy: twice this, the core's SMT gain).
    pub busy_sibling_factor: f64,
}

/// Which CPUs change frequency together, and who decides.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FreqDomain {
    /// Each core has its own P-state (SMT siblings share it), chosen by one governor policy.
    Core,
    /// All cores of a package share one P-state, chosen by one governor policy for them all.
    Package,
    /// Hardware coordination (ACPI `_PSD` HW_ALL, which acpi-cpufreq turns into one cpufreq
    /// policy per logical CPU): each CPU's governor requests a P-state of its own, and the
    /// package runs at the highest request among its busy CPUs. A CPU counts as throttled
    /// (`cpu_scaling`) by its own request.
    Hw,
}

/// The cpufreq governors the simulator models.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Governor {
    /// Always the highest P-state (turbo when the hardware grants it).
    Performance,
    /// Always the lowest P-state.
    Powersave,
    /// Linux 2.6.38's `cpufreq_ondemand`: sample every `sampling_rate`, jump to the maximum
    /// above `up_threshold`, step down to the lowest frequency that keeps the load under
    /// `up_threshold - down_differential`.
    Ondemand,
    /// Linux 4.7+'s `schedutil`: `1.25 * cur * util / max` from the CPU's PELT utilisation,
    /// at most once per rate limit.
    Schedutil,
}

impl Governor {
    pub const ALL: [Governor; 4] = [
        Governor::Performance,
        Governor::Powersave,
        Governor::Ondemand,
        Governor::Schedutil,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Governor::Performance => "performance",
            Governor::Powersave => "powersave",
            Governor::Ondemand => "ondemand",
            Governor::Schedutil => "schedutil",
        }
    }

    pub fn parse(s: &str) -> Result<Governor, String> {
        let s = s.trim().to_ascii_lowercase();
        Governor::ALL
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown governor '{s}' (known: performance, powersave, ondemand, schedutil)"
                )
            })
    }
}

impl std::fmt::Display for Governor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Frequency scaling: the P-states, who shares them, turbo, and the default governor.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CpufreqSpec {
    /// Which CPUs share a P-state.
    pub domain: FreqDomain,
    /// The P-states' frequencies, MHz, ascending; the last is the highest non-turbo state
    /// (the profile's `clock.mhz`, at which workload work is measured).
    pub pstates_mhz: Vec<f64>,
    /// Core voltage at each P-state, V (for the energy model; absent: dynamic power is
    /// taken as proportional to frequency alone).
    #[serde(default)]
    pub volts: Option<Vec<f64>>,
    /// Time from a governor's request to the new frequency.
    pub transition_latency_ns: f64,
    /// The governor a run uses unless `--governor` says otherwise.
    pub default_governor: Governor,
    /// Turbo: the frequency of a busy core at the top P-state by the number of busy cores in
    /// its package (entry 0: one busy core); absent, no turbo.
    #[serde(default)]
    pub turbo_mhz: Option<Vec<f64>>,
    /// Core voltage at the highest turbo bin, V (voltage of the bins between is interpolated
    /// linearly in frequency); absent: the top P-state's.
    #[serde(default)]
    pub turbo_volts: Option<f64>,
}

/// Power: what the energy figures are made of.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// Power of one busy core at the top non-turbo P-state, W (dynamic plus leakage).
    pub core_active_w: f64,
    /// Power of one idle core in its idle (C-) state, W.
    pub core_idle_w: f64,
    /// Power of everything else in the package (uncore, memory controller), W, always drawn.
    pub uncore_w: f64,
}

/// The front-side bus and cache coherence of a shared-bus SMP (Pentium III era): what a
/// cache line costs when it moves between CPUs, and how transfers queue for the bus. A
/// profile with this section gets the coherence directory of kernel data and bus queueing
/// (`sim/interconnect.rs`); one without it runs as before.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InterconnectSpec {
    /// Cache line size, bytes.
    pub line_bytes: u32,
    /// Bus clock, MHz, and data width, bytes: a line's data phase takes
    /// `line_bytes / bus_width_bytes` bus clocks, the bus time one transfer occupies.
    pub bus_mhz: f64,
    pub bus_width_bytes: u32,
    /// CPUs sharing one bus (a ProFusion 8-way has two buses of four).
    pub cpus_per_bus: usize,
    /// Latency of a line supplied by another CPU's cache (a snoop hit on a Modified line), ns.
    pub transfer_ns: f64,
    /// Extra latency when the line crosses from one bus to the other, ns (0 with one bus).
    #[serde(default)]
    pub cross_bus_ns: f64,
    /// Bus clocks an invalidation (an address-only transaction) occupies.
    pub invalidate_clocks: f64,
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
    /// SMT throughput sharing (absent: siblings do not slow each other).
    #[serde(default)]
    pub smt: Option<SmtSpec>,
    /// Frequency scaling (absent: every CPU runs at `clock.mhz` always, as the 2002 machines).
    #[serde(default)]
    pub cpufreq: Option<CpufreqSpec>,
    /// Energy model (absent: no energy figures).
    #[serde(default)]
    pub power: Option<PowerSpec>,
    /// Shared-bus coherence (absent: kernel data lines are free, as before).
    #[serde(default)]
    pub interconnect: Option<InterconnectSpec>,
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
    /// L2 cache of each CPU (the LLC where there is no separate L2).
    pub l2: Vec<usize>,
    /// Package (socket) of each CPU.
    pub package: Vec<usize>,
}

impl Topology {
    pub fn from_spec(s: &TopologySpec) -> Topology {
        let n = s.cpus;
        let per_node = s.cpus_per_node.unwrap_or(n).max(1);
        let per_l2 = s
            .cpus_per_l2
            .unwrap_or(s.threads_per_core.min(s.cpus_per_cache))
            .max(1);
        let per_pkg = s.cpus_per_package.unwrap_or(n).max(1);
        Topology {
            ncpus: n,
            core: (0..n).map(|c| c / s.threads_per_core.max(1)).collect(),
            cache: (0..n).map(|c| c / s.cpus_per_cache.max(1)).collect(),
            node: (0..n).map(|c| c / per_node).collect(),
            l2: (0..n).map(|c| c / per_l2).collect(),
            package: (0..n).map(|c| c / per_pkg).collect(),
        }
    }

    /// A flat SMP machine of `n` CPUs, each with its own cache.
    pub fn flat(n: usize) -> Topology {
        Topology::from_spec(&TopologySpec {
            cpus: n,
            threads_per_core: 1,
            cpus_per_cache: 1,
            cpus_per_node: None,
            cpus_per_l2: None,
            cpus_per_package: None,
        })
    }

    /// Physical cores (`core` numbers run 0..ncores).
    pub fn ncores(&self) -> usize {
        self.core.iter().copied().max().map_or(0, |m| m + 1)
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
        let mut l2 = Vec::with_capacity(ncpus);
        let mut package = Vec::with_capacity(ncpus);
        let mut core_keys: Vec<String> = Vec::new();
        let mut cache_keys: Vec<String> = Vec::new();
        let mut l2_keys: Vec<String> = Vec::new();
        let mut pkg_keys: Vec<String> = Vec::new();
        let key_of = |keys: &mut Vec<String>, k: String| {
            keys.iter().position(|x| *x == k).unwrap_or_else(|| {
                keys.push(k);
                keys.len() - 1
            })
        };
        for c in 0..ncpus {
            let base = format!("/sys/devices/system/cpu/cpu{c}");
            let sib =
                read(format!("{base}/topology/thread_siblings_list")).unwrap_or(c.to_string());
            let pkg = read(format!("{base}/topology/physical_package_id")).unwrap_or_default();
            let key = format!("{pkg}/{sib}");
            core.push(key_of(&mut core_keys, key));
            // The highest cache index is the last-level cache.
            let mut llc = c.to_string();
            for idx in (0..8).rev() {
                if let Some(s) = read(format!("{base}/cache/index{idx}/shared_cpu_list")) {
                    llc = s;
                    break;
                }
            }
            cache.push(key_of(&mut cache_keys, llc));
            // The L2: the cache index whose level is 2 (a core's own where the LLC is wider).
            let l2_list = (0..8)
                .find(|idx| read(format!("{base}/cache/index{idx}/level")).as_deref() == Some("2"))
                .and_then(|idx| read(format!("{base}/cache/index{idx}/shared_cpu_list")))
                .unwrap_or_else(|| format!("{pkg}/{sib}"));
            l2.push(key_of(&mut l2_keys, l2_list));
            package.push(key_of(&mut pkg_keys, pkg.clone()));
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
            l2,
            package,
        };
        self.profile.topology.cpus = ncpus;
        self.profile.cpufreq = read_host_cpufreq(&read);
        if let Some(top) = self
            .profile
            .cpufreq
            .as_ref()
            .and_then(|f| f.pstates_mhz.last())
        {
            // Work is measured at the top P-state, as in every profile with frequency scaling.
            self.profile.clock.mhz = *top;
        }
        if let Some(kb) = read("/sys/devices/system/cpu/cpu0/cache/index3/size".into())
            .or_else(|| read("/sys/devices/system/cpu/cpu0/cache/index2/size".into()))
            .and_then(|s| s.trim_end_matches('K').parse::<u64>().ok())
        {
            self.profile.cache.size_kb = kb;
        }
    }
}

/// The host's P-states from cpufreq's sysfs (cpu0's policy): `scaling_available_frequencies`
/// where the driver lists them (acpi-cpufreq), else the `cpuinfo_min_freq`/`cpuinfo_max_freq`
/// pair (intel_pstate, whose maximum includes turbo). `None` where the machine exposes no
/// cpufreq (most VMs): then every CPU runs at `clock.mhz`.
fn read_host_cpufreq(read: &dyn Fn(String) -> Option<String>) -> Option<CpufreqSpec> {
    let base = "/sys/devices/system/cpu/cpu0/cpufreq";
    let khz = |f: &str| read(format!("{base}/{f}")).and_then(|s| s.parse::<f64>().ok());
    let mut mhz: Vec<f64> = read(format!("{base}/scaling_available_frequencies"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|x| x.parse::<f64>().ok())
                .map(|k| k / 1000.0)
                .collect()
        })
        .unwrap_or_default();
    if mhz.is_empty() {
        mhz = vec![
            khz("cpuinfo_min_freq")? / 1000.0,
            khz("cpuinfo_max_freq")? / 1000.0,
        ];
    }
    mhz.sort_by(|a, b| a.total_cmp(b));
    mhz.dedup();
    if mhz.iter().any(|m| !(1.0..=100_000.0).contains(m)) {
        return None;
    }
    let shared = read(format!("{base}/related_cpus")).unwrap_or_default();
    let governor = read(format!("{base}/scaling_governor"))
        .and_then(|g| Governor::parse(&g).ok())
        .unwrap_or(Governor::Performance);
    Some(CpufreqSpec {
        domain: if shared.split_whitespace().count() > 2 {
            FreqDomain::Package
        } else {
            FreqDomain::Core
        },
        pstates_mhz: mhz,
        volts: None,
        transition_latency_ns: khz("cpuinfo_transition_latency")
            .filter(|l| (0.0..=10_000_000.0).contains(l))
            .unwrap_or(10_000.0),
        default_governor: governor,
        turbo_mhz: None,
        turbo_volts: None,
    })
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
        (
            "topology.cpus_per_l2",
            t.cpus_per_l2.unwrap_or(t.threads_per_core),
        ),
        (
            "topology.cpus_per_package",
            t.cpus_per_package.unwrap_or(t.cpus),
        ),
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
    // No processor has run at 10 GHz (overclocking records are about 9 GHz).
    ranged("clock.mhz", p.clock.mhz, 1.0, 10_000.0, "MHz")?;
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
    match (p.cache.l2_kb, c.llc_read_mb_s) {
        (Some(l2), Some(bw)) => {
            let per_l2 = t
                .cpus_per_l2
                .unwrap_or(t.threads_per_core.min(t.cpus_per_cache));
            if per_l2 >= t.cpus_per_cache || !t.cpus_per_cache.is_multiple_of(per_l2.max(1)) {
                return Err(bad(
                    "cache.l2_kb",
                    format!(
                        "a separate L2 must be shared by fewer CPUs than the last-level cache and nest in it (topology.cpus_per_l2 = {per_l2}, cpus_per_cache = {}); leave l2_kb out where the L2 is the last level",
                        t.cpus_per_cache
                    ),
                ));
            }
            if l2 == 0 || l2 >= p.cache.size_kb {
                return Err(bad(
                    "cache.l2_kb",
                    format!(
                        "must be within 1..{} KB (smaller than the last-level cache), got {l2}",
                        p.cache.size_kb
                    ),
                ));
            }
            ranged("costs.llc_read_mb_s", bw, 1.0, 10_000_000.0, "MB/s")?;
        }
        (Some(_), None) => {
            return Err(bad(
                "costs.llc_read_mb_s",
                "is needed with cache.l2_kb: the rate an L2 refills from the last-level cache"
                    .into(),
            ))
        }
        (None, Some(_)) => {
            return Err(bad(
                "costs.llc_read_mb_s",
                "is only used with cache.l2_kb (a separate L2 level); give both or neither".into(),
            ))
        }
        (None, None) => {}
    }
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
        ("costs.ipi_irq_ns", c.ipi_irq_ns.unwrap_or(0.0)),
    ] {
        ranged(field, v, 0.0, 10_000_000.0, "ns")?;
    }
    if let Some(v) = c.timer_wake_exit_ns {
        ranged("costs.timer_wake_exit_ns", v, 0.0, 1_000_000.0, "ns")?;
        if v > c.timer_irq_ns {
            return Err(bad(
                "costs.timer_wake_exit_ns",
                format!(
                    "is {v} ns, more than the whole timer interrupt (costs.timer_irq_ns = {} ns): it is the part of that interrupt after its handler's wakeup",
                    c.timer_irq_ns
                ),
            ));
        }
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
        ("kernel.cow_fault_ns", k.cow_fault_ns.unwrap_or(0.0)),
    ] {
        ranged(field, v, 0.0, 1_000_000_000.0, "ns")?;
    }
    if let Some(smt) = &p.smt {
        ranged(
            "smt.busy_sibling_factor",
            smt.busy_sibling_factor,
            0.05,
            1.0,
            "",
        )?;
    }
    if let Some(f) = &p.cpufreq {
        let n = f.pstates_mhz.len();
        if n == 0 || n > 64 {
            return Err(bad(
                "cpufreq.pstates_mhz",
                format!("must list 1..=64 frequencies, got {n}"),
            ));
        }
        for (i, &m) in f.pstates_mhz.iter().enumerate() {
            ranged(
                &format!("cpufreq.pstates_mhz[{i}]"),
                m,
                1.0,
                100_000.0,
                "MHz",
            )?;
            if i > 0 && m <= f.pstates_mhz[i - 1] {
                return Err(bad(
                    "cpufreq.pstates_mhz",
                    format!("must ascend; {m} follows {}", f.pstates_mhz[i - 1]),
                ));
            }
        }
        let top = f.pstates_mhz[n - 1];
        if (top - p.clock.mhz).abs() > 0.5 {
            return Err(bad(
                "cpufreq.pstates_mhz",
                format!("the highest P-state ({top} MHz) must be clock.mhz ({} MHz): work is measured at it", p.clock.mhz),
            ));
        }
        if let Some(v) = &f.volts {
            if v.len() != n {
                return Err(bad(
                    "cpufreq.volts",
                    format!("must give one voltage per P-state ({n}), got {}", v.len()),
                ));
            }
            for (i, &x) in v.iter().enumerate() {
                ranged(&format!("cpufreq.volts[{i}]"), x, 0.3, 2.0, "V")?;
                // A faster P-state never runs at a lower voltage (dynamic power is C V^2 f).
                if i > 0 && x < v[i - 1] {
                    return Err(bad(
                        "cpufreq.volts",
                        format!(
                            "must not fall as the frequency rises: {x} V at {} MHz after {} V at {} MHz",
                            f.pstates_mhz[i],
                            v[i - 1],
                            f.pstates_mhz[i - 1]
                        ),
                    ));
                }
            }
        }
        ranged(
            "cpufreq.transition_latency_ns",
            f.transition_latency_ns,
            0.0,
            10_000_000.0,
            "ns",
        )?;
        if let Some(bins) = &f.turbo_mhz {
            let cores_per_pkg = t.cpus_per_package.unwrap_or(t.cpus) / t.threads_per_core.max(1);
            if bins.is_empty() || bins.len() > cores_per_pkg.max(1) {
                return Err(bad(
                    "cpufreq.turbo_mhz",
                    format!(
                        "must give 1..={} bins (one per busy-core count of a package), got {}",
                        cores_per_pkg.max(1),
                        bins.len()
                    ),
                ));
            }
            for (i, &m) in bins.iter().enumerate() {
                ranged(
                    &format!("cpufreq.turbo_mhz[{i}]"),
                    m,
                    top,
                    100_000.0,
                    "MHz (at least the top P-state)",
                )?;
                // More busy cores share the package's power: a bin never rises with them.
                if i > 0 && m > bins[i - 1] {
                    return Err(bad(
                        "cpufreq.turbo_mhz",
                        format!(
                            "must not rise with more busy cores: {m} MHz with {} busy after {} MHz with {i}",
                            i + 1,
                            bins[i - 1]
                        ),
                    ));
                }
            }
        }
        if let Some(v) = f.turbo_volts {
            ranged("cpufreq.turbo_volts", v, 0.3, 2.0, "V")?;
            if let Some(top_v) = f.volts.as_ref().and_then(|v| v.last()) {
                if v < *top_v {
                    return Err(bad(
                        "cpufreq.turbo_volts",
                        format!("{v} V is below the top P-state's {top_v} V"),
                    ));
                }
            }
        }
    }
    if let Some(w) = &p.power {
        ranged("power.core_active_w", w.core_active_w, 0.0, 1000.0, "W")?;
        ranged(
            "power.core_idle_w",
            w.core_idle_w,
            0.0,
            w.core_active_w,
            "W (at most core_active_w)",
        )?;
        ranged("power.uncore_w", w.uncore_w, 0.0, 1000.0, "W")?;
    }
    if let Some(ic) = &p.interconnect {
        if t.cpus > 64 {
            return Err(bad(
                "interconnect",
                format!(
                    "the coherence model tracks at most 64 CPUs, the profile has {}",
                    t.cpus
                ),
            ));
        }
        if !(4..=1024).contains(&ic.line_bytes) || !ic.line_bytes.is_power_of_two() {
            return Err(bad(
                "interconnect.line_bytes",
                format!(
                    "must be a power of two within 4..=1024, got {}",
                    ic.line_bytes
                ),
            ));
        }
        if ic.bus_width_bytes == 0 || ic.bus_width_bytes > ic.line_bytes {
            return Err(bad(
                "interconnect.bus_width_bytes",
                format!(
                    "must be within 1..={} (the line size), got {}",
                    ic.line_bytes, ic.bus_width_bytes
                ),
            ));
        }
        ranged("interconnect.bus_mhz", ic.bus_mhz, 1.0, 100_000.0, "MHz")?;
        ranged(
            "interconnect.transfer_ns",
            ic.transfer_ns,
            0.0,
            100_000.0,
            "ns",
        )?;
        ranged(
            "interconnect.cross_bus_ns",
            ic.cross_bus_ns,
            0.0,
            100_000.0,
            "ns",
        )?;
        ranged(
            "interconnect.invalidate_clocks",
            ic.invalidate_clocks,
            0.0,
            1000.0,
            "bus clocks",
        )?;
        if ic.cpus_per_bus == 0 || !t.cpus.is_multiple_of(ic.cpus_per_bus) {
            return Err(bad(
                "interconnect.cpus_per_bus",
                format!(
                    "must divide topology.cpus ({}), got {}",
                    t.cpus, ic.cpus_per_bus
                ),
            ));
        }
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
    fn bad_frequency_and_power_figures_name_their_field() {
        let i7 = BUILTIN_PROFILES
            .iter()
            .find(|(n, _)| *n == "i7-m620")
            .unwrap()
            .1;
        for (from, to, field) in [
            (
                "pstates_mhz = [1200, 1333,",
                "pstates_mhz = [1333, 1200,",
                "cpufreq.pstates_mhz",
            ),
            ("mhz = 2667 ", "mhz = 2600 ", "cpufreq.pstates_mhz"),
            ("volts = [0.80, ", "volts = [", "cpufreq.volts"),
            (
                "turbo_mhz = [3333, 3067]",
                "turbo_mhz = [3333, 2000]",
                "cpufreq.turbo_mhz[1]",
            ),
            (
                "turbo_mhz = [3333, 3067]",
                "turbo_mhz = [3333, 3067, 3000]",
                "cpufreq.turbo_mhz",
            ),
            (
                "busy_sibling_factor = 0.65",
                "busy_sibling_factor = 1.5",
                "smt.busy_sibling_factor",
            ),
            (
                "core_idle_w = 0.5 ",
                "core_idle_w = 50.0 ",
                "power.core_idle_w",
            ),
            (
                "default_governor = \"ondemand\"",
                "default_governor = \"fast\"",
                "default_governor",
            ),
            // The L2 level: its size needs the LLC's refill rate, and must be below the LLC's.
            (
                "llc_read_mb_s = 16000.0",
                "# no refill rate",
                "costs.llc_read_mb_s",
            ),
            ("l2_kb = 256 ", "l2_kb = 8192 ", "cache.l2_kb"),
            ("cpus_per_l2 = 2 ", "cpus_per_l2 = 4 ", "cache.l2_kb"),
            // Implausible machines (issue 34): voltage falling as the clock rises, a turbo
            // bin rising with more busy cores, turbo below the top P-state's voltage, a
            // 100 GHz clock.
            (
                "volts = [0.80, 0.827,",
                "volts = [0.80, 0.79,",
                "cpufreq.volts",
            ),
            (
                "turbo_mhz = [3333, 3067]",
                "turbo_mhz = [3067, 3333]",
                "cpufreq.turbo_mhz",
            ),
            (
                "turbo_volts = 1.20",
                "turbo_volts = 1.05",
                "cpufreq.turbo_volts",
            ),
            ("mhz = 2667 ", "mhz = 100000 ", "clock.mhz"),
        ] {
            assert!(i7.contains(from), "{from}");
            let text = i7.replacen(from, to, 1);
            let e = Machine::from_toml(&text, "i7.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(field) && e.contains("i7.toml"),
                "{from} -> {to}: {e}"
            );
        }
        // The shipped profile's facts as the model reads them.
        let m = Machine::load("i7-m620").unwrap();
        assert_eq!(
            (m.topology.ncores(), m.topology.l2[1], m.topology.l2[2]),
            (2, 0, 1)
        );
        assert_eq!(m.topology.cache, vec![0, 0, 0, 0]);
        // A refill rate without an L2 to refill is refused too.
        let up = BUILTIN_PROFILES[0]
            .1
            .replace("[costs]", "[costs]\nllc_read_mb_s = 1000.0");
        let e = Machine::from_toml(&up, "up.toml").unwrap_err().to_string();
        assert!(e.contains("costs.llc_read_mb_s"), "{e}");
    }

    #[test]
    fn the_bfs_era_profiles_have_the_shapes_their_sources_give() {
        // Xeon X3360: two dies of two cores, each die's L2 the last level, one package.
        let x = Machine::load("xeon-x3360").unwrap();
        assert_eq!(x.topology.cache, vec![0, 0, 1, 1]);
        assert_eq!(x.topology.package, vec![0; 4]);
        assert_eq!(x.topology.ncores(), 4);
        assert!(x.profile.smt.is_none() && x.profile.cache.l2_kb.is_none());
        // Phenom II X6: six cores, an L2 each under one L3, per-core P-states, Turbo CORE's
        // boost for at most three busy cores.
        let p = Machine::load("phenom-x6").unwrap();
        assert_eq!(p.topology.l2, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(p.topology.cache, vec![0; 6]);
        let f = p.profile.cpufreq.as_ref().unwrap();
        assert_eq!(f.domain, FreqDomain::Core);
        assert_eq!(
            f.turbo_mhz.as_deref(),
            Some(&[3600.0, 3600.0, 3600.0, 3200.0, 3200.0, 3200.0][..])
        );
        // Prescott: one core, two threads sharing its L2, no frequency scaling.
        let h = Machine::load("prescott-ht").unwrap();
        assert_eq!(h.topology.core, vec![0, 0]);
        assert!(h.profile.cpufreq.is_none() && h.profile.smt.is_some());
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
            cpus_per_l2: None,
            cpus_per_package: None,
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
