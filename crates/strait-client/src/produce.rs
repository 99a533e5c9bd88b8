//! The Produce request, encoded by hand so that record batches are sent without being copied.
//!
//! kafka-protocol's encoder copies every record byte into its output buffer; here the small
//! envelope is encoded into buffers of its own and the batches are placed between them as
//! `Bytes` parts, ready for one vectored write. Layout per the Kafka protocol guide
//! (<https://kafka.apache.org/protocol#The_Messages_Produce>): v3–v8 classic, v9+ flexible.
//!
//! A request carries at most one batch per partition (Kafka refuses more from v3 on) for as many
//! partitions as the caller likes; its answer is unwrapped per partition by
//! [`produced_partitions`], since each partition succeeds or fails on its own.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ApiKey, ProduceResponse, TopicName};

use crate::connection::{decode_response, BrokerConnection, PendingResponse};
use crate::fetch::LeaderHint;
use crate::{Broker, Error, KafkaCode, Result};

/// One partition's records: the parts of exactly one record batch (Kafka accepts one batch per
/// partition per request from v3 on).
#[derive(Debug, Clone)]
pub struct PartitionRecords {
    /// The partition index.
    pub partition: i32,
    /// The batch, possibly in several parts (e.g. a rewritten header and the untouched payload).
    pub records: Vec<Bytes>,
}

/// One topic's partitions in a Produce request.
#[derive(Debug, Clone)]
pub struct TopicRecords {
    /// The topic name.
    pub topic: TopicName,
    /// Its partitions; each at most once.
    pub partitions: Vec<PartitionRecords>,
}

/// Encodes a Produce request body of `version` (3..=12) as a list of buffers: envelope pieces
/// and the callers' record parts, in wire order.
pub fn encode_produce_request(
    version: i16,
    transactional_id: Option<&str>,
    acks: i16,
    timeout_ms: i32,
    topics: &[TopicRecords],
) -> Vec<Bytes> {
    assert!((3..=12).contains(&version), "Produce v{version} is not encoded by hand");
    let flexible = version >= 9;
    let mut parts = Vec::new();
    let mut envelope = BytesMut::with_capacity(64);
    put_nullable_string(&mut envelope, transactional_id, flexible);
    envelope.put_i16(acks);
    envelope.put_i32(timeout_ms);
    put_array_len(&mut envelope, topics.len(), flexible);
    for topic in topics {
        put_nullable_string(&mut envelope, Some(topic.topic.0.as_str()), flexible);
        put_array_len(&mut envelope, topic.partitions.len(), flexible);
        for partition in &topic.partitions {
            envelope.put_i32(partition.partition);
            let size: usize = partition.records.iter().map(Bytes::len).sum();
            if flexible {
                put_uvarint(&mut envelope, size as u64 + 1);
            } else {
                envelope.put_i32(size as i32);
            }
            parts.push(envelope.split().freeze());
            parts.extend(partition.records.iter().filter(|p| !p.is_empty()).cloned());
            if flexible {
                envelope.put_u8(0); // partition tagged fields
            }
        }
        if flexible {
            envelope.put_u8(0); // topic tagged fields
        }
    }
    if flexible {
        envelope.put_u8(0); // request tagged fields
    }
    parts.push(envelope.freeze());
    parts
}

/// One partition's answer in a Produce response.
#[derive(Debug, Clone)]
pub struct ProducedPartition {
    /// The topic.
    pub topic: TopicName,
    /// The partition.
    pub partition: i32,
    /// The base offset the batch got (for a retry the broker recognised as a duplicate: the
    /// offset of the first write), or the partition's error.
    pub result: Result<i64>,
    /// KIP-951: where the partition is led now, sent with NOT_LEADER_OR_FOLLOWER.
    pub current_leader: Option<LeaderHint>,
}

