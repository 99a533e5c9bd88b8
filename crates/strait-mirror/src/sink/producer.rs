//! One producer per target broker (franz-go's `sink`): one connection, Produce requests that
//! carry one batch for each of many partitions, up to `max.in.flight.requests.per.connection`
//! requests on the wire, and the answers handed to each partition's queue in the order the
//! requests went out.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ProduceResponse, TopicName};
use strait_client::kafka_protocol;
use strait_client::kafka_protocol::error::ResponseError;
use strait_client::{
    decode_response, encode_produce_request, produced_partitions, Backoff, BrokerConnection, ConnectionConfig, Error,
    KafkaClient, PartitionRecords, TopicRecords,
};
use tokio::sync::{mpsc, watch};

use crate::event::Event;
use crate::sink::producer_id::ProducerIds;
use crate::sink::queue::{Next, PartitionQueue, Settled};
use crate::sink::transaction::{refused_before_append, InTransaction, Transaction};
use crate::sink::ReadyQueues;
use crate::Stats;

/// How a flow produces: the producer keys of its target (`acks`, `request.timeout.ms`,
/// `max.request.size`, `max.in.flight.requests.per.connection`, `delivery.timeout.ms`).
#[derive(Debug, Clone)]
pub(crate) struct ProduceSettings {
    /// `acks`: -1 (all) or 1 (the leader).
    pub acks: i16,
    /// `request.timeout.ms`, sent in each request.
    pub timeout_ms: i32,
    /// `max.request.size`: batches are packed into a request up to this; a batch larger on its
    /// own goes alone.
    pub max_request_size: usize,
    /// `max.in.flight.requests.per.connection` (at most 5: the broker deduplicates within the
    /// last five batches of a producer).
    pub max_in_flight: usize,
    /// `delivery.timeout.ms`: a batch unacknowledged this long after its first send is reported.
    pub delivery_timeout: Duration,
}

/// What the producers of one flow share.
#[derive(Debug)]
pub(crate) struct SinkContext {
    /// The target cluster's client (metadata, broker addresses).
    pub client: KafkaClient,
    /// The target cluster's alias.
    pub alias: String,
    pub settings: ProduceSettings,
    pub ids: Arc<ProducerIds>,
    pub stats: Arc<Stats>,
    /// Where partitions that must move (or stop) are reported.
    pub events: mpsc::UnboundedSender<Event>,
    /// Connection settings, with the counter of produce connections.
    pub connection: ConnectionConfig,
    /// Exactly-once mode: the flow's transaction, which every request is part of.
    pub transaction: Option<Arc<Transaction>>,
}

/// A producer of target broker `broker`, to be spawned: it sends the queues it is handed, and
/// drains and ends when `stop` turns true.
pub(crate) fn start(
    broker: i32,
    context: Arc<SinkContext>,
    stop: watch::Receiver<bool>,
) -> (
    mpsc::UnboundedSender<Vec<Arc<PartitionQueue>>>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (adopt, queues) = mpsc::unbounded_channel();
    let producer = TargetProducer {
        broker,
        identity_changes: context.ids.subscribe(),
        resumed: context.transaction.as_ref().map(|t| t.subscribe()),
        context,
        ready: Arc::new(ReadyQueues::default()),
        queues: HashMap::new(),
        connection: None,
        in_flight: VecDeque::new(),
        timers: BTreeMap::new(),
        awaiting_id: Vec::new(),
        connect_backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)),
    };
    (adopt, producer.run(queues, stop))
}

/// Request ids, unique in the process: a partition's batches are matched to answers by them.
static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

type Answer = Pin<Box<dyn Future<Output = Result<Bytes, Error>> + Send>>;

/// A Produce request on the wire.
struct InFlight {
    id: u64,
    version: i16,
    answer: Answer,
    queues: Vec<Arc<PartitionQueue>>,
    sent_at: Instant,
    /// Exactly-once mode: holds the transaction open until the answer is handled.
    _transaction: Option<InTransaction>,
}

