//! One statement of a program (`compute exp(50us)`, `send pipe.{i}`, `timer tt 10ms absolute`):
//! its verb and arguments checked and pushed as operations, channel names resolved (a fixed
//! member, or one chosen by the running task's index).

use super::*;

pub(super) fn parse_stmt(
    stmt: &str,
    channels: &[(String, u32, u32)],
    kinds: &[ChanKind],
    groups: &[&str],
    locks: &[&str],
    prog_base: &[u32],
    b: &mut ProgramBuilder,
) -> Result<(), String> {
    let mut words = stmt.split_whitespace();
    let verb = words.next().ok_or("empty statement")?;
    let arg = words.collect::<Vec<_>>().join(" ");
    let no_arg = |op: Op, b: &mut ProgramBuilder| {
        if arg.is_empty() {
            b.push(op);
            Ok(())
        } else {
            Err(format!("'{verb}' takes no argument"))
        }
    };
    // A channel that carries messages, for send and recv.
    let chan = |arg: &str| {
        let c = resolve_channel(arg, channels)?;
        let first = match c {
            Chan::Fixed(c) => c,
            Chan::Member { base, .. } => base,
        };
        match kinds.get(first as usize) {
            Some(k) if !k.carries_messages() => Err(format!(
                "'{arg}' is a {k:?} channel: it carries no messages (use cond-wait/cond-signal or timer)"
            )),
            _ => Ok(c),
        }
    };
    // One channel of the given kinds, by name.
    let single = |arg: &str, want: &[ChanKind], what: &str| -> Result<u32, String> {
        // A statement that takes one channel (a timer) names one member of an array: `{i}`
        // is for send and recv only, so the hint names the members it can take.
        let one_of = |name: &str, count: u32| {
            format!(
                "channel '{name}' has {count} members and a {what} statement names one: {name}.0 to {name}.{} ({{i}} is for send and recv)",
                count - 1
            )
        };
        let name = arg.split_once('.').map_or(arg, |(n, _)| n);
        if let Some((_, _, count)) = channels.iter().find(|(n, _, _)| n == name) {
            if *count > 1 && !arg.contains('.') {
                return Err(one_of(name, *count));
            }
        }
        let c = match resolve_channel(arg, channels)? {
            Chan::Fixed(c) => c,
            Chan::Member { count, .. } => return Err(one_of(name, count)),
        };
        match kinds.get(c as usize) {
            Some(k) if want.contains(k) => Ok(c),
            _ => Err(format!("'{arg}' is not a {what} channel")),
        }
    };
    let lock = |arg: &str| {
        locks
            .iter()
            .position(|l| *l == arg)
            .map(|l| l as u32)
            .ok_or_else(|| format!("no lock named '{arg}'"))
    };
    let group = |arg: &str| {
        groups
            .iter()
            .position(|g| *g == arg)
            .map(|g| prog_base[g])
            .ok_or_else(|| format!("no group named '{arg}' (groups: {})", groups.join(", ")))
    };
    // `sleep D [irq-on N]`: how long, and the CPU whose interrupt ends it (a replayed
    // trace's recorded CPU) where not the sleeper's own.
    let sleep = |arg: &str, uninterruptible: bool| -> Result<Op, String> {
        let (d, irq_cpu) = match arg.split_once("irq-on") {
            Some((d, c)) => {
                let c = c.trim();
                let cpu = c
                    .parse::<u32>()
                    .map_err(|_| format!("'irq-on {c}': a CPU number is needed (irq-on 1)"))?;
                (d.trim(), Some(cpu))
            }
            None => (arg, None),
        };
        Ok(Op::Sleep {
            dur: parse_dist(d)?,
            uninterruptible,
            irq_cpu,
        })
    };
    match verb {
        "compute" => b.push(Op::Compute(parse_dist(&arg)?)),
        "touch" => no_arg(Op::Touch, b)?,
        "sleep" => b.push(sleep(&arg, false)?),
        "io" => b.push(sleep(&arg, true)?),
        "yield" => no_arg(Op::Yield, b)?,
        // `send CH sync`: the reader is woken with WF_SYNC (a replayed trace's exit wakeups).
        "send" if arg.split_whitespace().nth(1) == Some("sync") => {
            let words: Vec<&str> = arg.split_whitespace().collect();
            if words.len() != 2 {
                return Err(format!(
                    "'send {arg}': send CH sync takes nothing after 'sync'"
                ));
            }
            match chan(words[0])? {
                Chan::Fixed(c) => b.push(Op::SendSync(c)),
                Chan::Member { .. } => {
                    return Err(format!(
                        "'send {arg}': 'sync' takes a single channel, not a member of an array"
                    ))
                }
            }
        }
        "send" => b.push(match chan(&arg)? {
            Chan::Fixed(c) => Op::Send(c),
            Chan::Member {
                base,
                count,
                offset,
            } => Op::SendMember {
                base,
                count,
                offset,
            },
        }),
        "recv" => b.push(match chan(&arg)? {
            Chan::Fixed(c) => Op::Recv(c),
            Chan::Member {
                base,
                count,
                offset,
            } => Op::RecvMember {
                base,
                count,
                offset,
            },
        }),
        "fork" => b.push(Op::Fork {
            prog: group(&arg)?,
            thread: false,
        }),
        "thread" => b.push(Op::Fork {
            prog: group(&arg)?,
            thread: true,
        }),
        "exec" => no_arg(Op::Kernel(KernelWork::Exec), b)?,
        "shell" => no_arg(Op::Kernel(KernelWork::ShellStartup), b)?,
        "wait" => no_arg(Op::Wait, b)?,
        "exit" => no_arg(Op::Exit, b)?,
        "count" => no_arg(Op::Count, b)?,
        "nice" => {
            let n: i32 = arg
                .parse()
                .map_err(|_| format!("nice needs a number, got '{arg}'"))?;
            if !(NICE_MIN..=NICE_MAX).contains(&n) {
                return Err(format!("nice {n} is outside -20..=19"));
            }
            b.push(Op::SetNice(n));
        }
        "policy" => {
            let mut it = arg.split_whitespace();
            let p = it
                .next()
                .ok_or("policy needs normal, batch, idle, fifo or rr")?;
            let p = SchedPolicy::parse(p).ok_or_else(|| format!("unknown policy '{p}'"))?;
            if p.is_dl() {
                return Err(
                    "policy deadline cannot be set by a statement (it needs a reservation and \
                     admission control): give the group policy = \"deadline\" with dl_runtime \
                     and dl_deadline"
                        .into(),
                );
            }
            let prio: u8 = match it.next() {
                Some(v) if !p.is_rt() => {
                    return Err(format!(
                        "policy {} takes no priority (got '{v}')",
                        arg.split_whitespace().next().unwrap_or_default()
                    ))
                }
                Some(v) => v.parse().map_err(|_| format!("bad RT priority '{v}'"))?,
                None => 0,
            };
            if let Some(extra) = it.next() {
                return Err(format!("unexpected '{extra}' after the priority"));
            }
            if p.is_rt() && !(RT_PRIO_MIN..=RT_PRIO_MAX).contains(&prio) {
                return Err("fifo and rr need a priority 1..=99".into());
            }
            b.push(Op::SetPolicy(p, if p.is_rt() { prio } else { 0 }));
        }
        "affinity-next" => no_arg(Op::AffinityNextCpu, b)?,
        "cond-wait" => {
            let (c, l) = arg
                .split_once(' ')
                .ok_or("cond-wait takes a condition variable and a lock: cond-wait queue m")?;
            let cond = single(c, &[ChanKind::CondVar], "condvar")?;
            let l = lock(l.trim())?;
            b.push(Op::CondWait { cond, lock: l });
            // pthread_cond_wait takes the mutex again before it returns.
            b.push(Op::Lock(l));
        }
        "cond-signal" | "cond-broadcast" => b.push(Op::CondSignal {
            cond: single(&arg, &[ChanKind::CondVar], "condvar")?,
            all: verb == "cond-broadcast",
        }),
        "timer" => {
            let mut it = arg.split_whitespace();
            let (Some(t), Some(p)) = (it.next(), it.next()) else {
                return Err(
                    "timer takes a timer channel and a period: timer tick 10ms [absolute]".into(),
                );
            };
            let (absolute, cyclic) = match it.next() {
                None | Some("relative") => (false, false),
                Some("absolute") => (true, false),
                Some("cyclic") => (true, true),
                Some(x) => {
                    return Err(format!(
                        "timer mode '{x}': use relative, absolute or cyclic"
                    ))
                }
            };
            if let Some(x) = it.next() {
                return Err(format!("unexpected '{x}' after the timer's mode"));
            }
            let period = parse_duration(p)?;
            if period == 0 {
                return Err("a timer's period must be above 0".into());
            }
            let timer = single(t, &[ChanKind::Timer, ChanKind::TaskTimer], "timer")?;
            b.push(Op::Timer {
                timer,
                period,
                absolute,
            });
            // cyclictest: measure how late the wakeup was, skip missed periods.
            if cyclic {
                b.push(Op::Lateness { timer, period });
            }
        }
        "lock" => b.push(Op::Lock(lock(&arg)?)),
        "unlock" => b.push(Op::Unlock(lock(&arg)?)),
        "kwork" => b.push(Op::KernelCompute(parse_dist(&arg)?)),
        "stamp" => no_arg(Op::Stamp, b)?,
        "dirty" => {
            let n: u32 = arg
                .trim()
                .parse()
                .map_err(|_| format!("dirty takes a number of pages (0..=1048576), got '{arg}'"))?;
            if n > 1 << 20 {
                return Err(format!("dirty {n}: at most 1048576 pages"));
            }
            b.push(Op::Dirty(n));
        }
        "audio-write" => {
            let (d, n) = arg.split_once(' ').ok_or(
                "audio-write takes the period and the device's buffer in periods: audio-write 50ms 3",
            )?;
            let period = parse_duration(d)?;
            let buffer: u32 = n
                .trim()
                .parse()
                .map_err(|_| format!("bad buffer size '{}' (periods, 1..=64)", n.trim()))?;
            if period == 0 || !(1..=64).contains(&buffer) {
                return Err(
                    "audio-write needs a period above 0 and a buffer of 1..=64 periods".into(),
                );
            }
            b.push(Op::AudioWrite { period, buffer });
        }
        "spin-until" => {
            let (d, id) = arg
                .split_once(' ')
                .ok_or("spin-until takes a duration and a thread id: spin-until 20ms 3")?;
            let id: u32 = id
                .trim()
                .parse()
                .map_err(|_| format!("bad thread id '{id}'"))?;
            b.push(Op::SpinUntil {
                ns: parse_duration(d)?,
                id,
            });
        }
        "affinity" => {
            let mut m = CpuMask::empty();
            for c in arg.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let c: usize = c
                    .parse()
                    .map_err(|_| format!("affinity takes CPU numbers like 0,2,3, got '{c}'"))?;
                if c >= CpuMask::MAX_CPUS {
                    return Err(format!("CPU {c} is beyond {}", CpuMask::MAX_CPUS));
                }
                m.set(c);
            }
            if m.is_empty() {
                return Err("affinity needs at least one CPU".into());
            }
            b.push(Op::SetAffinity(m));
        }
        "loop" => {
            let times = match arg.as_str() {
                "forever" => None,
                n => Some(
                    n.parse::<u64>()
                        .map_err(|_| format!("loop needs a count or 'forever', got '{n}'"))?,
                ),
            };
            if b.open_loops() >= MAX_LOOP_DEPTH {
                return Err(format!("loops nested more than {MAX_LOOP_DEPTH} deep"));
            }
            b.begin(times);
        }
        "end" => {
            if !arg.is_empty() {
                return Err("'end' takes no argument".into());
            }
            if b.open_loops() == 0 {
                return Err("'end' without a matching 'loop'".into());
            }
            if b.innermost_loop_is_empty() {
                return Err(
                    "a loop with nothing inside (it would do nothing, or nothing forever)".into(),
                );
            }
            b.close();
        }
        v => return Err(format!("unknown statement '{v}'")),
    }
    Ok(())
}

