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

/// A member of `group` of protocol type `strait`, with a static id if `instance` is set.
async fn member(group: &str, instance: Option<&str>) -> strait_client::GroupMembership {
    let config = strait_client::MemberConfig {
        group_id: group.into(),
        protocol_type: "strait".into(),
        group_instance_id: instance.map(Into::into),
        session_timeout: std::time::Duration::from_secs(10),
        rebalance_timeout: std::time::Duration::from_secs(10),
    };
    strait_client::GroupMembership::new(client(&clusters().target).await, config)
}

fn offer(metadata: &str) -> Vec<(String, Bytes)> {
    vec![("strait-v1".into(), Bytes::copy_from_slice(metadata.as_bytes()))]
}

fn is(error: &strait_client::Error, name: &str) -> bool {
    error.kafka_code().is_some_and(|code| code.name() == name)
}

/// Heartbeats of `membership` until the coordinator says a rebalance began.
async fn until_rebalance(membership: &mut strait_client::GroupMembership, generation: &strait_client::Generation) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match membership.heartbeat(generation).await {
            Err(error) if is(&error, "REBALANCE_IN_PROGRESS") => return,
            Ok(()) => assert!(std::time::Instant::now() < deadline, "no rebalance"),
            Err(error) => panic!("{error}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn members_join_sync_heartbeat_rebalance_and_leave_a_group_of_their_own_protocol() {
    let group = unique("strait-members");
    let (offer_a, offer_b) = (offer("from a"), offer("from b"));
    // The first member is a generation of its own, and leads it.
    let mut a = member(&group, None).await;
    let first = a.join("", &offer_a).await.unwrap();
    assert!(first.is_leader());
    assert_eq!(first.protocol_name, "strait-v1");
    assert_eq!(first.members.len(), 1);
    let own = Bytes::from_static(b"everything");
    let assigned = a.sync(&first, vec![(first.member_id.clone(), own.clone())]).await;
    assert_eq!(assigned.unwrap(), own);
    a.heartbeat(&first).await.unwrap();

    // A second (static) member joins: the first hears of the rebalance and joins again with its
    // id; both are in the next generation.
    let mut b = member(&group, Some("b-static")).await;
    let joining = tokio::spawn(async move {
        let generation = b.join("", &offer("from b")).await;
        (b, generation)
    });
    until_rebalance(&mut a, &first).await;
    let ga = a.join(&first.member_id, &offer_a).await.unwrap();
    let (mut b, gb) = joining.await.unwrap();
    let gb = gb.unwrap();
    assert_eq!(ga.member_id, first.member_id, "a member that joins again keeps its id");
    assert_eq!(
        (ga.generation_id, gb.generation_id),
        (first.generation_id + 1, first.generation_id + 1)
    );
    assert_ne!(ga.member_id, gb.member_id, "KIP-394 gave each its own id");
    assert!(ga.is_leader() != gb.is_leader(), "one leader");
    let (leader, follower) = if ga.is_leader() { (&ga, &gb) } else { (&gb, &ga) };
    let mut offered: Vec<String> = leader
        .members
        .iter()
        .map(|m| String::from_utf8_lossy(&m.metadata).into_owned())
        .collect();
    offered.sort();
    assert_eq!(offered, ["from a", "from b"], "the leader sees every member's metadata");
    assert!(follower.members.is_empty(), "only the leader gets the members");
    assert!(leader
        .members
        .iter()
        .any(|m| m.group_instance_id.as_deref() == Some("b-static")));
    // The leader assigns; each member gets its own.
    let assignments: Vec<(String, Bytes)> = leader
        .members
        .iter()
        .map(|m| (m.member_id.clone(), Bytes::from(format!("work of {}", m.member_id))))
        .collect();
    let (la, lb) = if ga.is_leader() {
        (assignments, Vec::new())
    } else {
        (Vec::new(), assignments)
    };
    let (sa, sb) = tokio::join!(a.sync(&ga, la), b.sync(&gb, lb));
    assert_eq!(sa.unwrap(), Bytes::from(format!("work of {}", ga.member_id)));
    assert_eq!(sb.unwrap(), Bytes::from(format!("work of {}", gb.member_id)));
    a.heartbeat(&ga).await.unwrap();
    b.heartbeat(&gb).await.unwrap();
    let described = client(&clusters().target).await.describe_group(&group).await.unwrap();
    assert_eq!((described.state.as_str(), described.members.len()), ("Stable", 2));

    // The static member restarts within the session timeout: it takes its place back without a
    // rebalance (KIP-345), with a new member id, and gets its assignment again; the old
    // process is fenced.
    let mut b2 = member(&group, Some("b-static")).await;
    let gb2 = b2.join("", &offer_b).await.unwrap();
    assert_eq!(gb2.generation_id, ga.generation_id, "no rebalance");
    assert_ne!(gb2.member_id, gb.member_id);
    assert_eq!(
        b2.sync(&gb2, Vec::new()).await.unwrap(),
        Bytes::from(format!("work of {}", gb.member_id))
    );
    a.heartbeat(&ga).await.unwrap();
    let fenced = b.heartbeat(&gb).await.unwrap_err();
    assert!(is(&fenced, "FENCED_INSTANCE_ID"), "the old process is fenced: {fenced}");

    // A member that leaves is out at once, and the others rebalance.
    a.leave(&ga.member_id).await.unwrap();
    until_rebalance(&mut b2, &gb2).await;
    let described = client(&clusters().target).await.describe_group(&group).await.unwrap();
    assert!(
        !described.members.iter().any(|m| m.member_id == ga.member_id),
        "{described:?}"
    );
}
