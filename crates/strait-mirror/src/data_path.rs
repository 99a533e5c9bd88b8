//! The data path of one flow: a fetcher per source broker with a cursor per partition, a
//! producer per target broker with a queue per partition, and the router that places each
//! partition's cursor with the fetcher of its source leader and its queue with the producer of
//! its target leader, again whenever a leader moves.
//!
//! ```text
//! source brokers ──Fetch──▶ fetcher ─▶ cursor ─▶ queue ─▶ producer ──Produce──▶ target brokers
//!                           (one per    (one per partition)   (one per
//!                            broker)                            broker)
//! ```
//!
//! Fetchers and producers report partitions that must move (their leader changed, their broker
//! is gone) or stop; the router finds their new home from fresh metadata, with a jittered
//! backoff so that thousands of partitions do not ask in lockstep.
//!
//! The router supervises its workers: one that panics or ends is noticed at once, logged,
//! counted (`strait_worker_restarts_total`), and started again after a backoff
//! ([`RESTART_BACKOFF`]); meanwhile its partitions have no worker and `/health` says so. Its
//! cursors start again where their queue ends (what was fetched is still queued), and the
//! batches it had on the wire are sent again with their sequences, so the target keeps each once.

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strait_client::{Backoff, KafkaClient, OffsetSpec, TopicId};
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::{Id as TaskId, JoinError, JoinHandle, JoinSet};

use crate::data_path_config::{DataPathConfig, OffsetReset};
use crate::event::Event;
use crate::route::Route;
use crate::sink::producer::{self, SinkContext};
use crate::sink::producer_id::ProducerIds;
use crate::sink::queue::{PartitionQueue, QueuesShared};
use crate::source::cursor::Cursor;
use crate::source::fetcher::{self, recreation_message, SourceContext};
use crate::source::TopicIds;
use crate::MirrorError;

/// Bytes of fetched batches a partition's queue holds before its fetching pauses, as a multiple
/// of `max.partition.fetch.bytes`: one fetch's worth on its way while one is produced.
const QUEUE_CAP_FETCHES: usize = 2;
/// How long reports of partitions to move are gathered before one metadata request places them.
const GATHER: Duration = Duration::from_millis(20);
/// How long a worker that ended waits before it is started again: at first (half to all of
/// it), and at most, as it keeps ending.
pub(crate) const RESTART_BACKOFF: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(60));
/// A worker that ran this long before it ended is restarted after the first delay again.
const RESTART_RESET_AFTER: Duration = Duration::from_secs(60);
/// How often partitions are checked for a source that stopped answering.
const SOURCE_CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long a partition's source may not answer for it before it is `failing`: the source's
/// `request.timeout.ms` (a request's longest wait) plus the fetcher's longest reconnect backoff.
pub(crate) fn source_bound(request_timeout: Duration) -> Duration {
    request_timeout + fetcher::BACKOFF.1
}

/// Checks every [`SOURCE_CHECK_EVERY`] that the source answers for each of `watched`: those it
/// has not answered for within `bound` turn `failing`, with the last error (an authentication
/// refused, a broker gone); back to `running` once it answers again. A task of its own, so that
/// the router waiting for an unreachable cluster does not hold the check up.
async fn check_sources(watched: Arc<Mutex<Vec<Arc<PartitionQueue>>>>, bound: Duration) {
    let mut every = tokio::time::interval(SOURCE_CHECK_EVERY);
    loop {
        every.tick().await;
        let now = crate::internal_topics::now_ms();
        let queues = watched.lock().expect("watched lock").clone();
        for queue in queues.iter().filter(|q| !q.is_stopped() && !q.is_retired()) {
            let (silent, error) = queue.source_silence(now);
            let failing = (silent > bound.as_millis() as i64).then(|| {
                format!(
                    "the source has not answered for the partition for over {} s (request.timeout.ms + {} s): {}",
                    bound.as_secs(),
                    fetcher::BACKOFF.1.as_secs(),
                    error.as_deref().unwrap_or("no error seen")
                )
            });
            queue.stats().source_failing(failing);
        }
    }
}

/// A task that ends with its handle.
#[derive(Debug)]
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Worker ids, unique in the process (0: none).
static NEXT_WORKER: AtomicU64 = AtomicU64::new(1);

/// The running data path of one flow.
#[derive(Debug)]
pub(crate) struct DataPath {
    events: mpsc::UnboundedSender<Event>,
    stop: watch::Sender<bool>,
    task: JoinHandle<Option<MirrorError>>,
}

