//! The run's result: its counters, histograms and models' statistics assembled into a
//! `RunResult` (and each phase's own `PhaseMetrics`).
//!
//! Reads the finished run only; must never change the run's state, and no figure computed here
//! may feed back into the run.

use super::*;

impl<P: SchedClass> Sim<'_, '_, P> {
    /// The figures of phase `p`, from its start to `end`.
    pub(super) fn phase_metrics(&self, p: &PhaseTally, end: u64) -> crate::metrics::PhaseMetrics {
        let secs = end.saturating_sub(p.start_ns) as f64 / 1e9;
        let rate = |x: u64| {
            if secs > 0.0 {
                x as f64 / secs
            } else {
                f64::NAN
            }
        };
        let lat = |h: &Histogram<u64>| {
            (!h.is_empty()).then(|| Latency {
                p50: h.value_at_quantile(0.5) as f64 / 1e3,
                p99: h.value_at_quantile(0.99) as f64 / 1e3,
                max: h.max() as f64 / 1e3,
                count: h.len(),
            })
        };
        let count0 = self.tally.counts.first().copied().unwrap_or(0);
        let samples = self.tally.rq_len.samples - p.rq_len.samples;
        let chunks = self.tally.audio.chunks - p.audio.chunks;
        crate::metrics::PhaseMetrics {
            from_s: p.start_ns as f64 / 1e9,
            to_s: end as f64 / 1e9,
            throughput: rate(count0 - p.count0) * self.workload.throughput_scale,
            context_switches_per_s: rate(self.tally.switches - p.switches),
            migrations: self.tally.migrations - p.migrations,
            runqueue_length_avg: (self.tally.rq_len.sum - p.rq_len.sum) as f64
                / samples.max(1) as f64,
            interactive_wakeup_latency_us: lat(&p.lat_interactive),
            probe_latency_us: lat(&p.probe),
            audio: (chunks > 0).then(|| AudioReport {
                chunks,
                underruns: self.tally.audio.underruns - p.audio.underruns,
                deadline_misses: self.tally.audio.deadline_misses - p.audio.deadline_misses,
                lateness_us: lat(&p.audio_lateness).unwrap_or_default(),
            }),
        }
    }

