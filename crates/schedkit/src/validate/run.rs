//! Running a validation: each workload's trace replayed under the class on the machine
//! (`trace::replay`, then `PolicyKind::simulate` recording the replay's own trace), both
//! traces measured alike (`trace::figures`), the repeats measured for the kernel's own
//! range, the built-in model simulated for the headline; workloads `jobs` at a time.

use super::judge::values;
use super::{ModelFigure, Row, Suite, SuiteWorkload, WorkloadResult, FIGURES, MODEL_TOLERANCE};
use crate::machine::Machine;
use crate::registry::PolicyKind;
use crate::trace::figures::figures;
use crate::trace::{replay, TraceRecorder};

/// Options of a validation run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The class to replay under (default: the suite's).
    pub policy: Option<PolicyKind>,
    /// The machine (default: the suite's).
    pub machine: Option<Machine>,
    pub seed: u64,
    /// Only these workloads (all when empty).
    pub only: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: None,
            machine: None,
            seed: 1,
            only: Vec::new(),
        }
    }
}

/// Replays `recorded` under `policy` on `machine`: the run's result and its own trace.
pub fn replay_trace(
    recorded: &crate::trace::Trace,
    name: &str,
    policy: PolicyKind,
    machine: &Machine,
    seed: u64,
) -> Result<
    (
        crate::metrics::RunResult,
        crate::trace::Trace,
        replay::Replay,
    ),
    String,
> {
    let (workload, rep) = replay::workload(recorded, name, &replay::OpPrices::of_machine(machine))?;
    let span = recorded.end_ns.saturating_sub(recorded.start_ns);
    let mut rec = TraceRecorder::new(None);
    let cfg = crate::sim::SimConfig {
        duration_ns: span.saturating_mul(10).max(1_000_000_000),
        seed,
        trace: Some(&mut rec),
        ..Default::default()
    };
    let r = policy
        .simulate(machine, &workload, cfg)
        .map_err(|e| format!("replaying {name} under {}: {e}", policy.label()))?;
    Ok((r, rec.finish(), rep))
}

