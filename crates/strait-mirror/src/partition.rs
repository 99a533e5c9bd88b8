//! One source partition's pipeline: fetch raw batches, drop what must not be forwarded, rewrite
//! the producer fields, produce to the same partition of the remote topic with several requests
//! in flight, and record progress only once the target acknowledged.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::FetchRequest;
use strait_client::kafka_protocol;
use strait_client::{
    submit_produce, topic_name, BrokerConnection, Error, KafkaClient, OffsetSpec, PendingProduce, ProducerIdAndEpoch,
};
use strait_wire::{
    rebuild_batch, split_batch, AbortedTransactionFilter, BatchVerdict, ProducerState, RecordBatch, RecordBatches,
    WireError,
};
use tokio::sync::{mpsc, watch};

use crate::progress::ProgressStore;
use crate::syncs::OffsetSyncs;
use crate::{MirrorError, OffsetMapping, Stats};

/// Batches a partition may have un-acknowledged on the target: Kafka's idempotent producer
/// deduplicates retries within the last five batches.
const MAX_IN_FLIGHT: usize = 5;
/// Batches fetched ahead of the producer.
const FETCH_AHEAD: usize = 16;
/// How long after its last acknowledgement the target is trusted to still know a producer id.
/// A broker forgets ids idle for `producer.id.expiration.ms` (a day by default, but settable),
/// and then takes any sequence again; after a pause the first batch goes alone once more.
const PRODUCER_ID_TRUSTED: Duration = Duration::from_secs(60);
/// Bytes fetched per partition per request: many source batches per round trip, while the
/// memory a partition holds (fetched responses wait until their batches are acknowledged) stays
/// small.
const PARTITION_MAX_BYTES: i32 = 2 << 20;
/// Longest pause between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often a batch that fails its CRC check is fetched again (on a new connection) before
/// the partition stops: a batch damaged on the way comes back intact, one damaged in the
/// source log does not.
const CORRUPT_REFETCHES: u32 = 3;

/// Where a partition starts when no progress is stored (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// From the log start.
    Earliest,
    /// From the log end.
    Latest,
}

/// Everything a partition pipeline needs.
#[derive(Clone)]
pub(crate) struct PartitionContext {
    pub source: KafkaClient,
    pub target: KafkaClient,
    pub source_alias: String,
    pub target_alias: String,
    pub read_committed: bool,
    pub reset: OffsetReset,
    pub progress: Arc<ProgressStore>,
    pub syncs: Option<Arc<OffsetSyncs>>,
    pub stats: Arc<Stats>,
    pub request_timeout_ms: i32,
}

/// A topic partition being mirrored.
#[derive(Debug, Clone)]
pub(crate) struct PartitionRoute {
    pub source_topic: String,
    pub target_topic: String,
    pub partition: i32,
}

/// What the fetch side hands to the produce side, in source order.
enum Item {
    /// A batch to forward.
    Forward(Outgoing),
    /// Offsets up to `last` need no forwarding (control batches, aborted or empty batches).
    Skip { last: i64 },
}

/// A batch on its way to the target.
struct Outgoing {
    /// The batch as it is forwarded (the source's, or rebuilt on the slow path).
    batch: RecordBatch,
    /// The last source offset it covers: the position to record once it is acknowledged.
    source_last: i64,
    /// For a rebuilt batch, the source offset of each record (offsets have gaps); `None` when
    /// the batch is the source's own and offsets are consecutive from its base offset.
    source_offsets: Option<Vec<i64>>,
}

impl Outgoing {
    /// The first source offset it covers.
    fn source_first(&self) -> i64 {
        self.source_offsets
            .as_ref()
            .and_then(|o| o.first().copied())
            .unwrap_or(self.batch.base_offset())
    }