    pub(super) fn result(&self, wall_s: f64) -> RunResult {
        let end = self.end_time.unwrap_or(self.cfg.duration_ns).max(1);
        let secs = end as f64 / 1e9;
        let lat = |h: &Histogram<u64>| Latency {
            p50: h.value_at_quantile(0.5) as f64 / 1e3,
            p99: h.value_at_quantile(0.99) as f64 / 1e3,
            max: h.max() as f64 / 1e3,
            count: h.len(),
        };
        let idle_fraction = self
            .cpus
            .iter()
            .map(|c| c.acct.idle as f64 / end as f64)
            .sum::<f64>()
            / self.ncpus as f64;
        // A run shorter than one timer tick has no meaningful rate (one switch in 1 ns is
        // not a billion switches a second): rates are then NaN, written as null.
        let rate = |x: f64| {
            if end >= self.tick_ns {
                x / secs
            } else {
                f64::NAN
            }
        };
        let throughput = rate(self.tally.counts[0] as f64) * self.workload.throughput_scale;
        let mut per_op_us = std::collections::BTreeMap::new();
        if let Some(label) = &self.workload.per_op_label {
            if throughput > 0.0 && throughput.is_finite() {
                per_op_us.insert(label.clone(), 1e6 / throughput);
            }
        }
        let locks = self.locks.iter().fold(LockStats::default(), |mut a, l| {
            a.acquisitions += l.acquisitions;
            a.contended += l.contended;
            a.wait_us += l.wait_ns as f64 / 1e3;
            a
        });
        let o = &self.ops_total;
        let (starved, starved_total) = self.starved_report(end).unzip();
        RunResult {
            policy: self.sched.label(),
            machine: self.machine.name().to_string(),
            workload: self.workload.name.clone(),
            seed: self.cfg.seed,
            rt_balance: None,
            lock_mode: self
                .workload
                .locks
                .iter()
                .any(|(_, s)| matches!(s, crate::workload::LockSpec::Semaphore { mode: None, .. }))
                .then(|| self.cfg.lock_mode.name().to_string()),
            simulated_s: secs,
            completed: self.stop == StopReason::Completed,
            stop_reason: match self.stop {
                StopReason::Completed => "completed",
                StopReason::TimeLimit => "time_limit",
                StopReason::Deadlock(_) => "deadlock",
                StopReason::Starved => "starved",
            }
            .to_string(),
            deadlock: match &self.stop {
                StopReason::Deadlock(waits) => Some(waits.clone()),
                _ => None,
            },
            timeline: None,
            starved,
            starved_total,
            starve_threshold_s: self.cfg.starve.map(|s| s.threshold_ns as f64 / 1e9),
            phases: match self.tally.phase.as_deref() {
                Some(p) => {
                    let mut v = self.tally.phases_done.clone();
                    v.push(self.phase_metrics(p, end));
                    v
                }
                None => Vec::new(),
            },
            metrics: Metrics {
                context_switches: self.tally.switches,
                context_switches_per_s: rate(self.tally.switches as f64),
                migrations: self.tally.migrations,
                idle_fraction,
                wakeup_latency_us: lat(&self.tally.lat_all),
                wakeup_latency_cdf_us: crate::metrics::latency_cdf(&self.tally.lat_all),
                interactive_wakeup_latency_us: (!self.tally.lat_interactive.is_empty())
                    .then(|| lat(&self.tally.lat_interactive)),
                probe_latency_us: (!self.tally.probe.is_empty()).then(|| lat(&self.tally.probe)),
                fairness_jain: self.fairness_jain(end),
                longest_runnable_wait_us: self.longest_runnable_wait_us(end),
                audio: (self.tally.audio.chunks > 0).then(|| AudioReport {
                    chunks: self.tally.audio.chunks,
                    underruns: self.tally.audio.underruns,
                    deadline_misses: self.tally.audio.deadline_misses,
                    lateness_us: lat(&self.tally.audio.lateness),
                }),
                runqueue_length: RunqueueLength {
                    avg: self.tally.rq_len.sum as f64 / self.tally.rq_len.samples.max(1) as f64,
                    max: self.tally.rq_len.max,
                },
                throughput: Throughput {
                    unit: self.workload.throughput_unit.clone(),
                    value: throughput,
                    count: self.tally.counts.first().copied().unwrap_or(0),
                },
                per_op_us,
                cpu_time_s: self.cpu_time_s(),
                locks,
                sched_ops: SchedOps {
                    tasks_scanned: o.scanned,
                    recalc_visits: o.recalc,
                    bitmap_searches: o.bitmap_searches,
                    list_ops: o.list_ops,
                    tree_steps: o.tree_steps,
                    remote_touches: o.remote_touches,
                },
                tasks_created: self.tally.tasks_created,
                rt: self.tally.rt,
                deadline: self.deadline_report(),
                sleep_locks: self.sleep_lock_stats(),
                rtmigrate: self.workload.rtmigrate.as_ref().map(|s| {
                    let recs: Vec<_> = self
                        .tally
                        .spins
                        .iter()
                        .map(|r| (r.iteration, r.id, r.start_ns, r.end_ns, r.cpu_ns))
                        .collect();
                    rtmigrate_report(s.threads, s.base_prio, s.maxerr_ns, &recs)
                }),
                sim: SimStats {
                    events: self.nevents,
                    task_slots: self.tasks.len() as u64,
                    task_record_bytes: (std::mem::size_of::<crate::task::Task<P::TaskData>>()
                        + std::mem::size_of::<Proc>())
                        as u64,
                    sent_unwaited: self.tally.sent_unwaited,
                    timers_before_sleep: self.tally.timers_before_sleep,
                    wall_s,
                },
                power: self.power_report(end),
                interconnect: self.ic.as_ref().map(|ic| {
                    let s = &ic.stats;
                    InterconnectReport {
                        transfers: s.transfers,
                        cross_bus: s.cross_bus,
                        memory_reads: s.memory_reads,
                        invalidations: s.invalidations,
                        bus_wait_us: s.bus_wait_ns as f64 / 1e3,
                        contended_refills: s.contended_refills,
                    }
                }),
                mm: self.mm.as_ref().map(|m| {
                    let s = &m.stats;
                    MmReport {
                        fork_pages: s.fork_pages,
                        cow_faults: s.wp_faults,
                        cow_copies: s.cow_copies,
                        dropped_pages: s.dropped_pages,
                        line_transfers: s.line_transfers,
                    }
                }),
            },
        }
    }

