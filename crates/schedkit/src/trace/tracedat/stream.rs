//! The events: every CPU's pages walked, their `type_len`/`time_delta` headers read, the events
//! merged across CPUs in time order as `trace-cmd report` merges them and decoded into the text
//! importer's raw events, named with the comms `trace-cmd report` prints.

use super::*;

/// pid → comm as `trace-cmd report` names the task running at each event: the saved
/// cmdlines, then (libtraceevent's sched plugin) names of `sched_switch` and `sched_wakeup`
/// events for PIDs not known yet.
pub(super) struct Comms(pub(super) HashMap<u32, String>);

impl Comms {
    pub(super) fn new(cmdlines: &str) -> Comms {
        let mut m = HashMap::new();
        for line in cmdlines.lines() {
            // `%d %[^\n]`; libtraceevent stops at the first line that is not that.
            let Some((pid, comm)) = line.split_once(' ') else {
                break;
            };
            let Ok(pid) = pid.trim().parse::<i64>() else {
                break;
            };
            if comm.is_empty() {
                break;
            }
            if let Ok(pid) = u32::try_from(pid) {
                if pid != 0 {
                    m.entry(pid).or_insert_with(|| comm.to_string());
                }
            }
        }
        Comms(m)
    }

    pub(super) fn learn(&mut self, pid: u32, comm: &Option<String>) {
        if let (Some(c), true) = (comm, pid != 0) {
            self.0.entry(pid).or_insert_with(|| c.clone());
        }
    }

    /// The name the line header shows (`<idle>` for PID 0, `<...>` if unknown).
    pub(super) fn header(&self, pid: u32) -> String {
        match pid {
            0 => "<idle>".into(),
            p => self
                .0
                .get(&p)
                .map_or_else(|| "<...>".into(), |c| c.trim().to_string()),
        }
    }
}

/// A record's place in its stream.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rec {
    pub(super) ts: u64,
    pub(super) start: usize,
    pub(super) len: usize,
    /// Events lost before it (the first record of a page flagged with missed events).
    pub(super) lost: u64,
}

/// One CPU's records.
pub(super) struct Stream<'a> {
    pub(super) cpu: u32,
    pub(super) origin: Origin,
    pub(super) what: String,
    pub(super) data: Cow<'a, [u8]>,
    pub(super) records: Vec<Rec>,
    pub(super) next: usize,
}

impl Stream<'_> {
    /// Splits the data into pages and the pages into records (`kbuffer-parse.c`); a page
    /// that does not parse is counted as malformed, with where it is, and skipped from there.
    pub(super) fn split(&mut self, page_size: u64, l: PageLayout, big: bool, b: &mut Builder) {
        let page_size = page_size.min(self.data.len() as u64) as usize;
        if page_size <= l.data_offset {
            let at = match self.origin {
                Origin::File(base) => format!("byte {base}"),
                Origin::Unpacked(at) => format!("the data unpacked from byte {at}"),
            };
            b.malformed(format!(
                "{} at {at}: page size {page_size} leaves no room for events after the page header ({} bytes)",
                self.what, l.data_offset
            ));
            return;
        }
        let mut start = 0;
        while start < self.data.len() {
            let end = (start + page_size).min(self.data.len());
            if let Err(e) = self.page(start, end, l, big) {
                let at = match self.origin {
                    Origin::File(base) => format!("byte {}", base + start),
                    Origin::Unpacked(at) => {
                        format!("byte {start} of the data unpacked from byte {at}")
                    }
                };
                b.malformed(format!("{}, page at {at}: {e}", self.what));
            }
            start = end;
        }
    }

    pub(super) fn page(&mut self, start: usize, end: usize, l: PageLayout, big: bool) -> R<()> {
        let page = &self.data[start..end];
        if page.len() < l.data_offset {
            return Err(format!(
                "{} bytes, fewer than the page header's {}",
                page.len(),
                l.data_offset
            ));
        }
        let mut ts = rd(&page[l.ts_offset..l.ts_offset + 8], big);
        let flags = rd(&page[l.commit_offset..l.commit_offset + l.commit_size], big);
        let size = (flags & COMMIT_MASK) as usize;
        let data = &page[l.data_offset..];
        if size > data.len() {
            return Err(format!(
                "its commit says {size} bytes of events, but the page holds {}",
                data.len()
            ));
        }
        let mut lost = 0;
        if flags & MISSED_EVENTS != 0 {
            lost = 1;
            if flags & MISSED_STORED != 0 {
                if let Some(w) = data.get(size..size + l.commit_size) {
                    lost = rd(w, big).max(1);
                }
            }
        }
        let data = &data[..size];
        let base = start + l.data_offset;
        let mut i = 0;
        while i < size {
            let Some(h) = data.get(i..i + 4) else {
                return Err(format!("an event header cut at byte {i} of {size}"));
            };
            let w = rd(h, big) as u32;
            let (type_len, delta) = if big {
                (w >> 27, (w & ((1 << 27) - 1)) as u64)
            } else {
                (w & 0x1f, (w >> 5) as u64)
            };
            let word = |at: usize| data.get(at..at + 4).map(|b| rd(b, big));
            match type_len {
                TYPE_PADDING => {
                    // With no time delta, the rest of the page is empty (the kernel's
                    // rb_null_event); else a discarded event of the length given, whose delta
                    // counts (as kbuffer counts it).
                    if delta == 0 {
                        break;
                    }
                    ts = ts.wrapping_add(delta);
                    match word(i + 4) {
                        Some(n) => i = i.saturating_add(4).saturating_add(n as usize),
                        None => break,
                    }
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let ext = word(i + 4)
                        .ok_or_else(|| format!("a time extension cut at byte {i} of {size}"))?;
                    let t = (ext << TS_SHIFT).wrapping_add(delta);
                    ts = if type_len == TYPE_TIME_STAMP {
                        t | (ts & TS_MSB)
                    } else {
                        ts.wrapping_add(t)
                    };
                    i += 8;
                }
                _ => {
                    ts = ts.wrapping_add(delta);
                    let (from, len) = if type_len == 0 {
                        let n = word(i + 4)
                            .ok_or_else(|| format!("an event length cut at byte {i} of {size}"))?;
                        if n < 4 {
                            return Err(format!("an event at byte {i} says its length is {n}"));
                        }
                        (i + 8, ((n as usize - 4) + 3) & !3)
                    } else {
                        (i + 4, type_len as usize * 4)
                    };
                    if from + len > size {
                        return Err(format!(
                            "an event of {len} bytes at byte {i} runs past the page's {size} bytes of events"
                        ));
                    }
                    self.records.push(Rec {
                        ts,
                        start: base + from,
                        len,
                        lost: std::mem::take(&mut lost),
                    });
                    i = from + len;
                }
            }
        }
        Ok(())
    }
}