    /// The batch as two batches of half its records each, for a target that refused it as too
    /// large; `None` for a single record.
    fn split(&self) -> Result<Option<(Outgoing, Outgoing)>, WireError> {
        let Some((head, tail)) = split_batch(&self.batch)? else {
            return Ok(None);
        };
        // Offsets in `self.batch`, mapped back to the source's for a batch rebuilt before.
        let source = |offsets: Vec<i64>| match &self.source_offsets {
            None => offsets,
            Some(original) => offsets
                .into_iter()
                .map(|o| {
                    let index = usize::try_from(o - self.batch.base_offset()).unwrap_or(usize::MAX);
                    original.get(index).copied().unwrap_or(o)
                })
                .collect(),
        };
        let head_offsets = source(head.source_offsets);
        let head = Outgoing {
            batch: head.batch,
            source_last: head_offsets.last().copied().unwrap_or(self.source_last),
            source_offsets: Some(head_offsets),
        };
        let tail = Outgoing {
            batch: tail.batch,
            source_last: self.source_last,
            source_offsets: Some(source(tail.source_offsets)),
        };
        Ok(Some((head, tail)))
    }

    /// Where each run of consecutive source offsets landed, given the target base offset.
    fn mappings(&self, route: &PartitionRoute, target_base: i64) -> Vec<OffsetMapping> {
        let mapping = |source_offset, target_offset, records| OffsetMapping {
            source_topic: route.source_topic.clone(),
            partition: route.partition,
            source_offset,
            target_offset,
            records,
        };
        let Some(offsets) = &self.source_offsets else {
            return vec![mapping(
                self.batch.base_offset(),
                target_base,
                self.batch.records_count(),
            )];
        };
        let mut runs: Vec<OffsetMapping> = Vec::new();
        for (i, &offset) in offsets.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if run.source_offset + i64::from(run.records) == offset => run.records += 1,
                _ => runs.push(mapping(offset, target_base + i as i64, 1)),
            }
        }
        runs
    }
}

/// Mirrors one partition until `shutdown` turns true (then drains and returns `Ok`), or fails
/// with an error that needs a person.
pub(crate) async fn mirror_partition(
    context: PartitionContext,
    route: PartitionRoute,
    shutdown: watch::Receiver<bool>,
) -> Result<(), MirrorError> {
    let start = match context.progress.last_replicated(&route.source_topic, route.partition) {
        Some(last) => last + 1,
        None => reset_position(&context, &route).await?,
    };
    tracing::info!(topic = %route.source_topic, partition = route.partition, start, "mirroring partition");
    context
        .stats
        .partition_started(&route.source_topic, &route.target_topic, route.partition, start);
    let (items, queue) = mpsc::channel(FETCH_AHEAD);
    let fetcher = fetch_loop(context.clone(), route.clone(), start, items, shutdown);
    let producer = produce_loop(context, route, queue);
    tokio::pin!(fetcher, producer);
    tokio::select! {
        // A producer that failed ends the partition at once: a fetcher with nothing new to
        // send would not notice otherwise.
        produced = &mut producer => match produced {
            Ok(()) => fetcher.await,
            Err(error) => Err(error),
        },
        // A fetcher that stopped (shutdown or an error) dropped its sender: the producer
        // drains what was sent before and ends.
        fetched = &mut fetcher => producer.await.and(fetched),
    }
}

async fn reset_position(context: &PartitionContext, route: &PartitionRoute) -> Result<i64, MirrorError> {
    let spec = match context.reset {
        OffsetReset::Earliest => OffsetSpec::Earliest,
        OffsetReset::Latest => OffsetSpec::Latest,
    };
    let mut backoff = Backoff::default();
    loop {
        match context
            .source
            .list_offsets(&route.source_topic, &[route.partition], spec)
            .await
        {
            Ok(offsets) => return Ok(offsets[&route.partition]),
            Err(e) if e.is_retriable() => backoff.wait(&route.source_topic, route.partition, &e).await,
            Err(source) => {
                return Err(MirrorError::Client {
                    cluster: context.source_alias.clone(),
                    error: source,
                })
            }
        }
    }
}

