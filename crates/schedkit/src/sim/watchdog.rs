//! The starvation watchdog (`SimConfig::starve`, the CLI's `--starve`): the tasks that waited
//! runnable, not running, for the threshold or longer, each with when it became runnable, how
//! long it waited (until it ran, or still at the end), the CPUs it may use and what ran
//! meanwhile on each of them; with `stop`, the run ends at the first such wait
//! (`stop_reason = "starved"`).
//!
//! It reads what the engine already keeps: each task's `waiting_since` (the same waits as the
//! run's "longest runnable wait", which it mirrors where it is set and taken: a task moved to
//! another runqueue keeps waiting, a task requeued by an attribute change starts again), and
//! the switches on each CPU. It changes nothing in the run: without `stop` every figure is the
//! same with or without it.
//!
//! Cost per event, bounded and independent of how many tasks sleep:
//! - The waiting tasks are kept in an intrusive list ordered by when they began to wait (one
//!   link per task slot, in this module, not in `Proc`). A wait starts at the tail (the clock
//!   only moves forward; a switch path's cursor may stand a few µs ahead of the next event's
//!   clock, so the insertion steps back over those few), and ends by unlinking: O(1). The
//!   oldest wait is the head, so `--starve-stop` is one comparison per event, and no scan of
//!   runnable tasks is ever made during the run.
//! - "What ran meanwhile": each CPU keeps the runs (task, switch-in, switch-out) that ended
//!   after the oldest wait still under way began, and drops the older ones at each switch
//!   (amortised O(1)). When no task waits long, that is only the last few switches; memory
//!   grows only while a task is starving, with the switches on the CPUs during its wait.
//!   A wait's history is summed from these runs once, when it ends (or at the run's end) and
//!   only if it enters the report's first `SHOWN` waits: O(runs in its window), not per event.

use super::*;
use crate::metrics::{CpuDuringWait, RanMeanwhile, StarvedTask};

/// How many starved tasks the report details (the rest are counted).
pub const SHOWN: usize = 10;
/// How many tasks the report names per CPU in a starved task's window (the rest are summed).
pub const TOP_RAN: usize = 3;

/// The watchdog's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Starve {
    /// A task runnable and not running for this long or longer starved, ns (> 0).
    pub threshold_ns: u64,
    /// End the run at the first starvation (`stop_reason = "starved"`).
    pub stop: bool,
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
    since: u64,
    linked: bool,
}

/// A task as the report names it.
#[derive(Clone, Copy, Debug)]
struct Who {
    pid: u32,
    prog: u32,
    member: u32,
}

/// One stay of a task on a CPU, from its switch-in to its switch-out.
#[derive(Clone, Copy)]
struct Run {
    who: Who,
    start: u64,
    end: u64,
}

/// One starved wait, with its history.
#[derive(Clone)]
struct Episode {
    who: Who,
    since: u64,
    waited: u64,
    still: bool,
    allowed: Vec<usize>,
    ran: Vec<CpuDuringWait>,
}

pub(super) struct Watchdog {
    pub(super) cfg: Starve,
    links: Vec<Link>,
    head: u32,
    tail: u32,
    /// Per CPU: who holds it, since when.
    on_cpu: Vec<Option<(Who, u64)>>,
    /// Per CPU: the runs that ended after the oldest wait under way began, oldest first.
    runs: Vec<VecDeque<Run>>,
    /// The longest finished starved waits, longest first, one per task, at most `SHOWN`.
    top: Vec<Episode>,
    /// Every task (pid) that starved, for the count of those not shown.
    starved: std::collections::BTreeSet<u32>,
}

impl Watchdog {
    pub(super) fn new(cfg: Starve, ncpus: usize) -> Self {
        Watchdog {
            cfg,
            links: Vec::new(),
            head: NIL,
            tail: NIL,
            on_cpu: vec![None; ncpus],
            runs: vec![VecDeque::new(); ncpus],
            top: Vec::new(),
            starved: Default::default(),
        }
    }

    fn head_since(&self) -> Option<u64> {
        (self.head != NIL).then(|| self.links[self.head as usize].since)
    }

    /// The oldest wait under way, if it has lasted the threshold at `now`.
    fn overdue(&self, now: u64) -> Option<usize> {
        let s = self.head_since()?;
        (now.saturating_sub(s) >= self.cfg.threshold_ns).then_some(self.head as usize)
    }

