//! The one task type every policy and host shares.
//!
//! Like the scheduling part of the kernel's `task_struct`, a [`Task`] carries what is common to
//! all policies (scheduling class, nice, RT priority, affinity, accounting) plus one
//! policy-private block `D` (the 2.4 `counter`, the O(1) `sleep_avg`, ...), so that every policy
//! keeps its own per-task state without the host knowing its shape.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Index of a task in its host's task table.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
pub struct TaskId(pub u32);

impl TaskId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task{}", self.0)
    }
}

/// A CPU number (0-based, dense).
pub type CpuId = usize;

/// The scheduling policy of a task (`SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`, `SCHED_FIFO`,
/// `SCHED_RR`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// `SCHED_OTHER` / `SCHED_NORMAL`: time-shared by nice level.
    #[default]
    Normal,
    /// `SCHED_BATCH` (2.6.16+): a CPU hog by declaration.
    Batch,
    /// `SCHED_IDLE` (2.6.23+): runs when nothing else wants the CPU; in CFS a tiny load
    /// weight (2, later 3). Only the classes whose era has it accept it
    /// ([`crate::class::SchedClass::HAS_SCHED_IDLE`]).
    Idle,
    /// `SCHED_ISO` (BFS): soft real time for unprivileged users, above every normal task
    /// while ISO tasks use less than `iso_cpu` of the machine. Only BFS has it.
    Iso,
    /// `SCHED_FIFO`: real time, runs until it blocks or yields.
    Fifo,
    /// `SCHED_RR`: real time, round robin among equal priorities.
    Rr,
    /// `SCHED_DEADLINE` (3.14+): earliest deadline first with a constant-bandwidth server,
    /// above every RT task; its parameters are the task's [`DlParams`] (`Task::dl`).
    Deadline,
}

impl SchedPolicy {
    pub fn is_rt(self) -> bool {
        matches!(self, SchedPolicy::Fifo | SchedPolicy::Rr)
    }

    /// `dl_policy()`: `SCHED_DEADLINE`.
    pub fn is_dl(self) -> bool {
        self == SchedPolicy::Deadline
    }

    /// The lowercase name [`SchedPolicy::parse`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            SchedPolicy::Normal => "normal",
            SchedPolicy::Batch => "batch",
            SchedPolicy::Idle => "idle",
            SchedPolicy::Iso => "iso",
            SchedPolicy::Fifo => "fifo",
            SchedPolicy::Rr => "rr",
            SchedPolicy::Deadline => "deadline",
        }
    }

    pub fn parse(s: &str) -> Option<SchedPolicy> {
        match s.to_ascii_lowercase().as_str() {
            "normal" | "other" | "sched_other" | "sched_normal" => Some(SchedPolicy::Normal),
            "batch" | "sched_batch" => Some(SchedPolicy::Batch),
            "idle" | "sched_idle" | "idleprio" | "sched_idleprio" => Some(SchedPolicy::Idle),
            "iso" | "sched_iso" => Some(SchedPolicy::Iso),
            "fifo" | "sched_fifo" => Some(SchedPolicy::Fifo),
            "rr" | "sched_rr" => Some(SchedPolicy::Rr),
            "deadline" | "sched_deadline" => Some(SchedPolicy::Deadline),
            _ => None,
        }
    }
}

/// Nice levels run from -20 (most favoured) to +19.
pub const NICE_MIN: i32 = -20;
pub const NICE_MAX: i32 = 19;
/// RT priorities run from 1 to 99 (`sched_priority`).
pub const RT_PRIO_MIN: u8 = 1;
pub const RT_PRIO_MAX: u8 = 99;

/// A set of CPUs a task may run on (`cpus_allowed`), up to 256 CPUs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CpuMask([u64; 4]);

impl CpuMask {
    pub const MAX_CPUS: usize = 256;

    pub const fn empty() -> Self {
        CpuMask([0; 4])
    }

    /// All CPUs (the default affinity).
    pub const fn all() -> Self {
        CpuMask([u64::MAX; 4])
    }

    pub fn first_n(n: usize) -> Self {
        let mut m = CpuMask::empty();
        for c in 0..n.min(Self::MAX_CPUS) {
            m.set(c);
        }
        m
    }

    pub fn single(cpu: CpuId) -> Self {
        let mut m = CpuMask::empty();
        m.set(cpu);
        m
    }

    pub fn set(&mut self, cpu: CpuId) {
        self.0[cpu / 64] |= 1 << (cpu % 64);
    }

