//! The replay's atoms, prices and rendering, on hand-written traces.

use super::*;

#[test]
fn atoms_from_a_hand_written_trace() {
    // a runs 10 µs from the start, wakes b (asleep since the start), runs 5 µs more and
    // sleeps; a timer wakes a 20 µs later; b runs 7 µs, forks c and exits.
    let text = "\
# #P:2
 x-0 [000] d..1. 0.000000: cpu_frequency: state=2400000 cpu_id=0
 a-1 [000] d..4. 0.000010: sched_waking: comm=b pid=2 prio=125 target_cpu=001
 a-1 [000] d..2. 0.000015: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 x-0 [001] d..2. 0.000016: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=125
 b-2 [001] ..... 0.000020: sched_process_fork: comm=b pid=2 child_comm=c child_pid=3
 b-2 [001] ..... 0.000022: sched_process_exit: comm=b pid=2 prio=125 group_dead=true
 b-2 [001] d..2. 0.000023: sched_switch: prev_comm=b prev_pid=2 prev_prio=125 prev_state=X ==> next_comm=x next_pid=0 next_prio=120
 x-0 [000] dNh2. 0.000035: sched_waking: comm=a pid=1 prio=120 target_cpu=000
";
    let t = import::parse(text).unwrap();
    let r = to_workload(&t, "hand", &OpPrices::default());
    assert_eq!(r.stats.task_wakeups, 1);
    assert_eq!(r.stats.timed_sleeps, 1);
    assert_eq!(r.stats.forks, 1);
    assert_eq!(r.stats.exits, 1);
    let toml = &r.toml();
    assert!(
        toml.contains(
            "\"compute 10000ns\",\n  \"send wake.0\",\n  \"compute 5000ns\",\n  \"sleep 20000ns irq-on 0\""
        ),
        "{toml}"
    );
    assert!(toml.contains("\"recv wake.0\",\n  \"compute 4000ns\",\n  \"fork t2_3_c\",\n  \"compute 3000ns\",\n  \"exit\""), "{toml}");
    assert!(toml.contains("nice = 5"), "{toml}");
    let (w, _) = workload(&t, "hand", &OpPrices::default()).unwrap();
    assert_eq!(w.tasks.len(), 2, "a and b start; c is forked");
}

#[test]
fn prices_come_off_the_run_before() {
    let mut atoms = vec![
        Atom::Run(1000),
        Atom::Wake {
            task: 0,
            ipi: false,
            sync: false,
        },
        Atom::Run(50),
        Atom::Exit,
        Atom::Run(500),
    ];
    let prices = OpPrices {
        syscall_ns: 100,
        fork_ns: 0,
        exit_ns: 300,
        switch_ns: 40,
        ipi_send_ns: 1000,
        ..OpPrices::default()
    };
    let mut st = ReplayStats::default();
    deduct(&mut atoms, &prices, &mut st);
    // The exit's 300 ns: 50 from the run before, 250 from the next one.
    assert_eq!(
        atoms,
        [
            Atom::Run(900),
            Atom::Wake {
                task: 0,
                ipi: false,
                sync: false,
            },
            Atom::Run(0),
            Atom::Exit,
            Atom::Run(250)
        ]
    );
    assert_eq!((st.deducted_ns, st.undeducted_ns), (400, 0));
    let mut short = vec![Atom::Exit];
    deduct(&mut short, &prices, &mut st);
    assert_eq!(st.undeducted_ns, 300);
    // A switch-in's price comes off the run it began; a wakeup of a task on another CPU
    // costs its waker the IPI too: 100 + 1000 off the run before it.
    let mut atoms = vec![
        Atom::Paid(40),
        Atom::Run(2000),
        Atom::Wake {
            task: 0,
            ipi: true,
            sync: false,
        },
        Atom::Paid(40),
        Atom::Run(30),
        Atom::Run(30),
    ];
    let mut st = ReplayStats::default();
    deduct(&mut atoms, &prices, &mut st);
    assert_eq!(
        atoms,
        [
            Atom::Paid(40),
            Atom::Run(2000 - 40 - 1100),
            Atom::Wake {
                task: 0,
                ipi: true,
                sync: false,
            },
            Atom::Paid(40),
            Atom::Run(0),
            Atom::Run(20)
        ]
    );
    assert_eq!((st.deducted_ns, st.undeducted_ns), (1180, 0));
}

