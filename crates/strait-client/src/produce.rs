//! The Produce request, encoded by hand so that record batches are sent without being copied.
//!
//! kafka-protocol's encoder copies every record byte into its output buffer; here the small
//! envelope is encoded into buffers of its own and the batches are placed between them as
//! `Bytes` parts, ready for one vectored write. Layout per the Kafka protocol guide
//! (<https://kafka.apache.org/protocol#The_Messages_Produce>): v3–v8 classic, v9+ flexible.

use bytes::{BufMut, Bytes, BytesMut};

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
    pub topic: String,
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
        put_nullable_string(&mut envelope, Some(&topic.topic), flexible);
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
    use kafka_protocol::messages::{ProduceRequest, TopicName, TransactionalId};
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
                            .with_name(TopicName(StrBytes::from_string(t.topic.clone())))
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
                topic: "orders".into(),
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
                topic: "a.b".into(),
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
    fn record_parts_are_not_copied() {
        let payload = Bytes::from(vec![5u8; 1000]);
        let topics = vec![TopicRecords {
            topic: "t".into(),
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
