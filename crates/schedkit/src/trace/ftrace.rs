//! A [`Trace`] as ftrace text, in the layout of `/sys/kernel/tracing/trace` on 5.17+ (the
//! 5-character flags; TP_printk formats of `include/trace/events/sched.h`), which Perfetto's
//! systrace parser, traceshark and our own importer read.
//!
//! Time stamps carry nanoseconds (`trace-cmd report -t` style), so nothing of the simulated
//! clock is rounded away. The line header names the task running on the CPU when the event
//! fired, as the kernel's does; wakeups from interrupt context (a timer) carry the `h`
//! flag. Both `sched_waking` (what Perfetto uses) and `sched_wakeup` (what older viewers
//! use) are written.

use super::*;
use std::io::{self, Write};

struct Writer<'t, W: Write> {
    trace: &'t Trace,
    out: W,
    bytes: u64,
}

impl<W: Write> Writer<'_, W> {
    fn line(
        &mut self,
        cur: Option<TaskIdx>,
        cpu: u32,
        flags: &str,
        ts: u64,
        event: &str,
        args: std::fmt::Arguments,
    ) -> io::Result<()> {
        let comm = match cur {
            Some(i) => self.trace.tasks[i].comm.as_str(),
            None => "<idle>",
        };
        // At least one space before the name, so that no line starts like a comment.
        let s = format!(
            " {:>15}-{:<7} [{:03}] {} {:>6}.{:09}: {}: {}\n",
            comm,
            self.trace.pid(cur),
            cpu,
            flags,
            ts / 1_000_000_000,
            ts % 1_000_000_000,
            event,
            args
        );
        self.bytes += s.len() as u64;
        self.out.write_all(s.as_bytes())
    }
}

/// Writes `trace` as ftrace text; returns the bytes written.
pub fn write<W: Write>(trace: &Trace, out: W) -> io::Result<u64> {
    let mut w = Writer {
        trace,
        out,
        bytes: 0,
    };
    let n = trace.events.len();
    let header = format!(
        "# tracer: nop\n#\n# entries-in-buffer/entries-written: {n}/{n}   #P:{}\n#\n\
#                                _-----=> irqs-off/BH-disabled\n\
#                               / _----=> need-resched\n\
#                              | / _---=> hardirq/softirq\n\
#                              || / _--=> preempt-depth\n\
#                              ||| / _-=> migrate-disable\n\
#                              |||| /     delay\n\
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
#              | |         |   |||||     |         |\n",
        trace.ncpus
    );
    w.bytes += header.len() as u64;
    w.out.write_all(header.as_bytes())?;
    let mut on_cpu = OnCpu::new(trace);
    for e in &trace.events {
        let cpu = e.cpu;
        let here = on_cpu.see(e);
        match &e.kind {
            EventKind::Switch {
                prev,
                prev_state,
                next,
            } => {
                w.line(
                    *prev,
                    cpu,
                    "d..2.",
                    e.ts,
                    "sched_switch",
                    format_args!(
                        "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                        trace.comm(*prev, cpu),
                        trace.pid(*prev),
                        trace.prio(*prev),
                        prev_state.letter(),
                        trace.comm(*next, cpu),
                        trace.pid(*next),
                        trace.prio(*next)
                    ),
                )?;
            }
            EventKind::Waking {
                waker,
                task,
                target_cpu,
                irq,
                depth,
            } => {
                let t = Some(*task);
                let args = format!(
                    "comm={} pid={} prio={} target_cpu={:03}",
                    trace.comm(t, cpu),
                    trace.pid(t),
                    trace.prio(t),
                    target_cpu
                );
                // A recorded depth is written back as it was (the replay reads it); the
                // simulator's own events have none and carry the usual one.
                let d = depth.unwrap_or(4).min(15);
                let (f1, f2) = (waking_flags(*irq, d), waking_flags(*irq, (d + 1).min(15)));
                let (f1, f2) = (ascii(&f1), ascii(&f2));
                w.line(
                    *waker,
                    cpu,
                    f1,
                    e.ts,
                    "sched_waking",
                    format_args!("{args}"),
                )?;
                w.line(
                    *waker,
                    cpu,
                    f2,
                    e.ts,
                    "sched_wakeup",
                    format_args!("{args}"),
                )?;
            }
            EventKind::WakeupNew { task, target_cpu } => {
                let t = Some(*task);
                w.line(
                    here,
                    cpu,
                    "d..3.",
                    e.ts,
                    "sched_wakeup_new",
                    format_args!(
                        "comm={} pid={} prio={} target_cpu={:03}",
                        trace.comm(t, cpu),
                        trace.pid(t),
                        trace.prio(t),
                        target_cpu
                    ),
                )?;
            }
            EventKind::Fork { parent, child } => {
                let (p, c) = (Some(*parent), Some(*child));
                w.line(
                    p,
                    cpu,
                    ".....",
                    e.ts,
                    "sched_process_fork",
                    format_args!(
                        "comm={} pid={} child_comm={} child_pid={}",
                        trace.comm(p, cpu),
                        trace.pid(p),
                        trace.comm(c, cpu),
                        trace.pid(c)
                    ),
                )?;
            }
            EventKind::Exit { task } => {
                let t = Some(*task);
                w.line(
                    t,
                    cpu,
                    ".....",
                    e.ts,
                    "sched_process_exit",
                    format_args!(
                        "comm={} pid={} prio={} group_dead=true",
                        trace.comm(t, cpu),
                        trace.pid(t),
                        trace.prio(t)
                    ),
                )?;
            }
            EventKind::Migrate {
                task,
                orig_cpu,
                dest_cpu,
            } => {
                let t = Some(*task);
                w.line(
                    here,
                    cpu,
                    "d..2.",
                    e.ts,
                    "sched_migrate_task",
                    format_args!(
                        "comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                        trace.comm(t, cpu),
                        trace.pid(t),
                        trace.prio(t),
                        orig_cpu,
                        dest_cpu
                    ),
                )?;
            }
            EventKind::CpuFrequency { khz } => {
                w.line(
                    here,
                    cpu,
                    "d..1.",
                    e.ts,
                    "cpu_frequency",
                    format_args!("state={khz} cpu_id={cpu}"),
                )?;
            }
            EventKind::CpuIdle { state } => {
                w.line(
                    here,
                    cpu,
                    "d..1.",
                    e.ts,
                    "cpu_idle",
                    format_args!("state={} cpu_id={cpu}", state.unwrap_or(u32::MAX)),
                )?;
            }
            EventKind::LockWait { task, lock, begin } => {
                let t = Some(*task);
                let pid = trace.pid(t);
                if *begin {
                    w.line(
                        t,
                        cpu,
                        ".....",
                        e.ts,
                        "tracing_mark_write",
                        format_args!("B|{pid}|{lock}"),
                    )?;
                } else {
                    w.line(
                        t,
                        cpu,
                        ".....",
                        e.ts,
                        "tracing_mark_write",
                        format_args!("E|{pid}"),
                    )?;
                }
            }
            // Written as the call its maker made (the importer reads the pair back as this event).
            EventKind::SetPolicy { task, policy, by } => {
                let target = if task == by {
                    0
                } else {
                    trace.pid(Some(*task))
                };
                w.line(
                    Some(*by),
                    cpu,
                    ".....",
                    e.ts,
                    "sys_enter_sched_setscheduler",
                    format_args!("pid: 0x{target:08x}, policy: 0x{policy:08x}, param: 0x00000000"),
                )?;
                w.line(
                    Some(*by),
                    cpu,
                    ".....",
                    e.ts,
                    "sys_exit_sched_setscheduler",
                    format_args!("0x0"),
                )?;
            }
        }
    }
    w.out.flush()?;
    Ok(w.bytes)
}

