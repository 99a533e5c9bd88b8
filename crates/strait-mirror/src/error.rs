/// Why the mirror (or one of its partitions) stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    /// A request to a cluster failed in a way retrying does not fix.
    #[error("{cluster} cluster: {error}")]
    Client {
        /// The cluster alias.
        cluster: String,
        /// The client error (it carries Kafka's error code by name).
        #[source]
        error: strait_client::Error,
    },
    /// A fetched batch could not be parsed or forwarded.
    #[error(
        "{topic}-{partition} at offset {offset}: {error}; the partition is stopped so that nothing is skipped silently"
    )]
    Batch {
        /// The source topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The source offset of the batch (or of the position inside it).
        offset: i64,
        /// What was wrong with the batch.
        #[source]
        error: strait_wire::WireError,
    },
    /// The target refused a batch for good (e.g. MESSAGE_TOO_LARGE, INVALID_RECORD).
    #[error("{topic}-{partition}: the target refused the batch of source offsets {first}..={last}: {error}")]
    Refused {
        /// The source topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// First source offset of the batch.
        first: i64,
        /// Last source offset of the batch.
        last: i64,
        /// The target's error.
        #[source]
        error: strait_client::Error,
    },
    /// One of the mirror's own compacted topics (progress, checkpoints, offset syncs,
    /// heartbeats) holds batches that cannot be read.
    #[error("internal topic {topic}: {message}")]
    InternalTopic {
        /// The topic.
        topic: String,
        /// What is wrong.
        message: String,
    },
    /// At shutdown, the target did not acknowledge the batches on the wire in time; a restart
    /// fetches them again.
    #[error(
        "{flow}: {partitions} partition(s) had batches the target did not acknowledge within {within:?} \
         (task.shutdown.graceful.timeout.ms); a restart fetches them again"
    )]
    NotDrained {
        /// The flow, `source->target`.
        flow: String,
        /// How long the drain was given.
        within: std::time::Duration,
        /// Partitions with fetched, unacknowledged batches.
        partitions: usize,
    },
    /// At shutdown, the final write of `what` (progress, offset syncs) did not finish in time.
    #[error("the final {what} write did not finish within {within:?} (task.shutdown.graceful.timeout.ms)")]
    NotStored {
        /// What was being written.
        what: &'static str,
        /// How long the write was given.
        within: std::time::Duration,
    },
    /// Exactly-once mode: another producer took over the flow's `transactional.id`; this one
    /// must write nothing more. Boxed: it is rare and large.
    #[error("{0}")]
    Fenced(Box<FencedProducer>),
    /// Exactly-once mode: the open transaction was aborted (a Produce request failed, or its
    /// answers did not come in time); the flow starts again from its committed positions.
    #[error("{flow}: transaction aborted ({why}); starting again from the committed positions")]
    TransactionAborted {
        /// The flow, `source->target`.
        flow: String,
        /// Why it was aborted.
        why: String,
    },
}

/// A transactional producer that another took the `transactional.id` from (a second Strait
/// with the same configuration, or this one after it was frozen while its work moved on).
#[derive(Debug, thiserror::Error)]
#[error(
    "{cluster} cluster: the transactional producer `{transactional_id}` was fenced: {error}; either another Strait \
     process took this flow over with the same transactional id (run one process per configuration), or a \
     transaction outlived transaction.timeout.ms and the coordinator aborted it; this one stops writing"
)]
pub struct FencedProducer {
    /// The target cluster alias.
    pub cluster: String,
    /// The `transactional.id`.
    pub transactional_id: String,
    /// The broker's answer.
    #[source]
    pub error: strait_client::Error,
}

impl MirrorError {
    /// A request to cluster `cluster` failed with `error`.
    pub fn client(cluster: &str, error: strait_client::Error) -> MirrorError {
        MirrorError::Client {
            cluster: cluster.to_owned(),
            error,
        }
    }

    /// [`MirrorError::client`] for `cluster`, to hand to `map_err`.
    pub fn client_at(cluster: &str) -> impl Fn(strait_client::Error) -> MirrorError + Copy + '_ {
        move |error| MirrorError::client(cluster, error)
    }

    /// The batch of `topic`-`partition` at source `offset` could not be parsed or forwarded.
    pub fn batch(topic: &str, partition: i32, offset: i64, error: strait_wire::WireError) -> MirrorError {
        MirrorError::Batch {
            topic: topic.to_owned(),
            partition,
            offset,
            error,
        }
    }

    /// The target refused the batch of source offsets `first..=last` of `topic`-`partition` for good.
    pub fn refused(topic: &str, partition: i32, first: i64, last: i64, error: strait_client::Error) -> MirrorError {
        MirrorError::Refused {
            topic: topic.to_owned(),
            partition,
            first,
            last,
            error,
        }
    }

    /// The internal topic `topic` holds batches we cannot read.
    pub fn internal_topic(topic: &str, message: impl Into<String>) -> MirrorError {
        MirrorError::InternalTopic {
            topic: topic.to_owned(),
            message: message.into(),
        }
    }

    /// Whether trying again later can succeed (a cluster unreachable, a leader moving).
    pub fn is_retriable(&self) -> bool {
        matches!(self, MirrorError::Client { error, .. } if error.is_retriable())
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn wrapped_errors_are_sources_and_quoted() {
        let unreachable = strait_client::Error::NoBroker("none of bootstrap.servers answered".into());
        let error = MirrorError::client_at("target")(unreachable);
        assert_eq!(error.to_string(), "target cluster: none of bootstrap.servers answered");
        assert_eq!(
            error.source().map(|s| s.to_string()).as_deref(),
            Some("none of bootstrap.servers answered")
        );
        assert!(error.is_retriable());

        let wire = strait_wire::WireError::UnsupportedMagic {
            base_offset: 10,
            magic: 1,
        };
        let error = MirrorError::batch("t", 3, 10, wire.clone());
        assert!(error.to_string().starts_with("t-3 at offset 10: "));
        assert_eq!(error.source().map(|s| s.to_string()), Some(wire.to_string()));
        assert!(!error.is_retriable());
    }

    #[test]
    fn internal_topics_are_not_called_the_progress_topic() {
        let error = MirrorError::internal_topic("mm2-offset-syncs.B.internal", "no progress reading partition 0");
        assert_eq!(
            error.to_string(),
            "internal topic mm2-offset-syncs.B.internal: no progress reading partition 0"
        );
    }
}