    /// Slot `i` waits from `since`.
    fn link(&mut self, i: usize, since: u64) {
        if i >= self.links.len() {
            let empty = Link {
                prev: NIL,
                next: NIL,
                since: 0,
                linked: false,
            };
            self.links.resize(i + 1, empty);
        }
        self.unlink(i);
        // After the last wait that began no later (nearly always the tail).
        let mut after = self.tail;
        while after != NIL && self.links[after as usize].since > since {
            after = self.links[after as usize].prev;
        }
        let next = if after == NIL {
            self.head
        } else {
            self.links[after as usize].next
        };
        self.links[i] = Link {
            prev: after,
            next,
            since,
            linked: true,
        };
        match after {
            NIL => self.head = i as u32,
            a => self.links[a as usize].next = i as u32,
        }
        match next {
            NIL => self.tail = i as u32,
            n => self.links[n as usize].prev = i as u32,
        }
    }

    /// Slot `i` no longer waits: when it began to, if it did.
    fn unlink(&mut self, i: usize) -> Option<u64> {
        let l = *self.links.get(i)?;
        if !l.linked {
            return None;
        }
        match l.prev {
            NIL => self.head = l.next,
            p => self.links[p as usize].next = l.next,
        }
        match l.next {
            NIL => self.tail = l.prev,
            n => self.links[n as usize].prev = l.prev,
        }
        self.links[i].linked = false;
        Some(l.since)
    }

    /// CPU `cpu` switches to `next` at `at`: the stay of the task it held ends.
    fn switch(&mut self, cpu: CpuId, next: Option<Who>, at: u64) {
        if let Some((who, start)) = self.on_cpu[cpu].take() {
            if at > start {
                self.runs[cpu].push_back(Run {
                    who,
                    start,
                    end: at,
                });
            }
        }
        self.on_cpu[cpu] = next.map(|w| (w, at));
        // Runs over before the oldest wait under way began are in no window to come.
        let keep_after = self.head_since().unwrap_or(u64::MAX);
        let q = &mut self.runs[cpu];
        while q.front().is_some_and(|r| r.end <= keep_after) {
            q.pop_front();
        }
    }

    /// What ran on each of `allowed` from `since` to `end`, other than the waiting task `pid`
    /// (whose switch-in, counted from before the switch's cost, may overlap its wait's end).
    fn history(
        &self,
        pid: u32,
        since: u64,
        end: u64,
        allowed: &[usize],
    ) -> Vec<(usize, Vec<(Who, u64)>)> {
        let mut out = Vec::new();
        for &c in allowed {
            let mut by_pid: std::collections::BTreeMap<u32, (Who, u64)> = Default::default();
            let mut add = |who: Who, a: u64, b: u64| {
                let (a, b) = (a.max(since), b.min(end));
                if b > a && who.pid != pid {
                    by_pid.entry(who.pid).or_insert((who, 0)).1 += b - a;
                }
            };
            if let Some((who, start)) = self.on_cpu[c] {
                add(who, start, end);
            }
            // Newest first, until the runs end before the window.
            for r in self.runs[c].iter().rev() {
                if r.end <= since {
                    break;
                }
                add(r.who, r.start, r.end);
            }
            let mut v: Vec<(Who, u64)> = by_pid.into_values().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.pid.cmp(&b.0.pid)));
            out.push((c, v));
        }
        out
    }

    /// Whether a wait of `waited` by `pid` would be among the first `SHOWN` of `top`.
    fn enters(top: &[Episode], pid: u32, waited: u64) -> bool {
        if top.iter().any(|e| e.who.pid == pid && e.waited >= waited) {
            return false;
        }
        let others = top.iter().filter(|e| e.who.pid != pid);
        let (n, last) = others.fold((0, None::<&Episode>), |(n, _), e| (n + 1, Some(e)));
        n < SHOWN || last.is_some_and(|l| outranks(waited, pid, l))
    }

    fn insert(top: &mut Vec<Episode>, e: Episode) {
        top.retain(|x| x.who.pid != e.who.pid);
        let at = top
            .iter()
            .position(|x| outranks(e.waited, e.who.pid, x))
            .unwrap_or(top.len());
        top.insert(at, e);
        top.truncate(SHOWN);
    }
}

