//! One target partition's queue (franz-go's `recBuf`): what was fetched for it, in source order,
//! until the target acknowledges it; the idempotent producer's rules for sending it; and what the
//! partition may record as mirrored.
//!
//! [`QueueState`] holds the rules and no I/O, so they are tested with batches alone:
//! - sequences: each batch gets the next sequence when first sent, and keeps it when resent, so
//!   the target deduplicates a batch that had landed after all;
//! - the window: up to [`MAX_IN_FLIGHT`] batches on the wire, but one alone until the target has
//!   acknowledged a batch of the producer id (it accepts any first sequence from an id it does
//!   not know, so batches behind a lost first one would land ahead of it);
//! - failures: when the first batch on the wire fails, the answers to the ones behind it are
//!   awaited (they fail too: their sequences no longer follow), then everything unacknowledged
//!   is sent again in order, after a backoff, a new producer id, a split of a batch too large,
//!   or a move to the partition's new leader;
//! - progress: a source offset is recorded only once everything before it is acknowledged.
//!
//! [`PartitionQueue`] shares the state between the partition's cursor (which pushes) and the
//! producer of its target leader (which sends), and records what acknowledgements allow.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::{is_sequence_error, is_too_large, Backoff, Error, KafkaCode, ProducerIdAndEpoch, TopicId};
use strait_wire::ProducerState;
use tokio::sync::Notify;

use crate::budget::Budget;
use crate::offset_map::SharedPartitionMap;
use crate::offset_syncs::OffsetSyncs;
use crate::outgoing::Outgoing;
use crate::progress::PartitionProgress;
use crate::route::Route;
use crate::sink::ReadyQueues;
use crate::stats::PartitionStats;
use crate::MirrorError;

/// Batches a partition may have unacknowledged on the target: Kafka's idempotent producer
/// deduplicates retries within the last five batches.
pub(crate) const MAX_IN_FLIGHT: usize = 5;
/// How long after its last acknowledgement the target is trusted to still know a producer id.
/// A broker forgets ids idle for `producer.id.expiration.ms` (a day by default, but settable,
/// and counted from the records' timestamps), and then takes any sequence again; after a pause
/// the first batch goes alone once more.
const PRODUCER_ID_TRUSTED: Duration = Duration::from_secs(60);
/// Backoff of a partition's resends.
const RETRY_BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// What a cursor hands its queue, in source order.
#[derive(Debug)]
pub(crate) enum Entry {
    /// A batch to forward.
    Forward(Outgoing),
    /// Offsets up to `last` need no forwarding (control batches, aborted or empty batches, a
    /// gap the source deleted).
    Skip { last: i64 },
    /// The partition stops here once everything before is acknowledged (a batch that cannot
    /// be read or forwarded).
    Stop(MirrorError),
    /// The source topic was deleted and created again: what follows comes from the new topic
    /// `topic_id`, from its offset `start` on.
    Restart { start: i64, topic_id: Option<TopicId> },
}

/// A batch of the queue.
#[derive(Debug)]
struct Batch {
    outgoing: Outgoing,
    /// Its sequence, from its first send on.
    sequence: Option<i32>,
    /// The request it is on the wire in.
    request: Option<u64>,
    /// When it was first sent, for `delivery.timeout.ms`.
    first_sent: Option<Instant>,
}

#[derive(Debug)]
enum Slot {
    Batch(Batch),
    Skip { last: i64 },
    Stop(MirrorError),
    Restart { start: i64, topic_id: Option<TopicId> },
}

/// What fixes a failure, once every batch on the wire has its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Remedy {
    /// Send again after a backoff (the broker restarts, replicas are missing, a timeout).
    Resend,
    /// The partition's leader moved: send again from its new leader's producer.
    Rehome,
    /// The target no longer accepts the producer id or its sequences: a new id, sequences from 0.
    NewProducerId,
    /// The batch is too large for the target: send it as two halves.
    Split,
    /// The target refuses the batch for good: the partition stops.
    Stop,
}

impl Remedy {
    /// The remedy for `error`, the answer to the first batch on the wire.
    pub(crate) fn for_error(error: &Error) -> Remedy {
        use strait_client::kafka_protocol::error::ResponseError as E;
        if is_too_large(error) {
            Remedy::Split
        } else if is_sequence_error(error) {
            Remedy::NewProducerId
        } else if error.kafka_code().is_some_and(|KafkaCode(code)| {
            matches!(
                code,
                E::NotLeaderOrFollower | E::LeaderNotAvailable | E::UnknownTopicOrPartition | E::KafkaStorageError
            )
        }) {
            Remedy::Rehome
        } else if error.is_retriable() {
            Remedy::Resend
        } else {
            Remedy::Stop
        }
    }
}

/// A failure being handled.
#[derive(Debug)]
struct Failure {
    error: Error,
    remedy: Remedy,
    /// Whether answers to batches sent before it are still awaited.
    settling: bool,
}

/// What [`QueueState::next_batch`] says.
#[derive(Debug)]
pub(crate) enum Next {
    /// A batch to put in the request.
    Batch(Sendable),
    /// Nothing to send now: empty, the window is full, a stop is next, or answers are awaited.
    Idle,
    /// The next batch does not fit in the request.
    NoRoom,
    /// Sending resumes at this time (a backoff).
    At(Instant),
    /// The producer id in use is refused: wait for one newer than this.
    NewProducerId(ProducerIdAndEpoch),
}

/// A batch ready for a Produce request.
#[derive(Debug)]
pub(crate) struct Sendable {
    /// The rewritten batch: header and payload, for a vectored write.
    pub parts: Vec<Bytes>,
    /// Its size in bytes.
    pub size: usize,
}

/// What an acknowledgement (or a push) lets the partition record.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// The acknowledged batch and its base offset on the target, if a batch was acknowledged.
    pub acknowledged: Option<(Outgoing, i64)>,
    /// The last source offset now mirrored, if it moved.
    pub progress: Option<i64>,
    /// Why the partition stops, if a stop is now at the front.
    pub stop: Option<MirrorError>,
    /// A restart on a recreated source topic passed the front: the new topic's start and ID.
    /// `progress` is then of the new topic.
    pub restart: Option<(i64, Option<TopicId>)>,
    /// With a restart: the last source offset of the old topic now mirrored, if it moved.
    pub before_restart: Option<i64>,
}

