//! Prices for the work policies report ([`OpCounter`]), from the machine's clock and cache
//! latencies. The instruction counts are our estimates of each operation's inner loop in the
//! C code it models; the memory part is the machine profile's measured latency.

use crate::ds::work::OpCounter;
use crate::machine::{Machine, Topology};
use crate::task::CpuId;

/// What a cache line written by one CPU costs another to take (the runqueue lock's line in
/// the lock model), by how far apart they are: within a last-level cache
/// (`costs.llc_transfer_ns`), between LLCs of one NUMA node (`costs.cross_llc_transfer_ns`),
/// across nodes (`numa.remote_transfer_ns`). A profile that gives none of them pays
/// `costs.mem_latency_ns` for every transfer, as every profile did before the server ones.
#[derive(Clone, Copy, Debug)]
pub struct LineCosts {
    pub llc: u64,
    pub node: u64,
    pub remote: u64,
}

impl LineCosts {
    pub fn new(m: &Machine) -> LineCosts {
        let c = &m.profile.costs;
        let mem = c.mem_latency_ns;
        LineCosts {
            llc: c.llc_transfer_ns.unwrap_or(mem) as u64,
            node: c.cross_llc_transfer_ns.unwrap_or(mem) as u64,
            remote: m
                .profile
                .numa
                .as_ref()
                .map_or(mem, |n| n.remote_transfer_ns) as u64,
        }
    }

    /// The transfer from `from` (the line's last writer; none: no transfer is charged by the
    /// lock model anyway) to `to`.
    pub fn between(&self, t: &Topology, from: Option<CpuId>, to: CpuId) -> u64 {
        match from {
            Some(f) if t.cache[f] == t.cache[to] => self.llc,
            Some(f) if t.node[f] == t.node[to] => self.node,
            Some(_) => self.remote,
            None => self.llc,
        }
    }
}

/// ns per reported unit of work, for one machine.
#[derive(Clone, Copy, Debug)]
pub struct OpCosts {
    pub scanned: f64,
    pub recalc: f64,
    pub bitmap_search: f64,
    pub list_op: f64,
    pub tree_step: f64,
    pub remote_touch: f64,
}

impl OpCosts {
    pub fn new(m: &Machine) -> OpCosts {
        let cycle = 1000.0 / m.profile.clock.mhz;
        let c = &m.profile.costs;
        OpCosts {
            // goodness(): ~20 instructions and the task_struct line, hot in L2 for a queued task.
            scanned: 20.0 * cycle + c.cache_latency_ns,
            // recalculation: ~10 instructions on a task_struct that is usually cold (sleepers).
            recalc: 10.0 * cycle + c.mem_latency_ns,
            // sched_find_first_bit over a 5-word bitmap: a few instructions, lines hot.
            bitmap_search: 6.0 * cycle,
            // list_add/list_del: ~10 instructions, one neighbour line.
            list_op: 10.0 * cycle + c.cache_latency_ns,
            // one rbtree level: compare and descend, one node line.
            tree_step: 10.0 * cycle + c.cache_latency_ns,
            // a line last written by another CPU.
            remote_touch: c.mem_latency_ns,
        }
    }

    pub fn price(&self, o: &OpCounter) -> u64 {
        (o.scanned as f64 * self.scanned
            + o.recalc as f64 * self.recalc
            + o.bitmap_searches as f64 * self.bitmap_search
            + o.list_ops as f64 * self.list_op
            + o.tree_steps as f64 * self.tree_step
            + o.remote_touches as f64 * self.remote_touch) as u64
    }
}
