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
