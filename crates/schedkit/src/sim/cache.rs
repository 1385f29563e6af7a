//! Cache warmth: a task that runs where its working set is not cached pays the refill.
//!
//! Each last-level cache counts the KB loaded into it (`traffic`). A task remembers the cache
//! it last ran under and that cache's traffic count when it left. Back on the same cache, the
//! part of its working set still there is estimated as what the traffic since then has not
//! evicted: evicted fraction = min(1, traffic since / cache size), linear rather than LRU-exact.
//! On another cache everything is cold. The refill streams at the machine's memory bandwidth.

#[derive(Clone, Debug)]
pub struct CacheModel {
    size_kb: u64,
    /// KB loaded into each cache so far.
    traffic: Vec<u64>,
    /// ns per KB refilled.
    ns_per_kb: f64,
}

/// Where a task's data was left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Warmth {
    mark: u64,
    /// The cache it was left in (32-bit: the warmth sits in the hot part of a task's state).
    cache: Option<u32>,
}

impl CacheModel {
    pub fn new(ncaches: usize, size_kb: u64, mem_read_mb_s: f64) -> CacheModel {
        CacheModel {
            size_kb,
            traffic: vec![0; ncaches],
            ns_per_kb: 1024.0 * 1000.0 / mem_read_mb_s,
        }
    }

    /// A task with `wss_kb` starts running under `cache`: returns the refill time in ns and
    /// updates its warmth.
    pub fn dispatch(&mut self, w: &mut Warmth, cache: usize, wss_kb: u64) -> u64 {
        let wss = wss_kb.min(self.size_kb);
        if wss == 0 {
            return 0;
        }
        let cold = match w.cache {
            Some(c) if c as usize == cache => {
                let since = self.traffic[cache] - w.mark;
                (wss as u128 * since.min(self.size_kb) as u128 / self.size_kb as u128) as u64
            }
            _ => wss,
        };
        self.traffic[cache] += cold;
        w.cache = Some(cache as u32);
        w.mark = self.traffic[cache];
        (cold as f64 * self.ns_per_kb) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_on_the_same_cache_cold_elsewhere() {
        let mut c = CacheModel::new(2, 256, 1000.0);
        let mut a = Warmth::default();
        let first = c.dispatch(&mut a, 0, 64);
        assert!(first > 0, "first run is cold");
        assert_eq!(c.dispatch(&mut a, 0, 64), 0, "nothing else ran: still warm");
        assert_eq!(c.dispatch(&mut a, 1, 64), first, "another cache: all cold");
    }

    #[test]
    fn other_tasks_traffic_evicts_in_proportion() {
        let mut c = CacheModel::new(1, 256, 1000.0);
        let (mut a, mut b) = (Warmth::default(), Warmth::default());
        let full = c.dispatch(&mut a, 0, 64);
        c.dispatch(&mut b, 0, 128); // half the cache's worth of other data
        let again = c.dispatch(&mut a, 0, 64);
        assert_eq!(again, full / 2);
        // A working set bigger than the cache refills at most the cache.
        let mut big = Warmth::default();
        assert_eq!(
            c.dispatch(&mut big, 0, 10_000),
            c.dispatch(&mut Warmth::default(), 0, 256)
        );
    }
}
