//! Offset syncs: where forwarded records landed, written to MirrorMaker 2's offset-syncs topic
//! (so MM2's own tools translate with them) and kept in memory for Strait's checkpoints.
//!
//! MM2 writes a sync for a record when translation would otherwise lag by `offset.lag.max` or
//! the offsets jump, and a delayed one for the last record of a quiet partition. Strait knows
//! the exact target offset of every batch it forwarded, so it writes a sync for the first record
//! of every batch (and the delayed last one): a consumer group that stopped at a batch boundary
//! then translates exactly, with MM2's reader as well as Strait's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use bytes::Bytes;
use strait_client::KafkaClient;
use strait_wire::OffsetSync;

use crate::internal_topics::{ensure_compacted_topic, read_partition, write_records};
use crate::MirrorError;

/// Where a run of forwarded records landed: consecutive offsets on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetMapping {
    /// The source topic.
    pub source_topic: String,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// Source offset of the run's first record.
    pub source_offset: i64,
    /// Target offset the produce response gave the same record.
    pub target_offset: i64,
    /// Records in the run.
    pub records: i32,
}

/// Syncs kept in memory per partition for translation; older ones are dropped.
const HISTORY: usize = 4096;

/// The offset-syncs topic of one flow, and the translation it allows.
#[derive(Debug)]
pub struct OffsetSyncs {
    client: KafkaClient,
    cluster: String,
    topic: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Syncs to write at the next flush, in order.
    pending: Vec<OffsetSync>,
    /// The last forwarded record of each partition, written at the next flush too.
    delayed: BTreeMap<(String, i32), OffsetSync>,
    /// upstream → downstream, per partition.
    history: HashMap<(String, i32), BTreeMap<i64, i64>>,
}

impl OffsetSyncs {
    /// Opens (creating if needed) the offset-syncs `topic` on `client`'s cluster and loads what
    /// it holds (after compaction: at least the latest sync of every partition).
    pub async fn open(
        client: &KafkaClient,
        cluster: &str,
        topic: &str,
        replication_factor: i16,
    ) -> Result<Self, MirrorError> {
        ensure_compacted_topic(client, cluster, topic, 1, replication_factor).await?;
        let mut state = State::default();
        for (key, value) in read_partition(client, cluster, topic, 0).await? {
            // MM2's reader fails on foreign records; Strait skips them and says so.
            match (key, value) {
                (Some(key), Some(value)) => match OffsetSync::decode(&key, &value) {
                    Ok(sync) => state.remember(&sync),
                    Err(error) => tracing::warn!(topic, %error, "skipping a record that is not an offset sync"),
                },
                _ => tracing::warn!(topic, "skipping a record without key or value"),
            }
        }
        Ok(OffsetSyncs {
            client: client.clone(),
            cluster: cluster.into(),
            topic: topic.into(),
            state: Mutex::new(state),
        })
    }

    /// Takes note of an acknowledged run of records.
    pub fn record(&self, mapping: &OffsetMapping) {
        let sync = |upstream_offset, downstream_offset| OffsetSync {
            topic: mapping.source_topic.clone(),
            partition: mapping.partition,
            upstream_offset,
            downstream_offset,
        };
        let last = i64::from(mapping.records) - 1;
        let first = sync(mapping.source_offset, mapping.target_offset);
        let mut state = self.state.lock().expect("syncs lock");
        state.remember(&first);
        state.pending.push(first);
        let last = sync(mapping.source_offset + last, mapping.target_offset + last);
        state.remember(&last);
        state
            .delayed
            .insert((mapping.source_topic.clone(), mapping.partition), last);
    }

    /// The partition starts again at `start` of a recreated source topic: the syncs of the old
    /// topic at or past `start` no longer translate. With `downstream` (the target offset the
    /// next record lands on), a sync of the restart point is written, after the old topic's.
    pub(crate) fn restart(&self, topic: &str, partition: i32, start: i64, downstream: Option<i64>) {
        self.state
            .lock()
            .expect("syncs lock")
            .restart(topic, partition, start, downstream);
    }

    /// Writes the syncs noted since the last flush. Cancel-safe: what a failed or cut-short
    /// flush did not write is kept, ahead of newer syncs, for the next one.
    pub async fn flush(&self) -> Result<(), MirrorError> {
        self.write(self.take()).await
    }

    /// Takes the syncs noted since the last flush, to be written by [`OffsetSyncs::write`] or
    /// in a transaction (exactly-once mode, when the topic is on the target).
    pub(crate) fn take(&self) -> Vec<OffsetSync> {
        let mut state = self.state.lock().expect("syncs lock");
        let mut syncs = std::mem::take(&mut state.pending);
        syncs.extend(std::mem::take(&mut state.delayed).into_values());
        syncs
    }