impl DataPath {
    /// Starts the data path: gets the target's producer id (the transaction's in exactly-once
    /// mode), then waits for partitions.
    pub(crate) async fn start(config: DataPathConfig) -> Result<DataPath, MirrorError> {
        let ids = match &config.transaction {
            Some(transaction) => transaction.ids().clone(),
            None => ProducerIds::init(&config.target, &config.target_alias).await?,
        };
        let (events, receiver) = mpsc::unbounded_channel();
        let (stop, stopped) = watch::channel(false);
        let fetch_connections = strait_client::ConnectionCounter::new();
        let produce_connections = strait_client::ConnectionCounter::new();
        config
            .stats
            .count_connections(&config.source_alias, "fetch", fetch_connections.clone());
        config
            .stats
            .count_connections(&config.target_alias, "produce", produce_connections.clone());
        let mut fetch_connection = config.source.config().connection.clone();
        fetch_connection.counter = fetch_connections;
        let mut produce_connection = config.target.config().connection.clone();
        produce_connection.counter = produce_connections;
        let resume = Arc::new(Notify::new());
        let watched = Arc::new(Mutex::new(Vec::new()));
        let checker = AbortOnDrop(tokio::spawn(check_sources(
            watched.clone(),
            source_bound(fetch_connection.request_timeout),
        )));
        let source = Arc::new(SourceContext {
            client: config.source.clone(),
            alias: config.source_alias.clone(),
            params: config.fetch.clone(),
            partition_max_bytes: config.partition_max_bytes,
            preferred_lease: config.preferred_lease,
            budget: config.budget.clone(),
            stats: config.stats.clone(),
            events: events.clone(),
            connection: fetch_connection,
            resume: resume.clone(),
            retirements: AtomicU64::new(0),
            topic_ids: TopicIds::default(),
        });
        let sink = Arc::new(SinkContext {
            client: config.target.clone(),
            alias: config.target_alias.clone(),
            settings: config.produce.clone(),
            ids,
            stats: config.stats.clone(),
            events: events.clone(),
            connection: produce_connection,
            transaction: config.transaction.clone(),
        });
        let router = Router {
            stop_fetchers: watch::channel(false).0,
            stop_producers: watch::channel(false).0,
            config,
            source,
            sink,
            resume,
            fetchers: HashMap::new(),
            producers: HashMap::new(),
            fetcher_tasks: JoinSet::new(),
            producer_tasks: JoinSet::new(),
            restarts: HashMap::new(),
            watched,
            _checker: checker,
            known: HashSet::new(),
            mirrored: HashMap::new(),
            first_stop: None,
            said_no_topic_ids: false,
            cursors: Vec::new(),
            queues: Vec::new(),
            place_at: None,
            backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(10)),
        };
        let task = tokio::spawn(router.run(receiver, stopped));
        Ok(DataPath { events, stop, task })
    }

    /// Mirrors `routes` (those not mirrored yet).
    pub(crate) fn add(&self, routes: Vec<Route>) {
        let _ = self.events.send(Event::Add(routes));
    }

    /// Stops mirroring `partitions` (source topic and partition): their fetching stops at once,
    /// and this returns once every batch fetched before was acknowledged, so that their
    /// positions are recorded (to be stored by the next flush). Past `within`, what is left is
    /// not sent any more ([`NotDrained`]: a new owner fetches it again). They can be added again.
    pub(crate) fn remove(
        &self,
        partitions: Vec<(String, i32)>,
        within: Duration,
    ) -> impl std::future::Future<Output = Result<(), NotDrained>> + Send + 'static {
        let deadline = tokio::time::Instant::now() + within;
        let (reply, queues) = oneshot::channel();
        // Sent now, so that fetching stops before the caller awaits anything.
        let _ = self.events.send(Event::Remove { partitions, reply });
        async move {
            // Not answered: the data path ended, and nothing of it is sent any more.
            let Ok(queues) = queues.await else {
                return Ok(());
            };
            // Acknowledgements arrive on the producers' tasks; a short poll keeps the queues
            // free of a notifier each.
            let mut poll = tokio::time::interval(Duration::from_millis(10));
            loop {
                if queues.iter().all(|q| q.is_drained()) {
                    return Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    for queue in queues.iter().filter(|q| !q.is_drained()) {
                        queue.stop();
                    }
                    return Err(NotDrained);
                }
                poll.tick().await;
            }
        }
    }

    /// Stops fetching, lets the batches on the wire be answered, and returns why the first
    /// partition that stopped with an error stopped, if one did. Past `within`, the fetchers
    /// and producers are aborted and the answers not awaited ([`NotDrained`]).
    pub(crate) async fn stop(mut self, within: Duration) -> Result<Option<MirrorError>, NotDrained> {
        let _ = self.stop.send(true);
        match tokio::time::timeout(within, &mut self.task).await {
            Ok(Ok(stopped)) => Ok(stopped),
            Ok(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Ok(Err(_)) => Ok(None),
            Err(_) => {
                // Dropping the router drops its workers, which aborts them.
                self.task.abort();
                Err(NotDrained)
            }
        }
    }
}

