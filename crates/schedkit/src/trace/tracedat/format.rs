//! The metadata that says how to read the data: each event's `format:` text (its fields found by
//! name, the `prev_state` letters of its `__print_flags`), the decoders built from them, and the
//! ring-buffer page header.

use super::*;

/// One field of an event's format.
#[derive(Clone, Debug)]
pub(super) struct Field {
    pub(super) offset: usize,
    pub(super) size: usize,
    pub(super) signed: bool,
    pub(super) loc: Loc,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Loc {
    /// At its offset.
    Fixed,
    /// `__data_loc`: a word at the offset gives the data's offset (low 16 bits) and length.
    Data,
    /// `__rel_loc`: the same, the offset counted from the end of the word.
    Rel,
}

impl Field {
    /// The field as a number (sign-extended where the format says it is signed).
    pub(super) fn int(&self, rec: &[u8], big: bool) -> Option<i128> {
        if self.loc != Loc::Fixed || !matches!(self.size, 1 | 2 | 4 | 8) {
            return None;
        }
        let b = rec.get(self.offset..self.offset.checked_add(self.size)?)?;
        let v = rd(b, big);
        Some(if self.signed {
            let shift = 64 - 8 * self.size as u32;
            (((v << shift) as i64) >> shift) as i128
        } else {
            v as i128
        })
    }

    /// The field as a string (to its first NUL).
    pub(super) fn text(&self, rec: &[u8], big: bool) -> Option<String> {
        let b = match self.loc {
            Loc::Fixed if self.size == 0 => rec.get(self.offset..)?,
            Loc::Fixed => rec.get(self.offset..self.offset.checked_add(self.size)?)?,
            Loc::Data | Loc::Rel => {
                let w = rec.get(self.offset..self.offset.checked_add(4)?)?;
                let w = rd(w, big) as usize;
                let mut start = w & 0xffff;
                if self.loc == Loc::Rel {
                    start += self.offset + self.size;
                }
                rec.get(start..start.checked_add(w >> 16)?)?
            }
        };
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

/// An event's `format` file, as far as it is used.
pub(super) struct Format {
    pub(super) system: String,
    pub(super) name: String,
    pub(super) id: u32,
    pub(super) fields: HashMap<String, Field>,
    /// Field lines that could not be read (left out, said where a field is missing).
    pub(super) bad_fields: Vec<String>,
    pub(super) print_fmt: String,
}

/// Parses a `format` file (`name:`, `ID:`, `field:…; offset:…; size:…; signed:…;` lines,
/// `print fmt:`).
pub(super) fn parse_format(text: &str, system: &str) -> Result<Format, String> {
    let mut name = None;
    let mut id = None;
    let mut fields = HashMap::new();
    let mut bad_fields = Vec::new();
    let mut print_fmt = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("`ID:{v}` is not a number"))?,
            );
        } else if let Some(v) = t.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        } else if t.starts_with("field:") {
            match parse_field(t) {
                Ok((n, f)) => {
                    fields.insert(n, f);
                }
                Err(e) => bad_fields.push(e),
            }
        }
    }
    let name = name.ok_or("no `name:` line")?;
    let id = id.ok_or_else(|| format!("{name}: no `ID:` line"))?;
    Ok(Format {
        system: system.to_string(),
        name,
        id,
        fields,
        bad_fields,
        print_fmt,
    })
}

/// `field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;` → ("prev_comm", its place).
pub(super) fn parse_field(line: &str) -> Result<(String, Field), String> {
    let mut decl = "";
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = v.trim();
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let (Some(offset), Some(size)) = (offset, size) else {
        return Err(format!("`{line}`: no offset or size"));
    };
    let loc = if decl.starts_with("__data_loc") {
        Loc::Data
    } else if decl.starts_with("__rel_loc") {
        Loc::Rel
    } else {
        Loc::Fixed
    };
    // The name is the declaration's last word, less an array length.
    let d = match decl.rfind('[') {
        Some(i) if decl.ends_with(']') && !decl[..i].trim_end().is_empty() => &decl[..i],
        _ => decl,
    };
    let name = d
        .split_whitespace()
        .last()
        .unwrap_or("")
        .trim_start_matches('*');
    if name.is_empty() {
        return Err(format!("`{line}`: no field name"));
    }
    Ok((
        name.to_string(),
        Field {
            offset,
            size,
            signed,
            loc,
        },
    ))
}

