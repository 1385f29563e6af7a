//! Classes written in Python: [`PyPolicy`], a [`SchedClass`] whose hooks call the methods of a
//! `schedkit.Policy` object (`python/schedkit/policy.py`), so that the simulator runs it
//! through the scheduler core unchanged, as it runs a class written in Rust
//! (`schedkit::sim::simulate_class`, the stack an `ExternalPolicy`'s entry builds).
//!
//! The Python object owns its runqueues (Python objects of its own); its hooks receive plain
//! values (task ids, CPU numbers, nice levels, the clock in ns) and return plain values. The
//! adapter keeps what the core needs of every class besides: which tasks each CPU's runqueue
//! holds, in the order they were enqueued (for `nr_running`, the invariant audit's
//! `for_each_queued`, and the check of each pick). It reports no work: a Python class's
//! decisions cost only what the core and the machine charge any class (locks, switches, IPIs).
//!
//! Each hook runs holding the GIL (the run keeps it: the hooks need it all the time). A hook
//! has no way to return an error to the core, so a failure (a Python exception, a value of the
//! wrong type, a task not queued on that CPU, a CPU outside the machine or the task's affinity)
//! is recorded, first one kept, and from then on the adapter answers each pick with a task id
//! that does not exist and each CPU selection with a CPU that does not exist: the core refuses
//! those (`schedule()`'s check of a pick, `check_cpu`) and ends the run at its next decision,
//! and the binding reports the recorded failure in place of the core's refusal. Until then the
//! adapter's own record of the runqueues stays exact, so nothing the core checks can break.
//!
//! Simulator only: the runtime host runs hooks on several worker threads, each of which would
//! wait for the GIL; it is not offered.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};
use schedkit::class::{
    CpuView, Ctx, DequeueKind, EnqueueKind, LockLayout, Rq, SchedClass, WakeKind,
};
use schedkit::ds::work::Work;
use schedkit::machine::Topology;
use schedkit::task::{CpuId, TaskId, TaskView};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

/// A task id that no task has: the pick that ends a failed run.
const NO_TASK: TaskId = TaskId(u32::MAX);

/// The hooks a subclass may leave to `schedkit.Policy`'s defaults, which do nothing (or answer
/// `False`): the adapter does not call those it did not override.
#[derive(Clone, Copy, Default)]
struct Overrides {
    fork: bool,
    exit: bool,
    put_prev: bool,
    tick: bool,
    wakeup_preempt: bool,
}

/// A Python `schedkit.Policy` as a scheduling class.
pub struct PyPolicy {
    obj: Py<PyAny>,
    name: &'static str,
    ncpus: usize,
    overrides: Overrides,
    failure: Arc<OnceLock<String>>,
}

/// The adapter's part of a runqueue: the tasks it holds (queued or running), in enqueue order.
#[derive(Debug, Default)]
pub struct PyRq {
    tasks: Vec<TaskId>,
}

/// Class names live as long as the process (`SchedClass::name` is `&'static str`): each
/// distinct name is leaked once.
fn static_name(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}

fn describe(v: &Bound<'_, PyAny>) -> String {
    let repr = v
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into());
    let ty = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{repr} ({ty})")
}

fn enqueue_why(k: EnqueueKind) -> &'static str {
    match k {
        EnqueueKind::Wakeup { .. } => "wakeup",
        EnqueueKind::New => "new",
        EnqueueKind::Migrate => "migrate",
        EnqueueKind::Restore => "restore",
    }
}

fn dequeue_why(k: DequeueKind) -> &'static str {
    match k {
        DequeueKind::Sleep => "sleep",
        DequeueKind::Migrate => "migrate",
        DequeueKind::Save => "save",
        DequeueKind::Exit => "exit",
    }
}

impl PyPolicy {
    /// The adapter of `obj` (an instance of a `schedkit.Policy` subclass, whose `setup` the
    /// caller has run) named `name`, for a machine of `ncpus` CPUs; `failure` receives the
    /// first failure of a hook.
    pub fn new(
        py: Python<'_>,
        obj: Py<PyAny>,
        name: &str,
        ncpus: usize,
        failure: Arc<OnceLock<String>>,
    ) -> PyResult<PyPolicy> {
        let base = py.import("schedkit")?.getattr("Policy")?;
        let ty = obj.bind(py).get_type();
        let own =
            |hook: &str| -> PyResult<bool> { Ok(!ty.getattr(hook)?.is(&base.getattr(hook)?)) };
        let overrides = Overrides {
            fork: own("fork")?,
            exit: own("exit")?,
            put_prev: own("put_prev")?,
            tick: own("tick")?,
            wakeup_preempt: own("wakeup_preempt")?,
        };
        Ok(PyPolicy {
            obj,
            name: static_name(name),
            ncpus,
            overrides,
            failure,
        })
    }

