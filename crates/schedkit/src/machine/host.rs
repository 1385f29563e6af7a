//! The `host` profile's own machine, read from Linux's `/sys`: the topology (SMT siblings,
//! caches, nodes, packages), the last-level cache's size and the cpufreq P-states and
//! governor. Where `/sys` cannot be read, the shipped `host.toml`'s values stay.

use super::{CpufreqSpec, FreqDomain, Governor, Machine, Topology};
use crate::task::CpuMask;
use std::path::Path;

impl Machine {
    /// Replaces the topology with this machine's, read from /sys (Linux). Leaves the profile's
    /// topology in place where /sys cannot be read.
    pub(super) fn read_host_topology(&mut self) {
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
        let nnodes = node.iter().copied().max().map_or(1, |m| m + 1);
        self.topology = Topology {
            ncpus,
            core,
            cache,
            node,
            l2,
            package,
            node_distance: super::topology::default_distances(nnodes),
            ..Topology::symmetric(ncpus)
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
