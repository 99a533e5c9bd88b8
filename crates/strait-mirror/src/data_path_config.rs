//! Everything the data path of a flow needs, set up by the flow: its clients, settings and
//! stores.

use std::sync::Arc;
use std::time::Duration;

use strait_client::{FetchParams, KafkaClient};

use crate::budget::Budget;
use crate::offset_map::OffsetMap;
use crate::offset_syncs::OffsetSyncs;
use crate::progress::ProgressStore;
use crate::sink::producer::ProduceSettings;
use crate::sink::transaction::Transaction;
use crate::Stats;

/// Where a partition starts when no progress is stored (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// From the log start.
    Earliest,
    /// From the log end.
    Latest,
}

/// Everything the data path of a flow needs.
#[derive(Debug)]
pub(crate) struct DataPathConfig {
    pub source: KafkaClient,
    pub target: KafkaClient,
    pub source_alias: String,
    pub target_alias: String,
    /// The source consumer's Fetch settings.
    pub fetch: FetchParams,
    /// `max.partition.fetch.bytes`.
    pub partition_max_bytes: i32,
    /// How long a preferred read replica is used (`metadata.max.age.ms`).
    pub preferred_lease: Duration,
    pub produce: ProduceSettings,
    /// Fetchers (connections) per source broker (`strait.fetchers.per.broker`).
    pub fetchers_per_broker: u16,
    /// Producers (connections) per target broker (`strait.producers.per.broker`).
    pub producers_per_broker: u16,
    pub reset: OffsetReset,
    pub budget: Arc<Budget>,
    pub stats: Arc<Stats>,
    pub progress: Arc<ProgressStore>,
    pub offset_map: Arc<OffsetMap>,
    pub syncs: Option<Arc<OffsetSyncs>>,
    /// Exactly-once mode: the flow's transaction, begun (its producer id fenced) before the
    /// positions were read.
    pub transaction: Option<Arc<Transaction>>,
}