/// A wakeup line's ftrace flags: irqs off, no need-resched, hardirq or not, the preemption
/// depth as one hex digit, '.' for 0 (`trace_print_lat_fmt`), no migrate-disable.
fn waking_flags(irq: bool, depth: u8) -> [u8; 5] {
    let digit = b".123456789abcdef"[usize::from(depth.min(15))];
    [b'd', b'.', if irq { b'h' } else { b'.' }, digit, b'.']
}

fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("flags are ASCII")
}

/// `trace` as ftrace text in memory.
pub fn to_string(trace: &Trace) -> String {
    let mut v = Vec::new();
    write(trace, &mut v).expect("writing to memory cannot fail");
    String::from_utf8(v).expect("the writer writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_text_reads_back_as_the_same_trace() {
        let text = "\
# #P:2
 a-1 [000] d..2. 0.000000100: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] .....  0.000000200: sched_process_fork: comm=a pid=1 child_comm=b child_pid=2
 a-1 [000] d..3. 0.000000300: sched_wakeup_new: comm=b pid=2 prio=110 target_cpu=001
 x-0 [001] d..2. 0.000000400: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=110
 b-2 [001] d.h4. 0.000000500: sched_waking: comm=a pid=1 prio=120 target_cpu=000
 b-2 [001] .....  0.000000600: sched_process_exit: comm=b pid=2 prio=110 group_dead=true
 b-2 [001] d..2. 0.000000700: sched_switch: prev_comm=b prev_pid=2 prev_prio=110 prev_state=X ==> next_comm=x next_pid=0 next_prio=120
 x-0 [001] d..1. 0.000000800: cpu_idle: state=1 cpu_id=1
 a-1 [000] .....  0.000000900: tracing_mark_write: B|1|lock bkl
 a-1 [000] .....  0.000001000: tracing_mark_write: E|1
";
        let t = import::parse(text).unwrap();
        assert_eq!(t.stats.malformed, 0, "{:?}", t.stats);
        let again = import::parse(&to_string(&t)).unwrap();
        assert_eq!(again.events, t.events);
        assert_eq!(again.tasks, t.tasks);
        assert_eq!(again.ncpus, 2);
        assert_eq!(again.stats.malformed + again.stats.truncated_edges, 0);
    }
}
