//! Offset syncs, checkpoints, heartbeats and group offset sync, judged by MirrorMaker 2's own
//! client library (`RemoteClusterUtils`) and by real consumer groups failing over.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use strait_tests::*;
use strait_wire::{Checkpoint, Heartbeat, RecordBatchBuilder};

const PARTITIONS: i32 = 2;
const BATCHES: usize = 10;
const PER_BATCH: usize = 100;
/// Records already in the remote topic before mirroring starts, so that target offsets differ
/// from source offsets and translation has something to do.
const SHIFT: usize = 37;

/// Writes numbered records `p<partition>-<n>` in batches of [`PER_BATCH`].
async fn write(client: &strait_client::KafkaClient, topic: &str, prefix: &str, batches: usize) {
    for partition in 0..PARTITIONS {
        for b in 0..batches {
            let mut builder = RecordBatchBuilder::new();
            for r in 0..PER_BATCH {
                let value = format!("{prefix}p{partition}-{}", b * PER_BATCH + r);
                builder.push(None, Some(Bytes::from(value)), vec![], now_ms());
            }
            client.produce(topic, partition, vec![builder.build()]).await.unwrap();
        }
    }
}

/// Runs a real consumer group member (tests/java/ConsumeAndCommit.java) on a topic of
/// [`PARTITIONS`] partitions; returns the values read.
async fn consume(bootstrap: String, topic: String, group: String, limit: i64) -> Vec<String> {
    consume_partitions(bootstrap, topic, group, PARTITIONS, limit).await
}

/// Runs a real consumer group member (tests/java/ConsumeAndCommit.java): reads up to `limit`
/// records of each of `partitions` partitions (-1: until the topic is quiet), commits after
/// them and leaves; returns the values read.
pub(crate) async fn consume_partitions(
    bootstrap: String,
    topic: String,
    group: String,
    partitions: i32,
    limit: i64,
) -> Vec<String> {
    tokio::task::spawn_blocking(move || {
        let mut command = java_program("ConsumeAndCommit");
        command.args([&bootstrap, &topic, &group, &partitions.to_string(), &limit.to_string()]);
        let output = run_ok(command);
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    })
    .await
    .unwrap()
}

/// Asks MM2's `RemoteClusterUtils` about the target (tests/java/Mm2Client.java).
pub(crate) async fn remote_cluster_utils(group: &str) -> HashMap<String, String> {
    remote_cluster_utils_at(clusters().target.bootstrap_servers(), "source", group).await
}