#[test]
fn a_replay_takes_a_timed_sleeps_interrupt_off_the_sleep_and_the_run_it_interrupted() {
    // b sleeps on CPU 0 from 10 us; a timer interrupt in a's run wakes it at 1010 us; on
    // CPU 1, c sleeps from 0 and the idle CPU's interrupt wakes it at 2000 us.
    let text = "\
# #P:2
 x-0 [000] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] d..2. 0.000010: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] d.h2. 0.001010: sched_waking: comm=b pid=2 prio=120 target_cpu=000
 a-1 [000] d..2. 0.001020: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 x-0 [001] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=3 next_prio=120
 c-3 [001] d..2. 0.000000: sched_switch: prev_comm=c prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 x-0 [001] d.h2. 0.002000: sched_waking: comm=c pid=3 prio=120 target_cpu=001
 x-0 [001] d..2. 0.002010: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=3 next_prio=120
";
    let t = import::parse(text).unwrap();
    let prices = OpPrices {
        timer_irq_ns: 20_000,
        timer_entry_ns: 12_000,
        idle_exit_ns: 30_000,
        ..OpPrices::default()
    };
    let r = to_workload(&t, "hand", &prices);
    // b: 1000 us asleep less the entry; c: 2000 us less the entry and the idle exit. Each
    // ended by an interrupt on the CPU its recorded waking was on.
    assert!(
        r.toml().contains("\"sleep 988000ns irq-on 0\""),
        "{}",
        r.toml()
    );
    assert!(
        r.toml().contains("\"sleep 1958000ns irq-on 1\""),
        "{}",
        r.toml()
    );
    assert_eq!(r.stats.sleep_deducted_ns, 12_000 + 42_000);
    // a's run: 1000 us up to the interrupt and 10 us after it; the interrupt's 20 us come
    // off what follows it, all 10 us of it, and 10 us are left over.
    assert!(
        r.toml()
            .contains("program = [\n  \"compute 1000000ns\",\n]"),
        "{}",
        r.toml()
    );
    assert_eq!(r.stats.undeducted_ns, 10_000, "{:?}", r.stats);
    // Ticks: 4 400 ppm of each run.
    let mut atoms = vec![Atom::Run(1_000_000)];
    let mut st = ReplayStats::default();
    let ticks = OpPrices {
        tick_ppm: 4_400,
        ..OpPrices::default()
    };
    deduct(&mut atoms, &ticks, &mut st);
    assert_eq!(atoms, [Atom::Run(995_600)]);
}

#[test]
fn a_replay_takes_the_recorded_switches_and_ipis_off_the_runs() {
    // a (CPU 0) runs 100 us and wakes b on CPU 1; b runs 50 us there and sleeps.
    let text = "\
# #P:2
 a-1 [000] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] d..4. 0.000100: sched_waking: comm=b pid=2 prio=120 target_cpu=001
 a-1 [000] d..2. 0.000150: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 x-0 [001] d..2. 0.000110: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [001] d..2. 0.000160: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
";
    let t = import::parse(text).unwrap();
    let prices = OpPrices {
        syscall_ns: 100,
        fork_ns: 0,
        exit_ns: 0,
        switch_ns: 1000,
        ipi_send_ns: 3000,
        ..OpPrices::default()
    };
    let r = to_workload(&t, "hand", &prices);
    // a: 100 us less its switch-in (1 us), the send (0.1 us) and the IPI (3 us).
    assert!(
        r.toml().contains("\"compute 95900ns\",\n  \"send wake.0\""),
        "{}",
        r.toml()
    );
    // b: 50 us less its switch-in (1 us) and the system call of its recv (0.1 us), which
    // has no run before it to come off and so comes off the next.
    assert!(
        r.toml().contains("\"recv wake.0\",\n  \"compute 48900ns\""),
        "{}",
        r.toml()
    );
}

