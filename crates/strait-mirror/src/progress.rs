//! Where each source partition has been mirrored up to, stored where MirrorMaker 2 keeps it.
//!
//! MM2 (dedicated mode) stores the source connector's progress in the Connect offsets topic
//! `mm2-offsets.<source>.internal` on the target cluster: key
//! `["MirrorSourceConnector",{"cluster":"<source>","partition":<n>,"topic":"<topic>"}]`, value
//! `{"offset":<last replicated offset>}`, JSON, partitioned by Kafka's default partitioner.
//! Strait reads and writes exactly that, so it can take over from MM2 (and MM2 from Strait)
//! without re-mirroring, and operators find progress where they already look.
//!
//! Next to the offset Strait stores the source topic's ID (KIP-516) the position belongs to:
//! `{"offset":<n>,"topicId":"<id>"}`. Connect's reader takes `offset` alone and ignores other
//! fields (as older Strait does), so MM2 still takes over; a topic deleted and created again
//! under the same name has a new ID, and its position is not taken for the new topic's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use strait_client::{KafkaClient, TopicId};

use crate::internal_topics::{ensure_compacted_topic, read_partitions, write_records};
use crate::murmur2::partition_for_key;
use crate::MirrorError;

/// Partitions of the Connect offsets topic (Connect's `offset.storage.partitions` default).
const PARTITIONS: i32 = 25;

/// A source partition: `(topic, partition)`.
pub type SourcePartition = (String, i32);

/// Position records (key, value) by partition of the progress topic.
pub(crate) type PositionRecords = BTreeMap<i32, Vec<(Bytes, Bytes)>>;

/// The mirrored position of every source partition of one flow.
#[derive(Debug)]
pub struct ProgressStore {
    client: KafkaClient,
    topic: String,
    source_alias: String,
    target_alias: String,
    partitions: i32,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The position of every partition recorded or loaded.
    partitions: HashMap<SourcePartition, Arc<PartitionProgress>>,
    /// Records the load skipped because they could not be read.
    unreadable: usize,
    /// Partitions with a record skipped and none readable: where they stand is not known.
    unknown: HashSet<SourcePartition>,
}

/// One source partition's mirrored position: the data path records it through this handle
/// without a lock shared with other partitions, and the flush writes what changed.
#[derive(Debug)]
pub(crate) struct PartitionProgress {
    /// The last replicated source offset; [`NONE`] when nothing was recorded.
    last: AtomicI64,
    /// Whether `last` changed since the last flush.
    dirty: AtomicBool,
    /// The source topic's ID `last` belongs to, if known. Changed with `last` under this lock
    /// (a restart on a recreated topic), and read with it by the flush, so that a stored
    /// position never pairs one topic's offset with another's ID.
    topic_id: Mutex<Option<TopicId>>,
}

/// No position recorded.
const NONE: i64 = i64::MIN;

impl PartitionProgress {
    fn new(last: i64, topic_id: Option<TopicId>) -> Self {
        PartitionProgress {
            last: AtomicI64::new(last),
            dirty: AtomicBool::new(false),
            topic_id: Mutex::new(topic_id),
        }
    }

    /// The source topic's ID the position belongs to, if known.
    pub(crate) fn topic_id(&self) -> Option<TopicId> {
        *self.topic_id.lock().expect("progress lock")
    }

    /// The position belongs to topic `topic_id` (the one mirrored now); stored with the next
    /// position recorded.
    pub(crate) fn set_topic_id(&self, topic_id: Option<TopicId>) {
        *self.topic_id.lock().expect("progress lock") = topic_id;
    }

    /// The partition starts again at `start` of a new topic `topic_id` (the source topic was
    /// recreated): nothing of it is mirrored yet. Stored as `start - 1` (-1 for the log start,
    /// from which MM2 too starts at 0).
    pub(crate) fn restart(&self, start: i64, topic_id: Option<TopicId>) {
        let mut id = self.topic_id.lock().expect("progress lock");
        *id = topic_id;
        self.last.store(start - 1, Ordering::Release);
        self.dirty.store(true, Ordering::Release);
    }

    /// Every source offset up to `last_offset` is on the target (acknowledged), or needed no
    /// forwarding.
    pub(crate) fn record(&self, last_offset: i64) {
        self.last.store(last_offset, Ordering::Release);
        self.dirty.store(true, Ordering::Release);
    }

