//! Unit tests of the validation: targets, the kernel's range, model figures, the spread of
//! CPU time, a bad suite refused with its place.

use super::*;
use crate::trace::figures::figures;

#[test]
fn tolerances() {
    assert_eq!(Tolerance::Relative(0.15).holds(100.0, 115.0), Some(true));
    assert_eq!(Tolerance::Relative(0.15).holds(100.0, 116.0), Some(false));
    assert_eq!(Tolerance::Relative(0.15).holds(100.0, 85.0), Some(true));
    assert_eq!(Tolerance::Relative(0.15).holds(0.0, 0.0), Some(true));
    assert_eq!(Tolerance::Relative(0.15).holds(0.0, 1.0), Some(false));
    assert_eq!(Tolerance::Factor(2.0).holds(10.0, 20.0), Some(true));
    assert_eq!(Tolerance::Factor(2.0).holds(10.0, 4.9), Some(false));
    assert_eq!(Tolerance::None.holds(1.0, 9.0), None);
}

#[test]
fn the_kernels_range_and_a_target_of_any_recording() {
    // Recorded 100; the repeats 60 and 130: range 60..130. Replayed 68 misses ±15 % of
    // 100 (−32 %) but is within it of 60 (+13 %).
    let r =
        Row::new("switches", 100.0, 68.0, Tolerance::Relative(0.15)).with_repeats(&[60.0, 130.0]);
    assert_eq!(r.within, Some(false));
    assert_eq!(r.kernel_range, Some((60.0, 130.0)));
    assert_eq!(r.within_some_run, Some(true));
    // 40 is within ±15 % of none of them.
    let r =
        Row::new("switches", 100.0, 40.0, Tolerance::Relative(0.15)).with_repeats(&[60.0, 130.0]);
    assert_eq!(r.within_some_run, Some(false));
    // A figure without a target: inside the bare range or not.
    let r = Row::new("p99", 100.0, 131.0, Tolerance::None).with_repeats(&[60.0, 130.0]);
    assert_eq!((r.within, r.within_some_run), (None, Some(false)));
    // No repeats: nothing to say.
    let r = Row::new("p99", 100.0, 131.0, Tolerance::None).with_repeats(&[]);
    assert_eq!((r.kernel_range, r.within_some_run), (None, None));
}

#[test]
fn model_figures_parse() {
    assert_eq!(ModelFigure::parse("elapsed_s"), Ok(ModelFigure::ElapsedS));
    assert_eq!(
        ModelFigure::parse("elapsed_per_op_us:ops=100"),
        Ok(ModelFigure::ElapsedPerOpUs(100))
    );
    assert!(ModelFigure::parse("elapsed_per_op_us:ops=0").is_err());
    assert!(ModelFigure::parse("speed").unwrap_err().contains("one of"));
}

#[test]
fn spread_of_cpu_time() {
    let t = |ms: f64| crate::trace::figures::TaskFigures {
        pid: 1,
        comm: "x".into(),
        cpu_ms: ms,
        runs: 1,
        wakeups: 0,
        max_wakeup_latency_us: 0.0,
        runqueue_wait_ms: 0.0,
    };
    let mut f = figures(&crate::trace::Trace::default());
    f.tasks = vec![t(1.0), t(3.0), t(0.0)];
    // Tasks that never ran are left out: mean 2, deviation 1.
    assert!((cpu_spread(&f) - 0.5).abs() < 1e-12);
}

#[test]
fn a_bad_suite_is_refused_with_its_place() {
    let dir = std::env::temp_dir().join(format!("schedkit-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |text: &str| std::fs::write(dir.join("suite.toml"), text).unwrap();
    write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\n");
    assert!(Suite::load(&dir).unwrap_err().contains("no [[workload]]"));
    write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n");
    let e = Suite::load(&dir).unwrap_err();
    assert!(
        e.contains("workload 1 ('a')") && e.contains("not found"),
        "{e}"
    );
    std::fs::write(dir.join("a.txt"), "").unwrap();
    write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n[[workload.repeat]]\ntrace = \"r/a.1.txt.zst\"\n");
    let e = Suite::load(&dir).unwrap_err();
    assert!(e.contains("repeat 1") && e.contains("not found"), "{e}");
    write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\nbogus = 1\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n");
    assert!(Suite::load(&dir).unwrap_err().contains("bogus"));
    // A class schedkit does not model loads (--policy may name another) but does not run.
    write("kernel = \"5.15\"\nmachine = \"host\"\nclass = \"cfs:era=5.15\"\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n");
    let suite = Suite::load(&dir).unwrap();
    let e = run(&suite, &Options::default(), 1, &|_| {}).unwrap_err();
    assert!(e.contains("class") && e.contains("--policy"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
