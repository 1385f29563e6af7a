//! A file's metadata, read: the file header, the version 6 sections in their fixed order or the
//! version 7 options sections and their chains, and each buffer's per-CPU data.

use super::*;

/// One CPU's data in a buffer: where it is in the file and how many bytes.
#[derive(Clone, Debug)]
pub(super) struct CpuData {
    pub(super) cpu: u32,
    pub(super) offset: u64,
    pub(super) size: u64,
}

/// A flyrecord buffer (the top instance, or another).
#[derive(Clone, Debug)]
pub(super) struct Buffer {
    pub(super) name: String,
    pub(super) page_size: u64,
    /// Version 7: the offset of its BUFFER FLYRECORD section (whose flag says whether the CPU
    /// data is compressed); version 6: None.
    pub(super) section: Option<u64>,
    pub(super) cpus: Vec<CpuData>,
}

/// A file's metadata, read.
pub(super) struct Dat<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) big: bool,
    pub(super) page_size: u64,
    pub(super) codec: Option<Codec>,
    /// Unpacked bytes the file may still produce.
    pub(super) budget: u64,
    pub(super) page: Option<PageLayout>,
    pub(super) formats: Vec<Format>,
    /// Formats that could not be read, with where they are.
    pub(super) bad_formats: Vec<String>,
    pub(super) cmdlines: String,
    pub(super) cpus: Option<u32>,
    pub(super) buffers: Vec<Buffer>,
    pub(super) latency: Option<Vec<u8>>,
    pub(super) clock: Option<String>,
    pub(super) ts_offset: i128,
    pub(super) tsc: Option<(u32, u32)>,
}

impl<'a> Dat<'a> {
    pub(super) fn read(bytes: &'a [u8]) -> R<Dat<'a>> {
        let mut c = Cur::new(bytes, false, "file header", Origin::File(0));
        if c.bytes(3, "magic")? != MAGIC {
            return Err(c.err("not a trace.dat (no 17 08 44 magic)"));
        }
        if c.bytes(7, "`tracing`")? != b"tracing" {
            return Err(c.err("no `tracing` after the magic"));
        }
        let v = c.cstr("version")?;
        let version: u32 = v
            .parse()
            .map_err(|_| c.err(format!("version `{v}` is not a number")))?;
        if !(6..=7).contains(&version) {
            return Err(c.err(format!(
                "file version {version}; versions 6 and 7 are read (convert it with `trace-cmd convert --file-version 7`)"
            )));
        }
        let big = match c.bytes(1, "endianness")?[0] {
            0 => false,
            1 => true,
            e => return Err(c.err(format!("endianness byte {e} (0 little, 1 big)"))),
        };
        c.big = big;
        let _long_size = c.bytes(1, "long size")?[0];
        let page_size = c.u32("page size")? as u64;
        if page_size < MIN_PAGE_SIZE {
            return Err(c.err(format!("page size {page_size}")));
        }
        let mut dat = Dat {
            bytes,
            big,
            page_size,
            codec: None,
            budget: MAX_DECOMPRESSED,
            page: None,
            formats: Vec::new(),
            bad_formats: Vec::new(),
            cmdlines: String::new(),
            cpus: None,
            buffers: Vec::new(),
            latency: None,
            clock: None,
            ts_offset: 0,
            tsc: None,
        };
        if version == 6 {
            dat.read_v6(c)?;
        } else {
            dat.read_v7(c)?;
        }
        dat.check_clock()?;
        Ok(dat)
    }

    pub(super) fn file_cur(&self, at: u64, what: impl Into<String>) -> R<Cur<'a>> {
        let what = what.into();
        if at > self.bytes.len() as u64 {
            return Err(format!(
                "{what}: its offset {at} is past the file's end ({} bytes): the file is cut short or corrupt",
                self.bytes.len()
            ));
        }
        let at = at as usize;
        Ok(Cur::new(
            &self.bytes[at..],
            self.big,
            what,
            Origin::File(at),
        ))
    }