    /// Writes `syncs`, taken before. Cancel-safe: what is not written goes back, ahead of the
    /// syncs noted since, for the next flush.
    pub(crate) async fn write(&self, syncs: Vec<OffsetSync>) -> Result<(), MirrorError> {
        let mut unwritten = Unwritten {
            state: &self.state,
            syncs,
            written: 0,
        };
        while unwritten.written < unwritten.syncs.len() {
            let chunk = &unwritten.syncs[unwritten.written..];
            let chunk = &chunk[..chunk.len().min(1000)];
            let records: Vec<(Bytes, Bytes)> = chunk.iter().map(|s| (s.key(), s.value())).collect();
            let written = chunk.len();
            write_records(&self.client, &self.cluster, &self.topic, 0, records).await?;
            unwritten.written += written;
        }
        Ok(())
    }

    /// The alias of the cluster the syncs topic is on.
    pub(crate) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The syncs topic (one partition, 0).
    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    /// The downstream offset for a group's upstream position, by MM2's rule: exact where a sync
    /// has that upstream offset, else one past the closest earlier sync (never past a record
    /// the group has not read); `None` when no sync is at or before it.
    pub fn translate(&self, topic: &str, partition: i32, upstream: i64) -> Option<i64> {
        self.state
            .lock()
            .expect("syncs lock")
            .translate(topic, partition, upstream)
    }
}

/// Syncs taken for a flush; those not written go back to the front of `pending` on drop.
struct Unwritten<'a> {
    state: &'a Mutex<State>,
    syncs: Vec<OffsetSync>,
    written: usize,
}

impl Drop for Unwritten<'_> {
    fn drop(&mut self) {
        if self.written < self.syncs.len() {
            let mut state = self.state.lock().expect("syncs lock");
            let newer = std::mem::take(&mut state.pending);
            state.pending = self.syncs.drain(self.written..).chain(newer).collect();
        }
    }
}

impl State {
    /// [`OffsetSyncs::restart`].
    fn restart(&mut self, topic: &str, partition: i32, start: i64, downstream: Option<i64>) {
        let key = (topic.to_owned(), partition);
        if let Some(history) = self.history.get_mut(&key) {
            history.split_off(&start);
        }
        // The old topic's last record goes out before the restart point, not after it.
        if let Some(last) = self.delayed.remove(&key) {
            self.pending.push(last);
        }
        if let Some(downstream_offset) = downstream {
            let sync = OffsetSync {
                topic: topic.to_owned(),
                partition,
                upstream_offset: start,
                downstream_offset,
            };
            self.remember(&sync);
            self.pending.push(sync);
        }
    }

    /// [`OffsetSyncs::translate`] with the syncs remembered.
    fn translate(&self, topic: &str, partition: i32, upstream: i64) -> Option<i64> {
        let history = self.history.get(&(topic.to_owned(), partition))?;
        let (&synced_upstream, &downstream) = history.range(..=upstream).next_back()?;
        Some(if synced_upstream == upstream {
            downstream
        } else {
            downstream + 1
        })
    }