    pub fn clear(&mut self, cpu: CpuId) {
        self.0[cpu / 64] &= !(1 << (cpu % 64));
    }

    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu < Self::MAX_CPUS && self.0[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let mut r = *self;
        for i in 0..4 {
            r.0[i] &= other.0[i];
        }
        r
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The mask's one CPU below `limit`, when it holds exactly one there (the kernel's
    /// `p->nr_cpus_allowed == 1`, with `limit` the CPUs online); `None` for none or several.
    pub fn only_cpu(&self, limit: usize) -> Option<CpuId> {
        let limit = limit.min(Self::MAX_CPUS);
        let mut found = None;
        for (i, &w) in self.0.iter().enumerate() {
            let base = i * 64;
            if base >= limit {
                break;
            }
            let w = if limit - base < 64 {
                w & ((1u64 << (limit - base)) - 1)
            } else {
                w
            };
            if w == 0 {
                continue;
            }
            if found.is_some() || w & (w - 1) != 0 {
                return None;
            }
            found = Some(base + w.trailing_zeros() as usize);
        }
        found
    }

    /// CPUs in the mask, ascending, below `limit`.
    pub fn iter(&self, limit: usize) -> impl Iterator<Item = CpuId> + '_ {
        (0..limit.min(Self::MAX_CPUS)).filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == CpuMask::all() {
            return write!(f, "CpuMask(all)");
        }
        let cpus: Vec<_> = self.iter(Self::MAX_CPUS).collect();
        write!(f, "CpuMask({cpus:?})")
    }
}

/// The list links of one task (the kernel's `list_head` in `run_list`), as task numbers;
/// the list code is in `ds::list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            prev: u32::MAX,
            next: u32::MAX,
        }
    }
}

/// The RT class's per-task state (the kernel's `struct sched_rt_entity`, embedded in every
/// `task_struct` whatever its class): its place in an RT priority list and its RR slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtEntity {
    pub run_list: Link,
    /// Queued in an RT runqueue (`on_rt_rq`).
    pub on_rq: bool,
    /// SCHED_RR ticks left (`rt.time_slice`). (32 bits, as the kernel's `unsigned int`: the
    /// record keeps its size with the deadline class's pointer beside it.)
    pub time_slice: i32,
}

/// `BW_SHIFT` of `kernel/sched/sched.h`: bandwidths are fixed-point fractions of 2^20.
pub const BW_SHIFT: u32 = 20;
/// `BW_UNIT`: a bandwidth of one whole CPU.
pub const BW_UNIT: u64 = 1 << BW_SHIFT;
/// `DL_SCALE` (`sched.h`): the smallest runtime is 2^10 ns, and `dl_entity_overflow` works in
/// units of it.
pub const DL_SCALE: u32 = 10;
/// `sysctl_sched_dl_period_min` (100 µs) and `_max` (2^22 µs, about 4 s) of `deadline.c`.
pub const DL_PERIOD_MIN_NS: u64 = 100_000;
pub const DL_PERIOD_MAX_NS: u64 = (1 << 22) * 1_000;

/// `to_ratio(period, runtime)` of `kernel/sched/core.c`: `runtime / period` in `BW_SHIFT`
/// fixed point.
pub fn to_ratio(period: u64, runtime: u64) -> u64 {
    if period == 0 {
        return 0;
    }
    ((runtime as u128) << BW_SHIFT).div_euclid(period as u128) as u64
}

/// A `SCHED_DEADLINE` task's reservation (`sched_attr.sched_runtime`, `sched_deadline`,
/// `sched_period`, in ns) and whether it reclaims unused bandwidth (`SCHED_FLAG_RECLAIM`,
/// GRUB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DlParams {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
    #[serde(default)]
    pub reclaim: bool,
}

