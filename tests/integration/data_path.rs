//! The per-broker data path at scale and under pressure: thousands of partitions over one
//! connection per broker and role (counted by the operating system) with incremental fetch
//! sessions, a byte budget that holds under a slow target, a target partition that refuses
//! every write while the others go on, and data path keys checked at start.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::time::Duration;

use strait_client::{AlterConfigOp, KafkaClient, NewTopic, OffsetSpec};
use strait_testkit::{tcp_connections, KafkaCluster};
use strait_tests::*;

use crate::faults::proxied_cluster;
use crate::mirror::{check_numbered, write_numbered};

/// The end offset of every partition of `topic`.
async fn ends(client: &KafkaClient, topic: &str, partitions: i32) -> BTreeMap<i32, i64> {
    let all: Vec<i32> = (0..partitions).collect();
    client.list_offsets(topic, &all, OffsetSpec::Latest).await.unwrap()
}

/// The port of a `host:port` address.
fn port_of(address: &str) -> u16 {
    address.rsplit_once(':').unwrap().1.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_thousand_partitions_go_over_a_connection_or_two_per_broker_and_role() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let (topics, partitions, per_partition) = (4, 500, 10);
    let prefix = unique("wide");
    let names: Vec<String> = (0..topics).map(|t| format!("{prefix}-{t}")).collect();
    source
        .create_topics(
            &names
                .iter()
                .map(|name| NewTopic {
                    name: name.clone(),
                    partitions,
                    replication_factor: 1,
                    configs: vec![],
                })
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    let writers: Vec<_> = names
        .iter()
        .map(|name| {
            let (source, name) = (source.clone(), name.clone());
            tokio::spawn(async move {
                source.wait_for_leaders(&name, WAIT).await.unwrap();
                write_numbered(&source, &name, partitions, 1, per_partition).await;
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }

    let port = free_port();
    let config = std::env::temp_dir().join(format!("{prefix}.properties"));
    let extra = format!("strait.http.listener = 127.0.0.1:{port}\n");
    std::fs::write(&config, mm2_properties(&format!("{prefix}-.*"), &extra)).unwrap();
    let mirror = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
    let pid = mirror.0.id();
    let (source_port, target_port) = (
        port_of(&clusters.source.bootstrap_servers()),
        port_of(&clusters.target.bootstrap_servers()),
    );
    // The most connections the mirror held to each broker while it worked, as the OS counts them.
    let mut most = (0, 0);
    let total = (topics * partitions as usize * per_partition) as i64;
    wait_until("2 000 partitions mirrored", || {
        let connections = tcp_connections(pid).unwrap_or_default();
        most.0 = most.0.max(connections.get(&source_port).copied().unwrap_or(0));
        most.1 = most.1.max(connections.get(&target_port).copied().unwrap_or(0));
        let (target, names) = (target.clone(), names.clone());
        async move {
            let mut mirrored = 0;
            for name in &names {
                mirrored += end_offsets(&target, &format!("source.{name}")).await;
            }
            mirrored >= total
        }
    })
    .await;
    for name in &names {
        let remote = format!("source.{name}");
        assert_eq!(
            ends(&target, &remote, partitions).await,
            ends(&source, name, partitions).await,
            "every partition of {remote} holds exactly its source's records"
        );
    }
    check_numbered(&target, &format!("source.{}", names[0]), 5, per_partition).await;

    let metrics = scrape(port).await;
    let count = |name: &str, labels: &[&str]| metric(&metrics, name, labels).unwrap_or(-1.0);
    let fetch = count("strait_connections", &["cluster=\"source\"", "role=\"fetch\""]);
    let produce = count("strait_connections", &["cluster=\"target\"", "role=\"produce\""]);
    println!(
        "2 000 partitions: at most {} connections to the source broker and {} to the target (fetch {fetch}, produce {produce})",
        most.0, most.1
    );
    assert_eq!(
        (fetch, produce),
        (1.0, 2.0),
        "one fetch connection and strait.producers.per.broker (2) produce connections"
    );
    // Besides fetch and produce, each cluster has a few connections for metadata, offsets and
    // internal topics, of this flow and of the heartbeat-only flow back, and the group's: its
    // coordinator on each cluster (one group per target cluster) and the leader's look at the
    // source's topics. None of them grows with the partitions.
    assert!(
        most.0 <= 10 && most.1 <= 8,
        "the OS counts {most:?} connections (fetch or produce, and a few for metadata and offsets)"
    );
    // The session goes on with incremental fetches (every fetch.max.wait.ms while idle); the
    // 2 000 partitions are sent in full once, twice if the session had to start over.
    let kind = |metrics: &str, kind: &str| {
        metric(metrics, "strait_fetch_requests_total", &[&format!("kind=\"{kind}\"")]).unwrap_or(-1.0)
    };
    wait_until("five incremental fetches", || async {
        kind(&scrape(port).await, "incremental") >= 5.0
    })
    .await;
    let metrics = scrape(port).await;
    let (full, incremental) = (kind(&metrics, "full"), kind(&metrics, "incremental"));
    println!("fetches: {full} full, {incremental} incremental");
    assert!(
        (1.0..=2.0).contains(&full),
        "fetches after the first are incremental: {full} full, {incremental} incremental"
    );
    assert!(mirror.terminate(), "a clean stop");
    let _ = std::fs::remove_file(&config);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_budget_under_a_slow_target_holds_fetched_bytes_within_it_and_loses_nothing() {
    let clusters = clusters();
    let (_slow_target, proxy, bootstrap) = proxied_cluster("budget-target").await;
    let source = client(&clusters.source).await;
    let target = KafkaClient::connect(strait_client::ClientConfig::new(&bootstrap))
        .await
        .unwrap();
    let topic = unique("budget");
    let (partitions, batches, per_batch) = (4, 60, 50);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let largest_batch = read_batches(&source, &topic, 0)
        .await
        .iter()
        .map(|b| b.size())
        .max()
        .unwrap();
    let budget = 1 << 20;
    let written = end_offsets(&source, &topic).await;
    // Produce requests reach the target 30 ms later and their answers as late: the target, not
    // the source, sets the pace, and fetched batches wait.
    proxy.set_latency(Duration::from_millis(30));
    // Every connection to the target goes through the proxy: bootstrap there, and the broker
    // it names (itself) is reached through the bootstrap address's port as well.
    let properties = mm2_properties(
        &topic,
        &format!("strait.buffer.memory = {budget}\nsource.consumer.max.partition.fetch.bytes = 262144\n"),
    )
    .replace(
        &format!("target.bootstrap.servers = {}", clusters.target.bootstrap_servers()),
        &format!("target.bootstrap.servers = 127.0.0.1:{}", proxy.port()),
    );
    let (mirror, process) = start_mirror_in_process(&properties);
    let remote = format!("source.{topic}");
    wait_until_complete(&target, &remote, written).await;
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, batches * per_batch).await;
    let high_water = process.budget.high_water();
    let slack = partitions as usize * largest_batch;
    println!(
        "budget {budget}: at most {high_water} bytes held (slack {slack}), {written} records, 0 lost, {duplicates} duplicated"
    );
    assert!(
        high_water <= budget + slack,
        "{high_water} bytes held, over the budget of {budget} and one batch per partition ({slack})"
    );
    assert!(
        high_water * 2 >= budget,
        "the budget must have been the limit (at most {high_water} of {budget} bytes held)"
    );
    assert_eq!(duplicates, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_partition_that_refuses_every_write_does_not_stop_the_others() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let (stuck, flowing) = (unique("stuck"), unique("flowing"));
    create_topic(&source, &stuck, 1).await;
    create_topic(&source, &flowing, 4).await;
    write_numbered(&source, &stuck, 1, 40, 50).await;
    write_numbered(&source, &flowing, 4, 100, 50).await;
    // A target of two brokers. The stuck topic's remote partition has a replica on each and
    // needs both in sync; with the second broker stopped, every acks=all write to it gets
    // NOT_ENOUGH_REPLICAS for as long as that lasts. The flowing topic's remote partitions,
    // created afterwards, live on the first broker alone.
    let (own_target, second) = tokio::task::spawn_blocking(|| {
        let cluster = KafkaCluster::start("stuck-target").unwrap();
        let second = cluster.add_broker(2).unwrap();
        (cluster, second)
    })
    .await
    .unwrap();
    let target = client(&own_target).await;
    wait_until("both target brokers registered", || async {
        target.metadata(Some(&[])).await.is_ok_and(|m| m.brokers.len() == 2)
    })
    .await;
    let remote_stuck = format!("source.{stuck}");
    target
        .create_topics(&[NewTopic {
            name: remote_stuck.clone(),
            partitions: 1,
            replication_factor: 2,
            configs: vec![("min.insync.replicas".into(), "2".into())],
        }])
        .await
        .unwrap();
    target.wait_for_leaders(&remote_stuck, WAIT).await.unwrap();
    let second = tokio::task::spawn_blocking(move || {
        second.stop();
        second
    })
    .await
    .unwrap();
    // A budget a few fetches deep: were the stuck partition's batches to hold the responses they
    // came in, the others would run out of room.
    let properties = mm2_properties(
        &format!("{stuck}, {flowing}"),
        "strait.buffer.memory = 2097152\n\
         source.consumer.max.partition.fetch.bytes = 131072\n\
         target.producer.request.timeout.ms = 2000\n\
         target.producer.delivery.timeout.ms = 4000\n",
    )
    .replace(&clusters.target.bootstrap_servers(), &own_target.bootstrap_servers());
    let mirror = start_mirror(&properties);
    let remote_flowing = format!("source.{flowing}");
    wait_until_complete(&target, &remote_flowing, 4 * 100 * 50).await;
    assert_eq!(check_numbered(&target, &remote_flowing, 4, 100 * 50).await, 0);
    let stuck_status = || {
        mirror.stats().status()["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["topic"] == stuck.as_str())
            .cloned()
            .unwrap_or_default()
    };
    wait_until("the stuck partition reported past delivery.timeout.ms", || async {
        stuck_status()["state"] == "failing"
    })
    .await;
    let status = stuck_status();
    let error = status["last_error"].as_str().unwrap_or_default().to_owned();
    assert!(
        error.contains("NOT_ENOUGH_REPLICAS") && error.contains("delivery.timeout.ms"),
        "{status}"
    );
    assert!(!mirror.stats().is_healthy(), "/health says so");
    assert_eq!(end_offsets(&target, &remote_stuck).await, 0);

    // The target takes writes again: the partition catches up, in order, with nothing lost.
    target
        .alter_topic_configs(&remote_stuck, &[AlterConfigOp::Delete("min.insync.replicas".into())])
        .await
        .unwrap();
    wait_until_complete(&target, &remote_stuck, 40 * 50).await;
    let duplicates = check_numbered(&target, &remote_stuck, 1, 40 * 50).await;
    wait_until("the partition running again", || async {
        stuck_status()["state"] == "running"
    })
    .await;
    assert!(mirror.stats().is_healthy());
    mirror.stop().await.unwrap();
    println!("stuck partition: {error}; after the fix 2000 records, 0 lost, {duplicates} duplicated");
    drop(second);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_data_path_values_are_refused_at_start_naming_the_key() {
    let cases = [
        (
            "source.consumer.fetch.max.bytes = -1",
            "source.consumer.fetch.max.bytes",
        ),
        ("target.producer.acks = 0", "target.producer.acks"),
        ("strait.buffer.memory = 1000", "strait.buffer.memory"),
    ];
    for (line, key) in cases {
        let config = std::env::temp_dir().join(format!("{}.properties", unique("bad-data-path")));
        std::fs::write(&config, mm2_properties("anything", line)).unwrap();
        let output = std::process::Command::new(strait_binary())
            .arg("run")
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{line}: {stderr}");
        assert!(stderr.contains(key), "{line}: {stderr}");
        let _ = std::fs::remove_file(&config);
    }
}
