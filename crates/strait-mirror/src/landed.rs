//! Where a partition resumes after a crash in at-least-once mode: the batches the target
//! acknowledged past the stored position are recognised, and not sent again.
//!
//! Progress is stored every second, after the target acknowledged; a crash (SIGKILL, OOM, a
//! power cut) loses what was acknowledged since. The target still holds it, and the records
//! section of a forwarded batch travels byte for byte (only the header changes: base offset,
//! producer fields, CRC), so a batch on the target is recognised by its records section, record
//! count and base timestamp. Batches rebuilt on the slow path (compacted batches, a position
//! inside a batch) are rebuilt here the same way, deterministically, and compared as rebuilt.
//!
//! At a partition's start from stored progress, the source batches after the stored position
//! are replayed as its cursor would forward them ([`SourceReplay`]), and the target is read
//! from where the last stored batch landed (the offset map says) to its log end, each batch
//! walked against the replay ([`TargetWalk`]). The idempotent producer lands a partition's
//! batches in order, so once a batch is found every batch before it landed too: mirroring
//! resumes after the last one found, and the offset map, offset syncs and progress learn
//! where they landed. When that last batch has an identical twin earlier in the replay, the
//! copy on the target may be a resend of the twin: then nothing is assumed, the partition
//! resumes at the stored position as before, and the fallback is counted.
//!
//! Exactly-once mode never gets here: what it did not commit, consumers never see.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strait_client::{KafkaClient, OffsetSpec};
use strait_wire::{rebuild_batch, AbortedTransactionFilter, BatchVerdict, RecordBatch, RecordBatches};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::budget::Budget;
use crate::data_path_config::DataPathConfig;
use crate::offset_syncs::OffsetMapping;
use crate::outgoing::mappings;
use crate::route::Route;
use crate::source::cursor::check_fetched;
use crate::{MirrorError, Translation};

/// Batches of the replay held at most per partition (their fingerprints, not their bytes):
/// past it, batches found further on are not recognised, and are sent again.
const MAX_EXPECTED: usize = 100_000;
/// Partitions whose target and source are read at once.
const CONCURRENCY: usize = 8;
/// How long the reads of one start may take before the partitions not done resume at their
/// stored position (the data path waits meanwhile).
const WITHIN: Duration = Duration::from_secs(60);

/// What a forwarded batch looks like on the target, whatever header it carries there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Fingerprint {
    records: i32,
    base_timestamp: i64,
    payload_len: usize,
    /// CRC-32C of the records section.
    payload_crc: u32,
}

impl Fingerprint {
    fn of(batch: &RecordBatch) -> Fingerprint {
        let payload = batch.records_payload();
        Fingerprint {
            records: batch.records_count(),
            base_timestamp: batch.base_timestamp(),
            payload_len: payload.len(),
            payload_crc: crc32c::crc32c(&payload),
        }
    }
}

/// A batch the partition's cursor forwards from the stored position, and where its records
/// came from.
#[derive(Debug)]
struct Expected {
    fingerprint: Fingerprint,
    /// The source offset of its first record.
    source_base: i64,
    records: i32,
    /// For a batch rebuilt on the slow path, the source offset of each record.
    source_offsets: Option<Vec<i64>>,
    /// The last source offset it covers (skipped offsets after its records included).
    source_last: i64,
}

/// The source batches after a position, as the partition's cursor forwards them: control
/// batches, aborted transactions (under read_committed) and empty batches give nothing; compacted
/// batches and a position inside a batch are rebuilt; the others go as they are. No I/O.
#[derive(Debug)]
pub(crate) struct SourceReplay {
    position: i64,
    read_committed: bool,
    expected: Vec<Expected>,
    /// Records of the expected batches.
    records: i64,
    /// Whether the replay reached a batch its cursor would not forward (unreadable, corrupt, or
    /// beyond the bound): nothing after it is expected.
    ended: bool,
}

impl SourceReplay {
    /// A replay from `position`.
    pub(crate) fn new(position: i64, read_committed: bool) -> SourceReplay {
        SourceReplay {
            position,
            read_committed,
            expected: Vec::new(),
            records: 0,
            ended: false,
        }
    }

