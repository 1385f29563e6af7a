//! The built-in workloads, ported from the benchmarks in `../shared/reference/benchmarks.md`.
//!
//! Every built-in takes `nice=N`, which renices every task (the announcement's
//! `nice -n 19 ./chat_c`, which reniced the clients and not the server, is
//! `chat:rooms=10,messages=1000,client_nice=19`); `start=D`, which starts its tasks at `D`
//! instead of at 0; and `renice=T/N` and `chpolicy=T/P` (`P`: normal, batch, idle, fifo:PRIO,
//! rr:PRIO), which change every live task running one of its programs at `T` (children it
//! forked included) from outside, as `renice`/`chrt -p` at a shell would.

use super::{
    parse_duration, AttrChange, AttrTo, ChanKind, ChannelSpec, Dist, KernelWork, Op,
    ProgramBuilder, TaskSpec, Workload, WorkloadError,
};
use crate::task::{SchedPolicy, NICE_MAX, NICE_MIN, RT_PRIO_MAX, RT_PRIO_MIN};

/// (name, parameters with defaults, what it is).
pub const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "yield",
        "instances=4",
        "N tasks calling sched_yield() in a loop (the announcement's loop_yield); yields/s",
    ),
    (
        "chat",
        "rooms=10,messages=100,client_nice=0",
        "Bill Hartner's chat_c/chat_s: rooms of 20 users, 4 threads per connection, TCP loopback; client_nice=19 is the announcement's `nice -n 19 ./chat_c` (the server not reniced); messages/s",
    ),
    (
        "fork",
        "mode=exit",
        "lmbench lat_proc: fork+exit, fork+exec (mode=exec) or fork+/bin/sh -c (mode=sh) in a loop; forks/s",
    ),
    (
        "ctx",
        "procs=2,size=0",
        "lmbench lat_ctx: a token passed round a ring of N processes over pipes, each touching size KB; hops/s",
    ),
    (
        "makej",
        "jobs=8,units=64",
        "a parallel build: make keeps N compile jobs (CPU bursts with short I/O waits) running; jobs/s",
    ),
    (
        "rtmigrate",
        "threads=5,prio=2,run=20ms,sleep=100ms,loops=50,maxerr=1000us",
        "rt-migrate-test: N SCHED_FIFO threads at consecutive priorities released together each iteration; checks that no higher-priority thread waits while a lower one runs",
    ),
    (
        "aim7",
        "tasks=2000,jobs=10,bkl=0.3,hold=10us",
        "AIM7 shared mix: N tasks each running a job list (user compute, disk I/O, fork+exec, system calls under the big kernel lock) beside an interactive task; jobs/min",
    ),
    (
        "loops",
        "n=4,policy=normal,from=none",
        "N endless busy loops (the CFS v19 report's `while(1)` hogs), SCHED_OTHER, SCHED_BATCH or SCHED_IDLE; from=shell: forked one by one by a nice-0 shell loop (`nice -n N ./loop &`: fork, exec of nice, setpriority, exec of the loop), competing with the loops already running; CPU-seconds/s",
    ),
    (
        "cpujob",
        "threads=1,work=100s",
        "N CPU-bound threads of one process, each with a fixed job: work=CYCLES (a number) or a time at the machine's top non-turbo clock (100s); the run ends when all are done (completion time = simulated time, as the BFS 0.400 posts measured it); jobs/s",
    ),
    (
        "hackbench",
        "groups=10,fds=20,loops=100,mode=pipe,threads=0",
        "rt-tests hackbench: per group `fds` senders each writing `loops` 100-byte messages to each of `fds` receivers, over pipes or sockets, as processes or threads; the run's simulated time is hackbench's Time; messages/s",
    ),
    (
        "schbench",
        "messages=2,workers=16,cputime=10ms,sleep=10ms",
        "Chris Mason's schbench, 2016 design: message threads wake their workers, each spins `cputime` and waits again; worker wakeup latency is the interactive figure; requests/s",
    ),
    (
        "audio",
        "period=50ms,work=2.5ms,buffer=3",
        "an mpg123-like player: decodes `work` of CPU per `period` of sound into a device ring of `buffer` periods; reports underruns (skips), deadline misses and lateness; periods/s",
    ),
    (
        "mpg123",
        "cycles_per_s=11628763,period=125ms,buffer=4",
        "mpg123 of 2007 (0.66) playing a 44.1 kHz stereo MP3 through ALSA: decoding costs `cycles_per_s` CPU cycles per second of sound (its doc/BENCHMARKING: 19 s of a Pentium II 366 for 598 s, scaled by the machine's clock), written in ALSA periods of 125 ms into a ring of 4 (audio_alsa.c: a 0.5 s buffer, period = buffer / 4, woken when a period is free); underruns, lateness; periods/s",
    ),
    (
        "pipechain",
        "groups=4,len=8,delay=0",
        "G rings of L processes passing one byte along over pipes (the CFS v19 report's chained processes), the byte injected after `delay`; hops/s",
    ),
    (
        "interactive",
        "sleep=20ms,work=1ms",
        "a task that sleeps (uniform around `sleep`) and wakes to `work` of CPU; run it beside another workload",
    ),
    (
        "desktop",
        "scale=1",
        "the background of an idle Linux desktop of the PowerTOP era: the wakeup sources of a published PowerTOP report (May 2007: firefox 10.3/s, network interrupts 10.1/s, disk 9.0/s, ACPI 3.2/s, gkrellm2 2.7/s, an interval timer 2.5/s, wpa_supplicant 1.5/s, hald-addon-storage 0.5/s, kernel work 0.5/s, 29.6/s below its top ten; the ondemand governor's own 10/s left to the simulator's governor) as tasks woken at those rates, each running 0.24 ms (the report's 1.9 % of time in C0 over its 79.9 wakeups/s); `scale` multiplies the rates; background tasks to run beside another workload; wakeups/s",
    ),
    (
        "probe",
        "period=1ms,work=0",
        "a wakeup-latency probe (cyclictest's loop in SCHED_OTHER, standing in for Jussi Laako's wakeup-latency): wakes at absolute `period` expiries, records how late it runs (probe latency p50/p99/max), runs `work`; run it beside another workload (`makej:jobs=6+probe`)",
    ),
    (
        "rtmix",
        "rt=2,normal=2,period=10ms,work=3ms,prio=50",
        "RT tasks among normal ones on SMP: `rt` SCHED_FIFO tasks each woken every `period` (absolute expiries) to run `work`, beside `normal` nice-0 busy loops; the RT tasks' lateness is the probe latency; RT periods/s",
    ),
    (
        "x264",
        "threads=6,frames=240,rows=68,row=2ms,mvrange=3,lookahead=10ms",
        "an x264 encoder model (frame threads in a pipeline, each row waiting for `mvrange` more rows of the previous frame, a lookahead thread, the main thread waiting for the oldest frame); the run ends when every frame is encoded; frames/s",
    ),
];

/// Message size of chat and of the socket-buffer bound below.
const CHAT_CLIENTS_PER_ROOM: u32 = 20;
/// Messages a loopback TCP socket holds before send() blocks: 2.4's default receive buffer
/// (`tcp_rmem` 87380 bytes, Documentation/networking/ip-sysctl.txt) over chat's 100-byte
/// messages. A simplification: skb overhead would lower it.
const CHAT_SOCKET_CAPACITY: u32 = 87380 / 100;

struct Params<'a> {
    workload: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
    used: Vec<bool>,
}

impl<'a> Params<'a> {
    fn parse(workload: &'a str, s: &'a str) -> Result<Self, WorkloadError> {
        let mut pairs = Vec::new();
        for kv in s.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| WorkloadError::Param {
                workload: workload.into(),
                problem: format!("'{kv}' is not key=value"),
            })?;
            let k = k.trim();
            if pairs.iter().any(|(p, _)| *p == k) {
                return Err(WorkloadError::Param {
                    workload: workload.into(),
                    problem: format!("parameter '{k}' is given twice"),
                });
            }
            pairs.push((k, v.trim()));
        }
        let used = vec![false; pairs.len()];
        Ok(Params {
            workload,
            pairs,
            used,
        })
    }

    fn err(&self, problem: String) -> WorkloadError {
        WorkloadError::Param {
            workload: self.workload.into(),
            problem,
        }
    }

    fn raw(&mut self, key: &str) -> Option<&'a str> {
        let i = self.pairs.iter().position(|(k, _)| *k == key)?;
        self.used[i] = true;
        Some(self.pairs[i].1)
    }

    fn int(&mut self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, WorkloadError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => {
                let n: i64 = v
                    .parse()
                    .map_err(|_| self.err(format!("{key}={v}: not a whole number")))?;
                if n < min || n > max {
                    return Err(self.err(format!("{key}={n}: must be within {min}..={max}")));
                }
                Ok(n)
            }
        }
    }

    fn dur(&mut self, key: &str, default: u64) -> Result<u64, WorkloadError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => parse_duration(v).map_err(|e| self.err(format!("{key}: {e}"))),
        }
    }

    fn finish(&self) -> Result<(), WorkloadError> {
        if let Some(i) = self.used.iter().position(|u| !u) {
            let known = BUILTINS
                .iter()
                .find(|(n, _, _)| *n == self.workload)
                .map_or("", |(_, p, _)| *p);
            return Err(self.err(format!(
                "unknown parameter '{}' (takes: {known}; and every built-in: nice, start, renice, chpolicy)",
                self.pairs[i].0
            )));
        }
        Ok(())
    }
}

