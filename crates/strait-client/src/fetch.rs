//! Fetch: the request built and its answer unwrapped in one place, with the client side of
//! KIP-227 incremental fetch sessions. No I/O: [`FetchSession`] turns wanted positions into a
//! [`FetchRequest`] and a [`FetchResponse`] into [`FetchedPartition`]s, and is tested with
//! messages alone.
//!
//! A session lets a client that fetches many partitions from one broker send, after the first
//! (full) request, only what changed: partitions added or whose position moved, and partitions
//! to forget. The broker keeps the rest and answers only for partitions with something new.
//! The broker's session cache is small (`max.incremental.fetch.session.cache.slots`, 1000 for
//! all clients), so a client keeps one session per broker connection, never one per partition.
//!
//! # References
//! - KIP-227: <https://cwiki.apache.org/confluence/display/KAFKA/KIP-227%3A+Introduce+Incremental+FetchRequests+to+Increase+Partition+Scalability>
//! - Java's `FetchSessionHandler` and `FetchMetadata` (epochs: 0 creates a session, -1 fetches
//!   without one, then 1, 2, … wrapping to 1).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::{Error, KafkaCode, Result};

/// `session_epoch` of a request that creates (or re-creates) a session.
const INITIAL_EPOCH: i32 = 0;
/// `session_epoch` of a request that fetches without a session.
const FINAL_EPOCH: i32 = -1;

/// Request-wide settings of a Fetch: the consumer keys that shape it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchParams {
    /// `fetch.max.wait.ms`: how long the broker may hold the request for `min_bytes` to arrive.
    pub max_wait_ms: i32,
    /// `fetch.min.bytes`.
    pub min_bytes: i32,
    /// The response's size limit (`fetch.max.bytes`, or less when memory is short).
    pub max_bytes: i32,
    /// `isolation.level=read_committed`.
    pub read_committed: bool,
    /// `client.rack` (KIP-392): lets the leader point the client at a replica in its rack.
    pub rack_id: Option<String>,
}

/// One partition to fetch, and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPosition {
    /// The offset to fetch from.
    pub fetch_offset: i64,
    /// The partition's size limit in the response (`max.partition.fetch.bytes`).
    pub partition_max_bytes: i32,
}

/// Whether a request carried every partition or only what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchKind {
    /// Every partition (the first request, after an error, or without a session).
    Full,
    /// Only partitions added or moved on, and partitions to forget.
    Incremental,
}

impl FetchKind {
    /// `full` or `incremental`, for metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            FetchKind::Full => "full",
            FetchKind::Incremental => "incremental",
        }
    }
}

/// A topic partition, by name.
pub type PartitionKey = (TopicName, i32);

/// Where the leader says a partition is led now (KIP-951), when it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderHint {
    /// The leader's node id.
    pub leader_id: i32,
    /// The leader epoch.
    pub leader_epoch: i32,
}

/// One partition's answer in a Fetch response.
#[derive(Debug, Clone)]
pub struct FetchedPartition {
    /// The topic.
    pub topic: TopicName,
    /// The partition.
    pub partition: i32,
    /// The partition's error, if any; its other fields mean nothing then.
    pub error: Option<KafkaCode>,
    /// The high watermark.
    pub high_watermark: i64,
    /// The last stable offset.
    pub last_stable_offset: i64,
    /// The log start offset.
    pub log_start_offset: i64,
    /// Aborted transactions overlapping the fetched range: `(producer_id, first_offset)`.
    pub aborted_transactions: Vec<(i64, i64)>,
    /// KIP-392: the replica to fetch this partition from instead, when the leader names one.
    pub preferred_read_replica: Option<i32>,
    /// KIP-951: the current leader, sent with NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH.
    pub current_leader: Option<LeaderHint>,
    /// Raw record batches, the last one possibly partial.
    pub records: Bytes,
}