pub(super) enum Decoded<'a> {
    Event(Raw),
    Other(&'a str),
}

/// One record → a raw event of the model, or the name of another kind.
pub(super) fn decode<'t>(
    rec: &[u8],
    ts: u64,
    cpu: u32,
    types: &'t HashMap<u32, EventType>,
    common_type: &Field,
    big: bool,
    comms: &mut Comms,
) -> Result<Decoded<'t>, String> {
    let id = common_type
        .int(rec, big)
        .ok_or_else(|| format!("{} bytes, whose event type cannot be read", rec.len()))?;
    let Some(t) = types.get(&(id as u32)) else {
        return Err(format!(
            "event type {id}, which no format in the file describes"
        ));
    };
    let name = t.name.as_str();
    let err = |e: String| format!("{name}: {e}");
    let int = |f: &Field, n: &str| -> Result<i128, String> {
        f.int(rec, big).ok_or_else(|| {
            err(format!(
                "`{n}` does not fit in the record's {} bytes",
                rec.len()
            ))
        })
    };
    let pid = |f: &Field, n: &str| -> Result<u32, String> {
        let v = int(f, n)?;
        u32::try_from(v).map_err(|_| err(format!("`{n}={v}` is not a PID")))
    };
    let u32_ = |f: &Field, n: &str| -> Result<u32, String> {
        let v = int(f, n)?;
        u32::try_from(v).map_err(|_| err(format!("`{n}={v}` is out of range")))
    };
    let prio = |f: &Option<Field>| -> Option<i32> {
        f.as_ref()
            .and_then(|f| f.int(rec, big))
            .and_then(|v| i32::try_from(v).ok())
    };
    let comm = |f: &Option<Field>| f.as_ref().and_then(|f| f.text(rec, big));
    let kind = match &t.decoder {
        Decoder::Other => return Ok(Decoded::Other(name)),
        // As the text importer reads them (`import::lines`): a PID no task can have names
        // none, SCHED_RESET_ON_FORK is masked off the policy.
        Decoder::SetSchedEnter { pid: p, policy } => RawKind::SetSchedulerEnter {
            pid: u32::try_from(int(p, "pid")?).unwrap_or(u32::MAX),
            policy: (int(policy, "policy")? as u64 & !0x4000_0000) as u32,
        },
        Decoder::SetSchedExit { ret } => RawKind::SetSchedulerExit {
            ret: int(ret, "ret")? as i64,
        },
        Decoder::Broken(e) => return Err(err(e.clone())),
        Decoder::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
            letters,
        } => {
            let state = int(prev_state, "prev_state")? as u64;
            let mut text = String::new();
            for (i, l) in letters.iter().enumerate() {
                if state & (1u64 << i) != 0 {
                    if !text.is_empty() {
                        text.push('|');
                    }
                    text.push(*l);
                }
            }
            if text.is_empty() {
                text.push('R');
            }
            RawKind::Switch {
                prev: Ref {
                    pid: pid(prev_pid, "prev_pid")?,
                    comm: comm(prev_comm),
                    prio: prio(prev_prio),
                },
                state: parse_prev_state(&text).map_err(err)?,
                next: Ref {
                    pid: pid(next_pid, "next_pid")?,
                    comm: comm(next_comm),
                    prio: prio(next_prio),
                },
            }
        }
        Decoder::Wake {
            waking,
            new,
            comm: c,
            pid: p,
            prio: pr,
            target_cpu,
        } => {
            let task = Ref {
                pid: pid(p, "pid")?,
                comm: comm(c),
                prio: prio(pr),
            };
            let cpu = match target_cpu {
                Some(f) => u32_(f, "target_cpu")?,
                None => cpu,
            };
            if *new {
                RawKind::WakeupNew { task, cpu }
            } else {
                RawKind::Wake {
                    task,
                    cpu,
                    waking: *waking,
                }
            }
        }
        Decoder::Fork {
            parent_comm,
            parent_pid,
            child_comm,
            child_pid,
        } => RawKind::Fork {
            parent: Ref {
                pid: pid(parent_pid, "parent_pid")?,
                comm: comm(parent_comm),
                prio: None,
            },
            child: Ref {
                pid: pid(child_pid, "child_pid")?,
                comm: comm(child_comm),
                prio: None,
            },
        },
        Decoder::Exit {
            comm: c,
            pid: p,
            prio: pr,
        } => RawKind::Exit {
            task: Ref {
                pid: pid(p, "pid")?,
                comm: comm(c),
                prio: prio(pr),
            },
        },
        Decoder::Migrate {
            comm: c,
            pid: p,
            prio: pr,
            orig,
            dest,
        } => RawKind::Migrate {
            task: Ref {
                pid: pid(p, "pid")?,
                comm: comm(c),
                prio: prio(pr),
            },
            orig: u32_(orig, "orig_cpu")?,
            dest: u32_(dest, "dest_cpu")?,
        },
        Decoder::Freq { state, cpu: c } => RawKind::Freq {
            cpu: u32_(c, "cpu_id")?,
            khz: u64::try_from(int(state, "state")?).map_err(|_| err("negative `state`".into()))?,
        },
        Decoder::Idle { state, cpu: c } => {
            let s = int(state, "state")?;
            RawKind::Idle {
                cpu: u32_(c, "cpu_id")?,
                // PWR_EVENT_EXIT is (u32)-1.
                state: u32::try_from(s).ok().filter(|&s| s < u32::MAX),
            }
        }
        Decoder::Print { buf } => {
            let text = buf
                .text(rec, big)
                .ok_or_else(|| err("`buf` lies past the record's end".into()))?;
            match import::parse_mark(&text).map_err(err)? {
                Some(k) => k,
                None => return Ok(Decoded::Other(name)),
            }
        }
    };
    import::check_cpus(&kind).map_err(err)?;
    let current_pid = match &t.common_pid {
        Some(f) => pid(f, "common_pid")?,
        None => return Err(err("its format has no `common_pid` field".into())),
    };
    let flags = t
        .common_flags
        .as_ref()
        .and_then(|f| f.int(rec, big))
        .unwrap_or(0) as u64;
    let header = comms.header(current_pid);
    // What libtraceevent's sched plugin learns while printing this event.
    match &kind {
        RawKind::Switch { prev, next, .. } => {
            comms.learn(prev.pid, &prev.comm);
            comms.learn(next.pid, &next.comm);
        }
        RawKind::Wake {
            task,
            waking: false,
            ..
        }
        | RawKind::WakeupNew { task, .. } => comms.learn(task.pid, &task.comm),
        _ => {}
    }
    Ok(Decoded::Event(Raw {
        ts,
        cpu,
        current: Ref {
            pid: current_pid,
            comm: (!header.is_empty()).then_some(header),
            prio: None,
        },
        tgid: None,
        irq: flags & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ) != 0,
        // The low four bits are the preemption depth, the high four the migrate-disable one
        // (`tracing_gen_ctx`, kernel/trace/trace.c).
        depth: t
            .common_preempt_count
            .as_ref()
            .and_then(|f| f.int(rec, big))
            .map(|pc| (pc & 0xf) as u8),
        kind,
    }))
}
