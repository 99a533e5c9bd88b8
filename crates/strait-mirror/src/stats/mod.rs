//! What a flow knows about itself while it runs: counters, MM2's per-partition metrics, lag,
//! request latencies, errors by Kafka code, the data path's fetches, connections and paused
//! partitions, and the state of the flow and of each partition: the state lives here, its
//! renderings beside it, as Prometheus text in `prometheus` ([`Stats::write_prometheus`]) and
//! as the `/status` JSON in `status` ([`Stats::status`]).
//!
//! The data path updates a partition through its own [`PartitionStats`] handle, so that
//! acknowledging a batch takes no lock shared with other partitions.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strait_client::ConnectionCounter;

use crate::internal_topics::now_ms;
use crate::metrics::{Histogram, Window};

mod prometheus;
mod status;
mod topics;

pub use topics::TopicRefusal;

/// Fetched, unmirrored batches listed per partition for the lag in seconds (a partition's queue
/// holds a few MiB; when more are fetched the oldest still tells the lag).
const UNMIRRORED_KEPT: usize = 256;

/// Errors kept per flow for `/status` and the status page, newest last.
const RECENT_ERRORS_KEPT: usize = 50;

/// Where a flow is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowState {
    /// Connecting and setting up; retried with backoff while the clusters are unreachable.
    Starting,
    /// Mirroring.
    Running,
    /// Draining after a stop was asked for.
    Stopping,
    /// Stopped cleanly.
    Stopped,
    /// Ended with an error that retrying does not fix.
    Failed,
}

impl FlowState {
    /// The name used in `/status` and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowState::Starting => "starting",
            FlowState::Running => "running",
            FlowState::Stopping => "stopping",
            FlowState::Stopped => "stopped",
            FlowState::Failed => "failed",
        }
    }
}

/// One partition's replication lag.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionLag {
    /// The source topic.
    pub topic: String,
    /// The remote topic on the target.
    pub remote_topic: String,
    /// The partition.
    pub partition: i32,
    /// The next source offset to mirror; `None` before the partition started.
    pub position: Option<i64>,
    /// The source log end offset last seen.
    pub source_end: Option<i64>,
    /// Records the target is behind (`source_end - position`).
    pub records: i64,
    /// How old the oldest record not yet mirrored is, by its timestamp (0 when caught up).
    /// Until that record is fetched, how long the partition has been behind its source end.
    /// `None` when read from the clusters rather than from a running mirror.
    pub seconds: Option<f64>,
}

/// An error the flow, one of its partitions or one of its periodic tasks met, and when.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RecentError {
    /// When it happened, in milliseconds since the epoch.
    pub time_ms: i64,
    /// What met it: `flow`, a task's name (`heartbeats`), or `<topic>-<partition>`.
    pub scope: String,
    /// The error.
    pub message: String,
}

/// A flow's partitions in a few numbers, as the status page plots them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FlowSummary {
    /// Partitions the flow mirrors.
    pub partitions: usize,
    /// Of which failing: a batch not acknowledged within `delivery.timeout.ms`, retrying.
    pub failing: usize,
    /// Of which stopped with an error that needs a person.
    pub stopped: usize,
    /// Records behind, summed over the partitions.
    pub lag_records: i64,
    /// The largest lag in seconds of any partition.
    pub lag_seconds: f64,
}

/// The flow-wide counters every partition adds to.
#[derive(Debug, Default)]
struct Totals {
    records: AtomicU64,
    bytes: AtomicU64,
    gap_records: AtomicU64,
    /// Records found on the target past the stored position at a partition's start, not sent
    /// again (see `landed`).
    resume_found_records: AtomicU64,
    /// Partition starts that resumed at the stored position without recognising what the target
    /// held past it (identical batches, or the reads failed): that may be written again.
    resume_fallbacks: AtomicU64,
    /// Partitions started again from the log start of a source topic deleted and created again
    /// under the same name (a new topic ID).
    source_recreations: AtomicU64,
    /// From a batch's fetch response to its acknowledgement: the time a batch spends in Strait.
    in_strait: Mutex<Histogram>,
    /// The last errors, oldest first; bounded, so a partition failing in a loop costs nothing.
    errors: Mutex<VecDeque<RecentError>>,
}

impl Totals {
    fn record_error(&self, scope: String, message: String) {
        let mut errors = self.errors.lock().expect("stats lock");
        if errors.len() == RECENT_ERRORS_KEPT {
            errors.pop_front();
        }
        errors.push_back(RecentError {
            time_ms: now_ms(),
            scope,
            message,
        });
    }
}

/// The live state of one partition, updated by the data path through this handle.
#[derive(Debug)]
pub(crate) struct PartitionStats {
    /// `<topic>-<partition>`, as errors name it.
    scope: String,
    remote_topic: String,
    totals: Arc<Totals>,
    inner: Mutex<PartitionInner>,
}

#[derive(Debug)]
struct PartitionInner {
    record_count: u64,
    byte_count: u64,
    records: Window,
    bytes: Window,
    record_age_ms: Window,
    replication_latency_ms: Window,
    gap_records: u64,
    resume_found_records: u64,
    resume_fallbacks: u64,
    source_recreations: u64,
    position: Option<i64>,
    source_end: Option<i64>,
    /// When the position last reached the source end (or the partition started).
    caught_up_ms: i64,
    /// Fetched batches not mirrored yet, oldest first: (last offset, first record's timestamp).
    unmirrored: VecDeque<(i64, i64)>,
    /// Why the partition stopped, if it did.
    error: Option<String>,
    /// Why the partition is failing (its batch not acknowledged within delivery.timeout.ms),
    /// while it is; it keeps retrying.
    failing: Option<String>,
    /// Why its source has not answered for it for too long (request.timeout.ms + the
    /// reconnect backoff), while it has not; it keeps retrying.
    source_failing: Option<String>,
}