/// Parses `name:key=value,...`.
pub fn parse(spec: &str) -> Result<Workload, WorkloadError> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    let mut p = Params::parse(name, rest)?;
    let nice = p.int("nice", 0, NICE_MIN as i64, NICE_MAX as i64)? as i32;
    // Taken by every built-in: when its tasks start, and changes made to them from outside.
    let start_ns = p.dur("start", 0)?;
    let mut changes = Vec::new();
    if let Some(v) = p.raw("renice") {
        changes.push(AttrChange::parse_renice(v).map_err(|e| p.err(format!("renice={v}: {e}")))?);
    }
    if let Some(v) = p.raw("chpolicy") {
        changes
            .push(AttrChange::parse_chpolicy(v).map_err(|e| p.err(format!("chpolicy={v}: {e}")))?);
    }
    changes.sort_by_key(|c| c.at_ns);
    if let Some(c) = changes.first().filter(|c| c.at_ns < start_ns) {
        return Err(p.err(format!(
            "a change at {} comes before the tasks start (start={})",
            fmt_dur(c.at_ns),
            fmt_dur(start_ns)
        )));
    }
    // A built-in that applies `nice` itself (to some of its tasks only) says so.
    let mut nice_applied = false;
    let mut w = match name {
        "yield" => {
            let n = p.int("instances", 4, 1, 100_000)? as u32;
            yield_loop(n)
        }
        "chat" => {
            let rooms = p.int("rooms", 10, 1, 1000)? as u32;
            let msgs = p.int("messages", 100, 1, 1_000_000)? as u64;
            let client_nice = p.int("client_nice", 0, NICE_MIN as i64, NICE_MAX as i64)? as i32;
            let mut w = chat(rooms, msgs);
            if client_nice != 0 {
                // `nice -n N ./chat_c`: the client's tasks only; chat_s runs at nice 0.
                for t in &mut w.tasks {
                    if w.programs[t.prog as usize].name.starts_with("cli_") {
                        t.nice = client_nice;
                    }
                }
                w.name.push_str(&format!(",client_nice={client_nice}"));
            }
            w
        }
        "fork" => {
            let mode = p.raw("mode").unwrap_or("exit");
            match mode {
                "exit" | "exec" | "sh" => fork(mode),
                m => return Err(p.err(format!("mode={m}: must be exit, exec or sh"))),
            }
        }
        "ctx" => {
            let procs = p.int("procs", 2, 2, 100_000)? as u32;
            let size = p.int("size", 0, 0, 1 << 20)? as u32;
            ctx(procs, size)
        }
        "makej" => {
            let jobs = p.int("jobs", 8, 1, 100_000)? as u64;
            let units = p.int("units", 64, 1, 10_000_000)? as u64;
            makej(jobs, units)
        }
        "rtmigrate" => {
            let threads = p.int("threads", 5, 1, 98)? as u32;
            let prio = p.int("prio", 2, 1, 98)? as u8;
            if prio as u32 + threads > 99 {
                return Err(p.err(format!(
                    "prio={prio} with threads={threads} needs priorities up to {} (max 99)",
                    prio as u32 + threads
                )));
            }
            let run = p.dur("run", 20_000_000)?;
            let sleep = p.dur("sleep", 100_000_000)?;
            if run == 0 || sleep == 0 {
                return Err(p.err("run and sleep must be longer than 0".into()));
            }
            let loops = p.int("loops", 50, 1, 1_000_000)? as u64;
            let maxerr = p.dur("maxerr", 1_000_000)?;
            rtmigrate(threads, prio, run, sleep, loops, maxerr)
        }
        "aim7" => {
            let tasks = p.int("tasks", 2000, 1, 100_000)? as u32;
            let jobs = p.int("jobs", 10, 1, 100_000)? as u32;
            let bkl = match p.raw("bkl") {
                None => 0.3,
                Some(v) => v.parse::<f64>().ok().filter(|x| (0.0..=0.7).contains(x)).ok_or_else(|| {
                    p.err(format!("bkl={v}: the share of jobs taking the big kernel lock must be within 0..=0.7"))
                })?,
            };
            let hold = p.dur("hold", 10_000)?;
            // Each task's job list is its own program (jobs are drawn per task): refuse a
            // size the machine cannot hold before building it.
            let statements = tasks as u64 * (jobs as u64 * AIM7_MAX_OPS_PER_JOB + 2);
            if statements > super::limits::MAX_TOTAL_OPS {
                return Err(p.err(format!(
                    "tasks={tasks} with jobs={jobs} would be up to {statements} program statements, more than the limit of {} (lower tasks or jobs)",
                    super::limits::MAX_TOTAL_OPS
                )));
            }
            aim7(tasks, jobs, bkl, hold)
        }
        "loops" => {
            let n = p.int("n", 4, 1, super::limits::MAX_TASKS as i64)? as u32;
            let policy = match p.raw("policy").unwrap_or("normal") {
                "normal" | "other" => SchedPolicy::Normal,
                "batch" => SchedPolicy::Batch,
                "idle" => SchedPolicy::Idle,
                v => return Err(p.err(format!("policy={v}: must be normal, batch or idle"))),
            };
            match p.raw("from").unwrap_or("none") {
                "none" => loops(n, policy),
                "shell" => {
                    // The loops set their own nice level after the fork; the shell stays at 0.
                    let w = loops_from_shell(n, policy, nice);
                    nice_applied = true;
                    w
                }
                v => return Err(p.err(format!("from={v}: must be none or shell"))),
            }
        }
        "cpujob" => {
            let threads = p.int("threads", 1, 1, 4096)? as u32;
            let work = match p.raw("work") {
                None => CpuWork::Time(100_000_000_000),
                Some(v) => match v.trim().parse::<f64>() {
                    Ok(c) if c.is_finite() && (1.0..=1e16).contains(&c) => {
                        CpuWork::Cycles(c as u64)
                    }
                    Ok(_) => return Err(p.err(format!("work={v}: cycles must be within 1..=1e16"))),
                    Err(_) => {
                        let ns = p.dur("work", 0)?;
                        if ns == 0 {
                            return Err(p.err("work must be more than 0".into()));
                        }
                        CpuWork::Time(ns)
                    }
                },
            };
            cpujob(threads, work)
        }
        "hackbench" => {
            let groups = p.int("groups", 10, 1, 10_000)? as u32;
            let fds = p.int("fds", 20, 1, 1_000)? as u32;
            let loops = p.int("loops", 100, 1, 100_000_000)? as u64;
            if groups as u64 * fds as u64 * 2 > super::limits::MAX_TASKS {
                return Err(p.err(format!(
                    "groups={groups} with fds={fds} is {} tasks, more than {}",
                    groups as u64 * fds as u64 * 2,
                    super::limits::MAX_TASKS
                )));
            }
            let socket = match p.raw("mode").unwrap_or("pipe") {
                "pipe" => false,
                "socket" => true,
                m => return Err(p.err(format!("mode={m}: must be pipe or socket"))),
            };
            let threads = match p.raw("threads").unwrap_or("0") {
                "0" => false,
                "1" => true,
                v => return Err(p.err(format!("threads={v}: must be 0 (processes) or 1"))),
            };
            hackbench(groups, fds, loops, socket, threads)
        }
        "schbench" => {
            let messages = p.int("messages", 2, 1, 1000)? as u32;
            let workers = p.int("workers", 16, 1, 10_000)? as u32;
            if messages as u64 * (workers as u64 + 1) > super::limits::MAX_TASKS {
                return Err(p.err(format!(
                    "messages={messages} with workers={workers} is more than {} tasks",
                    super::limits::MAX_TASKS
                )));
            }
            let cputime = p.dur("cputime", 10_000_000)?;
            let sleep = p.dur("sleep", 10_000_000)?;
            if cputime == 0 {
                return Err(p.err("cputime must be longer than 0".into()));
            }
            schbench(messages, workers, cputime, sleep)
        }
        "mpg123" => {
            let per_s = match p.raw("cycles_per_s") {
                None => MPG123_CYCLES_PER_AUDIO_S,
                Some(v) => v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|c| c.is_finite() && (1e3..=1e12).contains(c))
                    .ok_or_else(|| {
                        p.err(format!(
                            "cycles_per_s={v}: must be a number within 1e3..=1e12"
                        ))
                    })?,
            };
            let period = p.dur("period", 125_000_000)?;
            let buffer = p.int("buffer", 4, 1, 64)? as u32;
            if period == 0 {
                return Err(p.err("period must be longer than 0".into()));
            }
            mpg123(per_s, period, buffer)
        }
        "audio" => {
            let period = p.dur("period", 50_000_000)?;
            let work = p.dur("work", 2_500_000)?;
            let buffer = p.int("buffer", 3, 1, 64)? as u32;
            if period == 0 {
                return Err(p.err("period must be longer than 0".into()));
            }
            audio(period, work, buffer)
        }
        "pipechain" => {
            let groups = p.int("groups", 4, 1, 100_000)? as u32;
            let len = p.int("len", 8, 2, 100_000)? as u32;
            let delay = p.dur("delay", 0)?;
            if groups as u64 * len as u64 > super::limits::MAX_TASKS {
                return Err(p.err(format!(
                    "groups={groups} with len={len} is {} tasks, more than {}",
                    groups as u64 * len as u64,
                    super::limits::MAX_TASKS
                )));
            }
            pipechain(groups, len, delay)
        }
        "desktop" => {
            let scale = match p.raw("scale") {
                None => 1.0,
                Some(v) => v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && (0.01..=100.0).contains(x))
                    .ok_or_else(|| {
                        p.err(format!("scale={v}: must be a number within 0.01..=100"))
                    })?,
            };
            desktop(scale)
        }
        "interactive" => {
            let sleep = p.dur("sleep", 20_000_000)?;
            let work = p.dur("work", 1_000_000)?;
            interactive(sleep, work)
        }
        "probe" => {
            let period = p.dur("period", 1_000_000)?;
            let work = p.dur("work", 0)?;
            if period == 0 || work >= period {
                return Err(p.err(format!(
                    "period={} with work={}: the period must be above 0 and longer than the work",
                    fmt_dur(period),
                    fmt_dur(work)
                )));
            }
            probe(period, work)
        }
        "rtmix" => {
            let rt = p.int("rt", 2, 1, 10_000)? as u32;
            let normal = p.int("normal", 2, 0, 100_000)? as u32;
            let period = p.dur("period", 10_000_000)?;
            let work = p.dur("work", 3_000_000)?;
            let prio = p.int("prio", 50, RT_PRIO_MIN as i64, RT_PRIO_MAX as i64)? as u8;
            if period == 0 || work == 0 || work >= period {
                return Err(p.err(format!(
                    "period={} with work={}: both must be above 0 and the work shorter than the period",
                    fmt_dur(period),
                    fmt_dur(work)
                )));
            }
            rtmix(rt, normal, period, work, prio)
        }
        "x264" => {
            let threads = p.int("threads", 6, 1, 1024)? as u32;
            let frames = p.int("frames", 240, 1, 1_000_000)? as u32;
            let rows = p.int("rows", 68, 2, 10_000)? as u32;
            let row = p.dur("row", 2_000_000)?;
            let mvrange = p.int("mvrange", 3, 0, 10_000)? as u32;
            let lookahead = p.dur("lookahead", 10_000_000)?;
            if mvrange >= rows {
                return Err(p.err(format!(
                    "mvrange={mvrange} with rows={rows}: a row may reach at most rows-1 rows ahead"
                )));
            }
            if row == 0 {
                return Err(p.err("row must be longer than 0".into()));
            }
            let frames_up = frames.div_ceil(threads) as u64 * threads as u64;
            if frames_up * (rows as u64 * 3 + 8) > super::limits::MAX_TOTAL_OPS {
                return Err(p.err(format!(
                    "frames={frames} of rows={rows} is too large a program (lower frames or rows)"
                )));
            }
            x264(X264 {
                threads,
                frames,
                rows,
                row_ns: row,
                mvrange,
                lookahead_ns: lookahead,
            })
        }
        _ => {
            return Err(WorkloadError::Unknown(
                name.to_string(),
                BUILTINS
                    .iter()
                    .map(|(n, _, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            ))
        }
    };
    p.finish()?;
    // A parameter added to the name: after ':' if it is the first, so that it parses back.
    let add = |name: &mut String, kv: String| {
        name.push(if name.contains(':') { ',' } else { ':' });
        name.push_str(&kv);
    };
    if nice != 0 {
        if !nice_applied {
            for t in &mut w.tasks {
                t.nice = nice;
            }
        }
        add(&mut w.name, format!("nice={nice}"));
    }
    if start_ns > 0 {
        for t in &mut w.tasks {
            t.start_ns = start_ns;
        }
        add(&mut w.name, format!("start={}", fmt_dur(start_ns)));
    }
    for c in &changes {
        w.changes.push(super::GroupChange {
            change: *c,
            progs: (0..w.programs.len() as u32).collect(),
        });
        let key = match c.to {
            AttrTo::Nice(_) => "renice",
            AttrTo::Policy(..) => "chpolicy",
        };
        add(&mut w.name, format!("{key}={}", c.spec()));
    }
    debug_assert!(w.validate().is_ok(), "{:?}", w.validate());
    Ok(w)
}

