//! A flow's [`Stats`] as the `/status` JSON.

use serde_json::{json, Value};

use super::Stats;
use crate::internal_topics::now_ms;

impl Stats {
    /// The flow's periodic tasks as `/status` shows them: each with its state (`running` or
    /// `failing`) and last error.
    pub fn tasks_status(&self) -> Value {
        let tasks = self.tasks.lock().expect("stats lock");
        let tasks = tasks.iter().map(|(&task, failing)| {
            let state = if failing.is_some() { "failing" } else { "running" };
            (task.to_owned(), json!({ "state": state, "last_error": failing }))
        });
        Value::Object(tasks.collect())
    }

    /// The data path's workers as `/status` shows them: restarts by kind, and the workers
    /// waiting for their restart with why.
    pub fn workers_status(&self) -> Value {
        let workers = self.workers.lock().expect("stats lock");
        let restarts: serde_json::Map<String, Value> = super::WORKER_KINDS
            .iter()
            .map(|&kind| (kind.to_owned(), json!(workers.restarts.get(kind).copied().unwrap_or(0))))
            .collect();
        json!({ "restarts": restarts, "restarting": workers.down })
    }

    /// The flow as `/status` shows it: state, last error, the last errors with their time,
    /// counters, periodic tasks, and every partition.
    /// Holds no configuration, so no secret can leak through it.
    pub fn status(&self) -> Value {
        let now = now_ms();
        let (state, error) = self.state();
        let partitions = self.partitions.lock().expect("stats lock");
        let partitions: Vec<Value> = partitions
            .iter()
            .map(|((topic, partition), handle)| {
                let p = handle.inner.lock().expect("stats lock");
                let lag = p.lag(topic, &handle.remote_topic, *partition, now);
                json!({
                    "topic": topic,
                    "remote_topic": handle.remote_topic,
                    "partition": partition,
                    "state": p.state(),
                    "position": p.position,
                    "source_end": p.source_end,
                    "lag_records": lag.records,
                    "lag_seconds": lag.seconds,
                    "records": p.record_count,
                    "bytes": p.byte_count,
                    "gap_records": p.gap_records,
                    "resume_found_records": p.resume_found_records,
                    "resume_fallbacks": p.resume_fallbacks,
                    "source_recreations": p.source_recreations,
                    "last_error": p.error.as_ref().or(p.failing()),
                })
            })
            .collect();
        json!({
            "flow": self.flow(),
            "source": self.source,
            "target": self.target,
            "state": state.as_str(),
            "last_error": error,
            "records": self.records(),
            "bytes": self.bytes(),
            "gap_records": self.gap_records(),
            "unreadable_records": self.unreadable_records(),
            "resume_found_records": self.resume_found_records(),
            "resume_fallbacks": self.resume_fallbacks(),
            "source_recreations": self.source_recreations(),
            "last_heartbeat_ms": self.last_heartbeat_ms(),
            "recent_errors": self.recent_errors(),
            "tasks": self.tasks_status(),
            "workers": self.workers_status(),
            "waiting_topics": self.waiting_topics_status(),
            "partitions": partitions,
        })
    }
}