#[test]
fn a_waking_of_a_task_on_its_way_to_sleep_is_told_from_one_it_absorbed() {
    // b runs on CPU 1. a wakes it at 10 µs; b switches out to sleep at 11 µs and its
    // sched_wakeup follows at 12 µs (the kernel's wait for p->on_cpu): a waking of a task on
    // its way to sleep. At 30 µs a wakes b, running again, and its sched_wakeup comes at once
    // (ttwu_runnable): absorbed; b goes on and is preempted at 40 µs.
    let text = "\
# #P:2
 a-1 [000] d..2. 0.000001: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 b-2 [001] d..2. 0.000001: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 a-1 [000] d..4. 0.000010: sched_waking: comm=b pid=2 prio=120 target_cpu=001
 b-2 [001] d..2. 0.000011: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 a-1 [000] d..5. 0.000012: sched_wakeup: comm=b pid=2 prio=120 target_cpu=001
 x-0 [001] d..2. 0.000013: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 a-1 [000] d..4. 0.000030: sched_waking: comm=b pid=2 prio=120 target_cpu=001
 a-1 [000] d..5. 0.000030: sched_wakeup: comm=b pid=2 prio=120 target_cpu=001
 b-2 [001] d..2. 0.000040: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=R ==> next_comm=x next_pid=0 next_prio=120
";
    let t = import::parse(text).unwrap();
    let b = t.tasks.iter().position(|x| x.pid == 2).unwrap();
    assert_eq!(
        t.wakings_of_blocking.iter().copied().collect::<Vec<_>>(),
        vec![(10_000, b)],
        "only the first waking"
    );
    // Both wakings find b not asleep. The first is kept as a's wakeup of b: a posts at
    // 10 µs, b waits at its switch to sleep at 11 µs (before, its sleep from 11 to 13 µs
    // replayed as a timed one of 2 µs); the absorbed one is dropped.
    let r = to_workload(&t, "hand", &OpPrices::default());
    assert_eq!(r.stats.task_wakeups, 1);
    assert_eq!(r.stats.task_wakeups_of_blocking, 1);
    assert_eq!(r.stats.dropped_wakeups, 1);
    assert_eq!(r.stats.dropped_wakeups_of_blocking, 0);
    assert_eq!(r.stats.sleeps_without_wakeup, 0);
    let toml = &r.toml();
    assert!(
        toml.contains("\"compute 9000ns\",\n  \"send wake.0\""),
        "{toml}"
    );
    assert!(
        toml.contains("\"compute 10000ns\",\n  \"recv wake.0\",\n  \"compute 27000ns\""),
        "{toml}"
    );
    assert!(!toml.contains("sleep "), "{toml}");
    // A window keeps the marks inside it only.
    assert!(t.window(0, 5_000).wakings_of_blocking.is_empty());
    assert_eq!(t.window(5_000, 50_000).wakings_of_blocking.len(), 1);
}

#[test]
fn a_timed_sleep_is_ended_on_the_cpu_its_recorded_interrupt_ran_on() {
    // b sleeps on CPU 0; an interrupt on CPU 1 (the softirq of a task running there) wakes
    // it, and it runs on CPU 0 again. A sleep that ran again with no recorded wakeup names
    // no CPU.
    let text = "\
# #P:2
 x-0 [000] d..2. 0.000000: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] d..2. 0.000010: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 a-1 [001] d.s2. 0.000500: sched_waking: comm=b pid=2 prio=120 target_cpu=000
 x-0 [000] d..2. 0.000520: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
 b-2 [000] d..2. 0.000530: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 x-0 [000] d..2. 0.000900: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
";
    let t = import::parse(text).unwrap();
    let r = to_workload(&t, "hand", &OpPrices::default());
    assert!(
        r.toml().contains("\"sleep 490000ns irq-on 1\""),
        "{}",
        r.toml()
    );
    assert!(r.toml().contains("\"sleep 370000ns\""), "{}", r.toml());
    // On a machine of one CPU, CPU 1's interrupt is CPU 0's.
    let one = OpPrices {
        cpus: 1,
        ..OpPrices::default()
    };
    let r = to_workload(&t, "hand", &one);
    assert!(
        r.toml().contains("\"sleep 490000ns irq-on 0\""),
        "{}",
        r.toml()
    );
}

#[test]
fn an_exiting_tasks_wakeup_of_its_parent_is_sync_at_exit_notifys_depth() {
    // p forks c and waits; c exits and wakes p. At depth 5 (`exit_notify` → `__wake_up_parent`:
    // tasklist_lock, siglock, the wait queue's lock, ttwu's guard and pi_lock) the wakeup is
    // WF_SYNC; at depth 4 (the SIGCHLD signal's wakeup: no wait queue) it is not, nor is a
    // task's wakeup at depth 5 before it exits, nor one from a trace with no depths.
    let trace = |exit_line: &str, depth: &str| {
        format!(
            "\
# #P:2
 p-1 [000] ..... 0.000010: sched_process_fork: comm=p pid=1 child_comm=c child_pid=2
 p-1 [000] d..2. 0.000011: sched_wakeup_new: comm=c pid=2 prio=120 target_cpu=001
 p-1 [000] d..2. 0.000015: sched_switch: prev_comm=p prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120
 x-0 [001] d..2. 0.000016: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=2 next_prio=120
{exit_line} c-2 [001] {depth} 0.000040: sched_waking: comm=p pid=1 prio=120 target_cpu=000
 c-2 [001] d..2. 0.000042: sched_switch: prev_comm=c prev_pid=2 prev_prio=120 prev_state=X ==> next_comm=x next_pid=0 next_prio=120
 x-0 [000] d..2. 0.000043: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=1 next_prio=120
"
        )
    };
    let exit =
        " c-2 [001] ..... 0.000038: sched_process_exit: comm=c pid=2 prio=120 group_dead=true\n";
    let replay = |text: &str| {
        let t = import::parse(text).unwrap();
        let r = to_workload(&t, "hand", &OpPrices::default());
        assert_eq!(r.stats.task_wakeups, 1, "{text}");
        (r.stats.sync_wakeups, r.toml())
    };
    let (n, toml) = replay(&trace(exit, "dN.5."));
    assert_eq!(n, 1);
    assert!(toml.contains("\"send wake.0 sync\""), "{toml}");
    // What the file says reads back as the same workload.
    let read = crate::workload::file::parse_str(&toml, "hand.toml", "hand").unwrap();
    let child = read
        .programs
        .iter()
        .find(|p| p.name.contains("_c"))
        .unwrap();
    assert!(
        child.ops.contains(&crate::workload::Op::SendSync(0)),
        "{:?}",
        child.ops
    );
    for text in [
        trace(exit, "dN.4."),
        trace("", "d..5."),
        trace(exit, "").replace(" 0.000040", "0.000040"),
    ] {
        let (n, toml) = replay(&text);
        assert_eq!(n, 0, "{text}");
        assert!(toml.contains("\"send wake.0\""), "{toml}");
    }
}

