//! Cache warmth: a task that runs where its working set is not cached pays the refill.
//!
//! Each last-level cache counts the KB loaded into it (`traffic`). A task remembers the cache
//! it last ran under and that cache's traffic count when it left. Back on the same cache, the
//! part of its working set still there is estimated as what the traffic since then has not
//! evicted: evicted fraction = min(1, traffic since / cache size), linear rather than LRU-exact.
//! On another cache everything is cold. The refill streams at the machine's memory bandwidth.
//!
//! A profile that gives a separate, narrower L2 (`cache.l2_kb`, e.g. a core's own 256 KB under
//! a shared L3) adds a second level counted the same way: a task that moves to another core of
//! the same LLC finds its data in the LLC but not in the new core's L2, and refills the L2's
//! share from the LLC at `costs.llc_read_mb_s`. Of the lines missing from the L2, those also
//! missing from the LLC are taken in the proportion the LLC misses (they come from memory,
//! already priced), the rest from the LLC. The levels are treated as inclusive — a
//! simplification for exclusive designs such as AMD's victim L3. A machine without `l2_kb`
//! has one level, exactly as before the L2 existed.
//!
//! On a machine with NUMA nodes, a task's memory lives on the node where it first ran after
//! it was created or exec'd (first touch; a forked child shares its parent's pages and so its
//! node); nothing moves pages afterwards (automatic NUMA balancing is not modelled). The part
//! of a refill that comes from memory streams at the profile's remote bandwidth
//! (`numa.remote_mem_read_mb_s`) when the task runs on another node. So a move within an LLC
//! refills the L2 from the LLC, a move to another LLC of the same node refills from local
//! memory, and a move to another node refills from remote memory: dearer at each step.

/// One level: each cache of it counts the KB loaded into it.
#[derive(Clone, Debug)]
struct Level {
    size_kb: u64,
    traffic: Vec<u64>,
}

impl Level {
    /// KB of `wss` (already capped at this level's size) not in cache `id` for a task whose
    /// data was left there at `mark` (or elsewhere: all of it).
    fn cold(&self, left_in: u32, mark: u64, id: usize, wss: u64) -> u64 {
        if left_in as usize != id {
            return wss;
        }
        let since = self.traffic[id] - mark;
        (wss as u128 * since.min(self.size_kb) as u128 / self.size_kb as u128) as u64
    }
}

#[derive(Clone, Debug)]
pub struct CacheModel {
    llc: Level,
    /// The separate L2 level, with its refill price from the LLC (ns per KB).
    l2: Option<(Level, f64)>,
    /// ns per KB refilled from memory.
    ns_per_kb: f64,
    /// ns per KB refilled from another node's memory.
    remote_ns_per_kb: f64,
}

/// Where a task's data was left (24 bytes: it sits in the hot part of a task's state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Warmth {
    mark: u64,
    l2_mark: u64,
    /// The LLC and the L2 it was left in (`NOWHERE`: cold everywhere; an L2 number fits 16
    /// bits: a machine has at most `CpuMask::MAX_CPUS` CPUs).
    cache: u32,
    l2: u16,
    /// The NUMA node its memory lives on (`NOWHERE16`: none yet).
    home: u16,
}

const NOWHERE: u32 = u32::MAX;
const NOWHERE16: u16 = u16::MAX;

impl Default for Warmth {
    fn default() -> Self {
        Warmth {
            mark: 0,
            l2_mark: 0,
            cache: NOWHERE,
            l2: NOWHERE16,
            home: NOWHERE16,
        }
    }
}

/// What a task must bring back when it runs: KB from memory (of which `remote_kb` from another
/// node's), and KB its L2 must take from the last-level cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refill {
    pub mem_kb: u64,
    pub llc_kb: u64,
    pub remote_kb: u64,
}

impl Refill {
    pub fn is_empty(self) -> bool {
        self.mem_kb == 0 && self.llc_kb == 0
    }
}