struct TargetProducer {
    broker: i32,
    context: Arc<SinkContext>,
    ready: Arc<ReadyQueues>,
    /// The partitions this producer sends, by target topic and partition.
    queues: HashMap<(TopicName, i32), Arc<PartitionQueue>>,
    connection: Option<BrokerConnection>,
    in_flight: VecDeque<InFlight>,
    /// Partitions to wake at a time (after a backoff), keyed by time and a tie-breaker.
    timers: BTreeMap<(Instant, u64), Arc<PartitionQueue>>,
    /// Partitions waiting for a new producer id.
    awaiting_id: Vec<Arc<PartitionQueue>>,
    identity_changes: watch::Receiver<strait_client::ProducerIdAndEpoch>,
    /// Exactly-once mode: tells when requests may start again after a transaction ended.
    resumed: Option<watch::Receiver<u64>>,
    connect_backoff: Backoff,
}

impl TargetProducer {
    async fn run(
        mut self,
        mut adopted: mpsc::UnboundedReceiver<Vec<Arc<PartitionQueue>>>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut stopping = *stop.borrow();
        loop {
            if !stopping {
                self.send_requests().await;
            }
            if stopping && self.in_flight.is_empty() {
                break;
            }
            let next_timer = self.timers.keys().next().map(|(at, _)| *at);
            let front = self.in_flight.front_mut().map(|request| &mut request.answer);
            tokio::select! {
                biased;
                answer = answer_of(front) => {
                    let request = self.in_flight.pop_front().expect("an answer is of the first request");
                    self.handle_answer(request, answer);
                }
                queues = adopted.recv(), if !stopping => match queues {
                    Some(queues) => self.adopt(queues),
                    None => stopping = true,
                },
                _ = stop.changed(), if !stopping => stopping = true,
                _ = self.ready.notified(), if !stopping => {}
                _ = sleep_until(next_timer), if !stopping && next_timer.is_some() => self.fire_timers(),
                _ = self.identity_changes.changed(), if !stopping && !self.awaiting_id.is_empty() => {
                    for queue in std::mem::take(&mut self.awaiting_id) {
                        queue.wake();
                    }
                }
                _ = resumed(&mut self.resumed), if !stopping => {}
            }
        }
        // Stopped: what was not sent is fetched again after a restart (its position was never
        // recorded); the partitions go back to nobody.
        for queue in self.queues.values() {
            queue.attach(None);
        }
    }

    fn adopt(&mut self, queues: Vec<Arc<PartitionQueue>>) {
        // Partitions revoked and drained since: nothing more of them comes.
        self.queues.retain(|_, queue| !queue.is_drained());
        for queue in queues {
            let key = (queue.route.target_topic.clone(), queue.route.partition);
            queue.attach(Some(self.ready.clone()));
            queue.wake();
            self.queues.insert(key, queue);
        }
    }