/// The letters `prev_state`'s bits print as: the `{ value, "letter" }` pairs of the
/// `__print_flags` in `sched_switch`'s print format, by bit, up to the first bit without one
/// (as libtraceevent's sched_switch plugin reads them); the 6.x kernels' table without one.
pub(super) fn state_letters(print_fmt: &str) -> Vec<char> {
    let mut by_bit: [Option<char>; 32] = [None; 32];
    if let Some(i) = print_fmt.find("__print_flags(") {
        let mut rest = &print_fmt[i..];
        while let Some(open) = rest.find('{') {
            rest = &rest[open + 1..];
            let Some(close) = rest.find('}') else { break };
            let pair = &rest[..close];
            rest = &rest[close + 1..];
            let Some((v, s)) = pair.split_once(',') else {
                continue;
            };
            let v = v.trim();
            let value = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            };
            let letter = s.trim().trim_matches('"').chars().next();
            if let (Some(value), Some(letter)) = (value, letter) {
                let bit = value.trailing_zeros() as usize;
                if value != 0 && bit < 32 {
                    by_bit[bit] = Some(letter);
                }
            }
        }
    }
    let letters: Vec<char> = by_bit.iter().map_while(|c| *c).collect();
    if letters.is_empty() {
        "SDTtXZPI".chars().collect()
    } else {
        letters
    }
}

/// How the records of one event id become raw events.
#[derive(Clone, Debug)]
pub(super) enum Decoder {
    Switch {
        prev_comm: Option<Field>,
        prev_pid: Field,
        prev_prio: Option<Field>,
        prev_state: Field,
        next_comm: Option<Field>,
        next_pid: Field,
        next_prio: Option<Field>,
        letters: Vec<char>,
    },
    /// sched_waking (`waking`), sched_wakeup, or sched_wakeup_new (`new`).
    Wake {
        waking: bool,
        new: bool,
        comm: Option<Field>,
        pid: Field,
        prio: Option<Field>,
        target_cpu: Option<Field>,
    },
    Fork {
        parent_comm: Option<Field>,
        parent_pid: Field,
        child_comm: Option<Field>,
        child_pid: Field,
    },
    Exit {
        comm: Option<Field>,
        pid: Field,
        prio: Option<Field>,
    },
    Migrate {
        comm: Option<Field>,
        pid: Field,
        prio: Option<Field>,
        orig: Field,
        dest: Field,
    },
    Freq {
        state: Field,
        cpu: Field,
    },
    Idle {
        state: Field,
        cpu: Field,
    },
    Print {
        buf: Field,
    },
    /// `syscalls:sys_enter_sched_setscheduler`: the PID named and the policy asked for.
    SetSchedEnter {
        pid: Field,
        policy: Field,
    },
    /// `syscalls:sys_exit_sched_setscheduler`: what the call returned.
    SetSchedExit {
        ret: Field,
    },
    /// An event the model does not use.
    Other,
    /// An event the model uses whose format lacks a field it needs.
    Broken(String),
}

pub(super) struct EventType {
    pub(super) name: String,
    pub(super) decoder: Decoder,
    pub(super) common_pid: Option<Field>,
    pub(super) common_flags: Option<Field>,
    pub(super) common_preempt_count: Option<Field>,
}

