//! Writes the small seed corpora the fuzz targets start from, into `fuzz/seeds/<target>/`:
//! batches built with `RecordBatchBuilder` in every codec, MirrorMaker 2's golden internal
//! records (`/work/shared/reference/mm2-compat.md` §2), encoded responses and mm2.properties
//! files. Deterministic, so rerunning it gives the same files.
//!
//! `cargo +nightly run --release --example write_seeds` (from `fuzz/`).

use std::fs;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use strait_client::kafka_protocol::messages::api_versions_response::ApiVersion;
use strait_client::kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use strait_client::kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use strait_client::kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use strait_client::kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, FetchResponse, MetadataResponse, ProduceResponse, ProducerId,
    ResponseHeader, TopicName,
};
use strait_client::kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
use strait_wire::{Checkpoint, Compression, Header, Heartbeat, OffsetSync, ProducerState, RecordBatchBuilder};

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds").join(target);
    fs::create_dir_all(&dir).expect("seed dir");
    fs::write(dir.join(name), bytes).expect("seed file");
}

/// Two small records with headers, a null key and a tombstone.
fn batch(codec: Compression, producer: ProducerState) -> Bytes {
    let mut builder = RecordBatchBuilder::new().compression(codec).producer(producer);
    builder.push(
        Some("k1".into()),
        Some("v1".into()),
        vec![Header {
            key: "h".into(),
            value: Some("1".into()),
        }],
        1_700_000_000_000,
    );
    builder.push(None, Some("v2".into()), vec![], 1_700_000_000_005);
    builder.push(Some("k3".into()), None, vec![], 1_700_000_000_001);
    builder.build()
}

/// `batch` as a broker stores it: at `base_offset`, with extra attribute bits, CRC recomputed.
fn stored(batch: &Bytes, base_offset: i64, attributes_or: i16) -> Bytes {
    let mut out = batch.to_vec();
    out[0..8].copy_from_slice(&base_offset.to_be_bytes());
    let attributes = i16::from_be_bytes([out[21], out[22]]) | attributes_or;
    out[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    out.into()
}

/// A transaction marker: control | transactional, key (version 0, type).
fn marker(base_offset: i64, producer_id: i64, control_type: i16) -> Bytes {
    let mut key = vec![0, 0];
    key.extend_from_slice(&control_type.to_be_bytes());
    let mut builder = RecordBatchBuilder::new().producer(ProducerState {
        producer_id,
        producer_epoch: 0,
        base_sequence: -1,
        transactional: false,
    });
    builder.push(
        Some(key.into()),
        Some(Bytes::from_static(&[0, 0, 0, 0, 0, 5])),
        vec![],
        1,
    );
    stored(&builder.build(), base_offset, 0x30)
}

fn wire_seeds() -> Vec<(String, Bytes)> {
    let txn = ProducerState {
        producer_id: 7,
        producer_epoch: 1,
        base_sequence: 0,
        transactional: false,
    };
    let mut seeds = Vec::new();
    for codec in CODECS {
        seeds.push((
            format!("batch-{codec}"),
            stored(&batch(codec, ProducerState::NONE), 100, 0),
        ));
    }
    seeds.push((
        "batch-log-append-time".into(),
        stored(&batch(Compression::None, ProducerState::NONE), 5, 0x08),
    ));
    // A compacted batch: the middle record removed, lastOffsetDelta still 2.
    let mut compacted = RecordBatchBuilder::new();
    compacted.push(Some("a".into()), Some("1".into()), vec![], 1);
    compacted.push(Some("c".into()), Some("3".into()), vec![], 3);
    let compacted = compacted.build().to_vec();
    let mut compacted = compacted;
    compacted[23..27].copy_from_slice(&2i32.to_be_bytes());
    seeds.push(("batch-compacted".into(), stored(&compacted.into(), 40, 0)));
    // An aborted transaction: data then the abort marker, then a committed one.
    let set = [
        stored(&batch(Compression::None, txn), 10, 0x10),
        marker(13, 7, 0),
        stored(&batch(Compression::Lz4, txn), 14, 0x10),
        marker(17, 7, 1),
    ]
    .concat();
    seeds.push(("set-transactions".into(), set.into()));
    let one = stored(&batch(Compression::Snappy, ProducerState::NONE), 0, 0);
    let partial = [&one[..], &one[..one.len() / 2]].concat();
    seeds.push(("set-partial-tail".into(), partial.into()));
    seeds
}

fn frame<T: Encodable + HeaderVersion>(response: &T, version: i16, correlation_id: i32) -> Bytes {
    let mut out = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, T::header_version(version))
        .expect("header encodes");
    response.encode(&mut out, version).expect("response encodes");
    out.freeze()
}