/// The batches on the wire were not all answered in the time given at shutdown.
#[derive(Debug)]
pub(crate) struct NotDrained;

struct Router {
    config: DataPathConfig,
    source: Arc<SourceContext>,
    sink: Arc<SinkContext>,
    resume: Arc<Notify>,
    /// Fetchers by source broker and shard.
    fetchers: HashMap<(i32, u16), Worker<Cursor>>,
    /// Producers by target broker and shard.
    producers: HashMap<(i32, u16), Worker<Arc<PartitionQueue>>>,
    /// The fetchers' tasks (dropping the router aborts them).
    fetcher_tasks: JoinSet<()>,
    /// The producers' tasks.
    producer_tasks: JoinSet<()>,
    /// Workers that ended: when each may be started again, and its backoff.
    restarts: HashMap<(Kind, i32, u16), Restart>,
    /// The partitions mirrored now, as the check of their source sees them.
    watched: Arc<Mutex<Vec<Arc<PartitionQueue>>>>,
    _checker: AbortOnDrop,
    stop_fetchers: watch::Sender<bool>,
    stop_producers: watch::Sender<bool>,
    /// Every partition ever added (stopped ones included: they stay stopped until a restart,
    /// so that nothing past the failing batch is mirrored out of order).
    known: HashSet<(String, i32)>,
    /// The queue of every partition mirrored now.
    mirrored: HashMap<(String, i32), Arc<PartitionQueue>>,
    /// Why the first partition that stopped stopped.
    first_stop: Option<MirrorError>,
    /// Whether the log said that the source gives no topic IDs.
    said_no_topic_ids: bool,
    /// Cursors waiting for a fetcher.
    cursors: Vec<Cursor>,
    /// Queues waiting for a producer.
    queues: Vec<Arc<PartitionQueue>>,
    /// When to place them.
    place_at: Option<Instant>,
    backoff: Backoff,
}

