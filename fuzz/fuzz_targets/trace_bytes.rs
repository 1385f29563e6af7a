//! Any bytes as a trace file: `import::parse_bytes` reads text, trace-cmd's trace.dat
//! (versions 6 and 7, zlib or zstd) and a gzip of either, or refuses them with an error; it
//! must never panic, and what it reads must go through figures and the replay's workload.
//!
//! ```sh
//! cargo +nightly fuzz run trace_bytes fuzz/corpus/trace_bytes traces
//! ```
//!
//! (the files of `traces/` as the seeds: trace.dat files of each version and compression,
//! gzip and every text form).
#![no_main]

use libfuzzer_sys::fuzz_target;
use schedkit::trace::{figures, import, replay};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = import::parse_bytes(data) {
        let _ = figures::figures(&t);
        let prices = replay::OpPrices {
            syscall_ns: 100,
            fork_ns: 1000,
            exit_ns: 1000,
            cpus: 2,
            ..replay::OpPrices::default()
        };
        let _ = replay::workload(&t, "fuzz", &prices);
    }
});