    /// Where the next fetch starts.
    pub(crate) fn position(&self) -> i64 {
        self.position
    }

    /// Records the replay expects on the target.
    pub(crate) fn records(&self) -> i64 {
        self.records
    }

    /// Whether nothing more is to be replayed.
    pub(crate) fn is_ended(&self) -> bool {
        self.ended
    }

    /// Replays one fetch's record set, with its aborted transactions and the partition's high
    /// watermark.
    pub(crate) fn take(&mut self, records: Bytes, aborted_transactions: Vec<(i64, i64)>, high_watermark: i64) {
        let mut filter = AbortedTransactionFilter::new(aborted_transactions);
        for batch in RecordBatches::new(records) {
            if self.ended {
                return;
            }
            // A batch the cursor stops at, or refetches (it may come back intact, but the
            // replay need not wait for it): what lies past it is not expected.
            let Ok(batch) = batch else {
                self.ended = true;
                return;
            };
            if check_fetched(&batch, self.position, high_watermark).is_err() || batch.compression().is_err() {
                self.ended = true;
                return;
            }
            let verdict = if self.read_committed {
                filter.check(&batch)
            } else {
                BatchVerdict::Forward
            };
            if verdict != BatchVerdict::Forward || batch.is_control() || batch.records_count() == 0 {
                self.position = batch.next_offset();
                continue;
            }
            let expected = if batch.is_compacted() || batch.base_offset() < self.position {
                match rebuild_batch(&batch, self.position) {
                    Ok(Some(rebuilt)) => Expected {
                        fingerprint: Fingerprint::of(&rebuilt.batch),
                        source_base: batch.base_offset(),
                        records: rebuilt.batch.records_count(),
                        source_offsets: Some(rebuilt.source_offsets),
                        source_last: batch.last_offset(),
                    },
                    Ok(None) => {
                        self.position = batch.next_offset();
                        continue;
                    }
                    Err(_) => {
                        self.ended = true;
                        return;
                    }
                }
            } else {
                Expected {
                    fingerprint: Fingerprint::of(&batch),
                    source_base: batch.base_offset(),
                    records: batch.records_count(),
                    source_offsets: None,
                    source_last: batch.last_offset(),
                }
            };
            self.position = expected.source_last + 1;
            self.records += i64::from(expected.records);
            self.expected.push(expected);
            if self.expected.len() == MAX_EXPECTED {
                self.ended = true;
            }
        }
    }
}

/// The target's batches after where the last stored batch landed, walked in log order against
/// a replay: each batch is taken for the first batch of the replay not found yet that it is
/// identical to (an earlier one: a resend, after a new producer id, of a batch found before).
/// Batches identical to none are another writer's. No I/O.
#[derive(Debug)]
pub(crate) struct TargetWalk {
    expected: Vec<Expected>,
    /// The indexes of the expected batches of each fingerprint, in order.
    by_fingerprint: HashMap<Fingerprint, Vec<usize>>,
    /// Where each expected batch was found on the target (its base offset).
    found: Vec<Option<i64>>,
    /// The index after the last batch found.
    next: usize,
}

/// What the walk found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Landed {
    /// None of the replayed batches is on the target: resume at the stored position.
    Nothing,
    /// Batches are on the target up to source offset `last`: resume after it. `records` of
    /// them landed; `mappings` say where (none for a batch found only by the order, its copy
    /// gone from the target).
    Found {
        last: i64,
        records: i64,
        mappings: Vec<OffsetMapping>,
    },
    /// The last batch found has an identical twin before it in the replay, so its copy on the
    /// target may be a resend of the twin: resume at the stored position (and count it).
    /// `records` is how many of them may be written again.
    Ambiguous { records: i64 },
}

impl TargetWalk {
    /// A walk against what `replay` expects.
    pub(crate) fn new(replay: SourceReplay) -> TargetWalk {
        let mut by_fingerprint: HashMap<Fingerprint, Vec<usize>> = HashMap::new();
        for (i, expected) in replay.expected.iter().enumerate() {
            by_fingerprint.entry(expected.fingerprint).or_default().push(i);
        }
        TargetWalk {
            found: vec![None; replay.expected.len()],
            expected: replay.expected,
            by_fingerprint,
            next: 0,
        }
    }