fn base(name: String, unit: &str) -> Workload {
    Workload {
        name,
        programs: Vec::new(),
        channels: Vec::new(),
        tasks: Vec::new(),
        throughput_unit: unit.into(),
        per_op_label: None,
        rtmigrate: None,
        locks: Vec::new(),
        throughput_scale: 1.0,
        changes: Vec::new(),
    }
}

/// loop_yield: an endless `sched_yield()` loop per instance (benchmarks.md A2).
pub fn yield_loop(instances: u32) -> Workload {
    let mut w = base(format!("yield:instances={instances}"), "yields/s");
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Yield)
        .op(Op::Count)
        .end()
        .build("loop_yield");
    w.programs.push(prog.with_working_set(4));
    for i in 0..instances {
        let mut t = TaskSpec::new(0);
        t.mm = i;
        w.tasks.push(t);
    }
    w
}

/// chat_s/chat_c (benchmarks.md A1): per connection a client sender and receiver and a server
/// receiver and sender, all threads (CLONE_VM) of the client or the server process. Each
/// client sends `messages`; the server's sender for that user forwards each to the 19 others.
/// The figure is chat's "Average throughput": (sent + received) / elapsed.
pub fn chat(rooms: u32, messages: u64) -> Workload {
    let mut w = base(
        format!("chat:rooms={rooms},messages={messages}"),
        "messages/s",
    );
    const CLIENT_MM: u32 = 0;
    const SERVER_MM: u32 = 1;
    let conns = rooms * CHAT_CLIENTS_PER_ROOM;
    let sock = ChannelSpec {
        kind: ChanKind::Socket,
        capacity: Some(CHAT_SOCKET_CAPACITY),
    };
    // Channels: up[k] client->server, down[k] server->client, note[k] the server's SysV
    // semaphore slot that srv_rcv posts and srv_snd waits on.
    let up = |k: u32| k;
    let down = |k: u32| conns + k;
    let note = |k: u32| 2 * conns + k;
    for _ in 0..2 * conns {
        w.channels.push(sock.clone());
    }
    for _ in 0..conns {
        w.channels.push(ChannelSpec {
            kind: ChanKind::Semaphore,
            capacity: None,
        });
    }
    let others = (CHAT_CLIENTS_PER_ROOM - 1) as u64;
    for k in 0..conns {
        let room_base = k / CHAT_CLIENTS_PER_ROOM * CHAT_CLIENTS_PER_ROOM;
        let cli_snd = ProgramBuilder::new()
            .repeat(Some(messages))
            .op(Op::Send(up(k)))
            .op(Op::Count)
            .end()
            .op(Op::Exit)
            .build("cli_snd");
        let cli_rcv = ProgramBuilder::new()
            .repeat(Some(others * messages))
            .op(Op::Recv(down(k)))
            .op(Op::Count)
            .end()
            .op(Op::Exit)
            .build("cli_rcv");
        let srv_rcv = ProgramBuilder::new()
            .repeat(Some(messages))
            .op(Op::Recv(up(k)))
            .op(Op::Send(note(k)))
            .end()
            .op(Op::Exit)
            .build("srv_rcv");
        let mut snd = ProgramBuilder::new()
            .repeat(Some(messages))
            .op(Op::Recv(note(k)));
        for j in room_base..room_base + CHAT_CLIENTS_PER_ROOM {
            if j != k {
                snd = snd.op(Op::Send(down(j)));
            }
        }
        let srv_snd = snd.end().op(Op::Exit).build("srv_snd");
        for (prog, mm) in [
            (cli_snd, CLIENT_MM),
            (cli_rcv, CLIENT_MM),
            (srv_rcv, SERVER_MM),
            (srv_snd, SERVER_MM),
        ] {
            let id = w.programs.len() as u32;
            // A thread's working set, our estimate: the few stack lines and the 100-byte
            // buffer it touches plus the socket and task structures on its path - about 4 KB
            // (chat.h's 16 KB STACK_SIZE is allocated, not touched).
            w.programs.push(prog.with_working_set(4));
            let mut t = TaskSpec::new(id);
            t.mm = mm;
            w.tasks.push(t);
        }
    }
    w
}

/// Resident pages of lmbench's `lat_proc` parent (after its first forks), of `/tmp/hello` and
/// of `/bin/sh` (dash), for the address-space model: `/proc/PID/statm` on the project machine
/// (glibc 2.36, Debian 12) as `scripts/mm-sizes.sh` prints them, rounded (they vary by about
/// 15 pages from run to run). The 2002 programs, linked against glibc 2.2, were smaller: these
/// are upper bounds (no 2002 measurement was found).
pub const LAT_PROC_PAGES: u32 = 290;
pub const HELLO_PAGES: u32 = 275;
pub const SH_PAGES: u32 = 420;

/// lmbench lat_proc (benchmarks.md A3): the parent forks, the child exits (or execs
/// /tmp/hello, or execs /bin/sh -c /tmp/hello), the parent waits.
///
/// The pages each side writes after a fork (what copy-on-write sees): the parent takes one
/// write fault as `fork()` returns (its stack) and a second in `wait()` (the status word), as
/// `getrusage` minor-fault counts of such a loop show on the project machine
/// (`scripts/mm-sizes.sh`). The child that exits writes its stack and the stdio state `exit()`
/// flushes (2 pages); the child that execs writes its stack for `close(1)` and the `execve`
/// arguments (1 page). (Today's glibc child takes ~16 faults in its fork wrapper; the 2002
/// one had no such work: the child's counts are our estimate for 2002.)
pub fn fork(mode: &str) -> Workload {
    let mut w = base(format!("fork:mode={mode}"), "forks/s");
    w.per_op_label = Some(
        match mode {
            "exit" => "fork_exit_us",
            "exec" => "fork_exec_us",
            _ => "fork_sh_us",
        }
        .into(),
    );
    // Program 0: the parent; 1: the child; 2: hello run by the shell.
    let parent = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Fork {
            prog: 1,
            thread: false,
        })
        .op(Op::Dirty(1))
        .op(Op::Wait)
        .op(Op::Dirty(2))
        .op(Op::Count)
        .end()
        .build("lat_proc");
    let (child, child_pages) = match mode {
        "exit" => (
            ProgramBuilder::new()
                .op(Op::Dirty(2))
                .op(Op::Exit)
                .build("child"),
            LAT_PROC_PAGES,
        ),
        "exec" => (
            ProgramBuilder::new()
                .op(Op::Dirty(1))
                .op(Op::Kernel(KernelWork::Exec))
                .op(Op::Exit)
                .build("hello"),
            HELLO_PAGES,
        ),
        _ => (
            // sh forks hello as lat_proc forks its child, and writes as lat_proc does.
            ProgramBuilder::new()
                .op(Op::Dirty(1))
                .op(Op::Kernel(KernelWork::Exec))
                .op(Op::Kernel(KernelWork::ShellStartup))
                .op(Op::Fork {
                    prog: 2,
                    thread: false,
                })
                .op(Op::Dirty(1))
                .op(Op::Wait)
                .op(Op::Dirty(2))
                .op(Op::Exit)
                .build("sh"),
            SH_PAGES,
        ),
    };
    let hello = ProgramBuilder::new()
        .op(Op::Dirty(1))
        .op(Op::Kernel(KernelWork::Exec))
        .op(Op::Exit)
        .build("hello");
    // A program's pages are its image after exec (the forked child starts with a copy of its
    // parent's address space, whatever its program says).
    w.programs
        .push(parent.with_working_set(16).with_mm_pages(LAT_PROC_PAGES));
    w.programs
        .push(child.with_working_set(16).with_mm_pages(child_pages));
    w.programs
        .push(hello.with_working_set(16).with_mm_pages(HELLO_PAGES));
    w.tasks.push(TaskSpec::new(0));
    w
}

