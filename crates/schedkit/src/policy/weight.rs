//! Load weights and the kernel's fixed-point division by them, for the fair classes (CFS of
//! 2.6.23 and 2.6.24+, EEVDF): `prio_to_weight`, `prio_to_wmult`, `struct load_weight` and the
//! two forms of `delta * weight / lw.weight` the kernel used, with their exact rounding, so
//! that simulated vruntimes match what the kernel computed (designs.md §5.1).
//!
//! - [`calc_delta_mine`]: 2.6.23-2.6.3x (`kernel/sched.c`): `inv = (2^32 - w/2)/w + 1` computed
//!   on first use, then `(delta*weight*inv) >> 32` rounded to nearest (`SRR`), with the
//!   overflow-avoiding split when `delta*weight > 2^32`.
//! - [`calc_delta`]: `__calc_delta` of the modern `kernel/sched/fair.c` (EEVDF era):
//!   `inv = 0xffffffff / w`, and a multiply with shifts that keep the factor within 32 bits.
//!
//! Weights here are the unscaled table values (the kernel's `scale_load_down` of a 64-bit
//! build gives the same numbers back).

pub use crate::task::PRIO_TO_WEIGHT;
use crate::task::{SchedPolicy, NICE_MAX, NICE_MIN};

/// `NICE_0_LOAD`.
pub const NICE_0_LOAD: u64 = 1024;

/// `prio_to_wmult[]`: 2^32 / weight as the kernel precomputed it (`kernel/sched.c`, 2.6.23;
/// `sched_prio_to_wmult` today). Most entries are the nearest integer, a few (nice 14, 16,
/// 17, 18) the one below: the table's own values are kept, not recomputed.
pub const PRIO_TO_WMULT: [u64; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644,
    704093, 875809, 1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765,
    6557202, 8165337, 10153587, 12820798, 15790321, 19976592, 24970740, 31350126, 39045157,
    49367440, 61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294, 286331153,
];

const WMULT_SHIFT: u32 = 32;

/// `struct load_weight`: a weight and its cached inverse (0 = not computed yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadWeight {
    pub weight: u64,
    pub inv_weight: u64,
}

/// SCHED_IDLE's weight in 2.6.23 and 2.6.24: `WEIGHT_IDLEPRIO 2`, `WMULT_IDLEPRIO (1 << 31)`
/// (`v2.6.24:kernel/sched.c`; designs.md §5.1).
pub const IDLEPRIO_2_6_24: LoadWeight = LoadWeight {
    weight: 2,
    inv_weight: 1 << 31,
};

/// SCHED_IDLE's weight from 2.6.32 on, EEVDF included: `WEIGHT_IDLEPRIO 3`,
/// `WMULT_IDLEPRIO 1431655765` (2^32 / 3).
pub const IDLEPRIO_LATER: LoadWeight = LoadWeight {
    weight: 3,
    inv_weight: 1_431_655_765,
};

impl LoadWeight {
    /// A sum of weights (a runqueue's load): its inverse is computed when first needed.
    pub fn new(weight: u64) -> LoadWeight {
        LoadWeight {
            weight,
            inv_weight: 0,
        }
    }

    /// `set_load_weight` of a task at `nice`: the table's weight and inverse.
    pub fn of_nice(nice: i32) -> LoadWeight {
        let i = (nice.clamp(NICE_MIN, NICE_MAX) - NICE_MIN) as usize;
        LoadWeight {
            weight: PRIO_TO_WEIGHT[i],
            inv_weight: PRIO_TO_WMULT[i],
        }
    }

    /// `set_load_weight` for a fair task of `policy` at `nice`: the table's entry, or the
    /// era's `WEIGHT_IDLEPRIO` / `WMULT_IDLEPRIO` pair for SCHED_IDLE (nice is then ignored,
    /// as the kernel ignores it).
    pub fn of_task(nice: i32, policy: SchedPolicy, idleprio: LoadWeight) -> LoadWeight {
        if policy == SchedPolicy::Idle {
            idleprio
        } else {
            LoadWeight::of_nice(nice)
        }
    }

    /// `update_load_add` / `update_load_sub`: the weight changes, the inverse is stale.
    pub fn add(&mut self, w: u64) {
        self.weight += w;
        self.inv_weight = 0;
    }

    pub fn sub(&mut self, w: u64) {
        self.weight -= w;
        self.inv_weight = 0;
    }
}

/// `SRR(x, y)`: shift right and round to nearest.
fn srr(x: u64, y: u32) -> u64 {
    (x + (1u64 << (y - 1))) >> y
}

/// `calc_delta_mine(delta_exec, weight, lw)` of 2.6.23-2.6.3x: `delta_exec * weight /
/// lw.weight` in the kernel's fixed point (64-bit build: `WMULT_CONST = 1 << 32`).
pub fn calc_delta_mine(delta_exec: u64, weight: u64, lw: &mut LoadWeight) -> u64 {
    const WMULT_CONST: u64 = 1 << 32;
    if lw.weight == 0 {
        return delta_exec;
    }
    if lw.inv_weight == 0 {
        lw.inv_weight = (WMULT_CONST - lw.weight / 2) / lw.weight + 1;
    }
    let tmp = delta_exec.wrapping_mul(weight);
    let tmp = if tmp > WMULT_CONST {
        // Would overflow the 64-bit multiply: split the shift.
        srr(
            srr(tmp, WMULT_SHIFT / 2).wrapping_mul(lw.inv_weight),
            WMULT_SHIFT / 2,
        )
    } else {
        srr(tmp * lw.inv_weight, WMULT_SHIFT)
    };
    tmp.min(i64::MAX as u64)
}