/// A channel a statement names: a fixed one, or a member of an array chosen by the running
/// task's index in its group (`{i}`, `{i+1}`, `{i-1}`, taken modulo the array's size).
pub(super) enum Chan {
    Fixed(u32),
    Member { base: u32, count: u32, offset: i64 },
}

pub(super) fn resolve_channel(arg: &str, channels: &[(String, u32, u32)]) -> Result<Chan, String> {
    let (name, idx) = match arg.split_once('.') {
        Some((n, i)) => (n, Some(i)),
        None => (arg, None),
    };
    let (_, first, count) = channels
        .iter()
        .find(|(n, _, _)| n == name)
        .ok_or_else(|| format!("no channel named '{name}'"))?;
    match idx {
        None if *count == 1 => Ok(Chan::Fixed(*first)),
        None => Err(format!(
            "channel '{name}' has {count} members: say {name}.N or {name}.{{i}}"
        )),
        Some(e) if e.starts_with('{') && e.ends_with('}') => {
            let inner = e[1..e.len() - 1].replace(' ', "");
            let rest = inner
                .strip_prefix('i')
                .ok_or_else(|| format!("index '{e}' must use i"))?;
            let offset: i64 = if rest.is_empty() {
                0
            } else {
                rest.parse()
                    .map_err(|_| format!("index '{e}': use {{i}}, {{i+N}} or {{i-N}}"))?
            };
            Ok(Chan::Member {
                base: *first,
                count: *count,
                offset: offset.rem_euclid(*count as i64),
            })
        }
        Some(n) => {
            let k: i64 = n.parse().map_err(|_| format!("bad channel index '{n}'"))?;
            if !(0..*count as i64).contains(&k) {
                return Err(format!(
                    "channel '{name}' has members {name}.0 to {name}.{} (got {name}.{k})",
                    count - 1
                ));
            }
            Ok(Chan::Fixed(first + k as u32))
        }
    }
}