/// lmbench lat_ctx (benchmarks.md A3): a ring of `procs` processes joined by pipes; each reads
/// the token, walks its private `size` KB array, and writes the token on.
pub fn ctx(procs: u32, size_kb: u32) -> Workload {
    let mut w = base(format!("ctx:procs={procs},size={size_kb}"), "hops/s");
    w.per_op_label = Some("us_per_hop".into());
    for _ in 0..procs {
        w.channels.push(ChannelSpec {
            kind: ChanKind::Pipe,
            capacity: None,
        });
    }
    for i in 0..procs {
        let prev = (i + procs - 1) % procs;
        let mut b = ProgramBuilder::new();
        if i == 0 {
            // The parent injects the token.
            b.push(Op::Send(0));
        }
        b.begin(None);
        b.push(Op::Recv(prev));
        b.push(Op::Touch);
        b.push(Op::Count);
        b.push(Op::Send(i));
        b.close();
        w.programs
            .push(b.build(format!("lat_ctx{i}")).with_working_set(size_kb));
        let mut t = TaskSpec::new(i);
        t.mm = i;
        w.tasks.push(t);
    }
    w
}

/// A `make -jN` build (benchmarks.md A8): make keeps `jobs` compile jobs running until `units`
/// have been built. A job execs the compiler, then alternates CPU bursts (log-normal, median
/// 50 ms, four per job: ~0.2 s of CPU per file) with short uninterruptible I/O waits
/// (exponential, mean 1 ms: a warm page cache).
pub fn makej(jobs: u64, units: u64) -> Workload {
    let jobs = jobs.min(units);
    let mut w = base(format!("makej:jobs={jobs},units={units}"), "jobs/s");
    let mut make = ProgramBuilder::new();
    make.begin(Some(jobs));
    make.push(Op::Fork {
        prog: 1,
        thread: false,
    });
    make.close();
    if units > jobs {
        make.begin(Some(units - jobs));
        make.push(Op::Wait);
        make.push(Op::Fork {
            prog: 1,
            thread: false,
        });
        make.close();
    }
    make.begin(Some(jobs));
    make.push(Op::Wait);
    make.close();
    make.push(Op::Exit);
    let job = ProgramBuilder::new()
        .op(Op::Kernel(KernelWork::Exec))
        .repeat(Some(4))
        .op(Op::Compute(Dist::LogNormal(50_000_000, 0.8)))
        .op(Op::Sleep {
            dur: Dist::Exp(1_000_000),
            uninterruptible: true,
        })
        .end()
        .op(Op::Count)
        .op(Op::Exit)
        .build("cc1");
    w.programs.push(make.build("make").with_working_set(64));
    // A compiler's working set is larger than a 2002 L2: it always refills after a migration.
    w.programs.push(job.with_working_set(512));
    w.tasks.push(TaskSpec::new(0));
    w
}

/// rt-migrate-test (benchmarks.md A4, rt-tests v2.4): `threads` SCHED_FIFO threads at
/// priorities `prio`..`prio+threads-1` and a parent one above them. Each iteration the parent
/// sleeps `sleep`, takes a time stamp and releases the threads (the start barrier); each
/// thread busy-loops until stamp + `run`, then waits at the end barrier while the parent
/// sleeps `sleep` again. Before each iteration the highest-priority thread binds itself to the
/// next CPU, forcing a migration. Unlike rt-tests v2.4-v2.10, whose `-r` and `-s` are parsed
/// but ignored (the macros RUN_INTERVAL and INTERVAL are used), `run` and `sleep` take effect.
/// The barriers are one semaphore per thread (start) and one shared (end): the parent posts
/// each thread's start in priority order, as the futex wake-all of a barrier wakes them.
pub fn rtmigrate(
    threads: u32,
    prio: u8,
    run_ns: u64,
    sleep_ns: u64,
    loops: u64,
    maxerr_ns: u64,
) -> Workload {
    let mut w = base(
        format!(
            "rtmigrate:threads={threads},prio={prio},run={},sleep={},loops={loops},maxerr={}",
            fmt_dur(run_ns),
            fmt_dur(sleep_ns),
            fmt_dur(maxerr_ns)
        ),
        "iterations/s",
    );
    w.rtmigrate = Some(super::RtMigrateSpec {
        threads,
        base_prio: prio,
        maxerr_ns,
    });
    let sem = ChannelSpec {
        kind: ChanKind::Semaphore,
        capacity: None,
    };
    // Channels 0..threads: start barrier per thread; channel `threads`: the end barrier.
    for _ in 0..=threads {
        w.channels.push(sem.clone());
    }
    let done = threads;
    let mut parent = ProgramBuilder::new();
    parent.begin(Some(loops));
    parent.push(Op::Sleep {
        dur: Dist::Const(sleep_ns),
        uninterruptible: false,
    });
    parent.push(Op::Stamp);
    for i in (0..threads).rev() {
        parent.push(Op::Send(i));
    }
    parent.push(Op::Sleep {
        dur: Dist::Const(sleep_ns),
        uninterruptible: false,
    });
    for _ in 0..threads {
        parent.push(Op::Recv(done));
    }
    parent.push(Op::Count);
    parent.close();
    parent.push(Op::Exit);
    w.programs
        .push(parent.build("rt-migrate-main").with_working_set(8));
    let mut t = TaskSpec::new(0);
    t.policy = crate::task::SchedPolicy::Fifo;
    t.rt_priority = prio + threads as u8;
    w.tasks.push(t);
    for i in 0..threads {
        let mut b = ProgramBuilder::new();
        b.begin(Some(loops));
        if i == threads - 1 {
            b.push(Op::AffinityNextCpu);
        }
        b.push(Op::Recv(i));
        b.push(Op::SpinUntil { ns: run_ns, id: i });
        b.push(Op::Send(done));
        b.close();
        b.push(Op::Exit);
        w.programs
            .push(b.build(format!("rt-migrate-{i}")).with_working_set(8));
        let mut t = TaskSpec::new(i + 1);
        t.policy = crate::task::SchedPolicy::Fifo;
        t.rt_priority = prio + i as u8;
        t.mm = 0; // threads of one process
        w.tasks.push(t);
    }
    w
}

/// The most statements one AIM7 job adds to its task's program (the system-call job: four
/// lock/unlock sections of four statements, its entry and its count).
const AIM7_MAX_OPS_PER_JOB: u64 = 18;

/// splitmix64: a fixed, seedable hash for AIM7's per-task job draws.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// AIM7 (benchmarks.md A5), modelled as the reference suggests for a simulator: `tasks`
/// independent job streams sharing one global sleeping lock, the big kernel lock of
/// 2.6.26-rc1 (a semaphore; its hand-over follows `--lock-mode`). Each task runs `jobs` jobs
/// back to back, drawn per task from a fixed hash of (task, job) as AIM7 draws with a pid seed:
///
/// - user compute (the rest of the mix; workfile.shared is 39.7% pure user time): exp(1 ms);
/// - disk I/O, 20%: 50 µs in the kernel, an uninterruptible wait exp(2 ms), 200 µs of user work;
/// - process, 10%: fork a child that execs and exits, and wait for it;
/// - system calls under the BKL, `bkl` of the jobs (30%): four times, 10 µs of kernel work,
///   then the BKL held for `hold` of non-preemptible kernel work (tty, ioctl, char-device
///   open: the paths that still took the BKL in 2008).
///
/// The job sizes are our estimates of the mix's shape, not measurements. Beside the tasks runs
/// one interactive task (the console-switch test); its wakeup latency is reported on its own.
/// The figure is AIM7's Jobs per Minute.
pub fn aim7(tasks: u32, jobs: u32, bkl_share: f64, hold_ns: u64) -> Workload {
    let mut w = base(
        format!(
            "aim7:tasks={tasks},jobs={jobs},bkl={bkl_share},hold={}",
            fmt_dur(hold_ns)
        ),
        "jobs/min",
    );
    w.throughput_scale = 60.0;
    w.locks.push((
        "bkl".into(),
        super::LockSpec::Semaphore {
            count: 1,
            mode: None,
        },
    ));
    const BKL: u32 = 0;
    // Program 0: the exec'd child of a process job.
    w.programs.push(
        ProgramBuilder::new()
            .op(Op::Kernel(KernelWork::Exec))
            .op(Op::Exit)
            .build("aim7-child")
            .with_working_set(16),
    );
    let (disk, process) = (0.2, 0.1);
    for task in 0..tasks {
        let mut b = ProgramBuilder::new();
        for job in 0..jobs {
            let u =
                (splitmix(((task as u64) << 32) | job as u64) >> 11) as f64 / (1u64 << 53) as f64;
            if u < bkl_share {
                for _ in 0..4 {
                    b.push(Op::KernelCompute(Dist::Const(10_000)));
                    b.push(Op::Lock(BKL));
                    b.push(Op::KernelCompute(Dist::Const(hold_ns)));
                    b.push(Op::Unlock(BKL));
                }
            } else if u < bkl_share + disk {
                b.push(Op::KernelCompute(Dist::Const(50_000)));
                b.push(Op::Sleep {
                    dur: Dist::Exp(2_000_000),
                    uninterruptible: true,
                });
                b.push(Op::Compute(Dist::Exp(200_000)));
            } else if u < bkl_share + disk + process {
                b.push(Op::Fork {
                    prog: 0,
                    thread: false,
                });
                b.push(Op::Wait);
            } else {
                b.push(Op::Compute(Dist::Exp(1_000_000)));
            }
            b.push(Op::Count);
        }
        b.push(Op::Exit);
        w.programs
            .push(b.build(format!("aim7-{task}")).with_working_set(32));
        let mut t = TaskSpec::new(task + 1);
        t.mm = task;
        w.tasks.push(t);
    }
    let ia = interactive(20_000_000, 1_000_000);
    w.append(ia, 1);
    w.name = format!(
        "aim7:tasks={tasks},jobs={jobs},bkl={bkl_share},hold={}",
        fmt_dur(hold_ns)
    );
    w
}