/// A separate L2 level: how many L2 caches, each of `size_kb`, refilled from the LLC at
/// `llc_read_mb_s`.
#[derive(Clone, Copy, Debug)]
pub struct L2Spec {
    pub count: usize,
    pub size_kb: u64,
    pub llc_read_mb_s: f64,
}

fn ns_per_kb(mb_s: f64) -> f64 {
    1024.0 * 1000.0 / mb_s
}

impl CacheModel {
    pub fn new(ncaches: usize, size_kb: u64, mem_read_mb_s: f64, l2: Option<L2Spec>) -> Self {
        Self::with_remote(ncaches, size_kb, mem_read_mb_s, mem_read_mb_s, l2)
    }

    /// As `new`, with memory on another NUMA node read at `remote_mb_s`.
    pub fn with_remote(
        ncaches: usize,
        size_kb: u64,
        mem_read_mb_s: f64,
        remote_mb_s: f64,
        l2: Option<L2Spec>,
    ) -> Self {
        CacheModel {
            llc: Level {
                size_kb,
                traffic: vec![0; ncaches],
            },
            l2: l2.map(|s| {
                (
                    Level {
                        size_kb: s.size_kb,
                        traffic: vec![0; s.count],
                    },
                    ns_per_kb(s.llc_read_mb_s),
                )
            }),
            ns_per_kb: ns_per_kb(mem_read_mb_s),
            remote_ns_per_kb: ns_per_kb(remote_mb_s),
        }
    }

    /// A task with `wss_kb` starts running under LLC `cache` and L2 `l2` on NUMA node
    /// `node`: returns what it must refill and updates its warmth.
    pub fn dispatch(
        &mut self,
        w: &mut Warmth,
        cache: usize,
        l2: usize,
        node: usize,
        wss_kb: u64,
    ) -> Refill {
        if w.home == NOWHERE16 {
            // First touch: its memory is allocated where it first runs.
            w.home = node as u16;
        }
        let wss = wss_kb.min(self.llc.size_kb);
        if wss == 0 {
            return Refill::default();
        }
        let cold = self.llc.cold(w.cache, w.mark, cache, wss);
        self.llc.traffic[cache] += cold;
        w.cache = cache as u32;
        w.mark = self.llc.traffic[cache];
        let mut r = Refill {
            mem_kb: cold,
            llc_kb: 0,
            remote_kb: if w.home as usize == node { 0 } else { cold },
        };
        if let Some((level, _)) = &mut self.l2 {
            let wss2 = wss_kb.min(level.size_kb);
            let cold2 = level.cold(u32::from(w.l2), w.l2_mark, l2, wss2);
            level.traffic[l2] += cold2;
            w.l2 = l2 as u16;
            w.l2_mark = level.traffic[l2];
            // The L2's missing lines that the LLC still holds come from it.
            let from_memory = (cold2 as u128 * cold as u128 / wss as u128) as u64;
            r.llc_kb = cold2 - from_memory;
        }
        r
    }

    /// The time a refill takes at the memory and LLC bandwidths (a bus shared with other
    /// streaming CPUs may make the memory part longer: `Interconnect::stream_ns`).
    pub fn price(&self, r: Refill) -> u64 {
        if r.remote_kb == 0 {
            return (r.mem_kb as f64 * self.ns_per_kb + self.llc_ns(r)) as u64;
        }
        let local = r.mem_kb - r.remote_kb;
        (local as f64 * self.ns_per_kb
            + r.remote_kb as f64 * self.remote_ns_per_kb
            + self.llc_ns(r)) as u64
    }

    /// The LLC-to-L2 part of a refill, ns.
    pub fn llc_ns(&self, r: Refill) -> f64 {
        match &self.l2 {
            Some((_, llc_ns_per_kb)) => r.llc_kb as f64 * llc_ns_per_kb,
            None => 0.0,
        }
    }

