use super::*;
use crate::trace::input::{parse_bytes, unzstd};

const TRACEFS: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 6/6   #P:4
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
            bash-1234    [001] d..4.  5075.957990: sched_waking: comm=sshd pid=880 prio=120 target_cpu=003
            bash-1234    [001] d..5.  5075.957995: sched_wakeup: comm=sshd pid=880 prio=120 target_cpu=003
          <idle>-0       [003] d..2.  5075.958000: sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sshd next_pid=880 next_prio=120
            sshd-880     [003] d..2.  5075.958500: sched_switch: prev_comm=sshd prev_pid=880 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120
          <idle>-0       [000] dNh2.  5075.959000: sched_waking: comm=sshd pid=880 prio=120 target_cpu=003
             cc1-4242    [002] d..2  5075.960000: sched_switch: prev_comm=cc1 prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=kworker/2:1 next_pid=88 next_prio=120
";

/// A header with more CPUs than the events use is believed (an idle CPU is a CPU of the
/// machine) and both counts are kept for the notes (issue 34: `#P:65536`).
#[test]
fn a_header_with_more_cpus_than_the_events_use_is_kept_and_said() {
    let text = TRACEFS.replace("#P:4", "#P:65536");
    let t = parse(&text).unwrap();
    assert_eq!(t.ncpus, 65536);
    assert_eq!(t.stats.header_cpus, Some(65536));
    assert_eq!(
        t.stats.event_cpus, 4,
        "CPU 3 is the highest named (target_cpu)"
    );
    // Events on a CPU above the header's count raise the count.
    let low = TRACEFS.replace("#P:4", "#P:2");
    let t = parse(&low).unwrap();
    assert_eq!((t.ncpus, t.stats.header_cpus), (4, Some(2)));
}

#[test]
fn tracefs_text_becomes_events() {
    let t = parse(TRACEFS).unwrap();
    assert_eq!(t.ncpus, 4);
    // sched_wakeup is not used beside sched_waking.
    assert_eq!(t.events.len(), 5);
    assert_eq!(t.stats.malformed, 0);
    assert_eq!(t.stats.header_lines, 4);
    let sshd = t.tasks.iter().position(|x| x.pid == 880).unwrap();
    let bash = t.tasks.iter().position(|x| x.pid == 1234).unwrap();
    assert_eq!(
        t.events[0].kind,
        EventKind::Waking {
            waker: Some(bash),
            task: sshd,
            target_cpu: 3,
            irq: false,
            depth: Some(4),
        }
    );
    assert_eq!(t.events[0].ts, 5_075_957_990_000);
    assert!(matches!(
        t.events[2].kind,
        EventKind::Switch {
            prev: Some(p),
            prev_state: PrevState::Sleep,
            next: None
        } if p == sshd
    ));
    // The hardirq flag marks the wakeup as an interrupt's; the fourth flag is the
    // preemption depth.
    assert!(matches!(
        t.events[3].kind,
        EventKind::Waking {
            waker: None,
            irq: true,
            depth: Some(2),
            ..
        }
    ));
    // A depth of 0 is '.', and a line without flags (perf's text) has none.
    let zero = TRACEFS.replace("d..4.  5075.957990", "d....  5075.957990");
    assert!(matches!(
        parse(&zero).unwrap().events[0].kind,
        EventKind::Waking { depth: Some(0), .. }
    ));
    let none = TRACEFS.replace("d..4.  5075.957990", "5075.957990");
    assert!(matches!(
        parse(&none).unwrap().events[0].kind,
        EventKind::Waking { depth: None, .. }
    ));
    // 4-character flags (older kernels) and R+.
    assert!(matches!(
        t.events[4].kind,
        EventKind::Switch {
            prev_state: PrevState::Runnable,
            ..
        }
    ));
}

