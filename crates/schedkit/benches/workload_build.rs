//! Workloads built as data (a trace's replay, an rt-app file) against the same workloads built
//! the way they were before, through their TOML text and the workload-file parser, timed in
//! the same run and printed as a ratio:
//!
//! ```sh
//! cargo bench -p schedkit --bench workload_build
//! ```
//!
//! Each pair is also checked equal (sources and origins aside: a workload built as data points
//! at the trace or rt-app task, one read from TOML at its line), so the two sides time the
//! same result.

use schedkit::trace;
use schedkit::workload::{file, rtapp, Workload};
use std::hint::black_box;
use std::time::Instant;

fn without_origins(mut w: Workload) -> Workload {
    for p in &mut w.programs {
        p.source = None;
    }
    for t in &mut w.tasks {
        t.origin = None;
    }
    w
}

/// The best of `n` runs of `f`, in seconds, and its last result.
fn best(n: usize, f: &dyn Fn() -> Workload) -> (f64, Workload) {
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..n {
        let t = Instant::now();
        let w = black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(w);
    }
    (best, last.expect("n > 0"))
}

fn report(what: &str, data: (f64, Workload), text: (f64, Workload)) {
    assert!(
        without_origins(data.1) == without_origins(text.1),
        "{what}: the workload built as data differs from its TOML read back"
    );
    println!(
        "{what}: as data {:.2} ms, through TOML text {:.2} ms ({:.1}x)",
        data.0 * 1e3,
        text.0 * 1e3,
        text.0 / data.0
    );
}

fn main() {
    // The biggest recorded trace of the validation suite.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/validation/messaging-proc.txt.gz"
    );
    let t = trace::input::load(std::path::Path::new(path)).expect("the suite's trace");
    let prices = trace::replay::OpPrices::default();
    let data = best(5, &|| trace::replay::workload(&t, "m", &prices).unwrap().0);
    let text = best(5, &|| {
        let rep = trace::replay::to_workload(&t, "m", &prices);
        file::parse_str(&rep.toml(), "m", "m").unwrap()
    });
    report(
        &format!(
            "replay of messaging-proc ({} events, {} tasks)",
            t.events.len(),
            t.tasks.len()
        ),
        data,
        text,
    );

    // A big rt-app file: 50 000 events of runs, locks, unlocks and sleeps, 4 instances.
    let events: Vec<String> = (0..50_000)
        .map(|i| match i % 4 {
            0 => format!("\"run{i}\": {}", 100 + i % 7),
            1 => format!("\"lock{i}\": \"m{}\"", i % 10),
            2 => format!("\"unlock{i}\": \"m{}\"", (i - 1) % 10),
            _ => format!("\"sleep{i}\": {}", 50 + i % 5),
        })
        .collect();
    let json = format!(
        "{{\"tasks\": {{\"big\": {{\"instance\": 4, {}}}}}}}",
        events.join(", ")
    );
    let data = best(5, &|| rtapp::parse_str(&json, "b.json", "b").unwrap());
    let text = best(5, &|| {
        let toml = rtapp::to_toml(&json, "b.json", "b").unwrap();
        file::parse_str(&toml, "b.json", "b").unwrap()
    });
    report("rt-app file of 50 000 events", data, text);
}
