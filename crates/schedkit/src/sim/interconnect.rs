//! The shared front-side bus and cache coherence of a Pentium III-era SMP, for kernel data.
//!
//! **Coherence.** Each tracked line of kernel scheduler data ([`Line`]: a task's scheduling
//! fields, a CPU's published `curr`, a runqueue's lock-and-header line) has a directory entry:
//! the CPU holding it Modified, if any, and the CPUs holding a valid copy. As on the P6's
//! MESI protocol (Intel SDM vol. 3, ch. 11; machine-facts.md):
//! - a read of a line this CPU holds is a hit (its price is the hook's own work, as before);
//! - a read of a line another CPU holds Modified is a snoop hit (HITM): the owner supplies the
//!   line over the bus (`transfer_ns`), both keep it Shared;
//! - a read of a line valid nowhere here and Modified nowhere is a memory read
//!   (`costs.mem_latency_ns`);
//! - a write to a line this CPU holds alone (Modified or Exclusive) is a hit; a write to a line
//!   others share too is an invalidation (an address-only bus transaction of
//!   `invalidate_clocks`); a write to a line Modified elsewhere is a read-for-ownership (HITM);
//!   one valid nowhere is a read-for-ownership from memory. After a write the writer alone
//!   holds the line, Modified.
//!
//! Lines are never evicted (kernel scheduler data is small and hot); a line's first touch by a
//! CPU is a memory read. Only coherence, not capacity, decides what a line costs.
//!
//! **The bus.** Every transaction above that leaves the CPU, and every cache refill, uses its
//! bus. A line's data phase occupies the bus `line_bytes / bus_width_bytes` bus clocks (`S`).
//! The P6 bus arbitrates its processors round robin (symmetric agents), so a transaction waits
//! one occupancy for every other CPU of its bus that is streaming a refill at that moment
//! (`k × S`), and a refill itself runs at `max(its own streaming rate, (k + 1) × S)` per line:
//! two CPUs refilling at once on a bus they could each half fill slow each other down. Lines
//! that cross between buses (a ProFusion 8-way's two 4-CPU buses) add `cross_bus_ns` and wait
//! on both buses. Simplified, and said so: a refill's rate is fixed when it starts (a CPU that
//! starts streaming later does not re-time it), single transactions do not queue behind one
//! another, and a snoop's own cost to the owner is not charged.

use crate::ds::work::{Line, Span};
use crate::machine::{InterconnectSpec, Machine};
use crate::task::CpuId;
use std::collections::HashMap;

const NOBODY: u8 = u8::MAX;

/// One line's directory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LineState {
    /// The CPU holding it Modified (`NOBODY`: clean everywhere).
    owner: u8,
    /// CPUs holding a valid copy (the owner included).
    sharers: u64,
}

impl Default for LineState {
    fn default() -> Self {
        LineState {
            owner: NOBODY,
            sharers: 0,
        }
    }
}

/// What the directory and the bus saw in a run (`metrics.interconnect`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InterconnectStats {
    /// Lines supplied by another CPU's cache (snoop hits on Modified lines).
    pub transfers: u64,
    /// Of those, lines that crossed between buses.
    pub cross_bus: u64,
    /// Lines read from memory (valid in no cache, or first touched).
    pub memory_reads: u64,
    /// Writes that invalidated other CPUs' copies.
    pub invalidations: u64,
    /// Time transactions and refills spent waiting for the bus, ns.
    pub bus_wait_ns: u64,
    /// Refills run while another CPU of the bus was streaming too.
    pub contended_refills: u64,
}

/// The model for one run of a machine whose profile has an `[interconnect]`.
#[derive(Clone, Debug)]
pub struct Interconnect {
    /// Bus time of one line's data phase, ns (`S`).
    occupancy_ns: u64,
    invalidate_ns: u64,
    transfer_ns: u64,
    cross_bus_ns: u64,
    memory_ns: u64,
    line_bytes: u64,
    /// Bus of each CPU.
    bus_of: Vec<u8>,
    /// CPUs of each bus now streaming a refill.
    streaming: Vec<u64>,
    tasks: Vec<LineState>,
    cpus: Vec<LineState>,
    rqs: Vec<LineState>,
    rq_lists: Vec<LineState>,
    /// The lines of each task's structure, for classes that lay it out ([`Line::TaskBytes`]),
    /// by line index within the structure.
    task_bytes: Vec<Vec<LineState>>,
    /// The lines of each CPU's idle task's structure.
    idle_bytes: Vec<Vec<LineState>>,
    /// The lines of each `mm_struct` touched (by mm id; ids are never reused).
    mm_bytes: HashMap<u32, Vec<LineState>>,
    globals: [LineState; 2],
    pub stats: InterconnectStats,
}