async fn fetch_loop(
    context: PartitionContext,
    route: PartitionRoute,
    mut position: i64,
    items: mpsc::Sender<Item>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), MirrorError> {
    let mut leader: Option<BrokerConnection> = None;
    let mut backoff = Backoff::default();
    let mut corrupt_refetches = 0;
    let (topic, partition) = (route.source_topic.as_str(), route.partition);
    'fetch: while !*shutdown.borrow() {
        let connection = match &leader {
            Some(c) if !c.is_closed() => c.clone(),
            _ => match context.source.dedicated_leader_connection(topic, partition).await {
                Ok(c) => {
                    leader = Some(c.clone());
                    c
                }
                Err(e) if e.is_retriable() => {
                    backoff.wait(topic, partition, &e).await;
                    continue;
                }
                Err(source) => {
                    return Err(MirrorError::Client {
                        cluster: context.source_alias.clone(),
                        error: source,
                    })
                }
            },
        };
        let request = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(PARTITION_MAX_BYTES)
            .with_isolation_level(i8::from(context.read_committed))
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(position)
                    .with_partition_max_bytes(PARTITION_MAX_BYTES)])]);
        let sent = Instant::now();
        let response = tokio::select! {
            response = connection.send(&request) => response,
            _ = shutdown.changed() => break,
        };
        context
            .stats
            .record_request(&context.source_alias, "Fetch", sent.elapsed());
        let data = response.and_then(|r| {
            Error::check(r.error_code, || format!("Fetch {topic}-{partition}"), None)?;
            r.responses
                .into_iter()
                .flat_map(|t| t.partitions)
                .find(|p| p.partition_index == partition)
                .ok_or_else(|| Error::NoBroker(format!("the Fetch response has no data for {topic}-{partition}")))
        });
        let data = match data.and_then(|d| {
            Error::check(
                d.error_code,
                || format!("Fetch {topic}-{partition} at offset {position}"),
                None,
            )?;
            Ok(d)
        }) {
            Ok(data) => data,
            Err(e) if e.kafka_code().is_some_and(|c| c.code() == 1) => {
                context.stats.record_error(&context.source_alias, "Fetch", &e);
                position = out_of_range(&context, &route, position).await?;
                continue;
            }
            Err(e) if e.is_retriable() => {
                context.stats.record_error(&context.source_alias, "Fetch", &e);
                leader = None;
                backoff.wait(topic, partition, &e).await;
                continue;
            }
            Err(source) => {
                return Err(MirrorError::Client {
                    cluster: context.source_alias.clone(),
                    error: source,
                })
            }
        };
        backoff.reset();
        context.stats.record_source_end(topic, partition, data.high_watermark);
        let mut filter = AbortedTransactionFilter::new(strait_client::aborted_transactions(&data));
        let records = data.records.unwrap_or_default();
        for batch in RecordBatches::new(records) {
            let batch = batch.map_err(|source| MirrorError::Batch {
                topic: topic.into(),
                partition,
                offset: position,
                error: source,
            })?;
            if batch.next_offset() <= position {
                continue; // Already mirrored: a fetch starts at the batch holding the position.
            }
            if let Err(error) = batch.verify_crc() {
                context
                    .stats
                    .record_error_code(&context.source_alias, "Fetch", "CORRUPT_MESSAGE".into());
                let error = MirrorError::Batch {
                    topic: topic.into(),
                    partition,
                    offset: batch.base_offset(),
                    error,
                };
                if corrupt_refetches == CORRUPT_REFETCHES {
                    return Err(error);
                }
                corrupt_refetches += 1;
                tracing::warn!(%error, attempt = corrupt_refetches, "fetching the batch again on a new connection");
                leader = None;
                continue 'fetch;
            }
            corrupt_refetches = 0;
            // An undefined codec (bits 5-7) would be forwarded as is; refuse it here, by name.
            if let Err(error) = batch.compression() {
                return Err(MirrorError::Batch {
                    topic: topic.into(),
                    partition,
                    offset: batch.base_offset(),
                    error,
                });
            }
            let (last, first_timestamp) = (batch.last_offset(), batch.first_timestamp());
            context
                .stats
                .record_polled(topic, partition, last, first_timestamp, batch.max_timestamp());
            let verdict = if context.read_committed {
                filter.check(&batch)
            } else {
                BatchVerdict::Forward
            };
            let item = if verdict != BatchVerdict::Forward || batch.is_control() || batch.records_count() == 0 {
                Item::Skip {
                    last: batch.last_offset(),
                }
            } else if batch.is_compacted() || batch.base_offset() < position {
                // The slow path: decompress, keep the records at or after the position,
                // renumber, compress again.
                let rebuilt = rebuild_batch(&batch, position).map_err(|error| MirrorError::Batch {
                    topic: topic.into(),
                    partition,
                    offset: position,
                    error,
                })?;
                match rebuilt {
                    Some(rebuilt) => Item::Forward(Outgoing {
                        batch: rebuilt.batch,
                        source_last: batch.last_offset(),
                        source_offsets: Some(rebuilt.source_offsets),
                    }),
                    None => Item::Skip {
                        last: batch.last_offset(),
                    },
                }
            } else {
                Item::Forward(Outgoing {
                    batch: batch.clone(),
                    source_last: batch.last_offset(),
                    source_offsets: None,
                })
            };
            position = batch.next_offset();
            if items.send(item).await.is_err() {
                return Ok(()); // The producer stopped; it reports why.
            }
        }
    }
    Ok(())
}