#[test]
fn trace_cmd_plugin_and_raw_forms() {
    let text = "\
cpus=2
            bash-29893 [001] 18074.110025: sched_wakeup:         rcu_preempt:15 [120] CPU:001
            bash-29893 [001] 18074.110068: sched_switch:         bash:29893 [120] R ==> rcu_preempt:15 [120]
     rcu_preempt-15    [001] 18074.110080: sched_switch:         rcu_preempt:15 [120] W ==> bash:29893 [120]
 memfd:sealed-91-28848 [000] 18074.110173: sched_switch:         memfd:sealed-91:28848 [120] S ==> swapper/0:0 [120]
     rcu_preempt-15    [001] 18074.110090: sched_switch:          prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=128 next_comm=bash next_pid=29893 next_prio=120
";
    let t = parse(text).unwrap();
    assert_eq!(t.ncpus, 2);
    assert_eq!(t.stats.malformed, 0, "{:?}", t.stats);
    let memfd = t.tasks.iter().find(|x| x.pid == 28848).unwrap();
    assert_eq!(memfd.comm, "memfd:sealed-91");
    let states: Vec<_> = t
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Switch { prev_state, .. } => Some(prev_state),
            _ => None,
        })
        .collect();
    // The last line has rcu_preempt running on CPU 1 after it switched to bash there:
    // a switch back is put in (as Runnable) and counted.
    assert_eq!(
        states,
        [
            PrevState::Runnable,
            PrevState::Sleep,
            PrevState::Runnable,
            PrevState::Sleep,
            PrevState::Sleep
        ]
    );
    assert_eq!(t.stats.inferred_switches, 1);
    // Out of file order (18074.110090 after .110173): counted, then sorted.
    assert_eq!(t.stats.out_of_order, 1);
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
}

#[test]
fn perf_script_lines() {
    let text = "\
            perf 29984 [000] 18084.114077: sched:sched_stat_runtime: comm=perf pid=29984 runtime=52769 [ns]
            perf 29984 [000] 18084.114083:       sched:sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000
            perf 29984 [000] 18084.114089:       sched:sched_switch: prev_comm=perf prev_pid=29984 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0
  Web Content 7/8 [001] 18084.114095: sched:sched_migrate_task: comm=perf pid=29984 prio=120 orig_cpu=0 dest_cpu=1
";
    let t = parse(text).unwrap();
    assert_eq!(t.stats.other_events.get("sched_stat_runtime"), Some(&1));
    assert_eq!(t.events.len(), 3);
    let mig = t.tasks.iter().find(|x| x.pid == 18).unwrap();
    assert_eq!(mig.prio, 0);
    // `pid/tid`: the thread is the task, the process its group.
    let web = t.tasks.iter().find(|x| x.pid == 8).unwrap();
    assert_eq!((web.comm.as_str(), web.tgid), ("Web_Content", Some(7)));
    assert!(matches!(
        t.events[1].kind,
        EventKind::Switch {
            prev_state: PrevState::DiskSleep,
            ..
        }
    ));
}

#[test]
fn pid_reuse_unknown_comms_and_cut_edges() {
    let text = "\
rev_state=R ==> next_comm=b next_pid=6 next_prio=120
   x-5 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=6 next_prio=120
   b-6 [000] d..2. 1.000100: sched_process_exit: comm=b pid=6 prio=120 group_dead=true
   b-6 [000] d..2. 1.000200: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=X ==> next_comm=a next_pid=5 next_prio=120
   a-5 [000] d..2. 1.000300: sched_process_fork: comm=a pid=5 child_comm=<...> child_pid=6
garbage in the middle
   a-5 [000] d..2. 1.000400: sched_wakeup_new: comm=a pid=6 prio=120 target_cpu=001
   a-5 [000] d..2. 1.0005";
    let t = parse(text).unwrap();
    assert_eq!(t.stats.pid_reuse, 1);
    assert_eq!(t.stats.unknown_comms, 1);
    assert_eq!(t.stats.truncated_edges, 2, "{:?}", t.stats);
    assert_eq!(t.stats.malformed, 1);
    assert!(t.stats.malformed_examples[0].starts_with("line 6:"));
    let sixes: Vec<_> = t.tasks.iter().filter(|x| x.pid == 6).collect();
    assert_eq!(sixes.len(), 2);
    // The new incarnation takes its name from the wakeup_new event.
    assert_eq!(sixes[1].comm, "a");
}

