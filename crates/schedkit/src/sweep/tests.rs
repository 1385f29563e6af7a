//! Unit tests of sweeps: brace and seed expansion, `record`, a value named twice, grid errors
//! by line, a grid's size counted before anything expands, a row's columns, any grid text
//! parsed or refused without a panic.

use super::grid::parse_seeds;
use super::*;
use serde_json::Value;

#[test]
fn braces_multiply_in_order() {
    assert_eq!(
        expand_braces("chat:rooms={5,10},messages={1,2}").unwrap(),
        vec![
            "chat:rooms=5,messages=1",
            "chat:rooms=5,messages=2",
            "chat:rooms=10,messages=1",
            "chat:rooms=10,messages=2"
        ]
    );
    assert_eq!(expand_braces("yield").unwrap(), vec!["yield"]);
    assert!(expand_braces("a={1,2").is_err());
    assert!(expand_braces("a=1}").is_err());
    assert!(expand_braces("a={1,,2}").is_err());
}

#[test]
fn seed_ranges_follow_rust() {
    assert_eq!(parse_seeds("1..4").unwrap(), 1..=3);
    assert_eq!(parse_seeds("1..=4").unwrap(), 1..=4);
    assert_eq!(parse_seeds("7").unwrap(), 7..=7);
    assert!(parse_seeds("4..4").is_err());
    assert!(parse_seeds("0..0").is_err());
    assert!(parse_seeds("a..4").is_err());
    // The largest seed is a seed (a range stays a range: nothing is listed here).
    assert_eq!(
        parse_seeds("18446744073709551615..=18446744073709551615").unwrap(),
        u64::MAX..=u64::MAX
    );
    assert_eq!(
        parse_seeds("0..=18446744073709551615").unwrap(),
        0..=u64::MAX
    );
}

#[test]
fn a_record_entry_keeps_whole_names_only() {
    assert!(records("metrics.throughput.value", "throughput"));
    assert!(records("metrics.context_switches", "context_switches"));
    assert!(records(
        "metrics.wakeup_latency_us.p99",
        "wakeup_latency_us"
    ));
    assert!(records("policy", "policy"));
    assert!(!records(
        "metrics.context_switches_per_s",
        "context_switches"
    ));
    assert!(!records("metrics.wakeup_latency_us.p99", "wake"));
}

#[test]
fn a_value_named_twice_on_an_axis_makes_one_point_and_a_note() {
    // Each of these used to make the same point twice: the sweep ran both and then
    // panicked looking for the second row.
    let g = parse_grid(
            "policies = [\"o1\", \" o1 \", \"eevdf\", \"eevdf:era=6.6\"]\nmachines = \"smp2-2002\"\nworkloads = [\"yield:instances={2,2}\"]\nseeds = [1, 1, 2]\nduration = [\"1ms\", \"1000us\"]\n",
            "g.toml",
            None,
        )
        .unwrap();
    let keys: std::collections::HashSet<String> = g.points.iter().map(Point::key).collect();
    assert_eq!(keys.len(), g.points.len(), "every point once");
    assert_eq!(g.points.len(), 2 * 2);
    assert_eq!(g.notes.len(), 5, "{:?}", g.notes);
    assert!(
        g.notes.iter().any(|n| n.starts_with("seeds: 1 ")),
        "{:?}",
        g.notes
    );
    assert!(
        g.notes
            .iter()
            .any(|n| n.contains("'eevdf:era=6.6' is the policy 'eevdf'")),
        "{:?}",
        g.notes
    );
}

