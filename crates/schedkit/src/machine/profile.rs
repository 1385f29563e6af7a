//! A machine profile as its TOML file writes it: topology, clock and HZ, caches, hardware
//! and kernel costs, and the optional SMT, cpufreq (with its governors), power and
//! interconnect sections. Types only; `check` validates them. Depends on nothing else in the
//! crate.

use serde::{Deserialize, Serialize};

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
    /// A cache line written by one core and then taken by another core under the same
    /// last-level cache (core-to-core latency within an LLC), ns. Absent: `mem_latency_ns`,
    /// the price of every line transfer before the server profiles.
    #[serde(default)]
    pub llc_transfer_ns: Option<f64>,
    /// The same between cores of one NUMA node under different last-level caches (across
    /// CCXs of one EPYC socket), ns. Absent: `mem_latency_ns`.
    #[serde(default)]
    pub cross_llc_transfer_ns: Option<f64>,
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

/// NUMA: how far the nodes are from each other and what memory and cache lines cost across
/// them. The node of each CPU is `topology.cpus_per_node`'s. A profile without this section
/// keeps the kernel's default distances (`LOCAL_DISTANCE` 10, `REMOTE_DISTANCE` 20,
/// `include/linux/topology.h`) and prices remote memory as local.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NumaSpec {
    /// `node_distance(a, b)`, the firmware's ACPI SLIT: one row per node, 10 on the diagonal.
    pub distance: Vec<Vec<u32>>,
    /// Latency of a load from another node's memory, ns.
    pub remote_mem_latency_ns: f64,
    /// One core's sustained read bandwidth from another node's memory, MB/s: a task whose
    /// memory lives on another node refills its cache at this rate.
    pub remote_mem_read_mb_s: f64,
    /// A cache line written on one node and taken by a core of another (cross-socket
    /// core-to-core latency), ns.
    pub remote_transfer_ns: f64,
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
    /// NUMA distances and remote costs (absent: one node, or nodes as near as local memory).
    #[serde(default)]
    pub numa: Option<NumaSpec>,
    /// Which era's machines it belongs with (`schedkit list machines` groups by it), e.g.
    /// "2002 SMP"; absent: listed under "other".
    #[serde(default)]
    pub era: Option<String>,
    /// Hybrid cores (`[[core_type]]`, absent: every CPU is alike, as before): the CPUs by
    /// type, in CPU-number order, each type with its own performance per clock, P-states,
    /// power and (x86) ITMT priorities. `machine/hybrid.rs` derives what the scheduler sees.
    #[serde(default, rename = "core_type")]
    pub core_types: Option<Vec<CoreTypeSpec>>,
}

/// One type of core of a hybrid machine (a P-core or E-core, a big or LITTLE cluster).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoreTypeSpec {
    /// Name, for tables ("P-core (Golden Cove)").
    pub name: String,
    /// Logical CPUs of this type: the next `cpus` CPU numbers after the previous type's.
    pub cpus: usize,
    /// SMT threads per core of this type.
    #[serde(default = "one")]
    pub threads_per_core: usize,
    /// Logical CPUs sharing one L2 (default: a core's threads).
    #[serde(default)]
    pub cpus_per_l2: Option<usize>,
    /// Logical CPUs sharing one frequency (a cpufreq policy: a cluster, or a core).
    pub cpus_per_freq_domain: usize,
    /// Work per clock cycle relative to the type whose top P-state is `clock.mhz` (the
    /// reference, 1.0): a task's work runs `perf_per_mhz * f / clock.mhz` as fast here.
    pub perf_per_mhz: f64,
    /// The device tree's `capacity-dmips-mhz` (Arm): the scheduler's capacity is it times the
    /// top frequency, normalised to 1024 for the biggest (`topology_normalize_cpu_scale`).
    /// Absent: `perf_per_mhz * 1024`.
    #[serde(default)]
    pub capacity_dmips_mhz: Option<u32>,
    /// P-states (OPPs), MHz, ascending.
    pub pstates_mhz: Vec<f64>,
    /// Voltage at each P-state, V (the Energy Model's and the power model's).
    #[serde(default)]
    pub volts: Option<Vec<f64>>,
    /// x86 ITMT: each core's priority as intel_pstate sets it (`sched_set_itmt_core_prio`
    /// with the core's HWP highest performance), one per core of the type.
    #[serde(default)]
    pub itmt_priority: Option<Vec<u32>>,
    /// The device tree's `dynamic-power-coefficient` (µW/MHz/V²): an Energy Model is
    /// registered from it (`dev_pm_opp_calc_power`: P = C V² f), and a busy core's dynamic
    /// power follows it.
    #[serde(default)]
    pub dynamic_power_coefficient: Option<u32>,
    /// Power of one busy core at the top P-state, W, where no coefficient gives it.
    #[serde(default)]
    pub core_active_w: Option<f64>,
    /// Power of one idle core of this type, W (static power, idle state).
    pub core_idle_w: f64,
}