    pub(super) fn read_v6(&mut self, mut c: Cur<'a>) -> R<()> {
        c.what = "HEADER INFO".into();
        self.header_info(&mut c)?;
        c.what = "FTRACE EVENT FORMATS".into();
        self.ftrace_formats(&mut c)?;
        c.what = "EVENT FORMATS".into();
        self.event_formats(&mut c)?;
        c.what = "KALLSYMS".into();
        let n = c.u32("kallsyms size")?;
        c.bytes(n as u64, "kallsyms")?;
        c.what = "TRACE_PRINTK".into();
        let n = c.u32("printk formats size")?;
        c.bytes(n as u64, "printk formats")?;
        c.what = "SAVED COMMAND LINES".into();
        self.cmdlines(&mut c)?;
        c.what = "CPU count".into();
        let cpus = c.u32("CPU count")?;
        if cpus > MAX_CPUS {
            return Err(c.err(format!(
                "{cpus} CPUs, beyond any machine (limit {MAX_CPUS})"
            )));
        }
        self.cpus = Some(cpus);
        c.what = "options".into();
        let mut kind = c.bytes(10, "`options`, `latency` or `flyrecord`")?;
        let mut instances = Vec::new();
        if kind.starts_with(b"options") {
            instances = self.options_v6(&mut c)?;
            kind = c.bytes(10, "`latency` or `flyrecord`")?;
        }
        if kind.starts_with(b"latency") {
            self.latency = Some(c.buf[c.pos..].to_vec());
            return Ok(());
        }
        if !kind.starts_with(b"flyrecord") {
            return Err(c.err(format!(
                "`{}` where `latency` or `flyrecord` belongs",
                String::from_utf8_lossy(kind).trim_end_matches(['\0', ' '])
            )));
        }
        c.what = "flyrecord CPU offsets".into();
        let top = self.cpu_table_v6(&mut c, cpus, "")?;
        self.buffers.push(top);
        // A TRACECLOCK option says that the trace_clock file follows.
        if self.clock.is_some() {
            c.what = "trace_clock".into();
            if let Ok(n) = c.u64("trace_clock size") {
                if let Ok(b) = c.bytes(n, "trace_clock") {
                    self.clock = clock_of(&String::from_utf8_lossy(b));
                }
            }
        }
        for (offset, name) in instances {
            let mut c = self.file_cur(offset, format!("buffer `{name}`"))?;
            let mut kind = c.bytes(10, "`options` or `flyrecord`")?;
            if kind.starts_with(b"options") {
                self.options_v6(&mut c)?;
                kind = c.bytes(10, "`flyrecord`")?;
            }
            if !kind.starts_with(b"flyrecord") {
                // A latency instance: no per-CPU data.
                continue;
            }
            let b = self.cpu_table_v6(&mut c, cpus, &name)?;
            self.buffers.push(b);
        }
        Ok(())
    }

    pub(super) fn cpu_table_v6(&self, c: &mut Cur<'a>, cpus: u32, name: &str) -> R<Buffer> {
        let mut table = Vec::new();
        for cpu in 0..cpus {
            let offset = c.u64("CPU data offset")?;
            let size = c.u64("CPU data size")?;
            table.push(CpuData { cpu, offset, size });
        }
        Ok(Buffer {
            name: name.to_string(),
            page_size: self.page_size,
            section: None,
            cpus: table,
        })
    }

    /// Version 6 options: `id`, `size`, data, …, up to an id 0. Returns the instance buffers.
    pub(super) fn options_v6(&mut self, c: &mut Cur<'a>) -> R<Vec<(u64, String)>> {
        let mut instances = Vec::new();
        loop {
            let id = c.u16("option id")?;
            if id == OPT_DONE {
                return Ok(instances);
            }
            let size = c.u32("option size")?;
            let mut o = c.sub(size as u64, "option data", format!("option {id}"))?;
            match id {
                OPT_BUFFER => {
                    let off = o.u64("buffer offset")?;
                    let name = o.cstr("buffer name")?;
                    instances.push((off, name));
                }
                _ => self.option(id, &mut o)?,
            }
        }
    }

