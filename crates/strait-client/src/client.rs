//! A client of one cluster: bootstrap, metadata, a connection per broker, and the requests the
//! mirror and its tools need.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreatePartitionsRequest, CreateTopicsRequest, InitProducerIdRequest, ListOffsetsRequest,
    MetadataRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::Mutex;

use crate::backoff::Backoff;
use crate::connection::{BrokerConnection, ConnectionConfig};
use crate::fetch::{FetchParams, FetchPosition, FetchSession, FetchedPartition};
use crate::produce::submit_produce;
use crate::{Error, Result};

/// Settings of a cluster client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `bootstrap.servers`: `host:port` entries, tried in order.
    pub bootstrap_servers: Vec<String>,
    /// Per-connection settings.
    pub connection: ConnectionConfig,
}

impl ClientConfig {
    /// A configuration from a `bootstrap.servers` value (comma separated).
    pub fn new(bootstrap_servers: &str) -> Self {
        ClientConfig {
            bootstrap_servers: bootstrap_servers
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
            connection: ConnectionConfig::default(),
        }
    }
}

/// A broker of the cluster as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    /// `node.id`.
    pub id: i32,
    /// `host:port`.
    pub address: String,
}

/// One partition in a Metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// The partition index.
    pub partition: i32,
    /// The leader's node id (-1 if none).
    pub leader: i32,
    /// The leader epoch (for fencing fetches).
    pub leader_epoch: i32,
    /// The partition's error, if any (e.g. LEADER_NOT_AVAILABLE).
    pub error: i16,
}

/// One topic in a Metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// The topic's error, if any (e.g. UNKNOWN_TOPIC_OR_PARTITION).
    pub error: i16,
    /// Whether Kafka marks it internal (`__consumer_offsets`, `__transaction_state`).
    pub is_internal: bool,
    /// Partitions sorted by index.
    pub partitions: Vec<PartitionMetadata>,
    /// The topic's ID (KIP-516, Metadata v10+); `None` where the broker has none to give.
    pub topic_id: Option<TopicId>,
}

/// A topic's ID (KIP-516): a new one each time a topic of the same name is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// The ID Metadata gives, `None` for the zero ID (a broker without topic IDs).
    pub fn from_bytes(bytes: [u8; 16]) -> Option<TopicId> {
        Some(TopicId(bytes)).filter(|id| id.0 != [0; 16])
    }
}

/// As Kafka prints it (`Uuid.toString`, e.g. in `kafka-topics.sh --describe`): URL-safe base64
/// without padding.
impl std::fmt::Display for TopicId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use base64::Engine;
        f.write_str(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.0))
    }
}

impl std::str::FromStr for TopicId {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<TopicId, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|e| format!("topic ID {text:?}: {e}"))?;
        let bytes: [u8; 16] = bytes
            .try_into()
            .map_err(|_| format!("topic ID {text:?}: not 16 bytes"))?;
        Ok(TopicId(bytes))
    }
}

/// What a Metadata request returned.
#[derive(Debug, Clone, Default)]
pub struct ClusterMetadata {
    /// The brokers by node id.
    pub brokers: BTreeMap<i32, Broker>,
    /// The topics by name.
    pub topics: BTreeMap<String, TopicMetadata>,
}

/// A topic to create.
#[derive(Debug, Clone)]
pub struct NewTopic {
    /// Its name.
    pub name: String,
    /// Number of partitions.
    pub partitions: i32,
    /// Replication factor; -1 means the broker's `default.replication.factor`.
    pub replication_factor: i16,
    /// Topic configs, e.g. `cleanup.policy=compact`.
    pub configs: Vec<(String, String)>,
}

/// Which offset ListOffsets asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end offset (high watermark).
    Latest,
}

/// A producer identity from InitProducerId.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdAndEpoch {
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
}

/// A client of one Kafka cluster. Cheap to clone.
#[derive(Debug, Clone)]
pub struct KafkaClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    brokers: Mutex<BTreeMap<i32, Broker>>,
    connections: Mutex<HashMap<i32, BrokerConnection>>,
    bootstrap: Mutex<Option<BrokerConnection>>,
}

