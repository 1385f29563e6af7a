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

/// `sim.sent_unwaited` counts the messages sent while no receiver waited: a receiver that gets
/// there after the sender does not block (the count a replay's lost wakeups are read from);
/// one that gets there first blocks and is woken, and its message is not counted.
#[test]
fn messages_sent_before_their_receiver_waited_are_counted() {
    let m = Machine::load("smp2-2002").unwrap();
    let run = |receiver: &str, sender: &str| {
        let text = format!(
            "[[channel]]\nname = \"c\"\n[[group]]\nname = \"r\"\nprogram = [{receiver}]\n\
             [[group]]\nname = \"s\"\nprogram = [{sender}]\n"
        );
        let w = schedkit::workload::file::parse_str(&text, "c.toml", "c").unwrap();
        let cfg = SimConfig {
            duration_ns: 100_000_000,
            ..Default::default()
        };
        let r = PolicyKind::O1.simulate(&m, &w, cfg).unwrap();
        assert!(r.completed, "{}", r.stop_reason);
        r.metrics.sim.sent_unwaited
    };
    // The receiver computes 1 ms first: the message is there when it asks.
    assert_eq!(run("\"compute 1ms\", \"recv c\"", "\"send c\""), 1);
    // The sender computes first: the receiver waits and is woken.
    assert_eq!(run("\"recv c\"", "\"compute 1ms\", \"send c\""), 0);
    // Three messages sent ahead of three receives.
    assert_eq!(
        run(
            "\"compute 1ms\", \"recv c\", \"recv c\", \"recv c\"",
            "\"send c\", \"send c\", \"send c\""
        ),
        3
    );
}