    pub(super) fn read_v7(&mut self, mut c: Cur<'a>) -> R<()> {
        let name = c.cstr("compression name")?;
        let _version = c.cstr("compression version")?;
        self.codec = match name.as_str() {
            "none" | "" => None,
            "zlib" => Some(Codec::Zlib),
            "zstd" => Some(Codec::Zstd),
            other => {
                return Err(c.err(format!(
                    "compressed with `{other}`; zlib and zstd are read (`trace-cmd convert --compression none` unpacks it)"
                )))
            }
        };
        let mut next = c.u64("first options offset")?;
        let mut sections: Vec<(u16, u64)> = Vec::new();
        let mut seen = HashSet::new();
        while next != 0 {
            if !seen.insert(next) || seen.len() > MAX_OPTION_SECTIONS {
                return Err(format!(
                    "options section at byte {next}: the chain of options sections loops"
                ));
            }
            next = self.options_v7(next, &mut sections)?;
        }
        let find = |id: u16| sections.iter().rev().find(|s| s.0 == id).map(|s| s.1);
        let Some(h) = find(OPT_HEADER_INFO) else {
            return Err("no HEADER INFO section (the ring buffer's page layout)".into());
        };
        let (data, origin) = self.section(h, OPT_HEADER_INFO, "HEADER INFO")?;
        self.header_info(&mut Cur::new(&data, self.big, "HEADER INFO", origin))?;
        if let Some(f) = find(OPT_FTRACE_EVENTS) {
            let (data, origin) = self.section(f, OPT_FTRACE_EVENTS, "FTRACE EVENT FORMATS")?;
            self.ftrace_formats(&mut Cur::new(
                &data,
                self.big,
                "FTRACE EVENT FORMATS",
                origin,
            ))?;
        }
        if let Some(f) = find(OPT_EVENT_FORMATS) {
            let (data, origin) = self.section(f, OPT_EVENT_FORMATS, "EVENT FORMATS")?;
            self.event_formats(&mut Cur::new(&data, self.big, "EVENT FORMATS", origin))?;
        }
        if let Some(f) = find(OPT_CMDLINES) {
            let (data, origin) = self.section(f, OPT_CMDLINES, "SAVED COMMAND LINES")?;
            self.cmdlines(&mut Cur::new(
                &data,
                self.big,
                "SAVED COMMAND LINES",
                origin,
            ))?;
        }
        Ok(())
    }

    /// A version 7 section's data (unpacked if it is compressed), checked to be the section
    /// expected.
    pub(super) fn section(&mut self, at: u64, id: u16, what: &str) -> R<(Cow<'a, [u8]>, Origin)> {
        let mut c = self.file_cur(at, format!("{what} section header"))?;
        let (sid, flags, size) = section_header(&mut c)?;
        if sid != id {
            return Err(c.err(format!("section id {sid} where {what} ({id}) belongs")));
        }
        c.what = format!("{what} section");
        self.section_data(&mut c, flags, size)
    }

    pub(super) fn section_data(
        &mut self,
        c: &mut Cur<'a>,
        flags: u16,
        size: u64,
    ) -> R<(Cow<'a, [u8]>, Origin)> {
        let start = c.file_pos().unwrap_or(0);
        if flags & SEC_COMPRESSED == 0 {
            let b = c.bytes(size, "section data")?;
            return Ok((Cow::Borrowed(b), Origin::File(start)));
        }
        let Some(codec) = self.codec else {
            return Err(c.err("a compressed section in a file that names no compression"));
        };
        let csize = c.u32("compressed size")?;
        let usize_ = c.u32("unpacked size")?;
        let data = c.bytes(csize as u64, "compressed data")?;
        let out = unpack(codec, data, usize_ as u64, &mut self.budget).map_err(|e| c.err(e))?;
        Ok((Cow::Owned(out), Origin::Unpacked(start)))
    }