/// What settling a failure asks of the producer.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Nothing to do: no failure, or answers to batches on the wire are still awaited.
    Waiting,
    /// Send again from this producer at this time.
    ResendAt(Instant),
    /// Hand the partition to its new leader's producer (it sends again from this time).
    Rehome(Instant),
    /// A new producer id is needed, newer than this one; then send again from this time.
    NewProducerId(ProducerIdAndEpoch, Instant),
    /// The partition stops.
    Stop(MirrorError),
}

/// The rules of one partition's queue, without I/O.
#[derive(Debug)]
pub(crate) struct QueueState {
    slots: VecDeque<Slot>,
    /// Batches on the wire: the first ones, except while a failure settles.
    in_flight: usize,
    /// Bytes of the batches held.
    buffered: usize,
    /// The producer id and epoch the partition sends with; adopted at its first send.
    identity: Option<ProducerIdAndEpoch>,
    next_sequence: i32,
    /// When the target last acknowledged a batch of `identity`.
    acknowledged_at: Option<Instant>,
    /// The failure being handled, until a batch is acknowledged again.
    failure: Option<Failure>,
    /// When sending may resume after a failure.
    resume_at: Option<Instant>,
    /// Whether a new producer id must be adopted before sending again.
    needs_identity: bool,
    backoff: Backoff,
    /// Whether the front batch was reported overdue (`delivery.timeout.ms`).
    overdue: bool,
    /// Exactly-once mode: batches are part of the flow's transaction, and the partition takes
    /// each new identity the transaction publishes (a bumped epoch after each commit under
    /// KIP-890, sequences from 0 again).
    transactional: bool,
}

impl Default for QueueState {
    fn default() -> Self {
        QueueState {
            slots: VecDeque::new(),
            in_flight: 0,
            buffered: 0,
            identity: None,
            next_sequence: 0,
            acknowledged_at: None,
            failure: None,
            resume_at: None,
            needs_identity: false,
            backoff: Backoff::new(RETRY_BACKOFF.0, RETRY_BACKOFF.1),
            overdue: false,
            transactional: false,
        }
    }
}

impl QueueState {
    /// The state of a partition in exactly-once mode.
    pub(crate) fn transactional() -> Self {
        QueueState {
            transactional: true,
            ..QueueState::default()
        }
    }

    /// Bytes of the batches held.
    pub(crate) fn buffered(&self) -> usize {
        self.buffered
    }

    /// Whether nothing is queued: every batch pushed was acknowledged.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether a failure is being handled (the partition's target refuses, or is away).
    pub(crate) fn is_failing(&self) -> bool {
        self.failure.is_some()
    }

    /// The failure being handled, for logs.
    pub(crate) fn failure(&self) -> Option<&Error> {
        self.failure.as_ref().map(|f| &f.error)
    }

    /// Appends what the cursor fetched; returns what the partition may record now (offsets
    /// that needed no forwarding, when nothing is ahead of them).
    pub(crate) fn push(&mut self, entries: impl IntoIterator<Item = Entry>) -> Recorded {
        for entry in entries {
            self.slots.push_back(match entry {
                Entry::Forward(outgoing) => {
                    self.buffered += outgoing.batch.size();
                    Slot::Batch(Batch {
                        outgoing,
                        sequence: None,
                        request: None,
                        first_sent: None,
                    })
                }
                Entry::Skip { last } => Slot::Skip { last },
                Entry::Stop(error) => Slot::Stop(error),
                Entry::Restart { start, topic_id } => Slot::Restart { start, topic_id },
            });
        }
        self.settle_front()
    }

    /// Pops what needs no acknowledgement from the front.
    fn settle_front(&mut self) -> Recorded {
        let mut recorded = Recorded::default();
        loop {
            match self.slots.front() {
                Some(Slot::Skip { last }) => {
                    recorded.progress = Some(*last);
                    self.slots.pop_front();
                }
                Some(Slot::Stop(_)) => {
                    if let Some(Slot::Stop(error)) = self.slots.pop_front() {
                        recorded.stop = Some(error);
                    }
                    return recorded;
                }
                Some(Slot::Restart { .. }) => {
                    if let Some(Slot::Restart { start, topic_id }) = self.slots.pop_front() {
                        // A later restart supersedes an earlier one, and the topic between.
                        let progress = recorded.progress.take();
                        if recorded.restart.is_none() {
                            recorded.before_restart = progress;
                        }
                        recorded.restart = Some((start, topic_id));
                    }
                }
                _ => return recorded,
            }
        }
    }

    /// The batches near the front, with their index among batches: those on the wire are
    /// always among the first `MAX_IN_FLIGHT + 1`.
    fn front_batches(&mut self) -> impl Iterator<Item = (usize, &mut Batch)> {
        self.slots
            .iter_mut()
            .filter_map(|s| match s {
                Slot::Batch(b) => Some(b),
                _ => None,
            })
            .take(MAX_IN_FLIGHT + 1)
            .enumerate()
    }

    /// Whether the producer id in use was acknowledged recently: then up to [`MAX_IN_FLIGHT`]
    /// batches go out at once.
    fn trusted(&self, now: Instant) -> bool {
        self.acknowledged_at
            .is_some_and(|at| now.saturating_duration_since(at) < PRODUCER_ID_TRUSTED)
    }