    /// Runs the object's `setup(ncpus)`, at the start of a run, before any task exists (where
    /// a Rust class is built from `BuildEnv`).
    pub fn setup(&self, py: Python<'_>) {
        let n = self.ncpus;
        self.tell(py, "setup", (n,), || format!("ncpus={n}"));
    }

    fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    fn fail(&self, what: String) {
        let _ = self.failure.set(format!("class {}: {what}", self.name));
    }

    /// Calls hook `hook` with `args` (shown as `shown` in errors) and hands its result to
    /// `read`; `None` when the class has failed, now or before.
    fn call<'py, A, R>(
        &self,
        py: Python<'py>,
        hook: &str,
        args: A,
        shown: impl FnOnce() -> String,
        read: impl FnOnce(&Bound<'py, PyAny>) -> Result<R, String>,
    ) -> Option<R>
    where
        A: IntoPyObject<'py, Target = PyTuple>,
    {
        if self.failed() {
            return None;
        }
        match self.obj.bind(py).call_method1(hook, args) {
            Ok(v) => match read(&v) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.fail(format!(
                        "{hook}({}) returned {}: {e}",
                        shown(),
                        describe(&v)
                    ));
                    None
                }
            },
            Err(e) => {
                let tb = e
                    .traceback(py)
                    .and_then(|t| t.format().ok())
                    .unwrap_or_default();
                self.fail(format!("{hook}({}) raised {e}\n{tb}", shown()));
                None
            }
        }
    }

    /// A hook whose answer is a yes or no (`True`, `False` or `None`).
    fn ask<'py, A>(
        &self,
        py: Python<'py>,
        hook: &str,
        args: A,
        shown: impl FnOnce() -> String,
    ) -> bool
    where
        A: IntoPyObject<'py, Target = PyTuple>,
    {
        self.call(py, hook, args, shown, |v| {
            if v.is_none() {
                Ok(false)
            } else if let Ok(b) = v.downcast::<PyBool>() {
                Ok(b.is_true())
            } else {
                Err("expected True, False or None".into())
            }
        })
        // A failed class asks for a reschedule everywhere, so that a pick ends the run soon.
        .unwrap_or(true)
    }

    /// A hook that only informs the class.
    fn tell<'py, A>(&self, py: Python<'py>, hook: &str, args: A, shown: impl FnOnce() -> String)
    where
        A: IntoPyObject<'py, Target = PyTuple>,
    {
        self.call(py, hook, args, shown, |_| Ok(()));
    }
}

type C<'a> = Ctx<'a, ()>;

impl SchedClass for PyPolicy {
    type Rq = PyRq;
    type TaskData = ();

