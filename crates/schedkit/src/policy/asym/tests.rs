//! The capacity and energy rules against hand-computed cases on the shipped hybrid profiles.

use super::*;
use crate::machine::Machine;

fn exynos() -> Topology {
    Machine::load("exynos5422").unwrap().topology
}

/// fits_capacity: util x 1280 < capacity x 1024 (a 20 % margin).
#[test]
fn fits_capacity_threshold() {
    // 819 x 1280 = 1 048 320 < 1 048 576; 820 x 1280 = 1 049 600.
    assert!(fits_capacity(819, 1024));
    assert!(!fits_capacity(820, 1024));
    // A7 (377): 301 x 1280 = 385 280 < 386 048; 302 x 1280 = 386 560.
    assert!(fits_capacity(301, 377));
    assert!(!fits_capacity(302, 377));
    // capacity_greater: 5 % more (1078/1024).
    assert!(capacity_greater(1024, 377));
    assert!(!capacity_greater(1024, 1000));
}

/// util_fits_cpu with clamps: uclamp_max lets a big task fit a small CPU; a uclamp_min above
/// the CPU's capacity is -1 ("fits, but below the hint").
#[test]
fn util_fits_cpu_with_uclamp() {
    let none = Uclamp::default();
    assert_eq!(util_fits_cpu(350, none, 377, false), 0);
    let capped = Uclamp { min: 0, max: 300 };
    assert_eq!(util_fits_cpu(350, capped, 377, true), 1);
    let boosted = Uclamp {
        min: 500,
        max: 1024,
    };
    assert_eq!(util_fits_cpu(100, boosted, 377, true), -1);
    assert_eq!(util_fits_cpu(100, boosted, 1024, true), 1);
    // On the biggest CPU a uclamp_max of 1024 is no clamp: the margin applies.
    assert_eq!(util_fits_cpu(900, none, 1024, true), 0);
}

/// compute_energy on the Exynos 5422's two domains, by hand: a task of util 100 alone on an
/// A7 asks for 125 (a quarter's headroom): the A7's first state of performance >= 125 is
/// 500 MHz (377 x 500/1400 = 134), power 90 x 1000^2 x 500 / 10^6 = 45 000 µW, cost
/// 450 000 / 134 = 3 358, energy 3 358 x 100 = 335 800. On an A15: 300 MHz (1024 x 300/2000 =
/// 153), 310 x 900^2 x 300 / 10^6 = 75 330 µW, cost 753 300 / 153 = 4 923, energy 492 300.
#[test]
fn compute_energy_on_two_domains() {
    let t = exynos();
    let util = [0u64; 8];
    let env = EnergyEnv {
        topology: &t,
        util: &util,
        task_util: 100,
        clamp: Uclamp::default(),
        uclamp_used: false,
    };
    assert_eq!(env.compute_energy(&t.em[0], None), 0);
    assert_eq!(env.compute_energy(&t.em[0], Some(0)), 335_800);
    assert_eq!(env.compute_energy(&t.em[1], Some(4)), 492_300);
    // So a small task last run on an A15 is woken on an A7 (the first of most spare
    // capacity), and one that does not fit an A7 (400 x 1280 >= 377 x 1024) on an A15.
    assert_eq!(env.find_energy_efficient_cpu(4, &|_| true), Some(0));
    let big = EnergyEnv {
        task_util: 400,
        ..env
    };
    assert_eq!(big.find_energy_efficient_cpu(0, &|_| true), Some(4));
    // Busy A7s: with 250 already on each, 350 no longer fits there (350 x 1280 = 448 000 >
    // 377 x 1024 = 386 048), so the A15s are the only candidates.
    let busy = [250, 250, 250, 250, 0, 0, 0, 0];
    let env = EnergyEnv {
        util: &busy,
        task_util: 100,
        ..big
    };
    assert_eq!(env.find_energy_efficient_cpu(0, &|_| true), Some(4));
    // No CPU over its capacity's margin: not overutilized; an A7 at 302 is.
    assert!(!overutilized(&t, &busy, &[]));
    assert!(overutilized(&t, &[302, 0, 0, 0, 0, 0, 0, 0], &[]));
    // ... unless its running task's uclamp_max (300 <= 377) lets it fit.
    let mut clamps = vec![Uclamp::default(); 8];
    clamps[0] = Uclamp { min: 0, max: 300 };
    assert!(!overutilized(&t, &[302, 0, 0, 0, 0, 0, 0, 0], &clamps));
}

/// select_idle_capacity: the first idle CPU after the target that fits, else the idle CPU of
/// most capacity.
#[test]
fn select_idle_capacity_prefers_a_fitting_cpu() {
    let t = exynos();
    let all: Vec<usize> = (0..8).collect();
    let none = Uclamp::default();
    let idle = |_c: usize| true;
    assert_eq!(
        select_idle_capacity(&t, &all, 0, 400, none, false, &idle, &|_| true),
        Some(4)
    );
    assert_eq!(
        select_idle_capacity(&t, &all, 0, 100, none, false, &idle, &|_| true),
        Some(1)
    );
    // Only A7s idle: a task that fits none gets the first of them.
    let little_idle = |c: usize| c < 4;
    assert_eq!(
        select_idle_capacity(&t, &all, 0, 400, none, false, &little_idle, &|_| true),
        Some(1)
    );
    assert!(asym_fits_cpu(&t, 300, none, false, 0));
    assert!(!asym_fits_cpu(&t, 302, none, false, 0));
}

/// sched_asym_prefer on the i9-12900K: a favoured P-core (66) over another P-core (65) over
/// an E-core (39); siblings are equal.
#[test]
fn asym_packing_preference() {
    let t = Machine::load("alderlake-12900k").unwrap().topology;
    assert!(sched_asym_prefer(&t, 4, 0));
    assert!(sched_asym_prefer(&t, 0, 16));
    assert!(!sched_asym_prefer(&t, 16, 0));
    assert!(!sched_asym_prefer(&t, 0, 1));
}
