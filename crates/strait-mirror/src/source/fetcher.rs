//! One fetcher per source broker (franz-go's `source`, Kafka's replica fetcher): one connection,
//! one fetch session, one Fetch in flight for all the partitions the broker leads, and each
//! partition's data handed to its cursor and queue.
//!
//! A partition whose queue is full, or whose target fails, is paused: it leaves the fetch session
//! and comes back when its queue has room. While any partition is paused, fetches wait at most
//! [`PAUSED_MAX_WAIT_MS`] at the broker, so that a resumed partition does not wait out a long
//! poll of idle ones.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strait_client::kafka_protocol::error::ResponseError;
use strait_client::{
    Backoff, BrokerConnection, ConnectionConfig, Error, FetchParams, FetchSession, FetchedPartition, KafkaClient,
    KafkaCode, OffsetSpec, PartitionKey, TopicId,
};
use tokio::sync::{mpsc, watch, Notify};

use crate::budget::Budget;
use crate::event::Event;
use crate::sink::queue::Entry;
use crate::source::cursor::{Cursor, Taken};
use crate::source::TopicIds;
use crate::{MirrorError, Stats};

/// How long a fetch may wait at the broker while some partition is paused.
const PAUSED_MAX_WAIT_MS: i32 = 10;
/// Failed requests in a row after which a fetcher gives its partitions back to find their leaders.
const FAILURES_BEFORE_REHOME: u32 = 3;
/// The backoff of a fetcher's retries and reconnects: first and longest wait.
pub(crate) const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));
/// How often a fetcher that works tells its partitions that their source answers.
const ANSWERED_EVERY: Duration = Duration::from_millis(500);

/// What the fetchers of one flow share.
#[derive(Debug)]
pub(crate) struct SourceContext {
    /// The source cluster's client (metadata, broker addresses, offsets).
    pub client: KafkaClient,
    /// The source cluster's alias.
    pub alias: String,
    /// The consumer keys that shape a Fetch; `max_bytes` is `fetch.max.bytes`.
    pub params: FetchParams,
    /// `max.partition.fetch.bytes`.
    pub partition_max_bytes: i32,
    /// How long a preferred read replica is fetched from before asking the leader again
    /// (`metadata.max.age.ms`, as Java's consumer).
    pub preferred_lease: Duration,
    pub budget: Arc<Budget>,
    pub stats: Arc<Stats>,
    /// Where partitions that must move (or stop) are reported.
    pub events: mpsc::UnboundedSender<Event>,
    /// Connection settings, with the counter of fetch connections.
    pub connection: ConnectionConfig,
    /// Signalled when a paused partition's queue has room again, and when partitions are retired.
    pub resume: Arc<Notify>,
    /// Bumped each time partitions are retired (revoked): fetchers then drop their cursors.
    pub retirements: AtomicU64,
    /// The source topics' IDs as Metadata last gave them.
    pub topic_ids: TopicIds,
}

/// A fetcher of source broker `broker`, to be spawned: it fetches the cursors it is handed,
/// and ends when `stop` turns true.
pub(crate) fn start(
    broker: i32,
    context: Arc<SourceContext>,
    stop: watch::Receiver<bool>,
) -> (
    mpsc::UnboundedSender<Vec<Cursor>>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (adopt, cursors) = mpsc::unbounded_channel();
    let fetcher = Fetcher {
        broker,
        _share: context.budget.register_fetcher(),
        context,
        cursors: HashMap::new(),
        paused: HashSet::new(),
        leased: HashSet::new(),
        session: FetchSession::new(),
        connection: None,
        failures: 0,
        failing: false,
        answered_at: Instant::now(),
        retirements: 0,
        backoff: Backoff::new(BACKOFF.0, BACKOFF.1),
    };
    (adopt, fetcher.run(cursors, stop))
}

