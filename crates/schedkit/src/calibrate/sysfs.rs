//! The machine's topology, caches and cpufreq P-states as `/sys` describes them, read through
//! a [`ReadFn`] so that tests give hand-made files.

use super::*;

/// `/sys` and `/proc` as text files (a closure over the real files, or a map in tests).
pub type ReadFn<'a> = &'a dyn Fn(&str) -> Option<String>;

/// One cache level as /sys describes it for a CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheInfo {
    pub index: usize,
    pub level: u32,
    pub size_kb: u64,
    pub shared: Vec<usize>,
    pub shared_text: String,
}

/// The topology facts of the machine, each with how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoFacts {
    pub cpus: usize,
    pub cpus_note: String,
    pub threads_per_core: usize,
    pub threads_note: String,
    pub cpus_per_cache: usize,
    pub cache_note: String,
    pub llc_kb: Option<u64>,
    pub llc_note: String,
    /// A separate L2 under the LLC: (CPUs sharing one, its size KB, note).
    pub l2: Option<(usize, u64, String)>,
    pub l2_absent_note: String,
    pub cpus_per_package: usize,
    pub package_note: String,
    pub cpus_per_node: usize,
    pub node_note: String,
    /// SMT siblings of each online CPU (to pick two CPUs that are separate cores).
    pub siblings: Vec<Vec<usize>>,
}

/// The caches of `cpu` (data and unified ones), from `cache/index*/`.
fn caches_of(read: ReadFn, cpu: usize) -> Vec<CacheInfo> {
    let base = format!("/sys/devices/system/cpu/cpu{cpu}/cache");
    (0..16)
        .filter_map(|i| {
            let f = |n: &str| read(&format!("{base}/index{i}/{n}"));
            let level = f("level")?.trim().parse().ok()?;
            if f("type").is_some_and(|t| t.trim() == "Instruction") {
                return None;
            }
            let shared_text = f("shared_cpu_list")?.trim().to_string();
            Some(CacheInfo {
                index: i,
                level,
                size_kb: f("size").and_then(|s| parse_size_kb(&s)).unwrap_or(0),
                shared: parse_cpu_list(&shared_text)?,
                shared_text,
            })
        })
        .collect()
}

/// A count that must be the same on every CPU and divide `cpus`: cpu0's where it does (with a
/// note where CPUs differ), `fallback` where it does not.
pub(super) fn uniform(
    counts: &[usize],
    cpus: usize,
    fallback: usize,
    what: &str,
) -> (usize, Option<String>) {
    let first = counts.first().copied().unwrap_or(fallback);
    let differ = counts.iter().any(|&c| c != first);
    if first == 0 || !cpus.is_multiple_of(first) {
        return (
            fallback,
            Some(format!(
                "{what}: cpu0's {first} does not divide {cpus} CPUs, so {fallback} (the profile format needs equal groups)"
            )),
        );
    }
    let note = differ.then(|| {
        let (lo, hi) = (
            counts.iter().min().unwrap_or(&first),
            counts.iter().max().unwrap_or(&first),
        );
        format!("{what} differs between CPUs ({lo}..{hi}): cpu0's is used")
    });
    (first, note)
}