#[test]
fn a_switch_out_of_idle_the_kernel_did_not_record_is_put_back() {
    // As on the project VM's CPU 1: woken from idle, the task runs with no sched_switch.
    let text = "\
               a-5       [001] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] dNh2. 1.000010: sched_wakeup: comm=a pid=5 prio=120 target_cpu=001
               a-5       [001] d..3. 1.000015: sched_waking: comm=b pid=6 prio=120 target_cpu=000
               a-5       [001] d..2. 1.000020: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
    let t = parse(text).unwrap();
    assert_eq!(t.stats.inferred_switches, 1);
    assert_eq!(t.stats.inconsistent_switches, 0);
    let f = super::super::figures::figures(&t);
    let a = f.tasks.iter().find(|x| x.pid == 5).unwrap();
    // From the wakeup (the CPU's previous event) to its switch out.
    assert_eq!(a.cpu_ms, 0.010);
    assert_eq!(f.context_switches, 3);
}

#[test]
fn clock_skew_overlap_is_counted() {
    let text = "\
   a-5 [000] d..2. 1.000000: sched_switch: prev_comm=i prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=t next_pid=7 next_prio=120
   b-6 [001] d..2. 1.000100: sched_switch: prev_comm=i prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=t next_pid=7 next_prio=120
";
    let t = parse(text).unwrap();
    assert_eq!(t.stats.overlapping_runs, 1);
}

#[test]
fn lost_events_and_markers_with_an_address() {
    let text = "\
CPU:1 [LOST 12 EVENTS]
   a-5 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=6 next_prio=120
CPU:0 [3 EVENTS DROPPED]
   b-6 [000]   1.000100: print:                0xffffffff81498b1a: B|6|lock x
CPU:0 [EVENTS DROPPED]
   b-6 [000]   1.000200: print:                tracing_mark_write: E|6
   b-6 [000]   1.000300: print:                0xffffffff81498b1a: not|a slice
";
    let t = parse(text).unwrap();
    assert_eq!(t.stats.lost_events, 12 + 3 + 1);
    assert_eq!(t.stats.malformed, 0, "{:?}", t.stats.malformed_examples);
    assert_eq!(t.stats.other_events.get("print"), Some(&1));
    let marks: Vec<_> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LockWait { lock, begin, .. } => Some((lock.as_str(), *begin)),
            _ => None,
        })
        .collect();
    assert_eq!(marks, [("lock x", true), ("", false)]);
}

#[test]
fn a_zstd_compressed_trace_reads_as_the_text_does() {
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};
    let plain = parse(TRACEFS).unwrap();
    let z = compress_to_vec(TRACEFS.as_bytes(), CompressionLevel::Fastest);
    let t = parse_bytes(&z).unwrap();
    assert_eq!(t.events.len(), plain.events.len());
    // Two frames, as `cat a.zst b.zst` makes: one stream.
    let mut two = z.clone();
    two.extend_from_slice(&compress_to_vec(&b"\n"[..], CompressionLevel::Fastest));
    assert_eq!(parse_bytes(&two).unwrap().events.len(), plain.events.len());
    // Cut short, compressed twice, past the limit: each an error that says so.
    assert!(parse_bytes(&z[..z.len() - 3]).unwrap_err().contains("zstd"));
    let twice = compress_to_vec(&z[..], CompressionLevel::Fastest);
    assert!(parse_bytes(&twice)
        .unwrap_err()
        .contains("compressed twice"));
    assert!(unzstd(&z, 10).unwrap_err().contains("limit"));
}

#[test]
fn nothing_usable_is_an_error() {
    let e = parse("hello\nworld\nfoo\n").unwrap_err();
    assert!(e.to_string().contains("no scheduler events"), "{e}");
    assert!(e.to_string().contains("line 2"), "{e}");
}

#[test]
fn prev_states() {
    assert_eq!(parse_prev_state("D|K").unwrap(), PrevState::DiskSleep);
    assert_eq!(parse_prev_state("256").unwrap(), PrevState::Runnable);
    assert_eq!(parse_prev_state("0").unwrap(), PrevState::Runnable);
    assert_eq!(parse_prev_state("2").unwrap(), PrevState::DiskSleep);
    assert_eq!(parse_prev_state("16").unwrap(), PrevState::Dead);
    assert!(parse_prev_state("?").is_err());
    assert_eq!(parse_ts("1.5"), Some(1_500_000_000));
    assert_eq!(parse_ts("0.1234567891"), Some(123_456_789));
    assert_eq!(parse_ts("99999999999999999999.0"), None);
}