    /// Jain's index over every task's CPU time per unit of weight per ns alive: the dead were
    /// folded in as they died (their slots are reused), the living are added now, in task
    /// order.
    fn fairness_jain(&self, end: u64) -> f64 {
        let mut shares = self.tally.dead_shares;
        for t in self.tasks.iter().filter(|t| t.state != TaskState::Dead) {
            let pr = &self.procs[t.id.index()];
            let life = pr.died.unwrap_or(end).saturating_sub(pr.born);
            if life > 0 {
                let x = t.sum_exec_ns as f64 / (t.weight() as f64 * life as f64);
                shares.add(x);
            }
        }
        jain_from_sums(shares.n, shares.sum, shares.sum_sq)
    }

    /// The longest a runnable task waited for a CPU, µs; tasks still waiting when the run
    /// ended count too (the starved ones).
    fn longest_runnable_wait_us(&self, end: u64) -> f64 {
        let still = self
            .tasks
            .iter()
            .filter(|t| t.state == TaskState::Queued)
            .filter_map(|t| self.procs[t.id.index()].waiting_since)
            .map(|s| end.saturating_sub(s))
            .max()
            .unwrap_or(0);
        self.tally.max_runnable_wait.max(still) as f64 / 1e3
    }

    /// The CPUs' time by category, summed over the CPUs, s.
    fn cpu_time_s(&self) -> CpuTime {
        let sum = |f: fn(&CpuAccount) -> u64| {
            self.cpus.iter().map(|c| f(&c.acct)).sum::<u64>() as f64 / 1e9
        };
        CpuTime {
            user: sum(|a| a.user),
            sys: sum(|a| a.sys),
            sched: sum(|a| a.sched) + sum(|a| a.spin),
            lock_spin: sum(|a| a.spin),
            cache_refill: sum(|a| a.refill),
            irq: sum(|a| a.irq),
            idle: sum(|a| a.idle),
        }
    }

    /// Each of the workload's sleeping locks: its kind, its counters and its waits.
    fn sleep_lock_stats(&self) -> Vec<SleepLockStats> {
        self.sleeplocks
            .iter()
            .enumerate()
            .map(|(i, lk)| SleepLockStats {
                name: self.workload.locks[i].0.clone(),
                kind: match lk.kind {
                    sleeplock::LockKind::Semaphore(m) => format!("semaphore ({})", m.name()),
                    sleeplock::LockKind::Mutex { spin: true } => "mutex (spinning)".into(),
                    sleeplock::LockKind::Mutex { spin: false } => "mutex".into(),
                },
                acquisitions: lk.counters.acquisitions,
                contended: lk.counters.contended,
                handoffs: lk.counters.handoffs,
                steals: lk.counters.steals,
                wait_us_total: self.tally.lock_waits[i].total_ns as f64 / 1e3,
                wait_us_max: self.tally.lock_waits[i].max_ns as f64 / 1e3,
                stranded_audits: self.tally.stranded[i],
            })
            .collect()
    }

    /// Energy, average power and the share of busy time at each frequency (a machine with a
    /// speed model).
    fn power_report(&self, end: u64) -> Option<PowerReport> {
        self.freq.clone().map(|mut f| {
            let (energy_j, avg_w) = f.energy(end).unzip();
            let total: u64 = f.busy_ns_at_mhz.iter().map(|e| e.1).sum();
            let mut busy_at_mhz: Vec<FreqShare> = f
                .busy_ns_at_mhz
                .iter()
                .map(|&(mhz, ns)| FreqShare {
                    mhz,
                    share: ns as f64 / total.max(1) as f64,
                })
                .collect();
            busy_at_mhz.sort_by(|a, b| a.mhz.total_cmp(&b.mhz));
            let types = f.by_type();
            let type_total: u64 = types.iter().map(|t| t.1).sum();
            let top_perf = types.iter().map(|t| t.3).fold(0.0, f64::max);
            let by_core_type = types
                .into_iter()
                .map(|(name, ns, joules, perf)| crate::metrics::CoreTypeShare {
                    name,
                    busy_s: ns as f64 * 1e-9,
                    busy_share: ns as f64 / type_total.max(1) as f64,
                    energy_j: joules,
                    biggest: perf == top_perf,
                })
                .collect();
            PowerReport {
                by_core_type,
                governor: f.governor.map(|g| g.name().to_string()),
                energy_j,
                avg_w,
                busy_at_mhz,
            }
        })
    }
}