    /// The last replicated offset, if any.
    pub(crate) fn last(&self) -> Option<i64> {
        Some(self.last.load(Ordering::Acquire)).filter(|&last| last != NONE)
    }
}

impl ProgressStore {
    /// The name of the progress topic for flows from `source_alias`.
    pub fn topic_name(source_alias: &str) -> String {
        format!("mm2-offsets.{source_alias}.internal")
    }

    /// Opens (creating if needed) the progress topic of flows from `source_alias` on the target
    /// `target_alias` (`client`'s cluster) and loads it.
    pub async fn open(
        client: &KafkaClient,
        source_alias: &str,
        target_alias: &str,
        replication_factor: i16,
    ) -> Result<Self, MirrorError> {
        let topic = Self::topic_name(source_alias);
        let partitions = ensure_compacted_topic(client, target_alias, &topic, PARTITIONS, replication_factor).await?;
        Self::load(client, source_alias, target_alias, topic, partitions).await
    }

    /// Loads the progress topic without creating it; `None` if it does not exist (nothing was
    /// ever mirrored from `source_alias` to this cluster).
    pub async fn read(
        client: &KafkaClient,
        source_alias: &str,
        target_alias: &str,
    ) -> Result<Option<Self>, MirrorError> {
        let topic = Self::topic_name(source_alias);
        let metadata = client
            .metadata(Some(&[topic.as_str()]))
            .await
            .map_err(MirrorError::client_at(target_alias))?;
        match metadata.topics.get(&topic) {
            Some(t) if t.error == 0 && !t.partitions.is_empty() => {
                let partitions = t.partitions.len() as i32;
                Ok(Some(
                    Self::load(client, source_alias, target_alias, topic, partitions).await?,
                ))
            }
            _ => Ok(None),
        }
    }

    async fn load(
        client: &KafkaClient,
        source_alias: &str,
        target_alias: &str,
        topic: String,
        partitions: i32,
    ) -> Result<Self, MirrorError> {
        let store = ProgressStore {
            client: client.clone(),
            topic,
            source_alias: source_alias.into(),
            target_alias: target_alias.into(),
            partitions,
            state: Mutex::new(State::default()),
        };
        let mut state = State::default();
        let all: Vec<i32> = (0..partitions).collect();
        for (key, value) in read_partitions(client, target_alias, &store.topic, &all).await? {
            store.apply(&mut state, key.as_deref(), value.as_deref());
        }
        *store.state.lock().expect("progress lock") = state;
        Ok(store)
    }

    /// Loads the stored positions of `partitions` again, replacing what this process holds of
    /// them: another member of the group mirrored them meanwhile. Only for partitions the data
    /// path does not mirror now.
    pub(crate) async fn reload(&self, partitions: &HashSet<SourcePartition>) -> Result<(), MirrorError> {
        let mut fresh = State::default();
        let all: Vec<i32> = (0..self.partitions).collect();
        for (key, value) in read_partitions(&self.client, &self.target_alias, &self.topic, &all).await? {
            self.apply(&mut fresh, key.as_deref(), value.as_deref());
        }
        let mut state = self.state.lock().expect("progress lock");
        for key in partitions {
            match fresh.partitions.remove(key) {
                Some(progress) => state.partitions.insert(key.clone(), progress),
                None => state.partitions.remove(key),
            };
            match fresh.unknown.remove(key) {
                true => state.unknown.insert(key.clone()),
                false => state.unknown.remove(key),
            };
        }
        Ok(())
    }

