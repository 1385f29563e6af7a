//! Fields of a run's result that users read directly (issue 34: the JSON had no raw count of
//! the `count` statement, only a rate).

use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::workload::Workload;

/// `throughput.count` is the number of `count` statements run: two loops on one CPU for 1 s
/// count once per 10 ms of CPU each, 100 in all; the rate is that over the simulated time,
/// times the loops' scale (CPU-seconds per count).
#[test]
fn the_raw_count_is_in_the_result_beside_the_rate() {
    let m = Machine::load("up-2002").unwrap();
    let cfg = SimConfig {
        duration_ns: 1_000_000_000,
        ..Default::default()
    };
    let w = Workload::parse("loops:n=2").unwrap();
    let r = PolicyKind::parse("cfs")
        .unwrap()
        .simulate(&m, &w, cfg)
        .unwrap();
    let t = &r.metrics.throughput;
    assert!((95..=100).contains(&t.count), "{}", t.count);
    assert!((t.value - t.count as f64 / r.simulated_s * 0.01).abs() < 1e-9);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["metrics"]["throughput"]["count"], t.count);
}