    /// The next batch to send in request `request` if it fits in `room` bytes, with `current`
    /// (the producer id now) if the partition has none yet or must take a new one.
    pub(crate) fn next_batch(&mut self, now: Instant, request: u64, current: ProducerIdAndEpoch, room: usize) -> Next {
        if let Some(failure) = &self.failure {
            if failure.settling {
                return Next::Idle;
            }
            if let Some(at) = self.resume_at.filter(|&at| at > now) {
                return Next::At(at);
            }
            if self.needs_identity {
                match self.identity {
                    Some(stale) if stale == current => return Next::NewProducerId(stale),
                    _ => self.adopt(current),
                }
            }
        }
        if self.transactional && self.in_flight == 0 && self.identity.is_some_and(|id| id != current) {
            // A transaction ended: the next one goes with its identity, from sequence 0. Its
            // batches all had their answers (a failed one aborts the transaction instead).
            let known = self.identity.is_some_and(|id| id.producer_id == current.producer_id);
            let acknowledged_at = self.acknowledged_at;
            self.adopt(current);
            if known {
                // A bumped epoch of an id the target knows: it takes only sequence 0 next.
                self.acknowledged_at = acknowledged_at;
            }
        }
        let window = if self.trusted(now) { MAX_IN_FLIGHT } else { 1 };
        if self.in_flight >= window {
            return Next::Idle;
        }
        let identity = *self.identity.get_or_insert(current);
        // The first batch not on the wire; a stop ahead of it holds everything behind.
        let mut next = None;
        for slot in &mut self.slots {
            match slot {
                Slot::Stop(_) => break,
                Slot::Batch(batch) if batch.request.is_none() => {
                    next = Some(batch);
                    break;
                }
                _ => {}
            }
        }
        let Some(batch) = next else {
            return Next::Idle;
        };
        if batch.outgoing.batch.size() > room {
            return Next::NoRoom;
        }
        let sequence = match batch.sequence {
            Some(sequence) => sequence,
            None => {
                let sequence = self.next_sequence;
                self.next_sequence = add_sequence(sequence, batch.outgoing.batch.records_count());
                batch.sequence = Some(sequence);
                sequence
            }
        };
        let producer = ProducerState {
            producer_id: identity.producer_id,
            producer_epoch: identity.producer_epoch,
            base_sequence: sequence,
            transactional: self.transactional,
        };
        // The source CRC was checked where the batch arrived and the slow path builds valid
        // batches, and control or compacted batches never get here: the rewrite cannot fail.
        let forward = match batch.outgoing.batch.rewrite(producer) {
            Ok(forward) => forward,
            Err(error) => unreachable!("a queued batch is forwardable: {error}"),
        };
        batch.request = Some(request);
        batch.first_sent.get_or_insert(now);
        self.in_flight += 1;
        let size = forward.len();
        Next::Batch(Sendable {
            parts: forward.into_parts(),
            size,
        })
    }

    /// Takes `identity` and numbers the unacknowledged batches from 0 again.
    fn adopt(&mut self, identity: ProducerIdAndEpoch) {
        self.identity = Some(identity);
        self.needs_identity = false;
        self.acknowledged_at = None;
        self.next_sequence = 0;
        for slot in &mut self.slots {
            if let Slot::Batch(batch) = slot {
                batch.sequence = None;
            }
        }
    }

    /// Takes the batch of `request` off the wire: its index among the batches, if it is ours.
    fn answered(&mut self, request: u64) -> Option<usize> {
        let (index, batch) = self.front_batches().find(|(_, b)| b.request == Some(request))?;
        batch.request = None;
        self.in_flight -= 1;
        Some(index)
    }

    /// The target acknowledged the batch of `request` at `base_offset`.
    pub(crate) fn acknowledged(&mut self, request: u64, base_offset: i64, now: Instant) -> Recorded {
        let Some(index) = self.answered(request) else {
            return Recorded::default();
        };
        if index != 0 || self.failure.as_ref().is_some_and(|f| f.settling) {
            // Behind a failed batch: sent again with it (the target recognises a batch that
            // had landed by its sequence, and answers with its first offset).
            return Recorded::default();
        }
        let Some(Slot::Batch(batch)) = self.slots.pop_front() else {
            unreachable!("the batch at index 0 is at the front: skips before it were popped");
        };
        self.buffered -= batch.outgoing.batch.size();
        self.acknowledged_at = Some(now);
        self.backoff.reset();
        self.overdue = false;
        self.failure = None;
        self.resume_at = None;
        let mut recorded = self.settle_front();
        let progress = match recorded.restart {
            Some(_) => &mut recorded.before_restart,
            None => &mut recorded.progress,
        };
        *progress = progress.or(Some(batch.outgoing.source_last));
        recorded.acknowledged = Some((batch.outgoing, base_offset));
        recorded
    }

    /// The batch of `request` failed with `error`. Returns whether a failure starts now (so
    /// that the caller reports it once); the batches behind it are answered and settled first.
    pub(crate) fn failed(&mut self, request: u64, error: Error) -> bool {
        if self.answered(request).is_none() || self.failure.as_ref().is_some_and(|f| f.settling) {
            return false;
        }
        let remedy = Remedy::for_error(&error);
        let starts = self.failure.is_none();
        self.failure = Some(Failure {
            error,
            remedy,
            settling: true,
        });
        self.resume_at = None;
        starts
    }

    /// The producer that sent the batches on the wire is gone: each fails with `error`, as
    /// if its connection had closed, and is sent again with its sequence (the target
    /// deduplicates one that had landed).
    pub(crate) fn abandon_in_flight(&mut self, error: &Error) {
        let requests: Vec<u64> = self.front_batches().filter_map(|(_, b)| b.request).collect();
        for request in requests {
            self.failed(request, error.clone());
        }
    }

    /// Once every batch on the wire has its answer: what the failure asks for. `charge`
    /// charges the halves of a batch too large to the budget.
    pub(crate) fn settle(
        &mut self,
        now: Instant,
        route: &Route,
        mut charge: impl FnMut(usize) -> crate::budget::Charge,
    ) -> Settled {
        let Some(failure) = self.failure.as_mut().filter(|f| f.settling && self.in_flight == 0) else {
            return Settled::Waiting;
        };
        failure.settling = false;
        let (error, remedy) = (failure.error.clone(), failure.remedy);
        if self.backoff.attempts() > 0 && remedy != Remedy::Split {
            // Failing again: the batches may wait long, so they no longer hold the fetch
            // responses they are slices of (with the other partitions' batches in them).
            self.detach(&mut charge);
        }
        let Some(Slot::Batch(front)) = self.slots.front() else {
            unreachable!("a failure is of the front batch");
        };
        let (first, last) = (front.outgoing.source_first(), front.outgoing.source_last);
        let refused = |error| MirrorError::refused(&route.source_topic, route.partition, first, last, error);
        match remedy {
            Remedy::Stop => Settled::Stop(refused(error)),
            Remedy::Split => match front.outgoing.split(&mut charge) {
                Ok(Some((head, tail))) => {
                    tracing::warn!(topic = %route.source_topic, partition = route.partition, %error,
                        "the target refused source offsets {first}..={last} as too large; sending them as two batches");
                    let Some(Slot::Batch(whole)) = self.slots.pop_front() else {
                        unreachable!("the front is a batch");
                    };
                    self.buffered -= whole.outgoing.batch.size();
                    // The halves take the whole's sequence range: the head its first sequence,
                    // the tail the one after the head's records.
                    let head_sequence = whole.sequence;
                    let tail_sequence = head_sequence.map(|s| add_sequence(s, head.batch.records_count()));
                    for (outgoing, sequence) in [(tail, tail_sequence), (head, head_sequence)] {
                        self.buffered += outgoing.batch.size();
                        self.slots.push_front(Slot::Batch(Batch {
                            outgoing,
                            sequence,
                            request: None,
                            first_sent: whole.first_sent,
                        }));
                    }
                    self.resume_at = Some(now);
                    Settled::ResendAt(now)
                }
                Ok(None) => Settled::Stop(refused(error)),
                Err(wire) => Settled::Stop(MirrorError::batch(&route.source_topic, route.partition, first, wire)),
            },
            Remedy::Rehome => {
                let at = now + self.backoff.next_delay();
                self.resume_at = Some(at);
                Settled::Rehome(at)
            }
            Remedy::NewProducerId => {
                let at = now + self.backoff.next_delay();
                self.resume_at = Some(at);
                self.needs_identity = true;
                match self.identity {
                    Some(identity) => Settled::NewProducerId(identity, at),
                    None => Settled::ResendAt(at),
                }
            }
            Remedy::Resend => {
                let at = now + self.backoff.next_delay();
                self.resume_at = Some(at);
                Settled::ResendAt(at)
            }
        }
    }

