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
    /// The progress topic holds something we cannot read.
    #[error("progress topic {topic}: {message}")]
    Progress {
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
}

impl MirrorError {
    /// A request to cluster `cluster` failed with `error`.
    pub fn client(cluster: &str, error: strait_client::Error) -> MirrorError {
        MirrorError::Client {
            cluster: cluster.to_owned(),
            error,
        }
    }

    /// Whether trying again later can succeed (a cluster unreachable, a leader moving).
    pub fn is_retriable(&self) -> bool {
        matches!(self, MirrorError::Client { error, .. } if error.is_retriable())
    }
}