/// One directory entry's address: a line of the tracked data.
#[derive(Clone, Copy)]
enum Key {
    Whole(Line),
    Task(usize, usize),
    Idle(CpuId, usize),
    Mm(u32, usize),
}

/// The `i`-th line after `first` of the same structure.
fn nth(first: Key, i: usize) -> Key {
    match first {
        Key::Task(t, f) => Key::Task(t, f + i),
        Key::Idle(c, f) => Key::Idle(c, f + i),
        Key::Mm(m, f) => Key::Mm(m, f + i),
        k => k,
    }
}

fn slot(v: &mut Vec<LineState>, i: usize) -> &mut LineState {
    if i >= v.len() {
        v.resize(i + 1, LineState::default());
    }
    &mut v[i]
}

impl Interconnect {
    /// The model for `machine`, if its profile has an `[interconnect]` section.
    pub fn new(machine: &Machine) -> Option<Interconnect> {
        let ic = machine.profile.interconnect.as_ref()?;
        Some(Interconnect::from_spec(
            ic,
            machine.ncpus(),
            machine.profile.costs.mem_latency_ns,
        ))
    }

    pub fn from_spec(ic: &InterconnectSpec, ncpus: usize, mem_latency_ns: f64) -> Interconnect {
        let clock_ns = 1000.0 / ic.bus_mhz;
        let nbuses = ncpus / ic.cpus_per_bus;
        Interconnect {
            occupancy_ns: ((ic.line_bytes / ic.bus_width_bytes) as f64 * clock_ns).round() as u64,
            invalidate_ns: (ic.invalidate_clocks * clock_ns).round() as u64,
            transfer_ns: ic.transfer_ns.round() as u64,
            cross_bus_ns: ic.cross_bus_ns.round() as u64,
            memory_ns: mem_latency_ns.round() as u64,
            line_bytes: ic.line_bytes as u64,
            bus_of: (0..ncpus).map(|c| (c / ic.cpus_per_bus) as u8).collect(),
            streaming: vec![0; nbuses.max(1)],
            tasks: Vec::new(),
            cpus: vec![LineState::default(); ncpus],
            rqs: vec![LineState::default(); ncpus.max(1)],
            rq_lists: vec![LineState::default(); ncpus.max(1)],
            task_bytes: Vec::new(),
            idle_bytes: vec![Vec::new(); ncpus],
            mm_bytes: HashMap::new(),
            globals: [LineState::default(); 2],
            stats: InterconnectStats::default(),
        }
    }

    /// Bus time of one line's data phase, ns.
    pub fn occupancy_ns(&self) -> u64 {
        self.occupancy_ns
    }

    pub fn line_bytes(&self) -> u64 {
        self.line_bytes
    }

    fn entry(&mut self, key: Key) -> &mut LineState {
        match key {
            Key::Whole(Line::Task(t)) => {
                let i = t.index();
                if i >= self.tasks.len() {
                    self.tasks.resize(i + 1, LineState::default());
                }
                &mut self.tasks[i]
            }
            Key::Whole(Line::Cpu(c)) => &mut self.cpus[c],
            Key::Whole(Line::Rq(d)) => &mut self.rqs[d],
            Key::Whole(Line::RqList(d)) => &mut self.rq_lists[d],
            Key::Whole(Line::Global(g)) => &mut self.globals[g as usize],
            Key::Task(t, i) => {
                if t >= self.task_bytes.len() {
                    self.task_bytes.resize(t + 1, Vec::new());
                }
                slot(&mut self.task_bytes[t], i)
            }
            Key::Idle(c, i) => slot(&mut self.idle_bytes[c], i),
            Key::Mm(m, i) => slot(self.mm_bytes.entry(m).or_default(), i),
            Key::Whole(Line::TaskBytes(..) | Line::IdleBytes(..) | Line::MmBytes(..)) => {
                unreachable!("spans are split into keys by keys_of")
            }
        }
    }