#[test]
fn a_grid_expands_axes_and_names_bad_lines() {
    let g = parse_grid(
            "policies = [\"goodness\", \"o1\"]\nmachines = \"smp2-2002\"\nworkloads = [\"yield:instances={2,4}\"]\nseeds = \"1..=3\"\nduration = \"10ms\"\n",
            "g.toml",
            None,
        )
        .unwrap();
    assert_eq!(g.points.len(), 2 * 2 * 3);
    assert_eq!(g.points[0].workload, "yield:instances=2");
    assert_eq!(g.points[0].seed, 1);
    assert_eq!(g.points[11].policy, "o1");
    let e = parse_grid(
            "policies = [\"o1\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\"yield\",\n  \"nosuch:x=1\"]\n",
            "g.toml",
            None,
        )
        .unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    let e = parse_grid(
        "policies = [\"o1\", \"o2\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\"yield\"]\n",
        "g.toml",
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.problem.contains("o2"), "{e}");
    let e = parse_grid(
        "policies = [\"o1\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\"yield\"]\nseedz = 3\n",
        "g.toml",
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 4, "{e}");
}

#[test]
fn a_row_is_the_inputs_and_the_flattened_result() {
    let g = parse_grid(
            "policies = \"o1\"\nmachines = \"smp2-2002\"\nworkloads = \"yield:instances=4\"\nduration = \"20ms\"\n",
            "g.toml",
            None,
        )
        .unwrap();
    let p = &g.points[0];
    let r = run_point(p);
    let all = row(p, &r, None);
    assert_eq!(all["policy"], "o1");
    assert_eq!(all["duration_s"], 0.02);
    let r = r.unwrap();
    assert_eq!(
        all["metrics.context_switches"],
        Value::from(r.metrics.context_switches)
    );
    assert!(all.contains_key("metrics.wakeup_latency_us.p99"));
    assert!(!all
        .keys()
        .any(|k| k.starts_with("metrics.wakeup_latency_cdf_us")));
    let kept = row(p, &Ok(r), Some(&["context_switches".to_string()]));
    assert!(kept.contains_key("metrics.context_switches"));
    // A whole name, not a text prefix (issue 34): the rate is another column.
    assert!(!kept.contains_key("metrics.context_switches_per_s"));
    assert!(!kept.contains_key("metrics.migrations"));
}

/// A class value the caller built (the Python package's adapter is one) runs as the named
/// policy of the same class does: the same stack, configuration and figures, RT balancing
/// included (passive and push/pull, with RT tasks in the workload).
#[test]
fn a_class_value_runs_as_its_named_policy_does() {
    for rt in ["passive", "pushpull"] {
        let g = parse_grid(
            &format!(
                "policies = \"o1\"\nmachines = \"smp4-2002\"\nworkloads = \"hackbench:groups=2+rtmix\"\nduration = \"50ms\"\nrt_balance = \"{rt}\"\n"
            ),
            "g.toml",
            None,
        )
        .unwrap();
        let p = &g.points[0];
        let machine = crate::machine::Machine::load(&p.machine).unwrap();
        let workload = crate::workload::Workload::parse(&p.workload).unwrap();
        let mut named = run_on(p, &machine, &workload).unwrap();
        let env = crate::class::BuildEnv::of_machine(&machine, p.rt_balance);
        let class = crate::policy::o1::O1::from_env(&env);
        let mut value = run_class_on(p, &machine, &workload, class).unwrap();
        named.metrics.sim.wall_s = 0.0;
        value.metrics.sim.wall_s = 0.0;
        assert!(named.metrics.context_switches > 0);
        assert_eq!(named.rt_balance.as_deref(), Some(rt));
        assert_eq!(named, value, "rt_balance {rt}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// Any text, and any byte-level edit of a valid grid, is parsed or refused with a line
    /// inside the text; nothing panics.
    #[test]
    fn grids_are_parsed_or_refused_never_panic(
        junk in "[\\PC\n]{0,200}",
        at in 0usize..400,
        insert in "[\\[\\]{},=\"'.0-9a-z\n ]{0,12}",
    ) {
        let ok = "policies = [\"o1\"]\nmachines = \"smp2-2002\"\nworkloads = [\"yield:instances={2,4}\"]\nseeds = \"1..=3\"\nduration = \"10ms\"\n";
        for text in [junk.clone(), {
            let mut t = ok.to_string();
            let mut i = at.min(t.len());
            while !t.is_char_boundary(i) { i -= 1; }
            t.insert_str(i, &insert);
            t
        }] {
            if let Err(e) = parse_grid(&text, "g.toml", None) {
                proptest::prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1) + 1, "{e}");
            }
        }
    }
}

