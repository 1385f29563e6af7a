//! A timed sleep's own interrupt (`costs.timer_wake_exit_ns`): the wakeup falls
//! `timer_irq_ns - timer_wake_exit_ns` into the interrupt, on the CPU the task slept on; an
//! idle CPU first leaves its idle state and then schedules with no IPI.

use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::trace::{EventKind, Trace, TraceRecorder};
use schedkit::workload::Workload;

const IRQ: u64 = 20_000;
const AFTER: u64 = 8_000;
const EXIT: u64 = 30_000;

/// One CPU (up-2002), with the new facts where `priced`.
fn machine(priced: bool) -> Machine {
    let mut m = Machine::load("up-2002").unwrap();
    let c = &mut m.profile.costs;
    c.timer_irq_ns = IRQ as f64;
    c.idle_exit_ns = EXIT as f64;
    c.timer_wake_exit_ns = priced.then_some(AFTER as f64);
    m
}

fn workload(hog: bool) -> Workload {
    let hog = if hog {
        "[[group]]\nname = \"hog\"\ncount = 1\nnice = 19\nprogram = [\"compute 1s\"]\n"
    } else {
        ""
    };
    let text = format!(
        "name = \"sleeper\"\n{hog}[[group]]\nname = \"sleeper\"\ncount = 1\nprogram = [\"loop 10\", \"sleep 3ms\", \"compute 50us\", \"end\"]\n"
    );
    schedkit::workload::file::parse_str(&text, "timer.toml", "timer").unwrap()
}

fn run(m: &Machine, w: &Workload) -> Trace {
    let mut rec = TraceRecorder::new(None);
    let cfg = SimConfig {
        duration_ns: 40_000_000,
        trace: Some(&mut rec),
        ..Default::default()
    };
    PolicyKind::Eevdf.simulate(m, w, cfg).unwrap();
    rec.finish()
}

/// (time of each wakeup of the sleeper in an interrupt, time to the switch to it after).
fn wakeups(t: &Trace) -> Vec<(u64, u64)> {
    let sleeper = (0..t.tasks.len())
        .find(|&i| t.tasks[i].comm.contains("sleeper"))
        .unwrap();
    let mut out = vec![];
    let mut waking = None;
    for e in &t.events {
        match e.kind {
            EventKind::Waking { task, irq, .. } if task == sleeper && irq => waking = Some(e.ts),
            EventKind::Switch { next: Some(n), .. } if n == sleeper => {
                if let Some(w) = waking.take() {
                    out.push((w, e.ts - w));
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn on_a_busy_cpu_the_wakeup_comes_before_the_interrupts_exit() {
    let t = run(&machine(true), &workload(true));
    let w = wakeups(&t);
    assert!(w.len() >= 8, "{w:?}");
    // The first wakeup finds the hog inside its protected slice and waits for it; each later
    // one preempts it at once: the exit part, then schedule()'s own work (tens of ns at 1 GHz).
    for &(_, gap) in &w[1..] {
        assert!((AFTER..AFTER + 2_000).contains(&gap), "{w:?}");
    }
    // Without the fact: the wakeup is at the interrupt's end (the older model).
    let old = wakeups(&run(&machine(false), &workload(true)));
    assert!(old[1..].iter().all(|&(_, gap)| gap < 2_000), "{old:?}");
}

#[test]
fn on_an_idle_cpu_the_exit_from_idle_comes_before_the_handler_and_no_ipi_after() {
    let t = run(&machine(true), &workload(false));
    let w = wakeups(&t);
    assert!(w.len() >= 8, "{w:?}");
    // The sleeps are 3 ms after a 50 us run that began at a switch: each wakeup lies the idle
    // exit and the interrupt's entry past the expiry, and the switch follows the exit part.
    for pair in w.windows(2) {
        let period = pair[1].0 - pair[0].0;
        assert!(
            period >= 3_050_000 + EXIT + (IRQ - AFTER),
            "wakeups {pair:?} closer than sleep + run + idle exit + entry"
        );
    }
    for &(_, gap) in &w {
        assert!((AFTER..AFTER + 2_000).contains(&gap), "{w:?}");
    }
    // The older model sends the CPU an IPI after the wakeup: the idle exit falls after it.
    let old = wakeups(&run(&machine(false), &workload(false)));
    assert!(old.iter().all(|&(_, gap)| gap >= EXIT), "{old:?}");
}

#[test]
fn a_wake_exit_longer_than_the_interrupt_is_refused() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/up-2002.toml"
    ))
    .unwrap()
    .replace("[costs]", "[costs]\ntimer_wake_exit_ns = 1e9");
    let dir = std::env::temp_dir().join(format!("schedkit-timer-irq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.toml");
    std::fs::write(&p, text).unwrap();
    let e = Machine::load(p.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("costs.timer_wake_exit_ns"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