    /// The directory entries `line` covers: one, or every line of a span.
    fn keys_of(&self, line: Line) -> (Key, usize) {
        let lb = self.line_bytes as usize;
        let span = |s: Span| {
            let first = s.off as usize / lb;
            let last = (s.off as usize + s.len.max(1) as usize - 1) / lb;
            (first, last - first + 1)
        };
        match line {
            Line::TaskBytes(t, s) => {
                let (i, n) = span(s);
                (Key::Task(t.index(), i), n)
            }
            Line::IdleBytes(c, s) => {
                let (i, n) = span(s);
                (Key::Idle(c, i), n)
            }
            Line::MmBytes(m, s) => {
                let (i, n) = span(s);
                (Key::Mm(m, i), n)
            }
            l => (Key::Whole(l), 1),
        }
    }

    /// A fresh line (a task slot reused by a new task: its `task_struct` is new memory).
    pub fn forget(&mut self, line: Line) {
        *self.entry(Key::Whole(line)) = LineState::default();
    }

    /// A fresh task structure, every line of it (a slot reused by a new task).
    pub fn forget_task(&mut self, t: crate::task::TaskId) {
        self.forget(Line::Task(t));
        if let Some(v) = self.task_bytes.get_mut(t.index()) {
            v.clear();
        }
    }

    /// Bus wait of a transaction `cpu` issues now: one occupancy per other streaming CPU.
    pub fn bus_wait(&self, cpu: CpuId) -> u64 {
        let bus = self.bus_of[cpu] as usize;
        let others = self.streaming[bus] & !(1u64 << cpu);
        others.count_ones() as u64 * self.occupancy_ns
    }

    /// A line of data the directory does not track (memory-management structures, whose
    /// owners `sim::mm` keeps) moves from `owner`'s cache to `cpu`'s.
    pub fn transfer_line(&mut self, cpu: CpuId, owner: CpuId) -> u64 {
        self.transfer(cpu, owner)
    }

    /// A line moves from `owner`'s cache to `cpu`'s: the transfer, crossing buses if theirs
    /// differ, after waiting for the bus (both buses when it crosses).
    fn transfer(&mut self, cpu: CpuId, owner: CpuId) -> u64 {
        let mut wait = self.bus_wait(cpu);
        let mut ns = self.transfer_ns;
        if self.bus_of[owner] != self.bus_of[cpu] {
            wait += self.bus_wait(owner);
            ns += self.cross_bus_ns;
            self.stats.cross_bus += 1;
        }
        self.stats.transfers += 1;
        self.stats.bus_wait_ns += wait;
        ns + wait
    }

    fn memory(&mut self, cpu: CpuId) -> u64 {
        let wait = self.bus_wait(cpu);
        self.stats.memory_reads += 1;
        self.stats.bus_wait_ns += wait;
        self.memory_ns + wait
    }

    /// `cpu` reads `line`: what it costs beyond a cache hit, ns.
    pub fn read(&mut self, cpu: CpuId, line: Line) -> u64 {
        let (first, n) = self.keys_of(line);
        (0..n).map(|i| self.read_key(cpu, nth(first, i))).sum()
    }

    /// `cpu` writes `line`: what it costs beyond a cache hit, ns.
    pub fn write(&mut self, cpu: CpuId, line: Line) -> u64 {
        let (first, n) = self.keys_of(line);
        (0..n).map(|i| self.write_key(cpu, nth(first, i))).sum()
    }

    fn read_key(&mut self, cpu: CpuId, key: Key) -> u64 {
        let me = 1u64 << cpu;
        let st = *self.entry(key);
        if st.sharers & me != 0 {
            return 0;
        }
        let ns = if st.owner != NOBODY {
            self.transfer(cpu, st.owner as CpuId)
        } else {
            self.memory(cpu)
        };
        let e = self.entry(key);
        e.owner = NOBODY;
        e.sharers |= me;
        ns
    }