impl PartitionInner {
    fn new(now: i64) -> Self {
        PartitionInner {
            record_count: 0,
            byte_count: 0,
            records: Window::new(now),
            bytes: Window::new(now),
            record_age_ms: Window::new(now),
            replication_latency_ms: Window::new(now),
            gap_records: 0,
            resume_found_records: 0,
            resume_fallbacks: 0,
            source_recreations: 0,
            position: None,
            source_end: None,
            caught_up_ms: now,
            unmirrored: VecDeque::new(),
            error: None,
            failing: None,
            source_failing: None,
        }
    }

    /// Why it is failing, if it is: its target, or its source.
    fn failing(&self) -> Option<&String> {
        self.failing.as_ref().or(self.source_failing.as_ref())
    }

    fn lag_records(&self) -> i64 {
        match (self.position, self.source_end) {
            (Some(position), Some(end)) => (end - position).max(0),
            _ => 0,
        }
    }

    fn note_caught_up(&mut self, now: i64) {
        if self.lag_records() == 0 {
            self.caught_up_ms = now;
        }
    }

    fn lag(&self, topic: &str, remote_topic: &str, partition: i32, now: i64) -> PartitionLag {
        let records = self.lag_records();
        PartitionLag {
            topic: topic.to_owned(),
            remote_topic: remote_topic.to_owned(),
            partition,
            position: self.position,
            source_end: self.source_end,
            records,
            seconds: Some(if records > 0 {
                let since = match self.unmirrored.front() {
                    Some(&(_, timestamp)) if timestamp >= 0 => timestamp,
                    _ => self.caught_up_ms,
                };
                (now - since).max(0) as f64 / 1000.0
            } else {
                0.0
            }),
        }
    }

    fn state(&self) -> &'static str {
        if self.error.is_some() {
            "stopped"
        } else if self.failing().is_some() {
            "failing"
        } else {
            "running"
        }
    }
}

impl PartitionStats {
    fn update<R>(&self, f: impl FnOnce(&mut PartitionInner, i64) -> R) -> R {
        f(&mut self.inner.lock().expect("stats lock"), now_ms())
    }

    /// The partition (re)starts at `position`.
    pub(crate) fn started(&self, position: i64) {
        self.update(|p, now| {
            p.position = Some(position);
            p.error = None;
            p.failing = None;
            p.source_failing = None;
            p.caught_up_ms = now;
        });
    }

    /// It stopped with an error that needs a person.
    pub(crate) fn stopped(&self, error: String) {
        self.totals.record_error(self.scope.clone(), error.clone());
        self.update(|p, _| p.error = Some(error));
    }

    /// Its batch is overdue (`Some`), or acknowledged again (`None`).
    pub(crate) fn failing(&self, why: Option<String>) {
        let changed = self.update(|p, _| {
            let changed = why.is_some() && p.failing != why;
            p.failing = why.clone();
            changed
        });
        if let (true, Some(why)) = (changed, why) {
            self.totals.record_error(self.scope.clone(), why);
        }
    }

    /// The source log end the last fetch saw, if one did.
    pub(crate) fn source_end(&self) -> Option<i64> {
        self.update(|p, _| p.source_end)
    }

    /// Its source has not answered for it for too long (`Some`), or answers again (`None`).
    pub(crate) fn source_failing(&self, why: Option<String>) {
        let changed = self.update(|p, _| {
            let changed = why.is_some() && p.source_failing != why;
            p.source_failing = why.clone();
            changed
        });
        if let (true, Some(why)) = (changed, why) {
            tracing::error!(partition = %self.scope, "{why}; still retrying");
            self.totals.record_error(self.scope.clone(), why);
        }
    }

    /// A fetch saw the source log end at `high_watermark`.
    pub(crate) fn record_source_end(&self, high_watermark: i64) {
        self.update(|p, now| {
            p.source_end = Some(high_watermark);
            p.note_caught_up(now);
        });
    }

    /// A batch ending at `last_offset`, whose first record has `first_timestamp` and newest
    /// `max_timestamp`, was fetched (MM2 measures record age when records are polled).
    pub(crate) fn record_polled(&self, last_offset: i64, first_timestamp: i64, max_timestamp: i64) {
        self.update(|p, now| {
            if max_timestamp >= 0 {
                p.record_age_ms.record((now - max_timestamp).max(0) as f64, now);
            }
            let newer = p.unmirrored.back().is_none_or(|&(last, _)| last_offset > last);
            if newer && p.unmirrored.len() < UNMIRRORED_KEPT {
                p.unmirrored.push_back((last_offset, first_timestamp));
            }
        });
    }

    /// Everything before `next` is mirrored (acknowledged, or needed no forwarding).
    pub(crate) fn record_position(&self, next: i64) {
        self.update(|p, now| {
            while p.unmirrored.front().is_some_and(|&(last, _)| last < next) {
                p.unmirrored.pop_front();
            }
            p.position = Some(next);
            p.note_caught_up(now);
        });
    }

