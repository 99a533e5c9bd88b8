//! Faults between the mirror and its clusters: cut connections, a slow link, a target stopped
//! for 30 s, damaged bytes, data deleted before it was mirrored, and batches the target finds
//! too large. Each test counts records at source and target and reports lost (must be 0, or
//! exactly what the source deleted) and duplicated records.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use strait_testkit::{ClusterOptions, FaultProxy, KafkaCluster};
use strait_tests::*;
use strait_wire::RecordBatchBuilder;

use crate::mirror::{check_numbered, write_numbered, write_numbered_from};

/// A cluster that is reached only through a fault proxy: it advertises the proxy's port, so
/// every connection a client opens after bootstrap goes through the proxy too.
pub(crate) async fn proxied_cluster(name: &'static str) -> (KafkaCluster, FaultProxy, String) {
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

/// Numbered data to mirror to a target reached only through a fault proxy.
struct ProxiedTransfer {
    _cluster: KafkaCluster,
    proxy: FaultProxy,
    source: strait_client::KafkaClient,
    topic: String,
    /// `source.<topic>`, on the target.
    remote: String,
    /// An `mm2.properties` of the flow `source->target`, with the target through the proxy.
    properties: String,
    /// A client of the target, through the proxy.
    target: strait_client::KafkaClient,
    /// The records written.
    total: i64,
}

/// Starts a proxied target cluster `name` and writes `partitions` × `batches` × `per_batch`
/// numbered records to a new source topic named after `prefix`; `extra` goes into the
/// properties. Starting the mirror is the test's, so that it can set up the proxy first.
async fn proxied_transfer(
    name: &'static str,
    prefix: &str,
    (partitions, batches, per_batch): (i32, usize, usize),
    extra: &str,
) -> ProxiedTransfer {
    let clusters = clusters();
    let (cluster, proxy, bootstrap) = proxied_cluster(name).await;
    let source = client(&clusters.source).await;
    let topic = unique(prefix);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let properties = mm2_properties(&topic, extra).replace(&clusters.target.bootstrap_servers(), &bootstrap);
    // A broker that has just started may answer ApiVersions without the APIs it serves once
    // ready (seen once in CI: Metadata missing); ask again until it answers in full.
    let deadline = Instant::now() + WAIT;
    let target = loop {
        match strait_client::KafkaClient::connect(strait_client::ClientConfig::new(&bootstrap)).await {
            Ok(target) => break target,
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "the proxied target never answered in full: {error}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    ProxiedTransfer {
        _cluster: cluster,
        proxy,
        source,
        remote: format!("source.{topic}"),
        topic,
        properties,
        target,
        total: (partitions as usize * batches * per_batch) as i64,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_cut_during_a_transfer_lose_nothing() {
    connections_cut(BYTE_PATHS[0]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_cut_during_a_transfer_lose_nothing_over_io_uring() {
    connections_cut(BYTE_PATHS[1]).await;
}

async fn connections_cut(io: &str) {
    let (partitions, batches, per_batch) = (4, 250, 200);
    let t = proxied_transfer("cut-target", "cuts", (partitions, batches, per_batch), io).await;
    let (proxy, target, remote, total) = (&t.proxy, &t.target, &t.remote, t.total);
    let mirror = start_mirror(&t.properties);
    // Cut during the transfer: from the first record on (a flow that cannot start waits for its
    // clusters, which is another test's business).
    wait_until("the first records on the target", || async {
        end_offsets(target, remote).await > 0
    })
    .await;
    let mut cuts = 0;
    let deadline = Instant::now() + WAIT * 2;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mirrored = end_offsets(target, remote).await;
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
    wait_until_complete(target, remote, total).await;
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(target, remote, partitions, batches * per_batch).await;
    println!("connection cuts ({io}): {total} records, {cuts} cuts, 0 lost, {duplicates} duplicated");
    assert!(cuts >= 1, "the transfer must see cuts ({cuts})");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_link_still_mirrors_at_a_useful_rate() {
    slow_link(BYTE_PATHS[0]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_link_still_mirrors_at_a_useful_rate_over_io_uring() {
    slow_link(BYTE_PATHS[1]).await;
}

async fn slow_link(io: &str) {
    let (partitions, batches, per_batch) = (4, 50, 500);
    let t = proxied_transfer("wan-target", "wan", (partitions, batches, per_batch), io).await;
    let (target, remote, total) = (&t.target, &t.remote, t.total);
    t.proxy.set_latency(Duration::from_millis(100)); // 100 ms each way: a 200 ms round trip.
    let mirror = start_mirror(&t.properties);
    // Time the copy itself, from the first record on: start-up is a handful of round trips.
    wait_until("the first records across the slow link", || async {
        end_offsets(target, remote).await > 0
    })
    .await;
    let started = Instant::now();
    wait_until("all records across the slow link", || async {
        end_offsets(target, remote).await >= total
    })
    .await;
    let elapsed = started.elapsed();
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(target, remote, partitions, batches * per_batch).await;
    let rate = total as f64 / elapsed.as_secs_f64();
    println!("200 ms RTT ({io}): {total} records ({partitions} partitions x {batches} batches) in {elapsed:.1?}, {rate:.0} records/s, {duplicates} duplicated");
    // One batch per round trip per partition would be 4 x 500 / 0.2 s = 10 000 records/s;
    // several batches in flight per partition must do better than that.
    assert!(rate > 10_000.0, "{rate:.0} records/s over a 200 ms round trip");
    assert_eq!(duplicates, 0, "a slow link alone causes no resends");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_stopped_for_30_seconds_loses_nothing() {
    let clusters = clusters();
    let own_target = tokio::task::spawn_blocking(|| KafkaCluster::start("stopped-target").unwrap())
        .await
        .unwrap();
    let source = client(&clusters.source).await;
    let topic = unique("outage");
    let (partitions, per_batch) = (2, 200);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, 20, per_batch).await;
    let properties =
        mm2_properties(&topic, "").replace(&clusters.target.bootstrap_servers(), &own_target.bootstrap_servers());
    let mirror = start_mirror(&properties);
    let target = client(&own_target).await;
    let remote = format!("source.{topic}");
    wait_until_complete(&target, &remote, 20 * per_batch as i64 * partitions as i64).await;

    // The source keeps receiving data while the target is down for 30 s.
    let writer = tokio::spawn({
        let (source, topic) = (source.clone(), topic.clone());
        async move {
            for round in 0..40 {
                write_numbered_from(&source, &topic, partitions, 20 + round, 1, per_batch).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    });
    let own_target = tokio::task::spawn_blocking(move || {
        own_target.stop_broker(); // A clean stop (SIGTERM), as for maintenance.
        std::thread::sleep(Duration::from_secs(30));
        own_target.start_broker().unwrap();
        own_target
    })
    .await
    .unwrap();
    writer.await.unwrap();
    let total = (60 * per_batch) as i64 * partitions as i64;
    let target = client(&own_target).await;
    wait_until_complete(&target, &remote, total).await;
    assert!(!mirror.is_finished(), "the flow rides out the outage");
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, 60 * per_batch).await;
    println!("target stopped 30 s: {total} records, 0 lost, {duplicates} duplicated");
    // Only batches in flight when the target went away can land twice.
    assert!(
        duplicates <= 5 * per_batch * partitions as usize,
        "{duplicates} duplicates"
    );
}

/// Partition 0 of `topic` in the flow's `/status` (the flow also mirrors `heartbeats`, when the
/// source has one).
fn partition_status(mirror: &strait_mirror::FlowHandle, topic: &str) -> serde_json::Value {
    let status = mirror.stats().status();
    status["partitions"]
        .as_array()
        .and_then(|partitions| partitions.iter().find(|p| p["topic"] == topic && p["partition"] == 0))
        .cloned()
        .unwrap_or_default()
}

/// Writes `batches` batches of 50 records `<tag>-<n>` to partition 0; the last record of batch
/// `marked` is `marker` instead. Returns the values in order.
async fn write_marked(
    client: &strait_client::KafkaClient,
    topic: &str,
    tag: &str,
    batches: usize,
    marked: usize,
    marker: &str,
) -> Vec<String> {
    let mut values = Vec::new();
    for b in 0..batches {
        let mut builder = strait_wire::RecordBatchBuilder::new();
        for r in 0..50 {
            let value = if b == marked && r == 49 {
                marker.to_owned()
            } else {
                format!("{tag}-{}", b * 50 + r)
            };
            builder.push(None, Some(value.clone().into()), vec![], now_ms());
            values.push(value);
        }
        client.produce(topic, 0, vec![builder.build()]).await.unwrap();
    }
    values
}

async fn values(client: &strait_client::KafkaClient, topic: &str) -> Vec<String> {
    read_records(client, topic, 0)
        .await
        .into_iter()
        .map(|(_, value, _, _)| String::from_utf8(value.unwrap().to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_batches_are_fetched_again_and_stop_their_partition_if_they_stay_damaged() {
    let clusters = clusters();
    let (_cluster, proxy, bootstrap) = proxied_cluster("damaged-source").await;
    let source = strait_client::KafkaClient::connect(strait_client::ClientConfig::new(&bootstrap))
        .await
        .unwrap();
    let target = client(&clusters.target).await;
    let (once, always, header) = (
        unique("damaged-once"),
        unique("damaged-always"),
        unique("damaged-header"),
    );
    for topic in [&once, &always, &header] {
        create_topic(&source, topic, 1).await;
    }
    let once_values = write_marked(&source, &once, "once", 20, 10, "DAMAGE-ME-1").await;
    let always_values = write_marked(&source, &always, "always", 20, 10, "DAMAGE-ME-2").await;
    // Batches at 0, 3, 53, 103, …: the base offset 503 is this topic's alone.
    let mut header_values: Vec<String> = (0..3).map(|i| format!("header-{i}")).collect();
    let mut first = strait_wire::RecordBatchBuilder::new();
    for value in &header_values {
        first.push(None, Some(value.clone().into()), vec![], now_ms());
    }
    source.produce(&header, 0, vec![first.build()]).await.unwrap();
    header_values.extend(write_marked(&source, &header, "header-rest", 19, usize::MAX, "").await);
    // On the way from the source: one response is damaged once (a flipped bit on a link), the
    // other every time (a batch damaged in the source's log). A third has a base offset damaged
    // once, which the CRC does not cover: read as it says, the batch would lie before the
    // position and look mirrored already.
    proxy.corrupt_responses(b"DAMAGE-ME-1", b"DAMAGE-XX-1", 1);
    proxy.corrupt_responses(b"DAMAGE-ME-2", b"DAMAGE-XX-2", u32::MAX);
    proxy.corrupt_responses(&503i64.to_be_bytes(), &3i64.to_be_bytes(), 1);

    let properties = mm2_properties(&format!("{once}, {always}, {header}"), "")
        .replace(&clusters.source.bootstrap_servers(), &bootstrap);
    let mirror = start_mirror(&properties);
    let (remote_once, remote_always) = (format!("source.{once}"), format!("source.{always}"));
    wait_until_complete(&target, &remote_once, 1000).await;
    let remote_header = format!("source.{header}");
    wait_until_complete(&target, &remote_header, 953).await;
    let stopped = || {
        let status = mirror.stats().status();
        status["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["topic"] == always.as_str())
            .filter(|p| p["state"] == "stopped")
            .map(|p| p["last_error"].as_str().unwrap_or_default().to_owned())
    };
    wait_until("the partition with the damaged batch to stop", || async {
        stopped().is_some()
    })
    .await;
    let error = stopped().unwrap();
    assert!(
        error.contains("offset 500 is corrupt") && error.contains("CRC"),
        "{error}"
    );

    // The batch damaged once arrived intact; of the other topic, everything before the damaged
    // batch and nothing from it on.
    assert_eq!(values(&target, &remote_once).await, once_values);
    assert_eq!(values(&target, &remote_always).await, always_values[..500]);
    assert_eq!(values(&target, &remote_header).await, header_values);
    let mut metrics = strait_mirror::PrometheusText::default();
    mirror.stats().write_prometheus(&mut metrics);
    let metrics = metrics.finish();
    let corrupt = metrics
        .lines()
        .find(|l| l.starts_with("strait_errors_total{") && l.contains("code=\"CORRUPT_MESSAGE\""))
        .unwrap_or_else(|| panic!("no CORRUPT_MESSAGE count in\n{metrics}"));
    // Once for the link, the first try and 3 fetches again for the damaged log, once for the
    // damaged base offset.
    assert!(corrupt.ends_with(" 6"), "{corrupt}");
    let stop = mirror.stop().await.unwrap_err().to_string();
    assert!(stop.contains(&always) && stop.contains("CRC"), "{stop}");
    println!("damaged batches: 1000 records of {once} intact, 500 of {always} then stopped: {stop}");
}

#[tokio::test(flavor = "multi_thread")]
async fn records_deleted_at_the_source_before_they_were_mirrored_are_reported_as_a_gap() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("gap");
    create_topic(&source, &topic, 1).await;
    write_numbered(&source, &topic, 1, 10, 100).await;
    let properties = mm2_properties(&topic, "");
    let remote = format!("source.{topic}");
    let mirror = start_mirror(&properties);
    wait_until_complete(&target, &remote, 1000).await;
    mirror.stop().await.unwrap();
    // While the mirror is down, 1000 more arrive and retention (here DeleteRecords) removes
    // everything below offset 1500: offsets 1000..=1499 were never mirrored.
    write_numbered_from(&source, &topic, 1, 10, 10, 100).await;
    let output = delete_records_below(&clusters.source.bootstrap_servers(), &topic, 1500).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    let mirror = start_mirror(&properties);
    wait_until_complete(&target, &remote, 1500).await;
    assert_eq!(mirror.stats().gap_records(), 500);
    assert_eq!(partition_status(&mirror, &topic)["gap_records"], 500);
    mirror.stop().await.unwrap();
    let numbers: Vec<usize> = values(&target, &remote)
        .await
        .iter()
        .map(|v| v.split('-').nth(1).unwrap().parse().unwrap())
        .collect();
    let expected: Vec<usize> = (0..1000).chain(1500..2000).collect();
    assert_eq!(numbers, expected, "exactly the deleted offsets are missing");
    println!("gap: 2000 records, 500 deleted before mirroring and reported, 0 otherwise lost");
}

#[tokio::test(flavor = "multi_thread")]
async fn batches_too_large_for_the_target_are_split_and_a_single_record_stops_the_partition() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("too-large");
    let remote = format!("source.{topic}");
    create_topic(&source, &topic, 1).await;
    // The target topic exists already, with a limit far below the source's batches.
    target
        .create_topics(&[strait_client::NewTopic {
            name: remote.clone(),
            partitions: 1,
            replication_factor: 1,
            configs: vec![("max.message.bytes".into(), "8192".into())],
        }])
        .await
        .unwrap();
    // 2 batches of 200 records of ~230 bytes: ~46 KB each, uncompressed.
    write_numbered(&source, &topic, 1, 2, 200).await;
    // Then one record that no split can make fit.
    let mut builder = strait_wire::RecordBatchBuilder::new();
    builder.push(None, Some("y".repeat(10_000).into()), vec![], now_ms());
    source.produce(&topic, 0, vec![builder.build()]).await.unwrap();

    let mirror = start_mirror(&mm2_properties(&topic, "sync.topic.configs.enabled = false"));
    let stopped = || {
        partition_status(&mirror, &topic)["last_error"]
            .as_str()
            .map(str::to_owned)
    };
    wait_until("the partition to stop at the oversize record", || async {
        stopped().is_some()
    })
    .await;
    let error = stopped().unwrap();
    assert!(
        error.contains("MESSAGE_TOO_LARGE") && error.contains("400..=400"),
        "{error}"
    );
    // Every record before it arrived, in order, in batches the target accepts.
    assert_eq!(check_numbered(&target, &remote, 1, 400).await, 0);
    let batches = read_batches(&target, &remote, 0).await;
    assert!(batches.len() >= 2 * 8, "{} batches", batches.len());
    assert!(batches.iter().all(|b| b.size() <= 8192));
    assert!(mirror.stop().await.is_err());
    println!(
        "too large: 10 batches of 46 KB arrived as {} batches under 4 KiB; the 10 KB record stopped the partition",
        batches.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_leader_change_loses_nothing() {
    let clusters = clusters();
    // A source of two brokers, every partition with a replica on each: stopping the second
    // broker (a controlled shutdown) moves its partitions' leadership to the first.
    let (own_source, second) = tokio::task::spawn_blocking(|| {
        let cluster = KafkaCluster::start("leader-source").unwrap();
        let second = cluster.add_broker(2).unwrap();
        (cluster, second)
    })
    .await
    .unwrap();
    let source = client(&own_source).await;
    wait_until("both source brokers registered", || async {
        source.metadata(Some(&[])).await.is_ok_and(|m| m.brokers.len() == 2)
    })
    .await;
    let topic = unique("leaders");
    let (partitions, per_batch) = (4, 200);
    source
        .create_topics(&[strait_client::NewTopic {
            name: topic.clone(),
            partitions,
            replication_factor: 2,
            configs: vec![("min.insync.replicas".into(), "1".into())],
        }])
        .await
        .unwrap();
    source.wait_for_leaders(&topic, WAIT).await.unwrap();
    let leaders = || async {
        let metadata = source.metadata(Some(&[topic.as_str()])).await.unwrap();
        metadata.topics[&topic]
            .partitions
            .iter()
            .map(|p| p.leader)
            .collect::<Vec<_>>()
    };
    let before = leaders().await;
    assert!(
        before.contains(&2),
        "some partition must be led by broker 2: {before:?}"
    );
    write_numbered(&source, &topic, partitions, 10, per_batch).await;

    let properties =
        mm2_properties(&topic, "").replace(&clusters.source.bootstrap_servers(), &own_source.bootstrap_servers());
    let mirror = start_mirror(&properties);
    let target = client(&clusters.target).await;
    let remote = format!("source.{topic}");
    wait_until("part of the data on the target", || async {
        end_offsets(&target, &remote).await > 0
    })
    .await;
    // Data keeps arriving while the leaders move.
    let writer = tokio::spawn({
        let (source, topic) = (source.clone(), topic.clone());
        async move {
            for round in 0..20 {
                write_numbered_from(&source, &topic, partitions, 10 + round, 1, per_batch).await;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = tokio::task::spawn_blocking(move || {
        second.stop();
        second
    })
    .await
    .unwrap();
    let after = leaders().await;
    assert!(
        after.iter().all(|l| *l == 1),
        "broker 1 leads every partition now: {after:?}"
    );
    writer.await.unwrap();
    let total = (30 * per_batch) as i64 * partitions as i64;
    wait_until_complete(&target, &remote, total).await;
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, 30 * per_batch).await;
    println!("leader change: leaders {before:?} -> {after:?}, {total} records, 0 lost, {duplicates} duplicated");
    drop(second);
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_that_stall_are_closed_after_the_request_timeout_and_lose_nothing() {
    let (partitions, per_batch) = (2, 200);
    // A connection that stalled is only replaced after a request on it timed out, so a last
    // progress write at stop may need one request timeout (5 s) and a retry: more than the
    // default 5 s that `task.shutdown.graceful.timeout.ms` gives it.
    let extra = "target.producer.request.timeout.ms = 5000\ntask.shutdown.graceful.timeout.ms = 15000";
    let t = proxied_transfer("stall-target", "stall", (partitions, 10, per_batch), extra).await;
    let mirror = start_mirror(&t.properties);
    wait_until_complete(&t.target, &t.remote, t.total).await;
    // Every connection to the target goes silent (a half-dead path: open, nothing gets through),
    // with data arriving at the source. Only the request timeout (here 5 s) can tell.
    t.proxy.stall_connections();
    let stalled = Instant::now();
    write_numbered_from(&t.source, &t.topic, partitions, 10, 10, per_batch).await;
    let total = 2 * t.total;
    let (target, remote) = (t.target.clone(), &t.remote);
    // This test's own client is stalled too: a new one, on a new connection.
    let target = strait_client::KafkaClient::connect(target.config().clone())
        .await
        .unwrap();
    wait_until(&format!("{remote} to hold {total} records"), || async {
        end_offsets(&target, remote).await >= total
    })
    .await;
    let recovered = stalled.elapsed();
    wait_until_complete(&target, remote, total).await;
    let mut metrics = strait_mirror::PrometheusText::default();
    mirror.stats().write_prometheus(&mut metrics);
    let metrics = metrics.finish();
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, remote, partitions, 20 * per_batch).await;
    println!("stalled connections: {total} records in {recovered:?}, 0 lost, {duplicates} duplicated");
    // The stalled Produce requests ended by their 5 s timeout, not the default 30 s one (nor a
    // connection cut, which the proxy never makes), and were retried on new connections: the
    // new records arrive no sooner than 5 s after the stall (they were sent after it), and
    // well before 30 s.
    let timed_out = metric(
        &metrics,
        "strait_errors_total",
        &["cluster=\"target\"", "api=\"Produce\"", "code=\"REQUEST_TIMED_OUT\""],
    );
    assert!(
        timed_out.unwrap_or(0.0) >= 1.0,
        "no Produce request timed out:\n{metrics}"
    );
    assert!(
        (Duration::from_millis(4_500)..Duration::from_secs(20)).contains(&recovered),
        "caught up {recovered:?} after the stall, with a request timeout of 5 s"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_batch_lost_on_the_way_is_resent_ahead_of_the_batches_behind_it() {
    let (partitions, batches, per_batch) = (1, 20, 200);
    let extra = "target.producer.request.timeout.ms = 3000";
    let t = proxied_transfer("lost-target", "lost-produce", (partitions, batches, per_batch), extra).await;
    let (target, remote, total) = (&t.target, &t.remote, t.total);
    // The first Produce of the remote topic never reaches the broker, while the connection
    // stays open. A broker takes any first sequence from a producer id it does not know, so
    // batches sent behind it would be appended ahead of it: 200..999, then 0..
    t.proxy.lose_requests(0, remote.as_bytes(), 1);
    let mirror = start_mirror(&t.properties);
    wait_until_complete(target, remote, total).await;
    mirror.stop().await.unwrap();
    assert_eq!(t.proxy.requests_lost(), 1, "the first Produce was lost on the way");
    let duplicates = check_numbered(target, remote, partitions, batches * per_batch).await;
    println!("a lost first Produce: {total} records, 0 lost, {duplicates} duplicated");
    assert_eq!(duplicates, 0, "the lost batch never landed, so nothing lands twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_cut_short_are_resent_and_deduplicated() {
    let (partitions, batches, per_batch) = (3, 300, 200);
    let t = proxied_transfer("truncate-target", "truncated", (partitions, batches, per_batch), "").await;
    let (target, remote, total) = (&t.target, &t.remote, t.total);
    // 10 ms each way, so that the transfer lasts long enough to be cut often.
    t.proxy.set_latency(Duration::from_millis(10));
    let mirror = start_mirror(&t.properties);
    wait_until("the first records on the target", || async {
        end_offsets(target, remote).await > 0
    })
    .await;
    // A response cut short every 50 ms: the broker appended the batches, only the answers are
    // lost, so every batch the idempotent producer sends again must be a duplicate it drops.
    let mut truncations = 0;
    let deadline = Instant::now() + WAIT * 2;
    while end_offsets(target, remote).await < total {
        assert!(
            Instant::now() < deadline,
            "not caught up after {truncations} truncations"
        );
        t.proxy.truncate_responses(1);
        truncations += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // This test's client goes through the proxy too: a fresh one, in case its connection was cut.
    let target = strait_client::KafkaClient::connect(target.config().clone())
        .await
        .unwrap();
    wait_until_complete(&target, remote, total).await;
    let mut metrics = strait_mirror::PrometheusText::default();
    mirror.stats().write_prometheus(&mut metrics);
    let metrics = metrics.finish();
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, remote, partitions, batches * per_batch).await;
    println!("responses cut short: {total} records, {truncations} truncations, 0 lost, {duplicates} duplicated");
    let produce_errors = metrics
        .lines()
        .filter(|l| l.starts_with("strait_errors_total{") && l.contains("cluster=\"target\",api=\"Produce\""))
        .collect::<Vec<_>>();
    assert!(!produce_errors.is_empty(), "no Produce answer was cut:\n{metrics}");
    assert_eq!(
        duplicates, 0,
        "every batch sent again had landed, and the target dropped it"
    );
}

/// Deletes `topic` on the cluster at `bootstrap` with Kafka's own `TopicCommand`, and waits
/// until `client`'s Metadata no longer lists it.
async fn delete_topic(client: &strait_client::KafkaClient, bootstrap: &str, topic: &str) {
    let (bootstrap, name) = (bootstrap.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || {
        java_tool(
            "org.apache.kafka.tools.TopicCommand",
            &["--bootstrap-server", &bootstrap, "--delete", "--topic", &name],
        )
    })
    .await
    .unwrap();
    wait_until(&format!("{topic} deleted"), || async {
        let metadata = client.metadata(Some(&[topic])).await.unwrap();
        metadata.topics.get(topic).is_none_or(|t| t.error != 0)
    })
    .await;
}

/// The numbers `write_numbered_from` wrote, of each partition of `remote` on the target, in
/// order.
async fn numbers(target: &strait_client::KafkaClient, remote: &str, partitions: i32) -> Vec<Vec<usize>> {
    let mut all = Vec::new();
    for partition in 0..partitions {
        let values = read_records(target, remote, partition).await;
        all.push(
            values
                .into_iter()
                .map(|(_, value, _, _)| {
                    let value = String::from_utf8(value.unwrap().to_vec()).unwrap();
                    value.split('-').nth(1).unwrap().parse().unwrap()
                })
                .collect(),
        );
    }
    all
}

/// The old topic's records 0..old, then the new topic's (numbered from 1 000 000) 0..new, on
/// every partition: what a recreated topic must leave on the target. Returns (lost, duplicated).
fn lost_and_duplicated(numbers: &[Vec<usize>], old: usize, new: usize) -> (usize, usize) {
    let (mut lost, mut duplicated) = (0, 0);
    for partition in numbers {
        let mut seen = std::collections::HashMap::new();
        for &n in partition {
            *seen.entry(n).or_insert(0) += 1;
        }
        let expected = (0..old).chain(NEW_TOPIC_FIRST..NEW_TOPIC_FIRST + new);
        for n in expected {
            match seen.get(&n).copied().unwrap_or(0) {
                0 => lost += 1,
                count => duplicated += count - 1,
            }
        }
    }
    (lost, duplicated)
}

/// Where the numbers of the recreated topic's records start.
const NEW_TOPIC_FIRST: usize = 1_000_000;

/// The partitions of `topic` in the flow's `/status`, with their recreations counted.
fn recreations_in_status(mirror: &strait_mirror::FlowHandle, topic: &str) -> Vec<u64> {
    let status = mirror.stats().status();
    status["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["topic"] == topic)
        .map(|p| p["source_recreations"].as_u64().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_topic_deleted_and_created_again_is_mirrored_again_from_its_start() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("recreated");
    let remote = format!("source.{topic}");
    // 3 partitions of 67 batches of 100: 20 100 records.
    let (partitions, old_batches, new_batches, per_batch) = (3, 67, 34, 100);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, old_batches, per_batch).await;
    let mirror = start_mirror(&mm2_properties(&topic, "refresh.topics.interval.seconds = 1\n"));
    let old = (partitions as usize * old_batches * per_batch) as i64;
    wait_until_complete(&target, &remote, old).await;

    // The topic is deleted and created again under its name (a "reset"), and written with
    // 10 200 new records: fewer than the old position per partition, so that the old position
    // is out of the new log's range.
    delete_topic(&source, &clusters.source.bootstrap_servers(), &topic).await;
    create_topic(&source, &topic, partitions).await;
    let first = NEW_TOPIC_FIRST / per_batch;
    write_numbered_from(&source, &topic, partitions, first, new_batches, per_batch).await;
    let new = (partitions as usize * new_batches * per_batch) as i64;
    wait_until_complete(&target, &remote, old + new).await;
    wait_until("the recreation counted for every partition in /status", || async {
        recreations_in_status(&mirror, &topic) == vec![1; partitions as usize]
    })
    .await;

    let numbers = numbers(&target, &remote, partitions).await;
    let (lost, duplicated) = lost_and_duplicated(&numbers, old_batches * per_batch, new_batches * per_batch);
    assert_eq!((lost, duplicated), (0, 0), "every record of both topics, once");
    assert_eq!(mirror.stats().status()["source_recreations"], partitions);
    assert_eq!(mirror.stats().gap_records(), 0, "the old topic was mirrored whole");
    let mut metrics = strait_mirror::PrometheusText::default();
    mirror.stats().write_prometheus(&mut metrics);
    let metrics = metrics.finish();
    let counted = metrics
        .lines()
        .filter(|l| l.starts_with("strait_source_recreations_total{") && l.contains(&remote) && l.ends_with(" 1"))
        .count();
    assert_eq!(counted, partitions as usize, "{metrics}");
    mirror.stop().await.unwrap();
    println!("recreated topic: {old} old and {new} new records mirrored, 0 lost, 0 duplicated, {partitions} recreations counted");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_topic_recreated_while_the_mirror_is_stopped_is_mirrored_from_its_start() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("recreated-stopped");
    let remote = format!("source.{topic}");
    let (partitions, old_batches, new_batches, per_batch) = (3, 20, 30, 100);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, old_batches, per_batch).await;
    let properties = mm2_properties(&topic, "");
    let mirror = start_mirror(&properties);
    let old = (partitions as usize * old_batches * per_batch) as i64;
    wait_until_complete(&target, &remote, old).await;
    // The positions (2 000 per partition) are stored with the topic's ID.
    mirror.stop().await.unwrap();

    // While the mirror is down the topic is recreated and grows past the stored positions:
    // read by name alone, the new topic would be taken up at offset 2 000 without a word.
    delete_topic(&source, &clusters.source.bootstrap_servers(), &topic).await;
    create_topic(&source, &topic, partitions).await;
    let first = NEW_TOPIC_FIRST / per_batch;
    write_numbered_from(&source, &topic, partitions, first, new_batches, per_batch).await;
    let new = (partitions as usize * new_batches * per_batch) as i64;

    let mirror = start_mirror(&properties);
    wait_until_complete(&target, &remote, old + new).await;
    let numbers = numbers(&target, &remote, partitions).await;
    let (lost, duplicated) = lost_and_duplicated(&numbers, old_batches * per_batch, new_batches * per_batch);
    assert_eq!((lost, duplicated), (0, 0), "every record of both topics, once");
    assert_eq!(recreations_in_status(&mirror, &topic), vec![1; partitions as usize]);
    mirror.stop().await.unwrap();
    println!("topic recreated while stopped: {old} old and {new} new records mirrored, 0 lost, 0 duplicated");
}

/// Garbage in the flow's own stores: a position record and an offset-map record replaced by
/// bytes that cannot be read, and a position of a partition never mirrored that is garbage
/// from the start, with `auto.offset.reset = latest`. The flow starts, each partition goes on
/// from its last readable position (the one without any from the log start, not its end), all
/// records arrive, and `/status` and `/metrics` count the three records skipped.
#[tokio::test(flavor = "multi_thread")]
async fn unreadable_progress_and_offset_map_records_are_skipped_and_counted() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    // A source alias of its own: the flow's internal topics are this test's alone.
    let alias = "garbled";
    let (progress_topic, map_topic) = (
        strait_mirror::ProgressStore::topic_name(alias),
        strait_mirror::OffsetMap::topic_name(alias),
    );
    let (topic, fresh) = (unique("unreadable"), unique("unreadable-fresh"));
    create_topic(&source, &topic, 2).await;
    write_numbered(&source, &topic, 2, 5, 100).await;
    let properties = |extra: &str| {
        format!(
            "clusters = {alias}, target\n\
             {alias}.bootstrap.servers = {}\n\
             target.bootstrap.servers = {}\n\
             {alias}->target.enabled = true\n\
             {alias}->target.topics = {topic}, {fresh}\n\
             replication.factor = 1\n\
             {extra}\n",
            clusters.source.bootstrap_servers(),
            clusters.target.bootstrap_servers()
        )
    };
    let (remote, remote_fresh) = (format!("{alias}.{topic}"), format!("{alias}.{fresh}"));
    let mirror = start_flow(&properties(""), alias, "target");
    wait_until_complete(&target, &remote, 1000).await;
    mirror.stop().await.unwrap();

    // The latest position of partition 0 becomes garbage (it was stored in one partition of
    // the progress topic: found by reading them); partition 1's offset map chunk 0 too.
    let key0 = strait_mirror::connect_offset_key(alias, &topic, 0);
    let mut holder = None;
    for partition in 0..25 {
        let records = read_records(&target, &progress_topic, partition).await;
        if records.iter().any(|(key, ..)| key.as_deref() == Some(key0.as_bytes())) {
            holder = Some(partition);
        }
    }
    let holder = holder.expect("the position of partition 0 is stored");
    let garbage = |key: Bytes, value: &'static str| {
        let mut builder = RecordBatchBuilder::new();
        builder.push(Some(key), Some(Bytes::from_static(value.as_bytes())), vec![], now_ms());
        builder.build()
    };
    target
        .produce(
            &progress_topic,
            holder,
            vec![garbage(Bytes::from(key0), "{\"offset\":")],
        )
        .await
        .unwrap();
    // A partition never mirrored whose only position is garbage: `latest` would skip its 300.
    create_topic(&source, &fresh, 1).await;
    write_numbered(&source, &fresh, 1, 3, 100).await;
    let fresh_key = strait_mirror::connect_offset_key(alias, &fresh, 0);
    target
        .produce(&progress_topic, 0, vec![garbage(Bytes::from(fresh_key), "garbage")])
        .await
        .unwrap();
    // The offset map's key: version, topic, partition, chunk (0).
    let mut map_key = BytesMut::new();
    map_key.put_i16(0);
    map_key.put_i16(topic.len() as i16);
    map_key.put_slice(topic.as_bytes());
    map_key.put_i32(1);
    map_key.put_i32(0);
    target
        .produce(&map_topic, 0, vec![garbage(map_key.freeze(), "garbage")])
        .await
        .unwrap();

    write_numbered_from(&source, &topic, 2, 5, 5, 100).await;
    let mirror = start_flow(
        &properties("garbled.consumer.auto.offset.reset = latest"),
        alias,
        "target",
    );
    wait_until_complete(&target, &remote, 2000).await;
    wait_until_complete(&target, &remote_fresh, 300).await;
    let status = mirror.stats().status();
    assert_eq!(status["state"], "running", "{status}");
    assert_eq!(status["unreadable_records"], 3, "{status}");
    let mut metrics = strait_mirror::PrometheusText::default();
    mirror.stats().write_prometheus(&mut metrics);
    let metrics = metrics.finish();
    for (topic, skipped) in [(&progress_topic, 2.0), (&map_topic, 1.0)] {
        assert_eq!(
            metric(
                &metrics,
                "strait_unreadable_records_total",
                &[&format!("topic=\"{topic}\"")]
            ),
            Some(skipped),
            "{metrics}"
        );
    }
    mirror.stop().await.unwrap();
    // From the last readable position: nothing lost, nothing written twice.
    assert_eq!(check_numbered(&target, &remote, 2, 1000).await, 0);
    assert_eq!(check_numbered(&target, &remote_fresh, 1, 300).await, 0);
    println!("unreadable: 3 stored records skipped and counted, 2300 records mirrored, 0 lost, 0 duplicated");
}