    /// Time to stream one `line_bytes` line from memory alone, ns.
    pub fn mem_line_ns(&self, line_bytes: u64) -> f64 {
        self.ns_per_kb * line_bytes as f64 / 1024.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl CacheModel {
        /// `dispatch` priced at the bandwidths alone.
        fn refill(&mut self, w: &mut Warmth, cache: usize, l2: usize, wss_kb: u64) -> u64 {
            let r = self.dispatch(w, cache, l2, 0, wss_kb);
            self.price(r)
        }
    }

    #[test]
    fn warm_on_the_same_cache_cold_elsewhere() {
        let mut c = CacheModel::new(2, 256, 1000.0, None);
        let mut a = Warmth::default();
        let first = c.refill(&mut a, 0, 0, 64);
        assert!(first > 0, "first run is cold");
        assert_eq!(
            c.refill(&mut a, 0, 0, 64),
            0,
            "nothing else ran: still warm"
        );
        assert_eq!(c.refill(&mut a, 1, 1, 64), first, "another cache: all cold");
    }

    #[test]
    fn other_tasks_traffic_evicts_in_proportion() {
        let mut c = CacheModel::new(1, 256, 1000.0, None);
        let (mut a, mut b) = (Warmth::default(), Warmth::default());
        let full = c.refill(&mut a, 0, 0, 64);
        c.refill(&mut b, 0, 0, 128); // half the cache's worth of other data
        let again = c.refill(&mut a, 0, 0, 64);
        assert_eq!(again, full / 2);
        // A working set bigger than the cache refills at most the cache.
        let mut big = Warmth::default();
        assert_eq!(
            c.refill(&mut big, 0, 0, 10_000),
            c.refill(&mut Warmth::default(), 0, 0, 256)
        );
    }

    /// Two cores (L2 0 and 1, 256 KB each) under one 4 MB LLC; memory at 1000 MB/s
    /// (1024 ns/KB), the LLC at 8000 MB/s (128 ns/KB).
    fn two_level() -> CacheModel {
        CacheModel::new(
            1,
            4096,
            1000.0,
            Some(L2Spec {
                count: 2,
                size_kb: 256,
                llc_read_mb_s: 8000.0,
            }),
        )
    }

    #[test]
    fn a_move_within_the_llc_refills_only_the_l2_from_the_llc() {
        let mut c = two_level();
        let mut a = Warmth::default();
        // First run: 128 KB from memory; the L2's copy of it came along (nothing from the LLC).
        assert_eq!(c.refill(&mut a, 0, 0, 128), 128 * 1024);
        assert_eq!(c.refill(&mut a, 0, 0, 128), 0, "same core: warm");
        // The other core: the LLC holds all of it, its L2 none: 128 KB at 128 ns/KB.
        assert_eq!(c.refill(&mut a, 0, 1, 128), 128 * 128);
        // Back on core 0: a task's data counts as being where it last ran (as for the LLC,
        // the model keeps one place per level), so core 0's L2 refills from the LLC again.
        assert_eq!(c.refill(&mut a, 0, 0, 128), 128 * 128);
    }

    #[test]
    fn l2_misses_that_the_llc_also_lost_come_from_memory() {
        let mut c = two_level();
        let (mut a, mut b) = (Warmth::default(), Warmth::default());
        c.refill(&mut a, 0, 0, 512);
        // 2 MB of other data through the LLC (half of it) and core 1's L2.
        c.refill(&mut b, 0, 1, 2048);
        // a on core 1: the LLC lost half of a's 512 KB (256 KB from memory); core 1's L2
        // needs a's 256 KB L2 share, half of which (by the LLC's miss ratio) is among the
        // memory refill, half from the LLC.
        assert_eq!(c.refill(&mut a, 0, 1, 512), 256 * 1024 + 128 * 128);
    }

    #[test]
    fn without_an_l2_the_model_is_the_single_level_one() {
        let mut one = CacheModel::new(2, 256, 1000.0, None);
        let mut w = Warmth::default();
        // The L2 index is ignored.
        assert_eq!(one.refill(&mut w, 0, 7, 64), 64 * 1024);
        assert_eq!(one.refill(&mut w, 0, 3, 64), 0);
    }
}
