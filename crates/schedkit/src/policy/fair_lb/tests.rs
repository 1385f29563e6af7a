//! The 6.18 balancer against hand-worked cases: `sd_init`'s constants, group classification,
//! the imbalance by tasks and by load, the kernel's `prandom` self-test, `avg_idle` and the
//! new-idle pass's gating (moved out of `fair_lb.rs`, unchanged).

use super::*;
use crate::class::{CpuStatus, Cpus};
use crate::machine::TopologySpec;

fn topo(cpus: usize, smt: usize, per_cache: usize) -> Topology {
    Topology::from_spec(&TopologySpec {
        cpus,
        threads_per_core: smt,
        cpus_per_cache: per_cache,
        cpus_per_node: None,
        cpus_per_l2: None,
        cpus_per_package: None,
    })
}

fn cpu(nr: usize, load: u64) -> CpuStatus {
    CpuStatus {
        curr: (nr > 0).then_some(crate::task::TaskId(nr as u32 + 100)),
        nr_running: nr,
        load,
        nr_delayed: 0,
        sched_idle: false,
        last_schedule_ns: 0,
    }
}

fn view<'a>(st: &'a [CpuStatus], t: &'a Topology) -> CpuView<'a> {
    CpuView {
        cpus: Cpus::Snapshot(st),
        topology: t,
        now: 0,
        hz: 250,
        overloaded: None,
    }
}

#[test]
fn each_cpu_sees_its_groups_from_its_own_on() {
    // build_sched_groups: for_each_cpu_wrap(i, span, cpu), so CPU 2 of four single-CPU
    // groups sees {2} {3} {0} {1}, and its balancer and fork walk meet ties in that order.
    let d = Domains::build(2, &topo(4, 1, 4), 500_000);
    assert_eq!(d.levels[0].groups, vec![vec![2], vec![3], vec![0], vec![1]]);
    // Cores {0,1} {2,3}: CPU 3's MC level starts at its core.
    let d = Domains::build(3, &topo(4, 2, 4), 500_000);
    assert_eq!(d.levels[1].groups, vec![vec![2, 3], vec![0, 1]]);
}

#[test]
fn sd_init_constants() {
    // Two CPUs sharing a cache: one MC level of weight 2.
    let d = Domains::build(0, &topo(2, 1, 2), 500_000);
    assert_eq!(d.levels.len(), 1);
    let l = &d.levels[0];
    assert_eq!((l.name, l.imbalance_pct, l.busy_factor), ("MC", 117, 16));
    assert_eq!(
        (l.min_interval_ms, l.max_interval_ms, l.balance_interval_ms),
        (2, 4, 2)
    );
    assert_eq!(l.cache_nice_tries, 1);
    // Busy: 2 ms x 16 = 32 ms = 8 ticks at HZ=250; idle: 2 ms, rounded up to one tick.
    assert_eq!(d.interval_ticks(false, 250), 8);
    assert_eq!(d.interval_ticks(true, 250), 1);
    // SMT siblings: 110, no cache_nice_tries.
    let d = Domains::build(0, &topo(4, 2, 4), 500_000);
    assert_eq!(d.levels[0].imbalance_pct, 110);
    assert_eq!(d.levels[0].cache_nice_tries, 0);
    assert_eq!(d.levels[1].imbalance_pct, 117);
}

#[test]
fn groups_are_classified_by_tasks_and_load() {
    let g = |nr, load| GroupStats {
        load,
        nr_running: nr,
        weight: 1,
        capacity: 1024,
        ..Default::default()
    };
    // No task: spare. One task at half a CPU: spare (1024 * 100 > 512 * 117).
    assert_eq!(g(0, 0).classify(117), GroupType::HasSpare);
    assert_eq!(g(1, 512).classify(117), GroupType::HasSpare);
    // One task always running: util 1024, 1024 * 100 < 1024 * 117: fully busy.
    assert_eq!(g(1, 1024).classify(117), GroupType::FullyBusy);
    // Two runnable tasks: runnable 2048 > 1024 * 117 / 100: overloaded.
    assert_eq!(g(2, 2048).classify(117), GroupType::Overloaded);
    // Two tasks queued but a lower average (one just woke): overloaded once the
    // utilisation passes 1024 * 100 / 117 = 875 (1024 * 100 < 1000 * 117) ...
    assert_eq!(g(2, 1000).classify(117), GroupType::Overloaded);
    // ... below it, and with runnable under 1024 * 1.17 = 1198, spare capacity
    // (1024 * 117 >= 800 * 100 and 1024 * 100 > 800 * 117 = 93 600).
    assert_eq!(g(2, 800).classify(117), GroupType::HasSpare);
    // One task at 900: not more tasks than CPUs; 1024 * 100 = 102 400 is not above
    // 900 * 117 = 105 300: no spare capacity.
    assert_eq!(g(1, 900).classify(117), GroupType::FullyBusy);
    // Two CPUs, two tasks on one (load 2048) and none on the other: group_util sums each
    // CPU's at most its capacity, 1024 + 0, and 2048 * 100 > 1024 * 117: spare capacity; the
    // group's load capped only at the group's capacity (2048) would call it fully busy.
    let two = GroupStats {
        load: 2048,
        nr_running: 2,
        weight: 2,
        capacity: 2048,
        ..Default::default()
    };
    assert_eq!(two.classify_util(117, 1024), GroupType::HasSpare);
    assert_eq!(two.classify(117), GroupType::FullyBusy);
}