impl KafkaClient {
    /// Connects to the first reachable bootstrap server and loads the broker list.
    pub async fn connect(config: ClientConfig) -> Result<KafkaClient> {
        if config.bootstrap_servers.is_empty() {
            return Err(Error::NoBroker(
                "bootstrap.servers is empty; set it to host:port[,host:port…]".into(),
            ));
        }
        let client = KafkaClient {
            inner: Arc::new(Inner {
                config,
                brokers: Mutex::new(BTreeMap::new()),
                connections: Mutex::new(HashMap::new()),
                bootstrap: Mutex::new(None),
            }),
        };
        client.metadata(Some(&[])).await?;
        Ok(client)
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// A connection to any broker: the last one that worked, else the known brokers and the
    /// bootstrap servers in turn.
    pub async fn any_connection(&self) -> Result<BrokerConnection> {
        let mut bootstrap = self.inner.bootstrap.lock().await;
        if let Some(connection) = bootstrap.as_ref().filter(|c| !c.is_closed()) {
            return Ok(connection.clone());
        }
        let mut candidates: Vec<String> = self
            .inner
            .brokers
            .lock()
            .await
            .values()
            .map(|b| b.address.clone())
            .collect();
        candidates.extend(self.inner.config.bootstrap_servers.iter().cloned());
        let mut last_error = None;
        for address in candidates {
            match BrokerConnection::connect(&address, self.inner.config.connection.clone()).await {
                Ok(connection) => {
                    *bootstrap = Some(connection.clone());
                    return Ok(connection);
                }
                // Wrong credentials, an untrusted certificate or bad settings fail the same way
                // at every broker: say so instead of "none answered".
                Err(
                    error @ (Error::Authentication(_)
                    | Error::Tls { .. }
                    | Error::Config { .. }
                    | Error::TokenEndpoint { .. }),
                ) => return Err(error),
                Err(error) => {
                    tracing::debug!(%address, %error, "broker not reachable");
                    last_error = Some(error);
                }
            }
        }
        Err(Error::NoBroker(format!(
            "none of bootstrap.servers {} answered (last error: {})",
            self.inner.config.bootstrap_servers.join(","),
            last_error.map_or("none".into(), |e| e.to_string())
        )))
    }

    /// The connection to broker `id`, opened (or reopened) as needed.
    pub async fn connection(&self, id: i32) -> Result<BrokerConnection> {
        let mut connections = self.inner.connections.lock().await;
        if let Some(connection) = connections.get(&id).filter(|c| !c.is_closed()) {
            return Ok(connection.clone());
        }
        let address = match self.inner.brokers.lock().await.get(&id) {
            Some(broker) => broker.address.clone(),
            None => return Err(Error::NoBroker(format!("broker {id} is not in the cluster's metadata"))),
        };
        let connection = BrokerConnection::connect(&address, self.inner.config.connection.clone()).await?;
        connections.insert(id, connection.clone());
        Ok(connection)
    }

    /// Metadata for `topics` (`None`: all topics; `Some(&[])`: brokers only). Refreshes the
    /// broker list.
    pub async fn metadata(&self, topics: Option<&[&str]>) -> Result<ClusterMetadata> {
        let request = MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(topics.map(|names| {
                names
                    .iter()
                    .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                    .collect()
            }));
        let connection = self.any_connection().await?;
        let response = connection.send(&request).await?;
        let brokers: BTreeMap<i32, Broker> = response
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id.0,
                    Broker {
                        id: b.node_id.0,
                        address: format!("{}:{}", b.host.as_str(), b.port),
                    },
                )
            })
            .collect();
        *self.inner.brokers.lock().await = brokers.clone();
        let topics = response
            .topics
            .iter()
            .filter_map(|t| {
                let name = t.name.as_ref()?.0.to_string();
                let mut partitions: Vec<PartitionMetadata> = t
                    .partitions
                    .iter()
                    .map(|p| PartitionMetadata {
                        partition: p.partition_index,
                        leader: p.leader_id.0,
                        leader_epoch: p.leader_epoch,
                        error: p.error_code,
                    })
                    .collect();
                partitions.sort_by_key(|p| p.partition);
                Some((
                    name,
                    TopicMetadata {
                        error: t.error_code,
                        is_internal: t.is_internal,
                        partitions,
                        topic_id: TopicId::from_bytes(*t.topic_id.as_bytes()),
                    },
                ))
            })
            .collect();
        Ok(ClusterMetadata { brokers, topics })
    }

    /// The connection to the leader of `topic`/`partition`, from fresh metadata.
    pub async fn leader(&self, topic: &str, partition: i32) -> Result<BrokerConnection> {
        let metadata = self.metadata(Some(&[topic])).await?;
        let context = || format!("Metadata {topic}-{partition}");
        let topic_metadata = metadata
            .topics
            .get(topic)
            .ok_or_else(|| Error::kafka(ResponseError::UnknownTopicOrPartition, context()))?;
        Error::check(topic_metadata.error, context, None)?;
        let partition_metadata = topic_metadata
            .partitions
            .iter()
            .find(|p| p.partition == partition)
            .ok_or_else(|| Error::kafka(ResponseError::UnknownTopicOrPartition, context()))?;
        Error::check(partition_metadata.error, context, None)?;
        if partition_metadata.leader < 0 {
            return Err(Error::kafka(ResponseError::LeaderNotAvailable, context()));
        }
        self.connection(partition_metadata.leader).await
    }

    /// The brokers as the last Metadata request listed them.
    pub async fn brokers(&self) -> BTreeMap<i32, Broker> {
        self.inner.brokers.lock().await.clone()
    }

    /// A new connection to broker `id`, of the caller's own (not shared: Kafka answers the
    /// requests of one connection one at a time, so a long-polling Fetch would hold up
    /// everything queued behind it), with `config` (this client's settings, with a counter of
    /// the caller's, say).
    pub async fn connect_to(&self, id: i32, config: ConnectionConfig) -> Result<BrokerConnection> {
        let address = match self.inner.brokers.lock().await.get(&id) {
            Some(broker) => broker.address.clone(),
            None => return Err(Error::NoBroker(format!("broker {id} is not in the cluster's metadata"))),
        };
        BrokerConnection::connect(&address, config).await
    }

    /// Creates topics; a topic that already exists counts as created.
    pub async fn create_topics(&self, topics: &[NewTopic]) -> Result<()> {
        for (_, answer) in self.create_topics_each(topics).await? {
            answer?;
        }
        Ok(())
    }

    /// Creates `topics` in one request and returns the broker's answer for each, by name:
    /// a topic the broker refuses (a policy, an ACL, an unknown config) leaves the others
    /// created. An existing topic counts as created. `Err` only when the request itself failed.
    pub async fn create_topics_each(&self, topics: &[NewTopic]) -> Result<Vec<(String, Result<()>)>> {
        let request = CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(
            topics
                .iter()
                .map(|t| {
                    CreatableTopic::default()
                        .with_name(topic_name(&t.name))
                        .with_num_partitions(t.partitions)
                        .with_replication_factor(t.replication_factor)
                        .with_configs(
                            t.configs
                                .iter()
                                .map(|(k, v)| {
                                    CreatableTopicConfig::default()
                                        .with_name(StrBytes::from_string(k.clone()))
                                        .with_value(Some(StrBytes::from_string(v.clone())))
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
        let response = retrying(self.inner.config.connection.request_timeout, || async {
            self.any_connection().await?.send(&request).await
        })
        .await?;
        Ok(response
            .topics
            .iter()
            .map(|topic| {
                let name = topic.name.0.as_str().to_owned();
                let answer = if topic.error_code == ResponseError::TopicAlreadyExists.code() {
                    Ok(())
                } else {
                    Error::check(
                        topic.error_code,
                        || format!("CreateTopics {name}"),
                        topic.error_message.as_ref().map(|m| m.as_str()),
                    )
                };
                (name, answer)
            })
            .collect())
    }

    /// Grows `topic` to `count` partitions; a topic that already has that many counts as done.
    pub async fn create_partitions(&self, topic: &str, count: i32) -> Result<()> {
        let request = CreatePartitionsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(topic_name(topic))
                .with_count(count)
                .with_assignments(None)]);
        let response = retrying(self.inner.config.connection.request_timeout, || async {
            self.any_connection().await?.send(&request).await
        })
        .await?;
        for result in &response.results {
            // INVALID_PARTITIONS: it already has (at least) that many.
            if result.error_code != ResponseError::InvalidPartitions.code() {
                Error::check(
                    result.error_code,
                    || format!("CreatePartitions {topic} to {count}"),
                    result.error_message.as_deref(),
                )?;
            }
        }
        Ok(())
    }

    /// The earliest or latest offset of each of `partitions` of `topic`, from their leaders.
    pub async fn list_offsets(&self, topic: &str, partitions: &[i32], spec: OffsetSpec) -> Result<BTreeMap<i32, i64>> {
        let timestamp = match spec {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
        };
        // One Metadata request, then one ListOffsets request per leader for all its partitions:
        // over a slow link a round trip per partition adds up.
        retrying(self.inner.config.connection.request_timeout, || async {
            let metadata = self.metadata(Some(&[topic])).await?;
            let context = |partition: i32| move || format!("ListOffsets {topic}-{partition}");
            let known = metadata
                .topics
                .get(topic)
                .map(|t| t.partitions.as_slice())
                .unwrap_or_default();
            let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for &partition in partitions {
                let leader = known.iter().find(|p| p.partition == partition).map_or(-1, |p| p.leader);
                if leader < 0 {
                    return Err(Error::kafka(ResponseError::LeaderNotAvailable, context(partition)()));
                }
                by_leader.entry(leader).or_default().push(partition);
            }
            let mut offsets = BTreeMap::new();
            for (leader, leader_partitions) in by_leader {
                let request = ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![ListOffsetsTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(
                            leader_partitions
                                .iter()
                                .map(|&p| {
                                    ListOffsetsPartition::default()
                                        .with_partition_index(p)
                                        .with_timestamp(timestamp)
                                })
                                .collect(),
                        )]);
                let response = self.connection(leader).await?.send(&request).await?;
                for &partition in &leader_partitions {
                    let p = response
                        .topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .find(|p| p.partition_index == partition);
                    let p =
                        p.ok_or_else(|| Error::kafka(ResponseError::UnknownTopicOrPartition, context(partition)()))?;
                    Error::check(p.error_code, context(partition), None)?;
                    offsets.insert(partition, p.offset);
                }
            }
            Ok(offsets)
        })
        .await
    }

    /// Fetches from one partition's leader at `offset`, returning raw batches.
    pub async fn fetch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
        read_committed: bool,
    ) -> Result<FetchedPartition> {
        retrying(self.inner.config.connection.request_timeout, || {
            self.fetch_once(topic, partition, offset, max_bytes, read_committed)
        })
        .await
    }

    async fn fetch_once(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
        read_committed: bool,
    ) -> Result<FetchedPartition> {
        let mut session = FetchSession::sessionless();
        session.fetch(
            (topic_name(topic), partition),
            FetchPosition {
                fetch_offset: offset,
                partition_max_bytes: max_bytes,
            },
        );
        let (request, _) = session.build(&FetchParams {
            max_wait_ms: 100,
            min_bytes: 1,
            max_bytes,
            read_committed,
            rack_id: None,
        });
        let response = self.leader(topic, partition).await?.send(&request).await?;
        let data = session
            .handle_response(response)?
            .into_iter()
            .find(|p| p.topic.0.as_str() == topic && p.partition == partition)
            .ok_or_else(|| Error::Protocol {
                api: ApiKey::Fetch,
                version: -1,
                message: format!("no data for {topic}-{partition}"),
            })?;
        match data.error(offset) {
            Some(error) => Err(error),
            None => Ok(data),
        }
    }

    /// Produces one record batch (in parts) to a partition with `acks=all` and returns the base
    /// offset the broker assigned.
    pub async fn produce(&self, topic: &str, partition: i32, batch: Vec<Bytes>) -> Result<i64> {
        let timeout_ms = self.inner.config.connection.request_timeout.as_millis() as i32;
        // Retrying without an idempotent producer id can duplicate the batch: this is for
        // Strait's own small records (progress, tests), not for mirrored data.
        retrying(self.inner.config.connection.request_timeout, || async {
            let connection = self.leader(topic, partition).await?;
            submit_produce(&connection, topic, partition, batch.clone(), timeout_ms, None)
                .await?
                .base_offset()
                .await
        })
        .await
    }

    /// Produces one batch of a transactional producer to a partition's leader with `acks=all`,
    /// as part of the open transaction of `transactional_id`, at Produce version at most
    /// `max_version`; returns the base offset. Retries what may pass: the batch carries the
    /// producer's id, epoch and sequence, so the broker recognises a retry it already has.
    pub async fn produce_in_transaction(
        &self,
        topic: &str,
        partition: i32,
        batch: Vec<Bytes>,
        transactional_id: &str,
        max_version: i16,
    ) -> Result<i64> {
        let timeout_ms = self.inner.config.connection.request_timeout.as_millis() as i32;
        retrying(self.inner.config.connection.request_timeout, || async {
            let connection = self.leader(topic, partition).await?;
            let transactional = Some((transactional_id, max_version));
            submit_produce(&connection, topic, partition, batch.clone(), timeout_ms, transactional)
                .await?
                .base_offset()
                .await
        })
        .await
    }

    /// Obtains an idempotent producer id (InitProducerId without a transactional id).
    pub async fn init_producer_id(&self) -> Result<ProducerIdAndEpoch> {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(-1);
        let response = self.any_connection().await?.send(&request).await?;
        Error::check(response.error_code, || "InitProducerId".into(), None)?;
        Ok(ProducerIdAndEpoch {
            producer_id: response.producer_id.0,
            producer_epoch: response.producer_epoch,
        })
    }

    /// Waits until every partition of `topic` has a leader, for at most `timeout`.
    pub async fn wait_for_leaders(&self, topic: &str, timeout: Duration) -> Result<TopicMetadata> {
        let mut topics = self.wait_for_leaders_of(&[topic], timeout).await?;
        Ok(topics.remove(topic).expect("every topic waited for is returned"))
    }

    /// Waits until every partition of every topic of `topics` has a leader, for at most
    /// `timeout`: one Metadata request for all of them at a time.
    pub async fn wait_for_leaders_of(
        &self,
        topics: &[&str],
        timeout: Duration,
    ) -> Result<BTreeMap<String, TopicMetadata>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mut metadata = self.metadata(Some(topics)).await?;
            let ready = |name: &&str| {
                metadata.topics.get(*name).is_some_and(|t| {
                    t.error == 0
                        && !t.partitions.is_empty()
                        && t.partitions.iter().all(|p| p.error == 0 && p.leader >= 0)
                })
            };
            match topics.iter().find(|name| !ready(name)) {
                None => {
                    metadata.topics.retain(|name, _| topics.contains(&name.as_str()));
                    return Ok(metadata.topics);
                }
                Some(waiting) if tokio::time::Instant::now() > deadline => {
                    return Err(Error::Timeout {
                        what: format!("leaders for topic {waiting}"),
                        after_ms: timeout.as_millis() as u64,
                    });
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `deadline` passes; retriable errors
/// (leader moves, a topic still being created, a dropped connection) are retried with backoff,
/// as Kafka's admin client does.
pub(crate) async fn retrying<T, F, Fut>(deadline: Duration, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let give_up = tokio::time::Instant::now() + deadline;
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        match attempt().await {
            Err(error) if error.is_retriable() => {
                let delay = backoff.next_delay();
                if tokio::time::Instant::now() + delay >= give_up {
                    return Err(error);
                }
                tracing::debug!(%error, "retrying in {delay:?}");
                tokio::time::sleep(delay).await;
            }
            result => return result,
        }
    }
}

/// The aborted transactions of one partition of a Fetch response, as `(producer id, first
/// offset)`: the form `strait_wire::AbortedTransactionFilter` takes.
pub fn aborted_transactions(data: &PartitionData) -> Vec<(i64, i64)> {
    data.aborted_transactions
        .iter()
        .flatten()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect()
}

/// A topic name for kafka-protocol messages.
pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}
