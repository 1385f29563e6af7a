//! A [`Trace`] as a Perfetto protobuf trace: `Trace { TracePacket { FtraceEventBundle { cpu,
//! FtraceEvent… } } }`, the form `traced_probes` writes for ftrace data, so the Perfetto UI
//! and trace processor build from it what they build from a real recording: per-CPU
//! scheduling tracks, thread states with their wakers (from `sched_waking`), migrations,
//! frequency and idle counters, and sleeping-lock waits as slices (ATrace `B|pid|name` /
//! `E|pid` in `print` events).
//!
//! The messages are the subset of Perfetto's protos we write, declared with `prost` derives
//! and the field numbers of `protos/perfetto/trace/trace_packet.proto`,
//! `ftrace/ftrace_event_bundle.proto`, `ftrace/ftrace_event.proto`, `ftrace/sched.proto`,
//! `ftrace/power.proto` and `ftrace/ftrace.proto` (all proto2, fields optional). No
//! `.proto` compilation at build time: the subset is small and stable.

use super::*;
use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct PbTrace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(message, optional, tag = "1")]
    pub ftrace_events: Option<FtraceEventBundle>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FtraceEventBundle {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    /// The task running where the event fired.
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(oneof = "Payload", tags = "3, 4, 11, 13, 17, 20, 114, 238, 239, 491")]
    pub event: Option<Payload>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Payload {
    #[prost(message, tag = "3")]
    Print(PrintFtraceEvent),
    #[prost(message, tag = "4")]
    SchedSwitch(SchedSwitchFtraceEvent),
    #[prost(message, tag = "11")]
    CpuFrequency(CpuFrequencyFtraceEvent),
    #[prost(message, tag = "13")]
    CpuIdle(CpuIdleFtraceEvent),
    #[prost(message, tag = "17")]
    SchedWakeup(SchedWakeFtraceEvent),
    #[prost(message, tag = "20")]
    SchedWaking(SchedWakeFtraceEvent),
    #[prost(message, tag = "114")]
    SchedWakeupNew(SchedWakeFtraceEvent),
    #[prost(message, tag = "238")]
    SchedProcessExit(SchedProcessExitFtraceEvent),
    #[prost(message, tag = "239")]
    SchedProcessFork(SchedProcessForkFtraceEvent),
    #[prost(message, tag = "491")]
    SchedMigrateTask(SchedMigrateTaskFtraceEvent),
}