fn api_versions() -> ApiVersionsResponse {
    let range = |api: ApiKey, min, max| {
        ApiVersion::default()
            .with_api_key(api as i16)
            .with_min_version(min)
            .with_max_version(max)
    };
    ApiVersionsResponse::default().with_api_keys(vec![
        range(ApiKey::Produce, 3, 12),
        range(ApiKey::Fetch, 4, 17),
        range(ApiKey::Metadata, 0, 13),
        range(ApiKey::ApiVersions, 0, 4),
    ])
}

/// Selector byte of `client_decode_response`: API index in the low two bits, version above.
fn selector(index: u8, version: i16) -> u8 {
    let min = [ApiKey::Fetch, ApiKey::Produce, ApiKey::Metadata, ApiKey::ApiVersions][usize::from(index)]
        .valid_versions()
        .min;
    index | (((version - min) as u8) << 2)
}

fn client_seeds() -> Vec<(String, Vec<u8>)> {
    let records = [
        stored(
            &batch(
                Compression::None,
                ProducerState {
                    producer_id: 7,
                    producer_epoch: 0,
                    base_sequence: 0,
                    transactional: false,
                },
            ),
            10,
            0x10,
        ),
        marker(13, 7, 0),
    ]
    .concat();
    let fetch = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
        .with_topic(TopicName(StrBytes::from_static_str("orders")))
        .with_partitions(vec![PartitionData::default()
            .with_partition_index(0)
            .with_high_watermark(14)
            .with_last_stable_offset(14)
            .with_aborted_transactions(Some(vec![AbortedTransaction::default()
                .with_producer_id(ProducerId(7))
                .with_first_offset(10)]))
            .with_records(Some(records.into()))])]);
    let produce = ProduceResponse::default().with_responses(vec![TopicProduceResponse::default()
        .with_name(TopicName(StrBytes::from_static_str("orders")))
        .with_partition_responses(vec![PartitionProduceResponse::default()
            .with_index(0)
            .with_base_offset(42)])]);
    let metadata = MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("localhost"))
            .with_port(9092)])
        .with_controller_id(BrokerId(1))
        .with_topics(vec![MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("orders"))))
            .with_partitions(vec![MetadataResponsePartition::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(1))
                .with_replica_nodes(vec![BrokerId(1)])
                .with_isr_nodes(vec![BrokerId(1)])])]);
    let mut seeds = Vec::new();
    for version in [4, 11, 12] {
        seeds.push((
            format!("fetch-v{version}"),
            [&[selector(0, version)][..], &frame(&fetch, version, 5)].concat(),
        ));
    }
    for version in [3, 8, 9, 12] {
        seeds.push((
            format!("produce-v{version}"),
            [&[selector(1, version)][..], &frame(&produce, version, 5)].concat(),
        ));
    }
    for version in [0, 1, 9, 12, 13] {
        seeds.push((
            format!("metadata-v{version}"),
            [&[selector(2, version)][..], &frame(&metadata, version, 5)].concat(),
        ));
    }
    for version in [0, 3] {
        seeds.push((
            format!("api-versions-v{version}"),
            [&[selector(3, version)][..], &frame(&api_versions(), version, 5)].concat(),
        ));
    }
    seeds
}