impl FetchedPartition {
    fn from_data(topic: TopicName, data: PartitionData) -> Self {
        let current_leader = (data.current_leader.leader_id.0 >= 0).then_some(LeaderHint {
            leader_id: data.current_leader.leader_id.0,
            leader_epoch: data.current_leader.leader_epoch,
        });
        FetchedPartition {
            aborted_transactions: crate::aborted_transactions(&data),
            topic,
            partition: data.partition_index,
            error: KafkaCode::from_code(data.error_code),
            high_watermark: data.high_watermark,
            last_stable_offset: data.last_stable_offset,
            log_start_offset: data.log_start_offset,
            preferred_read_replica: (data.preferred_read_replica.0 >= 0).then_some(data.preferred_read_replica.0),
            current_leader,
            records: data.records.unwrap_or_default(),
        }
    }

    /// The partition's error as a client [`Error`] saying what was fetched.
    pub fn error(&self, fetch_offset: i64) -> Option<Error> {
        self.error.map(|code| Error::Kafka {
            code,
            context: format!("Fetch {}-{} at offset {fetch_offset}", self.topic.0, self.partition),
            message: None,
        })
    }
}

/// The client side of one fetch session with one broker.
///
/// The caller says which partitions it wants ([`FetchSession::fetch`], [`FetchSession::forget`])
/// as they change, and [`FetchSession::build`] sends what the broker needs to know; the work per
/// request is in the changes, not in the number of partitions.
#[derive(Debug, Default)]
pub struct FetchSession {
    /// Whether this client fetches without a session (a one-off fetch).
    sessionless: bool,
    /// The broker's session id; 0 when there is none.
    id: i32,
    /// The epoch of the next request: 0 for a full one.
    epoch: i32,
    /// The partitions wanted, and from where.
    wanted: HashMap<PartitionKey, FetchPosition>,
    /// The partitions the broker's session holds, as of the last request sent.
    in_session: HashSet<PartitionKey>,
    /// Wanted partitions the broker has not heard of at their current position.
    changed: HashSet<PartitionKey>,
    /// Partitions in the broker's session that are no longer wanted.
    forgotten: HashSet<PartitionKey>,
    /// The kind of the request on the wire, if any.
    in_flight: Option<FetchKind>,
    /// Rotates the order of full requests, so that no partition always comes last.
    rotation: usize,
}

impl FetchSession {
    /// A session to be created by the first request.
    pub fn new() -> Self {
        FetchSession::default()
    }

    /// Fetches without a session: every request is full and the broker keeps nothing.
    pub fn sessionless() -> Self {
        FetchSession {
            sessionless: true,
            epoch: FINAL_EPOCH,
            ..FetchSession::default()
        }
    }

    /// The partitions wanted.
    pub fn len(&self) -> usize {
        self.wanted.len()
    }

    /// Whether no partition is wanted.
    pub fn is_empty(&self) -> bool {
        self.wanted.is_empty()
    }

    /// The broker's session id (0: none yet, or the broker had no room for one).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// Wants `partition` from `position` (a new partition, or one that moved on).
    pub fn fetch(&mut self, partition: PartitionKey, position: FetchPosition) {
        if self.wanted.get(&partition) == Some(&position) {
            return;
        }
        self.forgotten.remove(&partition);
        self.changed.insert(partition.clone());
        self.wanted.insert(partition, position);
    }

    /// No longer wants `partition` (paused, moved to another broker, or stopped).
    pub fn forget(&mut self, partition: &PartitionKey) {
        if self.wanted.remove(partition).is_none() {
            return;
        }
        self.changed.remove(partition);
        if self.in_session.contains(partition) {
            self.forgotten.insert(partition.clone());
        }
    }

