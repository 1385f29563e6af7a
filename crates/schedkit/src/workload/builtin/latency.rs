//! Real-time and latency: rt-migrate-test, players with a sound ring (audio, mpg123), the idle
//! desktop's wakeups, an interactive task, a cyclictest-like probe and RT tasks among hogs.

use super::*;

pub(super) const RTMIGRATE: Builtin = Builtin {
    name: "rtmigrate",
    params: &[
        Param::int("threads", "5", 1, 98),
        Param::int("prio", "2", 1, 98),
        Param::dur("run", "20ms"),
        Param::dur("sleep", "100ms"),
        Param::int("loops", "50", 1, 1_000_000),
        Param::dur("maxerr", "1000us"),
    ],
    about: "rt-migrate-test: N SCHED_FIFO threads at consecutive priorities released together each iteration; checks that no higher-priority thread waits while a lower one runs",
    build: |a| {
        let threads = a.int("threads")? as u32;
        let prio = a.int("prio")? as u8;
        if prio as u32 + threads > 99 {
            return Err(a.err(format!(
                "prio={prio} with threads={threads} needs priorities up to {} (max 99)",
                prio as u32 + threads
            )));
        }
        let run = a.dur("run")?;
        let sleep = a.dur("sleep")?;
        if run == 0 || sleep == 0 {
            return Err(a.err("run and sleep must be longer than 0".into()));
        }
        let loops = a.int("loops")? as u64;
        let maxerr = a.dur("maxerr")?;
        Ok(rtmigrate(threads, prio, run, sleep, loops, maxerr))
    },
};

pub(super) const AUDIO: Builtin = Builtin {
    name: "audio",
    params: &[
        Param::dur("period", "50ms"),
        Param::dur("work", "2.5ms"),
        Param::int("buffer", "3", 1, 64),
    ],
    about: "an mpg123-like player: decodes `work` of CPU per `period` of sound into a device ring of `buffer` periods; reports underruns (skips), deadline misses and lateness; periods/s",
    build: |a| {
        let period = a.dur("period")?;
        let work = a.dur("work")?;
        let buffer = a.int("buffer")? as u32;
        if period == 0 {
            return Err(a.err("period must be longer than 0".into()));
        }
        Ok(audio(period, work, buffer))
    },
};

pub(super) const MPG123: Builtin = Builtin {
    name: "mpg123",
    params: &[
        // MPG123_CYCLES_PER_AUDIO_S written out exactly (a test checks it is the constant).
        Param::num("cycles_per_s", "11628762.54180602", 1e3, 1e12),
        Param::dur("period", "125ms"),
        Param::int("buffer", "4", 1, 64),
    ],
    about: "mpg123 of 2007 (0.66) playing a 44.1 kHz stereo MP3 through ALSA: decoding costs `cycles_per_s` CPU cycles per second of sound (its doc/BENCHMARKING: 19 s of a Pentium II 366 for 598 s, scaled by the machine's clock), written in ALSA periods of 125 ms into a ring of 4 (audio_alsa.c: a 0.5 s buffer, period = buffer / 4, woken when a period is free); underruns, lateness; periods/s",
    build: |a| {
        let per_s = a.num("cycles_per_s")?;
        let period = a.dur("period")?;
        let buffer = a.int("buffer")? as u32;
        if period == 0 {
            return Err(a.err("period must be longer than 0".into()));
        }
        Ok(mpg123(per_s, period, buffer))
    },
};

pub(super) const INTERACTIVE: Builtin = Builtin {
    name: "interactive",
    params: &[Param::dur("sleep", "20ms"), Param::dur("work", "1ms")],
    about: "a task that sleeps (uniform around `sleep`) and wakes to `work` of CPU; run it beside another workload",
    build: |a| {
        let sleep = a.dur("sleep")?;
        let work = a.dur("work")?;
        Ok(interactive(sleep, work))
    },
};

pub(super) const DESKTOP: Builtin = Builtin {
    name: "desktop",
    params: &[Param::num("scale", "1", 0.01, 100.0)],
    about: "the background of an idle Linux desktop of the PowerTOP era: the wakeup sources of a published PowerTOP report (May 2007: firefox 10.3/s, network interrupts 10.1/s, disk 9.0/s, ACPI 3.2/s, gkrellm2 2.7/s, an interval timer 2.5/s, wpa_supplicant 1.5/s, hald-addon-storage 0.5/s, kernel work 0.5/s, 29.6/s below its top ten; the ondemand governor's own 10/s left to the simulator's governor) as tasks woken at those rates, each running 0.24 ms (the report's 1.9 % of time in C0 over its 79.9 wakeups/s); `scale` multiplies the rates; background tasks to run beside another workload; wakeups/s",
    build: |a| Ok(desktop(a.num("scale")?)),
};

pub(super) const PROBE: Builtin = Builtin {
    name: "probe",
    params: &[Param::dur("period", "1ms"), Param::dur("work", "0")],
    about: "a wakeup-latency probe (cyclictest's loop in SCHED_OTHER, standing in for Jussi Laako's wakeup-latency): wakes at absolute `period` expiries, records how late it runs (probe latency p50/p99/max), runs `work`; run it beside another workload (`makej:jobs=6+probe`)",
    build: |a| {
        let period = a.dur("period")?;
        let work = a.dur("work")?;
        if period == 0 || work >= period {
            return Err(a.err(format!(
                "period={} with work={}: the period must be above 0 and longer than the work",
                fmt_dur(period),
                fmt_dur(work)
            )));
        }
        Ok(probe(period, work))
    },
};

pub(super) const RTMIX: Builtin = Builtin {
    name: "rtmix",
    params: &[
        Param::int("rt", "2", 1, 10_000),
        Param::int("normal", "2", 0, 100_000),
        Param::dur("period", "10ms"),
        Param::dur("work", "3ms"),
        Param::int("prio", "50", RT_PRIO_MIN as i64, RT_PRIO_MAX as i64),
    ],
    about: "RT tasks among normal ones on SMP: `rt` SCHED_FIFO tasks each woken every `period` (absolute expiries) to run `work`, beside `normal` nice-0 busy loops; the RT tasks' lateness is the probe latency; RT periods/s",
    build: |a| {
        let rt = a.int("rt")? as u32;
        let normal = a.int("normal")? as u32;
        let period = a.dur("period")?;
        let work = a.dur("work")?;
        let prio = a.int("prio")? as u8;
        if period == 0 || work == 0 || work >= period {
            return Err(a.err(format!(
                "period={} with work={}: both must be above 0 and the work shorter than the period",
                fmt_dur(period),
                fmt_dur(work)
            )));
        }
        Ok(rtmix(rt, normal, period, work, prio))
    },
};

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
    w.rtmigrate = Some(super::super::RtMigrateSpec {
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
        irq_cpu: None,
    });
    parent.push(Op::Stamp);
    for i in (0..threads).rev() {
        parent.push(Op::Send(i));
    }
    parent.push(Op::Sleep {
        dur: Dist::Const(sleep_ns),
        uninterruptible: false,
        irq_cpu: None,
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

/// The wakeup sources of an idle desktop as PowerTOP reported them (Eric Brake's blog, May
/// 2007, "powertop: misc causes for wakeups", <https://www.ericbrake.ws/2007/05/>: 79.9
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
                irq_cpu: None,
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
            irq_cpu: None,
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