/// `n` endless busy loops. Each counts one unit per 10 ms of CPU it gets, scaled back to
/// CPU-seconds per second, so the figure is the CPU the loops received (at most the CPU count).
pub fn loops(n: u32, policy: SchedPolicy) -> Workload {
    let pol = match policy {
        SchedPolicy::Batch => ",policy=batch",
        SchedPolicy::Idle => ",policy=idle",
        SchedPolicy::Iso => ",policy=iso",
        _ => "",
    };
    let mut w = base(format!("loops:n={n}{pol}"), "CPU-s/s");
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Compute(Dist::Const(10_000_000)))
        .op(Op::Count)
        .end()
        .build("loop");
    w.programs.push(prog.with_working_set(4));
    w.throughput_scale = 0.01;
    for i in 0..n {
        let mut t = TaskSpec::new(0);
        t.mm = i;
        t.policy = policy;
        w.tasks.push(t);
    }
    w
}

/// `n` busy loops started as the CFS v19 report started them: a nice-0 shell loop forks them
/// one after another (`for ...; do nice -n 19 ./loop & done`), each child paying the fork, an
/// exec of `nice`, its `setpriority` and the exec of the loop, while the loops already
/// started compete with the shell for the CPU. The shell exits once the last is started.
/// The shell's own interpretation of the loop line is not charged (no source gives it).
pub fn loops_from_shell(n: u32, policy: SchedPolicy, nice: i32) -> Workload {
    let mut w = loops(n, policy);
    w.name = w.name.replacen(
        &format!("loops:n={n}"),
        &format!("loops:n={n},from=shell"),
        1,
    );
    w.tasks.clear();
    // Program 0 becomes the child: `nice -n N` (exec, setpriority) execs the loop.
    let mut child = ProgramBuilder::new().op(Op::Kernel(KernelWork::Exec));
    if nice != 0 {
        child = child.op(Op::SetNice(nice));
    }
    if policy != SchedPolicy::Normal {
        child = child.op(Op::SetPolicy(policy, 0));
    }
    let working_set = w.programs[0].working_set_kb;
    w.programs[0] = child
        .op(Op::Kernel(KernelWork::Exec))
        .repeat(None)
        .op(Op::Compute(Dist::Const(10_000_000)))
        .op(Op::Count)
        .end()
        .build("loop")
        .with_working_set(working_set);
    let shell = ProgramBuilder::new()
        .repeat(Some(n as u64))
        .op(Op::Fork {
            prog: 0,
            thread: false,
        })
        .end()
        .op(Op::Exit)
        .build("shell");
    w.programs.push(shell.with_working_set(16));
    w.tasks.push(TaskSpec::new(1));
    w
}

/// mpg123's decoding cost per second of 44.1 kHz stereo sound, in CPU cycles: its own
/// doc/BENCHMARKING (the entry of 23 July 2006, mpg123 0.60-beta1, MMX build; in the mpg123
/// repository's history from 2006, e.g. github.com/madebr/mpg123) decodes a 598 s file in 19 s of a Pentium
/// II 366, so 19 × 366 MHz / 598 s. Scaled by clock to other machines: a simplification (a
/// 2007 Athlon runs more instructions per cycle, and 0.66 has 3DNow/SSE decoders).
pub const MPG123_CYCLES_PER_AUDIO_S: f64 = 19.0 * 366e6 / 598.0;

/// mpg123 of mid-2007 playing through ALSA (`src/audio_alsa.c` of 0.66: `BUFFER_LENGTH 0.5`
/// s, `period_size = buffer_size / 4`, start threshold 1 frame; alsa-lib's default
/// `avail_min` is one period). Each blocking write of decoded frames returns once a period
/// of the ring is free: the player wakes every `period`, decodes that much sound and writes
/// it. Decoding a period costs `cycles_per_s × period` cycles at the machine's clock.
/// Simplified: the decode of a period is one burst (mpg123 writes each 26 ms frame as it is
/// decoded, the ring taking it while there is room); OSS output is not modelled.
pub fn mpg123(cycles_per_s: f64, period_ns: u64, buffer: u32) -> Workload {
    let cycles = (cycles_per_s * period_ns as f64 / 1e9).round().max(1.0) as u64;
    let mut w = base(
        format!(
            "mpg123:cycles_per_s={},period={},buffer={buffer}",
            cycles_per_s.round() as u64,
            fmt_dur(period_ns)
        ),
        "periods/s",
    );
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::ComputeCycles(cycles))
        .op(Op::AudioWrite {
            period: period_ns,
            buffer,
        })
        .op(Op::Count)
        .end()
        .build("mpg123");
    w.programs.push(prog.with_working_set(256));
    w.tasks.push(TaskSpec::new(0));
    w
}

/// A `cpujob`'s work per thread: cycles, or a time at the machine's top non-turbo clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CpuWork {
    Cycles(u64),
    Time(u64),
}

/// `threads` CPU-bound threads of one process, each with a fixed job cut into 100 pieces
/// (each counted, so throughput is jobs per second); the run ends when every job is done and
/// its simulated time is the completion time the BFS 0.400 posts quoted ("took 126 seconds").
/// A main thread creates the workers with `clone(CLONE_VM)` and waits for them, so that the
/// policy places each one as it would a new thread.
pub fn cpujob(threads: u32, work: CpuWork) -> Workload {
    let (spec, piece) = match work {
        CpuWork::Cycles(c) => (format!("{c}"), Op::ComputeCycles(c.div_ceil(100))),
        CpuWork::Time(ns) => (fmt_dur(ns), Op::Compute(Dist::Const(ns.div_ceil(100)))),
    };
    let mut w = base(format!("cpujob:threads={threads},work={spec}"), "jobs/s");
    let worker = ProgramBuilder::new()
        .repeat(Some(100))
        .op(piece)
        .op(Op::Count)
        .end()
        .op(Op::Exit)
        .build("cpujob-worker");
    w.programs.push(worker.with_working_set(64));
    let main = ProgramBuilder::new()
        .repeat(Some(threads as u64))
        .op(Op::Fork {
            prog: 0,
            thread: true,
        })
        .end()
        .repeat(Some(threads as u64))
        .op(Op::Wait)
        .end()
        .op(Op::Exit)
        .build("cpujob");
    w.programs.push(main.with_working_set(4));
    w.throughput_scale = 0.01;
    w.tasks.push(TaskSpec::new(1));
    w
}

/// Pipe capacity since Linux 2.6.11, pipe(7): 16 pages of 4 KB = 65 536 bytes, i.e. this many
/// of hackbench's 100-byte messages.
const PIPE_CAPACITY_MSGS: u32 = 65_536 / 100;

/// hackbench of rt-tests v2.4 (benchmarks.md A1b): `groups` groups, each of `fds` receivers
/// (one channel each) and `fds` senders; every sender writes `loops` times to each receiver
/// in turn, every receiver reads `fds * loops` messages. The run ends when all have finished,
/// so the simulated time is hackbench's `Time:`. Processes (each its own address space) or,
/// with `threads`, threads of one process. Simplified, and said so: the ready/wake start
/// barrier is left out (every task starts at time 0); socket mode (AF_UNIX `socketpair`) uses
/// the socket cost model with chat's 2.4 TCP receive buffer as its capacity, not AF_UNIX's
/// own send-buffer accounting.
pub fn hackbench(groups: u32, fds: u32, loops: u64, socket: bool, threads: bool) -> Workload {
    let mut w = base(
        format!(
            "hackbench:groups={groups},fds={fds},loops={loops},mode={},threads={}",
            if socket { "socket" } else { "pipe" },
            threads as u8
        ),
        "messages/s",
    );
    let chan = ChannelSpec {
        kind: if socket {
            ChanKind::Socket
        } else {
            ChanKind::Pipe
        },
        capacity: Some(if socket {
            CHAT_SOCKET_CAPACITY
        } else {
            PIPE_CAPACITY_MSGS
        }),
    };
    let mut mm = 0u32;
    for g in 0..groups {
        let base_ch = w.channels.len() as u32;
        for _ in 0..fds {
            w.channels.push(chan.clone());
        }
        let mut sender = ProgramBuilder::new();
        sender.begin(Some(loops));
        for j in 0..fds {
            sender.push(Op::Send(base_ch + j));
        }
        sender.close();
        let sender_prog = w.programs.len() as u32;
        w.programs.push(
            sender
                .build(format!("hackbench_sender{g}"))
                .with_working_set(8),
        );
        let mut receiver = ProgramBuilder::new();
        receiver.begin(Some(fds as u64 * loops));
        receiver.push(Op::RecvMember {
            base: base_ch,
            count: fds,
            offset: 0,
        });
        receiver.push(Op::Count);
        receiver.close();
        let receiver_prog = w.programs.len() as u32;
        w.programs.push(
            receiver
                .build(format!("hackbench_receiver{g}"))
                .with_working_set(8),
        );
        for (prog, _) in [(receiver_prog, "receiver"), (sender_prog, "sender")] {
            for j in 0..fds {
                let mut t = TaskSpec::new(prog);
                t.member = j;
                t.mm = if threads { 0 } else { mm };
                mm += 1;
                w.tasks.push(t);
            }
        }
    }
    w
}