    /// The next request: full when there is no session yet (or after an error), else only the
    /// changes since the last one.
    pub fn build(&mut self, params: &FetchParams) -> (FetchRequest, FetchKind) {
        let kind = if self.epoch == INITIAL_EPOCH || self.epoch == FINAL_EPOCH {
            FetchKind::Full
        } else {
            FetchKind::Incremental
        };
        let mut topics: Vec<FetchTopic> = Vec::new();
        let mut forgotten: Vec<ForgottenTopic> = Vec::new();
        match kind {
            FetchKind::Full => {
                let mut all: Vec<(&PartitionKey, &FetchPosition)> = self.wanted.iter().collect();
                all.sort_by(|a, b| a.0.cmp(b.0));
                if !all.is_empty() {
                    self.rotation = (self.rotation + 1) % all.len();
                    all.rotate_left(self.rotation);
                }
                for (key, position) in all {
                    push_partition(&mut topics, key, position);
                }
                self.in_session = self.wanted.keys().cloned().collect();
            }
            FetchKind::Incremental => {
                for key in &self.changed {
                    push_partition(&mut topics, key, &self.wanted[key]);
                    self.in_session.insert(key.clone());
                }
                for key in &self.forgotten {
                    match forgotten.iter_mut().find(|t| t.topic == key.0) {
                        Some(topic) => topic.partitions.push(key.1),
                        None => forgotten.push(
                            ForgottenTopic::default()
                                .with_topic(key.0.clone())
                                .with_partitions(vec![key.1]),
                        ),
                    }
                    self.in_session.remove(key);
                }
            }
        }
        self.changed.clear();
        self.forgotten.clear();
        self.in_flight = Some(kind);
        let request = FetchRequest::default()
            .with_max_wait_ms(params.max_wait_ms)
            .with_min_bytes(params.min_bytes)
            .with_max_bytes(params.max_bytes)
            .with_isolation_level(i8::from(params.read_committed))
            .with_session_id(if self.sessionless { 0 } else { self.id })
            .with_session_epoch(self.epoch)
            .with_topics(topics)
            .with_forgotten_topics_data(forgotten)
            .with_rack_id(StrBytes::from_string(params.rack_id.clone().unwrap_or_default()));
        (request, kind)
    }

    /// Takes the answer to the last [`build`](FetchSession::build): the session moves on, and
    /// each partition the broker answered for is returned. A session error (the broker lost or
    /// refused the session) is returned as an error, and the next request is full.
    pub fn handle_response(&mut self, response: FetchResponse) -> Result<Vec<FetchedPartition>> {
        let kind = self.in_flight.take();
        if let Some(code) = KafkaCode::from_code(response.error_code) {
            // FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR:
            // the broker has no usable session; others close it. Either way, start over.
            if matches!(
                code.0,
                ResponseError::FetchSessionIdNotFound
                    | ResponseError::InvalidFetchSessionEpoch
                    | ResponseError::FetchSessionTopicIdError
            ) {
                self.id = 0;
            }
            self.reset();
            return Err(Error::Kafka {
                code,
                context: format!("Fetch (session {})", response.session_id),
                message: None,
            });
        }
        if !self.sessionless {
            match kind {
                Some(FetchKind::Full) => {
                    // Session id 0: the broker had no room for a session; the next request asks again.
                    self.id = response.session_id;
                    self.epoch = if self.id == 0 { INITIAL_EPOCH } else { 1 };
                }
                // Session id 0 here: the broker closed the session (it had become empty).
                Some(FetchKind::Incremental) if response.session_id == 0 => {
                    self.id = 0;
                    self.epoch = INITIAL_EPOCH;
                }
                Some(FetchKind::Incremental) => {
                    self.epoch = if self.epoch == i32::MAX { 1 } else { self.epoch + 1 };
                }
                None => {}
            }
        }
        Ok(response
            .responses
            .into_iter()
            .flat_map(|topic| {
                let name = topic.topic;
                topic
                    .partitions
                    .into_iter()
                    .map(move |data| FetchedPartition::from_data(name.clone(), data))
            })
            .collect())
    }

    /// After a request that got no answer: the broker's view of the session is unknown, so the
    /// next request is full (and replaces the old session).
    pub fn reset(&mut self) {
        self.in_flight = None;
        if !self.sessionless {
            self.epoch = INITIAL_EPOCH;
        }
        self.changed.clear();
        self.forgotten.clear();
    }
}