    fn write_key(&mut self, cpu: CpuId, key: Key) -> u64 {
        let me = 1u64 << cpu;
        let st = *self.entry(key);
        let ns = if st.owner as usize == cpu || st.sharers == me {
            0
        } else if st.owner != NOBODY {
            self.transfer(cpu, st.owner as CpuId)
        } else if st.sharers & me != 0 {
            let wait = self.bus_wait(cpu);
            self.stats.invalidations += 1;
            self.stats.bus_wait_ns += wait;
            self.invalidate_ns + wait
        } else {
            // A read-for-ownership from memory; any other copies are invalidated with it.
            if st.sharers != 0 {
                self.stats.invalidations += 1;
            }
            self.memory(cpu)
        };
        let e = self.entry(key);
        e.owner = cpu as u8;
        e.sharers = me;
        ns
    }

    /// `cpu` holds `line` Modified and alone, at no price: data written as part of work
    /// priced elsewhere (the copy of a new `task_struct`, inside the profile's fork cost).
    pub fn claim(&mut self, cpu: CpuId, line: Line) {
        let (first, n) = self.keys_of(line);
        for i in 0..n {
            *self.entry(nth(first, i)) = LineState {
                owner: cpu as u8,
                sharers: 1u64 << cpu,
            };
        }
    }

    /// `cpu` starts or stops streaming a refill over its bus.
    pub fn set_streaming(&mut self, cpu: CpuId, on: bool) {
        let bus = self.bus_of[cpu] as usize;
        if on {
            self.streaming[bus] |= 1u64 << cpu;
        } else {
            self.streaming[bus] &= !(1u64 << cpu);
        }
    }