/// The position fell outside the source log: retention (or a truncation) moved the log.
async fn out_of_range(context: &PartitionContext, route: &PartitionRoute, position: i64) -> Result<i64, MirrorError> {
    let (topic, partition) = (route.source_topic.as_str(), route.partition);
    let fail = |source| MirrorError::Client {
        cluster: context.source_alias.clone(),
        error: source,
    };
    let earliest = context
        .source
        .list_offsets(topic, &[partition], OffsetSpec::Earliest)
        .await
        .map_err(fail)?[&partition];
    let latest = context
        .source
        .list_offsets(topic, &[partition], OffsetSpec::Latest)
        .await
        .map_err(fail)?[&partition];
    if position < earliest {
        tracing::error!(
            topic, partition, first_missing = position, last_missing = earliest - 1,
            "GAP: source offsets {position}..={} were deleted at the source before they were mirrored; continuing at {earliest}",
            earliest - 1
        );
        context.stats.record_gap(topic, partition, earliest - position);
        Ok(earliest)
    } else {
        tracing::error!(
            topic,
            partition,
            position,
            latest,
            "the source log ends before the mirrored position (truncated or recreated topic); continuing at {latest}"
        );
        Ok(latest.min(position))
    }
}

/// A batch sent (or to be sent) to the target.
struct Pending {
    outgoing: Outgoing,
    sequence: i32,
    /// The request on the wire, or why it could not be sent; `None` before it is sent (and while
    /// its answer is handled).
    response: Option<Result<PendingProduce, Error>>,
    /// Why the batch could not be rewritten (its source CRC does not match, say): the
    /// partition stops at it rather than skip it.
    rewrite_error: Option<WireError>,
    /// When it was last sent, for the Produce latency.
    sent_at: Instant,
}

impl Pending {
    fn new(outgoing: Outgoing, sequence: i32) -> Self {
        Pending {
            outgoing,
            sequence,
            response: None,
            rewrite_error: None,
            sent_at: Instant::now(),
        }
    }
}

/// Waits for the answers to every batch behind the first (they fail once the first did), so
/// that all can be sent again in order.
async fn settle_behind_front(in_flight: &mut VecDeque<Pending>) {
    for pending in in_flight.iter_mut().skip(1) {
        if let Some(Ok(response)) = pending.response.take() {
            let _ = response.base_offset().await;
        }
    }
}