/// schbench as first published (benchmarks.md A7, `masoncl/schbench` 36d859a, 2016):
/// `messages` message threads, each with `workers` workers, threads of one process. A worker
/// spins `cputime`, posts itself to its messenger and waits (FUTEX_WAIT); the messenger
/// sleeps `sleep` plus up to a quarter more, then wakes every worker that posted. schbench's
/// figure, the time from that wake to the worker running, is the simulator's wakeup latency
/// of the workers, reported as the interactive percentiles (p50/p99/max; schbench prints more
/// percentiles from a log histogram). Futex wake/wait are modelled as semaphore up/down.
/// Simplified, and said so: the messenger waits for all its workers to have posted before it
/// wakes them (schbench wakes whoever is on its list and leaves late posters for the next
/// round), which only matters when workers cannot finish `cputime` within a sleep.
pub fn schbench(messages: u32, workers: u32, cputime_ns: u64, sleep_ns: u64) -> Workload {
    let mut w = base(
        format!(
            "schbench:messages={messages},workers={workers},cputime={},sleep={}",
            fmt_dur(cputime_ns),
            fmt_dur(sleep_ns)
        ),
        "requests/s",
    );
    let sem = || ChannelSpec {
        kind: ChanKind::Semaphore,
        capacity: None,
    };
    for m in 0..messages {
        // Channel of messenger m's posts, then one wake channel per worker.
        let post = w.channels.len() as u32;
        w.channels.push(sem());
        let wake0 = w.channels.len() as u32;
        for _ in 0..workers {
            w.channels.push(sem());
        }
        let mut b = ProgramBuilder::new();
        b.begin(None);
        b.push(Op::Sleep {
            dur: Dist::Uniform(sleep_ns, sleep_ns + sleep_ns / 4),
            uninterruptible: false,
        });
        for _ in 0..workers {
            b.push(Op::Recv(post));
        }
        for j in 0..workers {
            b.push(Op::Send(wake0 + j));
        }
        b.close();
        let prog = w.programs.len() as u32;
        w.programs
            .push(b.build(format!("schbench_message{m}")).with_working_set(16));
        w.tasks.push(TaskSpec::new(prog));
        for j in 0..workers {
            let mut b = ProgramBuilder::new();
            b.begin(None);
            b.push(Op::Compute(Dist::Const(cputime_ns)));
            b.push(Op::Send(post));
            b.push(Op::Recv(wake0 + j));
            b.push(Op::Count);
            b.close();
            let prog = w.programs.len() as u32;
            w.programs.push(
                b.build(format!("schbench_worker{m}.{j}"))
                    .with_working_set(16),
            );
            let mut t = TaskSpec::new(prog);
            t.interactive = true;
            w.tasks.push(t);
        }
    }
    w
}

/// An mpg123-like audio player (the CFS v19 report's skip test; interbench's Audio load,
/// benchmarks.md A6: 5 % CPU every 50 ms, the defaults here): forever, decode one period
/// (`work` of CPU), then write it to the sound device, whose ring holds `buffer` periods
/// (`Op::AudioWrite`). The run reports underruns (the device found the ring empty: a skip),
/// deadline misses (a period took longer than a period to produce once there was room for
/// it) and the lateness of each period. The device model is stated in `Op::AudioWrite`: it
/// starts playing at the first write, and after an underrun restarts with the late period.
pub fn audio(period_ns: u64, work_ns: u64, buffer: u32) -> Workload {
    let mut w = base(
        format!(
            "audio:period={},work={},buffer={buffer}",
            fmt_dur(period_ns),
            fmt_dur(work_ns)
        ),
        "periods/s",
    );
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Compute(Dist::Const(work_ns)))
        .op(Op::AudioWrite {
            period: period_ns,
            buffer,
        })
        .op(Op::Count)
        .end()
        .build("audio");
    w.programs.push(prog.with_working_set(256));
    w.tasks.push(TaskSpec::new(0));
    w
}

/// The wakeup sources of an idle desktop as PowerTOP reported them (Eric Brake's blog, May
/// 2007, "powertop: misc causes for wakeups", https://www.ericbrake.ws/2007/05/: 79.9
/// wakeups-from-idle a second, 1.9 % of the
/// time in C0), per second: the processes and the interrupt-driven work of its top ten, and
/// the rest as one source; the ondemand governor's 10 a second left out (the simulator's
/// governor samples on its own).
pub const DESKTOP_WAKEUPS: &[(&str, f64)] = &[
    ("firefox", 10.3),
    ("irq-net", 10.1),
    ("irq-disk", 9.0),
    ("irq-acpi", 3.2),
    ("gkrellm2", 2.7),
    ("itimer", 2.5),
    ("wpa_supplicant", 1.5),
    ("hald-addon-stor", 0.5),
    ("kworker", 0.5),
    // The causes below the report's top ten: 79.9 less the ten listed (50.3).
    ("other", 29.6),
];

/// CPU per wakeup of the same report: 1.9 % of each second in C0 over its 79.9 wakeups.
/// The report's machine (a Pentium M laptop with an ipw2200) is not clocked in it, so this is
/// a time, not cycles; the interrupts' own work is folded in, as C0 residency holds it.
pub const DESKTOP_WORK_NS: u64 = (0.019 / 79.9 * 1e9) as u64;

/// An idle desktop's background (`DESKTOP_WAKEUPS`, `scale` times as often): one background
/// task per source, sleeping around its period (uniform within ±50 %, so that sources with
/// the same rate do not wake in step) and running `DESKTOP_WORK_NS` each time. Simplified:
/// interrupt-driven work runs as an ordinary nice-0 task, not in interrupt context.
pub fn desktop(scale: f64) -> Workload {
    let name = if scale == 1.0 {
        "desktop".to_string()
    } else {
        format!("desktop:scale={scale}")
    };
    let mut w = base(name, "wakeups/s");
    for (i, &(src, per_s)) in DESKTOP_WAKEUPS.iter().enumerate() {
        let period = (1e9 / (per_s * scale)).round() as u64;
        let prog = ProgramBuilder::new()
            .repeat(None)
            .op(Op::Sleep {
                dur: Dist::Uniform(period / 2, period * 3 / 2),
                uninterruptible: false,
            })
            .op(Op::Compute(Dist::Const(DESKTOP_WORK_NS)))
            .op(Op::Count)
            .end()
            .build(src);
        w.programs.push(prog.with_working_set(64));
        let mut t = TaskSpec::new(i as u32);
        t.background = true;
        t.mm = i as u32;
        w.tasks.push(t);
    }
    w
}

/// `groups` rings of `len` processes joined by pipes, each reading one byte from the process
/// before it and writing it to the one after (the CFS v19 report's pipe-chained processes;
/// lmbench lat_ctx's ring with no array to walk). One byte circulates per ring, injected by
/// its first process. The report's own program is not in the reference: that the chain is
/// a closed ring with one byte in flight is this model's reading of "passing one byte along".
/// Every process starts runnable at time 0 and blocks on its pipe when it first runs; with
/// `delay`, each ring's first process sleeps that long before injecting the byte, so that the
/// byte circulates among processes that have all started (as when a program creates every
/// chain before starting them).
pub fn pipechain(groups: u32, len: u32, delay_ns: u64) -> Workload {
    let name = if delay_ns > 0 {
        format!(
            "pipechain:groups={groups},len={len},delay={}",
            fmt_dur(delay_ns)
        )
    } else {
        format!("pipechain:groups={groups},len={len}")
    };
    let mut w = base(name, "hops/s");
    w.per_op_label = Some("us_per_hop".into());
    let mut mm = 0u32;
    for g in 0..groups {
        let base_ch = w.channels.len() as u32;
        for _ in 0..len {
            w.channels.push(ChannelSpec {
                kind: ChanKind::Pipe,
                capacity: Some(PIPE_CAPACITY_MSGS),
            });
        }
        // Member i reads pipe i-1 and writes pipe i; member 0 first injects the byte.
        let hop = |b: &mut ProgramBuilder| {
            b.begin(None);
            b.push(Op::RecvMember {
                base: base_ch,
                count: len,
                offset: -1,
            });
            b.push(Op::Count);
            b.push(Op::SendMember {
                base: base_ch,
                count: len,
                offset: 0,
            });
            b.close();
        };
        let mut first = ProgramBuilder::new();
        if delay_ns > 0 {
            first.push(Op::Sleep {
                dur: Dist::Const(delay_ns),
                uninterruptible: false,
            });
        }
        first.push(Op::Send(base_ch));
        hop(&mut first);
        let first_prog = w.programs.len() as u32;
        w.programs
            .push(first.build(format!("pipechain{g}.0")).with_working_set(8));
        let mut rest = ProgramBuilder::new();
        hop(&mut rest);
        let rest_prog = w.programs.len() as u32;
        w.programs
            .push(rest.build(format!("pipechain{g}")).with_working_set(8));
        for i in 0..len {
            let mut t = TaskSpec::new(if i == 0 { first_prog } else { rest_prog });
            t.member = i;
            t.mm = mm;
            mm += 1;
            w.tasks.push(t);
        }
    }
    w
}

/// An interactive task: sleeps uniformly between half and one and a half times `sleep`, then
/// computes `work`, forever. Its wakeup latency is reported on its own.
pub fn interactive(sleep_ns: u64, work_ns: u64) -> Workload {
    let mut w = base(
        format!(
            "interactive:sleep={},work={}",
            fmt_dur(sleep_ns),
            fmt_dur(work_ns)
        ),
        "wakeups/s",
    );
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Sleep {
            dur: Dist::Uniform(sleep_ns / 2, sleep_ns * 3 / 2),
            uninterruptible: false,
        })
        .op(Op::Compute(Dist::Const(work_ns)))
        .op(Op::Count)
        .end()
        .build("interactive");
    w.programs.push(prog.with_working_set(64));
    let mut t = TaskSpec::new(0);
    t.interactive = true;
    t.background = true;
    w.tasks.push(t);
    w
}