/// The longer wait first; between equal waits, the lower pid.
fn outranks(waited: u64, pid: u32, e: &Episode) -> bool {
    (waited, Reverse(pid)) > (e.waited, Reverse(e.who.pid))
}

impl<P: SchedClass> Sim<'_, '_, P> {
    fn who(&self, t: TaskId) -> Who {
        let pr = &self.procs[t.index()];
        Who {
            pid: pr.pid,
            prog: pr.prog,
            member: pr.member,
        }
    }

    fn allowed(&self, t: TaskId) -> Vec<usize> {
        let m = self.tasks[t].cpus_allowed;
        (0..self.ncpus).filter(|&c| m.contains(c)).collect()
    }

    /// Task `t` began to wait for a CPU at `since` (its `waiting_since` was set).
    pub(super) fn watch_wait(&mut self, t: TaskId, since: u64) {
        if let Some(w) = self.watchdog.as_deref_mut() {
            w.link(t.index(), since);
        }
    }

    /// Task `t`'s wait for a CPU ended at `at` (it runs): if it lasted the threshold, it is
    /// counted, and detailed if among the longest.
    pub(super) fn watch_ran(&mut self, t: TaskId, at: u64) {
        let Some(w) = self.watchdog.as_deref_mut() else {
            return;
        };
        let Some(since) = w.unlink(t.index()) else {
            return;
        };
        let waited = at.saturating_sub(since);
        if waited < w.cfg.threshold_ns {
            return;
        }
        let who = self.who(t);
        let w = self.watchdog.as_deref().expect("watchdog on");
        let enters = Watchdog::enters(&w.top, who.pid, waited);
        let ep = enters.then(|| self.episode(t, since, at, false));
        let w = self.watchdog.as_deref_mut().expect("watchdog on");
        w.starved.insert(who.pid);
        if let Some(ep) = ep {
            Watchdog::insert(&mut w.top, ep);
        }
    }

    /// CPU `cpu` switches to `next` at the path's cursor.
    pub(super) fn watch_switch(&mut self, cpu: CpuId, next: Option<TaskId>) {
        if self.watchdog.is_none() {
            return;
        }
        let who = next.map(|n| self.who(n));
        let at = self.cursor;
        if let Some(w) = self.watchdog.as_deref_mut() {
            w.switch(cpu, who, at);
        }
    }

    /// With `stop`: whether a task still waiting has waited the threshold by now.
    pub(super) fn starved_now(&self) -> bool {
        self.watchdog.as_deref().is_some_and(|w| {
            w.cfg.stop
                && w.overdue(self.now)
                    .is_some_and(|i| self.tasks[TaskId(i as u32)].state == TaskState::Queued)
        })
    }

    fn episode(&self, t: TaskId, since: u64, end: u64, still: bool) -> Episode {
        let w = self.watchdog.as_deref().expect("watchdog on");
        let allowed = self.allowed(t);
        let ran = w
            .history(self.who(t).pid, since, end, &allowed)
            .into_iter()
            .map(|(cpu, v)| {
                let rest = v.iter().skip(TOP_RAN);
                CpuDuringWait {
                    cpu,
                    top: v
                        .iter()
                        .take(TOP_RAN)
                        .map(|&(who, ns)| self.ran_meanwhile(who, ns))
                        .collect(),
                    others: rest.clone().count() as u64,
                    others_s: rest.map(|x| x.1).sum::<u64>() as f64 / 1e9,
                }
            })
            .collect();
        Episode {
            who: self.who(t),
            since,
            waited: end.saturating_sub(since),
            still,
            allowed,
            ran,
        }
    }

    fn ran_meanwhile(&self, who: Who, ns: u64) -> RanMeanwhile {
        RanMeanwhile {
            pid: who.pid,
            name: self.workload.programs[who.prog as usize].name.clone(),
            member: who.member,
            cpu_s: ns as f64 / 1e9,
        }
    }