    /// The next target batch, in log order.
    pub(crate) fn see(&mut self, batch: &RecordBatch) {
        // Strait's at-least-once batches are neither transactional nor control batches.
        if batch.is_control() || batch.is_transactional() {
            return;
        }
        let Some(indexes) = self.by_fingerprint.get(&Fingerprint::of(batch)) else {
            return;
        };
        if let Some(&i) = indexes.iter().find(|&&i| i >= self.next) {
            self.found[i] = Some(batch.base_offset());
            self.next = i + 1;
        }
    }

    /// What the walk found, for the partition `source_topic`-`partition`.
    pub(crate) fn landed(self, source_topic: &str, partition: i32) -> Landed {
        let Some(last) = self.next.checked_sub(1) else {
            return Landed::Nothing;
        };
        let records: i64 = self.expected[..=last].iter().map(|e| i64::from(e.records)).sum();
        let twins = &self.by_fingerprint[&self.expected[last].fingerprint];
        if twins[0] < last {
            return Landed::Ambiguous { records };
        }
        let mappings = self.expected[..=last]
            .iter()
            .zip(&self.found)
            .filter_map(|(e, found)| {
                let target_base = (*found)?;
                Some(mappings(
                    source_topic,
                    partition,
                    e.source_base,
                    e.records,
                    e.source_offsets.as_deref(),
                    target_base,
                ))
            })
            .flatten()
            .collect();
        Landed::Found {
            last: self.expected[last].source_last,
            records,
            mappings,
        }
    }
}

/// Moves the start of each partition of `started` that starts from stored progress past what
/// the target acknowledged after it, and records where those batches landed (offset map,
/// offset syncs, progress). Only for at-least-once mode. A partition whose reads fail resumes
/// at its stored position, counted as a fallback.
pub(crate) async fn skip_landed(config: &DataPathConfig, started: &mut [(Route, i64)]) {
    if config.transaction.is_some() {
        return;
    }
    let flow = config.stats.flow();
    // Where the last stored batch of each partition landed, from the offset map.
    let mut from: Vec<(usize, i64)> = Vec::new();
    for (i, (route, start)) in started.iter().enumerate() {
        let stored = config.progress.last_replicated(&route.source_topic, route.partition);
        if stored != Some(*start - 1) {
            continue; // Started by auto.offset.reset: nothing of it was mirrored.
        }
        match config
            .offset_map
            .translate(&route.source_topic, route.partition, *start, Some(*start))
        {
            Translation::Exact(target) => from.push((i, target)),
            // Progress from MM2, or a map pruned past it: where it landed is not known.
            other => tracing::debug!(flow, topic = %route.source_topic, partition = route.partition,
                "not looking for batches past the stored position on the target: {other}"),
        }
    }
    // Partitions whose target holds something past it, with the target's log end.
    let mut by_topic: HashMap<&str, Vec<(usize, i64)>> = HashMap::new();
    for (i, target) in from {
        by_topic
            .entry(&started[i].0.target_topic.0)
            .or_default()
            .push((i, target));
    }
    let mut reads = Vec::new();
    for (topic, partitions) in by_topic {
        let indexes: Vec<i32> = partitions.iter().map(|&(i, _)| started[i].0.partition).collect();
        match config.target.list_offsets(topic, &indexes, OffsetSpec::Latest).await {
            Ok(ends) => reads.extend(partitions.into_iter().filter_map(|(i, from)| {
                let end = ends[&started[i].0.partition];
                (from < end).then_some((i, from, end))
            })),
            Err(error) => {
                for (i, _) in partitions {
                    fall_back(
                        config,
                        &started[i],
                        &format!("the target's log end cannot be read: {error}"),
                    );
                }
            }
        }
    }
    if reads.is_empty() {
        return;
    }
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let mut tasks = JoinSet::new();
    let mut pending: Vec<usize> = reads.iter().map(|&(i, _, _)| i).collect();
    for (i, from, end) in reads {
        let read = Read {
            route: started[i].0.clone(),
            stored: started[i].1,
            from,
            end,
            source: (config.source.clone(), config.source_alias.clone()),
            target: (config.target.clone(), config.target_alias.clone()),
            read_committed: config.fetch.read_committed,
            max_bytes: config.partition_max_bytes.max(64 * 1024),
            budget: config.budget.clone(),
        };
        let permits = permits.clone();
        tasks.spawn(async move {
            let _permit = permits.acquire().await;
            (i, read.landed().await)
        });
    }
    let deadline = tokio::time::Instant::now() + WITHIN;
    while let Ok(Some(joined)) = tokio::time::timeout_at(deadline, tasks.join_next()).await {
        let Ok((i, landed)) = joined else { continue };
        pending.retain(|&p| p != i);
        match landed {
            Ok(landed) => apply(config, &mut started[i], landed),
            Err(error) => fall_back(config, &started[i], &error.to_string()),
        }
    }
    tasks.abort_all();
    for i in pending {
        fall_back(
            config,
            &started[i],
            &format!("reading the target and the source did not end within {WITHIN:?}"),
        );
    }
}