/// `sequence + records`, wrapping at 2^31 like the broker's (ProducerAppendInfo).
fn add_sequence(sequence: i32, records: i32) -> i32 {
    ((i64::from(sequence) + i64::from(records)) % (1 << 31)) as i32
}

/// Source offsets up to `last` are mirrored: stored at the next flush, and shown in the lag.
fn record_progress(context: &PartitionContext, route: &PartitionRoute, last: i64) {
    context.progress.record(&route.source_topic, route.partition, last);
    context
        .stats
        .record_position(&route.source_topic, route.partition, last + 1);
}

async fn produce_loop(
    context: PartitionContext,
    route: PartitionRoute,
    mut queue: mpsc::Receiver<Item>,
) -> Result<(), MirrorError> {
    let mut producer = Producer::new(&context, &route).await?;
    let mut in_flight: VecDeque<Pending> = VecDeque::new();
    // Offsets to record once everything before them is acknowledged.
    let mut skipped: VecDeque<(usize, i64)> = VecDeque::new();
    let mut sent_total = 0usize;
    let mut acked_total = 0usize;
    let mut open = true;
    while open || !in_flight.is_empty() {
        // Fill the window; wait for new work only when nothing is in flight.
        while open && in_flight.len() < MAX_IN_FLIGHT {
            let item = if in_flight.is_empty() {
                queue.recv().await
            } else {
                match queue.try_recv() {
                    Ok(item) => Some(item),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => None,
                }
            };
            match item {
                None => open = false,
                Some(Item::Skip { last }) if in_flight.is_empty() => record_progress(&context, &route, last),
                Some(Item::Skip { last }) => skipped.push_back((sent_total, last)),
                Some(Item::Forward(outgoing)) => {
                    let sequence = producer.next_sequence(&outgoing.batch);
                    in_flight.push_back(Pending::new(outgoing, sequence));
                    sent_total += 1;
                }
            }
        }
        producer.send_window(&mut in_flight).await;
        let Some(front) = in_flight.front_mut() else { continue };
        if let Some(error) = front.rewrite_error.take() {
            return Err(MirrorError::Batch {
                topic: route.source_topic.clone(),
                partition: route.partition,
                offset: front.outgoing.source_first(),
                error,
            });
        }
        let result = match front.response.take() {
            Some(Ok(response)) => response.base_offset().await,
            Some(Err(error)) => Err(error),
            None => unreachable!("every batch in flight is sent before it is awaited"),
        };
        match result {
            Ok(base_offset) => {
                let done = in_flight.pop_front().expect("front exists");
                acked_total += 1;
                producer.backoff.reset();
                producer.acknowledged_at = Some(Instant::now());
                let batch = &done.outgoing.batch;
                context
                    .stats
                    .record_request(&context.target_alias, "Produce", done.sent_at.elapsed());
                context.stats.record_acknowledged(
                    &route.source_topic,
                    route.partition,
                    batch.records_count() as u64,
                    batch.size() as u64,
                    batch.max_timestamp(),
                );
                record_progress(&context, &route, done.outgoing.source_last);
                while skipped.front().is_some_and(|(after, _)| *after <= acked_total) {
                    let (_, last) = skipped.pop_front().expect("front exists");
                    record_progress(&context, &route, last);
                }
                for mapping in done.outgoing.mappings(&route, base_offset) {
                    if let Some(syncs) = &context.syncs {
                        syncs.record(&mapping);
                    }
                    context.stats.record_mapping(mapping);
                }
            }
            Err(error) => {
                context.stats.record_error(&context.target_alias, "Produce", &error);
                let (first, last) = (front.outgoing.source_first(), front.outgoing.source_last);
                // MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE: the target's max.message.bytes is
                // below the source's. Halves fit where a Java producer's batches would.
                if error.kafka_code().is_some_and(|c| matches!(c.code(), 10 | 18)) {
                    let halves = front.outgoing.split().map_err(|error| MirrorError::Batch {
                        topic: route.source_topic.clone(),
                        partition: route.partition,
                        offset: first,
                        error,
                    })?;
                    if let Some((head, tail)) = halves {
                        tracing::warn!(topic = %route.source_topic, partition = route.partition, %error, "the target refused source offsets {first}..={last} as too large; sending them as two batches");
                        let sequence = front.sequence;
                        settle_behind_front(&mut in_flight).await;
                        in_flight.pop_front();
                        let tail_sequence = add_sequence(sequence, head.batch.records_count());
                        in_flight.push_front(Pending::new(tail, tail_sequence));
                        in_flight.push_front(Pending::new(head, sequence));
                        // One batch more is in flight: skipped offsets queued behind the split
                        // one are recorded one acknowledgement later.
                        sent_total += 1;
                        for (after, _) in skipped.iter_mut() {
                            *after += 1;
                        }
                        producer.send_all(&mut in_flight).await;
                        continue;
                    }
                }
                if !error.is_retriable() && !producer.is_sequence_error(&error) {
                    return Err(MirrorError::Refused {
                        topic: route.source_topic.clone(),
                        partition: route.partition,
                        first,
                        last,
                        error,
                    });
                }
                tracing::warn!(topic = %route.source_topic, partition = route.partition, %error, "produce failed; resending from source offset {first}");
                // Let everything behind the failed batch finish, then resend all unacknowledged
                // batches in order: the target deduplicates any that had landed after all.
                settle_behind_front(&mut in_flight).await;
                producer
                    .backoff
                    .wait(&route.target_topic, route.partition, &error)
                    .await;
                if producer.is_sequence_error(&error) {
                    producer.reset_identity(&context, &mut in_flight).await?;
                }
                producer.leader = None;
                producer.send_all(&mut in_flight).await;
            }
        }
    }
    Ok(())
}

