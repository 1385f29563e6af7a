//! Address spaces at fork, exec and exit: page references, copy-on-write, and which CPU's
//! cache holds the memory-management lines.
//!
//! An address space is a list of pages (the program's resident pages, `Program::mm_pages`),
//! each a physical page with a reference count. As Linux 2.4's `fork` (`copy_page_range`):
//! the child gets a copy of the parent's page table, every page's count goes up by one
//! (`get_page` writes the page's `struct page`), and every page of both is write-protected.
//! The first write to a write-protected page takes a protection fault (`do_wp_page`): if the
//! page is still shared it is copied (a 4 KB read and a 4 KB write over the bus) and the
//! writer gets the copy; if the other side has gone (exited, or exec'd into a new address
//! space) the count is back to one and the page is reused with no copy. `exit` and `exec`
//! drop every page (`zap_pte_range`: `put_page` writes each `struct page`).
//!
//! The fixed work of these calls stays in the profile's `fork_ns` / `exit_ns` / `exec_ns`
//! (measured with lmbench on a cache-warm CPU). What this model adds is what depends on where
//! things run:
//! - **coherence of the mm lines** (with an `[interconnect]`): each `struct page` line and each
//!   page-table line remembers the CPU that last wrote it; per-page work on another CPU pulls
//!   the line across (the O(1) announcement's "heavy interlocking traffic between the MM
//!   structures" when a child runs on another CPU than its parent forked on);
//! - **copy-on-write faults**: `kernel.cow_fault_ns` for the fault and the 4 KB copy at the
//!   machine's memory bandwidth (through the bus, so streaming CPUs slow it), only where a
//!   page is still shared when written.
//!
//! Simplified, and said so: a program writes "its first N pages" (`Op::Dirty`: stack and data
//! come first), page tables are one line per `line_bytes / 4` PTEs and belong to one CPU per
//! address space, and pages are never swapped.

use super::interconnect::Interconnect;
use crate::task::CpuId;
use std::collections::BTreeMap;

const NOBODY: u8 = u8::MAX;

/// One address space.
#[derive(Clone, Debug, Default)]
struct Space {
    /// Physical page of each virtual page.
    pages: Vec<u32>,
    /// Write-protected since the last fork (the next write faults).
    wp: Vec<bool>,
    /// Tasks using it (threads share one).
    users: u32,
    /// The CPU that last wrote its page-table lines.
    pt_owner: u8,
}

/// What the model counted in a run (`metrics.mm`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmStats {
    /// Page references taken at fork.
    pub fork_pages: u64,
    /// Protection faults on written pages, and the copies among them.
    pub wp_faults: u64,
    pub cow_copies: u64,
    /// Page references dropped at exit and exec.
    pub dropped_pages: u64,
    /// `struct page` and page-table lines pulled from another CPU's cache.
    pub line_transfers: u64,
}

/// The address spaces of one run.
#[derive(Clone, Debug)]
pub struct MmModel {
    spaces: BTreeMap<u32, Space>,
    refs: Vec<u32>,
    /// The CPU that last wrote each page's `struct page` line.
    owner: Vec<u8>,
    free: Vec<u32>,
    cow_fault_ns: u64,
    /// ns to stream one line at the memory bandwidth alone.
    copy_alone_line_ns: f64,
    line_bytes: f64,
    ptes_per_line: usize,
    /// Virtual pages of all live address spaces (bounded by [`MAX_LIVE_PAGES`]).
    live_pages: u64,
    pub stats: MmStats,
}

/// The most virtual pages the model holds at once (16 Mi pages: 64 GiB of simulated address
/// space, about 160 MiB of the simulator's memory). A run that needs more is refused.
pub const MAX_LIVE_PAGES: u64 = 1 << 24;

const PAGE_KB: f64 = 4.0;

impl MmModel {
    /// `cow_fault_ns`: the protection fault without its copy; `mem_line_ns`: the time to
    /// stream one line alone; `line_bytes`: the cache line (PTEs are 4 bytes on i386).
    pub fn new(cow_fault_ns: f64, mem_line_ns: f64, line_bytes: u64) -> MmModel {
        MmModel {
            spaces: BTreeMap::new(),
            refs: Vec::new(),
            owner: Vec::new(),
            free: Vec::new(),
            cow_fault_ns: cow_fault_ns.round() as u64,
            copy_alone_line_ns: mem_line_ns,
            line_bytes: line_bytes as f64,
            ptes_per_line: (line_bytes as usize / 4).max(1),
            live_pages: 0,
            stats: MmStats::default(),
        }
    }

    fn alloc(&mut self, cpu: CpuId) -> u32 {
        match self.free.pop() {
            Some(p) => {
                self.refs[p as usize] = 1;
                self.owner[p as usize] = cpu as u8;
                p
            }
            None => {
                self.refs.push(1);
                self.owner.push(cpu as u8);
                (self.refs.len() - 1) as u32
            }
        }
    }