#[test]
fn of_equally_fully_busy_groups_the_last_is_the_busiest() {
    // Three LLCs of two CPUs; CPU 0's is idle, the other two each run two tasks at 1000
    // (util 2000 × 117 > 204 800: fully busy, avg_load never computed, so equal). Looked at
    // from CPU 0's LLC on, {2,3} then {4,5}: the later replaces the earlier (neither is an
    // SMT core), so the pull is from {4,5}.
    let t = topo(6, 1, 2);
    let mut d = Domains::build(0, &t, 500_000);
    let mut ops = OpCounter::default();
    let st = [
        cpu(0, 0),
        cpu(0, 0),
        cpu(1, 1000),
        cpu(1, 1000),
        cpu(1, 1000),
        cpu(1, 1000),
    ];
    let b = d
        .find_busiest(
            &mut ops,
            10_000_000,
            0,
            &view(&st, &t),
            CpuIdle::Idle,
            false,
        )
        .expect("imbalanced");
    assert!(b.cpu >= 4, "pulled from CPU {}", b.cpu);
}

#[test]
fn an_idle_cpu_takes_half_the_difference_in_tasks() {
    let t = topo(2, 1, 2);
    let mut d = Domains::build(0, &t, 500_000);
    // NI_RANDOM's odds at their highest (1 + 1023 of 1024): every new-idle pass searches.
    d.levels[0].newidle_ratio = 1023;
    let mut ops = OpCounter::default();
    // CPU 1 runs 5 tasks (load 5120), CPU 0 is idle: migrate_task, (5 - 0) >> 1 = 2.
    let st = [cpu(0, 0), cpu(5, 5120)];
    let b = d
        .find_busiest(
            &mut ops,
            10_000_000,
            0,
            &view(&st, &t),
            CpuIdle::Idle,
            false,
        )
        .expect("imbalanced");
    assert_eq!((b.cpu, b.imbalance), (1, 2));
    assert_eq!(d.pending(), Some((Migration::Tasks(2), 0, 1, false)));
    // Two tasks: (2 - 0) >> 1 = 1. One task: balanced (sum_h_nr_running == 1).
    let st = [cpu(0, 0), cpu(2, 2048)];
    let b = d
        .find_busiest(
            &mut ops,
            20_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false,
        )
        .unwrap();
    assert_eq!(b.imbalance, 1);
    let st = [cpu(0, 0), cpu(1, 1024)];
    assert!(d
        .find_busiest(
            &mut ops,
            30_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false
        )
        .is_none());
}

