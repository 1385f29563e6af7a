//! The 2.6.2x scheduling domains against hand-worked cases: levels from the topology,
//! `find_busiest_group`'s imbalance_pct and interval back-off, wake_affine and idle siblings,
//! fork balancing level by level, and the 6.18 wakeup path (moved out of `sched_domains.rs`,
//! unchanged).

use super::*;
use crate::class::Cpus;
use crate::machine::TopologySpec;

fn topo(cpus: usize, smt: usize, per_cache: usize, per_node: Option<usize>) -> Topology {
    Topology::from_spec(&TopologySpec {
        cpus,
        threads_per_core: smt,
        cpus_per_cache: per_cache,
        cpus_per_node: per_node,
        cpus_per_l2: None,
        cpus_per_package: None,
    })
}

#[test]
fn levels_follow_the_topology() {
    // 2 nodes x 2 caches x 2 cores x 2 threads = 16 CPUs.
    let t = topo(16, 2, 4, Some(8));
    let d = SchedDomains::build(5, &t);
    let names: Vec<_> = d.levels.iter().map(|l| l.name).collect();
    assert_eq!(names, ["SMT", "MC", "CPU", "NUMA"]);
    assert_eq!(d.levels[0].span, vec![4, 5]);
    assert_eq!(d.levels[0].groups, vec![vec![4], vec![5]]);
    assert_eq!(d.levels[1].span, vec![4, 5, 6, 7]);
    assert_eq!(d.levels[1].groups, vec![vec![4, 5], vec![6, 7]]);
    assert_eq!(d.levels[2].groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(d.levels[3].groups.len(), 2);
    assert_eq!(d.levels[0].imbalance_pct, 110);
    // A flat 2-way SMP (separate caches, one node): one level, "CPU".
    let d = SchedDomains::build(1, &topo(2, 1, 1, None));
    assert_eq!(d.levels.len(), 1);
    assert_eq!(d.levels[0].name, "CPU");
    assert_eq!(d.levels[0].groups, vec![vec![0], vec![1]]);
    // Two CPUs sharing a cache: "MC".
    assert_eq!(
        SchedDomains::build(0, &topo(2, 1, 2, None)).levels[0].name,
        "MC"
    );
    // One CPU: nothing to balance.
    assert!(SchedDomains::build(0, &topo(1, 1, 1, None))
        .levels
        .is_empty());
}

fn view_of<'a>(status: &'a [crate::class::CpuStatus], t: &'a Topology) -> CpuView<'a> {
    CpuView {
        cpus: Cpus::Snapshot(status),
        topology: t,
        now: 0,
        hz: 1000,
        overloaded: None,
    }
}

fn cpu(nr: usize, load: u64) -> crate::class::CpuStatus {
    crate::class::CpuStatus {
        curr: None,
        nr_running: nr,
        load,
        nr_delayed: 0,
        sched_idle: false,
        last_schedule_ns: 0,
    }
}

#[test]
fn busiest_group_needs_the_imbalance_pct_and_intervals_back_off() {
    let t = topo(4, 1, 2, None); // two caches of two CPUs
    let mut d = SchedDomains::build(0, &t);
    assert_eq!(d.levels.len(), 2); // MC {0,1}, CPU {0..3}
    let mut ops = OpCounter::default();
    // CPU 0 has 1 task (1024); CPU 2 has 3 (3072): MC {0,1} is balanced enough (CPU 1
    // idle, no overloaded group); at the CPU level group {2,3} averages 1536 against 512.
    let st = [cpu(1, 1024), cpu(0, 0), cpu(3, 3072), cpu(0, 0)];
    let v = view_of(&st, &t);
    let s = 1_000_000_000;
    let b = d
        .find_busiest(&mut ops, s, 0, &v, CpuIdle::NotIdle)
        .expect("imbalanced");
    assert_eq!(b.cpu, 2);
    // avg 1024; min(1536 - 1024, 1024 - 512) = 512.
    assert_eq!(b.imbalance, 512);
    // MC was balanced (its interval doubled); CPU found work (back to its minimum).
    assert_eq!(d.interval_ms, vec![2, 1]);
    // Not due again on a busy CPU until interval x busy_factor (64 ms, 128 ms) later.
    assert!(d
        .find_busiest(&mut ops, s + 10_000_000, 0, &v, CpuIdle::NotIdle)
        .is_none());
    assert_eq!(d.interval_ms, vec![2, 1]);
    // Within imbalance_pct (125 %): nothing to do; each interval doubles up to its max.
    let st = [cpu(2, 2048), cpu(2, 2048), cpu(2, 2048), cpu(2, 2400)];
    let v = view_of(&st, &t);
    assert!(d
        .find_busiest(&mut ops, 2 * s, 0, &v, CpuIdle::NotIdle)
        .is_none());
    assert_eq!(d.interval_ms, vec![4, 2]);
    assert!(d
        .find_busiest(&mut ops, 3 * s, 0, &v, CpuIdle::NotIdle)
        .is_none());
    assert_eq!(d.interval_ms, vec![4, 4]);
    // An idle CPU balances at once and pulls at least one nice-0 task's worth.
    let st = [cpu(0, 0), cpu(0, 0), cpu(2, 2048), cpu(0, 0)];
    let v = view_of(&st, &t);
    let b = d
        .find_busiest(&mut ops, 3 * s + 1, 0, &v, CpuIdle::Idle)
        .unwrap();
    assert_eq!((b.cpu, b.imbalance), (2, 1024));
}

#[test]
fn an_idle_cpu_pulls_despite_a_stale_average() {
    let t = topo(2, 1, 1, None);
    let mut d = SchedDomains::build(0, &t);
    let mut ops = OpCounter::default();
    // CPU 0 went idle with a PELT average still at 2000; CPU 1 runs two tasks at 1500.
    let st = [cpu(0, 2000), cpu(2, 1500)];
    let v = view_of(&st, &t);
    let b = d
        .find_busiest(&mut ops, 0, 0, &v, CpuIdle::Idle)
        .expect("spare capacity pulls");
    assert_eq!(b.cpu, 1);
    // Busy with that same average it would not (1500 < 125 % of 2000).
    let st = [cpu(1, 2000), cpu(2, 1500)];
    let v = view_of(&st, &t);
    assert!(d
        .find_busiest(&mut ops, 1_000_000_000, 0, &v, CpuIdle::NotIdle)
        .is_none());
}

#[test]
fn wake_affine_and_idle_siblings() {
    use crate::task::{CpuMask, Tasks};
    // 4 CPUs: two cores of two SMT threads, one cache.
    let t = topo(4, 2, 4, None);
    let mut tasks: Tasks<()> = Tasks::new();
    let p = tasks.spawn();
    tasks[p].cpu = 3;
    tasks[p].cpus_allowed = CpuMask::all();
    let wake = WakeKind::Wakeup { sync: false };
    let mut sel = |st: &[crate::class::CpuStatus], sib| {
        let v = view_of(st, &t);
        select_cpu(&tasks.view(), &v, p, 0, wake, 1024, sib)
    };
    // Waker's CPU 0 at 1024, previous CPU 3 at 2048: (1024 + 1024) * 100 <= 2048 * 125,
    // so the task goes to the waker's CPU, which is busy; SMT search: CPU 1 (its sibling)
    // is idle.
    let mut st = [cpu(1, 1024), cpu(0, 0), cpu(1, 1024), cpu(2, 2048)];
    st[0].curr = Some(TaskId(9));
    st[2].curr = Some(TaskId(8));
    st[3].curr = Some(TaskId(7));
    assert_eq!(sel(&st, IdleSiblings::Smt), 1);
    // Previous CPU lighter (1024): stays there (3); it is busy and its SMT sibling 2 is
    // busy: no idle sibling, so 3. Over the whole cache, CPU 1 is idle.
    st[3].load = 1024;
    assert_eq!(sel(&st, IdleSiblings::Smt), 3);
    assert_eq!(sel(&st, IdleSiblings::Llc), 1);
    // Today's select_idle_sibling prefers a whole idle core: with CPUs 1 and 2 idle but
    // CPU 2's sibling 3 busy and CPU 1's sibling 0 busy, there is none, so CPU 1; with
    // CPU 3 idle too, core {2, 3} is idle and CPU 2 is taken over CPU 1.
    st[2] = cpu(0, 0);
    assert_eq!(sel(&st, IdleSiblings::Llc), 1);
    tasks[p].cpu = 0;
    let mut st2 = [cpu(1, 1024), cpu(0, 0), cpu(0, 0), cpu(0, 0)];
    st2[0].curr = Some(TaskId(9));
    let v = view_of(&st2, &t);
    assert_eq!(
        select_cpu(&tasks.view(), &v, p, 0, wake, 1024, IdleSiblings::Llc),
        2
    );
    assert_eq!(
        select_cpu(&tasks.view(), &v, p, 0, wake, 1024, IdleSiblings::Smt),
        1
    );
}

#[test]
fn fork_goes_to_the_idlest_group_level_by_level() {
    use crate::task::{CpuMask, Tasks};
    // Two cores of two threads: the parent runs on CPU 0 (load 1024), the rest idle. A flat
    // least-loaded scan would take CPU 1, the parent's own sibling; find_idlest_group
    // takes the idle core {2, 3} first.
    let t = topo(4, 2, 4, None);
    let mut tasks: Tasks<()> = Tasks::new();
    let p = tasks.spawn();
    tasks[p].cpus_allowed = CpuMask::all();
    let st = [cpu(1, 1024), cpu(0, 0), cpu(0, 0), cpu(0, 0)];
    let v = view_of(&st, &t);
    assert_eq!(
        select_cpu(
            &tasks.view(),
            &v,
            p,
            0,
            WakeKind::Fork,
            1024,
            IdleSiblings::Smt
        ),
        2
    );
    // On a flat machine it is the least loaded CPU, the parent's on a tie.
    let flat = topo(4, 1, 1, None);
    let st = [cpu(1, 1024), cpu(0, 0), cpu(1, 1024), cpu(0, 0)];
    let v = view_of(&st, &flat);
    assert_eq!(
        select_cpu(
            &tasks.view(),
            &v,
            p,
            0,
            WakeKind::Fork,
            1024,
            IdleSiblings::Smt
        ),
        1
    );
    let st = [cpu(0, 0), cpu(0, 0), cpu(1, 1024), cpu(0, 0)];
    let v = view_of(&st, &flat);
    assert_eq!(
        select_cpu(
            &tasks.view(),
            &v,
            p,
            0,
            WakeKind::Fork,
            1024,
            IdleSiblings::Smt
        ),
        0
    );
    // Today's kernel counts idle CPUs first: core {0, 1} runs the parent and a task whose
    // PELT average has decayed to 300; core {2, 3} is idle but CPU 3's average still
    // shows 2000 from a task that just left. By load {0, 1} (1324/2) beats {2, 3}
    // (2000/2); by idle CPUs {2, 3} (two) beats {0, 1} (none), and its idle CPU 2 is taken.
    let mut st = [cpu(1, 1024), cpu(1, 300), cpu(0, 0), cpu(0, 2000)];
    st[0].curr = Some(TaskId(9));
    st[1].curr = Some(TaskId(8));
    let v = view_of(&st, &t);
    let mut fork = |sib| select_cpu(&tasks.view(), &v, p, 0, WakeKind::Fork, 1024, sib);
    assert_eq!(
        fork(IdleSiblings::Smt),
        1,
        "2.6.2x: the lighter group, its lighter CPU"
    );
    assert_eq!(fork(IdleSiblings::Llc), 2);
}

// ----- select_cpu_v6_18 (fair.c of v6.18: wake_affine_idle L7333, wake_affine_weight
// L7364, select_idle_sibling L7823) -----

const NICE_0: u64 = crate::policy::weight::NICE_0_LOAD;

/// A busy CPU: `nr` runnable, a task running, PELT load `load`.
fn busy(nr: usize, load: u64) -> crate::class::CpuStatus {
    crate::class::CpuStatus {
        curr: Some(TaskId(99)),
        ..cpu(nr, load)
    }
}

/// The CPU a wakeup of a task last on `prev`, of load `task_load`, from `waker`, picks.
fn wake_618(
    t: &Topology,
    st: &[crate::class::CpuStatus],
    prev: CpuId,
    waker: CpuId,
    sync: bool,
    task_load: u64,
    wide: bool,
) -> CpuId {
    use crate::task::Tasks;
    let mut tasks: Tasks<()> = Tasks::new();
    let p = tasks.spawn();
    tasks[p].cpu = prev;
    let v = view_of(st, t);
    let kind = WakeKind::Wakeup { sync };
    select_cpu_v6_18(
        &tasks.view(),
        &v,
        p,
        waker,
        kind,
        task_load,
        NICE_0,
        wide,
        None,
        None,
    )
}

#[test]
fn v6_18_imbalance_pct_by_the_lowest_shared_level() {
    // sd_init: 117 for every level, 110 between SMT siblings. 8 CPUs: cores of 2 threads,
    // LLCs of 4.
    let t = topo(8, 2, 4, None);
    assert_eq!(pct_between_v6_18(&t, 0, 1), 110);
    assert_eq!(pct_between_v6_18(&t, 0, 2), 117);
    assert_eq!(pct_between_v6_18(&t, 0, 4), 117);
    assert_eq!(pct_between_v6_18(&t, 7, 3), 117);
}

#[test]
fn v6_18_wakeups_on_two_cpus_sharing_a_cache() {
    let t = topo(2, 1, 2, None);
    // p last ran on CPU 1; the wakeup runs on CPU 0.
    let wake = |st: &[_], sync, wide| wake_618(&t, st, 1, 0, sync, 1024, wide);
    // wake_affine_idle 1: the waker's CPU is idle (an interrupt woke p) and shares the
    // cache: it takes p unless p's own CPU is idle too. select_idle_sibling: the target
    // is idle, taken.
    assert_eq!(wake(&[cpu(0, 0), busy(1, 1024)], false, false), 0);
    assert_eq!(wake(&[cpu(0, 0), cpu(0, 0)], false, false), 1);
    // wake_affine_idle 3: the waker's CPU busy, p's previous CPU idle: it stays there.
    assert_eq!(wake(&[busy(1, 1024), cpu(0, 0)], false, false), 1);
    // Both busy: waker alone on CPU 0 (load 1024), CPU 1 runs 2 (2048).
    let st = [busy(1, 1024), busy(2, 2048)];
    // wake_affine_idle 2: a sync waker alone on its CPU takes p (it is about to sleep).
    assert_eq!(wake(&st, true, false), 0);
    // Not sync: wake_affine_weight, 117 % halved to 108 %: this = (1024 + 1024) * 100 =
    // 204 800 against prev = (2048 - 1024) * 108 = 110 592: not lighter, p stays on 1.
    assert_eq!(wake(&st, false, false), 1);
    // wake_wide: no affine wakeup at all, even sync: p's previous CPU, busy, no idle one.
    assert_eq!(wake(&st, true, true), 1);
}

#[test]
fn v6_18_wake_affine_weight_biases_by_half_the_imbalance_pct() {
    // 4 CPUs, two LLCs {0, 1} and {2, 3}, all busy (two tasks each, so neither the idle
    // nor the sync-alone test decides). p (load 100) last ran on CPU 1 or 2.
    let t = topo(4, 1, 2, None);
    let st = |l0: u64, l1: u64, l2: u64| [busy(2, l0), busy(2, l1), busy(2, l2), busy(2, 0)];
    let wake = |st: &[_], prev, sync| wake_618(&t, st, prev, 0, sync, 100, false);
    // Within an LLC (117 -> 108 %), prev CPU 1 at 1100: prev_eff = (1100 - 100) * 108 =
    // 108 000. this_eff = (l0 + 100) * 100 must be strictly less: l0 = 979 -> 107 900
    // (the waker's CPU 0), l0 = 980 -> 108 000 (p stays on 1). Unbiased (100 %) 979
    // would lose; at the full 117 % 980 would win.
    assert_eq!(wake(&st(979, 1100, 0), 1, false), 0);
    assert_eq!(wake(&st(980, 1100, 0), 1, false), 1);
    // Across LLCs the same 108 % (sd_init gives the package level 117 too): prev CPU 2 at
    // 1100, l0 = 979 wins, 980 does not.
    assert_eq!(wake(&st(979, 0, 1100), 2, false), 0);
    assert_eq!(wake(&st(980, 0, 1100), 2, false), 2);
    // Sync: the waker's own nice-0 load leaves CPU 0 and prev_eff gains 1 (a tie goes
    // to the waker): l0 = 2004 -> (2004 - 1024 + 100) * 100 = 108 000 < 108 001.
    assert_eq!(wake(&st(2004, 1100, 0), 1, true), 0);
    assert_eq!(wake(&st(2004, 1100, 0), 1, false), 1);
    // Sync with less on the waker's CPU than the waker itself: the waker's CPU at once.
    assert_eq!(wake(&st(1000, 0, 0), 1, true), 0);
}

#[test]
fn v6_18_select_idle_sibling_searches_the_targets_llc() {
    let t = topo(4, 1, 2, None);
    let wake = |st: &[_]| wake_618(&t, st, 2, 0, false, 100, false);
    // The waker's CPU 0 wins wake_affine_weight (as above, 979 against 1100); it is busy.
    // An idle CPU of its LLC (1) is taken; an idle CPU of the other LLC (3) is not looked at.
    assert_eq!(
        wake(&[busy(2, 979), cpu(0, 0), busy(2, 1100), busy(2, 0)]),
        1
    );
    assert_eq!(
        wake(&[busy(2, 979), busy(2, 0), busy(2, 1100), cpu(0, 0)]),
        0
    );
    // p's previous CPU wins (980): then the idle CPU 3 of its LLC is taken.
    assert_eq!(
        wake(&[busy(2, 980), busy(2, 0), busy(2, 1100), cpu(0, 0)]),
        3
    );
    // wake_affine_idle 3 across LLCs: p's previous CPU 2 idle keeps it, whatever the loads.
    assert_eq!(wake(&[busy(2, 0), busy(2, 0), cpu(0, 5000), busy(2, 0)]), 2);
    // But a sync waker alone on its CPU is asked first (wake_affine_idle 2 before 3): the
    // target is CPU 0, busy; p's idle previous CPU is in another LLC, so not taken.
    let st = [busy(1, 1024), busy(2, 0), cpu(0, 0), busy(2, 0)];
    assert_eq!(wake_618(&t, &st, 2, 0, true, 100, false), 0);
    // Sharing the cache (4 CPUs, one LLC), the idle previous CPU 3 is select_idle_sibling's
    // second choice, before the scan of the LLC that would find CPU 1 first.
    let one_llc = topo(4, 1, 4, None);
    let st = [busy(1, 1024), cpu(0, 0), busy(2, 0), cpu(0, 0)];
    assert_eq!(wake_618(&one_llc, &st, 3, 0, true, 100, false), 3);
}

/// Two nodes: the NUMA level takes 2.6.24's x86-64 SD_NODE_INIT (8..32 ms, busy factor 32,
/// imbalance_pct 125, no SD_BALANCE_NEWIDLE): a newly idle CPU does not pull across nodes,
/// a periodic idle balance does, and not again before the level's own interval.
#[test]
fn the_numa_level_is_sd_node_init() {
    let t = topo(8, 1, 2, Some(4));
    let mut d = SchedDomains::build(0, &t);
    let numa = d.levels.last().unwrap().clone();
    assert_eq!(numa.name, "NUMA");
    assert_eq!(
        (numa.min_interval_ms, numa.max_interval_ms, numa.busy_factor),
        (8, 32, 32)
    );
    assert_eq!((numa.imbalance_pct, numa.newidle), (125, false));
    assert!(d.levels[..d.levels.len() - 1].iter().all(|l| l.newidle));
    // CPU 0's node idle; the other node overloaded.
    let mut st = vec![crate::class::CpuStatus::default(); 8];
    for c in 4..8 {
        st[c] = cpu(3, 3 * 1024);
    }
    let v = view_of(&st, &t);
    let mut ops = OpCounter::default();
    let s = 1_000_000_000;
    assert!(d
        .find_busiest(&mut ops, s, 0, &v, CpuIdle::NewlyIdle)
        .is_none());
    let b = d.find_busiest(&mut ops, s, 0, &v, CpuIdle::Idle).unwrap();
    assert!(b.cpu >= 4, "{b:?}");
    // Due again only after its interval (reset to 8 ms by the imbalance found).
    assert!(d
        .find_busiest(&mut ops, s + 1_000_000, 0, &v, CpuIdle::Idle)
        .is_none());
    assert!(d
        .find_busiest(&mut ops, s + 8_000_000, 0, &v, CpuIdle::Idle)
        .is_some());
}

// ----- SIS_UTIL (fair.c of v6.18: update_idle_cpu_scan, select_idle_cpu) -----

#[test]
fn sis_util_nr_idle_scan_by_hand() {
    use crate::policy::fair_lb::LlcShared;
    // Two CPUs in one LLC, imbalance_pct 117. x = sum_util / 2;
    // y = 1024 - x² · 117² / (10000 · 1024); nr_idle_scan = y · 2 / 1024.
    let t = topo(2, 1, 2, None);
    let sh = LlcShared::new(&t);
    assert_eq!(
        sh.nr_idle_scan(0),
        2,
        "as an idle LLC's periodic pass leaves it"
    );
    let scan = |sum_util| {
        sh.update_idle_cpu_scan(0, 2, sum_util, 117);
        sh.nr_idle_scan(1)
    };
    // Idle LLC: y = 1024, both CPUs.
    assert_eq!(scan(0), 2);
    // One CPU busy: x = 512, tmp = 512² · 13689 / 10 240 000 = 350, y = 674, 1348 / 1024 = 1.
    assert_eq!(scan(1024), 1);
    // x = 619: tmp = 383 161 · 13689 / 10 240 000 = 512, y = 512, 1024 / 1024 = 1.
    assert_eq!(scan(1238), 1);
    // x = 620: tmp = 513, y = 511: 0, no search.
    assert_eq!(scan(1240), 0);
    // Both busy: tmp capped at 1024.
    assert_eq!(scan(2048), 0);
    // A level that is not the LLC writes nothing.
    sh.update_idle_cpu_scan(0, 4, 0, 117);
    assert_eq!(sh.nr_idle_scan(0), 0);
    // Each LLC starts at its CPU count.
    let t = topo(6, 1, 4, None);
    let sh = LlcShared::new(&t);
    assert_eq!((sh.nr_idle_scan(0), sh.nr_idle_scan(5)), (4, 2));
    // Eight CPUs, LLCs of four: each LLC its own hint.
    let t = topo(8, 1, 4, None);
    let sh = LlcShared::new(&t);
    // x = 1024 / 4 = 256: tmp = 65 536 · 13689 / 10 240 000 = 87, y = 937, 3748 / 1024 = 3.
    sh.update_idle_cpu_scan(5, 4, 1024, 117);
    assert_eq!(
        (sh.nr_idle_scan(4), sh.nr_idle_scan(7), sh.nr_idle_scan(0)),
        (3, 3, 4)
    );
}

#[test]
fn sis_util_limits_the_wakeups_idle_search() {
    use crate::policy::fair_lb::LlcShared;
    use crate::task::Tasks;
    // Four CPUs in one LLC. p last ran on CPU 0, the waker runs alone there (sync: the target
    // is CPU 0, busy); CPU 1 busy, CPUs 2 and 3 idle.
    let t = topo(4, 1, 4, None);
    let st = [busy(1, 1024), busy(1, 1024), cpu(0, 0), cpu(0, 0)];
    let sh = LlcShared::new(&t);
    let wake = |sis: Option<&LlcShared>| {
        let mut tasks: Tasks<()> = Tasks::new();
        let p = tasks.spawn();
        tasks[p].cpu = 0;
        let v = view_of(&st, &t);
        let kind = WakeKind::Wakeup { sync: true };
        select_cpu_v6_18(
            &tasks.view(),
            &v,
            p,
            0,
            kind,
            1024,
            NICE_0,
            false,
            None,
            sis,
        )
    };
    // Without SIS_UTIL, or with the whole LLC to scan, the search from CPU 1 on finds CPU 2.
    assert_eq!(wake(None), 2);
    assert_eq!(wake(Some(&sh)), 2);
    // nr_idle_scan 0 (an LLC at 85 % and more): no search, the target.
    sh.update_idle_cpu_scan(0, 4, 4096, 117);
    assert_eq!(sh.nr_idle_scan(0), 0);
    assert_eq!(wake(Some(&sh)), 0);
    // nr_idle_scan 1: "--nr" leaves 1 for CPU 1, busy; then 0: stop, the target.
    // x = 1200 / 4 = 300: tmp = 90 000 · 13689 / 10 240 000 = 120, y = 904, 3616 / 1024 = 3;
    // x = 1800 / 4 = 450: tmp = 270, y = 754, 2 CPUs; x = 2048 / 4 = 512: tmp = 350,
    // y = 674, 2; x = 2600 / 4 = 650: tmp = 564, y = 460, 1.
    sh.update_idle_cpu_scan(0, 4, 2600, 117);
    assert_eq!(sh.nr_idle_scan(0), 1);
    assert_eq!(wake(Some(&sh)), 0);
    // nr_idle_scan 2: CPU 1 (busy), then CPU 2 (idle): taken.
    sh.update_idle_cpu_scan(0, 4, 2048, 117);
    assert_eq!(sh.nr_idle_scan(0), 2);
    assert_eq!(wake(Some(&sh)), 2);
}