/// Reads the topology from /sys: `online` are the online CPUs (from
/// /sys/devices/system/cpu/online).
pub fn read_topology(read: ReadFn, online: &[usize], online_text: &str) -> TopoFacts {
    let cpus = online.len().max(1);
    let cpu = |c: usize| format!("/sys/devices/system/cpu/cpu{c}");
    let siblings: Vec<Vec<usize>> = online
        .iter()
        .map(|&c| {
            read(&format!("{}/topology/thread_siblings_list", cpu(c)))
                .and_then(|s| parse_cpu_list(&s))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| vec![c])
        })
        .collect();
    let c0 = online.first().copied().unwrap_or(0);
    let mut t = TopoFacts {
        cpus,
        cpus_note: format!("/sys/devices/system/cpu/online: {online_text}"),
        threads_per_core: 1,
        threads_note: String::new(),
        cpus_per_cache: cpus,
        cache_note: String::new(),
        llc_kb: None,
        llc_note: String::new(),
        l2: None,
        l2_absent_note: String::new(),
        cpus_per_package: cpus,
        package_note: String::new(),
        cpus_per_node: cpus,
        node_note: String::new(),
        siblings: siblings.clone(),
    };
    // SMT.
    let counts: Vec<usize> = siblings.iter().map(Vec::len).collect();
    let (n, differ) = uniform(&counts, cpus, 1, "threads per core");
    t.threads_per_core = n;
    t.threads_note = match read(&format!("{}/topology/thread_siblings_list", cpu(c0))) {
        Some(s) => format!("/sys: cpu{c0} topology/thread_siblings_list = {}", s.trim()),
        None => "no topology/thread_siblings_list in /sys: taken as 1".into(),
    };
    if let Some(d) = differ {
        let _ = write!(t.threads_note, "; {d}");
    }
    // Caches: the highest level is the last-level cache; level 2 below it a separate L2.
    let per_cpu: Vec<Vec<CacheInfo>> = online.iter().map(|&c| caches_of(read, c)).collect();
    let llc_of = |v: &Vec<CacheInfo>| v.iter().max_by_key(|c| c.level).cloned();
    match per_cpu.first().and_then(llc_of) {
        Some(llc) => {
            let counts: Vec<usize> = per_cpu
                .iter()
                .map(|v| llc_of(v).map_or(1, |c| c.shared.len()))
                .collect();
            let (n, differ) = uniform(&counts, cpus, cpus, "CPUs per last-level cache");
            t.cpus_per_cache = n;
            t.cache_note = format!(
                "/sys: cpu{c0} cache/index{} (L{}, {}K) shared_cpu_list = {}",
                llc.index, llc.level, llc.size_kb, llc.shared_text
            );
            if let Some(d) = differ {
                let _ = write!(t.cache_note, "; {d}");
            }
            if llc.size_kb > 0 {
                t.llc_kb = Some(llc.size_kb);
                t.llc_note = format!(
                    "/sys: cpu{c0} cache/index{} size (the last level, L{})",
                    llc.index, llc.level
                );
            }
            let l2 = per_cpu[0]
                .iter()
                .find(|c| c.level == 2 && c.level < llc.level)
                .cloned();
            match l2 {
                Some(l2) if l2.size_kb > 0 && l2.size_kb < llc.size_kb => {
                    let counts: Vec<usize> = per_cpu
                        .iter()
                        .map(|v| {
                            v.iter()
                                .find(|c| c.level == 2)
                                .map_or(1, |c| c.shared.len())
                        })
                        .collect();
                    let (n, differ) = uniform(&counts, cpus, 1, "CPUs per L2");
                    if n < t.cpus_per_cache && t.cpus_per_cache.is_multiple_of(n) {
                        let mut note = format!(
                            "/sys: cpu{c0} cache/index{} (L2, {}K) shared_cpu_list = {}",
                            l2.index, l2.size_kb, l2.shared_text
                        );
                        if let Some(d) = differ {
                            let _ = write!(note, "; {d}");
                        }
                        t.l2 = Some((n, l2.size_kb, note));
                    } else {
                        t.l2_absent_note = format!(
                            "the L2 ({}K, {n} CPUs each) is shared as widely as the last-level cache ({} CPUs): one level is modelled",
                            l2.size_kb, t.cpus_per_cache
                        );
                    }
                }
                _ => {
                    t.l2_absent_note = format!(
                        "no separate L2 under the L{} in /sys: one cache level is modelled",
                        llc.level
                    )
                }
            }
        }
        None => {
            t.cache_note =
                "no cache/index*/ in /sys: all CPUs taken to share one last-level cache".into();
            t.l2_absent_note = "no cache levels in /sys: one level is modelled".into();
        }
    }
    // Packages.
    let pkgs: Vec<Option<String>> = online
        .iter()
        .map(|&c| {
            read(&format!("{}/topology/physical_package_id", cpu(c))).map(|s| s.trim().into())
        })
        .collect();
    if pkgs.iter().all(Option::is_some) {
        let counts: Vec<usize> = pkgs
            .iter()
            .map(|p| pkgs.iter().filter(|q| *q == p).count())
            .collect();
        let npkg = {
            let mut v: Vec<&Option<String>> = pkgs.iter().collect();
            v.sort();
            v.dedup();
            v.len()
        };
        let (n, differ) = uniform(&counts, cpus, cpus, "CPUs per package");
        t.cpus_per_package = n;
        t.package_note = format!(
            "/sys: topology/physical_package_id, {npkg} package{}",
            if npkg == 1 { "" } else { "s" }
        );
        if let Some(d) = differ {
            let _ = write!(t.package_note, "; {d}");
        }
    } else {
        t.package_note = "no topology/physical_package_id in /sys: one package".into();
    }
    // NUMA nodes.
    let nodes: Vec<Vec<usize>> = (0..1024)
        .map_while(|n| {
            read(&format!("/sys/devices/system/node/node{n}/cpulist"))
                .and_then(|s| parse_cpu_list(&s))
        })
        .collect();
    let nodes: Vec<Vec<usize>> = nodes.into_iter().filter(|v| !v.is_empty()).collect();
    if nodes.is_empty() {
        t.node_note = "no /sys/devices/system/node: one node".into();
    } else {
        let counts: Vec<usize> = online
            .iter()
            .map(|c| {
                nodes
                    .iter()
                    .find(|v| v.contains(c))
                    .map_or(cpus, |v| v.iter().filter(|x| online.contains(x)).count())
            })
            .collect();
        let (n, differ) = uniform(&counts, cpus, cpus, "CPUs per node");
        t.cpus_per_node = n;
        t.node_note = format!(
            "/sys/devices/system/node: {} node{} with CPUs",
            nodes.len(),
            if nodes.len() == 1 { "" } else { "s" }
        );
        if let Some(d) = differ {
            let _ = write!(t.node_note, "; {d}");
        }
    }
    t
}

