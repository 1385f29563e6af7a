//! The speed and power model against hand-computed cases on the i7-m620 profile.

use super::*;

const MS: u64 = 1_000_000;

fn i7() -> Machine {
    Machine::load("i7-m620").expect("shipped profile")
}

/// The i7 with one cpufreq policy for the whole package (software coordination).
fn i7_one_policy() -> Machine {
    let text = crate::machine::BUILTIN_PROFILES
        .iter()
        .find(|(n, _)| *n == "i7-m620")
        .unwrap()
        .1
        .replacen("domain = \"hw\"", "domain = \"package\"", 1);
    Machine::from_toml(&text, "i7-package").unwrap()
}

fn khz(m: &Machine) -> Vec<u64> {
    let f = m.profile.cpufreq.as_ref().unwrap();
    f.pstates_mhz
        .iter()
        .map(|m| (m * 1000.0).round() as u64)
        .collect()
}

#[test]
fn work_and_time_convert_without_losing_work() {
    assert_eq!(work_to_ns(1000, SPEED_ONE), 1000);
    assert_eq!(ns_to_work(1000, SPEED_ONE), 1000);
    // At half speed work takes twice as long; at 1.25 four fifths.
    assert_eq!(work_to_ns(1000, SPEED_ONE / 2), 2000);
    assert_eq!(work_to_ns(1000, SPEED_ONE * 5 / 4), 800);
    for speed in [1, 977, SPEED_ONE / 3, 81_910, SPEED_ONE * 3] {
        for w in [1, 7, 1_000_003, 123_456_789_012] {
            assert!(
                ns_to_work(work_to_ns(w, speed), speed) >= w,
                "{w} at {speed}"
            );
            assert!(
                ns_to_work(work_to_ns(w, speed) - 1, speed) < w,
                "rounded up, not more"
            );
        }
    }
}

#[test]
fn ondemand_jumps_to_max_above_95_and_steps_down_below_92() {
    let t = khz(&i7());
    let top = t.len() - 1;
    // Fully busy at the top: nothing to do.
    assert_eq!(ondemand_next(100 * 2_667_000, top, &t), None);
    // Half busy at the top: load_freq 133 350 000 < 92 * 2 667 000; next = 133 350 000 / 92
    // = 1 449 456 kHz -> the lowest state at or above it, 1467 MHz (index 2).
    assert_eq!(ondemand_next(50 * 2_667_000, top, &t), Some(2));
    // Fully busy at 1467 MHz: 146 700 000 > 95 * 1 467 000 = 139 365 000 -> the maximum.
    assert_eq!(ondemand_next(100 * 1_467_000, 2, &t), Some(top));
    // 93% at 1467 MHz: between 92% and 95% of cur: stay.
    assert_eq!(ondemand_next(93 * 1_467_000, 2, &t), None);
    // Idle at the bottom: nothing below.
    assert_eq!(ondemand_next(0, 0, &t), None);
    // Idle at the top: to the minimum.
    assert_eq!(ondemand_next(0, top, &t), Some(0));
}

#[test]
fn schedutil_asks_for_a_quarter_more_than_the_utilisation() {
    let t = khz(&i7());
    let top = t.len() - 1;
    // util 512 at 2667 MHz: 1.25 * 2 667 000 * 512/1024 = 1 666 875 kHz -> 1733 MHz (index 4).
    assert_eq!(schedutil_next(512, top, &t), Some(4));
    // util 1024: above the top, stays there.
    assert_eq!(schedutil_next(1024, top, &t), None);
    // util 900 at 1733 MHz: 2 166 250 * 900/1024 = 1 903 930 -> 2000 MHz (index 6).
    assert_eq!(schedutil_next(900, 4, &t), Some(6));
}

#[test]
fn turbo_depends_on_the_busy_cores_of_the_package() {
    let m = i7();
    let s = m.profile.cpufreq.as_ref().unwrap();
    let top = s.pstates_mhz.len() - 1;
    assert_eq!(actual_mhz(s, top, 1), 3333.0);
    assert_eq!(actual_mhz(s, top, 2), 3067.0);
    assert_eq!(
        actual_mhz(s, 5, 1),
        1867.0,
        "no turbo below the top P-state"
    );
    assert_eq!(actual_mhz(s, top, 0), 2667.0);
}

#[test]
fn speed_follows_turbo_and_the_smt_sibling() {
    let m = i7();
    let mut f = FreqModel::new(&m, Some(Governor::Performance)).unwrap();
    let speed = |mhz: f64| (mhz / 2667.0 * SPEED_ONE as f64).round() as u32;
    // CPUs 0,1 are core 0's threads; 2,3 core 1's.
    let fx = f.set_busy(0, true, 0);
    assert_eq!(f.speed(0), speed(3333.0), "one busy core: top turbo bin");
    assert!(fx.respeed.contains(&0));
    f.set_busy(1, true, 0);
    let shared =
        ((speed(3333.0) as u64 * (0.65 * SPEED_ONE as f64).round() as u64) >> SPEED_SHIFT) as u32;
    assert_eq!(
        (f.speed(0), f.speed(1)),
        (shared, shared),
        "siblings share the core"
    );
    let fx = f.set_busy(2, true, 0);
    assert_eq!(f.speed(2), speed(3067.0), "two busy cores: the lower bin");
    assert!(
        fx.respeed.contains(&0) && fx.respeed.contains(&1),
        "core 0 slowed too"
    );
    // Without a model (a 2002 profile) every speed is exactly one.
    assert!(FreqModel::new(&Machine::load("smp2-2002").unwrap(), None).is_none());
}