/// `__calc_delta(delta_exec, weight, lw)` of the modern fair.c (EEVDF era).
pub fn calc_delta(delta_exec: u64, weight: u64, lw: &mut LoadWeight) -> u64 {
    const WMULT_CONST: u64 = u32::MAX as u64;
    if lw.inv_weight == 0 {
        // __update_inv_weight
        lw.inv_weight = if lw.weight >= WMULT_CONST {
            1
        } else {
            WMULT_CONST.checked_div(lw.weight).unwrap_or(WMULT_CONST)
        };
    }
    let mut fact = weight;
    let mut shift = WMULT_SHIFT as i32;
    let hi = fact >> 32;
    if hi != 0 {
        let fs = 64 - hi.leading_zeros() as i32;
        shift -= fs;
        fact >>= fs;
    }
    fact *= lw.inv_weight;
    let hi = fact >> 32;
    if hi != 0 {
        let fs = 64 - hi.leading_zeros() as i32;
        shift -= fs;
        fact >>= fs;
    }
    // mul_u64_u32_shr
    ((delta_exec as u128 * fact as u128) >> shift) as u64
}

/// `calc_delta_fair(delta, se)`: wall time to virtual time at the task's weight (2.6.24+).
pub fn calc_delta_fair(delta: u64, se: &mut LoadWeight) -> u64 {
    if se.weight != NICE_0_LOAD {
        calc_delta_mine(delta, NICE_0_LOAD, se)
    } else {
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wmult_table_is_two_to_the_32_over_the_weight() {
        // Within one of the exact quotient everywhere (a transcription slip would not be).
        for (w, m) in PRIO_TO_WEIGHT.iter().zip(PRIO_TO_WMULT) {
            let exact = (1u128 << 32) as f64 / *w as f64;
            assert!((m as f64 - exact).abs() < 1.0, "weight {w}: {m} vs {exact}");
        }
        assert_eq!(
            LoadWeight::of_nice(0),
            LoadWeight {
                weight: 1024,
                inv_weight: 4194304
            }
        );
        assert_eq!(LoadWeight::of_nice(-20).weight, 88761);
        assert_eq!(LoadWeight::of_nice(19).inv_weight, 286331153);
    }

    #[test]
    fn each_nice_step_is_about_ten_percent_of_cpu() {
        // Two tasks a nice step apart share a CPU about 55:45 (the 1.25 multiplier).
        for i in 0..39 {
            let (a, b) = (PRIO_TO_WEIGHT[i] as f64, PRIO_TO_WEIGHT[i + 1] as f64);
            let share = a / (a + b);
            assert!(
                (0.54..0.57).contains(&share),
                "nice {} vs {}: {share}",
                i as i32 - 20,
                i as i32 - 19
            );
        }
    }

    #[test]
    fn calc_delta_mine_rounds_as_the_kernel_did() {
        // Hand-computed: inv(1024) = (2^32 - 512)/1024 + 1 = 4194304, so a nice-0 task on a
        // nice-0 runqueue gets its delta back exactly.
        let mut lw = LoadWeight::new(1024);
        assert_eq!(calc_delta_mine(1_000_000, 1024, &mut lw), 1_000_000);
        assert_eq!(lw.inv_weight, 4194304);
        // Three nice-0 tasks: inv(3072) = 1398101; (1.024e9 * 1398101 + 2^31) >> 32 = 333333.
        let mut lw = LoadWeight::new(3072);
        assert_eq!(calc_delta_mine(1_000_000, 1024, &mut lw), 333_333);
        assert_eq!(lw.inv_weight, 1398101);
        // The split path (delta*weight > 2^32): 10 ms of a nice-0 task beside a nice-19 one.
        let mut lw = LoadWeight::new(1024 + 15);
        assert_eq!(calc_delta_mine(10_000_000, 1024, &mut lw), 9_855_630);
        let mut lw = LoadWeight::new(88761 + 15);
        assert_eq!(calc_delta_mine(4_000_000, 88761, &mut lw), 3_999_339);
    }

    #[test]
    fn modern_calc_delta_rounds_down_with_its_own_inverse() {
        // inv = 0xffffffff / w: a nice-0 task's own delta comes back one short of exact.
        assert_eq!(
            calc_delta(1_000_000, 1024, &mut LoadWeight::new(1024)),
            999_999
        );
        assert_eq!(
            calc_delta(1_000_000, 1024, &mut LoadWeight::new(15)),
            68_266_666
        );
        assert_eq!(
            calc_delta(1_000_000, 1024, &mut LoadWeight::new(88761)),
            11_536
        );
        assert_eq!(
            calc_delta(3_000_000, 1024, &mut LoadWeight::new(335)),
            9_170_148
        );
    }

    #[test]
    fn vruntime_runs_faster_for_lighter_tasks() {
        // 2.6.24's calc_delta_fair: 1 ms of a nice-19 task is 1024/15 ms of vruntime; a
        // nice-0 task's is 1 ms.
        assert_eq!(
            calc_delta_fair(1_000_000, &mut LoadWeight::of_nice(0)),
            1_000_000
        );
        let v = calc_delta_fair(1_000_000, &mut LoadWeight::of_nice(19));
        assert_eq!(v, 68_266_667);
        let v = calc_delta_fair(1_000_000, &mut LoadWeight::of_nice(-20));
        assert_eq!(v, 11_537);
    }
}