    fn fire_timers(&mut self) {
        let now = tokio::time::Instant::now().into_std();
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            entry.remove().wake();
        }
    }

    fn wake_at(&mut self, at: Instant, queue: Arc<PartitionQueue>) {
        let tie = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
        self.timers.insert((at, tie), queue);
    }

    /// Sends requests while the connection takes more and partitions have batches ready (in
    /// exactly-once mode: while the transaction is not being ended).
    async fn send_requests(&mut self) {
        while self.in_flight.len() < self.context.settings.max_in_flight {
            let Some(connection) = self.connection().await else {
                return;
            };
            let transaction = match &self.context.transaction {
                Some(transaction) => match transaction.enter() {
                    Some(entered) => Some(entered),
                    None => return, // Sealed: `resumed` says when to go on.
                },
                None => None,
            };
            let Some((id, topics, queues)) = self.build_request() else {
                return;
            };
            let mut version = match connection.version(ApiKey::Produce) {
                Ok(version) => version,
                Err(error) => {
                    self.fail_request(id, &queues, error);
                    return;
                }
            };
            let mut transactional_id = None;
            if let Some(transaction) = &self.context.transaction {
                version = version.min(transaction.max_produce_version());
                transactional_id = Some(transaction.id());
                let partitions: Vec<(String, i32)> = topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), p.partition)))
                    .collect();
                if let Err(error) = transaction.add_partitions(&partitions).await {
                    self.fail_request(id, &queues, error);
                    return;
                }
                let bytes = topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .flat_map(|p| &p.records)
                    .map(Bytes::len)
                    .sum();
                transaction.produced(bytes);
            }
            let settings = &self.context.settings;
            let body = encode_produce_request(version, transactional_id, settings.acks, settings.timeout_ms, &topics);
            match connection.submit(ApiKey::Produce, version, body).await {
                Ok(pending) => self.in_flight.push_back(InFlight {
                    id,
                    version,
                    answer: Box::pin(pending.response()),
                    queues,
                    sent_at: Instant::now(),
                    _transaction: transaction,
                }),
                Err(error) => {
                    self.connection = None;
                    self.fail_request(id, &queues, error);
                }
            }
        }
    }

    /// The connection, opened if needed. A broker that cannot be reached gives its partitions
    /// back, to find their leader anew.
    async fn connection(&mut self) -> Option<BrokerConnection> {
        if let Some(connection) = self.connection.as_ref().filter(|c| !c.is_closed()) {
            return Some(connection.clone());
        }
        if self.queues.is_empty() {
            return None;
        }
        self.connection = None;
        if !self.in_flight.is_empty() {
            return None; // Their answers (failures) come first.
        }
        match self
            .context
            .client
            .connect_to(self.broker, self.context.connection.clone())
            .await
        {
            Ok(connection) => {
                self.connect_backoff.reset();
                self.connection = Some(connection.clone());
                Some(connection)
            }
            Err(error) => {
                let delay = self.connect_backoff.next_delay();
                tracing::warn!(cluster = %self.context.alias, broker = self.broker, %error,
                    "cannot connect to the target broker; its partitions look for their leader again in {delay:?}");
                self.context.stats.record_error(&self.context.alias, "Produce", &error);
                let queues: Vec<_> = self.queues.drain().map(|(_, q)| q).collect();
                self.timers.clear();
                self.awaiting_id.clear();
                for queue in &queues {
                    queue.attach(None);
                    queue.sent_by.store(0, Ordering::Release);
                }
                let _ = self.context.events.send(Event::Rehome { queues, after: delay });
                None
            }
        }
    }

    /// The next request: one batch of each ready partition, in turn, up to `max.request.size`.
    fn build_request(&mut self) -> Option<(u64, Vec<TopicRecords>, Vec<Arc<PartitionQueue>>)> {
        let id = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let current = self.context.ids.current();
        let max = self.context.settings.max_request_size;
        let mut size = 0usize;
        let mut topics: Vec<TopicRecords> = Vec::new();
        let mut queues: Vec<Arc<PartitionQueue>> = Vec::new();
        // Only the queues ready now: one that sends is ready again at the back, for a later
        // request (a request carries one batch per partition).
        for _ in 0..self.ready.len() {
            let Some(queue) = self.ready.pop() else { break };
            queue.in_ready.store(false, Ordering::Release);
            let key = (queue.route.target_topic.clone(), queue.route.partition);
            if queue.is_stopped() || !self.queues.contains_key(&key) {
                continue;
            }
            // The first batch of a request goes whatever its size.
            let room = if queues.is_empty() {
                usize::MAX
            } else {
                max.saturating_sub(size)
            };
            match queue.next_batch(now, id, current, room) {
                Next::Batch(sendable) => {
                    size += sendable.size;
                    let records = PartitionRecords {
                        partition: queue.route.partition,
                        records: sendable.parts,
                    };
                    match topics.iter_mut().find(|t| t.topic == queue.route.target_topic) {
                        Some(topic) => topic.partitions.push(records),
                        None => topics.push(TopicRecords {
                            topic: queue.route.target_topic.clone(),
                            partitions: vec![records],
                        }),
                    }
                    // Its next batch, if it may send one, goes in a later request.
                    queue.wake();
                    queues.push(queue);
                }
                Next::NoRoom => {
                    queue.in_ready.store(true, Ordering::Release);
                    self.ready.push_front(queue);
                    break;
                }
                Next::Idle => {}
                Next::At(at) => self.wake_at(at, queue),
                Next::NewProducerId(stale) => {
                    self.new_producer_id(stale);
                    self.wake_at(now + Duration::from_secs(1), queue.clone());
                    self.awaiting_id.push(queue);
                }
            }
        }
        (!queues.is_empty()).then_some((id, topics, queues))
    }

    /// Every batch of request `id` failed with `error` (the request did not go out, or has no
    /// answer).
    fn fail_request(&mut self, id: u64, queues: &[Arc<PartitionQueue>], error: Error) {
        self.context.stats.record_error(&self.context.alias, "Produce", &error);
        if let Some(transaction) = &self.context.transaction {
            transaction.doom(&error);
        }
        for queue in queues {
            queue.failed(id, error.clone());
        }
        for queue in queues {
            self.settle(queue);
        }
    }

    fn handle_answer(&mut self, request: InFlight, answer: Result<Bytes, Error>) {
        self.context
            .stats
            .record_request(&self.context.alias, "Produce", request.sent_at.elapsed());
        let response =
            answer.and_then(|frame| decode_response::<ProduceResponse>(ApiKey::Produce, request.version, frame));
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                if error.is_retriable() {
                    self.connection = None;
                }
                return self.fail_request(request.id, &request.queues, error);
            }
        };
        #[cfg(debug_assertions)]
        for queue in &request.queues {
            // After the target took the batches, before they count as acknowledged.
            crate::faults::strike("producer", &queue.route.source_topic);
        }
        let now = Instant::now();
        let (answers, _brokers) = produced_partitions(response);
        let mut answered: HashMap<(TopicName, i32), Result<i64, Error>> = answers
            .into_iter()
            .map(|a| ((a.topic, a.partition), a.result))
            .collect();
        for queue in &request.queues {
            let key = (queue.route.target_topic.clone(), queue.route.partition);
            let result = answered.remove(&key).unwrap_or_else(|| {
                Err(Error::Protocol {
                    api: ApiKey::Produce,
                    version: request.version,
                    message: format!("no answer for {}-{}", key.0 .0, key.1),
                })
            });
            match result {
                Ok(base_offset) => {
                    if let Some(error) = queue.acknowledged(request.id, base_offset, now) {
                        self.stop_partition(queue, error);
                        continue;
                    }
                }
                Err(error) => {
                    self.context.stats.record_error(&self.context.alias, "Produce", &error);
                    let out_of_order = error.is(ResponseError::OutOfOrderSequenceNumber);
                    let refused = refused_before_append(&error);
                    // Behind a batch refused before its append the next ones are refused as out
                    // of order: nothing of theirs is in the transaction either.
                    let follows = queue.failed(request.id, error.clone());
                    if let Some(transaction) = &self.context.transaction {
                        if !(refused || follows && out_of_order) {
                            transaction.doom(&error);
                        }
                    }
                }
            }
            self.settle(queue);
        }
    }

    /// After an answer: what a failure asks for, once all its answers are in.
    fn settle(&mut self, queue: &Arc<PartitionQueue>) {
        match queue.settle(Instant::now(), self.context.settings.delivery_timeout) {
            Settled::Waiting => queue.wake(),
            Settled::ResendAt(at) => self.wake_at(at, queue.clone()),
            Settled::NewProducerId(stale, at) => {
                self.new_producer_id(stale);
                self.wake_at(at, queue.clone());
            }
            Settled::Rehome(at) => {
                let key = (queue.route.target_topic.clone(), queue.route.partition);
                if self.queues.remove(&key).is_some() {
                    queue.attach(None);
                    queue.sent_by.store(0, Ordering::Release);
                    let after = at.saturating_duration_since(Instant::now());
                    let _ = self.context.events.send(Event::Rehome {
                        queues: vec![queue.clone()],
                        after,
                    });
                }
            }
            Settled::Stop(error) => self.stop_partition(queue, error),
        }
    }

    /// A partition's target refused `stale`: a new idempotent producer id; in exactly-once
    /// mode the transaction already failed with it, and its abort brings the new identity.
    fn new_producer_id(&self, stale: strait_client::ProducerIdAndEpoch) {
        if self.context.transaction.is_none() {
            self.context.ids.replace(stale);
        }
    }

    fn stop_partition(&mut self, queue: &Arc<PartitionQueue>, error: crate::MirrorError) {
        queue.stop();
        queue.attach(None);
        self.queues
            .remove(&(queue.route.target_topic.clone(), queue.route.partition));
        let _ = self.context.events.send(Event::Stopped {
            route: queue.route.clone(),
            error,
        });
    }
}

/// The answer to the first request on the wire; never, when none is.
async fn answer_of(front: Option<&mut Answer>) -> Result<Bytes, Error> {
    match front {
        Some(answer) => answer.await,
        None => std::future::pending().await,
    }
}

/// Waits until the transaction lets requests start again; never without one.
async fn resumed(resumed: &mut Option<watch::Receiver<u64>>) {
    match resumed {
        Some(receiver) => {
            if receiver.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}
