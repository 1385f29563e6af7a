//! PELT, per-entity load tracking (Paul Turner, 3.8; `kernel/sched/pelt.c`): a load signal
//! that sums what was runnable in each 1024 µs period, each older period weighted by `y`,
//! where `y^32 = 1/2` (a 32 ms half-life). The modern fair class (`eevdf`) balances by it.
//!
//! Two kinds of signal, as the kernel keeps them (`___update_load_sum`/`___update_load_avg`):
//! a runqueue's, summing its queued weight (`cfs_rq->load.weight`, delayed entities included)
//! with `load_avg = load_sum / divider`; and an entity's, summing only whether it was queued
//! (`se->on_rq`) with `load_avg = weight * load_sum / divider`, so that a task queued 5 % of
//! the time weighs about 5 % of its weight ([`Pelt::update_entity`]). A task that moves takes
//! its signal along: detached from the old runqueue's sum ([`Pelt::detach`], or
//! [`Pelt::remove`] later when the move happens without the old runqueue's lock) and attached
//! to the new one's ([`Pelt::attach`]). `eevdf:era=6.18` keeps both; `eevdf` (6.6) keeps the
//! runqueue's signal only, and a task that moves takes no history with it there.

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
/// `PELT_MIN_DIVIDER`: the smallest divider, a sum's floor for its average.
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
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
    /// `init_entity_runnable_average`: a new task starts at its full weight, "to be seen as
    /// heavy tasks until they get a chance to stabilize to their real load level".
    pub fn new_task(weight: u64) -> Pelt {
        Pelt {
            load_avg: weight,
            ..Pelt::default()
        }
    }

    /// `get_pelt_divider`.
    fn divider(&self) -> u64 {
        PELT_MIN_DIVIDER + self.period_contrib
    }

    /// `___update_load_sum` + `___update_load_avg` for a signal that was `weight` since the
    /// last update (the runqueue's runnable weight), at `now_ns`.
    pub fn update(&mut self, now_ns: u64, weight: u64) {
        if !self.accumulate(now_ns, weight) {
            return;
        }
        self.load_avg = self.load_sum / self.divider();
    }

    /// The same for an entity (`__update_load_avg_se`): the sum counts the time it was queued
    /// (`runnable`: `se->on_rq`, a delayed entity included), the average scales it by the
    /// entity's `weight`.
    pub fn update_entity(&mut self, now_ns: u64, runnable: bool, weight: u64) {
        if !self.accumulate(now_ns, u64::from(runnable)) {
            return;
        }
        self.load_avg = weight * self.load_sum / self.divider();
    }

    /// `reweight_entity` of a task: its average at its new weight.
    pub fn reweight_entity(&mut self, weight: u64) {
        self.load_avg = weight * self.load_sum / self.divider();
    }

    /// `attach_entity_load_avg` + `enqueue_load_avg`: the entity `se` (of `weight`) joins this
    /// runqueue's signal with its average; its decay window is aligned with the runqueue's
    /// and its sum recomputed from its average ("This isn't strictly correct, but ... nobody
    /// cares if we truncate _sum a little").
    pub fn attach(&mut self, se: &mut Pelt, weight: u64) {
        let divider = self.divider();
        se.last_update_us = self.last_update_us;
        se.period_contrib = self.period_contrib;
        let sum = se.load_avg * divider;
        se.load_sum = if weight < sum { sum / weight } else { 1 };
        self.load_avg += se.load_avg;
        self.load_sum += weight * se.load_sum;
    }

    /// `detach_entity_load_avg` (`dequeue_load_avg`): the entity leaves this runqueue's signal
    /// (a task migrated under both runqueues' locks, or exiting).
    pub fn detach(&mut self, se: &Pelt, weight: u64) {
        self.load_avg = self.load_avg.saturating_sub(se.load_avg);
        self.load_sum = self.load_sum.saturating_sub(weight * se.load_sum);
        self.load_sum = self.load_sum.max(self.load_avg * PELT_MIN_DIVIDER);
    }

    /// `update_cfs_rq_load_avg`'s `removed` part: averages that tasks which left while this
    /// runqueue was not locked (`remove_entity_load_avg` at a wakeup elsewhere) took with them.
    pub fn remove(&mut self, load_avg: u64) {
        let divider = self.divider();
        self.load_avg = self.load_avg.saturating_sub(load_avg);
        self.load_sum = self.load_sum.saturating_sub(load_avg * divider);
        self.load_sum = self.load_sum.max(self.load_avg * PELT_MIN_DIVIDER);
    }

    /// A utilisation signal that starts at `avg` at `now_ns` (`post_init_entity_util_avg`: a
    /// new task's `util_avg`).
    pub fn util_at(now_ns: u64, avg: u64) -> Pelt {
        Pelt {
            load_avg: avg,
            load_sum: avg * PELT_MIN_DIVIDER,
            period_contrib: 0,
            last_update_us: now_ns >> 10,
        }
    }

    /// A task's utilisation joins this runqueue's (`attach_entity_load_avg`'s util part:
    /// `cfs_rq->avg.util_avg += se->avg.util_avg`, its sum by the runqueue's divider).
    pub fn add_avg(&mut self, avg: u64) {
        let divider = self.divider();
        self.load_avg += avg;
        self.load_sum += avg * divider;
    }

    /// `___update_load_sum`: adds `load` for every µs since the last update; false when no
    /// time passed (then nothing changes).
    fn accumulate(&mut self, now_ns: u64, load: u64) -> bool {
        // The kernel counts in units of 1024 ns ("µs").
        let now = now_ns >> 10;
        let delta = now.saturating_sub(self.last_update_us);
        if delta == 0 {
            return false;
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
        self.load_sum += load * contrib;
        true
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