struct Fetcher {
    broker: i32,
    context: Arc<SourceContext>,
    /// Counts this fetcher in the budget's fair share while it runs.
    _share: crate::budget::FetcherShare,
    cursors: HashMap<PartitionKey, Cursor>,
    /// Partitions out of the session until their queue has room.
    paused: HashSet<PartitionKey>,
    /// Partitions fetched here because the leader prefers this replica (KIP-392).
    leased: HashSet<PartitionKey>,
    session: FetchSession,
    connection: Option<BrokerConnection>,
    /// Failed requests in a row.
    failures: u32,
    /// Whether requests or connections failed since the last answer.
    failing: bool,
    /// When its partitions were last told that their source answers.
    answered_at: Instant,
    /// The data path's retirements this fetcher has swept.
    retirements: u64,
    backoff: Backoff,
}

impl Fetcher {
    async fn run(mut self, mut adopted: mpsc::UnboundedReceiver<Vec<Cursor>>, mut stop: watch::Receiver<bool>) {
        let resume = self.context.resume.clone();
        loop {
            if *stop.borrow() {
                break;
            }
            let resumed = resume.notified();
            tokio::pin!(resumed);
            resumed.as_mut().enable();
            while let Ok(cursors) = adopted.try_recv() {
                self.adopt(cursors);
            }
            self.review();
            if !self.failing {
                // Paused partitions are not fetched, but their source would answer.
                self.answered(false);
            }
            if self.session.is_empty() {
                // Nothing to fetch: wait for partitions, room in a queue, or the end.
                tokio::select! {
                    cursors = adopted.recv() => match cursors {
                        Some(cursors) => self.adopt(cursors),
                        None => break,
                    },
                    _ = &mut resumed => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)), if !self.leased.is_empty() => {}
                    _ = stop.changed() => break,
                }
                continue;
            }
            tokio::select! {
                _ = self.fetch() => {}
                _ = stop.changed() => break,
            }
        }
        let cursors = std::mem::take(&mut self.cursors);
        self.context.stats.add_paused(-(self.paused.len() as i64));
        drop(cursors);
    }

    /// Fetches these partitions from now on.
    fn adopt(&mut self, cursors: Vec<Cursor>) {
        // Retired on their way here: the sweep that would drop them may have passed.
        for cursor in cursors.into_iter().filter(|c| !c.queue.is_retired()) {
            let key = cursor.key();
            if cursor.preferred.is_some_and(|(broker, _)| broker == self.broker) {
                self.leased.insert(key.clone());
            }
            if cursor.queue.accepts_more() {
                self.session
                    .fetch(key.clone(), cursor.fetch_position(self.context.partition_max_bytes));
            } else {
                self.pause(&key, &cursor);
            }
            self.cursors.insert(key, cursor);
        }
    }

    fn pause(&mut self, key: &PartitionKey, cursor: &Cursor) {
        self.session.forget(key);
        if self.paused.insert(key.clone()) {
            cursor.queue.set_paused(true);
            self.context.stats.add_paused(1);
        }
    }

    /// Drops retired partitions, resumes paused ones whose queue has room, drops stopped ones, and gives back those
    /// whose lease on this replica ended.
    fn review(&mut self) {
        let retirements = self.context.retirements.load(Ordering::Acquire);
        if retirements != self.retirements {
            self.retirements = retirements;
            let retired: Vec<PartitionKey> = self
                .cursors
                .iter()
                .filter(|(_, cursor)| cursor.queue.is_retired())
                .map(|(key, _)| key.clone())
                .collect();
            for key in retired {
                self.remove(&key);
            }
        }
        let mut resumed = Vec::new();
        let mut gone = Vec::new();
        for key in &self.paused {
            let cursor = &self.cursors[key];
            if cursor.queue.is_stopped() {
                gone.push(key.clone());
            } else if cursor.queue.resumes() {
                resumed.push(key.clone());
            }
        }
        for key in resumed {
            self.paused.remove(&key);
            self.context.stats.add_paused(-1);
            let cursor = &self.cursors[&key];
            cursor.queue.set_paused(false);
            self.session
                .fetch(key.clone(), cursor.fetch_position(self.context.partition_max_bytes));
        }
        for key in gone {
            self.paused.remove(&key);
            self.context.stats.add_paused(-1);
            self.cursors.remove(&key);
        }
        let now = Instant::now();
        let ended: Vec<PartitionKey> = self
            .leased
            .iter()
            .filter(|key| {
                self.cursors
                    .get(*key)
                    .is_none_or(|c| c.preferred.is_none_or(|(_, until)| until <= now))
            })
            .cloned()
            .collect();
        for key in ended {
            self.leased.remove(&key);
            if let Some(mut cursor) = self.remove(&key) {
                cursor.preferred = None;
                self.rehome(vec![cursor], Duration::ZERO);
            }
        }
    }

    /// Tells its partitions that their source answers (at most every [`ANSWERED_EVERY`],
    /// unless `now`): the data path turns those it has not answered for too long `failing`.
    fn answered(&mut self, now: bool) {
        if now || self.answered_at.elapsed() >= ANSWERED_EVERY {
            self.answered_at = Instant::now();
            let now_ms = crate::internal_topics::now_ms();
            for cursor in self.cursors.values() {
                cursor.queue.source_answered(now_ms);
            }
        }
    }

    /// Fetching failed as a whole with `error`: each partition keeps it as its reason, should
    /// this last.
    fn failed(&mut self, error: &Error) {
        self.failing = true;
        for cursor in self.cursors.values() {
            cursor.queue.source_failed(error);
        }
    }

    /// Takes a partition out of this fetcher.
    fn remove(&mut self, key: &PartitionKey) -> Option<Cursor> {
        self.session.forget(key);
        self.leased.remove(key);
        if self.paused.remove(key) {
            self.context.stats.add_paused(-1);
        }
        let cursor = self.cursors.remove(key)?;
        cursor.queue.set_paused(false);
        Some(cursor)
    }

    /// Hands partitions to the data path to find where they are fetched now.
    fn rehome(&self, cursors: Vec<Cursor>, after: Duration) {
        // Back with the router: should this fetcher end now, they are not its to restart.
        for cursor in &cursors {
            cursor.queue.fetched_by.store(0, Ordering::Release);
        }
        if !cursors.is_empty() {
            let _ = self.context.events.send(Event::Cursors { cursors, after });
        }
    }

    /// One Fetch: reserve memory, send, hand each partition's answer to its cursor.
    async fn fetch(&mut self) {
        let context = self.context.clone();
        let partition_max = usize::try_from(context.partition_max_bytes).unwrap_or(0).max(1);
        let want = usize::try_from(context.params.max_bytes)
            .unwrap_or(0)
            .min(context.budget.fair_share())
            .max(1);
        let reservation = context.budget.reserve(partition_max.min(want), want).await;
        let Some(connection) = self.connection().await else {
            return;
        };
        let mut params = context.params.clone();
        params.max_bytes = i32::try_from(reservation.bytes()).unwrap_or(i32::MAX);
        if !self.paused.is_empty() {
            params.max_wait_ms = params.max_wait_ms.min(PAUSED_MAX_WAIT_MS);
        }
        let (request, kind) = self.session.build(&params);
        context.stats.record_fetch(kind);
        let sent = Instant::now();
        let answer = connection.send_measured(&request).await;
        context.stats.record_request(&context.alias, "Fetch", sent.elapsed());
        let (response, size) = match answer {
            Ok(answer) => answer,
            Err(error) => return self.request_failed(error).await,
        };
        let charge = Arc::new(reservation.settle(size));
        let partitions = match self.session.handle_response(response) {
            Ok(partitions) => partitions,
            Err(error) => return self.request_failed(error).await,
        };
        self.failures = 0;
        self.backoff.reset();
        let was_failing = std::mem::take(&mut self.failing);
        self.answered(was_failing);
        let mut homeless = Vec::new();
        // Topics whose ID was asked for in this response: once each, however many partitions.
        let mut refreshed = HashSet::new();
        for data in partitions {
            let key = (data.topic.clone(), data.partition);
            if !self.cursors.contains_key(&key) {
                continue; // Forgotten meanwhile.
            }
            if data.error.is_some_and(may_be_recreated) && refreshed.insert(data.topic.clone()) {
                self.refresh_topic_id(&key).await;
            }
            if let Some(topic_id) = self.recreated(&key) {
                // What was fetched is of the new topic, at the old topic's position: dropped.
                if let Some(cursor) = self.restart_recreated(&key, topic_id).await {
                    homeless.push(cursor);
                }
                continue;
            }
            if let Some(error) = data.error {
                let position = self.cursors[&key].position;
                let error = data.error(position).unwrap_or_else(|| Error::kafka(error.0, "Fetch"));
                if let Some(cursor) = self.partition_failed(&key, error).await {
                    homeless.push(cursor);
                }
                continue;
            }
            if let Some(replica) = data.preferred_read_replica.filter(|&r| r != self.broker) {
                // KIP-392: the leader names a replica closer to us (client.rack).
                if let Some(mut cursor) = self.remove(&key) {
                    cursor.preferred = Some((replica, Instant::now() + context.preferred_lease));
                    homeless.push(cursor);
                }
                continue;
            }
            self.take(&key, data, &charge);
        }
        self.rehome(homeless, Duration::ZERO);
    }

    /// A partition's data: to its queue; the session learns the new position, or that the
    /// partition pauses or stops.
    fn take(&mut self, key: &PartitionKey, data: FetchedPartition, charge: &Arc<crate::budget::Charge>) {
        let context = self.context.clone();
        let read_committed = context.params.read_committed;
        let cursor = self.cursors.get_mut(key).expect("checked by the caller");
        let taken = cursor.take(data, charge, read_committed, || {
            context
                .stats
                .record_error_code(&context.alias, "Fetch", "CORRUPT_MESSAGE".into());
        });
        let (entries, stops) = match taken {
            Taken::Entries(entries) | Taken::Refetch(entries) => (entries, false),
            Taken::Stop(entries) => (entries, true),
        };
        let stop = if entries.is_empty() {
            None
        } else {
            #[cfg(debug_assertions)]
            crate::faults::strike("fetcher", &cursor.route.source_topic);
            cursor.queue.push(entries)
        };
        if stops || stop.is_some() {
            if let Some(error) = stop {
                let _ = self.context.events.send(Event::Stopped {
                    route: cursor.route.clone(),
                    error,
                });
            }
            self.remove(key);
            return;
        }
        let cursor = &self.cursors[key];
        if cursor.queue.accepts_more() {
            self.session
                .fetch(key.clone(), cursor.fetch_position(self.context.partition_max_bytes));
        } else {
            let cursor = self.cursors.remove(key).expect("present");
            self.pause(key, &cursor);
            self.cursors.insert(key.clone(), cursor);
        }
    }

    /// A partition's error: out of range resolves here; a leader that moved (or any error that
    /// may pass) sends the partition to find its leader again; anything else stops it.
    async fn partition_failed(&mut self, key: &PartitionKey, error: Error) -> Option<Cursor> {
        self.context.stats.record_error(&self.context.alias, "Fetch", &error);
        if error.is(ResponseError::OffsetOutOfRange) {
            let cursor = self.cursors.get_mut(key)?;
            match out_of_range(&self.context, cursor).await {
                Ok(entries) => {
                    let cursor = &self.cursors[key];
                    cursor.queue.push(entries);
                    self.session
                        .fetch(key.clone(), cursor.fetch_position(self.context.partition_max_bytes));
                    return None;
                }
                Err(error) if error.is_retriable() => {}
                Err(error) => return self.stop(key, error),
            }
        } else if !error.is_retriable() {
            let error = MirrorError::client(&self.context.alias, error);
            return self.stop(key, error);
        }
        tracing::debug!(broker = self.broker, %error, "the partition looks for its leader again");
        let mut cursor = self.remove(key)?;
        cursor.queue.source_failed(&error);
        cursor.preferred = None;
        Some(cursor)
    }

    /// Asks Metadata for the ID of the partition's topic now (after an error that a deleted
    /// topic gives).
    async fn refresh_topic_id(&self, key: &PartitionKey) {
        let Some(cursor) = self.cursors.get(key) else { return };
        let topic = cursor.route.source_topic.as_str();
        match self.context.client.metadata(Some(&[topic])).await {
            Ok(metadata) => {
                let id = metadata.topics.get(topic).and_then(|t| t.topic_id);
                self.context.topic_ids.set(topic, id);
            }
            Err(error) => tracing::debug!(topic, %error, "cannot read the topic's ID"),
        }
    }

    /// The new ID of the partition's topic, if it was deleted and created again under its name
    /// since its position was taken. A cursor without an ID (the position was stored without
    /// one) takes the current one.
    fn recreated(&mut self, key: &PartitionKey) -> Option<TopicId> {
        let cursor = self.cursors.get_mut(key)?;
        let current = self.context.topic_ids.get(&cursor.route.source_topic)?;
        match cursor.topic_id {
            Some(id) if id != current => Some(current),
            Some(_) => None,
            None => {
                cursor.topic_id = Some(current);
                None
            }
        }
    }

    /// The partition's topic is a new one (`topic_id`): the partition starts again at its log
    /// start, into the same remote topic, and says so. Returns the cursor if it must look for
    /// its leader first.
    async fn restart_recreated(&mut self, key: &PartitionKey, topic_id: TopicId) -> Option<Cursor> {
        let context = self.context.clone();
        let cursor = self.cursors.get_mut(key)?;
        let (topic, partition) = (cursor.route.source_topic.clone(), cursor.route.partition);
        let start = match context
            .client
            .list_offsets(&topic, &[partition], OffsetSpec::Earliest)
            .await
        {
            Ok(offsets) => offsets[&partition],
            Err(error) => {
                tracing::debug!(topic, partition, %error, "cannot find the recreated topic's log start yet");
                let mut cursor = self.remove(key)?;
                cursor.preferred = None;
                return Some(cursor);
            }
        };
        let old = cursor.topic_id.replace(topic_id);
        let stats = cursor.queue.stats().clone();
        // What the old topic held past the position went with it: counted as a gap.
        let lost = stats.source_end().map_or(0, |end| (end - cursor.position).max(0));
        if lost > 0 {
            tracing::error!(
                topic,
                partition,
                first_missing = cursor.position,
                last_missing = cursor.position + lost - 1,
                "GAP: the source topic was deleted before its offsets {}..={} were mirrored",
                cursor.position,
                cursor.position + lost - 1
            );
            stats.record_gap(lost);
        }
        let why = recreation_message(&topic, partition, old, topic_id, cursor.position, start);
        tracing::warn!(topic, partition, "{why}");
        stats.record_recreation(why);
        cursor.position = start;
        cursor.corrupt_refetches = 0;
        let stop = cursor.queue.push(vec![Entry::Restart {
            start,
            topic_id: Some(topic_id),
        }]);
        if let Some(error) = stop {
            let _ = context.events.send(Event::Stopped {
                route: cursor.route.clone(),
                error,
            });
            self.remove(key);
            return None;
        }
        let cursor = &self.cursors[key];
        if cursor.queue.accepts_more() {
            self.session
                .fetch(key.clone(), cursor.fetch_position(context.partition_max_bytes));
        } else {
            let cursor = self.cursors.remove(key).expect("present");
            self.pause(key, &cursor);
            self.cursors.insert(key.clone(), cursor);
        }
        None
    }

    /// The partition stops at its position, once what was fetched before is acknowledged.
    fn stop(&mut self, key: &PartitionKey, error: MirrorError) -> Option<Cursor> {
        let cursor = self.remove(key)?;
        if let Some(error) = cursor.queue.push(vec![Entry::Stop(error)]) {
            let _ = self.context.events.send(Event::Stopped {
                route: cursor.route.clone(),
                error,
            });
        }
        None
    }

    /// The request failed as a whole: the session starts over on a new connection; after a few
    /// failures in a row (the broker is gone, or no longer leads), the partitions look for their
    /// leaders again.
    async fn request_failed(&mut self, error: Error) {
        self.context.stats.record_error(&self.context.alias, "Fetch", &error);
        self.failed(&error);
        self.session.reset();
        if !matches!(error, Error::Kafka { .. }) {
            self.connection = None;
        }
        self.failures += 1;
        let delay = self.backoff.next_delay();
        if self.failures >= FAILURES_BEFORE_REHOME {
            tracing::warn!(cluster = %self.context.alias, broker = self.broker, %error,
                "fetching failed {} times; the partitions look for their leaders again", self.failures);
            self.give_up_all(delay);
        } else {
            tracing::debug!(cluster = %self.context.alias, broker = self.broker, %error, "fetch failed; retrying in {delay:?}");
            tokio::time::sleep(delay).await;
        }
    }

    /// Gives every partition back to find its leader (after `delay`).
    fn give_up_all(&mut self, delay: Duration) {
        self.failures = 0;
        let keys: Vec<PartitionKey> = self.cursors.keys().cloned().collect();
        let cursors: Vec<Cursor> = keys
            .iter()
            .filter_map(|key| self.remove(key))
            .map(|mut cursor| {
                cursor.preferred = None;
                cursor
            })
            .collect();
        self.rehome(cursors, delay);
    }

    /// The connection, opened if needed.
    async fn connection(&mut self) -> Option<BrokerConnection> {
        if let Some(connection) = self.connection.as_ref().filter(|c| !c.is_closed()) {
            return Some(connection.clone());
        }
        self.session.reset();
        match self
            .context
            .client
            .connect_to(self.broker, self.context.connection.clone())
            .await
        {
            Ok(connection) => {
                self.connection = Some(connection.clone());
                Some(connection)
            }
            Err(error) => {
                self.context.stats.record_error(&self.context.alias, "Fetch", &error);
                self.failed(&error);
                let delay = self.backoff.next_delay();
                tracing::warn!(cluster = %self.context.alias, broker = self.broker, %error,
                    "cannot connect to the source broker; its partitions look for their leaders again in {delay:?}");
                self.give_up_all(delay);
                None
            }
        }
    }
}