#[test]
fn busy_cpus_balance_load_beyond_imbalance_pct_only() {
    let t = topo(2, 1, 2);
    let mut d = Domains::build(0, &t, 500_000);
    let mut ops = OpCounter::default();
    // Busy CPU 0 with 2 tasks (2048) against CPU 1 with 4 (4096): both overloaded;
    // avg_load 2048 vs 4096, domain average 3072; 4096 * 100 > 117 * 2048: move
    // min(4096 - 3072, 3072 - 2048) * 1024 / 1024 = 1024 of load.
    let st = [cpu(2, 2048), cpu(4, 4096)];
    let b = d
        .find_busiest(
            &mut ops,
            1_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            false,
        )
        .unwrap();
    assert_eq!((b.cpu, b.imbalance), (1, 1024));
    assert_eq!(d.pending().unwrap().0, Migration::Load(1024));
    // 2048 against 2300: within 117 %: balanced, and the interval doubles (2 -> 4 ms).
    let st = [cpu(2, 2048), cpu(2, 2300)];
    assert!(d
        .find_busiest(
            &mut ops,
            2_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            false
        )
        .is_none());
    assert_eq!(d.levels[0].balance_interval_ms, 4);
    // A busy CPU never pulls from a group that is not overloaded.
    let st = [cpu(1, 1024), cpu(1, 1024)];
    assert!(d
        .find_busiest(
            &mut ops,
            3_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            false
        )
        .is_none());
    // Not due again until balance_interval x busy_factor = 4 x 16 = 64 ms later.
    let st = [cpu(2, 2048), cpu(4, 4096)];
    assert!(d
        .find_busiest(
            &mut ops,
            3_050_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            false
        )
        .is_none());
    assert!(d
        .find_busiest(
            &mut ops,
            3_065_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            false
        )
        .is_some());
    // Moving something resets the interval; finding and moving nothing counts a failure.
    d.balanced(1, CpuIdle::NotIdle);
    assert_eq!(d.levels[0].balance_interval_ms, 2);
    d.find_busiest(
        &mut ops,
        4_000_000_000,
        0,
        &view(&st, &t),
        CpuIdle::NotIdle,
        false,
    )
    .unwrap();
    d.balanced(0, CpuIdle::NotIdle);
    assert_eq!(d.levels[0].nr_balance_failed, 1);
    // A new-idle pass that finds the level balanced does not back off; a periodic one
    // does (fair.c 12013).
    let st = [cpu(0, 0), cpu(1, 1024)];
    d.levels[0].balance_interval_ms = 2;
    assert!(d
        .find_busiest(
            &mut ops,
            5_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false
        )
        .is_none());
    assert_eq!(d.levels[0].balance_interval_ms, 2);
    assert!(d
        .find_busiest(
            &mut ops,
            6_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::Idle,
            false
        )
        .is_none());
    assert_eq!(d.levels[0].balance_interval_ms, 4);
    // Finding an imbalance resets the interval even if the pass then moves nothing.
    let st = [cpu(0, 0), cpu(3, 3072)];
    assert!(d
        .find_busiest(
            &mut ops,
            7_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::Idle,
            false
        )
        .is_some());
    assert_eq!(d.levels[0].balance_interval_ms, 2);
    d.balanced(0, CpuIdle::Idle);
    assert_eq!(d.levels[0].nr_balance_failed, 1);
}

#[test]
fn a_cpu_running_sched_idle_tasks_only_is_not_busy_for_its_interval() {
    // `sched_balance_domains`: busy = idle != CPU_IDLE && !sched_idle_cpu(cpu). A CPU that
    // runs SCHED_IDLE tasks only balances as not idle, at the idle interval (2 ms here, 4
    // once a pass found the level balanced), not at that times busy_factor 16.
    let t = topo(2, 1, 2);
    let st = [cpu(1, 3), cpu(2, 1027)];
    for (sched_idle, due) in [(true, true), (false, false)] {
        let mut d = Domains::build(0, &t, 500_000);
        let mut ops = OpCounter::default();
        d.find_busiest(
            &mut ops,
            1_000_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            sched_idle,
        );
        let again = d.find_busiest(
            &mut ops,
            1_005_000_000,
            0,
            &view(&st, &t),
            CpuIdle::NotIdle,
            sched_idle,
        );
        assert_eq!(
            d.levels[0].last_balance == 1_005_000_000,
            due,
            "sched_idle {sched_idle}: {again:?}"
        );
    }
}

#[test]
fn prandom_matches_the_kernels_self_test() {
    // lib/random32.c, test1[]: the first draw after seeding and warming up.
    for (seed, first) in [
        (1, 3_484_351_685u32),
        (2, 2_623_130_059),
        (3, 3_125_133_893),
        (4, 984_847_254),
    ] {
        assert_eq!(Prandom::seeded(seed).next_u32(), first, "seed {seed}");
    }
}

#[test]
fn avg_idle_folds_an_eighth_of_each_idle_time_capped_at_twice_the_balance_cost() {
    let mut n = NewIdle::new(0, 500_000);
    assert_eq!((n.avg_idle, n.max_idle_balance_cost), (1_000_000, 500_000));
    // No idle entry stamped: a wakeup changes nothing.
    n.woken(5_000_000);
    assert_eq!(n.avg_idle, 1_000_000);
    // 200 us idle: 1 000 000 + (200 000 - 1 000 000) / 8 = 900 000; the stamp is used up.
    n.idle_stamp = Some(10_000_000);
    n.woken(10_200_000);
    assert_eq!((n.avg_idle, n.idle_stamp), (900_000, None));
    // 3 ms idle: 900 000 + 2 100 000 / 8 = 1 162 500, capped at 2 x 500 000.
    n.idle_stamp = Some(20_000_000);
    n.woken(23_000_000);
    assert_eq!(n.avg_idle, 1_000_000);
    // A truncating division: 1 000 000 + (999 993 - 1 000 000) / 8 = 1 000 000 - 0.
    n.idle_stamp = Some(30_000_000);
    n.woken(30_999_993);
    assert_eq!(n.avg_idle, 1_000_000);
}