/// The cpufreq facts `host` reads (cpu0's policy), for a `[cpufreq]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct CpufreqFacts {
    pub pstates_mhz: Vec<f64>,
    pub pstates_note: String,
    pub package: bool,
    pub related: String,
    pub governor: &'static str,
    pub governor_note: String,
    pub transition_ns: f64,
    pub transition_note: String,
}

/// cpufreq's sysfs as `Machine::load("host")` reads it: `scaling_available_frequencies`,
/// else `cpuinfo_min_freq`/`cpuinfo_max_freq`; `None` where there is no cpufreq (most VMs).
pub fn read_cpufreq(read: ReadFn) -> Option<CpufreqFacts> {
    let base = "/sys/devices/system/cpu/cpu0/cpufreq";
    let khz = |f: &str| read(&format!("{base}/{f}")).and_then(|s| s.trim().parse::<f64>().ok());
    let mut mhz: Vec<f64> = read(&format!("{base}/scaling_available_frequencies"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|x| x.parse::<f64>().ok())
                .map(|k| k / 1000.0)
                .collect()
        })
        .unwrap_or_default();
    let mut note = "/sys: cpu0 cpufreq/scaling_available_frequencies".to_string();
    if mhz.is_empty() {
        mhz = vec![
            khz("cpuinfo_min_freq")? / 1000.0,
            khz("cpuinfo_max_freq")? / 1000.0,
        ];
        note = "/sys: cpu0 cpufreq/cpuinfo_min_freq and cpuinfo_max_freq (the driver lists no others; the maximum may be a turbo clock)".into();
    }
    mhz.sort_by(f64::total_cmp);
    mhz.dedup();
    if mhz.is_empty() || mhz.iter().any(|m| !(1.0..=100_000.0).contains(m)) || mhz.len() > 64 {
        return None;
    }
    let related = read(&format!("{base}/related_cpus"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let gov_text = read(&format!("{base}/scaling_governor"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let (governor, governor_note) = match crate::machine::Governor::parse(&gov_text) {
        Ok(g) => (g.name(), format!("/sys: cpu0 cpufreq/scaling_governor = {gov_text}")),
        Err(_) => (
            "performance",
            format!("/sys: cpu0 cpufreq/scaling_governor = '{gov_text}', which schedkit does not model: performance, as host"),
        ),
    };
    let (transition_ns, transition_note) =
        match khz("cpuinfo_transition_latency").filter(|l| (0.0..=10_000_000.0).contains(l)) {
            Some(l) => (
                l,
                "/sys: cpu0 cpufreq/cpuinfo_transition_latency".to_string(),
            ),
            None => (
                10_000.0,
                "estimate: the driver gives no transition latency; 10 us, as host".to_string(),
            ),
        };
    Some(CpufreqFacts {
        pstates_mhz: mhz,
        pstates_note: note,
        package: related.split_whitespace().count() > 2,
        related,
        governor,
        governor_note,
        transition_ns,
        transition_note,
    })
}