    /// Applies one record of the offsets topic; other connectors' and clusters' keys are
    /// skipped. A record of this flow that cannot be read is skipped with a warning and
    /// counted: its partition keeps the last readable position, written again at the next
    /// flush (compaction would otherwise leave only the unreadable record).
    fn apply(&self, state: &mut State, key: Option<&[u8]>, value: Option<&[u8]>) {
        let Some(key) = key else { return };
        let Ok(serde_json::Value::Array(parts)) = serde_json::from_slice::<serde_json::Value>(key) else {
            return; // Not a Connect offsets key: someone else's record.
        };
        let (Some(connector), Some(partition)) = (parts.first(), parts.get(1)) else {
            return;
        };
        if connector != "MirrorSourceConnector" || partition["cluster"] != self.source_alias.as_str() {
            return;
        }
        let index = partition["partition"]
            .as_i64()
            .and_then(|index| i32::try_from(index).ok());
        let (Some(topic), Some(index)) = (partition["topic"].as_str(), index) else {
            tracing::warn!(topic = %self.topic, "skipping a position record whose key cannot be read: {}", String::from_utf8_lossy(key));
            state.unreadable += 1;
            return;
        };
        let source = (topic.to_owned(), index);
        match value {
            None => {
                state.partitions.remove(&source); // A tombstone resets the partition (KIP-875).
                state.unknown.remove(&source);
            }
            Some(value) => {
                let value_json = serde_json::from_slice::<serde_json::Value>(value).ok();
                let offset = value_json.as_ref().and_then(|v| v["offset"].as_i64());
                let Some(offset) = offset else {
                    state.unreadable += 1;
                    match state.partitions.get(&source) {
                        Some(last) => {
                            tracing::warn!(topic = %self.topic, "skipping an unreadable position of {}-{index} ({}); it goes on from the last readable one", source.0, String::from_utf8_lossy(value));
                            last.dirty.store(true, Ordering::Release);
                        }
                        None => {
                            tracing::warn!(topic = %self.topic, "skipping an unreadable position of {}-{index} ({}); no readable one is stored", source.0, String::from_utf8_lossy(value));
                            state.unknown.insert(source);
                        }
                    }
                    return;
                };
                state.unknown.remove(&source);
                // Written by MM2 or an older Strait: no ID, the position is taken as it is.
                let topic_id = value_json
                    .as_ref()
                    .and_then(|v| v["topicId"].as_str())
                    .and_then(|id| id.parse().ok());
                state
                    .partitions
                    .insert(source, Arc::new(PartitionProgress::new(offset, topic_id)));
            }
        }
    }

    /// Records the load skipped because they could not be read.
    pub(crate) fn unreadable_records(&self) -> usize {
        self.state.lock().expect("progress lock").unreadable
    }

    /// Whether the partition's stored position could not be read (and no earlier one either):
    /// it must start where nothing can be skipped.
    pub(crate) fn is_unknown(&self, topic: &str, partition: i32) -> bool {
        let state = self.state.lock().expect("progress lock");
        let key = (topic.to_owned(), partition);
        state.unknown.contains(&key) && state.partitions.get(&key).and_then(|p| p.last()).is_none()
    }

    /// The last replicated offset of a source partition, if any was recorded.
    pub fn last_replicated(&self, topic: &str, partition: i32) -> Option<i64> {
        self.state
            .lock()
            .expect("progress lock")
            .partitions
            .get(&(topic.to_owned(), partition))
            .and_then(|p| p.last())
    }

    /// The source topic ID the stored position of a source partition belongs to, if known.
    pub(crate) fn topic_id(&self, topic: &str, partition: i32) -> Option<TopicId> {
        let state = self.state.lock().expect("progress lock");
        state.partitions.get(&(topic.to_owned(), partition))?.topic_id()
    }

    /// The handle through which a partition's position is recorded.
    pub(crate) fn partition(&self, topic: &str, partition: i32) -> Arc<PartitionProgress> {
        self.state
            .lock()
            .expect("progress lock")
            .partitions
            .entry((topic.to_owned(), partition))
            .or_insert_with(|| Arc::new(PartitionProgress::new(NONE, None)))
            .clone()
    }

    /// Records that every source offset up to `last_offset` is on the target (acknowledged).
    pub fn record(&self, topic: &str, partition: i32, last_offset: i64) {
        self.partition(topic, partition).record(last_offset);
    }

    /// Writes the positions recorded since the last flush to the progress topic. Cancel-safe:
    /// what a failed or cut-short flush did not write, the next one writes.
    pub async fn flush(&self) -> Result<(), MirrorError> {
        let Some((batches, unwritten)) = self.take_due() else {
            return Ok(());
        };
        for (partition, records) in batches {
            write_records(&self.client, &self.target_alias, &self.topic, partition, records).await?;
        }
        unwritten.written();
        Ok(())
    }