/// Unwraps a Produce response: one result per partition, and the brokers the response names
/// (KIP-951 `node_endpoints`, sent with leader hints so that no Metadata request is needed).
pub fn produced_partitions(response: ProduceResponse) -> (Vec<ProducedPartition>, Vec<Broker>) {
    let brokers = response
        .node_endpoints
        .iter()
        .map(|n| Broker {
            id: n.node_id.0,
            address: format!("{}:{}", n.host.as_str(), n.port),
        })
        .collect();
    let mut partitions = Vec::new();
    for topic in response.responses {
        for p in topic.partition_responses {
            let message = p.error_message.as_ref().map(|m| m.as_str().to_owned()).or_else(|| {
                let errors: Vec<String> = p
                    .record_errors
                    .iter()
                    .map(|e| {
                        format!(
                            "record {}: {}",
                            e.batch_index,
                            e.batch_index_error_message.as_deref().unwrap_or("")
                        )
                    })
                    .collect();
                (!errors.is_empty()).then(|| errors.join("; "))
            });
            let result = match KafkaCode::from_code(p.error_code) {
                None => Ok(p.base_offset),
                Some(code) => Err(Error::Kafka {
                    code,
                    context: format!("Produce {}-{}", topic.name.0, p.index),
                    message,
                }),
            };
            let current_leader = (p.current_leader.leader_id.0 >= 0).then_some(LeaderHint {
                leader_id: p.current_leader.leader_id.0,
                leader_epoch: p.current_leader.leader_epoch,
            });
            partitions.push(ProducedPartition {
                topic: topic.name.clone(),
                partition: p.index,
                result,
                current_leader,
            });
        }
    }
    (partitions, brokers)
}

/// Sends one record batch (in parts) to `topic`/`partition` on `connection` (its leader) with
/// `acks=all`, without waiting for the answer: see [`PendingResponse`] for the ordering promise.
///
/// `transactional`: the batch is part of the open transaction of this `transactional.id`,
/// sent at Produce version at most the one given (11 under transaction versions 0 and 1, whose
/// brokers refuse later versions in a transaction).
pub async fn submit_produce(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    batch: Vec<Bytes>,
    timeout_ms: i32,
    transactional: Option<(&str, i16)>,
) -> Result<PendingProduce> {
    let mut version = connection.version(ApiKey::Produce)?;
    if let Some((_, max)) = transactional {
        version = version.min(max);
    }
    let body = encode_produce_request(
        version,
        transactional.map(|(id, _)| id),
        -1,
        timeout_ms,
        &[TopicRecords {
            topic: crate::topic_name(topic),
            partitions: vec![PartitionRecords {
                partition,
                records: batch,
            }],
        }],
    );
    let pending = connection.submit(ApiKey::Produce, version, body).await?;
    Ok(PendingProduce {
        pending,
        version,
        topic: topic.into(),
        partition,
    })
}

/// A Produce request of one batch on the wire.
#[derive(Debug)]
pub struct PendingProduce {
    pending: PendingResponse,
    version: i16,
    topic: String,
    partition: i32,
}

impl PendingProduce {
    /// Waits for the answer: the base offset the batch got, or the partition's error.
    pub async fn base_offset(self) -> Result<i64> {
        let (topic, partition, version) = (self.topic, self.partition, self.version);
        let frame = self.pending.response().await?;
        let response: ProduceResponse = decode_response(ApiKey::Produce, version, frame)?;
        let (answers, _) = produced_partitions(response);
        answers
            .into_iter()
            .find(|p| p.topic.0.as_str() == topic && p.partition == partition)
            .ok_or_else(|| Error::Protocol {
                api: ApiKey::Produce,
                version,
                message: format!("no answer for {topic}-{partition}"),
            })?
            .result
    }
}

/// Whether a Produce error means the batch is larger than the target takes
/// (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE): halves may fit.
pub fn is_too_large(error: &Error) -> bool {
    error
        .kafka_code()
        .is_some_and(|c| matches!(c.0, ResponseError::MessageTooLarge | ResponseError::RecordListTooLarge))
}

/// Whether a Produce error means the target no longer accepts the producer id, epoch or
/// sequence (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID): a new
/// producer id and sequences from 0 fix it.
pub fn is_sequence_error(error: &Error) -> bool {
    error.kafka_code().is_some_and(|c| {
        matches!(
            c.0,
            ResponseError::OutOfOrderSequenceNumber
                | ResponseError::InvalidProducerEpoch
                | ResponseError::UnknownProducerId
        )
    })
}

fn put_nullable_string(buf: &mut BytesMut, value: Option<&str>, flexible: bool) {
    match (value, flexible) {
        (None, false) => buf.put_i16(-1),
        (None, true) => buf.put_u8(0),
        (Some(s), false) => {
            buf.put_i16(s.len() as i16);
            buf.put_slice(s.as_bytes());
        }
        (Some(s), true) => {
            put_uvarint(buf, s.len() as u64 + 1);
            buf.put_slice(s.as_bytes());
        }
    }
}

fn put_array_len(buf: &mut BytesMut, len: usize, flexible: bool) {
    if flexible {
        put_uvarint(buf, len as u64 + 1);
    } else {
        buf.put_i32(len as i32);
    }
}