    /// One version 7 options section; returns the next one's offset (0: none).
    pub(super) fn options_v7(&mut self, at: u64, sections: &mut Vec<(u16, u64)>) -> R<u64> {
        let mut c = self.file_cur(at, "options section header")?;
        let (id, flags, size) = section_header(&mut c)?;
        if id != OPT_DONE {
            return Err(c.err(format!(
                "section id {id} where an options section (0) belongs"
            )));
        }
        c.what = "options section".into();
        let (data, origin) = self.section_data(&mut c, flags, size)?;
        let mut c = Cur::new(&data, self.big, "options section", origin);
        loop {
            let id = c.u16("option id")?;
            let size = c.u32("option size")?;
            let mut o = c.sub(size as u64, "option data", format!("option {id}"))?;
            match id {
                OPT_DONE => return o.u64("next options offset"),
                OPT_BUFFER => {
                    let section = o.u64("buffer offset")?;
                    let name = o.cstr("buffer name")?;
                    let clock = o.cstr("buffer clock")?;
                    let page_size = o.u32("buffer page size")? as u64;
                    if page_size < MIN_PAGE_SIZE {
                        return Err(o.err(format!("page size {page_size}")));
                    }
                    let n = o.u32("buffer CPU count")?;
                    let mut cpus = Vec::new();
                    for _ in 0..n {
                        let cpu = o.u32("CPU id")?;
                        if cpu >= MAX_CPUS {
                            return Err(o.err(format!(
                                "CPU {cpu} is beyond any machine (limit {})",
                                MAX_CPUS - 1
                            )));
                        }
                        let offset = o.u64("CPU data offset")?;
                        let size = o.u64("CPU data size")?;
                        cpus.push(CpuData { cpu, offset, size });
                    }
                    if name.is_empty() && self.clock.is_none() {
                        self.clock = Some(clock);
                    }
                    self.buffers.push(Buffer {
                        name,
                        page_size,
                        section: Some(section),
                        cpus,
                    });
                }
                OPT_BUFFER_TEXT => {
                    let at = o.u64("latency buffer offset")?;
                    if self.latency.is_none() {
                        self.latency = Some(self.latency_v7(at)?);
                    }
                }
                OPT_HEADER_INFO | OPT_FTRACE_EVENTS | OPT_EVENT_FORMATS | OPT_KALLSYMS
                | OPT_PRINTK | OPT_CMDLINES => {
                    sections.push((id, o.u64("section offset")?));
                }
                _ => self.option(id, &mut o)?,
            }
        }
    }

    /// A BUFFER TEXT section: a latency trace's text.
    pub(super) fn latency_v7(&mut self, at: u64) -> R<Vec<u8>> {
        let mut c = self.file_cur(at, "BUFFER TEXT section header")?;
        let (_, flags, size) = section_header(&mut c)?;
        c.what = "BUFFER TEXT section".into();
        if flags & SEC_COMPRESSED == 0 {
            return Ok(c.bytes(size, "latency text")?.to_vec());
        }
        let size = size.min(c.left() as u64);
        let data = c.sub(size, "latency text", "BUFFER TEXT section")?;
        self.chunks(data)
    }

