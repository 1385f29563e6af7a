//! Unit tests of machine profiles: the shipped ones load with the shapes their sources give,
//! bad ones are refused naming the field, a topology from its spec.

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

/// Hybrid profiles: capacity from capacity-dmips-mhz x top frequency normalised to 1024
/// (`topology_normalize_cpu_scale`), the Energy Model's power and cost per OPP
/// (`dev_pm_opp_calc_power`, `em_compute_costs`), x86 with SMT at 1024 with ITMT packing.
#[test]
fn hybrid_profiles_derive_capacity_priorities_and_energy_model() {
    let m = Machine::load("exynos5422").unwrap();
    let t = &m.topology;
    // 539 * 1_400_000 << 10 / (1024 * 2_000_000) = 377.3 -> 377.
    assert_eq!(t.capacity, vec![377, 377, 377, 377, 1024, 1024, 1024, 1024]);
    assert!(t.asym_capacity && !t.asym_packing);
    assert_eq!(t.cache, vec![0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(t.em.len(), 2);
    assert_eq!(t.em[0].cpus, vec![0, 1, 2, 3]);
    let top_a15 = t.em[1].states.last().unwrap();
    // 310 * 1312^2 * 2000 / 10^6 = 1_067_233 µW; cost = 10 * power / 1024.
    assert_eq!(top_a15.power_uw, 1_067_233);
    assert_eq!(top_a15.performance, 1024);
    assert_eq!(top_a15.cost, 10_422);
    let top_a7 = t.em[0].states.last().unwrap();
    // 90 * 1275^2 * 1400 / 10^6 = 204_828 µW at performance 377.
    assert_eq!((top_a7.power_uw, top_a7.performance), (204_828, 377));
    // The A7 at 200 MHz: performance 377 * 200000 / 1400000 = 53.
    assert_eq!(t.em[0].states[0].performance, 53);

    let a = Machine::load("alderlake-12900k").unwrap();
    let t = &a.topology;
    assert_eq!(t.ncpus, 24);
    // P-core threads paired, E-cores one each.
    assert_eq!(t.core[0], t.core[1]);
    assert_ne!(t.core[16], t.core[17]);
    assert_eq!(t.ncores(), 16);
    assert_eq!(t.l2[16], t.l2[19]);
    assert_ne!(t.l2[19], t.l2[20]);
    assert!(
        t.capacity.iter().all(|&c| c == 1024),
        "SMT: no capacity scaling"
    );
    assert!(t.asym_packing && !t.asym_capacity && t.em.is_empty());
    assert_eq!(
        (t.asym_prio[4], t.asym_prio[5], t.asym_prio[0]),
        (66, 66, 65)
    );
    assert_eq!(t.asym_prio[16], 39);
    // The symmetric machines are as before.
    let i7 = Machine::load("i7-m620").unwrap();
    assert!(!i7.topology.asym_capacity && !i7.topology.asym_packing);
    assert!(i7.topology.capacity.iter().all(|&c| c == 1024));
}

#[test]
fn bad_core_types_name_their_field() {
    let text = BUILTIN_PROFILES
        .iter()
        .find(|(n, _)| *n == "exynos5422")
        .unwrap()
        .1;
    let e = Machine::from_toml(&text.replacen("cpus = 4 ", "cpus = 3 ", 1), "x").unwrap_err();
    assert!(e.to_string().contains("core_type"), "{e}");
    let e = Machine::from_toml(
        &text.replacen(
            "dynamic_power_coefficient = 90",
            "dynamic_power_coefficient = 0",
            1,
        ),
        "x",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("core_type[0].dynamic_power_coefficient"),
        "{e}"
    );
}