impl EventType {
    pub(super) fn new(f: &Format) -> EventType {
        let get = |n: &str| f.fields.get(n).cloned();
        let need = |n: &str| {
            f.fields
                .get(n)
                .cloned()
                .ok_or_else(|| match f.bad_fields.first() {
                    None => format!("its format has no `{n}` field"),
                    Some(b) => format!("its format has no readable `{n}` field (unreadable: {b})"),
                })
        };
        let decoder = (|| -> Result<Decoder, String> {
            Ok(match (f.system.as_str(), f.name.as_str()) {
                (_, "sched_switch") => Decoder::Switch {
                    prev_comm: get("prev_comm"),
                    prev_pid: need("prev_pid")?,
                    prev_prio: get("prev_prio"),
                    prev_state: need("prev_state")?,
                    next_comm: get("next_comm"),
                    next_pid: need("next_pid")?,
                    next_prio: get("next_prio"),
                    letters: state_letters(&f.print_fmt),
                },
                (_, n @ ("sched_waking" | "sched_wakeup" | "sched_wakeup_new")) => Decoder::Wake {
                    waking: n == "sched_waking",
                    new: n == "sched_wakeup_new",
                    comm: get("comm"),
                    pid: need("pid")?,
                    prio: get("prio"),
                    target_cpu: get("target_cpu"),
                },
                (_, "sched_process_fork") => Decoder::Fork {
                    parent_comm: get("parent_comm"),
                    parent_pid: need("parent_pid")?,
                    child_comm: get("child_comm"),
                    child_pid: need("child_pid")?,
                },
                (_, "sched_process_exit") => Decoder::Exit {
                    comm: get("comm"),
                    pid: need("pid")?,
                    prio: get("prio"),
                },
                (_, "sched_migrate_task") => Decoder::Migrate {
                    comm: get("comm"),
                    pid: need("pid")?,
                    prio: get("prio"),
                    orig: need("orig_cpu")?,
                    dest: need("dest_cpu")?,
                },
                (_, "cpu_frequency") => Decoder::Freq {
                    state: need("state")?,
                    cpu: need("cpu_id")?,
                },
                (_, "cpu_idle") => Decoder::Idle {
                    state: need("state")?,
                    cpu: need("cpu_id")?,
                },
                ("ftrace", "print") => Decoder::Print { buf: need("buf")? },
                (_, "sys_enter_sched_setscheduler") => Decoder::SetSchedEnter {
                    pid: need("pid")?,
                    policy: need("policy")?,
                },
                (_, "sys_exit_sched_setscheduler") => Decoder::SetSchedExit { ret: need("ret")? },
                _ => Decoder::Other,
            })
        })()
        .unwrap_or_else(Decoder::Broken);
        EventType {
            name: f.name.clone(),
            decoder,
            common_pid: get("common_pid"),
            common_flags: get("common_flags"),
            common_preempt_count: get("common_preempt_count"),
        }
    }
}

/// Where a ring-buffer page keeps its time stamp, commit word and data (`header_page`).
#[derive(Clone, Copy, Debug)]
pub(super) struct PageLayout {
    pub(super) ts_offset: usize,
    pub(super) commit_offset: usize,
    pub(super) commit_size: usize,
    pub(super) data_offset: usize,
}

pub(super) fn parse_header_page(text: &str) -> Result<PageLayout, String> {
    let mut fields = HashMap::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("field:") {
            let (n, f) = parse_field(t)?;
            fields.insert(n, f);
        }
    }
    let get = |n: &str| {
        fields
            .get(n)
            .cloned()
            .ok_or_else(|| format!("header_page has no `{n}` field"))
    };
    let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
    if ts.size != 8 {
        return Err(format!(
            "header_page's timestamp is {} bytes; only 8 are known",
            ts.size
        ));
    }
    if !matches!(commit.size, 4 | 8) {
        return Err(format!(
            "header_page's commit is {} bytes (a kernel long is 4 or 8)",
            commit.size
        ));
    }
    let layout = PageLayout {
        ts_offset: ts.offset,
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
    };
    if layout.data_offset < layout.commit_offset + layout.commit_size
        || layout.data_offset < layout.ts_offset + 8
        || layout.data_offset > 4096
    {
        return Err(format!(
            "header_page puts the data at byte {}, not after the timestamp and commit",
            layout.data_offset
        ));
    }
    Ok(layout)
}