    /// A write by `cpu` of the `struct page` line of `p`: its price with a coherence model.
    fn touch_page(&mut self, p: u32, cpu: CpuId, ic: &mut Option<&mut Interconnect>) -> u64 {
        let o = self.owner[p as usize];
        self.owner[p as usize] = cpu as u8;
        match ic {
            Some(ic) if o != NOBODY && o as CpuId != cpu => {
                self.stats.line_transfers += 1;
                ic.transfer_line(cpu, o as CpuId)
            }
            _ => 0,
        }
    }

    /// `cpu` writes `lines` page-table lines of `mm`.
    fn touch_pt(
        &mut self,
        mm: u32,
        lines: usize,
        cpu: CpuId,
        ic: &mut Option<&mut Interconnect>,
    ) -> u64 {
        let Some(s) = self.spaces.get_mut(&mm) else {
            return 0;
        };
        let o = std::mem::replace(&mut s.pt_owner, cpu as u8);
        match ic {
            Some(ic) if o != NOBODY && o as CpuId != cpu => {
                self.stats.line_transfers += lines as u64;
                (0..lines).map(|_| ic.transfer_line(cpu, o as CpuId)).sum()
            }
            _ => 0,
        }
    }

    /// Whether a new address space of `pages` more pages would pass [`MAX_LIVE_PAGES`].
    pub fn would_exceed(&self, pages: u64) -> bool {
        self.live_pages + pages > MAX_LIVE_PAGES
    }

    /// Pages of address space `mm` (0 if it does not exist).
    pub fn size(&self, mm: u32) -> u64 {
        self.spaces.get(&mm).map_or(0, |s| s.pages.len() as u64)
    }

    fn pt_lines(&self, pages: usize) -> usize {
        pages.div_ceil(self.ptes_per_line)
    }

    /// A task starts in `mm` (a new one of `pages` pages, or a thread joining one).
    pub fn attach(&mut self, mm: u32, pages: u32, cpu: CpuId) {
        if let Some(s) = self.spaces.get_mut(&mm) {
            s.users += 1;
            return;
        }
        let pages: Vec<u32> = (0..pages).map(|_| self.alloc(cpu)).collect();
        let n = pages.len();
        self.live_pages += n as u64;
        self.spaces.insert(
            mm,
            Space {
                pages,
                wp: vec![false; n],
                users: 1,
                pt_owner: cpu as u8,
            },
        );
    }

    /// `fork` on `cpu`: `child` gets `parent`'s pages, shared and write-protected. Returns
    /// the coherence cost (the fixed work is the profile's `fork_ns`).
    pub fn fork(
        &mut self,
        parent: u32,
        child: u32,
        cpu: CpuId,
        mut ic: Option<&mut Interconnect>,
    ) -> u64 {
        let Some(s) = self.spaces.get_mut(&parent) else {
            return 0;
        };
        let pages = s.pages.clone();
        s.wp.iter_mut().for_each(|w| *w = true);
        let n = pages.len();
        // The parent's page table is read and write-protected; the child's is new memory.
        let mut ns = self.touch_pt(parent, self.pt_lines(n), cpu, &mut ic);
        for &p in &pages {
            self.refs[p as usize] += 1;
            ns += self.touch_page(p, cpu, &mut ic);
        }
        self.stats.fork_pages += n as u64;
        self.live_pages += n as u64;
        self.spaces.insert(
            child,
            Space {
                pages,
                wp: vec![true; n],
                users: 1,
                pt_owner: cpu as u8,
            },
        );
        ns
    }

    /// `cpu` writes the first `n` pages of `mm`: a protection fault on each still
    /// write-protected one, with a copy where the page is still shared.
    pub fn dirty(&mut self, mm: u32, n: u32, cpu: CpuId, mut ic: Option<&mut Interconnect>) -> u64 {
        // Out of the map while its pages are faulted in (the page work needs `self`).
        let Some(mut s) = self.spaces.remove(&mm) else {
            return 0;
        };
        let n = (n as usize).min(s.pages.len());
        let mut ns = 0;
        let mut faulted = 0;
        for i in 0..n {
            if !std::mem::replace(&mut s.wp[i], false) {
                continue;
            }
            let old = s.pages[i];
            faulted += 1;
            self.stats.wp_faults += 1;
            ns += self.cow_fault_ns + self.touch_page(old, cpu, &mut ic);
            if self.refs[old as usize] > 1 {
                // Still shared: copy it (a page read and a page written, over the bus).
                self.refs[old as usize] -= 1;
                s.pages[i] = self.alloc(cpu);
                self.stats.cow_copies += 1;
                ns += match ic.as_deref_mut() {
                    Some(ic) => ic.stream_ns(cpu, 2.0 * PAGE_KB, self.copy_alone_line_ns),
                    None => {
                        let lines = 2.0 * PAGE_KB * 1024.0 / self.line_bytes;
                        (lines * self.copy_alone_line_ns) as u64
                    }
                };
            }
        }
        self.spaces.insert(mm, s);
        if faulted > 0 {
            ns += self.touch_pt(mm, self.pt_lines(faulted), cpu, &mut ic);
        }
        ns
    }