#[test]
fn newidle_runs_only_on_an_overloaded_root_domain_and_while_idle_time_pays_for_it() {
    let t = topo(2, 1, 2);
    let mut d = Domains::build(0, &t, 500_000);
    d.levels[0].newidle_ratio = 1023;
    let mut ops = OpCounter::default();
    // Nobody has two tasks: no pass, but the idle entry is stamped.
    let st = [cpu(0, 0), cpu(1, 1024)];
    assert!(d
        .find_busiest(
            &mut ops,
            1_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false
        )
        .is_none());
    assert_eq!((d.newidle.idle_stamp, d.newidle.pass), (Some(1_000), None));
    // CPU 1 overloaded: a pass, open until newidle_done; it took 40 us and pulled.
    let st = [cpu(0, 0), cpu(3, 3072)];
    assert!(d
        .find_busiest(
            &mut ops,
            2_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false
        )
        .is_some());
    assert_eq!(
        d.newidle.pass.map(|p| (p.started, p.levels)),
        Some((2_000, 1))
    );
    d.newidle_done(42_000, true);
    assert_eq!(d.newidle.pass, None);
    assert_eq!(d.levels[0].max_newidle_lb_cost, 40_000);
    // Pulled: the CPU is not idle after all.
    assert_eq!(d.newidle.idle_stamp, None);
    // A success weighs (1024 + 1024 / 2) / 1024 = 1 at the highest odds; one call more.
    assert_eq!(
        (d.levels[0].newidle_call, d.levels[0].newidle_success),
        (513, 257)
    );
    // avg_idle below the level's cost: no pass even when overloaded.
    d.newidle.avg_idle = 39_999;
    assert!(d
        .find_busiest(
            &mut ops,
            100_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false
        )
        .is_none());
    assert_eq!(d.newidle.pass, None);
    // The periodic balancer decays the cost by 253/256 once more than a second has
    // passed since it was set, and keeps max_idle_balance_cost at least 0.5 ms.
    d.find_busiest(
        &mut ops,
        500_000_000,
        0,
        &view(&st, &t),
        CpuIdle::Idle,
        false,
    );
    assert_eq!(d.levels[0].max_newidle_lb_cost, 40_000);
    d.find_busiest(&mut ops, 1_042_001, 0, &view(&st, &t), CpuIdle::Idle, false);
    d.find_busiest(
        &mut ops,
        1_100_000_000,
        0,
        &view(&st, &t),
        CpuIdle::Idle,
        false,
    );
    assert_eq!(d.levels[0].max_newidle_lb_cost, 40_000 * 253 / 256);
    assert_eq!(d.newidle.max_idle_balance_cost, 500_000);
}

#[test]
fn ni_random_searches_at_the_odds_of_recent_success() {
    let t = topo(2, 1, 2);
    let st = [cpu(0, 0), cpu(3, 3072)];
    let mut ops = OpCounter::default();
    // At the lowest odds (ratio 0: weight 1) a level is searched only when the die
    // shows 0 or 1, about 2 passes in 1 024. The same generator, drawn beside it, says
    // which.
    let mut d = Domains::build(0, &t, 500_000);
    // No success counted: the ratio stays 0 at each recount (every 1 024 calls).
    (d.levels[0].newidle_ratio, d.levels[0].newidle_call) = (0, 0);
    d.levels[0].newidle_success = 0;
    let mut die = d.newidle.rng;
    let mut searched = 0;
    for k in 0..2048u64 {
        let expect = die.next_u32() % 1024 <= 1;
        let found = d
            .find_busiest(
                &mut ops,
                k * 1_000,
                0,
                &view(&st, &t),
                CpuIdle::NewlyIdle,
                false,
            )
            .is_some();
        assert_eq!(found, expect, "pass {k}");
        if found {
            searched += 1;
            d.newidle_done(k * 1_000 + 1, false);
        }
    }
    assert!(
        (1..12).contains(&searched),
        "{searched} passes of 2 048 at odds 2/1024"
    );
    assert_eq!(d.levels[0].newidle_ratio, 0);
    // update_newidle_stats: after 1 024 calls the ratio is the successes counted, and
    // both counts are halved.
    let mut l = d.levels[0].clone();
    l.newidle_call = 1023;
    l.newidle_success = 300;
    l.newidle_stats(1);
    assert_eq!(
        (l.newidle_ratio, l.newidle_call, l.newidle_success),
        (301, 512, 150)
    );
}