    /// The target acknowledged a batch of `records` records and `bytes` bytes whose newest
    /// record has `max_timestamp`, `in_strait` after its fetch response arrived.
    pub(crate) fn record_acknowledged(&self, records: u64, bytes: u64, max_timestamp: i64, in_strait: Duration) {
        self.totals.records.fetch_add(records, Ordering::Relaxed);
        self.totals.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.totals
            .in_strait
            .lock()
            .expect("stats lock")
            .observe(in_strait.as_secs_f64());
        self.update(|p, now| {
            p.record_count += records;
            p.byte_count += bytes;
            p.records.record(records as f64, now);
            p.bytes.record(bytes as f64, now);
            if max_timestamp >= 0 {
                p.replication_latency_ms
                    .record((now - max_timestamp).max(0) as f64, now);
            }
            p.failing = None;
        });
    }

    /// `records` source records were deleted before they could be mirrored.
    pub(crate) fn record_gap(&self, records: i64) {
        let records = records.max(0) as u64;
        self.totals.gap_records.fetch_add(records, Ordering::Relaxed);
        self.update(|p, _| p.gap_records += records);
    }

    /// At its start, `records` records were found on the target past the stored position.
    pub(crate) fn record_resume_found(&self, records: i64) {
        let records = records.max(0) as u64;
        self.totals.resume_found_records.fetch_add(records, Ordering::Relaxed);
        self.update(|p, _| p.resume_found_records += records);
    }

    /// The source topic was deleted and created again (`why` says how it was seen): the
    /// partition starts again at the new topic's log start.
    pub(crate) fn record_recreation(&self, why: String) {
        self.totals.source_recreations.fetch_add(1, Ordering::Relaxed);
        self.totals.record_error(self.scope.clone(), why);
        self.update(|p, _| p.source_recreations += 1);
    }

    /// At its start, what the target held past the stored position was not recognised.
    pub(crate) fn record_resume_fallback(&self) {
        self.totals.resume_fallbacks.fetch_add(1, Ordering::Relaxed);
        self.update(|p, _| p.resume_fallbacks += 1);
    }
}