    /// A task leaves `mm` (exit, or exec into a new address space) on `cpu`: the last user
    /// drops every page.
    pub fn detach(&mut self, mm: u32, cpu: CpuId, mut ic: Option<&mut Interconnect>) -> u64 {
        let Some(s) = self.spaces.get_mut(&mm) else {
            return 0;
        };
        s.users -= 1;
        if s.users > 0 {
            return 0;
        }
        let n = s.pages.len();
        let mut ns = self.touch_pt(mm, self.pt_lines(n), cpu, &mut ic);
        let s = self.spaces.remove(&mm).expect("present");
        for &p in &s.pages {
            ns += self.touch_page(p, cpu, &mut ic);
            let r = &mut self.refs[p as usize];
            *r -= 1;
            if *r == 0 {
                self.free.push(p);
            }
        }
        self.stats.dropped_pages += n as u64;
        self.live_pages -= n as u64;
        ns
    }

    /// Pages of `mm` shared with another address space.
    #[cfg(test)]
    pub fn shared_pages(&self, mm: u32) -> usize {
        self.spaces.get(&mm).map_or(0, |s| {
            s.pages
                .iter()
                .filter(|&&p| self.refs[p as usize] > 1)
                .count()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::InterconnectSpec;

    /// 2 µs faults; 57 ns to stream a 32-byte line alone (558 MB/s), so a 4 KB copy (256 lines
    /// in and out) takes 256 x 57 = 14 592 ns.
    fn model() -> MmModel {
        MmModel::new(2000.0, 57.0, 32)
    }

    fn ic() -> Interconnect {
        Interconnect::from_spec(
            &InterconnectSpec {
                line_bytes: 32,
                bus_mhz: 133.0,
                bus_width_bytes: 8,
                cpus_per_bus: 4,
                transfer_ns: 100.0,
                cross_bus_ns: 0.0,
                invalidate_clocks: 3.0,
            },
            4,
            100.0,
        )
    }

    #[test]
    fn a_write_before_the_child_leaves_copies_and_one_after_does_not() {
        // Parent mm 1 of 40 pages on CPU 0; fork child mm 2 on CPU 0 (no coherence model).
        let mut m = model();
        m.attach(1, 40, 0);
        assert_eq!(m.fork(1, 2, 0, None), 0);
        assert_eq!(m.stats.fork_pages, 40);
        assert_eq!(m.shared_pages(1), 40);
        // The parent writes 2 pages while the child still shares them: 2 faults, 2 copies.
        assert_eq!(m.dirty(1, 2, 0, None), 2 * (2000 + 14_592));
        assert_eq!((m.stats.wp_faults, m.stats.cow_copies), (2, 2));
        // Writing them again costs nothing: they are the parent's own now.
        assert_eq!(m.dirty(1, 2, 0, None), 0);
        // The child exits; the parent's third page, still write-protected, faults but is
        // reused: no copy.
        m.detach(2, 0, None);
        assert_eq!(m.dirty(1, 3, 0, None), 2000);
        assert_eq!((m.stats.wp_faults, m.stats.cow_copies), (3, 2));
        assert_eq!(m.shared_pages(1), 0);
    }

    #[test]
    fn child_runs_first_and_exits_before_the_parent_writes_leaves_nothing_to_copy() {
        let mut m = model();
        m.attach(1, 40, 0);
        m.fork(1, 2, 0, None);
        // The child writes its stack page (a copy), then exits.
        assert_eq!(m.dirty(2, 1, 0, None), 2000 + 14_592);
        m.detach(2, 0, None);
        // The parent's two writes: faults, no copies.
        assert_eq!(m.dirty(1, 2, 0, None), 2 * 2000);
        assert_eq!(m.stats.cow_copies, 1);
    }

    #[test]
    fn a_fork_of_n_pages_on_one_cpu_and_the_exit_on_another_pulls_every_line() {
        let mut ic = ic();
        let mut m = model();
        m.attach(1, 80, 0);
        // Fork on CPU 0: everything was written on CPU 0, no transfer.
        assert_eq!(m.fork(1, 2, 0, Some(&mut ic)), 0);
        // The child exits on CPU 3: 80 struct page lines and 80/8 = 10 page-table lines
        // come over from CPU 0's cache, 100 ns each on an idle bus.
        assert_eq!(m.detach(2, 3, Some(&mut ic)), 90 * 100);
        assert_eq!(m.stats.line_transfers, 90);
        assert_eq!(m.stats.dropped_pages, 80);
        // The parent forks again on CPU 0: the struct page lines are now CPU 3's.
        assert_eq!(m.fork(1, 3, 0, Some(&mut ic)), 80 * 100);
        // Had the child exited on CPU 0, nothing would have moved.
        let mut m = model();
        m.attach(1, 80, 0);
        m.fork(1, 2, 0, Some(&mut ic));
        assert_eq!(m.detach(2, 0, Some(&mut ic)), 0);
    }
}
