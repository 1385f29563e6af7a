//! Two scheduler classes written outside schedkit, against its public class interface, and
//! their registry entries: [`FIFO`] (first come, first served, no preemption) and [`LOTTERY`]
//! (Waldspurger and Weihl's lottery scheduling, tickets by nice level). `main.rs` hands both
//! to schedkit's command line; `docs/own-class.md` (at the repository's root) walks through
//! `fifo.rs` hook by hook.

pub mod fifo;
pub mod lottery;

use schedkit::registry::ExternalPolicy;

/// `--policy fifo`.
pub static FIFO: ExternalPolicy = ExternalPolicy::new::<fifo::Fifo>(
    "fifo",
    "First come, first served (an example class outside schedkit): one FIFO list per CPU, no preemption, a yield goes to the back; waking tasks return to their CPU, new ones go to the least loaded",
)
.aliases(&["fcfs"])
.hz(1000);

/// `--policy lottery`.
pub static LOTTERY: ExternalPolicy = ExternalPolicy::new::<lottery::Lottery>(
    "lottery",
    "Lottery scheduling (Waldspurger and Weihl, OSDI 1994; an example class outside schedkit): tickets by nice weight, a seeded draw per CPU every 10 ms quantum, placement as fifo",
)
.hz(1000);
