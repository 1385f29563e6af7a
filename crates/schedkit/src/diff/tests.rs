use super::*;
use crate::sim::decisions::DecisionLog;
use serde_json::Value;

fn setup(workload: &str) -> (Machine, Workload) {
    (
        Machine::load("smp2-2002").unwrap(),
        Workload::parse(workload).unwrap(),
    )
}

fn short() -> DiffConfig {
    DiffConfig {
        duration_ns: 200_000_000,
        ..Default::default()
    }
}

/// A result as JSON without the host's wall time (the only field that may differ).
fn figures(r: &RunResult) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                o.remove("wall_s");
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(r).unwrap();
    strip(&mut v);
    v
}

#[test]
fn a_policy_against_itself_differs_nowhere() {
    let (m, w) = setup("yield:instances=4");
    let p = PolicyKind::parse("o1").unwrap();
    let d = diff(p, p, &m, &w, short()).unwrap();
    assert_eq!(d.first, None, "{}", d.render());
    assert!(d.a.decisions > 100, "{} decisions", d.a.decisions);
    assert_eq!(d.a.decisions, d.b.decisions);
    assert_eq!(d.same, d.a.decisions);
    assert!(d.a.at.is_none() && d.b.at.is_none());
    assert!(d.render().contains("No decision differs"), "{}", d.render());
}

#[test]
fn o1_and_its_2002_era_differ_and_a_rerun_reaches_the_same_decision() {
    let (m, w) = setup("yield:instances=4");
    let a = PolicyKind::parse("o1").unwrap();
    let b = PolicyKind::parse("o1:era=2002").unwrap();
    let cfg = short();
    let d = diff(a, b, &m, &w, cfg).unwrap();
    let i = d.first.expect("o1 and o1:era=2002 decide differently");
    assert_eq!(d.same, i);
    let (fa, fb) = (d.a.at.clone().unwrap(), d.b.at.clone().unwrap());
    assert_eq!((fa.index, fb.index), (i, i));
    assert!(!fa.decision.same(&fb.decision, false));
    assert_eq!(
        d.what.as_deref(),
        Some(&*fa.decision.differences(&fb.decision))
    );
    // Both runs' states show every CPU.
    assert_eq!(fa.state.cpus.len(), 2);
    assert!(
        fa.state.rule.contains("O(1)")
            || fa.state.rule.contains("idle")
            || fa.state.rule.contains("select_task_rq")
    );
    // Determinism: running each again to decision i gives the same decision and state.
    for (p, f) in [(a, &fa), (b, &fb)] {
        let mut log = DecisionLog::capture_at(i);
        let config = SimConfig {
            duration_ns: cfg.duration_ns,
            seed: cfg.seed,
            ..Default::default()
        };
        p.simulate_logged(cfg.rt_balance, &m, &w, config, Some(&mut log))
            .unwrap();
        assert_eq!(log.found(), Some(f));
    }
    let text = d.render();
    assert!(
        text.contains(&format!("First differing decision: #{i}")),
        "{text}"
    );
    assert!(text.contains("o1:era=2002"), "{text}");
}

#[test]
fn recording_decisions_changes_no_figure() {
    let (m, w) = setup("yield:instances=4");
    let a = PolicyKind::parse("o1").unwrap();
    let b = PolicyKind::parse("cfs").unwrap();
    let cfg = short();
    let d = diff(a, b, &m, &w, cfg).unwrap();
    for (p, r) in [(a, &d.runs[0]), (b, &d.runs[1])] {
        let plain = p
            .simulate(
                &m,
                &w,
                SimConfig {
                    duration_ns: cfg.duration_ns,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(figures(&plain), figures(r), "{}", p.label());
    }
}

#[test]
fn a_limit_stops_the_comparison_there() {
    let (m, w) = setup("yield:instances=4");
    let p = PolicyKind::parse("cfs").unwrap();
    let d = diff(
        p,
        p,
        &m,
        &w,
        DiffConfig {
            limit: 50,
            ..short()
        },
    )
    .unwrap();
    assert_eq!(d.first, None);
    assert_eq!(d.same, 50);
    assert!(d.limit_reached);
    assert!(
        d.render().contains("the first 50: the limit"),
        "{}",
        d.render()
    );
    let zero = diff(
        p,
        p,
        &m,
        &w,
        DiffConfig {
            limit: 0,
            ..short()
        },
    );
    assert!(zero.is_err());
}