/// One cyclictest-style timer loop: forever, sleep until the task's next absolute expiry of
/// `period` (a `task-timer` channel of its own), record how late it runs (`Op::Lateness`,
/// which also skips expiries already missed, as cyclictest does), run `work`, count. `first`
/// runs once before the loop.
fn cyclic_program(w: &mut Workload, first: Option<Op>, period: u64, work: u64, name: &str) -> u32 {
    let timer = w.channels.len() as u32;
    w.channels.push(ChannelSpec {
        kind: ChanKind::TaskTimer,
        capacity: None,
    });
    let mut b = ProgramBuilder::new();
    if let Some(op) = first {
        b = b.op(op);
    }
    let mut b = b
        .repeat(None)
        .op(Op::Timer {
            timer,
            period,
            absolute: true,
        })
        .op(Op::Lateness { timer, period });
    if work > 0 {
        b = b.op(Op::Compute(Dist::Const(work)));
    }
    let prog = w.programs.len() as u32;
    w.programs
        .push(b.op(Op::Count).end().build(name).with_working_set(16));
    prog
}

/// A wakeup-latency probe. Jussi Laako's wakeup-latency, which the BFS 0.400 announcement ran
/// beside its kbuild and x264 runs, was not found (benchmarks.md A7); the reference's
/// substitute is cyclictest in SCHED_OTHER mode (`cyclictest -p 0 -i <period>`, default
/// interval 1 ms): sleep until an absolute expiry, take the time, record `now − expiry`,
/// advance the expiry by whole periods past now. Here the same loop on a task-timer, with an
/// optional `work` per wakeup; its lateness is the run's probe latency (and, the probe being
/// marked interactive, its wakeup latency the interactive figure). A background task: the run
/// lasts as long as the workload beside it.
pub fn probe(period_ns: u64, work_ns: u64) -> Workload {
    let mut w = base(
        format!(
            "probe:period={},work={}",
            fmt_dur(period_ns),
            fmt_dur(work_ns)
        ),
        "wakeups/s",
    );
    let prog = cyclic_program(&mut w, None, period_ns, work_ns, "wakeup-latency");
    let mut t = TaskSpec::new(prog);
    t.interactive = true;
    t.background = true;
    w.tasks.push(t);
    w
}

/// RT tasks mixed with normal ones on SMP (the BFS posts' "BFS in real time": two RT tasks
/// and two normal ones on a dual core, where per-CPU runqueues may leave both RT tasks on one
/// CPU while the normal ones have the other). `rt` SCHED_FIFO tasks at priority `prio`, each
/// woken at absolute `period` expiries to run `work` (the cyclic loop of `probe`, so each
/// activation's lateness is the probe latency), beside `normal` nice-0 busy loops (`loops`'s
/// program). A parent process forks them all, the RT tasks first (each makes itself
/// SCHED_FIFO with `sched_setscheduler` as it starts), then waits: where each task runs is the
/// policy's choice from the fork on. The figure is RT activations per second.
pub fn rtmix(rt: u32, normal: u32, period_ns: u64, work_ns: u64, prio: u8) -> Workload {
    let mut w = base(
        format!(
            "rtmix:rt={rt},normal={normal},period={},work={},prio={prio}",
            fmt_dur(period_ns),
            fmt_dur(work_ns)
        ),
        "RT periods/s",
    );
    // One program for all: its task-timer channel gives each task a timer of its own.
    let rt_prog = cyclic_program(
        &mut w,
        Some(Op::SetPolicy(SchedPolicy::Fifo, prio)),
        period_ns,
        work_ns,
        "rt",
    );
    let hog = w.programs.len() as u32;
    w.programs.push(
        ProgramBuilder::new()
            .repeat(None)
            .op(Op::Compute(Dist::Const(10_000_000)))
            .end()
            .build("loop")
            .with_working_set(4),
    );
    let mut parent = ProgramBuilder::new();
    for (prog, n) in [(rt_prog, rt), (hog, normal)] {
        if n > 0 {
            parent.begin(Some(n as u64));
            parent.push(Op::Fork {
                prog,
                thread: false,
            });
            parent.close();
        }
    }
    parent.begin(Some((rt + normal) as u64));
    parent.push(Op::Wait);
    parent.close();
    parent.push(Op::Exit);
    let main = w.programs.len() as u32;
    w.programs.push(parent.build("rtmix").with_working_set(4));
    w.tasks.push(TaskSpec::new(main));
    w
}

/// The parameters of the x264 model.
#[derive(Clone, Copy, Debug)]
pub struct X264 {
    pub threads: u32,
    pub frames: u32,
    pub rows: u32,
    pub row_ns: u64,
    pub mvrange: u32,
    pub lookahead_ns: u64,
}

/// x264's frame threading, as `doc/threads.txt` describes it (benchmarks.md A8): `threads`
/// frame threads of one process encode frames round robin (thread j takes frames j, j+T, …);
/// a frame's macroblock row r may use only reference rows already encoded, so before row r
/// its thread waits until the previous frame's thread has published rows up to r + `mvrange`
/// (x264's `i_mv_range_thread`, in rows), then computes the row and publishes it (x264's
/// condition-variable broadcast of row progress, modelled as a semaphore post the next frame's
/// thread waits on). A lookahead thread analyses each frame first (`lookahead` of CPU per frame,
/// at most 40 frames ahead: x264's default rc-lookahead of the medium preset), and the main
/// thread hands each frame thread its next frame once that thread's previous frame is done,
/// waiting for the oldest frame in order as x264cli does. Every frame is a P frame referencing
/// the one before (B-frames, which nothing references, and the I-frame's lack of a reference
/// are left out); frame 0's reference counts as already encoded. Row times are log-normal
/// around `row` (σ 0.3: rows differ in content — an estimate, as are the defaults: 68 rows of
/// a 1080p frame, 2 ms a row, a 3-row MV range). `frames` is rounded up to a multiple of
/// `threads`. The run ends when every frame is encoded: its simulated time is the encode's
/// wall time; the figure is frames per second.
pub fn x264(p: X264) -> Workload {
    let t = p.threads;
    let per_thread = p.frames.div_ceil(t) as u64;
    let frames = per_thread * t as u64;
    let mut w = base(
        format!(
            "x264:threads={t},frames={frames},rows={},row={},mvrange={},lookahead={}",
            p.rows,
            fmt_dur(p.row_ns),
            p.mvrange,
            fmt_dur(p.lookahead_ns)
        ),
        "frames/s",
    );
    let sem = |capacity| ChannelSpec {
        kind: ChanKind::Semaphore,
        capacity,
    };
    // row.{j}: rows thread j has published; go.{j}: main's "start your next frame";
    // done.{j}: thread j's frame is finished; la: frames the lookahead has analysed.
    let row0 = w.channels.len() as u32;
    w.channels.extend((0..t).map(|_| sem(None)));
    let go0 = w.channels.len() as u32;
    w.channels.extend((0..t).map(|_| sem(None)));
    let done0 = w.channels.len() as u32;
    w.channels.extend((0..t).map(|_| sem(None)));
    let la = w.channels.len() as u32;
    w.channels.push(sem(Some(40)));

    let member = |base: u32, offset: i64| (base, t, offset);
    let send_m = |(base, count, offset): (u32, u32, i64)| Op::SendMember {
        base,
        count,
        offset,
    };
    let recv_m = |(base, count, offset): (u32, u32, i64)| Op::RecvMember {
        base,
        count,
        offset,
    };
    let row_work = Op::Compute(Dist::LogNormal(p.row_ns, 0.3));
    let d = p.mvrange as u64;
    let rows = p.rows as u64;
    let mut f = ProgramBuilder::new();
    f.begin(Some(per_thread));
    f.push(recv_m(member(go0, 0)));
    f.push(Op::Recv(la));
    for _ in 0..d {
        f.push(recv_m(member(row0, -1)));
    }
    f.begin(Some(rows - d));
    f.push(recv_m(member(row0, -1)));
    f.push(row_work.clone());
    f.push(send_m(member(row0, 0)));
    f.close();
    if d > 0 {
        f.begin(Some(d));
        f.push(row_work);
        f.push(send_m(member(row0, 0)));
        f.close();
    }
    f.push(send_m(member(done0, 0)));
    f.close();
    f.push(Op::Exit);
    // A frame thread touches its frame's band and the reference's search window.
    let frame_prog = w.programs.len() as u32;
    w.programs
        .push(f.build("x264-frame").with_working_set(1024));

    let lookahead = ProgramBuilder::new()
        .repeat(Some(frames))
        .op(Op::Compute(Dist::Const(p.lookahead_ns)))
        .op(Op::Send(la))
        .end()
        .op(Op::Exit)
        .build("x264-lookahead");
    let la_prog = w.programs.len() as u32;
    w.programs.push(lookahead.with_working_set(512));

    let mut m = ProgramBuilder::new();
    // Frame 0's reference (the frame before the run) is already encoded.
    m.begin(Some(rows));
    m.push(Op::Send(row0 + t - 1));
    m.close();
    for j in 0..t {
        m.push(Op::Send(go0 + j));
    }
    if per_thread > 1 {
        m.begin(Some(per_thread - 1));
        for j in 0..t {
            m.push(Op::Recv(done0 + j));
            m.push(Op::Count);
            m.push(Op::Send(go0 + j));
        }
        m.close();
    }
    for j in 0..t {
        m.push(Op::Recv(done0 + j));
        m.push(Op::Count);
    }
    m.push(Op::Exit);
    let main_prog = w.programs.len() as u32;
    w.programs.push(m.build("x264").with_working_set(64));

    w.tasks.push(TaskSpec::new(main_prog));
    w.tasks.push(TaskSpec::new(la_prog));
    for j in 0..t {
        let mut ts = TaskSpec::new(frame_prog);
        ts.member = j;
        w.tasks.push(ts);
    }
    w
}