/// What the fake broker of `client_connect` writes: size-prefixed frames for correlation ids 1, 2.
fn connect_seeds() -> Vec<(String, Vec<u8>)> {
    let sized = |frame: Bytes| [&(frame.len() as i32).to_be_bytes()[..], &frame].concat();
    let v3 = sized(frame(&api_versions(), 3, 1));
    let unsupported = api_versions().with_error_code(35);
    // KIP-511: an older broker answers v3 with error 35 in a v0 body, then the client retries at v0.
    let retry = [sized(frame(&unsupported, 0, 1)), sized(frame(&api_versions(), 0, 2))].concat();
    vec![("api-versions-v3".into(), v3), ("api-versions-retry-v0".into(), retry)]
}

fn mm2_seeds() -> Vec<(String, Vec<u8>)> {
    let with_key = |key: Bytes, value: Bytes| [&[key.len() as u8][..], &key, &value].concat();
    let sync = OffsetSync {
        topic: "topic-1".into(),
        partition: 2,
        upstream_offset: 3,
        downstream_offset: 4,
    };
    let checkpoint = Checkpoint {
        group: "group-1".into(),
        topic: "topic-2".into(),
        partition: 3,
        upstream_offset: 4,
        downstream_offset: 5,
        metadata: "metadata-6".into(),
    };
    let heartbeat = Heartbeat {
        source_cluster_alias: "source-1".into(),
        target_cluster_alias: "target-2".into(),
        timestamp: 1_234_567_890,
    };
    vec![
        ("offset-sync".into(), with_key(sync.key(), sync.value())),
        ("checkpoint".into(), with_key(checkpoint.key(), checkpoint.value())),
        ("heartbeat".into(), with_key(heartbeat.key(), heartbeat.value())),
    ]
}

const PROPERTIES: [(&str, &str); 4] = [
    (
        "shipped",
        "# Kafka's config/connect-mirror-maker.properties\nclusters = A, B\n\
         A.bootstrap.servers = A_host1:9092, A_host2:9092\nB.bootstrap.servers = B_host1:9092\n\
         A->B.enabled = true\nA->B.topics = .*\nB->A.enabled = true\nB->A.topics = .*\n\
         replication.factor=1\ncheckpoints.topic.replication.factor=1\nheartbeats.topic.replication.factor=1\n\
         offset-syncs.topic.replication.factor=1\noffset.storage.replication.factor=1\n",
    ),
    (
        "escapes",
        "! comment\nclusters : src,\\\n    dst\nsrc.bootstrap.servers=s\\u0031:9092\ndst.bootstrap.servers dst:9092\r\n\
         src->dst.enabled = true\nsrc->dst.topics = orders\\\\..*, pay(?=ments).*\n\
         src->dst.groups.exclude = console-consumer-.*\nreplication.policy.separator = __\n\
         src->dst.replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n\
         key\\ with\\=escapes = \\t\\uD83D\\uDE00\n",
    ),
    (
        "clients",
        "clusters = A, B, C\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nC.bootstrap.servers = c:9092\n\
         A.security.protocol = SASL_SSL\nA.sasl.mechanism = PLAIN\nA.sasl.jaas.config = secret\n\
         A.consumer.isolation.level = read_committed\nA->B.enabled = true\nA->C.enabled = true\n\
         A->B.sync.group.offsets.enabled = true\nA->B.emit.checkpoints.interval.seconds = 5\n\
         emit.heartbeats.enabled = false\noffset-syncs.topic.location = target\ntasks.max = 4\n\
         A->B.config.properties.exclude = follower\\\\.replication\\\\.throttled\\\\.replicas\n",
    ),
    ("bad", "clusters = A\nA.bootstrap.servers = nope\nA->A.enabled = maybe\nunknown.key = 1\nbad = \\u12\n"),
];

fn main() {
    for (name, bytes) in wire_seeds() {
        write("wire_batches", &name, &bytes);
        write("wire_batch_fixed", &name, &bytes);
    }
    for (name, bytes) in client_seeds() {
        write("client_decode_response", &name, &bytes);
    }
    for (name, bytes) in connect_seeds() {
        write("client_connect", &name, &bytes);
    }
    for (name, bytes) in mm2_seeds() {
        write("wire_mm2_records", &name, &bytes);
    }
    for (name, text) in PROPERTIES {
        write("config_parse", &format!("{name}.properties"), text.as_bytes());
    }
}