fn put_uvarint(buf: &mut BytesMut, mut value: u64) {
    while value >= 0x80 {
        buf.put_u8((value as u8) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ProduceRequest, TransactionalId};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn reference(version: i16, transactional_id: Option<&str>, topics: &[TopicRecords]) -> Bytes {
        let request = ProduceRequest::default()
            .with_transactional_id(transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.into()))))
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(
                topics
                    .iter()
                    .map(|t| {
                        TopicProduceData::default()
                            .with_name(t.topic.clone())
                            .with_partition_data(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        PartitionProduceData::default()
                                            .with_index(p.partition)
                                            .with_records(Some(p.records.concat().into()))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let mut buf = BytesMut::new();
        request.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn matches_kafka_protocol_encoding_in_every_version() {
        let batch = |n: u8| vec![Bytes::from(vec![n; 61]), Bytes::from(vec![n + 1; 300])];
        let topics = vec![
            TopicRecords {
                topic: crate::topic_name("orders"),
                partitions: vec![
                    PartitionRecords {
                        partition: 0,
                        records: batch(1),
                    },
                    PartitionRecords {
                        partition: 3,
                        records: batch(7),
                    },
                ],
            },
            TopicRecords {
                topic: crate::topic_name("a.b"),
                partitions: vec![PartitionRecords {
                    partition: 1,
                    records: batch(9),
                }],
            },
        ];
        for version in 3..=12 {
            for transactional_id in [None, Some("tx")] {
                let ours: Vec<u8> = encode_produce_request(version, transactional_id, -1, 30_000, &topics).concat();
                assert_eq!(
                    ours,
                    reference(version, transactional_id, &topics).to_vec(),
                    "Produce v{version}"
                );
            }
        }
    }

    #[test]
    fn answers_are_unwrapped_per_partition_with_leader_hints() {
        use kafka_protocol::messages::produce_response::{
            LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
        };
        use kafka_protocol::messages::BrokerId;
        let response = ProduceResponse::default()
            .with_responses(vec![TopicProduceResponse::default()
                .with_name(crate::topic_name("orders"))
                .with_partition_responses(vec![
                    PartitionProduceResponse::default().with_index(0).with_base_offset(42),
                    PartitionProduceResponse::default()
                        .with_index(1)
                        .with_error_code(6)
                        .with_base_offset(-1)
                        .with_current_leader(
                            LeaderIdAndEpoch::default()
                                .with_leader_id(BrokerId(3))
                                .with_leader_epoch(9),
                        ),
                    PartitionProduceResponse::default()
                        .with_index(2)
                        .with_error_code(87)
                        .with_error_message(Some(StrBytes::from_static_str("no key"))),
                ])])
            .with_node_endpoints(vec![NodeEndpoint::default()
                .with_node_id(BrokerId(3))
                .with_host(StrBytes::from_static_str("b3"))
                .with_port(9092)]);
        let (answers, brokers) = produced_partitions(response);
        assert_eq!(answers[0].result.as_ref().unwrap(), &42);
        let moved = answers[1].result.as_ref().unwrap_err();
        assert_eq!(moved.to_string(), "Produce orders-1: NOT_LEADER_OR_FOLLOWER (6)");
        assert!(moved.is_retriable());
        assert_eq!(
            answers[1].current_leader,
            Some(LeaderHint {
                leader_id: 3,
                leader_epoch: 9
            })
        );
        assert_eq!(
            answers[2].result.as_ref().unwrap_err().to_string(),
            "Produce orders-2: INVALID_RECORD (87): no key"
        );
        assert_eq!(answers[2].current_leader, None);
        assert_eq!(
            brokers,
            vec![Broker {
                id: 3,
                address: "b3:9092".into()
            }]
        );
        assert!(is_too_large(&Error::kafka(ResponseError::MessageTooLarge, "Produce")));
        assert!(is_sequence_error(&Error::kafka(
            ResponseError::OutOfOrderSequenceNumber,
            "Produce"
        )));
        assert!(!is_sequence_error(moved));
    }

    #[test]
    fn record_parts_are_not_copied() {
        let payload = Bytes::from(vec![5u8; 1000]);
        let topics = vec![TopicRecords {
            topic: crate::topic_name("t"),
            partitions: vec![PartitionRecords {
                partition: 0,
                records: vec![payload.clone()],
            }],
        }];
        let parts = encode_produce_request(9, None, -1, 1000, &topics);
        assert!(
            parts.iter().any(|p| p.as_ptr() == payload.as_ptr()),
            "the batch is passed through as the same buffer"
        );
    }
}