impl DlParams {
    /// `__checkparam_dl` (`deadline.c`): deadline not 0, runtime at least 2^`DL_SCALE` ns,
    /// runtime <= deadline <= period, period within `sysctl_sched_dl_period_min..=max`. A
    /// period of 0 means the deadline, as in `sched_setattr`. The error is the kernel's
    /// -EINVAL, in words.
    pub fn check(self) -> Result<DlParams, String> {
        let period = if self.period_ns == 0 {
            self.deadline_ns
        } else {
            self.period_ns
        };
        let p = DlParams {
            period_ns: period,
            ..self
        };
        if p.deadline_ns == 0 {
            return Err("SCHED_DEADLINE deadline is 0 (__checkparam_dl: -EINVAL)".into());
        }
        if p.runtime_ns < 1 << DL_SCALE {
            return Err(format!(
                "SCHED_DEADLINE runtime {} ns is below the kernel's minimum of {} ns (__checkparam_dl: -EINVAL)",
                p.runtime_ns,
                1u64 << DL_SCALE
            ));
        }
        if !(p.runtime_ns <= p.deadline_ns && p.deadline_ns <= p.period_ns) {
            return Err(format!(
                "SCHED_DEADLINE needs runtime <= deadline <= period, got runtime {} ns, deadline {} ns, period {} ns (__checkparam_dl: -EINVAL)",
                p.runtime_ns, p.deadline_ns, p.period_ns
            ));
        }
        if !(DL_PERIOD_MIN_NS..=DL_PERIOD_MAX_NS).contains(&p.period_ns) {
            return Err(format!(
                "SCHED_DEADLINE period {} ns is outside the kernel's {} ns ..= {} ns (sysctl_sched_dl_period_min/max; __checkparam_dl: -EINVAL)",
                p.period_ns, DL_PERIOD_MIN_NS, DL_PERIOD_MAX_NS
            ));
        }
        Ok(p)
    }

    /// `dl_bw`: `to_ratio(dl_period, dl_runtime)`.
    pub fn bw(&self) -> u64 {
        to_ratio(self.period_ns, self.runtime_ns)
    }
}

/// The deadline class's per-task state (`struct sched_dl_entity`): the reservation, the
/// current CBS instance (`runtime` left, absolute `deadline`), whether it is throttled, and
/// the per-job statistics schedkit reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DlEntity {
    pub params: DlParams,
    /// Runtime left in this instance, ns (`dl_se->runtime`; negative after an overrun).
    pub runtime: i64,
    /// Absolute scheduling deadline, ns (`dl_se->deadline`).
    pub deadline: u64,
    /// Runtime exhausted; off the tree until its replenishment (`dl_throttled`).
    pub throttled: bool,
    /// On its runqueue's deadline class: in the tree, or throttled there (`on_dl_rq` or
    /// `dl_throttled` with `p->on_rq`).
    pub on_rq: bool,
    /// When its current run was last charged (`se.exec_start`).
    pub exec_start: u64,
    /// The tie-break of equal deadlines in the tree (enqueue order).
    pub seq: u64,
    /// The bandwidth admitted for it into its root domain (`dl_bw` once `sched_dl_overflow`
    /// accepted it); 0 when none is held.
    pub admitted_bw: u64,
    /// When the current job began (its last wakeup or creation), and its absolute deadline
    /// (begin + the relative deadline); 0: no job under way.
    pub job_deadline: u64,
    /// Jobs completed (a block or exit after a wakeup), of which after their deadline.
    pub jobs: u64,
    pub misses: u64,
    /// Times its runtime ran out (`dl_runtime_exceeded` → throttled).
    pub throttles: u64,
}

impl DlEntity {
    /// The state of a task that never was a deadline task.
    pub const NONE: DlEntity = DlEntity {
        params: DlParams {
            runtime_ns: 0,
            deadline_ns: 0,
            period_ns: 0,
            reclaim: false,
        },
        runtime: 0,
        deadline: 0,
        throttled: false,
        on_rq: false,
        exec_start: 0,
        seq: 0,
        admitted_bw: 0,
        job_deadline: 0,
        jobs: 0,
        misses: 0,
        throttles: 0,
    };
}

/// Where a task is in its life, as the host sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TaskState {
    /// Created but not yet enqueued.
    New,
    /// On a runqueue, waiting for a CPU.
    Queued,
    /// Current on the given CPU.
    Running(CpuId),
    /// Blocked; `uninterruptible` mirrors TASK_UNINTERRUPTIBLE (disk-style waits), which the
    /// O(1) estimator treats differently from ordinary sleeps.
    Sleeping { uninterruptible: bool },
    /// Exited.
    Dead,
}

