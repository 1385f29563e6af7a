//! The kernel's data structures, below the class interface (the kernel's `list.h`, `lib/` and
//! the `struct rt_rq`/`struct root_domain` that `sched.h` embeds in every runqueue):
//!
//! - `list`: an intrusive doubly-linked task list (`list_head`);
//! - `prio_array`: `struct prio_array`, 140 FIFO lists and a find-first-bit bitmap;
//! - `rbtree`: an intrusive red-black tree with a cached leftmost node and an augmented
//!   subtree minimum (`rb_root_cached`);
//! - `dl_rq`: the deadline class's runqueue data (`DlRq`) and root domain (cpudl, bandwidth);
//! - `rt_rq`: the RT class's runqueue data (`RtRq`) and root domain (overload mask, cpupri);
//! - `work`: the work a path reports (`OpCounter`, the cache `Line`s it touches and the
//!   `LineSink` it reports them to), which every structure here reports into itself.
//!
//! Depends only on `task` (the task table the intrusive links live in). Must never depend on
//! `class`, `policy`, `sched_core`, a host (`sim`, `runtime`), `workload` or `metrics`: the
//! classes, the core and the hosts are built on these, not the other way round.

pub mod dl_rq;
pub mod list;
pub mod prio_array;
pub mod rbtree;
pub mod rt_rq;
pub mod work;