    /// The progress topic's name.
    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    /// The positions recorded since they were last taken, as (key, value) records by partition
    /// of the progress topic; `None` if there are none. They stay due (for the next take) until
    /// the guard is told they were [`written`](Due::written), also when the caller's future is
    /// dropped half way.
    pub(crate) fn take_due(&self) -> Option<(PositionRecords, Due)> {
        type Position = (i64, Option<TopicId>);
        let dirty: Vec<(SourcePartition, Arc<PartitionProgress>, Position)> = {
            let state = self.state.lock().expect("progress lock");
            state
                .partitions
                .iter()
                .filter(|(_, p)| p.dirty.swap(false, Ordering::AcqRel))
                .filter_map(|(key, p)| {
                    // The offset read under the ID's lock: both of the same topic.
                    let topic_id = p.topic_id.lock().expect("progress lock");
                    Some((key.clone(), p.clone(), (p.last()?, *topic_id)))
                })
                .collect()
        };
        if dirty.is_empty() {
            return None;
        }
        let mut batches: BTreeMap<i32, Vec<(Bytes, Bytes)>> = BTreeMap::new();
        for ((topic, partition), _, (offset, topic_id)) in &dirty {
            let key = connect_offset_key(&self.source_alias, topic, *partition);
            let value = connect_offset_value(*offset, *topic_id);
            batches
                .entry(partition_for_key(key.as_bytes(), self.partitions))
                .or_default()
                .push((key.into(), value.into()));
        }
        Some((
            batches,
            Due(dirty.into_iter().map(|(_, progress, _)| progress).collect()),
        ))
    }
}

/// Positions taken for writing: due again when dropped, unless [`written`](Due::written).
pub(crate) struct Due(Vec<Arc<PartitionProgress>>);

impl Due {
    /// They were written: no longer due.
    pub(crate) fn written(mut self) {
        self.0.clear();
    }
}

impl Drop for Due {
    fn drop(&mut self) {
        for progress in &self.0 {
            progress.dirty.store(true, Ordering::Release);
        }
    }
}

/// The value of a position: MM2's `{"offset":<n>}`, with the source topic's ID when known
/// (Connect's reader ignores fields other than `offset`).
fn connect_offset_value(offset: i64, topic_id: Option<TopicId>) -> String {
    match topic_id {
        Some(id) => format!("{{\"offset\":{offset},\"topicId\":\"{id}\"}}"),
        None => format!("{{\"offset\":{offset}}}"),
    }
}

/// The Connect offsets key MM2's source connector uses, byte for byte (field order included,
/// since compaction keys on the exact bytes).
pub fn connect_offset_key(source_alias: &str, topic: &str, partition: i32) -> String {
    let json = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    format!(
        "[\"MirrorSourceConnector\",{{\"cluster\":{},\"partition\":{partition},\"topic\":{}}}]",
        json(source_alias),
        json(topic)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_byte_identical_to_mm2s() {
        assert_eq!(
            connect_offset_key("primary", "test-topic-1", 0),
            r#"["MirrorSourceConnector",{"cluster":"primary","partition":0,"topic":"test-topic-1"}]"#
        );
    }

    #[test]
    fn a_position_keeps_its_topic_id_and_stays_readable_as_mm2s() {
        let id: TopicId = "Ew4dN9ajRbGflXSHZy5Y1w".parse().unwrap();
        assert_eq!(id.to_string(), "Ew4dN9ajRbGflXSHZy5Y1w");
        let value = connect_offset_value(99, Some(id));
        assert_eq!(value, r#"{"offset":99,"topicId":"Ew4dN9ajRbGflXSHZy5Y1w"}"#);
        // What MM2 (and an older Strait) reads: `offset`, nothing else.
        let json: serde_json::Value = serde_json::from_str(&value).unwrap();
        assert_eq!(json["offset"].as_i64(), Some(99));
        assert_eq!(connect_offset_value(99, None), r#"{"offset":99}"#);
        let progress = PartitionProgress::new(99, Some(id));
        progress.restart(0, None);
        assert_eq!((progress.last(), progress.topic_id()), (Some(-1), None));
    }

    #[test]
    fn positions_a_flush_did_not_write_are_due_again() {
        let (written, unwritten) = (
            Arc::new(PartitionProgress::new(5, None)),
            Arc::new(PartitionProgress::new(7, None)),
        );
        Due(vec![written.clone()]).written();
        drop(Due(vec![unwritten.clone()]));
        assert!(!written.dirty.load(Ordering::Acquire));
        assert!(unwritten.dirty.load(Ordering::Acquire));
    }
}