/// The idempotent producer of one target partition: its own producer id and sequence numbers.
struct Producer {
    topic: String,
    partition: i32,
    target: KafkaClient,
    identity: ProducerIdAndEpoch,
    next_sequence: i32,
    leader: Option<BrokerConnection>,
    backoff: Backoff,
    timeout_ms: i32,
    /// Why a batch could not be sent. Later batches are not sent until all are sent again in
    /// order: the target accepts any first sequence from a producer id it does not know yet,
    /// so it would append them ahead of the one that failed.
    unsent: Option<Error>,
    /// When the target last acknowledged a batch of this producer id, and so knew its
    /// sequence. Without a recent one, one batch at a time is in flight: a broker accepts any
    /// first sequence from an id it does not know, so if the first batch were refused
    /// (NOT_LEADER_OR_FOLLOWER on a topic just created, say) or lost on the way, the ones
    /// behind it would land ahead of it.
    acknowledged_at: Option<Instant>,
}

impl Producer {
    async fn new(context: &PartitionContext, route: &PartitionRoute) -> Result<Producer, MirrorError> {
        let identity = init_producer_id(context).await?;
        Ok(Producer {
            topic: route.target_topic.clone(),
            partition: route.partition,
            target: context.target.clone(),
            identity,
            next_sequence: 0,
            leader: None,
            backoff: Backoff::default(),
            timeout_ms: context.request_timeout_ms,
            unsent: None,
            acknowledged_at: None,
        })
    }

    fn next_sequence(&mut self, batch: &RecordBatch) -> i32 {
        let sequence = self.next_sequence;
        self.next_sequence = add_sequence(sequence, batch.records_count());
        sequence
    }

    fn is_sequence_error(&self, error: &Error) -> bool {
        // OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID.
        error.kafka_code().is_some_and(|c| matches!(c.code(), 45 | 47 | 59))
    }

    /// A fresh producer id, and the unacknowledged batches renumbered from sequence 0.
    async fn reset_identity(
        &mut self,
        context: &PartitionContext,
        in_flight: &mut VecDeque<Pending>,
    ) -> Result<(), MirrorError> {
        self.identity = init_producer_id(context).await?;
        self.acknowledged_at = None;
        self.next_sequence = 0;
        for pending in in_flight.iter_mut() {
            pending.sequence = self.next_sequence(&pending.outgoing.batch);
        }
        Ok(())
    }

