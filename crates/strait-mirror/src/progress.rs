//! Where each source partition has been mirrored up to, stored where MirrorMaker 2 keeps it.
//!
//! MM2 (dedicated mode) stores the source connector's progress in the Connect offsets topic
//! `mm2-offsets.<source>.internal` on the target cluster: key
//! `["MirrorSourceConnector",{"cluster":"<source>","partition":<n>,"topic":"<topic>"}]`, value
//! `{"offset":<last replicated offset>}`, JSON, partitioned by Kafka's default partitioner.
//! Strait reads and writes exactly that, so it can take over from MM2 (and MM2 from Strait)
//! without re-mirroring, and operators find progress where they already look.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use bytes::Bytes;
use strait_client::KafkaClient;

use crate::internal::{ensure_compacted_topic, read_partitions, write_records};
use crate::murmur2::partition_for_key;
use crate::MirrorError;

/// Partitions of the Connect offsets topic (Connect's `offset.storage.partitions` default).
const PARTITIONS: i32 = 25;

/// A source partition: `(topic, partition)`.
pub type SourcePartition = (String, i32);

/// The mirrored position of every source partition of one flow.
#[derive(Debug)]
pub struct ProgressStore {
    client: KafkaClient,
    topic: String,
    source_alias: String,
    partitions: i32,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Last replicated source offset per partition.
    last: HashMap<SourcePartition, i64>,
    /// Entries changed since the last flush.
    dirty: BTreeMap<SourcePartition, i64>,
}

impl ProgressStore {
    /// The name of the progress topic for flows from `source_alias`.
    pub fn topic_name(source_alias: &str) -> String {
        format!("mm2-offsets.{source_alias}.internal")
    }

    /// Opens (creating if needed) the progress topic on the target and loads it.
    pub async fn open(client: &KafkaClient, source_alias: &str, replication_factor: i16) -> Result<Self, MirrorError> {
        let topic = Self::topic_name(source_alias);
        let partitions = ensure_compacted_topic(client, "target", &topic, PARTITIONS, replication_factor).await?;
        Self::load(client, source_alias, topic, partitions).await
    }

    /// Loads the progress topic without creating it; `None` if it does not exist (nothing was
    /// ever mirrored from `source_alias` to this cluster).
    pub async fn read(client: &KafkaClient, source_alias: &str) -> Result<Option<Self>, MirrorError> {
        let topic = Self::topic_name(source_alias);
        let metadata = client
            .metadata(Some(&[topic.as_str()]))
            .await
            .map_err(|error| MirrorError::Client {
                cluster: "target".into(),
                error,
            })?;
        match metadata.topics.get(&topic) {
            Some(t) if t.error == 0 && !t.partitions.is_empty() => {
                let partitions = t.partitions.len() as i32;
                Ok(Some(Self::load(client, source_alias, topic, partitions).await?))
            }
            _ => Ok(None),
        }
    }

    async fn load(
        client: &KafkaClient,
        source_alias: &str,
        topic: String,
        partitions: i32,
    ) -> Result<Self, MirrorError> {
        let store = ProgressStore {
            client: client.clone(),
            topic,
            source_alias: source_alias.into(),
            partitions,
            state: Mutex::new(State::default()),
        };
        let mut state = State::default();
        let all: Vec<i32> = (0..partitions).collect();
        for (key, value) in read_partitions(client, "target", &store.topic, &all).await? {
            store.apply(&mut state, key.as_deref(), value.as_deref())?;
        }
        *store.state.lock().expect("progress lock") = state;
        Ok(store)
    }

    fn corrupt(&self, message: String) -> MirrorError {
        MirrorError::Progress {
            topic: self.topic.clone(),
            message,
        }
    }

    /// Applies one record of the offsets topic; other connectors' and clusters' keys are skipped.
    fn apply(&self, state: &mut State, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<(), MirrorError> {
        let Some(key) = key else { return Ok(()) };
        let Ok(serde_json::Value::Array(parts)) = serde_json::from_slice::<serde_json::Value>(key) else {
            return Ok(()); // Not a Connect offsets key: someone else's record.
        };
        let (Some(connector), Some(partition)) = (parts.first(), parts.get(1)) else {
            return Ok(());
        };
        if connector != "MirrorSourceConnector" || partition["cluster"] != self.source_alias.as_str() {
            return Ok(());
        }
        let (Some(topic), Some(index)) = (partition["topic"].as_str(), partition["partition"].as_i64()) else {
            return Err(self.corrupt(format!("malformed key {}", String::from_utf8_lossy(key))));
        };
        let source = (topic.to_owned(), index as i32);
        match value {
            None => {
                state.last.remove(&source); // A tombstone resets the partition (KIP-875).
            }
            Some(value) => {
                let offset = serde_json::from_slice::<serde_json::Value>(value)
                    .ok()
                    .and_then(|v| v["offset"].as_i64())
                    .ok_or_else(|| self.corrupt(format!("malformed value {}", String::from_utf8_lossy(value))))?;
                state.last.insert(source, offset);
            }
        }
        Ok(())
    }

    /// The last replicated offset of a source partition, if any was recorded.
    pub fn last_replicated(&self, topic: &str, partition: i32) -> Option<i64> {
        self.state
            .lock()
            .expect("progress lock")
            .last
            .get(&(topic.to_owned(), partition))
            .copied()
    }

    /// Records that every source offset up to `last_offset` is on the target (acknowledged).
    pub fn record(&self, topic: &str, partition: i32, last_offset: i64) {
        let mut state = self.state.lock().expect("progress lock");
        let key = (topic.to_owned(), partition);
        state.last.insert(key.clone(), last_offset);
        state.dirty.insert(key, last_offset);
    }

    /// Writes the positions recorded since the last flush to the progress topic.
    pub async fn flush(&self) -> Result<(), MirrorError> {
        let dirty = std::mem::take(&mut self.state.lock().expect("progress lock").dirty);
        if dirty.is_empty() {
            return Ok(());
        }
        let mut batches: BTreeMap<i32, Vec<(Bytes, Bytes)>> = BTreeMap::new();
        for ((topic, partition), offset) in &dirty {
            let key = connect_offset_key(&self.source_alias, topic, *partition);
            let value = format!("{{\"offset\":{offset}}}");
            batches
                .entry(partition_for_key(key.as_bytes(), self.partitions))
                .or_default()
                .push((key.into(), value.into()));
        }
        for (partition, records) in batches {
            if let Err(error) = write_records(&self.client, "target", &self.topic, partition, records).await {
                // Put the entries back (unless newer ones arrived) so the next flush retries them.
                let mut state = self.state.lock().expect("progress lock");
                for (key, offset) in dirty {
                    state.dirty.entry(key).or_insert(offset);
                }
                return Err(error);
            }
        }
        Ok(())
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
}