/// The shared, policy-independent part of a task, plus the policy's private block `D`.
///
/// Laid out by hand (`repr(C)`, cache-line aligned), because with tens of thousands of runnable
/// tasks nearly every task a CPU switches to has been evicted since it last ran: the fields
/// every switch reads fill the first cache line, the policy's block (whose own hot fields,
/// the tree node and its key, come first) starts on the second, and what only balancing,
/// affinity changes or the RT class read comes last.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Task<D> {
    // --- first cache line: read at every switch ---
    pub state: TaskState,
    /// The CPU whose runqueue the task belongs to (`task_cpu(p)`).
    pub cpu: CpuId,
    /// Total CPU time consumed, ns.
    pub sum_exec_ns: u64,
    /// Host time (ns) of the last state change the policy cares about: when the task last went
    /// to sleep, was enqueued, or was switched in/out (the kernel's `p->timestamp`).
    pub timestamp_ns: u64,
    /// Host time the task last stopped running (`last_ran`).
    pub last_ran_ns: u64,
    pub id: TaskId,
    /// Address space identifier; threads of one process share it (2.4 goodness gives +1 to the
    /// same mm, and O(1) runs a forked child first only when it does not share the mm).
    pub mm: u32,
    /// -20..=19.
    pub nice: i32,
    pub policy: SchedPolicy,
    /// 1..=99 for FIFO/RR, 0 otherwise.
    pub rt_priority: u8,
    /// Utilisation clamps, min and max, in whole percent as cgroup v2's `cpu.uclamp.min` and
    /// `cpu.uclamp.max` take them ([0, 100]: no clamp). Cold, but in the first line's last
    /// two bytes of padding, where it costs no space.
    pub uclamp_pct: [u8; 2],
    // --- the policy's block, from the second cache line ---
    pub data: D,
    // --- colder ---
    /// The RT class's state (used when a stacked RT class queues the task).
    pub rt: RtEntity,
    pub cpus_allowed: CpuMask,
    /// Parent task, for fork/exit bookkeeping.
    pub parent: Option<TaskId>,
    /// `sched_attr.sched_runtime` of a SCHED_NORMAL task: the slice it asks for (EEVDF of
    /// 6.12+ honours it), none for the default.
    /// (`NonZeroU64`: the option costs no space in a task record.)
    pub slice_ns: Option<std::num::NonZeroU64>,
    /// The deadline class's state (`struct sched_dl_entity`), for a task that has been
    /// `SCHED_DEADLINE`; boxed, so that the record of every other task stays as small as it
    /// was (read it with [`Task::dl`], write it with [`Task::dl_mut`]).
    pub dl_entity: Option<Box<DlEntity>>,
}

// The shared hot fields must stay within the first line, so that `data` starts the second.
const _: () = assert!(std::mem::offset_of!(Task<()>, rt) <= 64);
// The deadline class's state is one pointer, within the padding the RT entity left: adding it
// changed no task record's size.
const _: () = assert!(std::mem::size_of::<RtEntity>() == 16);

impl<D: Default> Task<D> {
    pub fn new(id: TaskId) -> Self {
        Task {
            id,
            policy: SchedPolicy::Normal,
            nice: 0,
            rt_priority: 0,
            cpus_allowed: CpuMask::all(),
            cpu: 0,
            state: TaskState::New,
            mm: id.0,
            parent: None,
            slice_ns: None,
            uclamp_pct: [0, 100],
            sum_exec_ns: 0,
            timestamp_ns: 0,
            last_ran_ns: 0,
            rt: RtEntity::default(),
            dl_entity: None,
            data: D::default(),
        }
    }
}

impl<D> Task<D> {
    pub fn is_rt(&self) -> bool {
        self.policy.is_rt()
    }

    pub fn is_dl(&self) -> bool {
        self.policy.is_dl()
    }

    /// The deadline class's state (all zero for a task that never had one).
    #[inline]
    pub fn dl(&self) -> &DlEntity {
        self.dl_entity.as_deref().unwrap_or(&DlEntity::NONE)
    }

    /// The deadline class's state, made if the task has none yet.
    #[inline]
    pub fn dl_mut(&mut self) -> &mut DlEntity {
        self.dl_entity.get_or_insert_with(Default::default)
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, TaskState::Running(_))
    }

    /// CFS's `prio_to_weight` for this task's nice level: the neutral measure of entitlement
    /// the metrics use to normalise CPU time (designs.md §5.1, `v2.6.23:kernel/sched.c`).
    pub fn weight(&self) -> u64 {
        nice_to_weight(self.nice)
    }
}

/// `prio_to_weight[]` of Linux 2.6.23 (unchanged since): nice -20..19 → load weight.
pub const PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

pub fn nice_to_weight(nice: i32) -> u64 {
    PRIO_TO_WEIGHT[(nice.clamp(NICE_MIN, NICE_MAX) - NICE_MIN) as usize]
}