    /// Whether the front batch has waited past `timeout` since it was first sent; true once
    /// per overdue stretch, so that it is reported once.
    pub(crate) fn newly_overdue(&mut self, now: Instant, timeout: Duration) -> bool {
        let Some(Slot::Batch(front)) = self.slots.front() else {
            return false;
        };
        let overdue = front
            .first_sent
            .is_some_and(|at| now.saturating_duration_since(at) >= timeout);
        overdue && !std::mem::replace(&mut self.overdue, true)
    }

    /// The source offsets of the front batch, for messages.
    pub(crate) fn front_offsets(&self) -> Option<(i64, i64)> {
        match self.slots.front() {
            Some(Slot::Batch(b)) => Some((b.outgoing.source_first(), b.outgoing.source_last)),
            _ => None,
        }
    }

    /// Copies the queued batches out of the fetch responses they are slices of (see
    /// [`Outgoing::detach`]), charging each copy with `charge`.
    fn detach(&mut self, mut charge: impl FnMut(usize) -> crate::budget::Charge) {
        for slot in &mut self.slots {
            if let Slot::Batch(batch) = slot {
                if batch.outgoing.charge.bytes() > batch.outgoing.batch.size() {
                    batch.outgoing.detach(&mut charge);
                }
            }
        }
    }
}

/// `sequence + records`, wrapping at 2^31 like the broker's (ProducerAppendInfo).
pub(crate) fn add_sequence(sequence: i32, records: i32) -> i32 {
    ((i64::from(sequence) + i64::from(records)) % (1 << 31)) as i32
}

/// What the queues of one data path share.
#[derive(Debug, Clone)]
pub(crate) struct QueuesShared {
    /// Where acknowledged batches' offset syncs are recorded, if the flow emits them.
    pub syncs: Option<Arc<OffsetSyncs>>,
    /// The byte budget batches are charged to.
    pub budget: Arc<Budget>,
    /// Signalled when a paused partition has room again.
    pub resume: Arc<Notify>,
    /// Exactly-once mode.
    pub transactional: bool,
}

/// A partition's queue, shared by its cursor (which pushes) and the producer of its target
/// leader (which sends and takes the answers).
#[derive(Debug)]
pub(crate) struct PartitionQueue {
    /// The partition, on both clusters.
    pub route: Route,
    state: Mutex<QueueState>,
    /// Bytes held; past `cap` the cursor pauses the partition.
    buffered: AtomicUsize,
    cap: usize,
    failing: AtomicBool,
    stopped: AtomicBool,
    /// Whether the partition was taken from this process (revoked): nothing fetched after it
    /// is queued, and the queue only drains.
    retired: AtomicBool,
    /// Whether its cursor paused fetching; then room in the queue is signalled on `resume`.
    paused: AtomicBool,
    resume: Arc<Notify>,
    /// The producer that sends this partition now (none while it moves).
    producer: Mutex<Option<Arc<ReadyQueues>>>,
    /// Whether the queue is on its producer's ready list.
    pub(crate) in_ready: AtomicBool,
    /// The next source offset to fetch: the end of what was pushed (or the start).
    fetch_from: AtomicI64,
    /// The fetcher (worker id) the router handed its cursor to; 0 while the router holds it.
    pub(crate) fetched_by: AtomicU64,
    /// The producer (worker id) the router handed it to; 0 while the router holds it.
    pub(crate) sent_by: AtomicU64,
    /// When its source last answered for it (ms since the epoch): a Fetch that carried it,
    /// or its fetcher holding it paused without failing.
    source_answered_ms: AtomicI64,
    /// Why fetching it last failed (the request, the connection, or finding its leader).
    source_error: Mutex<Option<String>>,
    progress: Arc<PartitionProgress>,
    stats: Arc<PartitionStats>,
    offset_map: SharedPartitionMap,
    syncs: Option<Arc<OffsetSyncs>>,
    budget: Arc<Budget>,
    /// The target offset after the last record acknowledged by this process, -1 before one.
    target_next: AtomicI64,
}

impl PartitionQueue {
    /// The queue of `route`, fetched from `start`, pausing its fetching past `cap` bytes and
    /// signalling the data path's `resume` when a paused partition has room again.
    pub(crate) fn new(
        route: Route,
        start: i64,
        cap: usize,
        progress: Arc<PartitionProgress>,
        stats: Arc<PartitionStats>,
        offset_map: SharedPartitionMap,
        shared: &QueuesShared,
    ) -> Arc<PartitionQueue> {
        let state = if shared.transactional {
            QueueState::transactional()
        } else {
            QueueState::default()
        };
        Arc::new(PartitionQueue {
            route,
            state: Mutex::new(state),
            buffered: AtomicUsize::new(0),
            cap,
            failing: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            resume: shared.resume.clone(),
            producer: Mutex::new(None),
            in_ready: AtomicBool::new(false),
            fetch_from: AtomicI64::new(start),
            fetched_by: AtomicU64::new(0),
            sent_by: AtomicU64::new(0),
            source_answered_ms: AtomicI64::new(crate::internal_topics::now_ms()),
            source_error: Mutex::new(None),
            progress,
            stats,
            offset_map,
            syncs: shared.syncs.clone(),
            budget: shared.budget.clone(),
            target_next: AtomicI64::new(-1),
        })
    }