impl Router {
    async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut stop: watch::Receiver<bool>,
    ) -> Option<MirrorError> {
        loop {
            let place_at = self.place_at;
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => self.handle(event).await,
                    None => break,
                },
                _ = sleep_until(place_at), if place_at.is_some() => {
                    self.place_at = None;
                    self.place().await;
                }
                Some(ended) = self.fetcher_tasks.join_next_with_id() => self.worker_ended(Kind::Fetcher, ended),
                Some(ended) = self.producer_tasks.join_next_with_id() => self.worker_ended(Kind::Producer, ended),
                _ = stop.changed() => break,
            }
        }
        // Fetching stops at once; producers let the requests on the wire be answered.
        let _ = self.stop_fetchers.send(true);
        while self.fetcher_tasks.join_next().await.is_some() {}
        self.fetchers.clear();
        let _ = self.stop_producers.send(true);
        while self.producer_tasks.join_next().await.is_some() {}
        self.producers.clear();
        // Partitions that stopped while the producers drained.
        while let Ok(event) = events.try_recv() {
            if let Event::Stopped { .. } = event {
                self.handle(event).await;
            }
        }
        self.first_stop
    }

    async fn handle(&mut self, event: Event) {
        match event {
            Event::Add(routes) => self.add(routes).await,
            Event::Remove { partitions, reply } => {
                let queues: Vec<Arc<PartitionQueue>> = partitions
                    .iter()
                    .filter_map(|key| {
                        self.known.remove(key);
                        self.mirrored.remove(key)
                    })
                    .collect();
                for queue in &queues {
                    queue.retire();
                }
                self.watched.lock().expect("watched lock").retain(|q| !q.is_retired());
                self.cursors.retain(|c| !c.queue.is_retired());
                self.queues.retain(|q| !q.is_drained());
                // After the flags: a fetcher that sees the count sees them.
                self.source.retirements.fetch_add(1, Ordering::AcqRel);
                self.resume.notify_waiters();
                let _ = reply.send(queues);
            }
            Event::Cursors { cursors, after } => {
                self.cursors.extend(cursors);
                self.place_after(after);
            }
            Event::Rehome { queues, after } => {
                self.queues.extend(queues);
                self.place_after(after);
            }
            Event::Stopped { route, error } => {
                tracing::error!(flow = %self.config.stats.flow(), topic = %route.source_topic, partition = route.partition,
                    %error, "partition stopped; fix the cause and restart");
                self.config
                    .stats
                    .partition(&route.source_topic, &route.target_topic.0, route.partition)
                    .stopped(error.to_string());
                self.first_stop.get_or_insert(error);
            }
        }
    }

    /// A worker's task ended: outside shutdown, always unexpected (a panic, or a bug that let
    /// it return). Its partitions go back to the router, to be placed once the worker's restart
    /// delay has passed.
    fn worker_ended(&mut self, kind: Kind, ended: Result<(TaskId, ()), JoinError>) {
        let (task, why) = match ended {
            Ok((task, ())) => (task, "ended".to_owned()),
            Err(error) if error.is_panic() => {
                let task = error.id();
                (task, format!("panicked: {}", panic_message(error.into_panic())))
            }
            Err(error) => (error.id(), "was cancelled".to_owned()),
        };
        let found = match kind {
            Kind::Fetcher => find_worker(&mut self.fetchers, task),
            Kind::Producer => find_worker(&mut self.producers, task),
        };
        let Some(((broker, shard), id, started)) = found else {
            return;
        };
        let name = kind.name(broker, shard);
        let restart = self.restarts.entry((kind, broker, shard)).or_insert_with(|| Restart {
            backoff: Backoff::new(RESTART_BACKOFF.0, RESTART_BACKOFF.1),
            at: Instant::now(),
            down: false,
        });
        if started.elapsed() >= RESTART_RESET_AFTER {
            restart.backoff.reset();
        }
        let delay = restart.backoff.next_delay();
        restart.at = Instant::now() + delay;
        restart.down = true;
        let why = format!("the {name} {why}");
        tracing::error!(flow = %self.config.stats.flow(), "{why}; its partitions are placed again in {delay:?}");
        self.config.stats.worker_down(kind.as_str(), &name, &why);
        let orphans = self
            .mirrored
            .values()
            .filter(|queue| !queue.is_stopped() && !queue.is_retired());
        match kind {
            Kind::Fetcher => {
                for queue in orphans.filter(|q| q.fetched_by.load(Ordering::Acquire) == id) {
                    queue.fetched_by.store(0, Ordering::Release);
                    if queue.is_paused() {
                        queue.set_paused(false);
                        self.config.stats.add_paused(-1);
                    }
                    // Its queue keeps what was fetched: fetching goes on after it.
                    let cursor = Cursor::new(queue.route.clone(), queue.fetch_from(), queue.clone());
                    self.cursors.push(cursor);
                }
            }
            Kind::Producer => {
                let error = strait_client::Error::ConnectionClosed {
                    broker: format!("{} broker {broker}", self.config.target_alias),
                    reason: why.clone(),
                };
                let timeout = self.config.produce.delivery_timeout;
                for queue in orphans.filter(|q| q.sent_by.load(Ordering::Acquire) == id) {
                    queue.sent_by.store(0, Ordering::Release);
                    queue.abandon_producer(&error, timeout);
                    if let Some(transaction) = &self.config.transaction {
                        // Its batches on the wire may have landed: the transaction cannot commit.
                        transaction.doom(&error);
                    }
                    self.queues.push(queue.clone());
                }
            }
        }
        self.place_after(delay);
    }

    fn place_after(&mut self, after: Duration) {
        let at = Instant::now() + after.max(GATHER);
        self.place_at = Some(self.place_at.map_or(at, |current| current.min(at)));
    }

    /// New partitions: a queue and a cursor each, starting where the progress says (or where
    /// `auto.offset.reset` says when it says nothing).
    async fn add(&mut self, routes: Vec<Route>) {
        // A discovery round's IDs: a fetcher whose partition has another one starts it again.
        for route in &routes {
            self.source.topic_ids.set(&route.source_topic, route.source_topic_id);
        }
        if !self.said_no_topic_ids && routes.first().is_some_and(|r| r.source_topic_id.is_none()) {
            self.said_no_topic_ids = true;
            tracing::warn!(flow = %self.config.stats.flow(), cluster = %self.config.source_alias,
                "the source cluster gives no topic IDs (Kafka before 2.8): a source topic deleted and created again \
                 under the same name is not recognised, and its new records below the old position are not mirrored");
        }
        let new: Vec<Route> = routes
            .into_iter()
            .filter(|r| self.known.insert((r.source_topic.clone(), r.partition)))
            .collect();
        if new.is_empty() {
            return;
        }
        let mut unset: BTreeMap<(String, bool), Vec<Route>> = BTreeMap::new();
        // Stored positions of a topic deleted and created again meanwhile: from the new start.
        let mut recreated: BTreeMap<String, Vec<(Route, i64)>> = BTreeMap::new();
        let mut started = Vec::new();
        let progress = &self.config.progress;
        for route in new {
            let stored_id = progress.topic_id(&route.source_topic, route.partition);
            match progress.last_replicated(&route.source_topic, route.partition) {
                Some(last) if stored_id.is_some() && route.source_topic_id.is_some_and(|id| Some(id) != stored_id) => {
                    recreated
                        .entry(route.source_topic.clone())
                        .or_default()
                        .push((route, last + 1))
                }
                Some(last) => started.push((route, last + 1)),
                None => {
                    // Its stored position was unreadable: `latest` could skip what was not
                    // mirrored yet, so it starts at the log start (duplicates, never a gap).
                    let unknown = self.config.progress.is_unknown(&route.source_topic, route.partition);
                    let from_start = self.config.reset == OffsetReset::Earliest || unknown;
                    if unknown && self.config.reset == OffsetReset::Latest {
                        tracing::warn!(
                            flow = %self.config.stats.flow(),
                            topic = route.source_topic,
                            partition = route.partition,
                            "no stored position can be read: starting at the log start, not at its end \
                             (auto.offset.reset = latest), so that nothing is skipped"
                        );
                    }
                    unset
                        .entry((route.source_topic.clone(), from_start))
                        .or_default()
                        .push(route)
                }
            }
        }
        let mut restarted = Vec::new();
        for (topic, routes) in recreated {
            let partitions: Vec<i32> = routes.iter().map(|(r, _)| r.partition).collect();
            match self
                .config
                .source
                .list_offsets(&topic, &partitions, OffsetSpec::Earliest)
                .await
            {
                Ok(offsets) => restarted.extend(routes.into_iter().map(|(route, position)| {
                    let start = offsets[&route.partition];
                    (route, position, start)
                })),
                Err(error) => {
                    tracing::warn!(flow = %self.config.stats.flow(), topic, %error, "cannot find where to start; retrying later");
                    for (route, _) in routes {
                        self.known.remove(&(route.source_topic.clone(), route.partition));
                    }
                }
            }
        }
        for ((topic, from_start), routes) in unset {
            let spec = if from_start {
                OffsetSpec::Earliest
            } else {
                OffsetSpec::Latest
            };
            let partitions: Vec<i32> = routes.iter().map(|r| r.partition).collect();
            match self.config.source.list_offsets(&topic, &partitions, spec).await {
                Ok(offsets) => {
                    for route in routes {
                        let start = offsets[&route.partition];
                        started.push((route, start));
                    }
                }
                Err(error) => {
                    // Tried again at the next discovery.
                    tracing::warn!(flow = %self.config.stats.flow(), topic, %error, "cannot find where to start; retrying later");
                    for route in routes {
                        self.known.remove(&(route.source_topic.clone(), route.partition));
                    }
                }
            }
        }
        // After a crash, what the target acknowledged past the stored position is not sent again.
        crate::landed::skip_landed(&self.config, &mut started).await;
        for (route, position, start) in restarted {
            let stored_id = progress.topic_id(&route.source_topic, route.partition);
            let new_id = route.source_topic_id.expect("compared with the stored one");
            let why = recreation_message(&route.source_topic, route.partition, stored_id, new_id, position, start);
            tracing::warn!(flow = %self.config.stats.flow(), "{why}");
            self.config
                .stats
                .partition(&route.source_topic, &route.target_topic.0, route.partition)
                .record_recreation(why);
            // Stored at once: the old topic's position is never taken for the new one's.
            progress
                .partition(&route.source_topic, route.partition)
                .restart(start, Some(new_id));
            if let Some(syncs) = &self.config.syncs {
                syncs.restart(&route.source_topic, route.partition, start, None);
            }
            started.push((route, start));
        }
        if started.is_empty() {
            return;
        }
        for (route, _) in &started {
            // Positions stored without an ID (by MM2, an older Strait, or never) take the topic's.
            let progress = progress.partition(&route.source_topic, route.partition);
            if progress.topic_id().is_none() {
                progress.set_topic_id(route.source_topic_id);
            }
        }
        tracing::info!(flow = %self.config.stats.flow(), partitions = started.len(), "mirroring partitions");
        let cap = usize::try_from(self.config.partition_max_bytes)
            .unwrap_or(0)
            .max(64 * 1024)
            * QUEUE_CAP_FETCHES;
        let shared = QueuesShared {
            syncs: self.config.syncs.clone(),
            budget: self.config.budget.clone(),
            resume: self.resume.clone(),
            transactional: self.config.transaction.is_some(),
        };
        for (route, start) in started {
            tracing::debug!(topic = %route.source_topic, partition = route.partition, start, "mirroring partition");
            let stats = self
                .config
                .stats
                .partition(&route.source_topic, &route.target_topic.0, route.partition);
            stats.started(start);
            let queue = PartitionQueue::new(
                route.clone(),
                start,
                cap,
                self.config.progress.partition(&route.source_topic, route.partition),
                stats,
                self.config
                    .offset_map
                    .partition(&route.source_topic, route.partition, start),
                &shared,
            );
            self.queues.push(queue.clone());
            self.mirrored
                .insert((route.source_topic.clone(), route.partition), queue.clone());
            self.watched.lock().expect("watched lock").push(queue.clone());
            self.cursors.push(Cursor::new(route, start, queue));
        }
        self.place().await;
    }

    /// Places waiting cursors with the fetcher of their source leader (or preferred replica)
    /// and waiting queues with the producer of their target leader, from fresh metadata; what
    /// cannot be placed yet is tried again after a backoff.
    async fn place(&mut self) {
        let cursors = std::mem::take(&mut self.cursors);
        let queues = std::mem::take(&mut self.queues);
        let (cursors, queues) = (self.place_cursors(cursors).await, self.place_queues(queues).await);
        self.cursors.extend(cursors);
        self.queues.extend(queues);
        let now = Instant::now();
        let mut next_restart: Option<Instant> = None;
        for (&(kind, broker, shard), restart) in &mut self.restarts {
            if !restart.down {
                continue;
            }
            if restart.at <= now {
                // Its partitions were placed again (with a new worker, or elsewhere).
                restart.down = false;
                let name = kind.name(broker, shard);
                tracing::info!(flow = %self.config.stats.flow(), "the {name} is started again");
                self.config.stats.worker_up(&name);
            } else {
                next_restart = Some(next_restart.map_or(restart.at, |at| at.min(restart.at)));
            }
        }
        if let Some(at) = next_restart {
            self.place_after(at.saturating_duration_since(now));
        }
        if self.cursors.is_empty() && self.queues.is_empty() {
            self.backoff.reset();
        } else {
            let delay = self.backoff.next_delay();
            tracing::debug!(
                cursors = self.cursors.len(),
                queues = self.queues.len(),
                "partitions without a leader; trying again in {delay:?}"
            );
            self.place_after(delay);
        }
    }

    async fn place_cursors(&mut self, cursors: Vec<Cursor>) -> Vec<Cursor> {
        let cursors: Vec<Cursor> = cursors
            .into_iter()
            .filter(|c| !c.queue.is_stopped() && !c.queue.is_retired())
            .collect();
        if cursors.is_empty() {
            return cursors;
        }
        let topics: Vec<&str> = unique(cursors.iter().map(|c| c.route.source_topic.as_str()));
        let leaders = match leaders(&self.config.source, &topics).await {
            Ok((leaders, ids)) => {
                for (topic, id) in ids {
                    self.source.topic_ids.set(&topic, id);
                }
                leaders
            }
            Err(error) => {
                tracing::warn!(cluster = %self.config.source_alias, %error, "metadata request failed");
                let error = format!("finding its leader failed: {error}");
                for cursor in &cursors {
                    cursor.queue.source_failed(&error);
                }
                return cursors;
            }
        };
        let brokers = self.config.source.brokers().await;
        let now = Instant::now();
        let mut placed: HashMap<(i32, u16), Vec<Cursor>> = HashMap::new();
        let mut waiting = Vec::new();
        for mut cursor in cursors {
            let preferred = cursor
                .preferred
                .filter(|&(broker, until)| until > now && brokers.contains_key(&broker));
            cursor.preferred = preferred;
            let broker = match preferred {
                Some((broker, _)) => Some(broker),
                None => leaders
                    .get(&(cursor.route.source_topic.clone(), cursor.route.partition))
                    .copied(),
            };
            match broker {
                Some(broker) => {
                    let shard = shard(&cursor.route, self.config.fetchers_per_broker);
                    placed.entry((broker, shard)).or_default().push(cursor);
                }
                None => {
                    cursor.queue.source_failed(&"the source has no leader for it");
                    waiting.push(cursor);
                }
            }
        }
        let (context, stop) = (self.source.clone(), self.stop_fetchers.clone());
        let tasks = &mut self.fetcher_tasks;
        let held = held_keys(&self.restarts, Kind::Fetcher);
        waiting.extend(hand_over(&mut self.fetchers, placed, &held, |broker| {
            let (adopt, run) = fetcher::start(broker, context.clone(), stop.subscribe());
            Worker::new(adopt, tasks.spawn(run).id())
        }));
        waiting
    }

    async fn place_queues(&mut self, queues: Vec<Arc<PartitionQueue>>) -> Vec<Arc<PartitionQueue>> {
        let queues: Vec<Arc<PartitionQueue>> = queues
            .into_iter()
            .filter(|q| !q.is_stopped() && !q.is_drained())
            .collect();
        if queues.is_empty() {
            return queues;
        }
        let topics: Vec<&str> = unique(queues.iter().map(|q| q.route.target_topic.0.as_str()));
        let leaders = match leaders(&self.config.target, &topics).await {
            Ok((leaders, _)) => leaders,
            Err(error) => {
                tracing::warn!(cluster = %self.config.target_alias, %error, "metadata request failed");
                return queues;
            }
        };
        let mut placed: HashMap<(i32, u16), Vec<Arc<PartitionQueue>>> = HashMap::new();
        let mut waiting = Vec::new();
        for queue in queues {
            let key = (queue.route.target_topic.0.to_string(), queue.route.partition);
            match leaders.get(&key) {
                Some(&broker) => {
                    let shard = shard(&queue.route, self.config.producers_per_broker);
                    placed.entry((broker, shard)).or_default().push(queue);
                }
                None => waiting.push(queue),
            }
        }
        let (context, stop) = (self.sink.clone(), self.stop_producers.clone());
        let tasks = &mut self.producer_tasks;
        let held = held_keys(&self.restarts, Kind::Producer);
        waiting.extend(hand_over(&mut self.producers, placed, &held, |broker| {
            let (adopt, run) = producer::start(broker, context.clone(), stop.subscribe());
            Worker::new(adopt, tasks.spawn(run).id())
        }));
        waiting
    }
}