#[derive(Clone, PartialEq, Message)]
pub struct PrintFtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub ip: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub buf: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedSwitchFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    /// The kernel's TASK_REPORT bits: 0 runnable, 1 S, 2 D, 4 T, 16 X; 256 preempted.
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// The layout `sched_wakeup`, `sched_waking` and `sched_wakeup_new` share.
#[derive(Clone, PartialEq, Message)]
pub struct SchedWakeFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub success: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedProcessExitFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub prio: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedProcessForkFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub parent_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub parent_pid: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub child_comm: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub child_pid: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedMigrateTaskFtraceEvent {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CpuFrequencyFtraceEvent {
    #[prost(uint32, optional, tag = "1")]
    pub state: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub cpu_id: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CpuIdleFtraceEvent {
    #[prost(uint32, optional, tag = "1")]
    pub state: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub cpu_id: Option<u32>,
}

/// TASK_REPORT bits of a switch-out state (`__trace_sched_switch_state`, 6.x).
fn state_bits(s: PrevState) -> i64 {
    match s {
        PrevState::Runnable => 256,
        PrevState::Sleep => 1,
        PrevState::DiskSleep => 2,
        PrevState::Stopped => 4,
        PrevState::Dead => 16,
    }
}

/// Events per bundle: each bundle is one packet, one CPU's events in time order.
const BUNDLE: usize = 1024;

/// `trace` as a Perfetto protobuf trace.
pub fn encode(trace: &Trace) -> Vec<u8> {
    let comm = |t: Option<TaskIdx>, cpu: u32| Some(trace.comm(t, cpu));
    let pid = |t: Option<TaskIdx>| Some(trace.pid(t) as i32);
    let prio = |t: Option<TaskIdx>| Some(trace.prio(t));
    let mut on_cpu = super::OnCpu::new(trace);
    let mut open: Vec<Vec<FtraceEvent>> = vec![Vec::new(); trace.ncpus as usize];
    let mut packets = Vec::new();
    let flush = |cpu: usize, events: &mut Vec<FtraceEvent>, packets: &mut Vec<TracePacket>| {
        if !events.is_empty() {
            packets.push(TracePacket {
                ftrace_events: Some(FtraceEventBundle {
                    cpu: Some(cpu as u32),
                    event: std::mem::take(events),
                }),
                trusted_packet_sequence_id: Some(1 + cpu as u32),
            });
        }
    };
    for e in &trace.events {
        let cpu = e.cpu as usize;
        if cpu >= open.len() {
            continue;
        }
        let here = on_cpu.see(e);
        let wake = |t: TaskIdx, target: u32| SchedWakeFtraceEvent {
            comm: comm(Some(t), e.cpu),
            pid: pid(Some(t)),
            prio: prio(Some(t)),
            success: Some(1),
            target_cpu: Some(target as i32),
        };
        let (by, payloads): (Option<TaskIdx>, Vec<Payload>) = match &e.kind {
            EventKind::Switch {
                prev,
                prev_state,
                next,
            } => (
                *prev,
                vec![Payload::SchedSwitch(SchedSwitchFtraceEvent {
                    prev_comm: comm(*prev, e.cpu),
                    prev_pid: pid(*prev),
                    prev_prio: prio(*prev),
                    prev_state: Some(state_bits(*prev_state)),
                    next_comm: comm(*next, e.cpu),
                    next_pid: pid(*next),
                    next_prio: prio(*next),
                })],
            ),
            EventKind::Waking {
                waker,
                task,
                target_cpu,
                ..
            } => (
                *waker,
                vec![
                    Payload::SchedWaking(wake(*task, *target_cpu)),
                    Payload::SchedWakeup(wake(*task, *target_cpu)),
                ],
            ),
            EventKind::WakeupNew { task, target_cpu } => (
                here,
                vec![Payload::SchedWakeupNew(wake(*task, *target_cpu))],
            ),
            EventKind::Fork { parent, child } => (
                Some(*parent),
                vec![Payload::SchedProcessFork(SchedProcessForkFtraceEvent {
                    parent_comm: comm(Some(*parent), e.cpu),
                    parent_pid: pid(Some(*parent)),
                    child_comm: comm(Some(*child), e.cpu),
                    child_pid: pid(Some(*child)),
                })],
            ),
            EventKind::Exit { task } => (
                Some(*task),
                vec![Payload::SchedProcessExit(SchedProcessExitFtraceEvent {
                    comm: comm(Some(*task), e.cpu),
                    pid: pid(Some(*task)),
                    tgid: pid(Some(*task)),
                    prio: prio(Some(*task)),
                })],
            ),
            EventKind::Migrate {
                task,
                orig_cpu,
                dest_cpu,
            } => (
                here,
                vec![Payload::SchedMigrateTask(SchedMigrateTaskFtraceEvent {
                    comm: comm(Some(*task), e.cpu),
                    pid: pid(Some(*task)),
                    prio: prio(Some(*task)),
                    orig_cpu: Some(*orig_cpu as i32),
                    dest_cpu: Some(*dest_cpu as i32),
                })],
            ),
            EventKind::CpuFrequency { khz } => (
                here,
                vec![Payload::CpuFrequency(CpuFrequencyFtraceEvent {
                    state: Some((*khz).min(u32::MAX as u64) as u32),
                    cpu_id: Some(e.cpu),
                })],
            ),
            EventKind::CpuIdle { state } => (
                here,
                vec![Payload::CpuIdle(CpuIdleFtraceEvent {
                    state: Some(state.unwrap_or(u32::MAX)),
                    cpu_id: Some(e.cpu),
                })],
            ),
            // Perfetto's ftrace schema has no payload for a syscall tracepoint here: left out
            // (the task's later events carry its priority).
            EventKind::SetPolicy { .. } => (None, Vec::new()),
            EventKind::LockWait { task, lock, begin } => {
                let p = trace.pid(Some(*task));
                let buf = if *begin {
                    format!("B|{p}|{lock}\n")
                } else {
                    format!("E|{p}\n")
                };
                (
                    Some(*task),
                    vec![Payload::Print(PrintFtraceEvent {
                        ip: Some(0),
                        buf: Some(buf),
                    })],
                )
            }
        };
        for p in payloads {
            open[cpu].push(FtraceEvent {
                timestamp: Some(e.ts),
                pid: Some(trace.pid(by)),
                event: Some(p),
            });
        }
        if open[cpu].len() >= BUNDLE {
            flush(cpu, &mut open[cpu], &mut packets);
        }
    }
    for (cpu, events) in open.iter_mut().enumerate() {
        flush(cpu, events, &mut packets);
    }
    PbTrace { packet: packets }.encode_to_vec()
}

/// Decodes a trace this module wrote (for tests and `schedkit` self-checks).
pub fn decode(bytes: &[u8]) -> Result<PbTrace, prost::DecodeError> {
    PbTrace::decode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_every_event_with_its_fields() {
        let text = "\
# #P:2
 a-1 [000] d..2. 0.000000100: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120
 a-1 [000] .....  0.000000200: sched_process_fork: comm=a pid=1 child_comm=b child_pid=2
 a-1 [000] d..3. 0.000000300: sched_wakeup_new: comm=b pid=2 prio=110 target_cpu=001
 x-0 [001] d..2. 0.000000400: sched_switch: prev_comm=x prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=110
 a-1 [000] d..2. 0.000000500: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=D ==> next_comm=x next_pid=0 next_prio=120
 b-2 [001] d..4. 0.000000600: sched_waking: comm=a pid=1 prio=120 target_cpu=000
";
        let t = import::parse(text).unwrap();
        let pb = decode(&encode(&t)).unwrap();
        let events: Vec<(u32, FtraceEvent)> = pb
            .packet
            .iter()
            .filter_map(|p| p.ftrace_events.as_ref())
            .flat_map(|b| b.event.iter().map(move |e| (b.cpu.unwrap(), e.clone())))
            .collect();
        // 5 events, the waking written as sched_waking and sched_wakeup.
        assert_eq!(events.len(), 7);
        let sw: Vec<_> = events
            .iter()
            .filter_map(|(cpu, e)| match &e.event {
                Some(Payload::SchedSwitch(s)) => Some((*cpu, e.timestamp.unwrap(), s.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(sw.len(), 3);
        let d = sw.iter().find(|(_, ts, _)| *ts == 500).unwrap();
        assert_eq!(d.0, 0);
        assert_eq!(d.2.prev_state, Some(2));
        assert_eq!(d.2.prev_comm.as_deref(), Some("a"));
        assert_eq!(d.2.next_comm.as_deref(), Some("swapper/0"));
        let waking = events
            .iter()
            .find(|(_, e)| matches!(e.event, Some(Payload::SchedWaking(_))))
            .unwrap();
        // The waker is the task running on the CPU: b.
        assert_eq!(waking.1.pid, Some(2));
    }
}