/// One partition's reads: the source replayed from the stored position, the target walked from
/// `from` to `end`.
struct Read {
    route: Route,
    stored: i64,
    from: i64,
    end: i64,
    /// The clusters, with their aliases.
    source: (KafkaClient, String),
    target: (KafkaClient, String),
    read_committed: bool,
    max_bytes: i32,
    budget: Arc<Budget>,
}

impl Read {
    async fn landed(self) -> Result<Landed, MirrorError> {
        let source_topic = self.route.source_topic.as_str();
        let target_topic = self.route.target_topic.0.as_str();
        let partition = self.route.partition;
        // The source, until the replay holds as many records as the target past `from`: the
        // batches found there cannot hold more.
        let mut replay = SourceReplay::new(self.stored, self.read_committed);
        while !replay.is_ended() && replay.records() < self.end - self.from {
            let (client, alias) = &self.source;
            let fetched = client
                .fetch(
                    source_topic,
                    partition,
                    replay.position(),
                    self.max_bytes,
                    self.read_committed,
                )
                .await
                .map_err(MirrorError::client_at(alias))?;
            let _held = self.budget.charge(fetched.records.len());
            let before = replay.position();
            replay.take(fetched.records, fetched.aborted_transactions, fetched.high_watermark);
            let source_end = match self.read_committed {
                true => fetched.last_stable_offset,
                false => fetched.high_watermark,
            };
            if replay.position() == before || replay.position() >= source_end {
                break;
            }
        }
        // The target, from where the last stored batch landed to its end.
        let mut walk = TargetWalk::new(replay);
        let mut position = self.from;
        while position < self.end {
            let (client, alias) = &self.target;
            let fetched = client
                .fetch(target_topic, partition, position, self.max_bytes, false)
                .await
                .map_err(MirrorError::client_at(alias))?;
            let _held = self.budget.charge(fetched.records.len());
            let before = position;
            for batch in RecordBatches::new(fetched.records) {
                let Ok(batch) = batch else { break };
                if batch.base_offset() >= self.from {
                    walk.see(&batch);
                }
                position = position.max(batch.next_offset());
            }
            if position == before {
                break;
            }
        }
        Ok(walk.landed(source_topic, partition))
    }
}

/// Applies what was found to a partition's start, and records it.
fn apply(config: &DataPathConfig, (route, start): &mut (Route, i64), landed: Landed) {
    let stats = config
        .stats
        .partition(&route.source_topic, &route.target_topic.0, route.partition);
    match landed {
        Landed::Nothing => {}
        Landed::Found {
            last,
            records,
            mappings,
        } => {
            tracing::info!(flow = %config.stats.flow(), topic = %route.source_topic, partition = route.partition,
                records, "found on the target up to source offset {last}, past the stored position {}: not sent again", *start - 1);
            // Where they landed, before the position that relies on it.
            for mapping in &mappings {
                config.offset_map.record(mapping);
                if let Some(syncs) = &config.syncs {
                    syncs.record(mapping);
                }
            }
            config.progress.record(&route.source_topic, route.partition, last);
            stats.record_resume_found(records);
            *start = last + 1;
        }
        Landed::Ambiguous { records } => fall_back(
            config,
            &(route.clone(), *start),
            &format!(
                "the last of the {records} records found there is identical to an earlier batch, so its copy may be a resend; up to {records} records may be written again"
            ),
        ),
    }
}