/// Since 6.12 a task asleep but not yet dequeued (DELAY_DEQUEUE) stays in `rq->nr_running`:
/// it makes the root domain overloaded and counts in `sum_nr_running`, but not in
/// `sum_h_nr_running`, so it never makes a group worth pulling from on its own.
#[test]
fn delayed_tasks_count_in_nr_running_but_not_as_tasks_to_pull() {
    let t = topo(2, 1, 2);
    let mut d = Domains::build(0, &t, 500_000);
    d.levels[0].newidle_ratio = 1023;
    let mut ops = OpCounter::default();
    let delayed = |nr, delayed, load| CpuStatus {
        nr_delayed: delayed,
        ..cpu(nr, load)
    };
    // CPU 1 runs one task and holds one delayed: the root domain is overloaded, so a new-idle
    // pass searches; the busiest group (not overloaded at this load) has one runnable task:
    // balanced ("busiest doesn't have any tasks waiting to run").
    let st = [cpu(0, 0), delayed(1, 1, 600)];
    assert!(d
        .find_busiest(
            &mut ops,
            1_000,
            0,
            &view(&st, &t),
            CpuIdle::NewlyIdle,
            false
        )
        .is_none());
    assert_eq!(d.newidle.pass.map(|p| p.levels), Some(1));
    d.newidle_done(2_000, false);
    // Two runnable and two delayed: sibling_imbalance takes sum_nr_running, (4 - 0) >> 1.
    let st = [cpu(0, 0), delayed(2, 2, 4096)];
    let b = d
        .find_busiest(
            &mut ops,
            20_000_000,
            0,
            &view(&st, &t),
            CpuIdle::Idle,
            false,
        )
        .expect("imbalanced");
    assert_eq!((b.cpu, b.imbalance), (1, 2));
    // The idle CPU's own count is zero only with nothing delayed on it either.
    assert!(view(&[cpu(0, 0)], &t).idle_cpu(0));
    assert!(!view(&[delayed(0, 1, 0)], &t).idle_cpu(0));
}

/// `imb_numa_nr` on a two-node machine of 4 LLCs a node (topology.c 2548: at the first level
/// above the LLC, its LLC count; the NUMA level spanning twice as much keeps it, factor 1),
/// and `adjust_numa_imbalance` (fair.c 1481): up to 2 tasks of imbalance tolerated while the
/// destination would run at most `imb_numa_nr`.
#[test]
fn numa_levels_allow_a_small_imbalance() {
    let t = Topology::from_spec(&TopologySpec {
        cpus: 32,
        threads_per_core: 2,
        cpus_per_cache: 4,
        cpus_per_node: Some(16),
        cpus_per_l2: None,
        cpus_per_package: None,
    });
    let d = Domains::build(0, &t, 500_000);
    let names: Vec<_> = d
        .levels
        .iter()
        .map(|l| (l.name, l.numa, l.imb_numa_nr))
        .collect();
    assert_eq!(
        names,
        [
            ("SMT", false, 0),
            ("MC", false, 0),
            ("CPU", false, 4),
            ("NUMA", true, 4)
        ]
    );
    assert_eq!(d.levels[3].cache_nice_tries, 2);
    assert_eq!(d.levels[3].group_cores, vec![8, 8]);
    assert_eq!(adjust_numa_imbalance(2, 3, 4), 0);
    assert_eq!(adjust_numa_imbalance(3, 3, 4), 3);
    assert_eq!(adjust_numa_imbalance(2, 5, 4), 2);
    // A one-LLC node (the Xeon): the NUMA level is the first above the LLC and spans two.
    let t = Topology::from_spec(&TopologySpec {
        cpus: 32,
        threads_per_core: 2,
        cpus_per_cache: 16,
        cpus_per_node: Some(16),
        cpus_per_l2: None,
        cpus_per_package: None,
    });
    let d = Domains::build(0, &t, 500_000);
    let last = d.levels.last().unwrap();
    assert_eq!((last.name, last.imb_numa_nr), ("NUMA", 2));
}
