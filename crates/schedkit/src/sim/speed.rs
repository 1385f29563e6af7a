//! The simulator's side of its speed model (`freq.rs`: SMT sharing, P-states, turbo): the
//! governor's timers and requests as events, a CPU going busy or idle, a running compute
//! re-timed at a new speed, and the class told which CPUs are throttled (`cpu_scaling`).
//!
//! Must never decide a frequency itself (that is `freq::FreqModel`'s) nor call the core: a
//! speed change only re-times work and informs the class.

use super::*;

impl<P: SchedClass> Sim<'_, '_, P> {
    /// Tells the policy which CPUs start throttled and arms the ondemand sampler (its timers
    /// aligned across CPUs, as 2.6.38's `delay -= jiffies % delay`).
    pub(super) fn start_freq(&mut self) {
        let Some(f) = self.freq.as_ref() else {
            return;
        };
        for (cpu, scaling) in f.initial_scaling() {
            self.sched.cpu_scaling(cpu, scaling);
        }
        if let Some(period) = f.ondemand_period() {
            for d in 0..f.ndomains() {
                self.post(period, Ev::Governor { domain: d as u32 });
            }
        }
    }

    /// `cpu` starts or stops running a task: siblings and turbo bins may change speed.
    pub(super) fn cpu_busy(&mut self, cpu: CpuId, busy: bool) {
        if let Some(f) = self.freq.as_mut() {
            let fx = f.set_busy(cpu, busy, self.now);
            self.freq_effects(fx);
        }
    }

    fn freq_effects(&mut self, fx: super::freq::Effects) {
        for (cpu, scaling) in fx.scaling {
            self.sched.cpu_scaling(cpu, scaling);
        }
        for c in fx.respeed {
            self.post(self.now, Ev::Respeed { cpu: c as u32 });
        }
    }

    pub(super) fn governor_sample(&mut self, d: usize) {
        let Some(f) = self.freq.as_mut() else {
            return;
        };
        let period = f.ondemand_period().unwrap_or(u64::MAX);
        let latency = f.transition_latency_ns();
        if let Some(p) = f.ondemand_sample(d, self.now) {
            self.post(
                self.now + latency,
                Ev::FreqApply {
                    domain: d as u32,
                    pstate: p as u32,
                },
            );
        }
        self.post(
            self.now.saturating_add(period),
            Ev::Governor { domain: d as u32 },
        );
    }

    pub(super) fn freq_apply(&mut self, d: usize, pstate: usize) {
        if let Some(f) = self.freq.as_mut() {
            let fx = f.apply(d, pstate, self.now);
            self.freq_effects(fx);
        }
    }

    /// A user segment timed at an old speed: what it did so far counts, the rest is timed
    /// anew. A CPU about to reschedule is left to it (its next segment takes the new speed).
    pub(super) fn respeed(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let speed = self
            .freq
            .as_ref()
            .map_or(super::freq::SPEED_ONE, |f| f.speed(cpu));
        let c = &self.cpus[cpu];
        if c.seg != SegKind::User || c.need_resched || c.seg_speed == speed {
            return Ok(());
        }
        let t = c.curr.expect("user segment without a task");
        if self.procs[t.index()].spin.is_some() {
            return Ok(()); // a busy loop until a time: its length does not depend on speed
        }
        let progress = self.close_segment(cpu, self.now);
        self.user_progress(t, progress);
        self.resume(cpu)
    }
}