    /// The partition's stats.
    pub(crate) fn stats(&self) -> &Arc<PartitionStats> {
        &self.stats
    }

    /// The budget the queue's batches are charged to.
    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// Whether the cursor may fetch more for the partition: it is not stopped, its target does
    /// not fail, and it holds less than its cap.
    pub(crate) fn accepts_more(&self) -> bool {
        !self.stopped.load(Ordering::Acquire)
            && !self.retired.load(Ordering::Acquire)
            && !self.failing.load(Ordering::Acquire)
            && self.buffered.load(Ordering::Acquire) < self.cap
    }

    /// Whether a paused partition may fetch again: as [`accepts_more`](Self::accepts_more), with
    /// half its cap free, so that it does not flap.
    pub(crate) fn resumes(&self) -> bool {
        !self.stopped.load(Ordering::Acquire)
            && !self.retired.load(Ordering::Acquire)
            && !self.failing.load(Ordering::Acquire)
            && self.buffered.load(Ordering::Acquire) <= self.cap / 2
    }

    /// Whether the partition stopped.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Whether the partition was retired ([`retire`](Self::retire)).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Takes the partition out of the data path: what is fetched from now on is dropped (under
    /// the queue's lock, so that nothing lands after [`is_drained`](Self::is_drained) said
    /// yes), and what is queued is still sent and acknowledged.
    pub(crate) fn retire(&self) {
        let _state = self.state.lock().expect("queue lock");
        self.retired.store(true, Ordering::Release);
    }

    /// Whether a retired partition has nothing left on its way: every batch queued before it
    /// was retired was acknowledged (its position recorded), or the partition stopped.
    pub(crate) fn is_drained(&self) -> bool {
        self.is_retired() && (self.is_stopped() || self.state.lock().expect("queue lock").is_empty())
    }

    /// Runs `f` on the state and keeps the shared flags up to date; tells the fetchers when a
    /// paused partition has room again.
    fn with_state<R>(&self, f: impl FnOnce(&mut QueueState) -> R) -> R {
        let mut state = self.state.lock().expect("queue lock");
        let result = f(&mut state);
        self.buffered.store(state.buffered(), Ordering::Release);
        self.failing.store(state.is_failing(), Ordering::Release);
        drop(state);
        if self.paused.load(Ordering::Acquire) && self.resumes() {
            self.resume.notify_waiters();
        }
        result
    }

