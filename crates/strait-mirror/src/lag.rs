//! Replication lag read from the clusters, for `strait lag` and `strait status`: the source log
//! end offset minus the mirrored position stored on the target, computed the way Kafka's
//! consumer-groups tool computes a group's lag.

use strait_client::{KafkaClient, OffsetSpec};
use strait_config::{AutoOffsetReset, ClientRole, FlowConfig};
use strait_wire::{Heartbeat, RecordBatches};

use crate::client_config::connect;
use crate::discovery::replicated_topics;
use crate::internal_topics::{now_ms, read_tail};
use crate::{MirrorError, PartitionLag, ProgressStore};

/// Heartbeats looked at for the latest one: a few seconds' worth from every flow into the target.
const HEARTBEATS_READ: i64 = 200;
/// Bytes asked for when reading the record at a position for its timestamp (a broker returns
/// the whole first batch even if it is larger).
const TIMESTAMP_FETCH_BYTES: i32 = 64 * 1024;

/// What the clusters say about a flow, running or not.
#[derive(Debug, Clone)]
pub struct FlowReport {
    /// Every partition's lag.
    pub lag: Vec<PartitionLag>,
    /// When the flow's heartbeat emitter last wrote to the target (epoch ms): a running mirror
    /// (Strait or MM2) writes one every `emit.heartbeats.interval.seconds`.
    pub last_heartbeat_ms: Option<i64>,
}

/// Reads [`FlowReport`] from the clusters.
pub async fn read_flow_report(flow: &FlowConfig) -> Result<FlowReport, MirrorError> {
    let source = connect(&flow.source, ClientRole::Admin).await?;
    let target = connect(&flow.target, ClientRole::Admin).await?;
    let progress = ProgressStore::read(&target, &flow.source.alias, &flow.target.alias).await?;
    let lag = read_lag_with(flow, &source, progress.as_ref()).await?;
    let last_heartbeat_ms = last_heartbeat(flow, &target).await?;
    Ok(FlowReport { lag, last_heartbeat_ms })
}

async fn last_heartbeat(flow: &FlowConfig, target: &KafkaClient) -> Result<Option<i64>, MirrorError> {
    let topic = flow.policy.heartbeats_topic();
    let metadata = target
        .metadata(Some(&[topic]))
        .await
        .map_err(MirrorError::client_at(&flow.target.alias))?;
    if metadata.topics.get(topic).is_none_or(|t| t.error != 0) {
        return Ok(None);
    }
    let records = read_tail(target, &flow.target.alias, topic, 0, HEARTBEATS_READ).await?;
    Ok(records
        .iter()
        .filter_map(|(key, value)| Heartbeat::decode(key.as_deref()?, value.as_deref()?).ok())
        .filter(|h| h.source_cluster_alias == flow.source.alias && h.target_cluster_alias == flow.target.alias)
        .map(|h| h.timestamp)
        .max())
}

/// The lag of every partition `flow` replicates, from the clusters (no running mirror needed).
///
/// A partition with no stored position yet counts from where the mirror would start
/// (`auto.offset.reset`). `seconds` is the age of the first record not mirrored, by the
/// timestamp of the source batch holding it (`None` if it cannot be read).
pub async fn read_lag(flow: &FlowConfig) -> Result<Vec<PartitionLag>, MirrorError> {
    let source = connect(&flow.source, ClientRole::Admin).await?;
    let target = connect(&flow.target, ClientRole::Admin).await?;
    let progress = ProgressStore::read(&target, &flow.source.alias, &flow.target.alias).await?;
    read_lag_with(flow, &source, progress.as_ref()).await
}

async fn read_lag_with(
    flow: &FlowConfig,
    source: &KafkaClient,
    progress: Option<&ProgressStore>,
) -> Result<Vec<PartitionLag>, MirrorError> {
    let fail = MirrorError::client_at(&flow.source.alias);
    let metadata = source.metadata(None).await.map_err(fail)?;
    let mut lags = Vec::new();
    for (topic, topic_metadata) in replicated_topics(flow, &metadata) {
        let partitions: Vec<i32> = topic_metadata.partitions.iter().map(|p| p.partition).collect();
        let ends = source
            .list_offsets(topic, &partitions, OffsetSpec::Latest)
            .await
            .map_err(fail)?;
        let starts = source
            .list_offsets(topic, &partitions, OffsetSpec::Earliest)
            .await
            .map_err(fail)?;
        for partition in partitions {
            let position = progress
                .and_then(|p| p.last_replicated(topic, partition))
                .map(|last| last + 1);
            let end = ends.get(&partition).copied();
            let from = position.or_else(|| match flow.source_auto_offset_reset {
                AutoOffsetReset::Latest => end,
                _ => starts.get(&partition).copied(),
            });
            let records = match (end, from) {
                (Some(end), Some(from)) => (end - from).max(0),
                _ => 0,
            };
            let seconds = match from {
                _ if records == 0 => Some(0.0),
                Some(from) => first_timestamp_at(source, topic, partition, from)
                    .await
                    .map(|timestamp| (now_ms() - timestamp).max(0) as f64 / 1000.0),
                None => None,
            };
            lags.push(PartitionLag {
                topic: topic.clone(),
                remote_topic: flow.remote_topic(topic),
                partition,
                position,
                source_end: end,
                records,
                seconds,
            });
        }
    }
    Ok(lags)
}

/// The timestamp of the batch holding `offset` (see `RecordBatch::first_timestamp`), if the
/// source returns it; the lag in records does not depend on it, so a failure only leaves
/// the seconds out.
async fn first_timestamp_at(source: &KafkaClient, topic: &str, partition: i32, offset: i64) -> Option<i64> {
    let fetched = source
        .fetch(topic, partition, offset, TIMESTAMP_FETCH_BYTES, false)
        .await
        .ok()?;
    let batch = RecordBatches::new(fetched.records)
        .filter_map(Result::ok)
        .find(|batch| batch.last_offset() >= offset)?;
    Some(batch.first_timestamp()).filter(|timestamp| *timestamp >= 0)
}