    /// How long `cpu` takes to stream `kb` from memory, given that alone it streams a line
    /// in `alone_line_ns`: each line takes the longer of that and one bus turn of every
    /// streaming CPU of the bus, itself included.
    pub fn stream_ns(&mut self, cpu: CpuId, kb: f64, alone_line_ns: f64) -> u64 {
        let lines = kb * 1024.0 / self.line_bytes as f64;
        let bus = self.bus_of[cpu] as usize;
        let others = (self.streaming[bus] & !(1u64 << cpu)).count_ones() as u64;
        let turn = ((others + 1) * self.occupancy_ns) as f64;
        let per_line = alone_line_ns.max(turn);
        if others > 0 && turn > alone_line_ns {
            self.stats.contended_refills += 1;
            self.stats.bus_wait_ns += (lines * (turn - alone_line_ns)) as u64;
        }
        (lines * per_line) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskId;

    /// Four CPUs on one 100 MHz, 8-byte bus with 32-byte lines (S = 4 clocks = 40 ns),
    /// transfers of 150 ns, memory 180 ns, invalidations of 2 clocks.
    fn ic(cpus_per_bus: usize) -> Interconnect {
        Interconnect::from_spec(
            &InterconnectSpec {
                line_bytes: 32,
                bus_mhz: 100.0,
                bus_width_bytes: 8,
                cpus_per_bus,
                transfer_ns: 150.0,
                cross_bus_ns: 50.0,
                invalidate_clocks: 2.0,
            },
            4,
            180.0,
        )
    }

    #[test]
    fn a_line_written_on_one_cpu_and_read_on_another_costs_one_transfer() {
        let mut m = ic(4);
        let l = Line::Task(TaskId(7));
        // First touch: from memory.
        assert_eq!(m.write(0, l), 180);
        // CPU 0 owns it: its own reads and writes are hits.
        assert_eq!(m.read(0, l), 0);
        assert_eq!(m.write(0, l), 0);
        // CPU 3 reads it: one snoop-hit transfer; then both share it.
        assert_eq!(m.read(3, l), 150);
        assert_eq!(m.stats.transfers, 1);
        assert_eq!(m.read(3, l), 0);
        assert_eq!(m.read(0, l), 0);
        // CPU 0 writes the shared line: an invalidation (2 clocks); CPU 3's copy is gone.
        assert_eq!(m.write(0, l), 20);
        assert_eq!(m.stats.invalidations, 1);
        assert_eq!(m.read(3, l), 150);
        assert_eq!(m.stats.transfers, 2);
        // CPU 1 writes the line CPUs 0 and 3 share clean: a read-for-ownership from memory (no
        // one holds it Modified), invalidating both copies. CPU 0 then reads it from CPU 1's
        // cache; CPU 3 after it finds it clean and shared: from memory.
        assert_eq!(m.write(1, l), 180);
        assert_eq!(m.stats.invalidations, 2);
        assert_eq!((m.read(0, l), m.read(3, l)), (150, 180));
    }

    /// A span is priced line by line at the machine's line size: the 2.4 switch's saved
    /// thread fields (bytes 884–899) straddle two 32-byte lines; the goodness fields (32–63)
    /// are one; a task's fields and another task's are distinct lines, as are an idle task's.
    #[test]
    fn a_span_costs_every_line_it_covers() {
        let mut m = ic(4);
        let t = TaskId(3);
        let saved = Line::TaskBytes(t, Span::new(884, 16));
        assert_eq!(m.write(0, saved), 2 * 180, "two lines from memory");
        assert_eq!(m.read(1, saved), 2 * 150, "two transfers");
        let goodness = Line::TaskBytes(t, Span::new(32, 32));
        assert_eq!(m.write(0, goodness), 180);
        // The same line through a narrower span: a hit.
        assert_eq!(m.read(0, Line::TaskBytes(t, Span::new(60, 4))), 0);
        // Line 0 of the structure is another line.
        assert_eq!(m.read(0, Line::TaskBytes(t, Span::new(20, 4))), 180);
        // Another task's, an idle task's and an mm's bytes at the same offsets are their own.
        assert_eq!(m.read(0, Line::TaskBytes(TaskId(4), Span::new(32, 4))), 180);
        assert_eq!(m.read(0, Line::IdleBytes(0, Span::new(32, 4))), 180);
        assert_eq!(m.read(0, Line::MmBytes(3, Span::new(32, 4))), 180);
        // A fresh task structure forgets every line: CPU 1 writes from memory again.
        m.forget_task(t);
        assert_eq!(m.write(1, saved), 2 * 180);
    }

    /// At 64-byte lines the first two 32-byte lines of a task_struct are one.
    #[test]
    fn wider_lines_merge_what_32_bytes_split() {
        let spec = InterconnectSpec {
            line_bytes: 64,
            bus_mhz: 100.0,
            bus_width_bytes: 8,
            cpus_per_bus: 4,
            transfer_ns: 150.0,
            cross_bus_ns: 50.0,
            invalidate_clocks: 2.0,
        };
        let mut m = Interconnect::from_spec(&spec, 4, 180.0);
        let t = TaskId(0);
        assert_eq!(m.write(0, Line::TaskBytes(t, Span::new(20, 4))), 180);
        assert_eq!(m.read(1, Line::TaskBytes(t, Span::new(32, 32))), 150);
    }

    #[test]
    fn a_line_crossing_buses_pays_the_crossbar() {
        let mut m = ic(2);
        let l = Line::Cpu(0);
        m.write(0, l);
        assert_eq!(m.read(1, l), 150, "same bus");
        m.write(0, l);
        assert_eq!(m.read(2, l), 200, "other bus: + cross_bus_ns");
        assert_eq!(m.stats.cross_bus, 1);
    }

    #[test]
    fn cpus_streaming_on_a_bus_queue_each_other() {
        let mut m = ic(4);
        // Alone, a CPU streams a line in 57 ns (558 MB/s), longer than the bus's 40 ns: 1 KB
        // (32 lines) takes 32 x 57 = 1824 ns.
        assert_eq!(m.stream_ns(0, 1.0, 57.0), 1824);
        // With CPU 1 streaming too, each line waits its turn behind CPU 1's: 2 x 40 = 80 ns.
        m.set_streaming(1, true);
        assert_eq!(m.stream_ns(0, 1.0, 57.0), 32 * 80);
        assert_eq!(m.stats.contended_refills, 1);
        // Three others: 4 x 40 = 160 ns a line; a single transaction waits 3 x 40 ns.
        m.set_streaming(2, true);
        m.set_streaming(3, true);
        assert_eq!(m.stream_ns(0, 1.0, 57.0), 32 * 160);
        assert_eq!(m.bus_wait(0), 120);
        let l = Line::Rq(0);
        m.write(1, l);
        assert_eq!(m.read(0, l), 150 + 120);
        // A streamer's own transactions do not wait for itself.
        m.set_streaming(0, true);
        assert_eq!(m.bus_wait(0), 120);
        m.set_streaming(1, false);
        assert_eq!(m.bus_wait(0), 80);
    }
}