    /// Its cursor paused (or resumed) fetching it.
    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
    }

    /// Appends what the cursor fetched, records what needs no acknowledgement, and wakes the
    /// producer. Returns why the partition stops, if it does now.
    pub(crate) fn push(self: &Arc<Self>, entries: Vec<Entry>) -> Option<MirrorError> {
        let stop = self.with_state(|state| {
            if self.is_retired() {
                // Fetched after the partition was revoked: its new owner fetches it again.
                return None;
            }
            for entry in &entries {
                match entry {
                    Entry::Forward(outgoing) => {
                        self.fetch_from.fetch_max(outgoing.source_last + 1, Ordering::AcqRel);
                    }
                    Entry::Skip { last } => {
                        self.fetch_from.fetch_max(last + 1, Ordering::AcqRel);
                    }
                    // A recreated source topic's offsets start again, below the old ones.
                    Entry::Restart { start, .. } => self.fetch_from.store(*start, Ordering::Release),
                    Entry::Stop(_) => {}
                }
            }
            let recorded = state.push(entries);
            self.record(recorded)
        });
        if stop.is_some() {
            self.stopped.store(true, Ordering::Release);
        }
        self.wake();
        stop
    }

    /// Records an acknowledgement (or skipped offsets): progress, stats, the offset map and
    /// offset syncs (the map before the progress, which translation trusts).
    /// Called with the state locked, so that positions are recorded in order.
    pub(crate) fn record(&self, recorded: Recorded) -> Option<MirrorError> {
        if let Some((outgoing, base_offset)) = &recorded.acknowledged {
            let batch = &outgoing.batch;
            self.stats.record_acknowledged(
                batch.records_count() as u64,
                batch.size() as u64,
                batch.max_timestamp(),
                outgoing.fetched_at.elapsed(),
            );
            let mappings = outgoing.mappings(&self.route.source_topic, self.route.partition, *base_offset);
            let mut offset_map = self.offset_map.lock().expect("offset map lock");
            for mapping in &mappings {
                offset_map.record(mapping.source_offset, mapping.target_offset, i64::from(mapping.records));
                if let Some(syncs) = &self.syncs {
                    syncs.record(mapping);
                }
                let end = mapping.target_offset + i64::from(mapping.records);
                self.target_next.fetch_max(end, Ordering::AcqRel);
            }
        }
        if let Some((start, topic_id)) = recorded.restart {
            if let Some(last) = recorded.before_restart {
                self.progress.record(last);
            }
            self.progress.restart(start, topic_id);
            self.stats.record_position(start);
            if let Some(syncs) = &self.syncs {
                // The new topic's offsets are not translated with the old topic's syncs: a sync
                // at the restart point, where the target's end is known (else with the first
                // batch acknowledged).
                let next = Some(self.target_next.load(Ordering::Acquire)).filter(|&next| next >= 0);
                syncs.restart(&self.route.source_topic, self.route.partition, start, next);
            }
        }
        if let Some(last) = recorded.progress {
            self.progress.record(last);
            self.stats.record_position(last + 1);
        }
        recorded.stop
    }

    /// Where a new cursor of the partition fetches from: after everything pushed, so that
    /// what is queued is neither fetched twice nor skipped.
    pub(crate) fn fetch_from(&self) -> i64 {
        self.fetch_from.load(Ordering::Acquire)
    }

    /// Its source answered for it at `now_ms`.
    pub(crate) fn source_answered(&self, now_ms: i64) {
        self.source_answered_ms.store(now_ms, Ordering::Release);
    }

    /// Fetching it failed with `error`.
    pub(crate) fn source_failed(&self, error: &dyn std::fmt::Display) {
        *self.source_error.lock().expect("queue lock") = Some(error.to_string());
    }

    /// How long (ms) its source has not answered for it at `now_ms`, and the last error.
    pub(crate) fn source_silence(&self, now_ms: i64) -> (i64, Option<String>) {
        let silent = now_ms - self.source_answered_ms.load(Ordering::Acquire);
        (silent, self.source_error.lock().expect("queue lock").clone())
    }

    /// Whether its cursor paused fetching.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Acquire)
    }

    /// Its producer ended without answering the batches on the wire: they are sent again (see
    /// [`QueueState::abandon_in_flight`]) by the next producer it is handed to.
    pub(crate) fn abandon_producer(&self, error: &Error, delivery_timeout: Duration) {
        self.attach(None);
        self.in_ready.store(false, Ordering::Release);
        self.with_state(|state| state.abandon_in_flight(error));
        let _ = self.settle(Instant::now(), delivery_timeout);
    }

    /// Marks the partition stopped.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// The producer now sending this partition (`None` while it moves).
    pub(crate) fn attach(&self, producer: Option<Arc<ReadyQueues>>) {
        *self.producer.lock().expect("queue lock") = producer;
    }

    /// Puts the queue on its producer's ready list, if it is not there.
    pub(crate) fn wake(self: &Arc<Self>) {
        let producer = self.producer.lock().expect("queue lock").clone();
        if let Some(producer) = producer {
            if !self.in_ready.swap(true, Ordering::AcqRel) {
                producer.push(self.clone());
            }
        }
    }

    /// A batch of it failed with `error`. Returns whether the partition was failing already
    /// (a batch behind a refused one is refused in turn).
    pub(crate) fn failed(&self, request: u64, error: Error) -> bool {
        self.with_state(|state| {
            let failing = state.failure().is_some();
            let message = error.to_string();
            let leader_moved = Remedy::for_error(&error) == Remedy::Rehome;
            if state.failed(request, error) {
                let (first, last) = state.front_offsets().unwrap_or_default();
                // Leaders move routinely (a broker restarts, partitions are rebalanced), and
                // then thousands of partitions say so at once: counted in strait_errors_total.
                if leader_moved {
                    tracing::debug!(topic = %self.route.source_topic, partition = self.route.partition,
                        "producing source offsets {first}..={last} failed: {message}; sending again from the leader");
                } else {
                    tracing::warn!(topic = %self.route.source_topic, partition = self.route.partition,
                        "producing source offsets {first}..={last} failed: {message}; sending again in order");
                }
            }
            failing
        })
    }

    /// Once a failure's answers are all in: what it asks of the producer. Reports a batch not
    /// acknowledged within `delivery_timeout` (once per stretch).
    pub(crate) fn settle(&self, now: Instant, delivery_timeout: Duration) -> Settled {
        self.with_state(|state| {
            let settled = state.settle(now, &self.route, |bytes| self.budget.charge(bytes));
            if !matches!(settled, Settled::Waiting) && state.newly_overdue(now, delivery_timeout) {
                let (first, last) = state.front_offsets().unwrap_or_default();
                let why = format!(
                    "source offsets {first}..={last} not acknowledged by the target within delivery.timeout.ms ({} ms): {}; still retrying",
                    delivery_timeout.as_millis(),
                    state.failure().map_or_else(String::new, ToString::to_string)
                );
                tracing::error!(topic = %self.route.source_topic, partition = self.route.partition, "{why}");
                self.stats.failing(Some(why));
            }
            settled
        })
    }

    /// The next batch to send (see [`QueueState::next_batch`]).
    pub(crate) fn next_batch(&self, now: Instant, request: u64, current: ProducerIdAndEpoch, room: usize) -> Next {
        self.with_state(|state| state.next_batch(now, request, current, room))
    }

    /// A batch of it was acknowledged: the failure (if any) is over.
    pub(crate) fn acknowledged(&self, request: u64, base_offset: i64, now: Instant) -> Option<MirrorError> {
        self.with_state(|state| {
            let was_failing = state.is_failing();
            let recorded = state.acknowledged(request, base_offset, now);
            if recorded.acknowledged.is_some() && was_failing {
                tracing::info!(topic = %self.route.source_topic, partition = self.route.partition,
                    "the target acknowledges the partition's batches again");
            }
            let stop = self.record(recorded);
            if stop.is_some() {
                self.stopped.store(true, Ordering::Release);
            }
            stop
        })
    }
}

#[cfg(test)]
mod tests {
    use strait_client::kafka_protocol::error::ResponseError;
    use strait_wire::RecordBatch;

    use super::*;
    use crate::outgoing::tests::{batch_at, outgoing};

    fn now_for_tests() -> Instant {
        Instant::now()
    }

    const ID: ProducerIdAndEpoch = ProducerIdAndEpoch {
        producer_id: 7,
        producer_epoch: 0,
    };

    fn route() -> Route {
        Route::new("t", "src.t", 0)
    }

    /// A queue holding batches of 10 records at source offsets 0, 10, 20, …
    fn queue_of(batches: usize, budget: &Arc<Budget>) -> QueueState {
        let mut state = QueueState::default();
        let entries = (0..batches).map(|i| Entry::Forward(outgoing(batch_at(i as i64 * 10, 10), budget)));
        assert!(state.push(entries).progress.is_none());
        state
    }

    /// Sends the next batch in `request`: its (producer id, base sequence, source base offset).
    fn send(state: &mut QueueState, now: Instant, request: u64, current: ProducerIdAndEpoch) -> Option<(i64, i32)> {
        match state.next_batch(now, request, current, usize::MAX) {
            Next::Batch(sendable) => {
                let batch = RecordBatch::new(sendable.parts.concat().into()).unwrap();
                assert_eq!(batch.size(), sendable.size);
                Some((batch.producer_id(), batch.base_sequence()))
            }
            _ => None,
        }
    }

    fn error(code: ResponseError) -> Error {
        Error::kafka(code, "Produce src.t-0")
    }