/// The host's task table, indexed by [`TaskId`]. Policies receive it mutably in every hook: in
/// the kernel's terms, a task's scheduling fields are protected by the lock of the runqueue the
/// task belongs to, and hooks only touch tasks of the runqueue(s) whose lock the host holds
/// (the global 2.4 recalculation loop holds the one global lock, which covers all tasks).
#[derive(Clone, Debug, Default)]
pub struct Tasks<D> {
    slots: Vec<Task<D>>,
}

impl<D: Default> Tasks<D> {
    pub fn new() -> Self {
        Tasks { slots: Vec::new() }
    }

    /// Creates a task with the next id.
    pub fn spawn(&mut self) -> TaskId {
        let id = TaskId(self.slots.len() as u32);
        self.slots.push(Task::new(id));
        id
    }
}

impl<D> Tasks<D> {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn get(&self, id: TaskId) -> &Task<D> {
        &self.slots[id.index()]
    }

    pub fn get_mut(&mut self, id: TaskId) -> &mut Task<D> {
        &mut self.slots[id.index()]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Task<D>> {
        self.slots.iter()
    }

    /// Two distinct tasks at once (parent and child at fork/exit).
    pub fn pair_mut(&mut self, a: TaskId, b: TaskId) -> (&mut Task<D>, &mut Task<D>) {
        assert_ne!(a, b, "pair_mut needs two distinct tasks");
        let (ai, bi) = (a.index(), b.index());
        if ai < bi {
            let (l, r) = self.slots.split_at_mut(bi);
            (&mut l[ai], &mut r[0])
        } else {
            let (l, r) = self.slots.split_at_mut(ai);
            (&mut r[0], &mut l[bi])
        }
    }
}

impl<D> Tasks<D> {
    /// A view for hooks, from exclusive access to the whole table (a single-threaded host).
    pub fn view(&mut self) -> TaskView<'_, D> {
        TaskView::new(&mut self.slots)
    }

    /// Lends a read-only view (for hooks that only read, such as `select_cpu`).
    pub fn with_view<R>(&self, f: impl FnOnce(&TaskView<'_, D>) -> R) -> R {
        let view = TaskView {
            base: std::ptr::NonNull::new(self.slots.as_ptr() as *mut Task<D>)
                .expect("slice pointer is never null"),
            len: self.slots.len(),
            _borrow: std::marker::PhantomData,
        };
        // Only a shared reference leaves this function, so nothing can write through it.
        f(&view)
    }
}

/// How scheduler hooks reach task state: a view of the host's task table.
///
/// A single-threaded host (the simulator) makes one with [`TaskView::new`] from an exclusive
/// borrow, which is safe. A host running hooks on several threads at once makes one per hook
/// call with [`TaskView::from_raw`] over a table that outlives it; the view holds a raw pointer
/// rather than a `&mut` to the whole table, so views on different threads do not alias each
/// other as references would. The host's side of the bargain is the kernel's rule: a task's
/// scheduling state is touched only under the lock of the runqueue the task belongs to, and a
/// hook receives only the runqueues whose locks are held.
pub struct TaskView<'a, D> {
    base: std::ptr::NonNull<Task<D>>,
    len: usize,
    _borrow: std::marker::PhantomData<&'a mut [Task<D>]>,
}

impl<'a, D> TaskView<'a, D> {
    pub fn new(slots: &'a mut [Task<D>]) -> Self {
        TaskView {
            base: std::ptr::NonNull::new(slots.as_mut_ptr()).expect("slice pointer is never null"),
            len: slots.len(),
            _borrow: std::marker::PhantomData,
        }
    }

    /// # Safety
    /// `base..base+len` must be valid, initialised tasks for `'a`, and while the view lives no
    /// other code may access the tasks this view is used to access (the lock discipline above).
    pub unsafe fn from_raw(base: std::ptr::NonNull<Task<D>>, len: usize) -> Self {
        TaskView {
            base,
            len,
            _borrow: std::marker::PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slot(&self, id: TaskId) -> *mut Task<D> {
        assert!(
            id.index() < self.len,
            "{id} is outside the task table ({} tasks)",
            self.len
        );
        // SAFETY: in bounds, checked above.
        unsafe { self.base.as_ptr().add(id.index()) }
    }

    pub fn get(&self, id: TaskId) -> &Task<D> {
        // SAFETY: valid per the constructor's contract; shared access through &self.
        unsafe { &*self.slot(id) }
    }

    pub fn get_mut(&mut self, id: TaskId) -> &mut Task<D> {
        // SAFETY: valid per the constructor's contract; exclusive through &mut self.
        unsafe { &mut *self.slot(id) }
    }

    /// Two distinct tasks at once (parent and child at fork/exit).
    pub fn pair_mut(&mut self, a: TaskId, b: TaskId) -> (&mut Task<D>, &mut Task<D>) {
        assert_ne!(a, b, "pair_mut needs two distinct tasks");
        // SAFETY: distinct slots, both valid; exclusive through &mut self.
        unsafe { (&mut *self.slot(a), &mut *self.slot(b)) }
    }
}

impl<D> std::ops::Index<TaskId> for TaskView<'_, D> {
    type Output = Task<D>;
    fn index(&self, id: TaskId) -> &Task<D> {
        self.get(id)
    }
}

impl<D> std::ops::IndexMut<TaskId> for TaskView<'_, D> {
    fn index_mut(&mut self, id: TaskId) -> &mut Task<D> {
        self.get_mut(id)
    }
}