pub(crate) fn fmt_dur(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_with_defaults_and_validates() {
        for (name, _, _) in BUILTINS {
            let w = parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            w.validate().unwrap();
        }
    }

    #[test]
    fn chat_has_the_benchmark_shape() {
        let w = parse("chat:rooms=2,messages=5").unwrap();
        assert_eq!(w.tasks.len(), 2 * 20 * 4);
        // Each server sender forwards to the 19 other users of its room.
        let sends = w.programs[3]
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Send(_)))
            .count();
        assert_eq!(sends, 19);
    }

    #[test]
    fn loops_are_busy_tasks_of_the_policy_asked() {
        let w = parse("loops:n=3,policy=batch,nice=19").unwrap();
        assert_eq!(w.tasks.len(), 3);
        assert!(w
            .tasks
            .iter()
            .all(|t| t.policy == SchedPolicy::Batch && t.nice == 19));
        assert_eq!(w.name, "loops:n=3,policy=batch,nice=19");
        // One count per 10 ms of CPU, reported as CPU-seconds per second.
        assert_eq!(w.throughput_scale, 0.01);
        let w = parse("loops:n=2,policy=idle").unwrap();
        assert!(w.tasks.iter().all(|t| t.policy == SchedPolicy::Idle));
        assert_eq!(w.name, "loops:n=2,policy=idle");
        let e = parse("loops:policy=fifo").unwrap_err().to_string();
        assert!(e.contains("policy=fifo"), "{e}");
    }

    #[test]
    fn hackbench_has_the_benchmark_shape() {
        let w = parse("hackbench:groups=2,fds=3,loops=5").unwrap();
        // groups * 2 * fds tasks, one channel per receiver, pipes of 655 messages.
        assert_eq!(w.tasks.len(), 12);
        assert_eq!(w.channels.len(), 6);
        assert!(w
            .channels
            .iter()
            .all(|c| c.kind == ChanKind::Pipe && c.capacity == Some(655)));
        // A sender writes loops times to each of its group's receivers; a receiver reads
        // fds * loops messages from its own channel.
        let sender = &w.programs[0].ops;
        assert!(matches!(sender[0], Op::Loop { times: Some(5), .. }));
        let sends: Vec<_> = sender.iter().filter(|o| matches!(o, Op::Send(_))).collect();
        assert_eq!(sends.len(), 3);
        assert!(matches!(
            w.programs[1].ops[0],
            Op::Loop {
                times: Some(15),
                ..
            }
        ));
        // Processes: every task its own address space; threads: one.
        let mms: std::collections::HashSet<_> = w.tasks.iter().map(|t| t.mm).collect();
        assert_eq!(mms.len(), 12);
        let t = parse("hackbench:groups=2,fds=3,mode=socket,threads=1").unwrap();
        assert!(t.tasks.iter().all(|t| t.mm == 0));
        assert!(t.channels.iter().all(|c| c.kind == ChanKind::Socket));
        assert!(parse("hackbench:mode=fifo").is_err());
        assert!(parse("hackbench:threads=2").is_err());
    }

    #[test]
    fn schbench_has_messengers_and_their_waiting_workers() {
        let w = parse("schbench:messages=2,workers=3,cputime=5ms,sleep=20ms").unwrap();
        // Per messenger: itself and 3 workers; one post channel and 3 wake channels.
        assert_eq!(w.tasks.len(), 8);
        assert_eq!(w.channels.len(), 8);
        assert_eq!(w.tasks.iter().filter(|t| t.interactive).count(), 6);
        let messenger = &w.programs[w.tasks[0].prog as usize].ops;
        let recvs = messenger
            .iter()
            .filter(|o| matches!(o, Op::Recv(0)))
            .count();
        let wakes = messenger
            .iter()
            .filter(|o| matches!(o, Op::Send(1..=3)))
            .count();
        assert_eq!((recvs, wakes), (3, 3), "{messenger:?}");
        assert!(matches!(
            messenger[1],
            Op::Sleep {
                dur: Dist::Uniform(20_000_000, 25_000_000),
                ..
            }
        ));
        let e = parse("schbench:cputime=0").unwrap_err().to_string();
        assert!(e.contains("cputime"), "{e}");
        assert!(parse("schbench:messages=1000,workers=10000").is_err());
    }

    #[test]
    fn nice_applies_to_every_task() {
        let w = parse("chat:rooms=1,messages=10,nice=19").unwrap();
        assert!(w.tasks.iter().all(|t| t.nice == 19));
        assert!(w.name.ends_with("nice=19"));
    }

    #[test]
    fn bad_parameters_name_the_problem() {
        let e = parse("yield:instances=0").unwrap_err().to_string();
        assert!(e.contains("instances=0") && e.contains("1..="), "{e}");
        let e = parse("yield:instnaces=3").unwrap_err().to_string();
        assert!(e.contains("instnaces"), "{e}");
        let e = parse("fork:mode=vfork").unwrap_err().to_string();
        assert!(e.contains("vfork"), "{e}");
        let e = parse("chat:rooms").unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
        let e = parse("nosuch").unwrap_err().to_string();
        assert!(e.contains("chat"), "{e}");
        assert!(parse("yield:nice=20").is_err());
        let e = parse("audio:period=0").unwrap_err().to_string();
        assert!(e.contains("period"), "{e}");
        let e = parse("audio:buffer=0").unwrap_err().to_string();
        assert!(e.contains("buffer=0"), "{e}");
        let e = parse("pipechain:len=1").unwrap_err().to_string();
        assert!(e.contains("len=1"), "{e}");
        let e = parse("pipechain:groups=100000,len=100")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tasks"), "{e}");
    }

    #[test]
    fn probe_rtmix_and_x264_have_their_shapes_and_refuse_bad_parameters() {
        // The probe: a background, interactive task on its own timer, measuring lateness.
        let w = parse("probe:period=2ms").unwrap();
        assert_eq!(w.tasks.len(), 1);
        assert!(w.tasks[0].background && w.tasks[0].interactive);
        assert_eq!(w.channels[0].kind, ChanKind::TaskTimer);
        let ops = &w.programs[0].ops;
        assert!(ops.contains(&Op::Lateness {
            timer: 0,
            period: 2_000_000
        }));
        // rtmix: a parent forking the RT tasks (which make themselves FIFO) and the hogs.
        let w = parse("rtmix:rt=3,normal=1,prio=10").unwrap();
        assert_eq!(w.tasks.len(), 1, "only the parent starts");
        let parent = &w.programs[w.tasks[0].prog as usize].ops;
        let forks: Vec<_> = parent
            .iter()
            .filter(|o| matches!(o, Op::Fork { .. }))
            .collect();
        assert_eq!(forks.len(), 2, "{parent:?}");
        assert!(matches!(parent[0], Op::Loop { times: Some(3), .. }));
        assert_eq!(
            w.programs[0].ops[0],
            Op::SetPolicy(SchedPolicy::Fifo, 10),
            "RT tasks set their policy first"
        );
        // x264: T frame threads, the lookahead and main; frames rounded up to T's multiple.
        let w = parse("x264:threads=4,frames=10,rows=8,mvrange=2").unwrap();
        assert_eq!(w.tasks.len(), 6);
        assert!(w.name.contains("frames=12"), "{}", w.name);
        // 3 channels per thread (rows, go, done) and the lookahead's.
        assert_eq!(w.channels.len(), 13);
        // A frame thread takes 8 row tokens of the previous frame per frame: 2 up front and
        // one before each of the first 6 rows.
        let frame = &w.programs[0].ops;
        let row_recvs = frame
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Op::RecvMember {
                        base: 0,
                        offset: -1,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(row_recvs, 3, "2 unrolled + 1 in the row loop: {frame:?}");
        assert!(frame.contains(&Op::Loop {
            times: Some(6),
            len: 3
        }));
        for (spec, needle) in [
            ("probe:period=0", "period"),
            ("probe:period=1ms,work=2ms", "longer than the work"),
            ("rtmix:work=20ms", "shorter than the period"),
            ("rtmix:prio=0", "prio=0"),
            ("x264:rows=4,mvrange=4", "mvrange=4"),
            ("x264:row=0", "row must be"),
            ("x264:threads=0", "threads=0"),
        ] {
            let e = parse(spec).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn pipechain_is_a_ring_per_group() {
        let w = parse("pipechain:groups=2,len=3").unwrap();
        assert_eq!((w.tasks.len(), w.channels.len()), (6, 6));
        // Member 0 of a group injects into its pipe 0 and reads the ring's last pipe; member
        // i reads pipe i-1 and writes pipe i (RecvMember offset -1, SendMember offset 0).
        let first = &w.programs[w.tasks[0].prog as usize];
        assert_eq!(first.ops[0], Op::Send(0));
        assert!(first.ops.contains(&Op::RecvMember {
            base: 0,
            count: 3,
            offset: -1
        }));
        let second_group = &w.programs[w.tasks[4].prog as usize];
        assert!(second_group.ops.contains(&Op::SendMember {
            base: 3,
            count: 3,
            offset: 0
        }));
        assert_eq!(w.tasks[4].member, 1);
        // With a delay, the first process sleeps before it injects the byte.
        let d = parse("pipechain:groups=1,len=2,delay=1s").unwrap();
        assert_eq!(d.name, "pipechain:groups=1,len=2,delay=1s");
        assert!(matches!(
            d.programs[d.tasks[0].prog as usize].ops[0],
            Op::Sleep {
                dur: Dist::Const(1_000_000_000),
                ..
            }
        ));
    }
}