    /// Sends the batches in flight again, in order (as many as [`Producer::send_window`] may).
    async fn send_all(&mut self, in_flight: &mut VecDeque<Pending>) {
        self.unsent = None;
        for pending in in_flight.iter_mut() {
            pending.response = None;
        }
        self.send_window(in_flight).await;
    }

    /// Sends the batches not on the wire yet, in order, up to [`MAX_IN_FLIGHT`] in flight (the
    /// broker's deduplication window), or one while the target may not know the producer id.
    async fn send_window(&mut self, in_flight: &mut VecDeque<Pending>) {
        let known = self
            .acknowledged_at
            .is_some_and(|at| at.elapsed() < PRODUCER_ID_TRUSTED);
        let window = if known { MAX_IN_FLIGHT } else { 1 };
        for pending in in_flight.iter_mut().take(window) {
            if pending.rewrite_error.is_some() {
                break; // The partition stops at it; nothing behind it goes out.
            }
            if pending.response.is_none() {
                self.send(pending).await;
            }
        }
    }

    /// Sends one batch; a failure to send is kept in `pending` and handled when it is awaited.
    async fn send(&mut self, pending: &mut Pending) {
        if let Some(error) = &self.unsent {
            pending.response = Some(Err(error.clone()));
            return;
        }
        let state = ProducerState {
            producer_id: self.identity.producer_id,
            producer_epoch: self.identity.producer_epoch,
            base_sequence: pending.sequence,
        };
        let parts = match pending.outgoing.batch.rewrite(state) {
            Ok(forward) => forward.into_parts(),
            Err(error) => {
                self.unsent = Some(Error::ConnectionClosed {
                    broker: format!("the leader of {}-{}", self.topic, self.partition),
                    reason: format!("not sent: a batch ahead could not be rewritten ({error})"),
                });
                pending.rewrite_error = Some(error);
                return;
            }
        };
        if self.leader.as_ref().is_none_or(BrokerConnection::is_closed) {
            match self
                .target
                .dedicated_leader_connection(&self.topic, self.partition)
                .await
            {
                Ok(leader) => self.leader = Some(leader),
                Err(error) => {
                    self.unsent = Some(error.clone());
                    pending.response = Some(Err(error));
                    return;
                }
            }
        }
        let leader = self.leader.as_ref().expect("set above");
        pending.sent_at = Instant::now();
        let response = submit_produce(leader, &self.topic, self.partition, parts, self.timeout_ms).await;
        if let Err(error) = &response {
            self.unsent = Some(error.clone());
        }
        pending.response = Some(response);
    }
}

async fn init_producer_id(context: &PartitionContext) -> Result<ProducerIdAndEpoch, MirrorError> {
    let mut backoff = Backoff::default();
    loop {
        match context.target.init_producer_id().await {
            Ok(identity) => return Ok(identity),
            Err(e) if e.is_retriable() => backoff.wait("InitProducerId", -1, &e).await,
            Err(source) => {
                return Err(MirrorError::Client {
                    cluster: context.target_alias.clone(),
                    error: source,
                })
            }
        }
    }
}

/// Exponential backoff from 100 ms to [`MAX_BACKOFF`], logging each wait.
#[derive(Debug, Default)]
struct Backoff {
    attempts: u32,
}

impl Backoff {
    async fn wait(&mut self, topic: &str, partition: i32, error: &Error) {
        let delay = Duration::from_millis(100 << self.attempts.min(6)).min(MAX_BACKOFF);
        self.attempts += 1;
        tracing::warn!(topic, partition, %error, attempt = self.attempts, "retrying in {delay:?}");
        tokio::time::sleep(delay).await;
    }

    fn reset(&mut self) {
        self.attempts = 0;
    }
}
