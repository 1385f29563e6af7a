//! The two-socket server profiles (`epyc-7763-2s`, `spr-8480-2s`): every built-in workload
//! runs under every class on both; on the EPYC, hogs crowded on one CCX spread to the other
//! CCXs, and a pair of tasks talking over pipes stays under one last-level cache.

use schedkit::machine::Machine;
use schedkit::metrics::RunResult;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::task::CpuMask;
use schedkit::trace::{EventKind, TraceRecorder};
use schedkit::workload::builtin::BUILTINS;
use schedkit::workload::{Dist, Op, ProgramBuilder, TaskSpec, Workload};

fn cfg(ms: u64, trace: Option<&mut TraceRecorder>) -> SimConfig<'_> {
    SimConfig {
        duration_ns: ms * 1_000_000,
        seed: 3,
        audit_every: 0,
        progress: None,
        lock_mode: Default::default(),
        max_live_tasks: schedkit::workload::limits::MAX_TASKS,
        trace,
        governor: None,
        phases: Vec::new(),
        starve: None,
    }
}

/// Every built-in at its defaults (a background-only one beside `loops`), under every class,
/// on both server profiles, for 5 ms of simulated time: it must run without an error, and the
/// invariants are audited at the end of each run.
#[test]
fn every_builtin_runs_under_every_class_on_both_servers() {
    for machine in ["epyc-7763-2s", "spr-8480-2s"] {
        let m = Machine::load(machine).unwrap();
        for b in BUILTINS {
            // A background-only built-in is refused alone (the run would end at once).
            let w = Workload::parse(b.name)
                .or_else(|_| Workload::parse(&format!("loops:n=4+{}", b.name)))
                .unwrap();
            for &policy in PolicyKind::ALL {
                let r: RunResult = policy
                    .simulate(&m, &w, cfg(5, None))
                    .unwrap_or_else(|e| panic!("{} on {machine} / {}: {e}", policy.name(), w.name));
                assert!(r.metrics.sim.events > 0, "{} / {}", policy.name(), w.name);
            }
        }
    }
}

/// `n` busy loops that start with their affinity set to `start` (so the round-robin initial
/// placement puts them there) and widen it to the whole machine as their first act, as a
/// `taskset` that lets go would.
fn hogs_started_on(n: usize, start: CpuMask, ncpus: usize) -> Workload {
    let mut w = Workload::parse("loops:n=1").unwrap();
    w.name = format!("{n} hogs");
    w.programs.clear();
    w.tasks.clear();
    let prog = ProgramBuilder::new()
        .op(Op::SetAffinity(CpuMask::first_n(ncpus)))
        .repeat(None)
        .op(Op::Compute(Dist::Const(10_000_000)))
        .op(Op::Count)
        .end()
        .build("hog");
    w.programs.push(prog.with_working_set(4));
    for i in 0..n {
        let mut t = TaskSpec::new(0);
        t.mm = i as u32;
        t.affinity = Some(start);
        w.tasks.push(t);
    }
    w
}

/// The CPU each task (by its trace index) ran on last within the trace's window.
fn last_cpus(trace: &schedkit::trace::Trace) -> Vec<(usize, u32)> {
    let mut last = std::collections::BTreeMap::new();
    for e in &trace.events {
        if let EventKind::Switch { next: Some(t), .. } = e.kind {
            last.insert(t, e.cpu);
        }
    }
    last.into_iter().collect()
}

/// 32 hogs started two to a CPU on the 16 CPUs of the EPYC's first CCX: the CCX is overloaded
/// and idle CPUs elsewhere pull its waiting hogs, so that after a second no CPU runs two and
/// the hogs sit under several last-level caches. (Sixteen hogs, one per CPU of the CCX, would
/// stay there: no CPU would have a task waiting, and the model has no active balancing, the
/// kernel's migration thread pushing a running task away; see docs/modern.md.)
#[test]
fn hogs_crowded_on_one_ccx_spread_to_other_ccxs() {
    let m = Machine::load("epyc-7763-2s").unwrap();
    let topo = &m.topology;
    let ccx0 = CpuMask::first_n(16);
    assert!((0..16).all(|c| topo.cache[c] == topo.cache[0]) && topo.cache[16] != topo.cache[0]);
    let w = hogs_started_on(32, ccx0, m.ncpus());
    for name in ["cfs", "eevdf", "eevdf:era=6.18"] {
        let policy = PolicyKind::parse(name).unwrap();
        let mut rec = TraceRecorder::new(None);
        policy.simulate(&m, &w, cfg(1000, Some(&mut rec))).unwrap();
        let trace = rec.finish();
        let hogs: Vec<(usize, u32)> = last_cpus(&trace)
            .into_iter()
            .filter(|&(t, _)| trace.tasks[t].comm == "hog")
            .collect();
        assert_eq!(hogs.len(), 32, "{name}: every hog ran");
        let mut per_cpu = std::collections::BTreeMap::new();
        let mut llcs = std::collections::BTreeSet::new();
        for &(_, cpu) in &hogs {
            *per_cpu.entry(cpu).or_insert(0) += 1;
            llcs.insert(topo.cache[cpu as usize]);
        }
        let on_ccx0 = hogs.iter().filter(|&&(_, c)| c < 16).count();
        assert!(
            per_cpu.values().all(|&n| n == 1),
            "{name}: a CPU still runs two hogs: {per_cpu:?}"
        );
        assert!(
            on_ccx0 <= 16 && llcs.len() >= 2,
            "{name}: {on_ccx0} hogs on CCX 0, {} LLCs used",
            llcs.len()
        );
    }
}

/// Two tasks passing a byte back and forth over pipes (`pipechain:groups=1,len=2`) on the
/// idle EPYC: every wakeup is affine (the waker's CPU or an idle CPU sharing its LLC), so the
/// pair never leaves the CCX it started on, though 240 idle CPUs lie beyond it.
#[test]
fn a_pipe_pair_stays_under_one_llc() {
    let m = Machine::load("epyc-7763-2s").unwrap();
    let w = Workload::parse("pipechain:groups=1,len=2").unwrap();
    for name in ["cfs", "eevdf", "eevdf:era=6.18"] {
        let policy = PolicyKind::parse(name).unwrap();
        let mut rec = TraceRecorder::new(None);
        let r = policy.simulate(&m, &w, cfg(200, Some(&mut rec))).unwrap();
        let trace = rec.finish();
        let mut llcs = std::collections::BTreeSet::new();
        let mut switches = 0;
        for e in &trace.events {
            if let EventKind::Switch { next: Some(_), .. } = e.kind {
                llcs.insert(m.topology.cache[e.cpu as usize]);
                switches += 1;
            }
        }
        assert!(
            switches > 1000,
            "{name}: the pair ran ({switches} switches in)"
        );
        assert_eq!(llcs.len(), 1, "{name}: the pair ran under LLCs {llcs:?}");
        assert!(r.metrics.sim.events > 0);
    }
}
