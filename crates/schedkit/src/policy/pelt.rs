//! PELT, per-entity load tracking (Paul Turner, 3.8; `kernel/sched/pelt.c`): a load signal
//! that sums what was runnable in each 1024 µs period, each older period weighted by `y`,
//! where `y^32 = 1/2` (a 32 ms half-life). The modern fair class (`eevdf`) balances by it.
//!
//! Kept here at the level of a runqueue: the signal of the runqueue's runnable weight, which
//! is what the kernel's per-entity sums add up to while tasks stay put. Simplified, and said
//! so in `eevdf`: a task that moves takes no history with it (the kernel detaches and attaches
//! its own `load_avg`); its contribution decays out of the old runqueue and grows into the
//! new one over some 32 ms periods.

/// `runnable_avg_yN_inv[n]`: `0xffffffff * y^n`, as the kernel tabulates it
/// (`kernel/sched/sched-pelt.h`; each entry within one unit of the exact value).
const YN_INV: [u64; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];
/// Periods in a half-life.
const LOAD_AVG_PERIOD: u64 = 32;
/// The largest `load_sum` of a weight-1 signal: `1024 * sum(y^n)` as the kernel's integer
/// series gives it.
pub const LOAD_AVG_MAX: u64 = 47742;

/// `decay_load(val, n)`: `val * y^n`.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut val = val >> (n / LOAD_AVG_PERIOD);
    let local = n % LOAD_AVG_PERIOD;
    val = ((val as u128 * YN_INV[local as usize] as u128) >> 32) as u64;
    val
}

/// A PELT signal: the sum, the unfinished period's part, when it was last brought up to date.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pelt {
    pub load_sum: u64,
    pub load_avg: u64,
    period_contrib: u64,
    last_update_us: u64,
}

impl Pelt {
    /// `___update_load_sum` + `___update_load_avg` for a signal that was `weight` since the
    /// last update (the runqueue's runnable weight), at `now_ns`.
    pub fn update(&mut self, now_ns: u64, weight: u64) {
        // The kernel counts in units of 1024 ns ("µs").
        let now = now_ns >> 10;
        let delta = now.saturating_sub(self.last_update_us);
        if delta == 0 {
            return;
        }
        self.last_update_us = now;
        let contrib_total = self.period_contrib + delta;
        let periods = contrib_total / 1024;
        let contrib = if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            // __accumulate_pelt_segments: the rest of the old period (decayed), the full
            // periods between (a geometric series), the part of the current one.
            let d1 = 1024 - self.period_contrib;
            let d3 = contrib_total % 1024;
            let c1 = decay_load(d1, periods);
            let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
            self.period_contrib = d3;
            c1 + c2 + d3
        } else {
            self.period_contrib = contrib_total;
            delta
        };
        self.load_sum += weight * contrib;
        // get_pelt_divider.
        let divider = LOAD_AVG_MAX - 1024 + self.period_contrib;
        self.load_avg = self.load_sum / divider;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_life_is_32_periods() {
        // Halved per 32 periods, then multiplied by y^0 = 0xffffffff / 2^32 as the kernel's
        // decay_load does (so one unit below the exact half).
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_eq!(decay_load(1 << 20, 64), (1 << 18) - 1);
        // y^16 = 1/sqrt(2).
        assert_eq!(decay_load(1 << 20, 16), 741455);
        assert_eq!(decay_load(1000, 0), 999); // 0xffffffff / 2^32 rounds down
        assert_eq!(decay_load(12345, 3000), 0);
    }

    #[test]
    fn a_steady_weight_converges_to_itself_and_decays_by_half_in_32_ms() {
        let mut p = Pelt::default();
        let ms = 1u64 << 20; // 1024 "µs" of 1024 ns: one PELT period
        let mut t = 0;
        for _ in 0..1000 {
            t += ms;
            p.update(t, 1024);
        }
        // Always runnable at weight 1024: the average is the weight (within rounding).
        assert!((1000..=1024).contains(&p.load_avg), "{p:?}");
        let full = p.load_avg;
        // 32 periods with nothing runnable: half of it.
        for _ in 0..32 {
            t += ms;
            p.update(t, 0);
        }
        assert!(
            (full / 2 - 8..=full / 2 + 8).contains(&p.load_avg),
            "{} after 32 ms idle from {full}",
            p.load_avg
        );
    }
}