/// Whether a partition's fetch error may mean its topic was deleted (and created again).
fn may_be_recreated(KafkaCode(error): KafkaCode) -> bool {
    use strait_client::kafka_protocol::error::ResponseError as E;
    matches!(
        error,
        E::UnknownTopicOrPartition | E::UnknownTopicId | E::InconsistentTopicId | E::OffsetOutOfRange
    )
}

/// What the operator reads about a recreated source topic (the log, `/status`).
pub(crate) fn recreation_message(
    topic: &str,
    partition: i32,
    old: Option<TopicId>,
    new: TopicId,
    position: i64,
    start: i64,
) -> String {
    let old = old.map_or_else(|| "unknown".to_owned(), |id| id.to_string());
    format!(
        "source topic {topic} was deleted and created again (topic ID {old} -> {new}): partition {partition} \
         (at offset {position} of the old topic) is mirrored again from offset {start}, the new topic's log start, \
         into the same remote topic"
    )
}

/// The position fell outside the source log: retention (or a truncation) moved the log. Returns
/// the entries that record the jump, and moves the cursor.
async fn out_of_range(context: &SourceContext, cursor: &mut Cursor) -> Result<Vec<Entry>, MirrorError> {
    let (topic, partition, position) = (&cursor.route.source_topic, cursor.route.partition, cursor.position);
    let offsets = |spec| async move {
        context
            .client
            .list_offsets(topic, &[partition], spec)
            .await
            .map(|offsets| offsets[&partition])
            .map_err(MirrorError::client_at(&context.alias))
    };
    let earliest = offsets(OffsetSpec::Earliest).await?;
    let latest = offsets(OffsetSpec::Latest).await?;
    if position < earliest {
        tracing::error!(
            topic, partition, first_missing = position, last_missing = earliest - 1,
            "GAP: source offsets {position}..={} were deleted at the source before they were mirrored; continuing at {earliest}",
            earliest - 1
        );
        cursor.queue.stats().record_gap(earliest - position);
        cursor.position = earliest;
        // Nothing of the deleted offsets can be mirrored: record them as passed.
        Ok(vec![Entry::Skip { last: earliest - 1 }])
    } else {
        tracing::error!(
            topic,
            partition,
            position,
            latest,
            "the source log ends before the mirrored position (truncated or recreated topic); continuing at {latest}"
        );
        cursor.position = latest.min(position);
        Ok(Vec::new())
    }
}