/// The data path's kinds of worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Fetcher,
    Producer,
}

impl Kind {
    /// As the `worker` label of `strait_worker_restarts_total` says it.
    fn as_str(self) -> &'static str {
        match self {
            Kind::Fetcher => "fetcher",
            Kind::Producer => "producer",
        }
    }

    /// The worker of `broker` (and `shard`, of `strait.fetchers.per.broker` or
    /// `strait.producers.per.broker`), as logs and `/status` name it.
    fn name(self, broker: i32, shard: u16) -> String {
        let side = match self {
            Kind::Fetcher => "source",
            Kind::Producer => "target",
        };
        let name = format!("{} of {side} broker {broker}", self.as_str());
        if shard == 0 {
            name
        } else {
            format!("{name} (connection {})", shard + 1)
        }
    }
}

/// A worker that ended, until it is started again.
#[derive(Debug)]
struct Restart {
    backoff: Backoff,
    /// When it may be started again.
    at: Instant,
    /// Whether its partitions wait for that (shown until then).
    down: bool,
}

/// A fetcher or producer task, and where to hand it partitions.
#[derive(Debug)]
pub(crate) struct Worker<T> {
    /// Partitions it takes on from now on.
    adopt: mpsc::UnboundedSender<Vec<T>>,
    /// Its id, as the partitions handed to it record it.
    id: u64,
    task: TaskId,
    started: Instant,
}