    fn remember(&mut self, sync: &OffsetSync) {
        let history = self.history.entry((sync.topic.clone(), sync.partition)).or_default();
        // An upstream rewind (a recreated topic) makes the syncs at or past it meaningless.
        // `split_off` rather than `retain`: a one-record batch remembers the same offset twice,
        // and a scan of the whole history per batch cost as much CPU as the CRC.
        if history
            .last_key_value()
            .is_some_and(|(&last, _)| last >= sync.upstream_offset)
        {
            history.split_off(&sync.upstream_offset);
        }
        history.insert(sync.upstream_offset, sync.downstream_offset);
        while history.len() > HISTORY {
            history.pop_first();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(upstream_offset: i64, downstream_offset: i64) -> OffsetSync {
        OffsetSync {
            topic: "orders".into(),
            partition: 0,
            upstream_offset,
            downstream_offset,
        }
    }

    fn history(state: &State) -> Vec<(i64, i64)> {
        state.history[&("orders".to_owned(), 0)]
            .iter()
            .map(|(&upstream, &downstream)| (upstream, downstream))
            .collect()
    }

    #[test]
    fn the_same_upstream_offset_twice_keeps_the_latest_downstream() {
        let mut state = State::default();
        for s in [sync(0, 0), sync(10, 10), sync(10, 10), sync(11, 11)] {
            state.remember(&s);
        }
        assert_eq!(history(&state), [(0, 0), (10, 10), (11, 11)]);
    }

    #[test]
    fn an_upstream_rewind_drops_the_syncs_at_or_past_it() {
        let mut state = State::default();
        for s in [sync(0, 0), sync(10, 10), sync(20, 20), sync(30, 30)] {
            state.remember(&s);
        }
        // The source topic was recreated: its offset 10 now lands at 40.
        state.remember(&sync(10, 40));
        assert_eq!(history(&state), [(0, 0), (10, 40)]);
    }

    #[test]
    fn a_recreated_topic_is_not_translated_with_the_old_topics_syncs() {
        let mut state = State::default();
        for s in [sync(0, 0), sync(99, 99)] {
            state.remember(&s);
            state.pending.push(s);
        }
        state.delayed.insert(("t".into(), 0), sync(199, 199));
        // Unknown target end: no translation rather than the old topic's.
        let mut unknown = State::default();
        unknown.remember(&sync(0, 0));
        unknown.restart("t", 0, 0, None);
        assert_eq!(unknown.translate("t", 0, 50), None);
        // The new topic from offset 0 on lands from target offset 200 on.
        state.restart("t", 0, 0, Some(200));
        assert_eq!(state.translate("t", 0, 0), Some(200));
        assert_eq!(state.translate("t", 0, 50), Some(201));
        let pending: Vec<(i64, i64)> = state
            .pending
            .iter()
            .map(|s| (s.upstream_offset, s.downstream_offset))
            .collect();
        assert_eq!(
            pending,
            [(0, 0), (99, 99), (199, 199), (0, 200)],
            "the restart point last"
        );
        assert!(state.delayed.is_empty());
    }

    #[test]
    fn syncs_a_flush_did_not_write_go_back_ahead_of_newer_ones() {
        let state = Mutex::new(State::default());
        let unwritten = Unwritten {
            state: &state,
            syncs: vec![sync(0, 0), sync(10, 10), sync(20, 20)],
            written: 1,
        };
        state.lock().unwrap().pending.push(sync(30, 30));
        drop(unwritten);
        let pending: Vec<i64> = state
            .lock()
            .unwrap()
            .pending
            .iter()
            .map(|s| s.upstream_offset)
            .collect();
        assert_eq!(pending, [10, 20, 30]);
    }

    #[test]
    fn translation_is_exact_at_a_sync_and_one_past_the_closest_earlier_sync_between() {
        let mut state = State::default();
        // Batches of 100 source records landed 37 records further on at the target: syncs for
        // each batch's first and last record, as `OffsetSyncs::record` notes them.
        for (first, last) in [(0, 99), (100, 199)] {
            state.remember(&sync(first, first + 37));
            state.remember(&sync(last, last + 37));
        }
        let translate = |upstream| state.translate("orders", 0, upstream);
        assert_eq!(translate(100), Some(137), "exact at a batch boundary");
        assert_eq!(translate(0), Some(37));
        assert_eq!(translate(199), Some(236), "exact at a batch's last record");
        // Inside a batch: one past the batch's first record, never past a record the group has
        // not read (it read up to 149; 138 is the target offset of source record 101).
        assert_eq!(translate(150), Some(138));
        // Past the last sync: one past it, not a guess at where later records landed.
        assert_eq!(translate(500), Some(237));
        assert_eq!(state.translate("orders", 1, 100), None, "no sync for the partition");
        assert_eq!(state.translate("other", 0, 100), None, "no sync for the topic");
    }

    #[test]
    fn nothing_translates_before_the_first_sync() {
        let mut state = State::default();
        state.remember(&sync(1000, 5));
        assert_eq!(state.translate("orders", 0, 999), None, "no sync at or before 999");
        assert_eq!(state.translate("orders", 0, 1000), Some(5));
    }

    #[test]
    fn after_an_upstream_rewind_translation_uses_the_new_syncs_only() {
        let mut state = State::default();
        for s in [sync(0, 0), sync(50, 50), sync(100, 100)] {
            state.remember(&s);
        }
        // The source topic was recreated: its offset 0 now lands at 200.
        state.remember(&sync(0, 200));
        assert_eq!(state.translate("orders", 0, 0), Some(200));
        assert_eq!(state.translate("orders", 0, 100), Some(201), "not the old topic's 100");
    }

    #[test]
    fn history_keeps_the_newest_syncs_up_to_its_bound() {
        let mut state = State::default();
        for offset in 0..(HISTORY as i64 + 10) {
            state.remember(&sync(offset, offset + 100));
        }
        let kept = history(&state);
        assert_eq!(kept.len(), HISTORY);
        assert_eq!(kept[0], (10, 110));
    }
}