    /// The options both versions share.
    pub(super) fn option(&mut self, id: u16, o: &mut Cur) -> R<()> {
        let text = |o: &Cur| {
            let b = &o.buf[o.pos..];
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).trim().to_string()
        };
        match id {
            OPT_DATE => {
                // µs between the time stamps and the time of day, as `0x…`.
                let us = strtoll(&text(o));
                self.ts_offset = self.ts_offset.saturating_add(us as i128 * 1000);
            }
            OPT_OFFSET => {
                self.ts_offset = self.ts_offset.saturating_add(strtoll(&text(o)) as i128);
            }
            OPT_TRACECLOCK => {
                self.clock = clock_of(&text(o)).or(Some("local".into()));
            }
            OPT_CPUCOUNT => {
                let n = o.u32("CPU count")?;
                if n > MAX_CPUS {
                    return Err(o.err(format!("{n} CPUs, beyond any machine (limit {MAX_CPUS})")));
                }
                self.cpus = Some(n);
            }
            OPT_TSC2NSEC => {
                let mult = o.u32("TSC multiplier")?;
                let shift = o.u32("TSC shift")?;
                if shift >= 64 {
                    return Err(o.err(format!("TSC shift {shift}")));
                }
                self.tsc = Some((mult, shift));
            }
            _ => {}
        }
        Ok(())
    }

    /// `header_page` and `header_event`.
    pub(super) fn header_info(&mut self, c: &mut Cur) -> R<()> {
        if c.bytes(12, "`header_page`")? != b"header_page\0" {
            return Err(c.err("no `header_page` string"));
        }
        let n = c.u64("header_page size")?;
        let text = c.bytes(n, "header_page")?;
        if n == 0 {
            return Err(c.err(
                "an empty header_page (a kernel before 2.6.31, whose ring buffer is not read here)",
            ));
        }
        self.page = Some(parse_header_page(&String::from_utf8_lossy(text)).map_err(|e| c.err(e))?);
        if c.bytes(13, "`header_event`")? != b"header_event\0" {
            return Err(c.err("no `header_event` string"));
        }
        let n = c.u64("header_event size")?;
        c.bytes(n, "header_event")?;
        Ok(())
    }

    pub(super) fn ftrace_formats(&mut self, c: &mut Cur) -> R<()> {
        let n = c.u32("ftrace format count")?;
        for _ in 0..n {
            self.format(c, "ftrace")?;
        }
        Ok(())
    }

    pub(super) fn event_formats(&mut self, c: &mut Cur) -> R<()> {
        let systems = c.u32("event system count")?;
        for _ in 0..systems {
            let system = c.cstr("system name")?;
            let n = c.u32("event count")?;
            for _ in 0..n {
                self.format(c, &system)?;
            }
        }
        Ok(())
    }

    /// One event's format. One that cannot be read is left out, and said where its records
    /// are met (libtraceevent also goes on past a format it cannot parse).
    pub(super) fn format(&mut self, c: &mut Cur, system: &str) -> R<()> {
        let size = c.u64("format size")?;
        let at = c.clone();
        let text = c.bytes(size, "format")?;
        match parse_format(&String::from_utf8_lossy(text), system) {
            Ok(f) => self.formats.push(f),
            Err(e) => self
                .bad_formats
                .push(at.err(format!("a `{system}` event format: {e}"))),
        }
        Ok(())
    }

    pub(super) fn cmdlines(&mut self, c: &mut Cur) -> R<()> {
        let n = c.u64("cmdlines size")?;
        self.cmdlines = String::from_utf8_lossy(c.bytes(n, "cmdlines")?).into_owned();
        Ok(())
    }

    /// A compressed CPU data stream: a chunk count, then chunks (`compressed size`,
    /// `unpacked size`, data), unpacked and joined.
    pub(super) fn chunks(&mut self, mut c: Cur) -> R<Vec<u8>> {
        let Some(codec) = self.codec else {
            return Err(c.err("compressed data in a file that names no compression"));
        };
        let n = c.u32("chunk count")?;
        let mut out = Vec::new();
        for i in 0..n {
            let at = c.clone();
            let csize = c.u32("chunk's compressed size")?;
            let size = c.u32("chunk's unpacked size")?;
            let data = c.bytes(csize as u64, "chunk data")?;
            let mut part = unpack(codec, data, size as u64, &mut self.budget)
                .map_err(|e| at.err(format!("chunk {i} of {n}: {e}")))?;
            out.append(&mut part);
        }
        Ok(out)
    }

    /// The trace clock must count nanoseconds (or be converted to them).
    pub(super) fn check_clock(&self) -> R<()> {
        match self.clock.as_deref() {
            Some("counter") => Err(
                "the trace clock is `counter`, which counts events, not time".into(),
            ),
            Some("uptime") => Err("the trace clock is `uptime`, which counts jiffies, not ns".into()),
            Some("x86-tsc") if self.tsc.is_none() => Err(
                "the trace clock is `x86-tsc` (CPU cycles) and the file has no TSC2NSEC option to convert it to ns".into(),
            ),
            _ => Ok(()),
        }
    }

    /// A record's time stamp as `trace-cmd report` prints it.
    pub(super) fn time(&self, ts: u64) -> u64 {
        let ts = match self.tsc {
            Some((mult, shift)) => mul_u64_u32_shr(ts, mult, shift),
            None => ts,
        };
        (ts as i128 + self.ts_offset).clamp(0, u64::MAX as i128) as u64
    }

    /// The events, through the builder.
    pub(super) fn events(self) -> R<Trace> {
        let mut b = Builder::new();
        let Some(layout) = self.page else {
            return Err("no header_page".into());
        };
        if let Some(n) = self.cpus.filter(|&n| n > 0) {
            b.cpus(n);
        }
        let mut types: HashMap<u32, EventType> = HashMap::new();
        let mut common_type: Option<Field> = None;
        for f in &self.formats {
            if common_type.is_none() {
                common_type = f.fields.get("common_type").cloned();
            }
            types.insert(f.id, EventType::new(f));
        }
        let common_type = common_type.unwrap_or(Field {
            offset: 0,
            size: 2,
            signed: false,
            loc: Loc::Fixed,
        });
        let comms = Comms::new(&self.cmdlines);

        // Each buffer's CPUs' data, split into records.
        let mut dat = self;
        let mut streams: Vec<Stream> = Vec::new();
        let buffers = std::mem::take(&mut dat.buffers);
        for buf in &buffers {
            let compressed = match buf.section {
                Some(at) => dat.flyrecord_flags(at, &buf.name)? & SEC_COMPRESSED != 0,
                None => false,
            };
            let page_size = buf.page_size;
            for cd in &buf.cpus {
                if cd.size == 0 {
                    continue;
                }
                let what = match buf.name.as_str() {
                    "" => format!("CPU {} data", cd.cpu),
                    n => format!("buffer `{n}` CPU {} data", cd.cpu),
                };
                let data = dat.cpu_data(cd, compressed, &what)?;
                let mut s = Stream {
                    cpu: cd.cpu,
                    origin: if compressed {
                        Origin::Unpacked(cd.offset as usize)
                    } else {
                        Origin::File(cd.offset as usize)
                    },
                    what,
                    data,
                    records: Vec::new(),
                    next: 0,
                };
                s.split(page_size, layout, dat.big, &mut b);
                streams.push(s);
            }
        }

        // Merged in time order as `trace-cmd report` does: the earliest record first, the
        // first stream's on a tie.
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.records.first().map(|r| Reverse((r.ts, i))))
            .collect();
        let mut comms = comms;
        while let Some(Reverse((_, i))) = heap.pop() {
            let s = &mut streams[i];
            let r = s.records[s.next];
            s.next += 1;
            if let Some(n) = s.records.get(s.next) {
                heap.push(Reverse((n.ts, i)));
            }
            let rec = &s.data[r.start..r.start + r.len];
            b.stats.lines += 1;
            if r.lost > 0 {
                b.lost(r.lost);
            }
            let ts = dat.time(r.ts);
            let decoded = decode(rec, ts, s.cpu, &types, &common_type, dat.big, &mut comms)
                .map_err(|e| match dat.bad_formats.first() {
                    Some(f) if e.contains("which no format") => format!(
                        "{e} ({} format(s) could not be read; the first: {f})",
                        dat.bad_formats.len()
                    ),
                    _ => e,
                });
            match decoded {
                Ok(Decoded::Event(raw)) => b.event(raw),
                Ok(Decoded::Other(name)) => b.other(name),
                Err(e) => {
                    let at = match s.origin {
                        Origin::File(base) => format!("byte {}", base + r.start),
                        Origin::Unpacked(at) => {
                            format!("byte {} of the data unpacked from byte {at}", r.start)
                        }
                    };
                    b.malformed(format!("{}, record at {at}: {e}", s.what));
                }
            }
        }
        b.finish("records").map_err(|e| e.to_string())
    }

    /// The flags of a BUFFER FLYRECORD section (whether its CPU data is compressed).
    pub(super) fn flyrecord_flags(&self, at: u64, name: &str) -> R<u16> {
        let mut c = self.file_cur(at, format!("buffer `{name}` section header"))?;
        let (_, flags, _) = section_header(&mut c)?;
        Ok(flags)
    }

    pub(super) fn cpu_data(
        &mut self,
        cd: &CpuData,
        compressed: bool,
        what: &str,
    ) -> R<Cow<'a, [u8]>> {
        let end = cd.offset.checked_add(cd.size);
        if end.is_none_or(|e| e > self.bytes.len() as u64) {
            return Err(format!(
                "{what}: {} bytes at byte {} run past the file's end ({} bytes): the file is cut short or corrupt",
                cd.size,
                cd.offset,
                self.bytes.len()
            ));
        }
        let mut c = self.file_cur(cd.offset, what)?;
        if compressed {
            // The size trace-cmd writes leaves out the chunk count: the chunks are read from
            // the offset on, as trace-input.c reads them.
            self.chunks(c).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(c.sub(cd.size, "CPU data", what)?.buf))
        }
    }
}