impl<T> Worker<T> {
    fn new(adopt: mpsc::UnboundedSender<Vec<T>>, task: TaskId) -> Worker<T> {
        Worker {
            adopt,
            id: NEXT_WORKER.fetch_add(1, Ordering::Relaxed),
            task,
            started: Instant::now(),
        }
    }
}

/// What a worker is handed: it records the worker it was handed to, so that a worker that ends
/// leaves none of its partitions without one.
trait Handed {
    fn owner(&self) -> &AtomicU64;
}

impl Handed for Cursor {
    fn owner(&self) -> &AtomicU64 {
        &self.queue.fetched_by
    }
}

impl Handed for Arc<PartitionQueue> {
    fn owner(&self) -> &AtomicU64 {
        &self.sent_by
    }
}

/// Hands each group of `placed` to the worker of its (broker, shard), started with `start`
/// when there is none; returns what could not be handed (to a worker that ended, or one whose
/// restart is `held`).
fn hand_over<T: Handed>(
    workers: &mut HashMap<(i32, u16), Worker<T>>,
    placed: HashMap<(i32, u16), Vec<T>>,
    held: &HashSet<(i32, u16)>,
    mut start: impl FnMut(i32) -> Worker<T>,
) -> Vec<T> {
    let mut unplaced = Vec::new();
    for (key, partitions) in placed {
        if !workers.contains_key(&key) && held.contains(&key) {
            unplaced.extend(partitions);
            continue;
        }
        let worker = workers.entry(key).or_insert_with(|| start(key.0));
        for partition in &partitions {
            partition.owner().store(worker.id, Ordering::Release);
        }
        // A worker whose task ended: its end is handled (and its key freed) by the router.
        if let Err(mpsc::error::SendError(partitions)) = worker.adopt.send(partitions) {
            for partition in &partitions {
                partition.owner().store(0, Ordering::Release);
            }
            unplaced.extend(partitions);
        }
    }
    unplaced
}

