//! Network faults between the mirror and the target: cut connections and a slow link. Each test
//! counts records at source and target and reports lost (must be 0) and duplicated records.

use std::time::{Duration, Instant};

use strait_testkit::{ClusterOptions, KafkaCluster};
use strait_tests::fault::FaultProxy;
use strait_tests::*;

use crate::mirror::{check_numbered, write_numbered};

/// A target cluster that is reached only through a fault proxy: it advertises the proxy's port,
/// so every connection a client opens after bootstrap goes through the proxy too.
async fn proxied_target(name: &'static str) -> (KafkaCluster, FaultProxy, String) {
    let proxy = FaultProxy::start().await;
    let advertised = format!("PLAINTEXT://127.0.0.1:{}", proxy.port());
    let cluster = tokio::task::spawn_blocking(move || {
        KafkaCluster::start_with(ClusterOptions::new(name).property("advertised.listeners", &advertised)).unwrap()
    })
    .await
    .unwrap();
    proxy.set_upstream(cluster.bootstrap_servers().parse().unwrap());
    let bootstrap = format!("127.0.0.1:{}", proxy.port());
    (cluster, proxy, bootstrap)
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_cut_during_a_transfer_lose_nothing() {
    let clusters = clusters();
    let (_cluster, proxy, bootstrap) = proxied_target("cut-target").await;
    let source = client(&clusters.source).await;
    let topic = unique("cuts");
    let (partitions, batches, per_batch) = (4, 250, 200);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let total = (partitions as usize * batches * per_batch) as i64;

    let properties = mm2_properties(&topic, "").replace(&clusters.target.bootstrap_servers(), &bootstrap);
    let mirror = start_mirror(&properties);
    let target = strait_client::KafkaClient::connect(strait_client::ClientConfig::new(&bootstrap))
        .await
        .unwrap();
    let remote = format!("source.{topic}");
    // Cut during the transfer: from the first record on (a flow that cannot start at all stops
    // with an error, which is another test's business).
    wait_until("the first records on the target", || async {
        end_offsets(&target, &remote).await > 0
    })
    .await;
    let mut cuts = 0;
    let deadline = Instant::now() + WAIT * 2;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mirrored = end_offsets(&target, &remote).await;
        if mirrored >= total {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not caught up: {mirrored} of {total} after {cuts} cuts"
        );
        proxy.cut_connections();
        cuts += 1;
    }
    wait_until_complete(&target, &remote, total).await;
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, batches * per_batch).await;
    println!("connection cuts: {total} records, {cuts} cuts, 0 lost, {duplicates} duplicated");
    assert!(cuts >= 1, "the transfer must see cuts ({cuts})");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_link_still_mirrors_at_a_useful_rate() {
    let clusters = clusters();
    let (_cluster, proxy, bootstrap) = proxied_target("wan-target").await;
    proxy.set_latency(Duration::from_millis(100)); // 100 ms each way: a 200 ms round trip.
    let source = client(&clusters.source).await;
    let topic = unique("wan");
    let (partitions, batches, per_batch) = (4, 50, 500);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let total = (partitions as usize * batches * per_batch) as i64;

    let mirror = start_mirror(&mm2_properties(&topic, "").replace(&clusters.target.bootstrap_servers(), &bootstrap));
    let target = strait_client::KafkaClient::connect(strait_client::ClientConfig::new(&bootstrap))
        .await
        .unwrap();
    let remote = format!("source.{topic}");
    // Time the copy itself, from the first record on: start-up is a handful of round trips.
    wait_until("the first records across the slow link", || async {
        end_offsets(&target, &remote).await > 0
    })
    .await;
    let started = Instant::now();
    wait_until("all records across the slow link", || async {
        end_offsets(&target, &remote).await >= total
    })
    .await;
    let elapsed = started.elapsed();
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, batches * per_batch).await;
    let rate = total as f64 / elapsed.as_secs_f64();
    println!("200 ms RTT: {total} records ({partitions} partitions x {batches} batches) in {elapsed:.1?}, {rate:.0} records/s, {duplicates} duplicated");
    // One batch per round trip per partition would be 4 x 500 / 0.2 s = 10 000 records/s;
    // several batches in flight per partition must do better than that.
    assert!(rate > 10_000.0, "{rate:.0} records/s over a 200 ms round trip");
    assert_eq!(duplicates, 0, "a slow link alone causes no resends");
}
