//! [`Point`]: one run of a sweep, everything its result depends on; its key (what a resumed
//! sweep matches rows by), its input columns, and its JSON (what a cluster worker is sent).

use crate::class::RtBalance;
use crate::machine::Governor;
use crate::workload::LockMode;
use serde_json::{Map, Value};

/// One run of a sweep: everything its result depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub policy: String,
    /// A shipped profile's name or a profile's path (resolved against the grid's folder).
    pub machine: String,
    pub workload: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub rt_balance: RtBalance,
    pub lock_mode: LockMode,
    pub governor: Option<Governor>,
}

impl Point {
    /// A stable text naming the point: equal inputs, equal keys (used to resume a sweep).
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}",
            self.policy,
            self.machine,
            self.workload,
            self.seed,
            self.duration_ns,
            self.rt_balance.name(),
            self.lock_mode.name(),
            self.governor.map_or("-", |g| g.name())
        )
    }

    /// The point's input columns.
    pub fn columns(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("key".into(), self.key().into());
        m.insert("policy".into(), self.policy.clone().into());
        m.insert("machine".into(), self.machine.clone().into());
        m.insert("workload".into(), self.workload.clone().into());
        m.insert("seed".into(), self.seed.into());
        m.insert("duration_s".into(), (self.duration_ns as f64 / 1e9).into());
        m.insert("rt_balance".into(), self.rt_balance.name().into());
        m.insert("lock_mode".into(), self.lock_mode.name().into());
        m.insert(
            "governor".into(),
            self.governor.map_or(Value::Null, |g| g.name().into()),
        );
        m
    }
}

impl Point {
    /// The point as a JSON object (what a cluster worker is sent), with its `key`, which
    /// [`Point::from_json`] does not read.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "key": self.key(),
            "policy": self.policy,
            "machine": self.machine,
            "workload": self.workload,
            "seed": self.seed,
            "duration_ns": self.duration_ns,
            "rt_balance": self.rt_balance.name(),
            "lock_mode": self.lock_mode.name(),
            "governor": self.governor.map(|g| g.name()),
        })
    }

    /// The point back from [`Point::to_json`]'s object, every field checked.
    pub fn from_json(v: &Value) -> Result<Point, String> {
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("point: '{k}' missing or not a string"))
        };
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("point: '{k}' missing or not an unsigned number"))
        };
        Ok(Point {
            policy: text("policy")?,
            machine: text("machine")?,
            workload: text("workload")?,
            seed: num("seed")?,
            duration_ns: num("duration_ns")?,
            rt_balance: RtBalance::parse(&text("rt_balance")?)?,
            lock_mode: LockMode::parse(&text("lock_mode")?)?,
            governor: match v.get("governor") {
                None | Some(Value::Null) => None,
                Some(g) => Some(Governor::parse(
                    g.as_str().ok_or("point: 'governor' is not a string")?,
                )?),
            },
        })
    }
}