// SAFETY: a view is a capability to reach tasks under the host's locking rule; moving it to
// another thread is what a concurrent host does with it.
unsafe impl<D: Send> Send for TaskView<'_, D> {}

/// Anything tasks can be looked up in: the owned table or a view of it.
pub trait TaskIndex<D>: std::ops::IndexMut<TaskId, Output = Task<D>> {}
impl<D, T: std::ops::IndexMut<TaskId, Output = Task<D>> + ?Sized> TaskIndex<D> for T {}

impl<D> std::ops::Index<TaskId> for Tasks<D> {
    type Output = Task<D>;
    fn index(&self, id: TaskId) -> &Task<D> {
        &self.slots[id.index()]
    }
}

impl<D> std::ops::IndexMut<TaskId> for Tasks<D> {
    fn index_mut(&mut self, id: TaskId) -> &mut Task<D> {
        &mut self.slots[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumask_ops() {
        let mut m = CpuMask::empty();
        m.set(3);
        m.set(200);
        assert!(m.contains(3) && m.contains(200) && !m.contains(4));
        assert_eq!(m.count(), 2);
        assert_eq!(m.iter(256).collect::<Vec<_>>(), vec![3, 200]);
        assert_eq!(m.iter(100).collect::<Vec<_>>(), vec![3]);
        m.clear(3);
        assert_eq!(m.count(), 1);
        assert!(CpuMask::first_n(4).and(&CpuMask::single(2)).contains(2));
    }

    #[test]
    fn only_cpu_is_the_single_allowed_cpu_below_the_limit() {
        // Against the plain count over every limit and a spread of masks, words' edges included.
        let masks = [
            vec![],
            vec![0],
            vec![5],
            vec![63],
            vec![64],
            vec![0, 1],
            vec![3, 200],
            vec![63, 64],
            vec![255],
            vec![2, 130, 255],
        ];
        for cpus in masks {
            let mut m = CpuMask::empty();
            for &c in &cpus {
                m.set(c);
            }
            for limit in [0, 1, 2, 4, 6, 63, 64, 65, 128, 131, 201, 256, 300] {
                let below: Vec<_> = m.iter(limit).collect();
                let want = (below.len() == 1).then(|| below[0]);
                assert_eq!(m.only_cpu(limit), want, "mask {cpus:?}, limit {limit}");
            }
        }
    }

    #[test]
    fn weights_follow_the_1_25_ratio() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        for n in -20..19 {
            let r = nice_to_weight(n) as f64 / nice_to_weight(n + 1) as f64;
            assert!((1.15..1.35).contains(&r), "nice {n}: ratio {r}");
        }
    }

    #[test]
    fn views_reach_the_same_tasks() {
        let mut t: Tasks<u32> = Tasks::new();
        let a = t.spawn();
        let b = t.spawn();
        let mut v = t.view();
        v[b].data = 7;
        let (x, y) = v.pair_mut(a, b);
        x.data = y.data + 1;
        assert_eq!(v.len(), 2);
        assert_eq!((t[a].data, t[b].data), (8, 7));
    }

    #[test]
    #[should_panic(expected = "outside the task table")]
    fn views_check_bounds() {
        let mut t: Tasks<u32> = Tasks::new();
        t.spawn();
        let v = t.view();
        let _ = &v[TaskId(5)];
    }

    #[test]
    fn pair_mut_returns_the_right_tasks() {
        let mut t: Tasks<()> = Tasks::new();
        let a = t.spawn();
        let b = t.spawn();
        let (x, y) = t.pair_mut(b, a);
        assert_eq!((x.id, y.id), (b, a));
    }
}