#[test]
fn a_tasks_own_sched_setscheduler_is_replayed_where_it_made_it() {
    // h runs, asks for SCHED_IDLE (5) for itself and gets it, runs on; a second call, to
    // SCHED_BATCH, fails (EPERM); g's call names h (`chrt -p`): not replayed. A trace's
    // `prio` (120 throughout) cannot tell any of this. The first call is in tracefs' own
    // form, h's second in `trace-cmd report`'s, g's in tracefs' form before 6.17 (bare hex);
    // g's call on PID -1 fails (ESRCH) and names no task, and a marker whose text looks like
    // a call is not one.
    let text = "\
# #P:1
 h-1 [000] d..1. 0.000000: cpu_frequency: state=2400000 cpu_id=0
 h-1 [000] ..... 0.000010: sys_sched_setscheduler(pid: 0, policy: 5, param: 0x7ffd0000)
 h-1 [000] ..... 0.000011: sys_sched_setscheduler -> 0x0
 h-1 [000] ..... 0.000020: sys_enter_sched_setscheduler: pid: 0x00000000, policy: 0x40000003, param: 0x7ffd0000
 h-1 [000] ..... 0.000021: sys_exit_sched_setscheduler: 0xffffffffffffffff
 h-1 [000] d..2. 0.000030: sched_switch: prev_comm=h prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=g next_pid=2 next_prio=120
 g-2 [000] ..... 0.000033: tracing_mark_write: 0.5: sys_x(pid: 0, policy: 5)
 g-2 [000] ..... 0.000034: sys_sched_setscheduler(pid: ffffffffffffffff, policy: 5, param: 7ffd0000)
 g-2 [000] ..... 0.000034: sys_sched_setscheduler -> 0xfffffffffffffffd
 g-2 [000] ..... 0.000035: sys_sched_setscheduler(pid: 1, policy: 0, param: 7ffd0000)
 g-2 [000] ..... 0.000036: sys_sched_setscheduler -> 0x0
 g-2 [000] d..2. 0.000040: sched_switch: prev_comm=g prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=h next_pid=1 next_prio=120
";
    let t = import::parse(text).unwrap();
    assert_eq!(t.stats.malformed, 0, "{:?}", t.stats.malformed_examples);
    assert_eq!(
        t.events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SetPolicy { .. }))
            .count(),
        2,
        "the failed calls are not events"
    );
    let r = to_workload(&t, "hand", &OpPrices::default());
    assert_eq!(
        (r.stats.policy_changes, r.stats.policy_changes_dropped),
        (1, 1)
    );
    let toml = r.toml();
    assert!(
        toml.contains("\"compute 11000ns\",\n  \"policy idle\",\n  \"compute 19000ns\""),
        "{toml}"
    );
    let read = crate::workload::file::parse_str(&toml, "hand.toml", "hand").unwrap();
    assert!(read.programs[0]
        .ops
        .contains(&crate::workload::Op::SetPolicy(
            crate::task::SchedPolicy::Idle,
            0
        )));
    // The ftrace writer writes the event back as the call, and it reads back the same.
    let again = import::parse(&crate::trace::ftrace::to_string(&t)).unwrap();
    assert_eq!(
        again
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SetPolicy { policy: 5, .. }))
            .count(),
        1
    );
}
