//! The Rust client against a real broker: topics, produce, fetch, and batches written by Kafka's
//! own Java producer in every codec.

use bytes::Bytes;
use strait_client::OffsetSpec;
use strait_tests::{client, clusters, create_topic, java_produce, now_ms, unique};
use strait_wire::{decode_records, Compression, Header, RecordBatch, RecordBatchBuilder, RecordBatches};

/// Reads every batch of `topic`/`partition` from the log start to the end.
async fn read_all(client: &strait_client::KafkaClient, topic: &str, partition: i32) -> Vec<RecordBatch> {
    let end = client
        .list_offsets(topic, &[partition], OffsetSpec::Latest)
        .await
        .unwrap()[&partition];
    let mut position = 0;
    let mut batches = Vec::new();
    while position < end {
        let fetched = client.fetch(topic, partition, position, 1 << 20, false).await.unwrap();
        for batch in RecordBatches::new(fetched.records) {
            let batch = batch.unwrap();
            batch.verify_crc().unwrap();
            position = batch.next_offset();
            batches.push(batch);
        }
    }
    batches
}

#[tokio::test(flavor = "multi_thread")]
async fn produces_and_fetches_batches_byte_for_byte() {
    let cluster = &clusters().source;
    let client = client(cluster).await;
    let topic = unique("client-roundtrip");
    create_topic(&client, &topic, 2).await;
    let metadata = client.metadata(Some(&[&topic])).await.unwrap();
    assert_eq!(metadata.topics[&topic].partitions.len(), 2);

    let mut offsets = Vec::new();
    let mut sent = Vec::new();
    for (i, codec) in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ]
    .into_iter()
    .enumerate()
    {
        let mut builder = RecordBatchBuilder::new().compression(codec);
        for j in 0..3 {
            let header = Header {
                key: Bytes::from("trace"),
                value: Some(Bytes::from(format!("{i}-{j}"))),
            };
            builder.push(
                Some(Bytes::from(format!("key-{i}-{j}"))),
                Some(Bytes::from(vec![i as u8; 100 + j])),
                vec![header],
                now_ms() + j as i64,
            );
        }
        let batch = builder.build();
        // Split the batch in two parts, as the mirror sends header and payload.
        offsets.push(
            client
                .produce(&topic, 1, vec![batch.slice(..61), batch.slice(61..)])
                .await
                .unwrap(),
        );
        sent.push(batch);
    }
    assert_eq!(
        offsets,
        vec![0, 3, 6, 9, 12],
        "each batch of 3 records got consecutive offsets"
    );

    let fetched = read_all(&client, &topic, 1).await;
    assert_eq!(fetched.len(), 5);
    for (got, sent) in fetched.iter().zip(&sent) {
        // The broker sets base offset and leader epoch; every byte from the CRC on is ours.
        assert_eq!(&got.as_bytes()[16..], &sent[16..]);
        let records = decode_records(got).unwrap();
        assert_eq!(
            records,
            decode_records(&RecordBatch::new(sent.clone()).unwrap()).unwrap()
        );
    }
    assert!(read_all(&client, &topic, 0).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_batches_the_java_producer_wrote_in_every_codec() {
    let cluster = &clusters().source;
    let client = client(cluster).await;
    for (codec, name) in [
        (Compression::None, "none"),
        (Compression::Gzip, "gzip"),
        (Compression::Snappy, "snappy"),
        (Compression::Lz4, "lz4"),
        (Compression::Zstd, "zstd"),
    ] {
        let topic = unique(&format!("java-{name}"));
        create_topic(&client, &topic, 1).await;
        let bootstrap = cluster.bootstrap_servers();
        let producer_topic = topic.clone();
        tokio::task::spawn_blocking(move || java_produce(&bootstrap, &producer_topic, 2_000, 200, name))
            .await
            .unwrap();

        let batches = read_all(&client, &topic, 0).await;
        assert!(!batches.is_empty());
        let mut records = 0;
        for batch in &batches {
            assert_eq!(
                batch.compression().unwrap(),
                codec,
                "{name}: the batch codec is the producer's"
            );
            assert!(
                batch.producer_id() >= 0,
                "{name}: Kafka 4 producers are idempotent by default"
            );
            let decoded = decode_records(batch).unwrap();
            assert_eq!(decoded.len() as i32, batch.records_count());
            assert!(
                decoded.iter().all(|r| r.value.as_ref().map(Bytes::len) == Some(200)),
                "{name}: 200-byte values"
            );
            records += decoded.len();
        }
        assert_eq!(records, 2_000, "{name}: every record read back");
    }
}