fn push_partition(topics: &mut Vec<FetchTopic>, key: &PartitionKey, position: &FetchPosition) {
    let partition = FetchPartition::default()
        .with_partition(key.1)
        .with_fetch_offset(position.fetch_offset)
        .with_partition_max_bytes(position.partition_max_bytes);
    match topics.last_mut().filter(|t| t.topic == key.0) {
        Some(topic) => topic.partitions.push(partition),
        None => match topics.iter_mut().find(|t| t.topic == key.0) {
            Some(topic) => topic.partitions.push(partition),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(key.0.clone())
                    .with_partitions(vec![partition]),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, LeaderIdAndEpoch};
    use kafka_protocol::messages::BrokerId;

    use super::*;
    use crate::topic_name;

    fn params() -> FetchParams {
        FetchParams {
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 50 << 20,
            read_committed: false,
            rack_id: None,
        }
    }

    fn key(topic: &str, partition: i32) -> PartitionKey {
        (topic_name(topic), partition)
    }

    fn at(offset: i64) -> FetchPosition {
        FetchPosition {
            fetch_offset: offset,
            partition_max_bytes: 1 << 20,
        }
    }

    /// (topic, partition, offset) asked for, and (topic, partition) forgotten, each sorted.
    type Asked = (Vec<(String, i32, i64)>, Vec<(String, i32)>);

    /// What a request asks for.
    fn asked(request: &FetchRequest) -> Asked {
        let mut topics: Vec<(String, i32, i64)> = request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic.0.to_string(), p.partition, p.fetch_offset))
            })
            .collect();
        topics.sort();
        let mut forgotten: Vec<(String, i32)> = request
            .forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.0.to_string(), *p)))
            .collect();
        forgotten.sort();
        (topics, forgotten)
    }

    fn answer(session_id: i32, partitions: &[(&str, i32, i16)]) -> FetchResponse {
        let mut responses: Vec<FetchableTopicResponse> = Vec::new();
        for &(topic, partition, error) in partitions {
            let data = PartitionData::default()
                .with_partition_index(partition)
                .with_error_code(error)
                .with_high_watermark(100);
            match responses.iter_mut().find(|t| t.topic.0.as_str() == topic) {
                Some(t) => t.partitions.push(data),
                None => responses.push(
                    FetchableTopicResponse::default()
                        .with_topic(topic_name(topic))
                        .with_partitions(vec![data]),
                ),
            }
        }
        FetchResponse::default()
            .with_session_id(session_id)
            .with_responses(responses)
    }

    #[test]
    fn the_first_request_is_full_and_creates_a_session_then_only_changes_are_sent() {
        let mut session = FetchSession::new();
        session.fetch(key("a", 0), at(10));
        session.fetch(key("a", 1), at(20));
        session.fetch(key("b", 0), at(30));
        let (request, kind) = session.build(&params());
        assert_eq!(kind, FetchKind::Full);
        assert_eq!((request.session_id, request.session_epoch), (0, 0));
        assert_eq!(
            asked(&request).0,
            vec![("a".into(), 0, 10), ("a".into(), 1, 20), ("b".into(), 0, 30)]
        );
        session.handle_response(answer(77, &[])).unwrap();
        assert_eq!(session.id(), 77);

        // Nothing changed: an incremental request that names no partition.
        let (request, kind) = session.build(&params());
        assert_eq!(kind, FetchKind::Incremental);
        assert_eq!((request.session_id, request.session_epoch), (77, 1));
        assert_eq!(asked(&request), (vec![], vec![]));
        session.handle_response(answer(77, &[])).unwrap();

        // a-1 moved on, b-0 is paused, c-0 is new; the same position again is no change.
        session.fetch(key("a", 1), at(25));
        session.fetch(key("a", 0), at(10));
        session.forget(&key("b", 0));
        session.fetch(key("c", 0), at(0));
        let (request, kind) = session.build(&params());
        assert_eq!(kind, FetchKind::Incremental);
        assert_eq!(request.session_epoch, 2);
        assert_eq!(
            asked(&request),
            (vec![("a".into(), 1, 25), ("c".into(), 0, 0)], vec![("b".into(), 0)])
        );
        session.handle_response(answer(77, &[])).unwrap();

        // b-0 resumes: added back; a partition never sent and forgotten again is not named.
        session.fetch(key("b", 0), at(31));
        session.fetch(key("d", 0), at(0));
        session.forget(&key("d", 0));
        let (request, _) = session.build(&params());
        assert_eq!(request.session_epoch, 3);
        assert_eq!(asked(&request), (vec![("b".into(), 0, 31)], vec![]));
        assert_eq!(session.len(), 4);
    }

    #[test]
    fn a_session_error_or_a_lost_answer_makes_the_next_request_full() {
        let mut session = FetchSession::new();
        session.fetch(key("a", 0), at(0));
        session.build(&params());
        session.handle_response(answer(5, &[])).unwrap();
        session.build(&params());
        // INVALID_FETCH_SESSION_EPOCH: no usable session; start a new one.
        let error = session.handle_response(answer(0, &[]).with_error_code(71)).unwrap_err();
        assert!(error.is_retriable(), "{error}");
        assert_eq!(error.kafka_code().unwrap().name(), "INVALID_FETCH_SESSION_EPOCH");
        let (request, kind) = session.build(&params());
        assert_eq!(kind, FetchKind::Full);
        assert_eq!((request.session_id, request.session_epoch), (0, 0));
        assert_eq!(asked(&request).0, vec![("a".into(), 0, 0)]);
        session.handle_response(answer(6, &[])).unwrap();

        // No answer at all: a full request that closes session 6 and opens another.
        session.build(&params());
        session.reset();
        let (request, kind) = session.build(&params());
        assert_eq!(kind, FetchKind::Full);
        assert_eq!((request.session_id, request.session_epoch), (6, 0));
    }

    #[test]
    fn a_broker_without_room_for_a_session_gets_full_requests() {
        let mut session = FetchSession::new();
        session.fetch(key("a", 0), at(0));
        session.build(&params());
        session.handle_response(answer(0, &[])).unwrap();
        let (request, kind) = session.build(&params());
        assert_eq!(kind, FetchKind::Full);
        assert_eq!((request.session_id, request.session_epoch), (0, 0));
        assert_eq!(asked(&request).0.len(), 1);
    }

    #[test]
    fn epochs_wrap_to_one() {
        let mut session = FetchSession::new();
        session.fetch(key("a", 0), at(0));
        session.build(&params());
        session.handle_response(answer(9, &[])).unwrap();
        session.epoch = i32::MAX;
        let (request, _) = session.build(&params());
        assert_eq!(request.session_epoch, i32::MAX);
        session.handle_response(answer(9, &[])).unwrap();
        assert_eq!(session.build(&params()).0.session_epoch, 1);
    }

    #[test]
    fn full_requests_rotate_their_order() {
        let mut session = FetchSession::sessionless();
        for p in 0..4 {
            session.fetch(key("t", p), at(0));
        }
        let firsts: HashSet<i32> = (0..4)
            .map(|_| {
                let (request, kind) = session.build(&params());
                assert_eq!(kind, FetchKind::Full);
                assert_eq!((request.session_id, request.session_epoch), (0, -1));
                session.handle_response(answer(0, &[])).unwrap();
                request.topics[0].partitions[0].partition
            })
            .collect();
        assert_eq!(firsts.len(), 4, "every partition comes first once");
    }

    #[test]
    fn answers_carry_errors_leader_hints_and_the_rack_choice() {
        let mut session = FetchSession::new();
        session.fetch(key("a", 0), at(0));
        let (request, _) = session.build(&FetchParams {
            rack_id: Some("az-1".into()),
            ..params()
        });
        assert_eq!(request.rack_id.as_str(), "az-1");
        let mut response = answer(3, &[("a", 0, 6), ("a", 1, 0)]);
        response.responses[0].partitions[0].current_leader = LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(2))
            .with_leader_epoch(7);
        response.responses[0].partitions[1].preferred_read_replica = BrokerId(3);
        let partitions = session.handle_response(response).unwrap();
        let moved = &partitions[0];
        assert_eq!(moved.error.unwrap().name(), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(
            moved.current_leader,
            Some(LeaderHint {
                leader_id: 2,
                leader_epoch: 7
            })
        );
        assert_eq!(
            moved.error(42).unwrap().to_string(),
            "Fetch a-0 at offset 42: NOT_LEADER_OR_FOLLOWER (6)"
        );
        assert_eq!(partitions[1].preferred_read_replica, Some(3));
        assert_eq!(partitions[1].current_leader, None);
    }
}