#[test]
fn brace_bombs_are_refused_before_expanding() {
    let bomb = "yield:instances={1,2,3,4,5,6,7,8,9,10}".repeat(8);
    assert!(expand_braces(&bomb).unwrap_err().contains("more than"));
}

/// A spec of many brace groups expands in a loop: as a recursion (one frame a group) 100 000
/// groups overflowed the test thread's stack, an abort on user input.
#[test]
fn a_spec_of_many_brace_groups_expands_without_recursing() {
    let spec = format!("yield:instances=2{}", "{x}".repeat(100_000));
    let want = format!("yield:instances=2{}", "x".repeat(100_000));
    assert_eq!(expand_braces(&spec).unwrap(), vec![want]);
}

/// The grid's size is counted, as the product of its axes as written, before a brace group or
/// a seed range expands or a workload is parsed: a grid of 10^12 points is refused at once,
/// naming the limit, the axes and the line of the largest. Its first workload spec has an
/// empty brace choice, an error that only expanding finds: were the count made after
/// expanding, that would be the error (and were it made after parsing each workload, the
/// million specs of the second would be parsed first).
#[test]
fn a_grid_too_big_is_refused_before_anything_expands() {
    let choices = (1..=1000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let text = format!(
        "policies = \"o1\"\nmachines = \"smp2-2002\"\nworkloads = [\n  \"yield:instances={{1,,2}}\",\n  \"yield:instances={{{choices}}},nice={{{choices}}}\",\n]\nseeds = \"1..=1000000\"\n"
    );
    let e = parse_grid(&text, "g.toml", None).unwrap_err();
    assert_eq!(
        e.problem,
        "the grid has 1000003000000 points (1000003 workloads x 1000000 seeds), more than the limit of 2000000"
    );
    assert_eq!(e.line, 5, "the line of the spec standing for the most: {e}");
    // Past 2^64: 4^40 workloads times 2^64 seeds, the counts' overflow named.
    let text = format!(
        "policies = \"o1\"\nmachines = \"smp2-2002\"\nworkloads = \"yield:instances=2{}\"\nseeds = \"0..=18446744073709551615\"\n",
        "{a,b,c,d}".repeat(40)
    );
    let e = parse_grid(&text, "g.toml", None).unwrap_err();
    assert_eq!(
        e.problem,
        "the grid has 2^64 or more points (2^64 or more workloads x 2^64 or more seeds), more than the limit of 2000000"
    );
}

/// `parse_grid_limited` refuses a grid of more points than its limit and takes one of exactly
/// as many; the count is of the axes as written, a value given twice (seed 1 here) counted
/// twice though it makes one point.
#[test]
fn a_caller_may_give_a_smaller_limit() {
    let text = "policies = [\"o1\", \"cfs\"]\nmachines = \"smp2-2002\"\nworkloads = \"yield:instances=2\"\nseeds = [1, 1, 2]\n";
    let g = parse_grid_limited(text, "g.toml", None, 6).unwrap();
    assert_eq!(g.points.len(), 2 * 2);
    let e = parse_grid_limited(text, "g.toml", None, 5).unwrap_err();
    assert_eq!(
        e.problem,
        "the grid has 6 points (2 policies x 3 seeds), more than the limit of 5"
    );
    assert_eq!(e.line, 4, "the seeds' line: {e}");
    let e = parse_grid_limited(text, "g.toml", None, 0).unwrap_err();
    assert!(e.problem.ends_with("more than the limit of 0"), "{e}");
    assert_eq!(parse_grid(text, "g.toml", None).unwrap().points.len(), 4);
}