/// Validates one workload of `suite`.
pub fn run_workload(
    suite: &Suite,
    w: &SuiteWorkload,
    policy: PolicyKind,
    machine: &Machine,
    seed: u64,
) -> Result<WorkloadResult, String> {
    let path = suite.dir.join(&w.trace);
    let recorded = crate::trace::input::load(&path)?;
    let (r, t, rep) = replay_trace(&recorded, &w.name, policy, machine, seed)?;
    let (fr, fs) = (figures(&recorded), figures(&t));
    let (a, b) = (values(&fr), values(&fs));
    // The kernel's own spread: the same figures of each repeat of the recording.
    let mut reps: Vec<[f64; 7]> = Vec::with_capacity(w.repeats.len());
    for (k, r) in w.repeats.iter().enumerate() {
        let t = crate::trace::input::load(&suite.dir.join(&r.trace))
            .map_err(|e| format!("{}: repeat {}: {e}", w.name, k + 1))?;
        reps.push(values(&figures(&t)));
    }
    let rows = FIGURES
        .iter()
        .enumerate()
        .map(|(i, (name, tol))| {
            let others: Vec<f64> = reps.iter().map(|v| v[i]).collect();
            Row::new(name, a[i], b[i], *tol).with_repeats(&others)
        })
        .collect();
    let headlines: Vec<f64> = w.repeats.iter().filter_map(|r| r.headline).collect();
    // The kernel against itself: each repeat judged by the targets against the recording.
    let mut kernel_self = (0, 0);
    for v in &reps {
        for (i, (_, tol)) in FIGURES.iter().enumerate() {
            if let Some(ok) = tol.holds(a[i], v[i]) {
                kernel_self.0 += usize::from(ok);
                kernel_self.1 += 1;
            }
        }
    }
    if let Some(h) = &w.headline {
        for &v in &headlines {
            if let Some(ok) = MODEL_TOLERANCE.holds(h.value, v) {
                kernel_self.0 += usize::from(ok);
                kernel_self.1 += 1;
            }
        }
    }
    let (mut model, mut model_error) = (None, None);
    if let (Some(spec), Some(h)) = (&w.model, &w.headline) {
        let fig = match &w.model_figure {
            Some(f) => ModelFigure::parse(f)?,
            None => ModelFigure::ElapsedS,
        };
        let wl = crate::workload::Workload::parse(spec).map_err(|e| e.to_string())?;
        let cfg = crate::sim::SimConfig {
            duration_ns: 60_000_000_000,
            seed,
            ..Default::default()
        };
        match policy.simulate(machine, &wl, cfg) {
            Ok(mr) => match fig.of(&mr) {
                Some(v) => {
                    model = Some(
                        Row::new(&format!("model: {}", h.name), h.value, v, MODEL_TOLERANCE)
                            .with_repeats(&headlines),
                    )
                }
                None => model_error = Some(format!("{spec} gave no {fig:?} (not completed?)")),
            },
            Err(e) => model_error = Some(format!("{spec}: {e}")),
        }
    }
    Ok(WorkloadResult {
        name: w.name.clone(),
        command: w.command.clone(),
        policy: policy.label(),
        completed: r.completed,
        rows,
        model,
        model_error,
        recorded: fr,
        replayed: fs,
        tokens_posted_first: r.metrics.sim.sent_unwaited,
        timers_before_sleep: r.metrics.sim.timers_before_sleep,
        replay_stats: rep.stats,
        fork_starts: {
            // Where 6.18's walk is certain to leave the parent's CPU for an idle one: the
            // parent's SMT sibling, or any CPU of its LLC where no core of that LLC has SMT
            // siblings (the LLC level's groups are then single CPUs).
            let topo = &machine.topology;
            let n = topo.ncpus;
            let mut core_size = vec![0usize; topo.ncores()];
            for &k in &topo.core {
                core_size[k] += 1;
            }
            let mut smt_in_llc = vec![false; topo.ncaches()];
            for c in 0..n {
                smt_in_llc[topo.cache[c]] |= core_size[topo.core[c]] > 1;
            }
            let llc_has_smt: Vec<bool> = (0..n).map(|c| smt_in_llc[topo.cache[c]]).collect();
            let near = |a: u32, b: u32| {
                let (a, b) = (a as usize, b as usize);
                a < n
                    && b < n
                    && topo.cache[a] == topo.cache[b]
                    && (topo.core[a] == topo.core[b] || !llc_has_smt[a])
            };
            [
                crate::trace::figures::fork_starts(&recorded, &near),
                crate::trace::figures::fork_starts(&t, &near),
            ]
        },
        repeats: w.repeats.len(),
        kernel_self,
    })
}

/// Validates every (selected) workload of `suite`, `jobs` at a time; results in suite order.
pub fn run(
    suite: &Suite,
    opts: &Options,
    jobs: usize,
    on_done: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Result<WorkloadResult, String>>, String> {
    let policy = match opts.policy {
        Some(p) => p,
        None => PolicyKind::parse(&suite.class).map_err(|e| {
            format!(
                "suite {}: class: {e}; name another with --policy",
                suite.dir.display()
            )
        })?,
    };
    let machine = match &opts.machine {
        Some(m) => m.clone(),
        None => suite.machine()?,
    };
    for o in &opts.only {
        if !suite.workloads.iter().any(|w| &w.name == o) {
            let names: Vec<&str> = suite.workloads.iter().map(|w| w.name.as_str()).collect();
            return Err(format!(
                "--only {o}: no such workload in the suite ({})",
                names.join(", ")
            ));
        }
    }
    let picked: Vec<&SuiteWorkload> = suite
        .workloads
        .iter()
        .filter(|w| opts.only.is_empty() || opts.only.contains(&w.name))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<Option<Result<WorkloadResult, String>>>> =
        std::sync::Mutex::new(vec![None; picked.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(picked.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(w) = picked.get(i) else { break };
                let r = run_workload(suite, w, policy, &machine, opts.seed);
                on_done(&w.name);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    Ok(out
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect())
}
