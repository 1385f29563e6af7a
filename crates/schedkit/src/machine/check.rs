//! A profile's validation: every count dividing the CPUs, every number within a physically
//! sensible range, the sections consistent with each other; each error names the field
//! (`MachineError::Invalid`).

use super::{MachineError, MachineProfile};
use crate::task::CpuMask;

/// The fastest clock a profile may state. No processor has run at 10 GHz (overclocking
/// records are about 9 GHz).
pub const MAX_MHZ: f64 = 10_000.0;

pub(super) fn validate(p: &MachineProfile, origin: &str) -> Result<(), MachineError> {
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
    ranged("clock.mhz", p.clock.mhz, 1.0, MAX_MHZ, "MHz")?;
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
    for (field, v) in [
        ("costs.llc_transfer_ns", c.llc_transfer_ns),
        ("costs.cross_llc_transfer_ns", c.cross_llc_transfer_ns),
    ] {
        if let Some(v) = v {
            ranged(field, v, 0.0, 10_000.0, "ns")?;
        }
    }
    if let Some(n) = &p.numa {
        if p.interconnect.is_some() {
            return Err(bad(
                "numa",
                "is not modelled together with [interconnect] (the shared-bus coherence model prices every line itself); give one or the other".into(),
            ));
        }
        let per_node = t.cpus_per_node.unwrap_or(t.cpus);
        let nodes = t.cpus / per_node.max(1);
        if n.distance.len() != nodes {
            return Err(bad(
                "numa.distance",
                format!(
                    "must have one row per node ({nodes}: topology.cpus {} / cpus_per_node {per_node}), got {}",
                    t.cpus,
                    n.distance.len()
                ),
            ));
        }
        for (a, row) in n.distance.iter().enumerate() {
            if row.len() != nodes {
                return Err(bad(
                    &format!("numa.distance[{a}]"),
                    format!(
                        "must have {nodes} entries (one per node), got {}",
                        row.len()
                    ),
                ));
            }
            for (b, &d) in row.iter().enumerate() {
                let ok = if a == b {
                    d == super::LOCAL_DISTANCE
                } else {
                    (super::LOCAL_DISTANCE + 1..=254).contains(&d) && n.distance[b][a] == d
                };
                if !ok {
                    return Err(bad(
                        &format!("numa.distance[{a}][{b}]"),
                        format!(
                            "got {d}: a node's distance to itself is 10 (LOCAL_DISTANCE), to another node 11..=254, the same both ways (the ACPI SLIT's rules)"
                        ),
                    ));
                }
            }
        }
        ranged(
            "numa.remote_mem_latency_ns",
            n.remote_mem_latency_ns,
            0.0,
            10_000.0,
            "ns",
        )?;
        ranged(
            "numa.remote_mem_read_mb_s",
            n.remote_mem_read_mb_s,
            1.0,
            10_000_000.0,
            "MB/s",
        )?;
        ranged(
            "numa.remote_transfer_ns",
            n.remote_transfer_ns,
            0.0,
            10_000.0,
            "ns",
        )?;
    }
    if let Some(e) = &p.era {
        if e.is_empty() || e.len() > 40 || e.chars().any(|c| c.is_control()) {
            return Err(bad(
                "era",
                "must be a short label (1..=40 characters, no control characters)".into(),
            ));
        }
    }
    if let Some(types) = &p.core_types {
        check_core_types(p, types, &bad, &ranged)?;
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

/// `[[core_type]]`: the types cover the CPUs, each count divides its type's CPUs, each number
/// in range, and the sections the hybrid model needs are there.
fn check_core_types(
    p: &MachineProfile,
    types: &[super::CoreTypeSpec],
    bad: &dyn Fn(&str, String) -> MachineError,
    ranged: &dyn Fn(&str, f64, f64, f64, &str) -> Result<(), MachineError>,
) -> Result<(), MachineError> {
    let t = &p.topology;
    if types.is_empty() {
        return Err(bad("core_type", "give at least one [[core_type]]".into()));
    }
    let total: usize = types.iter().map(|c| c.cpus).sum();
    if total != t.cpus {
        return Err(bad(
            "core_type.cpus",
            format!(
                "the core types' CPUs add up to {total}, but topology.cpus is {}",
                t.cpus
            ),
        ));
    }
    if t.threads_per_core != 1 || t.cpus_per_l2.is_some() {
        return Err(bad(
            "topology.threads_per_core",
            "with [[core_type]], give threads_per_core and cpus_per_l2 per core type, not in [topology]".into(),
        ));
    }
    if p.cpufreq.is_none() {
        return Err(bad(
            "cpufreq",
            "a hybrid profile needs [cpufreq] (its transition latency and default governor)".into(),
        ));
    }
    for (i, c) in types.iter().enumerate() {
        let f = |name: &str| format!("core_type[{i}].{name}");
        let tpc = c.threads_per_core;
        let per_l2 = c.cpus_per_l2.unwrap_or(tpc);
        for (name, v) in [
            ("threads_per_core", tpc),
            ("cpus_per_l2", per_l2),
            ("cpus_per_freq_domain", c.cpus_per_freq_domain),
        ] {
            if c.cpus == 0 || v == 0 || !c.cpus.is_multiple_of(v) || !v.is_multiple_of(tpc.max(1)) {
                return Err(bad(
                    &f(name),
                    format!(
                        "must divide the type's cpus ({}) and be a multiple of its threads_per_core ({tpc}), got {v}",
                        c.cpus
                    ),
                ));
            }
        }
        ranged(&f("perf_per_mhz"), c.perf_per_mhz, 0.01, 10.0, "")?;
        if let Some(d) = c.capacity_dmips_mhz {
            ranged(&f("capacity_dmips_mhz"), d as f64, 1.0, 100_000.0, "")?;
        }
        if c.pstates_mhz.is_empty() {
            return Err(bad(&f("pstates_mhz"), "give at least one P-state".into()));
        }
        for (k, &m) in c.pstates_mhz.iter().enumerate() {
            ranged(&f(&format!("pstates_mhz[{k}]")), m, 1.0, 10_000.0, "MHz")?;
        }
        if c.pstates_mhz.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad(&f("pstates_mhz"), "must be strictly ascending".into()));
        }
        if let Some(v) = &c.volts {
            if v.len() != c.pstates_mhz.len() {
                return Err(bad(
                    &f("volts"),
                    format!(
                        "needs one voltage per P-state ({}), got {}",
                        c.pstates_mhz.len(),
                        v.len()
                    ),
                ));
            }
            for (k, &x) in v.iter().enumerate() {
                ranged(&f(&format!("volts[{k}]")), x, 0.3, 2.0, "V")?;
            }
        }
        if let Some(pr) = &c.itmt_priority {
            let cores = c.cpus / tpc.max(1);
            if pr.len() != cores {
                return Err(bad(
                    &f("itmt_priority"),
                    format!("needs one priority per core ({cores}), got {}", pr.len()),
                ));
            }
            if let Some(&x) = pr.iter().find(|&&x| x == 0 || x > 255) {
                return Err(bad(
                    &f("itmt_priority"),
                    format!("each must be 1..=255 (an HWP performance level), got {x}"),
                ));
            }
        }
        if let Some(dpc) = c.dynamic_power_coefficient {
            ranged(
                &f("dynamic_power_coefficient"),
                dpc as f64,
                1.0,
                100_000.0,
                "uW/MHz/V^2",
            )?;
            if c.volts.is_none() {
                return Err(bad(
                    &f("volts"),
                    "a dynamic_power_coefficient needs the P-states' voltages".into(),
                ));
            }
        }
        if let Some(w) = c.core_active_w {
            ranged(&f("core_active_w"), w, 0.0, 1000.0, "W")?;
        }
        ranged(&f("core_idle_w"), c.core_idle_w, 0.0, 1000.0, "W")?;
        if p.power.is_some() && c.core_active_w.is_none() && c.dynamic_power_coefficient.is_none() {
            return Err(bad(
                &f("core_active_w"),
                "with [power], each core type needs core_active_w or a dynamic_power_coefficient"
                    .into(),
            ));
        }
    }
    Ok(())
}