/// Live state of one flow.
#[derive(Debug)]
pub struct Stats {
    source: String,
    target: String,
    totals: Arc<Totals>,
    state: Mutex<(FlowState, Option<String>)>,
    partitions: Mutex<BTreeMap<(String, i32), Arc<PartitionStats>>>,
    /// Request latencies by (cluster, API).
    requests: Mutex<BTreeMap<(String, &'static str), Histogram>>,
    /// Errors by (cluster, API, Kafka error name).
    errors: Mutex<BTreeMap<(String, &'static str, String), u64>>,
    /// Checkpoint latency by (group, downstream topic, partition).
    checkpoints: Mutex<HashMap<(String, String, i32), Window>>,
    /// Records a group failing over would re-read, by (group, downstream topic, partition).
    rereads: Mutex<BTreeMap<(String, String, i32), i64>>,
    /// The stored size of the offset map, by (source topic, partition), in bytes.
    offset_map_bytes: Mutex<BTreeMap<(String, i32), usize>>,
    /// Records of the flow's own internal topics (progress, offset map) skipped at a load
    /// because they could not be read, by topic.
    unreadable: Mutex<BTreeMap<String, u64>>,
    /// Fetch requests by kind (`full`, `incremental`).
    fetches: Mutex<BTreeMap<&'static str, u64>>,
    /// Open connections by (cluster, role).
    connections: Mutex<Vec<(String, &'static str, ConnectionCounter)>>,
    /// Partitions whose fetching is paused because their queue is full or their target fails.
    paused: AtomicI64,
    /// The flow's periodic tasks (`heartbeats`, `checkpoints`) by name, with why each is
    /// failing while it is.
    tasks: Mutex<BTreeMap<&'static str, Option<String>>>,
    /// The data path's workers: restarts by kind, and those waiting to be restarted now.
    workers: Mutex<Workers>,
    /// Source topics whose remote topic the target refused, by name.
    waiting_topics: Mutex<BTreeMap<String, topics::Waiting>>,
    /// Topic discovery rounds that completed.
    discoveries: AtomicU64,
    /// ACL sync rounds whose ACLs the target took.
    acl_syncs: AtomicU64,
    /// The timestamp of the last heartbeat the target took, in ms; 0 before the first.
    last_heartbeat_ms: AtomicI64,
    /// Exactly-once mode: transactions the target committed and aborted.
    transactions: Arc<TransactionCounts>,
}

/// The data path's fetcher and producer tasks, as supervision sees them.
#[derive(Debug, Default)]
struct Workers {
    /// Restarts after a worker panicked or ended, by kind (`fetcher`, `producer`).
    restarts: BTreeMap<&'static str, u64>,
    /// Workers that ended and wait for their restart (their partitions have none), with why.
    down: BTreeMap<String, String>,
}

/// The kinds of the data path's workers.
pub(crate) const WORKER_KINDS: [&str; 2] = ["fetcher", "producer"];

/// Transactions a flow's exactly-once producer ended, over all its runs.
#[derive(Debug, Default)]
pub(crate) struct TransactionCounts {
    /// EndTxn commits the coordinator took.
    pub(crate) committed: AtomicU64,
    /// EndTxn aborts the coordinator took.
    pub(crate) aborted: AtomicU64,
}

impl Stats {
    /// The state of the flow `source->target`, starting.
    pub fn new(source: &str, target: &str) -> Self {
        Stats {
            source: source.to_owned(),
            target: target.to_owned(),
            totals: Arc::default(),
            state: Mutex::new((FlowState::Starting, None)),
            partitions: Mutex::default(),
            requests: Mutex::default(),
            errors: Mutex::default(),
            checkpoints: Mutex::default(),
            rereads: Mutex::default(),
            offset_map_bytes: Mutex::default(),
            // Both topics from the start, so that an alert sees the counter rise from 0.
            unreadable: Mutex::new(
                [
                    (crate::ProgressStore::topic_name(source), 0),
                    (crate::OffsetMap::topic_name(source), 0),
                ]
                .into(),
            ),
            fetches: Mutex::default(),
            connections: Mutex::default(),
            paused: AtomicI64::new(0),
            tasks: Mutex::default(),
            workers: Mutex::default(),
            waiting_topics: Mutex::default(),
            discoveries: AtomicU64::new(0),
            acl_syncs: AtomicU64::new(0),
            last_heartbeat_ms: AtomicI64::new(0),
            transactions: Arc::default(),
        }
    }

    /// The flow's name, `source->target`.
    pub fn flow(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    /// Records forwarded and acknowledged so far.
    pub fn records(&self) -> u64 {
        self.totals.records.load(Ordering::Relaxed)
    }

    /// Bytes (of record batches) forwarded and acknowledged so far.
    pub fn bytes(&self) -> u64 {
        self.totals.bytes.load(Ordering::Relaxed)
    }

    /// Source offsets deleted at the source before they could be mirrored.
    pub fn gap_records(&self) -> u64 {
        self.totals.gap_records.load(Ordering::Relaxed)
    }

    /// Partitions started again from the log start of a recreated source topic.
    pub fn source_recreations(&self) -> u64 {
        self.totals.source_recreations.load(Ordering::Relaxed)
    }

    /// Records found on the target past the stored position when partitions started (after a
    /// crash), and not sent again.
    pub fn resume_found_records(&self) -> u64 {
        self.totals.resume_found_records.load(Ordering::Relaxed)
    }

    /// Partition starts that resumed at the stored position without recognising what the
    /// target held past it: those records may be written again.
    pub fn resume_fallbacks(&self) -> u64 {
        self.totals.resume_fallbacks.load(Ordering::Relaxed)
    }

    /// Fetch requests sent so far, by kind: `full` (every partition) or `incremental` (KIP-227:
    /// only what changed).
    pub fn fetch_requests(&self, kind: &str) -> u64 {
        self.fetches.lock().expect("stats lock").get(kind).copied().unwrap_or(0)
    }

    /// Open connections of `role` (`fetch`, `produce`, `admin`) to `cluster`.
    pub fn connections(&self, cluster: &str, role: &str) -> i64 {
        self.connections
            .lock()
            .expect("stats lock")
            .iter()
            .filter(|(c, r, _)| c == cluster && *r == role)
            .map(|(_, _, counter)| counter.get())
            .sum()
    }

    /// Partitions whose fetching is paused now.
    pub fn paused_partitions(&self) -> i64 {
        self.paused.load(Ordering::Relaxed)
    }

    /// Topic discovery rounds completed so far (the first at start, then one every
    /// `refresh.topics.interval.seconds`): whatever a round would do is done once this grows.
    pub fn discovery_rounds(&self) -> u64 {
        self.discoveries.load(Ordering::Relaxed)
    }

    /// ACL sync rounds completed so far (every `sync.topic.acls.interval.seconds`, the target
    /// having taken the round's ACLs).
    pub fn acl_sync_rounds(&self) -> u64 {
        self.acl_syncs.load(Ordering::Relaxed)
    }

    /// Exactly-once mode: the counts of ended transactions, for the flow's producer to add to.
    pub(crate) fn transactions(&self) -> &Arc<TransactionCounts> {
        &self.transactions
    }

    /// When the target took the flow's last heartbeat (ms since the epoch), if it took one.
    pub fn last_heartbeat_ms(&self) -> Option<i64> {
        Some(self.last_heartbeat_ms.load(Ordering::Relaxed)).filter(|&ms| ms > 0)
    }

    /// The last errors of the flow, its partitions and its periodic tasks, oldest first.
    pub fn recent_errors(&self) -> Vec<RecentError> {
        self.totals.errors.lock().expect("stats lock").iter().cloned().collect()
    }

    /// The flow's state and its last error.
    pub fn state(&self) -> (FlowState, Option<String>) {
        self.state.lock().expect("stats lock").clone()
    }

    /// Whether the flow, its periodic tasks and all its partitions are running (or still
    /// starting), and no topic waits for its remote topic.
    pub fn is_healthy(&self) -> bool {
        let state = self.state().0;
        let partitions_ok = self.partitions.lock().expect("stats lock").values().all(|p| {
            let inner = p.inner.lock().expect("stats lock");
            inner.error.is_none() && inner.failing().is_none()
        });
        let tasks_ok = self.tasks.lock().expect("stats lock").values().all(Option::is_none);
        let workers_ok = self.workers.lock().expect("stats lock").down.is_empty();
        let topics_ok = self.waiting_topics.lock().expect("stats lock").is_empty();
        matches!(state, FlowState::Starting | FlowState::Running)
            && partitions_ok
            && tasks_ok
            && workers_ok
            && topics_ok
    }

    /// The data path's `worker` (of `kind`, `fetcher` or `producer`) ended, and why: it is
    /// restarted after a backoff; until then its partitions have no worker and `/health` is
    /// unhealthy.
    pub(crate) fn worker_down(&self, kind: &'static str, worker: &str, why: &str) {
        let mut workers = self.workers.lock().expect("stats lock");
        *workers.restarts.entry(kind).or_default() += 1;
        workers.down.insert(worker.to_owned(), why.to_owned());
        drop(workers);
        self.totals.record_error(worker.to_owned(), why.to_owned());
    }

    /// `worker` was restarted: its partitions are placed again.
    pub(crate) fn worker_up(&self, worker: &str) {
        self.workers.lock().expect("stats lock").down.remove(worker);
    }

    /// Restarts of the data path's workers of `kind` (`fetcher`, `producer`) so far.
    pub fn worker_restarts(&self, kind: &str) -> u64 {
        let workers = self.workers.lock().expect("stats lock");
        workers.restarts.get(kind).copied().unwrap_or(0)
    }

    /// Workers that ended and wait for their restart, with why.
    pub fn workers_down(&self) -> Vec<(String, String)> {
        let workers = self.workers.lock().expect("stats lock");
        workers.down.iter().map(|(w, why)| (w.clone(), why.clone())).collect()
    }

    /// The periodic task `task` runs (`None`) or fails, and why (`Some`): shown in `/status`,
    /// and `/health` is unhealthy while it fails.
    pub(crate) fn set_task(&self, task: &'static str, failing: Option<String>) {
        let before = self.tasks.lock().expect("stats lock").insert(task, failing.clone());
        if let Some(why) = failing.filter(|why| before.flatten().as_ref() != Some(why)) {
            self.totals.record_error(task.to_owned(), why);
        }
    }

    /// The target took a heartbeat stamped `timestamp_ms`.
    pub(crate) fn record_heartbeat(&self, timestamp_ms: i64) {
        self.last_heartbeat_ms.store(timestamp_ms, Ordering::Relaxed);
    }

    /// The periodic tasks that fail now, with why.
    pub fn failing_tasks(&self) -> Vec<(&'static str, String)> {
        self.tasks
            .lock()
            .expect("stats lock")
            .iter()
            .filter_map(|(&task, failing)| failing.clone().map(|why| (task, why)))
            .collect()
    }

    /// Partitions with fetched batches the target has not acknowledged, with the position a
    /// restart fetches them again from.
    pub fn unacknowledged(&self) -> Vec<(String, i32, Option<i64>)> {
        self.partitions
            .lock()
            .expect("stats lock")
            .iter()
            .filter_map(|((topic, partition), handle)| {
                let p = handle.inner.lock().expect("stats lock");
                (!p.unmirrored.is_empty()).then(|| (topic.clone(), *partition, p.position))
            })
            .collect()
    }

    /// The flow's partitions counted by state, with their total lag in records and the largest
    /// in seconds.
    pub fn summary(&self) -> FlowSummary {
        let now = now_ms();
        let partitions = self.partitions.lock().expect("stats lock");
        let mut summary = FlowSummary {
            partitions: partitions.len(),
            ..FlowSummary::default()
        };
        for ((topic, partition), handle) in partitions.iter() {
            let p = handle.inner.lock().expect("stats lock");
            match p.state() {
                "stopped" => summary.stopped += 1,
                "failing" => summary.failing += 1,
                _ => {}
            }
            let lag = p.lag(topic, &handle.remote_topic, *partition, now);
            summary.lag_records += lag.records;
            summary.lag_seconds = summary.lag_seconds.max(lag.seconds.unwrap_or_default());
        }
        summary
    }

    /// The lag of every partition the flow mirrors.
    pub fn lag(&self) -> Vec<PartitionLag> {
        let now = now_ms();
        let partitions = self.partitions.lock().expect("stats lock");
        partitions
            .iter()
            .map(|((topic, partition), p)| {
                p.inner
                    .lock()
                    .expect("stats lock")
                    .lag(topic, &p.remote_topic, *partition, now)
            })
            .collect()
    }

    pub(crate) fn set_state(&self, state: FlowState, error: Option<String>) {
        let mut current = self.state.lock().expect("stats lock");
        if let Some(why) = error.as_ref().filter(|&why| current.1.as_ref() != Some(why)) {
            self.totals.record_error("flow".to_owned(), why.clone());
        }
        // A failure stays visible until the flow runs again.
        let error = error.or_else(|| (state == FlowState::Stopping).then(|| current.1.clone()).flatten());
        *current = (state, error);
    }

    /// The handle of a partition the flow mirrors (created on first use).
    pub(crate) fn partition(&self, topic: &str, remote_topic: &str, partition: i32) -> Arc<PartitionStats> {
        let mut partitions = self.partitions.lock().expect("stats lock");
        partitions
            .entry((topic.to_owned(), partition))
            .or_insert_with(|| {
                Arc::new(PartitionStats {
                    scope: format!("{topic}-{partition}"),
                    remote_topic: remote_topic.to_owned(),
                    totals: self.totals.clone(),
                    inner: Mutex::new(PartitionInner::new(now_ms())),
                })
            })
            .clone()
    }

    /// Each mirrored partition's acknowledged bytes per second over the last minute, as the
    /// group's leader balances them.
    pub(crate) fn partition_rates(&self) -> Vec<((String, i32), u64)> {
        let now = now_ms();
        let partitions = self.partitions.lock().expect("stats lock");
        partitions
            .iter()
            .map(|(key, stats)| (key.clone(), stats.update(|inner, _| inner.bytes.rate(now)) as u64))
            .collect()
    }

    /// Drops a partition this process no longer mirrors (its group gave it to another member).
    pub(crate) fn forget_partition(&self, topic: &str, partition: i32) {
        self.partitions
            .lock()
            .expect("stats lock")
            .remove(&(topic.to_owned(), partition));
    }

    /// A request to `cluster` took `elapsed`.
    pub(crate) fn record_request(&self, cluster: &str, api: &'static str, elapsed: Duration) {
        let mut requests = self.requests.lock().expect("stats lock");
        requests
            .entry((cluster.to_owned(), api))
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// A request to `cluster` failed with `error`.
    pub(crate) fn record_error(&self, cluster: &str, api: &'static str, error: &strait_client::Error) {
        self.record_error_code(cluster, api, error_code(error));
    }

    /// A request to `cluster` failed, or brought back something unusable, with Kafka error `code`.
    pub(crate) fn record_error_code(&self, cluster: &str, api: &'static str, code: String) {
        let mut errors = self.errors.lock().expect("stats lock");
        *errors.entry((cluster.to_owned(), api, code)).or_default() += 1;
    }

    /// A Fetch request of `kind` was sent.
    pub(crate) fn record_fetch(&self, kind: strait_client::FetchKind) {
        *self
            .fetches
            .lock()
            .expect("stats lock")
            .entry(kind.as_str())
            .or_default() += 1;
    }

    /// Counts the connections of `counter` as `role` connections to `cluster`.
    pub(crate) fn count_connections(&self, cluster: &str, role: &'static str, counter: ConnectionCounter) {
        self.connections
            .lock()
            .expect("stats lock")
            .push((cluster.to_owned(), role, counter));
    }

    /// A topic discovery round completed, and its partitions were handed to the data path.
    pub(crate) fn record_discovery(&self) {
        self.discoveries.fetch_add(1, Ordering::Relaxed);
    }

    /// An ACL sync round completed.
    pub(crate) fn record_acl_sync(&self) {
        self.acl_syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// `delta` more (or fewer) partitions are paused.
    pub(crate) fn add_paused(&self, delta: i64) {
        self.paused.fetch_add(delta, Ordering::Relaxed);
    }

    /// A group failing over to `topic`-`partition` now would re-read `rereads` records (0 when
    /// its translation is exact).
    pub(crate) fn record_rereads(&self, group: &str, topic: &str, partition: i32, rereads: i64) {
        let mut all = self.rereads.lock().expect("stats lock");
        all.insert((group.to_owned(), topic.to_owned(), partition), rereads);
    }

    /// `records` of the internal topic `topic` were skipped at a load: they cannot be read.
    pub(crate) fn record_unreadable(&self, topic: &str, records: usize) {
        *self
            .unreadable
            .lock()
            .expect("stats lock")
            .entry(topic.to_owned())
            .or_default() += records as u64;
    }

    /// Records of the flow's internal topics skipped because they could not be read, by topic.
    pub fn unreadable_records_by_topic(&self) -> BTreeMap<String, u64> {
        self.unreadable.lock().expect("stats lock").clone()
    }

    /// Records of the flow's internal topics skipped because they could not be read.
    pub fn unreadable_records(&self) -> u64 {
        self.unreadable.lock().expect("stats lock").values().sum()
    }

    /// The offset map's stored size per partition, after a prune.
    pub(crate) fn record_offset_map_bytes(&self, sizes: BTreeMap<(String, i32), usize>) {
        *self.offset_map_bytes.lock().expect("stats lock") = sizes;
    }

    /// A checkpoint took `latency_ms` from reading the group's offsets to the target's ack.
    pub(crate) fn record_checkpoint(&self, group: &str, topic: &str, partition: i32, latency_ms: i64) {
        let now = now_ms();
        let mut checkpoints = self.checkpoints.lock().expect("stats lock");
        checkpoints
            .entry((group.to_owned(), topic.to_owned(), partition))
            .or_insert_with(|| Window::new(now))
            .record(latency_ms as f64, now);
    }
}

/// The Kafka error name of a failed request; client-side failures get the name Kafka's Java
/// client reports for them.
fn error_code(error: &strait_client::Error) -> String {
    use strait_client::Error;
    match error {
        Error::Kafka { code, .. } => code.name(),
        Error::Timeout { .. } => "REQUEST_TIMED_OUT".into(),
        Error::NoBroker(_) => "BROKER_NOT_AVAILABLE".into(),
        Error::NoCommonVersion { .. } => "UNSUPPORTED_VERSION".into(),
        Error::Protocol { .. } => "CORRUPT_MESSAGE".into(),
        // Connection failures (I/O, framing, TLS).
        _ => "NETWORK_EXCEPTION".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PrometheusText;

    #[test]
    fn lag_follows_position_and_source_end() {
        let stats = Stats::new("a", "b");
        let p = stats.partition("t", "a.t", 0);
        p.started(10);
        assert_eq!(stats.lag()[0].records, 0, "no source end seen yet");
        p.record_source_end(25);
        p.record_polled(19, now_ms() - 60_000, now_ms() - 50_000);
        p.record_polled(24, now_ms() - 40_000, now_ms() - 5);
        let lag = &stats.lag()[0];
        assert_eq!((lag.records, lag.position, lag.source_end), (15, Some(10), Some(25)));
        let seconds = lag.seconds.unwrap();
        assert!(
            (60.0..61.0).contains(&seconds),
            "the oldest unmirrored record: {seconds}"
        );
        p.record_position(20);
        let seconds = stats.lag()[0].seconds.unwrap();
        assert!((40.0..41.0).contains(&seconds), "the next oldest: {seconds}");
        let summary = stats.summary();
        assert_eq!(summary.lag_records, 5);
        assert!((40.0..41.0).contains(&summary.lag_seconds), "{summary:?}");
        p.record_acknowledged(15, 1500, now_ms() - 5, Duration::from_millis(3));
        p.record_position(25);
        let lag = &stats.lag()[0];
        assert_eq!((lag.records, lag.seconds), (0, Some(0.0)));
        assert_eq!((stats.records(), stats.bytes()), (15, 1500));
        let mut text = PrometheusText::default();
        stats.write_prometheus(&mut text);
        let text = text.finish();
        let labels = "{source=\"a\",target=\"b\",topic=\"a.t\",partition=\"0\"}";
        assert!(text.contains(&format!(
            "kafka_connect_mirror_source_connector_record_count_total{labels} 15\n"
        )));
        assert!(text.contains(&format!(
            "kafka_connect_mirror_source_connector_byte_count_total{labels} 1500\n"
        )));
        assert!(text.contains(&format!("strait_replication_lag_records{labels} 0\n")));
        assert!(text.contains("kafka_connect_mirror_source_connector_replication_latency_ms_max{"));
        assert!(
            text.contains("strait_batch_latency_seconds_bucket{source=\"a\",target=\"b\",le=\"0.005\"} 1\n"),
            "{text}"
        );
        assert_eq!(stats.status()["partitions"][0]["lag_records"], 0);
    }

    #[test]
    fn a_failing_partition_is_unhealthy_until_acknowledged_again() {
        let stats = Stats::new("a", "b");
        stats.set_state(FlowState::Running, None);
        let p = stats.partition("t", "a.t", 3);
        p.started(0);
        assert!(stats.is_healthy());
        p.failing(Some("not acknowledged within delivery.timeout.ms".into()));
        assert!(!stats.is_healthy());
        assert_eq!(stats.status()["partitions"][0]["state"], "failing");
        let summary = stats.summary();
        assert_eq!((summary.partitions, summary.failing, summary.stopped), (1, 1, 0));
        let mut text = PrometheusText::default();
        stats.write_prometheus(&mut text);
        assert!(text
            .finish()
            .contains("strait_partition_up{source=\"a\",target=\"b\",topic=\"a.t\",partition=\"3\"} 0\n"));
        p.record_acknowledged(1, 100, -1, Duration::from_millis(3));
        assert!(stats.is_healthy());
        assert_eq!(stats.status()["partitions"][0]["state"], "running");
    }

    #[test]
    fn a_partition_its_source_does_not_answer_is_failing_until_it_answers_again() {
        let stats = Stats::new("a", "b");
        stats.set_state(FlowState::Running, None);
        let p = stats.partition("t", "a.t", 1);
        p.started(0);
        p.source_failing(Some("SASL_AUTHENTICATION_FAILED".into()));
        assert!(!stats.is_healthy());
        assert_eq!(stats.status()["partitions"][0]["state"], "failing");
        assert_eq!(
            stats.status()["partitions"][0]["last_error"],
            "SASL_AUTHENTICATION_FAILED"
        );
        // An acknowledgement says the target answers, not the source.
        p.record_acknowledged(1, 100, -1, Duration::from_millis(3));
        assert!(!stats.is_healthy());
        p.source_failing(None);
        assert!(stats.is_healthy());
        assert_eq!(stats.status()["partitions"][0]["state"], "running");
    }

    #[test]
    fn a_failing_task_is_unhealthy_and_shown_until_it_runs_again() {
        let stats = Stats::new("a", "b");
        stats.set_state(FlowState::Running, None);
        stats.set_task("heartbeats", None);
        assert!(stats.is_healthy());
        assert_eq!(stats.status()["tasks"]["heartbeats"]["state"], "running");
        stats.set_task("heartbeats", Some("TOPIC_AUTHORIZATION_FAILED".into()));
        assert!(!stats.is_healthy());
        assert_eq!(
            stats.failing_tasks(),
            [("heartbeats", "TOPIC_AUTHORIZATION_FAILED".to_owned())]
        );
        assert_eq!(stats.status()["tasks"]["heartbeats"]["state"], "failing");
        assert_eq!(
            stats.status()["tasks"]["heartbeats"]["last_error"],
            "TOPIC_AUTHORIZATION_FAILED"
        );
        stats.set_task("heartbeats", Some("TOPIC_AUTHORIZATION_FAILED".into()));
        let errors = stats.recent_errors();
        assert_eq!(errors.len(), 1, "the same failure again is not a new error: {errors:?}");
        assert_eq!(
            (errors[0].scope.as_str(), errors[0].message.as_str()),
            ("heartbeats", "TOPIC_AUTHORIZATION_FAILED")
        );
        assert!(errors[0].time_ms > 0);
        stats.set_task("heartbeats", None);
        assert!(stats.is_healthy());
        assert_eq!(stats.status()["recent_errors"][0]["scope"], "heartbeats");
        let mut text = PrometheusText::default();
        stats.write_prometheus(&mut text);
        assert!(text
            .finish()
            .contains("strait_task_up{source=\"a\",target=\"b\",task=\"heartbeats\"} 1\n"));
    }

    #[test]
    fn a_worker_waiting_for_its_restart_is_unhealthy_counted_and_shown() {
        let stats = Stats::new("a", "b");
        stats.set_state(FlowState::Running, None);
        stats.worker_down("fetcher", "fetcher of source broker 1", "panicked: boom");
        assert!(!stats.is_healthy());
        assert_eq!(stats.worker_restarts("fetcher"), 1);
        assert_eq!(
            stats.status()["workers"]["restarting"]["fetcher of source broker 1"],
            "panicked: boom"
        );
        assert_eq!(stats.recent_errors()[0].scope, "fetcher of source broker 1");
        stats.worker_up("fetcher of source broker 1");
        assert!(stats.is_healthy());
        assert_eq!(stats.status()["workers"]["restarts"]["fetcher"], 1);
        let mut text = PrometheusText::default();
        stats.write_prometheus(&mut text);
        let text = text.finish();
        assert!(
            text.contains("strait_worker_restarts_total{source=\"a\",target=\"b\",worker=\"fetcher\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("strait_worker_restarts_total{source=\"a\",target=\"b\",worker=\"producer\"} 0\n"));
        assert!(text.contains("strait_workers_restarting{source=\"a\",target=\"b\"} 0\n"));
    }

    #[test]
    fn errors_are_kept_with_their_scope_and_bounded() {
        let stats = Stats::new("a", "b");
        let p = stats.partition("t", "a.t", 7);
        p.failing(Some("overdue".into()));
        p.failing(Some("overdue".into()));
        p.stopped("TOPIC_AUTHORIZATION_FAILED".into());
        stats.set_state(FlowState::Failed, Some("gone".into()));
        let errors: Vec<_> = stats
            .recent_errors()
            .into_iter()
            .map(|e| (e.scope, e.message))
            .collect();
        assert_eq!(
            errors,
            [
                ("t-7".to_owned(), "overdue".to_owned()),
                ("t-7".to_owned(), "TOPIC_AUTHORIZATION_FAILED".to_owned()),
                ("flow".to_owned(), "gone".to_owned()),
            ]
        );
        for i in 0..2 * RECENT_ERRORS_KEPT {
            p.stopped(format!("error {i}"));
        }
        let errors = stats.recent_errors();
        assert_eq!(errors.len(), RECENT_ERRORS_KEPT);
        assert_eq!(
            errors.last().unwrap().message,
            format!("error {}", 2 * RECENT_ERRORS_KEPT - 1)
        );
    }

    #[test]
    fn the_last_heartbeat_is_shown_once_there_is_one() {
        let stats = Stats::new("a", "b");
        let render = |stats: &Stats| {
            let mut text = PrometheusText::default();
            stats.write_prometheus(&mut text);
            text.finish()
        };
        assert!(!render(&stats).contains("strait_heartbeat_last_timestamp_seconds"));
        assert_eq!(stats.status()["last_heartbeat_ms"], serde_json::Value::Null);
        stats.record_heartbeat(1_700_000_000_500);
        assert!(render(&stats)
            .contains("strait_heartbeat_last_timestamp_seconds{source=\"a\",target=\"b\"} 1700000000.5\n"));
        assert_eq!(stats.status()["last_heartbeat_ms"], 1_700_000_000_500i64);
    }

    #[test]
    fn partitions_with_fetched_unacknowledged_batches_are_listed_with_their_position() {
        let stats = Stats::new("a", "b");
        let idle = stats.partition("t", "a.t", 0);
        idle.started(5);
        let busy = stats.partition("t", "a.t", 1);
        busy.started(10);
        busy.record_polled(19, now_ms(), now_ms());
        assert_eq!(stats.unacknowledged(), [("t".to_owned(), 1, Some(10))]);
        busy.record_position(20);
        assert!(stats.unacknowledged().is_empty());
    }

    #[test]
    fn data_path_gauges_are_rendered() {
        let stats = Stats::new("a", "b");
        let counter = ConnectionCounter::new();
        stats.count_connections("a", "fetch", counter);
        stats.record_fetch(strait_client::FetchKind::Full);
        stats.record_fetch(strait_client::FetchKind::Incremental);
        stats.record_fetch(strait_client::FetchKind::Incremental);
        stats.add_paused(2);
        assert_eq!(stats.fetch_requests("incremental"), 2);
        assert_eq!(stats.connections("a", "fetch"), 0);
        let mut text = PrometheusText::default();
        stats.write_prometheus(&mut text);
        let text = text.finish();
        assert!(
            text.contains("strait_fetch_requests_total{source=\"a\",target=\"b\",kind=\"incremental\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("strait_paused_partitions{source=\"a\",target=\"b\"} 2\n"));
        assert!(text.contains("strait_connections{source=\"a\",target=\"b\",cluster=\"a\",role=\"fetch\"} 0\n"));
    }
}
