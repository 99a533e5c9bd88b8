//! Source topics whose remote topic the target has not taken yet: refused (a topic policy, an
//! ACL, a config the target does not know) or waiting for brokers. Each is retried with
//! backoff and shown with the broker's reason until it mirrors.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::Stats;
use crate::internal_topics::now_ms;
use crate::metrics::PrometheusText;

/// Why one source topic does not mirror yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRefusal {
    /// The remote topic on the target.
    pub remote_topic: String,
    /// The Kafka error name, e.g. `TOPIC_AUTHORIZATION_FAILED` (as `strait_errors_total` names
    /// errors).
    pub reason: String,
    /// The whole error, with the broker's message.
    pub message: String,
}

/// A topic waiting since `since_ms`, tried `attempts` times.
#[derive(Debug, Clone)]
pub(super) struct Waiting {
    refusal: TopicRefusal,
    since_ms: i64,
    attempts: u64,
}

impl TopicRefusal {
    /// The refusal of `remote_topic` by `error`.
    pub(crate) fn new(remote_topic: &str, error: &strait_client::Error) -> TopicRefusal {
        TopicRefusal {
            remote_topic: remote_topic.to_owned(),
            reason: super::error_code(error),
            message: error.to_string(),
        }
    }
}

impl Stats {
    /// The topics a discovery round could not create (or grow), by source topic: these
    /// replace the last round's. A topic no longer refused was created.
    pub(crate) fn set_waiting_topics(&self, refused: BTreeMap<String, TopicRefusal>) {
        let now = now_ms();
        let mut waiting = self.waiting_topics.lock().expect("stats lock");
        let before = std::mem::take(&mut *waiting);
        for (topic, refusal) in refused {
            let entry = match before.get(&topic) {
                Some(old) => Waiting {
                    since_ms: old.since_ms,
                    attempts: old.attempts + 1,
                    refusal: refusal.clone(),
                },
                None => {
                    self.totals
                        .record_error(format!("topic {topic}"), refusal.message.clone());
                    Waiting {
                        refusal,
                        since_ms: now,
                        attempts: 1,
                    }
                }
            };
            let _ = waiting.insert(topic, entry);
        }
        for (topic, old) in before {
            if !waiting.contains_key(&topic) {
                tracing::info!(
                    flow = %self.flow(),
                    topic,
                    remote = old.refusal.remote_topic,
                    attempts = old.attempts,
                    "the target took the remote topic it refused before"
                );
            }
        }
    }

    /// The source topics that do not mirror because the target refused their remote topic,
    /// with why.
    pub fn waiting_topics(&self) -> Vec<(String, TopicRefusal)> {
        let waiting = self.waiting_topics.lock().expect("stats lock");
        waiting
            .iter()
            .map(|(topic, w)| (topic.clone(), w.refusal.clone()))
            .collect()
    }

    /// The waiting topics as `/status` shows them.
    pub fn waiting_topics_status(&self) -> Value {
        let waiting = self.waiting_topics.lock().expect("stats lock");
        Value::Array(
            waiting
                .iter()
                .map(|(topic, w)| {
                    json!({
                        "topic": topic,
                        "remote_topic": w.refusal.remote_topic,
                        "reason": w.refusal.reason,
                        "last_error": w.refusal.message,
                        "since_ms": w.since_ms,
                        "attempts": w.attempts,
                    })
                })
                .collect(),
        )
    }

    /// `strait_topics_waiting` (always, so that an alert has a series to watch), and
    /// `strait_topic_waiting` for each waiting topic, with its reason.
    pub(super) fn write_waiting_topics(&self, out: &mut PrometheusText) {
        let (source, target) = (self.source.as_str(), self.target.as_str());
        let waiting = self.waiting_topics.lock().expect("stats lock");
        out.gauge(
            "strait_topics_waiting",
            "Source topics not mirrored because the target refused to create (or grow) their remote topic; retried with backoff.",
            &[("source", source), ("target", target)],
            waiting.len() as f64,
        );
        for w in waiting.values() {
            out.gauge(
                "strait_topic_waiting",
                "1 for each remote topic the target refused to create (or grow), with the broker's reason; see /status.",
                &[
                    ("source", source),
                    ("target", target),
                    ("topic", w.refusal.remote_topic.as_str()),
                    ("reason", w.refusal.reason.as_str()),
                ],
                1.0,
            );
        }
    }
}