#[test]
fn energy_of_a_known_schedule() {
    let m = i7();
    let mut f = FreqModel::new(&m, Some(Governor::Performance)).unwrap();
    // CPU 0 busy for the first second, everything idle for the second.
    f.set_busy(0, true, 0);
    f.set_busy(0, false, 1_000_000_000);
    let (j, w) = f.energy(2_000_000_000).unwrap();
    // Busy core 0 at 3333 MHz (one busy core), 1.20 V against 1.10 V at 2667 MHz:
    // 0.5 + 11.5 * (1.2/1.1)^2 * 3333/2667 W; core 1 idle 0.5 W; uncore 5 W.
    let busy_w = 0.5 + 11.5 * (1.2f64 / 1.1).powi(2) * 3333.0 / 2667.0;
    let expect = busy_w * 1.0 + 0.5 * 1.0 + 0.5 * 2.0 + 5.0 * 2.0;
    assert!((j - expect).abs() < 1e-9, "{j} vs {expect}");
    assert!((w - expect / 2.0).abs() < 1e-9);
    // Powersave: the bottom state, 0.80 V at 1200 MHz.
    let mut f = FreqModel::new(&m, Some(Governor::Powersave)).unwrap();
    f.set_busy(3, true, 0);
    let (j, _) = f.energy(1_000_000_000).unwrap();
    let busy_w = 0.5 + 11.5 * (0.8f64 / 1.1).powi(2) * 1200.0 / 2667.0;
    assert!((j - (busy_w + 0.5 + 5.0)).abs() < 1e-9, "{j}");
}

#[test]
fn an_ondemand_sample_reads_load_and_average_frequency_of_the_window() {
    let m = i7_one_policy();
    let mut f = FreqModel::new(&m, Some(Governor::Ondemand)).unwrap();
    assert_eq!(
        f.ondemand_period(),
        Some(10 * MS),
        "max(10 ms, 10 us x 1000)"
    );
    // CPU 0 busy 5 ms of the first 10 ms window, at the top turbo bin (3333 MHz).
    f.set_busy(0, true, 2 * MS);
    f.set_busy(0, false, 7 * MS);
    // load 50, freq_avg 3 333 000 kHz: 166 650 000 < 92 * 2 667 000; 166 650 000 / 92 =
    // 1 811 413 kHz -> 1867 MHz (index 5).
    assert_eq!(f.ondemand_sample(0, 10 * MS), Some(5));
    let fx = f.apply(0, 5, 10 * MS);
    assert!(
        fx.scaling.iter().all(|&(_, s)| s),
        "every CPU of the package is throttled"
    );
    assert_eq!(fx.scaling.len(), 4);
    // Fully busy for the next window at 1867 MHz: back to the maximum.
    f.set_busy(0, true, 10 * MS);
    assert_eq!(f.ondemand_sample(0, 20 * MS), Some(11));
    let fx = f.apply(0, 11, 20 * MS);
    assert!(fx.scaling.iter().all(|&(_, s)| !s));
}

/// Hardware coordination (the i7 as shipped: a policy per logical CPU, one frequency plane):
/// each CPU requests its own P-state, the package runs at the highest request among its busy
/// CPUs, and a CPU is throttled for BFS by its own request.
#[test]
fn hardware_coordination_runs_the_package_at_the_busy_cpus_highest_request() {
    let m = i7();
    let mut f = FreqModel::new(&m, Some(Governor::Ondemand)).unwrap();
    let top = khz(&m).len() - 1;
    let speed = |mhz: f64| (mhz / 2667.0 * SPEED_ONE as f64).round() as u32;
    assert_eq!(f.ndomains(), 4, "one policy per logical CPU");
    // CPU 0 busy the whole first window; CPU 2 (the other core) idle.
    f.set_busy(0, true, 0);
    assert_eq!(
        f.ondemand_sample(0, 10 * MS),
        None,
        "100 % busy at the top: stay"
    );
    assert_eq!(
        f.ondemand_sample(2, 10 * MS),
        Some(0),
        "idle: to the minimum"
    );
    let fx = f.apply(2, 0, 10 * MS);
    assert_eq!(fx.scaling, vec![(2, true)], "only CPU 2 is throttled");
    assert!(
        fx.respeed.is_empty(),
        "CPU 0 keeps the package at its request"
    );
    assert_eq!(f.speed(0), speed(3333.0));
    // CPU 2 wakes: the package still runs at CPU 0's request, the two-core turbo bin.
    let fx = f.set_busy(2, true, 12 * MS);
    assert_eq!((f.speed(0), f.speed(2)), (speed(3067.0), speed(3067.0)));
    assert!(fx.respeed.contains(&0) && fx.respeed.contains(&2));
    // CPU 0 goes idle: now CPU 2's own request (1200 MHz) sets the package's frequency.
    f.set_busy(0, false, 15 * MS);
    assert_eq!(f.speed(2), speed(1200.0));
    // Its next sample: busy 8 ms of the window (load 80), 3 ms at 3067 and 5 ms at 1200 MHz
    // (freq_avg 1 900 125 kHz): 80 x 1 900 125 = 152 010 000 > 95 x 1 200 000 -> the top.
    assert_eq!(f.ondemand_sample(2, 20 * MS), Some(top));
    f.apply(2, top, 20 * MS);
    assert_eq!(
        f.speed(2),
        speed(3333.0),
        "alone at the top: the one-core bin"
    );
}