/// A partition resumes at its stored position, what the target holds past it unrecognised.
fn fall_back(config: &DataPathConfig, (route, start): &(Route, i64), why: &str) {
    tracing::warn!(flow = %config.stats.flow(), topic = %route.source_topic, partition = route.partition,
        "resuming at the stored position {start} without looking past it on the target: {why}");
    config
        .stats
        .partition(&route.source_topic, &route.target_topic.0, route.partition)
        .record_resume_fallback();
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};
    use strait_wire::{ProducerState, RecordBatchBuilder};

    use super::*;

    /// A batch of `values` stored at source offset `base`, each record stamped `timestamp`.
    fn batch_of(base: i64, values: &[&str], timestamp: i64, producer: ProducerState) -> Bytes {
        let mut builder = RecordBatchBuilder::new().producer(producer);
        for value in values {
            builder.push(None, Some(Bytes::copy_from_slice(value.as_bytes())), vec![], timestamp);
        }
        at(builder.build(), base)
    }

    fn batch(base: i64, values: &[&str], timestamp: i64) -> Bytes {
        batch_of(base, values, timestamp, ProducerState::NONE)
    }

    /// `bytes` with base offset `base`, as a broker stores it.
    fn at(bytes: Bytes, base: i64) -> Bytes {
        let mut bytes = BytesMut::from(&bytes[..]);
        (&mut bytes[..8]).put_i64(base);
        bytes.freeze()
    }

    /// `source` as the target holds it at `offset`: forwarded by Strait's idempotent producer.
    fn landed_at(source: &Bytes, offset: i64, sequence: i32) -> RecordBatch {
        let forward = RecordBatch::new(source.clone())
            .unwrap()
            .rewrite(ProducerState {
                producer_id: 4000,
                producer_epoch: 0,
                base_sequence: sequence,
                transactional: false,
            })
            .unwrap();
        RecordBatch::new(at(forward.into_parts().concat().into(), offset)).unwrap()
    }

    fn replay(from: i64, sets: &[&Bytes]) -> SourceReplay {
        let mut replay = SourceReplay::new(from, false);
        for set in sets {
            replay.take((*set).clone(), vec![], -1);
        }
        replay
    }

    fn walk(replay: SourceReplay, target: &[RecordBatch]) -> Landed {
        let mut walk = TargetWalk::new(replay);
        for batch in target {
            walk.see(batch);
        }
        walk.landed("t", 3)
    }

    fn runs(landed: &Landed) -> Vec<(i64, i64, i32)> {
        match landed {
            Landed::Found { mappings, .. } => mappings
                .iter()
                .map(|m| (m.source_offset, m.target_offset, m.records))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn batches_found_on_the_target_move_the_start_past_them_and_say_where_they_landed() {
        let a = batch(100, &["a0", "a1", "a2"], 1_000);
        let b = batch(103, &["b0", "b1"], 1_001);
        let c = batch(105, &["c0"], 1_002);
        let set = Bytes::from([&a[..], &b[..], &c[..]].concat());
        // Another writer's batch first; then A and B, and a resend of both after a new producer
        // id; C never landed.
        let foreign = RecordBatch::new(batch(500, &["other"], 1_000)).unwrap();
        let target = [
            foreign,
            landed_at(&a, 501, 0),
            landed_at(&b, 504, 3),
            landed_at(&a, 506, 0),
            landed_at(&b, 509, 3),
        ];
        let landed = walk(replay(100, &[&set]), &target);
        assert_eq!(runs(&landed), vec![(100, 501, 3), (103, 504, 2)]);
        assert!(matches!(
            landed,
            Landed::Found {
                last: 104,
                records: 5,
                ..
            }
        ));
        // Nothing of it there: the stored position stands.
        assert_eq!(walk(replay(100, &[&set]), &target[..1]), Landed::Nothing);
        assert_eq!(walk(replay(100, &[&set]), &[]), Landed::Nothing);
    }

    #[test]
    fn when_two_candidate_batches_are_identical_the_stored_position_stands() {
        // The producer sent the same records with the same timestamp twice: X at 0 and 3.
        let x = |base| batch(base, &["same", "same", "same"], 7_000);
        let y = batch(6, &["y"], 7_001);
        let set = Bytes::from([&x(0)[..], &x(3)[..], &y[..]].concat());
        // Two copies on the target: the second X, or a resend of the first (the second not
        // landed)? Either may be; so nothing is assumed.
        let two = [landed_at(&x(0), 10, 0), landed_at(&x(3), 13, 3)];
        assert_eq!(walk(replay(0, &[&set]), &two), Landed::Ambiguous { records: 6 });
        // One copy: the first X landed whichever it is (the second lands only after it).
        let one = walk(replay(0, &[&set]), &two[..1]);
        assert!(
            matches!(
                one,
                Landed::Found {
                    last: 2,
                    records: 3,
                    ..
                }
            ),
            "{one:?}"
        );
        // Y after them is unique: it landed, so everything before it did.
        let all = [two[0].clone(), two[1].clone(), landed_at(&y, 16, 6)];
        let found = walk(replay(0, &[&set]), &all);
        assert!(
            matches!(
                found,
                Landed::Found {
                    last: 6,
                    records: 7,
                    ..
                }
            ),
            "{found:?}"
        );
    }

    #[test]
    fn batches_rebuilt_on_the_slow_path_are_recognised_as_rebuilt() {
        // The stored position is inside a batch: the cursor forwards the records from it on.
        let whole = batch(40, &["r0", "r1", "r2", "r3"], 2_000);
        let rebuilt = rebuild_batch(&RecordBatch::new(whole.clone()).unwrap(), 42)
            .unwrap()
            .unwrap();
        let next = batch(44, &["s0"], 2_001);
        let set = Bytes::from([&whole[..], &next[..]].concat());
        let target = [landed_at(rebuilt.batch.as_bytes(), 70, 0), landed_at(&next, 72, 2)];
        let landed = walk(replay(42, &[&set]), &target);
        assert_eq!(runs(&landed), vec![(42, 70, 2), (44, 72, 1)]);
        // The source's own batch (which the cursor does not forward from 42) is not it.
        let wrong = [landed_at(&whole, 70, 0)];
        assert_eq!(walk(replay(42, &[&set]), &wrong), Landed::Nothing);
    }

    #[test]
    fn what_the_cursor_drops_is_not_expected_and_skipped_offsets_are_covered() {
        // Under read_committed, an aborted transaction's batch is dropped; its offsets are
        // covered by the next batch found.
        let txn = ProducerState {
            producer_id: 5,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
        };
        let aborted = batch_of(0, &["gone"], 3_000, txn);
        let kept = batch(1, &["kept"], 3_001);
        let set = Bytes::from([&aborted[..], &kept[..]].concat());
        let mut replay = SourceReplay::new(0, true);
        replay.take(set, vec![(5, 0)], -1);
        assert_eq!((replay.records(), replay.position()), (1, 2));
        let landed = walk(replay, &[landed_at(&aborted, 9, 0), landed_at(&kept, 10, 0)]);
        assert!(
            matches!(
                landed,
                Landed::Found {
                    last: 1,
                    records: 1,
                    ..
                }
            ),
            "{landed:?}"
        );
        assert_eq!(runs(&landed), vec![(1, 10, 1)]);
    }

    #[test]
    fn a_corrupt_source_batch_ends_the_replay_there() {
        let a = batch(0, &["a"], 1);
        let mut b = batch(1, &["b"], 2).to_vec();
        let last = b.len() - 1;
        b[last] ^= 0xff;
        let set = Bytes::from([&a[..], &b[..]].concat());
        let replay = replay(0, &[&set]);
        assert!(replay.is_ended());
        assert_eq!((replay.records(), replay.position()), (1, 1));
    }
}