    /// The report at the run's end `end`: the finished starved waits and the waits still
    /// under way that have lasted the threshold; and how many tasks starved in all.
    pub(super) fn starved_report(&self, end: u64) -> Option<(Vec<StarvedTask>, u64)> {
        let w = self.watchdog.as_deref()?;
        let mut top = w.top.clone();
        let mut starved = w.starved.clone();
        let mut i = w.head;
        while i != NIL {
            let l = w.links[i as usize];
            if end.saturating_sub(l.since) < w.cfg.threshold_ns {
                break; // the later ones began later still
            }
            let t = TaskId(i);
            if self.tasks[t].state == TaskState::Queued {
                let who = self.who(t);
                starved.insert(who.pid);
                let waited = end.saturating_sub(l.since);
                if Watchdog::enters(&top, who.pid, waited) {
                    Watchdog::insert(&mut top, self.episode(t, l.since, end, true));
                }
            }
            i = l.next;
        }
        let tasks = top
            .into_iter()
            .map(|e| StarvedTask {
                pid: e.who.pid,
                name: self.workload.programs[e.who.prog as usize].name.clone(),
                member: e.who.member,
                runnable_since_s: e.since as f64 / 1e9,
                waited_s: e.waited as f64 / 1e9,
                still_waiting: e.still,
                cpus_allowed: e.allowed,
                ran_meanwhile: e.ran,
            })
            .collect();
        Some((tasks, starved.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(w: &Watchdog) -> Vec<(u32, u64)> {
        let mut v = Vec::new();
        let mut i = w.head;
        while i != NIL {
            v.push((i, w.links[i as usize].since));
            i = w.links[i as usize].next;
        }
        // The list read backwards is the same list.
        let mut back = Vec::new();
        let mut i = w.tail;
        while i != NIL {
            back.push((i, w.links[i as usize].since));
            i = w.links[i as usize].prev;
        }
        back.reverse();
        assert_eq!(v, back);
        v
    }

    fn wd(threshold_ns: u64) -> Watchdog {
        Watchdog::new(
            Starve {
                threshold_ns,
                stop: true,
            },
            2,
        )
    }

    #[test]
    fn waits_stay_ordered_by_their_start_whatever_the_insertion_order() {
        let mut w = wd(100);
        w.link(3, 10);
        w.link(1, 30);
        // A switch path's cursor a little ahead of the next event's clock: 25 after 30.
        w.link(7, 25);
        w.link(0, 5);
        w.link(2, 40);
        assert_eq!(order(&w), vec![(0, 5), (3, 10), (7, 25), (1, 30), (2, 40)]);
        assert_eq!(w.unlink(3), Some(10));
        assert_eq!(w.unlink(3), None);
        assert_eq!(w.unlink(99), None);
        // A task waiting again moves to its new place.
        w.link(0, 35);
        assert_eq!(order(&w), vec![(7, 25), (1, 30), (0, 35), (2, 40)]);
        assert_eq!(w.overdue(124), None);
        assert_eq!(w.overdue(125), Some(7));
        for i in [7, 1, 0, 2] {
            w.unlink(i);
        }
        assert_eq!(order(&w), vec![]);
        assert_eq!(w.overdue(u64::MAX), None);
    }

    #[test]
    fn runs_are_kept_only_as_far_back_as_the_oldest_wait_and_summed_over_the_window() {
        let who = |pid| Who {
            pid,
            prog: 0,
            member: 0,
        };
        let mut w = wd(100);
        // Nobody waits: a finished run is dropped at once.
        w.switch(0, Some(who(1)), 0);
        w.switch(0, Some(who(2)), 50);
        assert!(w.runs[0].is_empty());
        // Task 9 waits from 60; pid 2 runs on until 80, then pid 3 and pid 2 again.
        w.link(9, 60);
        w.switch(0, Some(who(3)), 80);
        w.switch(0, Some(who(2)), 120);
        w.switch(0, Some(who(3)), 150);
        assert_eq!(w.runs[0].len(), 3);
        // From 60 to 170 on CPU 0: pid 2 20 + 30, pid 3 40 + 20 (still on it); the waiter
        // itself and CPU 1 (idle) have nothing.
        let h = w.history(9, 60, 170, &[0, 1]);
        let ns: Vec<(u32, u64)> = h[0].1.iter().map(|(x, n)| (x.pid, *n)).collect();
        assert_eq!(ns, vec![(3, 60), (2, 50)]);
        assert!(h[1].1.is_empty());
        // The wait ends: the runs before the next oldest wait go at the next switch.
        w.unlink(9);
        w.link(4, 130);
        w.switch(0, None, 200);
        assert_eq!(
            w.runs[0].iter().map(|r| r.start).collect::<Vec<_>>(),
            vec![120, 150]
        );
    }
}