    fn name(&self) -> &'static str {
        self.name
    }
    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }
    fn new_rq(&self, _domain: usize, _topology: &Topology) -> PyRq {
        PyRq::default()
    }
    fn task_fork(
        &self,
        _ctx: &mut C,
        _rq: &mut Rq<PyRq>,
        cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        if !self.overrides.fork {
            return false;
        }
        let parent = parent.map(|p| p.0);
        Python::with_gil(|py| {
            self.ask(py, "fork", (child.0, parent, cpu), || {
                format!("task={}, parent={parent:?}, cpu={cpu}", child.0)
            })
        })
    }
    fn task_exit(&self, _ctx: &mut C, _rq: &mut Rq<PyRq>, child: TaskId, _parent: Option<TaskId>) {
        if self.overrides.exit {
            Python::with_gil(|py| {
                self.tell(py, "exit", (child.0,), || format!("task={}", child.0))
            });
        }
    }
    fn enqueue(&self, ctx: &mut C, rq: &mut Rq<PyRq>, cpu: CpuId, t: TaskId, kind: EnqueueKind) {
        rq.class.tasks.push(t);
        rq.nr_running += 1;
        let (nice, now, why) = (ctx.tasks[t].nice, ctx.now, enqueue_why(kind));
        Python::with_gil(|py| {
            self.tell(py, "enqueue", (cpu, t.0, nice, now, why), || {
                format!(
                    "cpu={cpu}, task={}, nice={nice}, now={now}, why={why:?}",
                    t.0
                )
            })
        });
    }
    fn dequeue(&self, ctx: &mut C, rq: &mut Rq<PyRq>, cpu: CpuId, t: TaskId, kind: DequeueKind) {
        if let Some(i) = rq.class.tasks.iter().position(|&x| x == t) {
            rq.class.tasks.remove(i);
        }
        rq.nr_running -= 1;
        let (now, why) = (ctx.now, dequeue_why(kind));
        Python::with_gil(|py| {
            self.tell(py, "dequeue", (cpu, t.0, now, why), || {
                format!("cpu={cpu}, task={}, now={now}, why={why:?}", t.0)
            })
        });
    }
    fn put_prev(&self, ctx: &mut C, _rq: &mut Rq<PyRq>, cpu: CpuId, prev: TaskId) {
        if self.overrides.put_prev {
            let now = ctx.now;
            Python::with_gil(|py| {
                self.tell(py, "put_prev", (cpu, prev.0, now), || {
                    format!("cpu={cpu}, task={}, now={now}", prev.0)
                })
            });
        }
    }
    fn pick_next(&self, ctx: &mut C, rq: &mut Rq<PyRq>, cpu: CpuId) -> Option<TaskId> {
        let now = ctx.now;
        let shown = || format!("cpu={cpu}, now={now}");
        let held = &rq.class.tasks;
        let pick = Python::with_gil(|py| {
            self.call(py, "pick_next", (cpu, now), shown, |v| {
                if v.is_none() {
                    return Ok(None);
                }
                if v.is_instance_of::<PyBool>() {
                    return Err("expected a task id (int) or None".into());
                }
                let t = v
                    .extract::<u32>()
                    .map_err(|_| "expected a task id (int) or None".to_string())?;
                if !held.contains(&TaskId(t)) {
                    // The first few of what it holds: enough to see the mistake.
                    const SHOWN: usize = 16;
                    let ids: Vec<u32> = held.iter().take(SHOWN).map(|x| x.0).collect();
                    let more = match held.len() {
                        n if n > SHOWN => format!(", the first {SHOWN} of {n}"),
                        _ => String::new(),
                    };
                    return Err(format!(
                        "a task not queued on CPU {cpu} (its runqueue holds {ids:?}{more})"
                    ));
                }
                Ok(Some(TaskId(t)))
            })
        });
        match pick {
            Some(p) => p,
            None => Some(NO_TASK),
        }
    }
    fn task_tick(&self, ctx: &mut C, _rq: &mut Rq<PyRq>, cpu: CpuId, curr: TaskId) -> bool {
        if !self.overrides.tick {
            return self.failed();
        }
        let now = ctx.now;
        Python::with_gil(|py| {
            self.ask(py, "tick", (cpu, curr.0, now), || {
                format!("cpu={cpu}, task={}, now={now}", curr.0)
            })
        })
    }
    fn yield_task(&self, ctx: &mut C, _rq: &mut Rq<PyRq>, cpu: CpuId, curr: TaskId) -> bool {
        let now = ctx.now;
        Python::with_gil(|py| {
            self.ask(py, "yield_task", (cpu, curr.0, now), || {
                format!("cpu={cpu}, task={}, now={now}", curr.0)
            })
        })
    }
    fn check_preempt_wakeup(
        &self,
        ctx: &mut C,
        rq: &mut Rq<PyRq>,
        cpu: CpuId,
        woken: TaskId,
        _sync: bool,
    ) -> bool {
        if !self.overrides.wakeup_preempt {
            return self.failed();
        }
        let (now, curr) = (ctx.now, rq.curr_on(cpu).map(|c| c.0));
        Python::with_gil(|py| {
            self.ask(py, "wakeup_preempt", (cpu, curr, woken.0, now), || {
                format!("cpu={cpu}, curr={curr:?}, woken={}, now={now}", woken.0)
            })
        })
    }
    fn select_cpu(
        &self,
        tasks: &TaskView<'_, ()>,
        view: &CpuView,
        _ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let n = view.ncpus();
        let p = &tasks[t];
        let allowed: Vec<CpuId> = p.cpus_allowed.iter(n).collect();
        let nr: Vec<usize> = (0..n).map(|c| view.cpu(c).nr_running).collect();
        let (prev, fork) = (p.cpu, kind == WakeKind::Fork);
        let shown = || {
            format!(
                "task={}, prev_cpu={prev}, waker_cpu={waker_cpu}, fork={fork}",
                t.0
            )
        };
        let cpu = Python::with_gil(|py| {
            let args = (t.0, prev, waker_cpu, allowed.clone(), nr, fork);
            self.call(py, "select_cpu", args, shown, |v| {
                if v.is_instance_of::<PyBool>() {
                    return Err("expected a CPU number (int)".into());
                }
                let c = v
                    .extract::<usize>()
                    .map_err(|_| "expected a CPU number (int)".to_string())?;
                if c >= self.ncpus {
                    return Err(format!("a CPU outside the machine's 0..{}", self.ncpus));
                }
                if !allowed.contains(&c) {
                    return Err(format!("a CPU outside the task's affinity {allowed:?}"));
                }
                Ok(c)
            })
        });
        // A CPU no machine has: the core's check ends a failed run.
        cpu.unwrap_or(usize::MAX)
    }
    fn for_each_queued(&self, rq: &Rq<PyRq>, _tasks: &TaskView<'_, ()>, f: &mut dyn FnMut(TaskId)) {
        rq.class.tasks.iter().copied().for_each(f);
    }
}