/// Asks MM2's `RemoteClusterUtils` about the cluster at `bootstrap`, for `remote_alias`.
async fn remote_cluster_utils_at(bootstrap: String, remote_alias: &str, group: &str) -> HashMap<String, String> {
    let (remote_alias, group) = (remote_alias.to_owned(), group.to_owned());
    tokio::task::spawn_blocking(move || {
        let mut command = java_program("Mm2Client");
        command.args([&bootstrap, &remote_alias, &group]);
        let output = run_ok(command);
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| match line.strip_prefix("offset ") {
                Some(rest) => {
                    let (tp, offset) = rest.rsplit_once(' ').unwrap();
                    (format!("offset {tp}"), offset.to_owned())
                }
                None => {
                    let (key, value) = line.split_once('=').unwrap();
                    (key.to_owned(), value.to_owned())
                }
            })
            .collect()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn consumer_groups_fail_over_with_mm2s_own_client() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("failover");
    let remote = format!("source.{topic}");
    create_topic(&source, &topic, PARTITIONS).await;
    create_topic(&target, &remote, PARTITIONS).await;
    for partition in 0..PARTITIONS {
        let mut builder = RecordBatchBuilder::new();
        for i in 0..SHIFT {
            builder.push(None, Some(Bytes::from(format!("junk-{i}"))), vec![], now_ms());
        }
        target.produce(&remote, partition, vec![builder.build()]).await.unwrap();
    }
    write(&source, &topic, "", BATCHES).await;

    // Two real groups read part of the source: one stops at a batch boundary, one inside a batch.
    let (at_boundary, inside) = (unique("group-boundary"), unique("group-inside"));
    let read_boundary = consume(
        clusters.source.bootstrap_servers(),
        topic.clone(),
        at_boundary.clone(),
        300,
    )
    .await;
    let read_inside = consume(clusters.source.bootstrap_servers(), topic.clone(), inside.clone(), 250).await;
    assert_eq!((read_boundary.len(), read_inside.len()), (600, 500));

    let mirror = start_mirror(&mm2_properties(
        &topic,
        "emit.checkpoints.interval.seconds = 1\nsync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1",
    ));
    let checkpoints_topic = "source.checkpoints.internal";
    // Checkpoints translate with the offset syncs known when they are made, and are made again
    // as the mirror moves on: once everything is mirrored, each group's is exact.
    wait_until_complete(
        &target,
        &remote,
        (PARTITIONS as usize * (SHIFT + BATCHES * PER_BATCH)) as i64,
    )
    .await;
    let exact = |c: &Checkpoint| {
        if c.group == at_boundary {
            c.downstream_offset == 300 + SHIFT as i64
        } else {
            c.downstream_offset == 250 + SHIFT as i64
        }
    };
    wait_until("exact checkpoints of both groups", || async {
        let Ok(all) = strait_mirror::read_checkpoints(&target, "target", checkpoints_topic).await else {
            return false;
        };
        [&at_boundary, &inside]
            .iter()
            .all(|g| all.iter().filter(|c| &&c.group == g && exact(c)).count() == PARTITIONS as usize)
    })
    .await;
    let all = strait_mirror::read_checkpoints(&target, "target", checkpoints_topic)
        .await
        .unwrap();
    for c in all.iter().filter(|c| c.group == at_boundary) {
        assert_eq!((c.topic.as_str(), c.upstream_offset), (remote.as_str(), 300));
        assert_eq!(c.downstream_offset, 300 + SHIFT as i64, "exact at a batch boundary");
        assert_eq!(c.metadata, format!("m{}", c.partition), "commit metadata is carried");
    }
    for c in all.iter().filter(|c| c.group == inside) {
        assert_eq!(c.upstream_offset, 250);
        assert_eq!(c.downstream_offset, 250 + SHIFT as i64, "exact inside a batch");
    }

    // MM2's own client reads Strait's checkpoints and heartbeats.
    let answers = remote_cluster_utils(&at_boundary).await;
    for partition in 0..PARTITIONS {
        assert_eq!(
            answers[&format!("offset {remote} {partition}")],
            (300 + SHIFT).to_string(),
            "{answers:?}"
        );
    }
    assert!(answers["checkpointTopics"].contains(checkpoints_topic), "{answers:?}");
    assert!(answers["heartbeatTopics"].contains("heartbeats"), "{answers:?}");

    // `strait translate` says the same as MM2's client.
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, mm2_properties(&topic, "")).unwrap();
    let output = run_ok({
        let mut command = std::process::Command::new(strait_binary());
        command
            .arg("translate")
            .arg(&config)
            .args(["--group", &at_boundary, "--json"]);
        command
    });
    let _ = std::fs::remove_file(&config);
    let translated: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let translated = translated.as_array().unwrap();
    assert_eq!(translated.len(), PARTITIONS as usize, "{translated:?}");
    for entry in translated {
        assert_eq!(entry["topic"], remote.as_str());
        assert_eq!(entry["offset"], 300 + SHIFT as i64, "{entry}");
    }

    // The synced offsets let each group go on at the target: nothing lost.
    wait_until("the checkpoints' offsets synced into the target groups", || async {
        let (a, b) = (
            target.committed_offsets(&at_boundary).await,
            target.committed_offsets(&inside).await,
        );
        a.is_ok_and(|a| a.len() == PARTITIONS as usize && a.values().all(|o| o.offset == 300 + SHIFT as i64))
            && b.is_ok_and(|b| b.len() == PARTITIONS as usize && b.values().all(|o| o.offset == 250 + SHIFT as i64))
    })
    .await;
    mirror.stop().await.unwrap();
    // Nothing read twice: the offset map translates inside a batch as exactly as at its edge.
    for (group, read_before) in [(&at_boundary, &read_boundary), (&inside, &read_inside)] {
        let read_after = consume(clusters.target.bootstrap_servers(), remote.clone(), group.clone(), -1).await;
        assert!(
            read_after.iter().all(|v| !v.starts_with("junk")),
            "{group}: nothing before its position"
        );
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for value in read_before.iter().chain(&read_after) {
            *seen.entry(value).or_default() += 1;
        }
        assert_eq!(
            seen.len(),
            PARTITIONS as usize * BATCHES * PER_BATCH,
            "{group}: every record read once at least"
        );
        let duplicates: usize = seen.values().map(|c| c - 1).sum();
        println!(
            "failover {group}: {} read at the source, {} at the target, {duplicates} duplicates",
            read_before.len(),
            read_after.len()
        );
        assert_eq!(duplicates, 0, "{group}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn offsets_are_not_synced_into_a_group_with_active_members() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("active");
    let remote = format!("source.{topic}");
    create_topic(&source, &topic, PARTITIONS).await;
    create_topic(&target, &remote, PARTITIONS).await;
    write(&source, &topic, "", 2).await;
    let group = unique("group-active");
    consume(clusters.source.bootstrap_servers(), topic.clone(), group.clone(), 100).await;

    // A member of the same group stays subscribed to the remote topic on the target; it commits
    // nothing itself.
    let mut member = strait_testkit::KafkaDist::get()
        .unwrap()
        .java("org.apache.kafka.tools.consumer.ConsoleConsumer")
        .args([
            "--bootstrap-server",
            &clusters.target.bootstrap_servers(),
            "--topic",
            &remote,
        ])
        .args(["--group", &group, "--consumer-property", "enable.auto.commit=false"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the member to join on the target", || async {
        target.describe_group(&group).await.is_ok_and(|d| !d.members.is_empty())
    })
    .await;

    let mirror = start_mirror(&mm2_properties(
        &topic,
        "emit.checkpoints.interval.seconds = 1\nsync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1",
    ));
    wait_until("a checkpoint for the group", || async {
        strait_mirror::read_checkpoints(&target, "target", "source.checkpoints.internal")
            .await
            .is_ok_and(|all| all.iter().any(|c| c.group == group))
    })
    .await;
    // The positive control: an idle group of the same flow, which commits at the source only
    // now. The sync round that carries its offsets over handles every group checkpointed before
    // it, the active one included.
    let idle = unique("group-idle");
    let offsets = (0..PARTITIONS)
        .map(|p| {
            (
                (topic.clone(), p),
                strait_client::CommittedOffset {
                    offset: PER_BATCH as i64,
                    metadata: String::new(),
                },
            )
        })
        .collect();
    source.commit_offsets(&idle, &offsets).await.unwrap();
    wait_until("the idle group's offsets synced into the target", || async {
        target.committed_offsets(&idle).await.is_ok_and(|c| {
            c.len() == PARTITIONS as usize && c.iter().all(|((t, _), o)| t == &remote && o.offset == PER_BATCH as i64)
        })
    })
    .await;
    let committed = target.committed_offsets(&group).await.unwrap();
    mirror.stop().await.unwrap();
    let _ = member.kill();
    let _ = member.wait();
    assert!(
        committed.is_empty(),
        "nothing committed into an active group: {committed:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeats_appear_at_the_configured_interval() {
    let clusters = clusters();
    let target = client(&clusters.target).await;
    let topic = unique("hb");
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // A source alias of its own: other tests' flows `source->target` write heartbeats into the
    // same topic at the same time, and would fill the gaps of this one.
    let alias = unique("hb-source");
    let properties = mm2_properties(&topic, "emit.heartbeats.interval.seconds = 1").replace("source", &alias);
    let mirror = start_flow(&properties, &alias, "target");
    tokio::time::sleep(Duration::from_secs(5)).await;
    mirror.stop().await.unwrap();
    // No second passes without one.
    let mut times: Vec<i64> = read_records(&target, "heartbeats", 0)
        .await
        .into_iter()
        .filter_map(|(key, value, _, _)| Heartbeat::decode(&key?, &value?).ok())
        .filter(|h| h.source_cluster_alias == alias && h.target_cluster_alias == "target" && h.timestamp >= started)
        .map(|h| h.timestamp)
        .collect();
    times.sort();
    // One a second: 5 or 6 in 5 s (a beat at the start, then one each second), each ~1 s
    // after the one before. A late write delays one beat, and the next catches up.
    assert!((4..=7).contains(&times.len()), "heartbeats in 5 s: {times:?}");
    let gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|&g| (500..=1_500).contains(&g)),
        "gaps between heartbeats: {gaps:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_cluster_utils_sees_the_heartbeat_chain() {
    let target = client(&clusters().target).await;
    let topic = unique("hops");
    // MM2 runs a heartbeat-only target->source pair: it writes heartbeats into the source, which
    // source->target replicates as `source.heartbeats`.
    let properties = mm2_properties(
        &topic,
        "refresh.topics.interval.seconds = 1\nemit.heartbeats.interval.seconds = 1",
    );
    let reverse = start_flow(&properties, "target", "source");
    let mirror = start_mirror(&properties);
    wait_until("source.heartbeats on the target", || async {
        end_offsets(&target, "source.heartbeats").await > 0
    })
    .await;
    let answers = remote_cluster_utils("no-such-group").await;
    mirror.stop().await.unwrap();
    reverse.stop().await.unwrap();
    assert_eq!(answers["hops"], "1", "{answers:?}");
    assert_eq!(answers["upstream"], "[source]", "{answers:?}");
    assert!(answers["heartbeatTopics"].contains("source.heartbeats"), "{answers:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeats_travel_a_three_cluster_chain_as_in_mm2() {
    let clusters = clusters();
    let third = tokio::task::spawn_blocking(|| strait_testkit::KafkaCluster::start("third").unwrap())
        .await
        .unwrap();
    let topic = unique("chain");
    // clusters A=source, B=target, C=third; A->B and B->C enabled. MM2 also runs heartbeat-only
    // pairs; B->A is the one that puts a `heartbeats` topic into A.
    let properties = format!(
        "clusters = source, target, third\n\
         source.bootstrap.servers = {}\n\
         target.bootstrap.servers = {}\n\
         third.bootstrap.servers = {}\n\
         source->target.enabled = true\n\
         target->third.enabled = true\n\
         topics = {topic}\n\
         replication.factor = 1\n\
         refresh.topics.interval.seconds = 1\n\
         emit.heartbeats.interval.seconds = 1\n",
        clusters.source.bootstrap_servers(),
        clusters.target.bootstrap_servers(),
        third.bootstrap_servers()
    );
    let flows: Vec<_> = [("target", "source"), ("source", "target"), ("target", "third")]
        .iter()
        .map(|(a, b)| start_flow(&properties, a, b))
        .collect();
    let third_client = client(&third).await;
    wait_until("target.source.heartbeats on the third cluster", || async {
        end_offsets(&third_client, "target.source.heartbeats").await > 0
            && end_offsets(&third_client, "target.heartbeats").await > 0
    })
    .await;
    let answers = remote_cluster_utils_at(third.bootstrap_servers(), "source", "no-such-group").await;
    for flow in flows {
        flow.stop().await.unwrap();
    }
    assert_eq!(
        answers["hops"], "2",
        "source is two hops up from the third cluster: {answers:?}"
    );
    assert_eq!(answers["upstream"], "[source, target]", "{answers:?}");
    let topics: Vec<String> = third_client
        .metadata(None)
        .await
        .unwrap()
        .topics
        .into_keys()
        .filter(|t| t.contains("heartbeats"))
        .collect();
    assert!(topics.contains(&"target.source.heartbeats".to_owned()), "{topics:?}");
    assert!(
        !topics.iter().any(|t| t.starts_with("third.")),
        "nothing comes back to the third cluster: {topics:?}"
    );
}