    #[test]
    fn the_first_batch_goes_alone_until_the_producer_id_is_acknowledged_then_five_go() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(8, &budget);
        let now = Instant::now();
        assert_eq!(send(&mut state, now, 1, ID), Some((7, 0)));
        assert_eq!(send(&mut state, now, 2, ID), None, "one batch while the id is unknown");
        let recorded = state.acknowledged(1, 500, now);
        assert_eq!(recorded.progress, Some(9));
        assert_eq!(
            recorded.acknowledged.map(|(o, base)| (o.source_first(), base)),
            Some((0, 500))
        );
        let sequences: Vec<_> = (2..9).map_while(|r| send(&mut state, now, r, ID)).collect();
        assert_eq!(
            sequences,
            vec![(7, 10), (7, 20), (7, 30), (7, 40), (7, 50)],
            "five in flight"
        );
        // A minute without an acknowledgement: the target may have forgotten the id.
        let later = now + Duration::from_secs(61);
        for request in 2..7 {
            state.acknowledged(request, 0, now);
        }
        assert_eq!(state.buffered(), batch_at(0, 10).size() * 2);
        assert_eq!(send(&mut state, later, 10, ID), Some((7, 60)));
        assert_eq!(send(&mut state, later, 11, ID), None);
    }

    #[test]
    fn offsets_that_need_no_forwarding_are_recorded_once_everything_before_is_acknowledged() {
        let budget = Budget::new(1 << 20);
        let mut state = QueueState::default();
        let recorded = state.push([
            Entry::Forward(outgoing(batch_at(0, 10), &budget)),
            Entry::Skip { last: 14 },
            Entry::Forward(outgoing(batch_at(15, 5), &budget)),
        ]);
        assert!(recorded.progress.is_none(), "a batch is ahead of the skipped offsets");
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        assert_eq!(state.acknowledged(1, 0, now).progress, Some(14));
        send(&mut state, now, 2, ID);
        assert_eq!(state.acknowledged(2, 10, now).progress, Some(19));
        assert_eq!(
            state.push([Entry::Skip { last: 30 }]).progress,
            Some(30),
            "nothing ahead"
        );
    }

    #[test]
    fn a_failed_first_batch_waits_for_the_answers_behind_it_then_all_go_again_in_order_with_their_sequences() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(4, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        state.acknowledged(1, 0, now);
        for request in 2..5 {
            send(&mut state, now, request, ID);
        }
        assert!(state.failed(2, error(ResponseError::NotEnoughReplicas)));
        assert!(state.is_failing());
        assert!(matches!(
            state.settle(now, &route(), |b| budget.charge(b)),
            Settled::Waiting
        ));
        assert!(
            !state.failed(3, error(ResponseError::OutOfOrderSequenceNumber)),
            "behind the first"
        );
        assert!(
            state.acknowledged(4, 99, now).acknowledged.is_none(),
            "behind a failed batch"
        );
        let Settled::ResendAt(at) = state.settle(now, &route(), |b| budget.charge(b)) else {
            panic!("a retriable error is resent after a backoff");
        };
        assert!(at > now);
        assert!(matches!(state.next_batch(now, 5, ID, usize::MAX), Next::At(t) if t == at));
        let again: Vec<_> = (5..9).map_while(|r| send(&mut state, at, r, ID)).collect();
        assert_eq!(again, vec![(7, 10), (7, 20), (7, 30)], "the same sequences, in order");
        let recorded = state.acknowledged(5, 10, at);
        assert_eq!(recorded.progress, Some(19));
        assert!(!state.is_failing());
    }

    #[test]
    fn batches_on_the_wire_of_a_producer_that_ended_go_again_in_order_with_their_sequences() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(4, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        state.acknowledged(1, 0, now);
        for request in 2..5 {
            send(&mut state, now, request, ID);
        }
        // The producer task ended: no answer comes for requests 2 to 4.
        let gone = Error::ConnectionClosed {
            broker: "target broker 1".into(),
            reason: "the producer of target broker 1 panicked".into(),
        };
        state.abandon_in_flight(&gone);
        let Settled::ResendAt(at) = state.settle(now, &route(), |b| budget.charge(b)) else {
            panic!("sent again after a backoff");
        };
        let again: Vec<_> = (5..9).map_while(|r| send(&mut state, at, r, ID)).collect();
        assert_eq!(again, vec![(7, 10), (7, 20), (7, 30)], "the same sequences, in order");
        assert_eq!(state.acknowledged(5, 10, at).progress, Some(19));
    }

    #[test]
    fn a_sequence_error_takes_a_new_producer_id_and_numbers_the_batches_from_zero() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(3, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        state.acknowledged(1, 0, now);
        send(&mut state, now, 2, ID);
        state.failed(2, error(ResponseError::OutOfOrderSequenceNumber));
        let Settled::NewProducerId(stale, at) = state.settle(now, &route(), |b| budget.charge(b)) else {
            panic!("a sequence error asks for a new producer id");
        };
        assert_eq!(stale, ID);
        assert!(matches!(state.next_batch(at, 3, ID, usize::MAX), Next::NewProducerId(id) if id == ID));
        let fresh = ProducerIdAndEpoch {
            producer_id: 8,
            producer_epoch: 0,
        };
        assert_eq!(send(&mut state, at, 3, fresh), Some((8, 0)), "from sequence 0");
        assert_eq!(
            send(&mut state, at, 4, fresh),
            None,
            "alone: the target does not know the id yet"
        );
        state.acknowledged(3, 0, at);
        assert_eq!(send(&mut state, at, 4, fresh), Some((8, 10)));
    }

    #[test]
    fn a_batch_too_large_goes_again_as_two_halves_with_its_sequence_range() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(2, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        state.acknowledged(1, 0, now);
        send(&mut state, now, 2, ID); // Source offsets 10..=19, sequences 10..=19.
        state.failed(2, error(ResponseError::MessageTooLarge));
        assert!(matches!(
            state.settle(now, &route(), |b| budget.charge(b)),
            Settled::ResendAt(_)
        ));
        assert_eq!(state.front_offsets(), Some((10, 14)));
        assert_eq!(send(&mut state, now, 3, ID), Some((7, 10)));
        assert_eq!(
            send(&mut state, now, 4, ID),
            Some((7, 15)),
            "the tail follows the head's records"
        );
        assert_eq!(state.acknowledged(3, 5, now).progress, Some(14));
        assert_eq!(state.acknowledged(4, 10, now).progress, Some(19));
    }

    #[test]
    fn a_refused_batch_stops_the_partition_naming_its_offsets_and_the_code() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(2, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        state.failed(1, error(ResponseError::InvalidRecord));
        let Settled::Stop(error) = state.settle(now, &route(), |b| budget.charge(b)) else {
            panic!("INVALID_RECORD is for good");
        };
        assert_eq!(
            error.to_string(),
            "t-0: the target refused the batch of source offsets 0..=9: Produce src.t-0: INVALID_RECORD (87)"
        );
    }

    #[test]
    fn a_leader_that_moved_sends_the_partition_to_its_new_leader() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(1, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        state.failed(1, error(ResponseError::NotLeaderOrFollower));
        assert!(matches!(
            state.settle(now, &route(), |b| budget.charge(b)),
            Settled::Rehome(_)
        ));
    }

    #[test]
    fn a_restart_on_a_recreated_topic_is_recorded_after_the_old_topics_batches_and_before_the_new() {
        let budget = Budget::new(1 << 20);
        let mut state = QueueState::default();
        let id = TopicId([1; 16]);
        let recorded = state.push([
            Entry::Forward(outgoing(batch_at(100, 10), &budget)),
            Entry::Skip { last: 114 },
            Entry::Restart {
                start: 0,
                topic_id: Some(id),
            },
            Entry::Forward(outgoing(batch_at(0, 10), &budget)),
        ]);
        assert!(recorded.restart.is_none(), "behind a batch");
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        let recorded = state.acknowledged(1, 0, now);
        assert_eq!(recorded.before_restart, Some(114), "the old topic's last");
        assert_eq!(recorded.restart, Some((0, Some(id))));
        assert_eq!(recorded.progress, None, "nothing of the new topic yet");
        send(&mut state, now, 2, ID);
        let recorded = state.acknowledged(2, 10, now);
        assert_eq!((recorded.progress, recorded.restart), (Some(9), None));
        // Nothing ahead: recorded at once, with the new topic's skipped offsets after it.
        let recorded = state.push([
            Entry::Restart {
                start: 5,
                topic_id: None,
            },
            Entry::Skip { last: 7 },
        ]);
        assert_eq!(
            (recorded.before_restart, recorded.restart, recorded.progress),
            (None, Some((5, None)), Some(7))
        );
    }

    #[test]
    fn a_stop_waits_for_the_batches_before_it() {
        let budget = Budget::new(1 << 20);
        let mut state = QueueState::default();
        let stop = MirrorError::batch(
            "t",
            0,
            10,
            strait_wire::WireError::UnsupportedMagic {
                base_offset: 10,
                magic: 1,
            },
        );
        let recorded = state.push([Entry::Forward(outgoing(batch_at(0, 10), &budget)), Entry::Stop(stop)]);
        assert!(recorded.stop.is_none());
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        assert_eq!(send(&mut state, now, 2, ID), None);
        let recorded = state.acknowledged(1, 0, now);
        assert_eq!(recorded.progress, Some(9));
        assert!(recorded.stop.is_some(), "the stop is at the front now");
    }

    #[test]
    fn a_batch_that_does_not_fit_the_request_waits_for_the_next() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(1, &budget);
        let size = batch_at(0, 10).size();
        assert!(matches!(
            state.next_batch(Instant::now(), 1, ID, size - 1),
            Next::NoRoom
        ));
        assert!(matches!(state.next_batch(Instant::now(), 1, ID, size), Next::Batch(_)));
    }

    #[test]
    fn a_batch_not_acknowledged_within_the_delivery_timeout_is_reported_once() {
        let budget = Budget::new(1 << 20);
        let mut state = queue_of(1, &budget);
        let now = Instant::now();
        send(&mut state, now, 1, ID);
        let timeout = Duration::from_secs(120);
        assert!(!state.newly_overdue(now + Duration::from_secs(119), timeout));
        assert!(state.newly_overdue(now + timeout, timeout));
        assert!(!state.newly_overdue(now + timeout * 2, timeout), "once");
        state.acknowledged(1, 0, now);
        assert!(!state.newly_overdue(now + timeout * 3, timeout));
    }

    #[test]
    fn batches_failing_again_no_longer_hold_the_response_they_came_in() {
        let budget = Budget::new(1 << 20);
        let response = Arc::new(budget.charge(100_000));
        let mut state = QueueState::default();
        let batch = batch_at(0, 10);
        state.push([Entry::Forward(Outgoing {
            source_last: 9,
            source_offsets: None,
            charge: response.clone(),
            batch,
            fetched_at: now_for_tests(),
        })]);
        drop(response);
        let mut now = Instant::now();
        for request in 1..=2 {
            send(&mut state, now, request, ID);
            state.failed(request, error(ResponseError::NotEnoughReplicas));
            let Settled::ResendAt(at) = state.settle(now, &route(), |b| budget.charge(b)) else {
                panic!("resent");
            };
            now = at;
        }
        assert_eq!(budget.used(), batch_at(0, 10).size(), "the copy alone is held");
    }

    #[test]
    fn in_a_transaction_batches_are_transactional_and_a_new_epoch_numbers_them_from_zero() {
        let budget = Budget::new(1 << 20);
        let mut state = QueueState::transactional();
        let entries = (0..4).map(|i| Entry::Forward(outgoing(batch_at(i * 10, 10), &budget)));
        state.push(entries);
        let now = Instant::now();
        let sent =
            |state: &mut QueueState, request, identity| match state.next_batch(now, request, identity, usize::MAX) {
                Next::Batch(sendable) => {
                    let batch = RecordBatch::new(sendable.parts.concat().into()).unwrap();
                    assert!(batch.is_transactional());
                    Some((batch.producer_epoch(), batch.base_sequence()))
                }
                _ => None,
            };
        assert_eq!(sent(&mut state, 1, ID), Some((0, 0)));
        state.acknowledged(1, 0, now);
        assert_eq!(sent(&mut state, 2, ID), Some((0, 10)));
        state.acknowledged(2, 10, now);
        // The transaction committed: epoch 1, sequences from 0, still trusted (five may go).
        let bumped = ProducerIdAndEpoch {
            producer_epoch: 1,
            ..ID
        };
        assert_eq!(sent(&mut state, 3, bumped), Some((1, 0)));
        assert_eq!(sent(&mut state, 4, bumped), Some((1, 10)));
        // An idempotent queue keeps its identity until the target refuses it.
        let mut plain = queue_of(2, &budget);
        send(&mut plain, now, 5, ID);
        plain.acknowledged(5, 0, now);
        assert_eq!(send(&mut plain, now, 6, bumped), Some((7, 10)));
    }

    #[test]
    fn sequences_wrap_like_the_brokers() {
        assert_eq!(add_sequence(5, 10), 15);
        assert_eq!(add_sequence(i32::MAX - 1, 3), 1);
    }
}