/// The (broker, shard) of the workers of `kind` that ended and may not be started yet.
fn held_keys(restarts: &HashMap<(Kind, i32, u16), Restart>, kind: Kind) -> HashSet<(i32, u16)> {
    let now = Instant::now();
    restarts
        .iter()
        .filter(|(&(k, _, _), restart)| k == kind && restart.at > now)
        .map(|(&(_, broker, shard), _)| (broker, shard))
        .collect()
}

/// Takes the worker whose task is `task` out of `workers`: its (broker, shard), id and start.
fn find_worker<T>(workers: &mut HashMap<(i32, u16), Worker<T>>, task: TaskId) -> Option<((i32, u16), u64, Instant)> {
    let key = *workers.iter().find(|(_, worker)| worker.task == task)?.0;
    let worker = workers.remove(&key)?;
    Some((key, worker.id, worker.started))
}

/// What a panic said.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(|| "(no message)".to_owned(), |m| (*m).to_owned()),
    }
}

/// The leader of every partition of `topics` that has one, and the topics' IDs.
async fn leaders(
    client: &KafkaClient,
    topics: &[&str],
) -> Result<(Leaders, Vec<(String, Option<TopicId>)>), strait_client::Error> {
    let metadata = client.metadata(Some(topics)).await?;
    let ids = metadata
        .topics
        .iter()
        .filter(|(_, t)| t.error == 0)
        .map(|(name, t)| (name.clone(), t.topic_id))
        .collect();
    let leaders = metadata
        .topics
        .into_iter()
        .filter(|(_, t)| t.error == 0)
        .flat_map(|(name, t)| {
            t.partitions
                .into_iter()
                .filter(|p| p.error == 0 && p.leader >= 0)
                .map(move |p| ((name.clone(), p.partition), p.leader))
        })
        .collect();
    Ok((leaders, ids))
}

/// The leader of each partition, by (topic, partition).
type Leaders = HashMap<(String, i32), i32>;

/// Which of a broker's `connections` fetchers (or producers) takes `route`.
fn shard(route: &Route, connections: u16) -> u16 {
    if connections <= 1 {
        return 0;
    }
    // A topic's partitions take the connections in turn, so that each gets its share.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    route.source_topic.hash(&mut hasher);
    (hasher.finish().wrapping_add(route.partition as u64) % u64::from(connections)) as u16
}

fn unique<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    names.dedup();
    names
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}
