//! Scale-out: `strait run` processes of one configuration share the partitions through Kafka's
//! group protocol on the target cluster. Each member's `/status` says what it holds; the target
//! says what arrived, and Kafka's console consumer counts it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use strait_tests::*;

use crate::exactly_once::{committed_records, exactly_once_properties, java_consume};
use crate::faults::proxied_cluster;
use crate::mirror::{write_numbered, write_numbered_from};
use crate::operations::strait_json;

/// Short timeouts, so that a dead member is noticed within seconds.
const GROUP_KEYS: &str = "session.timeout.ms = 6000\nheartbeat.interval.ms = 500\nrebalance.timeout.ms = 20000\n";

/// One `strait run` of a group, serving `/status` on its own port, logging to a file.
struct Member {
    name: String,
    process: StraitProcess,
    port: u16,
    log: PathBuf,
    config: PathBuf,
}

impl Member {
    fn start(name: &str, properties: &str) -> Member {
        let port = free_port();
        let config = std::env::temp_dir().join(format!("{}.properties", unique(name)));
        std::fs::write(
            &config,
            format!("{properties}strait.http.listener = 127.0.0.1:{port}\n"),
        )
        .unwrap();
        let log = config.with_extension("log");
        let child = std::process::Command::new(strait_binary())
            .arg("run")
            .arg(&config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Member {
            name: name.to_owned(),
            process: StraitProcess(child),
            port,
            log,
            config,
        }
    }

    /// The member's group on the target cluster as its `/status` shows it, once it serves one.
    /// (Its other group, on the source, shares the heartbeat-only flow back.)
    async fn group(&self) -> Option<Value> {
        let (_, body) = http_get(self.port, "/status").await?;
        let status: Value = serde_json::from_str(&body).ok()?;
        status["groups"]
            .as_array()?
            .iter()
            .find(|g| g["cluster"] == "target")
            .cloned()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.config);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The partitions a member's group status says it holds, as `topic-partition`, with those of
/// the source's `heartbeats` topic (which MM2's filter always replicates) left out.
fn held(group: &Value) -> BTreeSet<String> {
    held_with_heartbeats(group)
        .into_iter()
        .filter(|p| !p.starts_with("heartbeats-"))
        .collect()
}

fn held_with_heartbeats(group: &Value) -> BTreeSet<String> {
    group["held"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|flow| flow["partitions"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.as_str().map(str::to_owned))
        .collect()
}

fn holds_singleton(group: &Value) -> bool {
    group["held"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|flow| flow["singleton"] == Value::Bool(true))
}

/// Waits until the members agree on one generation in which each of `partitions` is held by
/// exactly one of them and one holds the singleton; returns who holds what.
async fn settled(members: &[&Member], partitions: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut groups = Vec::new();
        for member in members {
            groups.push(member.group().await);
        }
        if let Some(groups) = groups.into_iter().collect::<Option<Vec<Value>>>() {
            let generations: BTreeSet<i64> = groups.iter().map(|g| g["generation"].as_i64().unwrap_or(-1)).collect();
            let mut all = Vec::new();
            for group in &groups {
                all.extend(held_with_heartbeats(group));
            }
            let union: BTreeSet<String> = all.iter().filter(|p| !p.starts_with("heartbeats-")).cloned().collect();
            let distinct: BTreeSet<&String> = all.iter().collect();
            let singletons = groups.iter().filter(|g| holds_singleton(g)).count();
            if generations.len() == 1
                && !generations.contains(&-1)
                && all.len() == distinct.len()
                && &union == partitions
                && singletons == 1
            {
                return members
                    .iter()
                    .zip(&groups)
                    .map(|(m, g)| (m.name.clone(), held(g)))
                    .collect();
            }
        }
        if Instant::now() >= deadline {
            let logs: Vec<String> = members
                .iter()
                .map(|m| format!("--- {}:\n{}", m.name, tail(&m.log())))
                .collect();
            panic!(
                "the group did not settle on {partitions:?} within {WAIT:?}\n{}",
                logs.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// `topic-0` .. for each topic.
fn partitions_of(topics: &[String], partitions: i32) -> BTreeSet<String> {
    topics
        .iter()
        .flat_map(|t| (0..partitions).map(move |p| format!("{t}-{p}")))
        .collect()
}

/// Numbered records written to every partition of `topics` until stopped: the batches each
/// partition got.
struct Writer {
    writing: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<usize>,
    topics: Vec<String>,
    partitions: i32,
    per_batch: usize,
}

impl Writer {
    fn start(
        source: &strait_client::KafkaClient,
        topics: &[String],
        partitions: i32,
        first: usize,
        per_batch: usize,
    ) -> Writer {
        let writing = Arc::new(AtomicBool::new(true));
        let task = tokio::spawn({
            let (source, topics, writing) = (source.clone(), topics.to_vec(), writing.clone());
            async move {
                let mut batch = first;
                while writing.load(Ordering::Relaxed) {
                    for topic in &topics {
                        write_numbered_from(&source, topic, partitions, batch, 1, per_batch).await;
                    }
                    batch += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                batch
            }
        });
        Writer {
            writing,
            task,
            topics: topics.to_vec(),
            partitions,
            per_batch,
        }
    }

    async fn stop(self) -> usize {
        self.writing.store(false, Ordering::Relaxed);
        self.task.await.unwrap()
    }

    /// Stops writing, waits until `target` (a client of the cluster at `bootstrap`) holds as
    /// many records in each remote topic `source.<topic>`, and judges them; returns the records
    /// per partition and the duplicates.
    async fn finish(self, target: &strait_client::KafkaClient, bootstrap: &str) -> (usize, usize) {
        let (topics, partitions, per_batch) = (self.topics.clone(), self.partitions, self.per_batch);
        let per_partition = self.stop().await * per_batch;
        let remotes: Vec<String> = topics.iter().map(|t| format!("source.{t}")).collect();
        for remote in &remotes {
            wait_until_complete(target, remote, (partitions as usize * per_partition) as i64).await;
        }
        let duplicates = judge(bootstrap, &remotes, partitions, per_partition);
        (per_partition, duplicates)
    }
}

/// Kafka's console consumer reads each remote topic: no record of `per_partition` numbered ones
/// may be missing; returns the duplicates.
fn judge(bootstrap: &str, remotes: &[String], partitions: i32, per_partition: usize) -> usize {
    judge_at(bootstrap, remotes, partitions, per_partition, "read_uncommitted")
}

/// As [`judge`], reading at `isolation`.
fn judge_at(bootstrap: &str, remotes: &[String], partitions: i32, per_partition: usize, isolation: &str) -> usize {
    let mut duplicates = 0;
    for remote in remotes {
        let expected = partitions as usize * per_partition;
        let consumed = java_consume(bootstrap, remote, isolation, expected * 2);
        let mut seen: BTreeMap<(i32, usize), usize> = BTreeMap::new();
        for (partition, value) in &consumed {
            let n: usize = value.split('-').nth(1).unwrap().parse().unwrap();
            *seen.entry((*partition, n)).or_default() += 1;
        }
        let missing: Vec<(i32, usize)> = (0..partitions)
            .flat_map(|p| (0..per_partition).map(move |n| (p, n)))
            .filter(|key| !seen.contains_key(key))
            .collect();
        assert!(
            missing.is_empty(),
            "{remote}: lost {} records, first {:?}",
            missing.len(),
            missing.first()
        );
        duplicates += consumed.len() - seen.len();
    }
    duplicates
}

/// The remote topics' end offsets, by `topic-partition` of the source.
async fn remote_ends(target: &strait_client::KafkaClient, topics: &[String], partitions: i32) -> BTreeMap<String, i64> {
    let mut ends = BTreeMap::new();
    for topic in topics {
        let all: Vec<i32> = (0..partitions).collect();
        if let Ok(offsets) = target
            .list_offsets(&format!("source.{topic}"), &all, strait_client::OffsetSpec::Latest)
            .await
        {
            for (partition, end) in offsets {
                ends.insert(format!("{topic}-{partition}"), end);
            }
        }
    }
    ends
}

/// When the target last took a heartbeat of the flow.
async fn last_heartbeat(properties: &str) -> Option<i64> {
    let config = strait_config::Mm2Config::parse(properties).unwrap();
    let flow = config.flow("source", "target").unwrap();
    strait_mirror::read_flow_report(flow).await.ok()?.last_heartbeat_ms
}

#[tokio::test(flavor = "multi_thread")]
async fn three_members_split_the_partitions_and_a_killed_ones_move_on_without_loss() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let prefix = unique("grp");
    let topics: Vec<String> = ["a", "b", "c"].iter().map(|t| format!("{prefix}-{t}")).collect();
    let (partitions, per_batch) = (4, 50);
    for topic in &topics {
        create_topic(&source, topic, partitions).await;
        write_numbered(&source, topic, partitions, 20, per_batch).await;
    }
    let properties = mm2_properties(
        &format!("{prefix}-.*"),
        &format!("strait.group.id = {prefix}\n{GROUP_KEYS}emit.heartbeats.interval.seconds = 1\n"),
    );
    let writer = Writer::start(&source, &topics, partitions, 20, per_batch);
    let members: Vec<Member> = (1..=3)
        .map(|n| Member::start(&format!("member-{n}"), &properties))
        .collect();
    let all = partitions_of(&topics, partitions);
    let split = settled(&members.iter().collect::<Vec<_>>(), &all).await;
    println!(
        "three members hold {:?}",
        split.values().map(BTreeSet::len).collect::<Vec<_>>()
    );
    // Balanced by measured bytes per second, not by count: equal writes to every partition,
    // measured with some noise, give each member about 4 of the 12.
    for (member, held) in &split {
        assert!(
            (2..=6).contains(&held.len()),
            "{member} holds {held:?}: 12 partitions of equal rates over 3 members are about 4 each"
        );
    }

    // `strait status` sees the same from the cluster: the group's members and what each holds.
    let described = strait_json(&[
        OsStr::new("status"),
        members[0].config.as_os_str(),
        OsStr::new("--json"),
    ]);
    let group = described["groups"]
        .as_array()
        .and_then(|groups| groups.iter().find(|g| g["cluster"] == "target"))
        .unwrap_or_else(|| panic!("no group on the target in {described}"))
        .clone();
    assert_eq!(group["group_id"], prefix.as_str(), "{group}");
    assert_eq!(group["state"], "Stable", "{group}");
    let generation = members[0].group().await.unwrap()["generation"].clone();
    assert_eq!(group["generation"], generation, "{group}");
    let mut seen: Vec<BTreeSet<String>> = group["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|member| held(&serde_json::json!({ "held": member["held"] })))
        .collect();
    seen.sort();
    let mut expected: Vec<BTreeSet<String>> = split.values().cloned().collect();
    expected.sort();
    assert_eq!(seen, expected, "strait status shows who holds what: {group}");

    // SIGKILL the member that runs the singleton jobs (heartbeats), while records flow.
    let mut members = members;
    let mut victim_index = None;
    for (i, member) in members.iter().enumerate() {
        if member.group().await.is_some_and(|g| holds_singleton(&g)) {
            victim_index = Some(i);
        }
    }
    let mut victim = members.remove(victim_index.expect("a member holds the singleton"));
    let moved = split[&victim.name].clone();
    let before = remote_ends(&target, &topics, partitions).await;
    victim.process.0.kill().unwrap();
    victim.process.0.wait().unwrap();
    let killed_at = Instant::now();
    let killed_ms = now_ms();
    // The moved partitions flow again: each one's remote end grows past where it was at the kill.
    let deadline = Instant::now() + WAIT;
    loop {
        let ends = remote_ends(&target, &topics, partitions).await;
        if moved.iter().all(|p| ends.get(p) > before.get(p)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the killed member's partitions did not move on within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovery = killed_at.elapsed();
    let survivors: Vec<&Member> = members.iter().collect();
    let after = settled(&survivors, &all).await;
    for (member, held) in &after {
        assert!(
            held.is_superset(&split[member]),
            "{member} lost partitions it held: {:?} then {held:?}",
            split[member]
        );
    }
    // The heartbeats moved with the singleton: the target takes new ones.
    wait_until("heartbeats after the kill", || async {
        last_heartbeat(&properties).await.is_some_and(|t| t > killed_ms + 1000)
    })
    .await;

    let (per_partition, duplicates) = writer.finish(&target, &clusters.target.bootstrap_servers()).await;
    println!(
        "SIGKILL of a member: its {} partitions flowed again after {recovery:.1?} (session.timeout.ms 6000); \
         {} records, 0 lost, {duplicates} duplicated",
        moved.len(),
        topics.len() * partitions as usize * per_partition
    );
    drop(victim);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_joining_member_takes_partitions_while_the_others_keep_mirroring() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let prefix = unique("join");
    let topics = vec![format!("{prefix}-a"), format!("{prefix}-b")];
    let (partitions, per_batch) = (3, 50);
    for topic in &topics {
        create_topic(&source, topic, partitions).await;
    }
    let properties = mm2_properties(
        &format!("{prefix}-.*"),
        &format!("strait.group.id = {prefix}\n{GROUP_KEYS}refresh.topics.interval.seconds = 1\n"),
    );
    let writer = Writer::start(&source, &topics, partitions, 0, per_batch);
    let first = Member::start("first", &properties);
    let second = Member::start("second", &properties);
    let all = partitions_of(&topics, partitions);
    let before = settled(&[&first, &second], &all).await;

    // The stayers' positions keep advancing through the rebalance: sampled all along.
    let third = Member::start("third", &properties);
    let start_ends = remote_ends(&target, &topics, partitions).await;
    let after = settled(&[&first, &second, &third], &all).await;
    let end_ends = remote_ends(&target, &topics, partitions).await;
    // Sticky: a partition changes hands only to give the newcomer its share (and, as measured
    // rates replace first guesses, to even out bytes per second): most stay where they were.
    let owner = |split: &BTreeMap<String, BTreeSet<String>>, partition: &String| {
        split
            .iter()
            .find(|(_, held)| held.contains(partition))
            .map(|(name, _)| name.clone())
    };
    let (stayed, moved): (Vec<&String>, Vec<&String>) = all.iter().partition(|p| owner(&before, p) == owner(&after, p));
    // Its share may be small units only (the singleton, the `heartbeats` partition) where the
    // partitions measure alike.
    let newcomer = third.group().await.expect("/status answers");
    assert!(
        (!held_with_heartbeats(&newcomer).is_empty() || holds_singleton(&newcomer))
            && moved.len() <= 4
            && stayed.len() >= 2,
        "the newcomer takes a share and the rest mostly stays: {before:?} then {after:?}, the newcomer's {newcomer}"
    );
    // A rebalance that moves only small units settles within milliseconds: the stayers'
    // positions are then followed a little longer (10 s at most).
    let mut end_ends = end_ends;
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Some(partition) = stayed.iter().find(|p| end_ends.get(**p) <= start_ends.get(**p)) {
        assert!(
            Instant::now() < deadline,
            "{partition} stayed with its member and kept advancing through the rebalance"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        end_ends = remote_ends(&target, &topics, partitions).await;
    }
    // Only the moved ones were released.
    let released: usize = [&first, &second]
        .iter()
        .map(|m| m.log().matches("releasing revoked partitions").count())
        .sum();
    assert!(moved.is_empty() || released >= 1, "the moved partitions were released");

    // A new topic is an assignment without a revocation: nobody gives anything up for it.
    let releases = || {
        [&first, &second, &third]
            .iter()
            .map(|m| m.log().matches("releasing revoked partitions").count())
            .sum::<usize>()
    };
    let released_before = releases();
    let fresh = format!("{prefix}-c");
    create_topic(&source, &fresh, partitions).await;
    write_numbered(&source, &fresh, partitions, 2, per_batch).await;
    let mut grown = all.clone();
    grown.extend(partitions_of(std::slice::from_ref(&fresh), partitions));
    let later = settled(&[&first, &second, &third], &grown).await;
    for name in ["first", "second", "third"] {
        assert!(
            later[name].is_superset(&after[name]),
            "{name} kept what it held when the topic appeared: {:?} then {:?}",
            after[name],
            later[name]
        );
    }
    assert_eq!(releases(), released_before, "nothing was revoked for the new topic");
    wait_until_complete(
        &target,
        &format!("source.{fresh}"),
        (partitions as usize * 2 * per_batch) as i64,
    )
    .await;

    let (_, duplicates) = writer.finish(&target, &clusters.target.bootstrap_servers()).await;
    println!("a member joined: {moved:?} moved, 0 lost, {duplicates} duplicated");
    assert!(first.process_alive() && second.process_alive() && third.process_alive());
}

impl Member {
    /// Stops it with SIGTERM; whether it exited with success.
    fn terminate(&mut self) -> bool {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.process.0.id().to_string()])
            .status();
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.process.0.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Sends it `signal` (`-STOP`, `-CONT`).
    fn signal(&mut self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .args([signal, &self.process.0.id().to_string()])
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill {signal}");
    }

    fn process_alive(&self) -> bool {
        std::process::Command::new("kill")
            .args(["-0", &self.process.0.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_static_member_restarted_within_the_session_keeps_its_partitions_without_a_rebalance() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let prefix = unique("static");
    let topics = vec![format!("{prefix}-a")];
    let partitions = 4;
    create_topic(&source, &topics[0], partitions).await;
    write_numbered(&source, &topics[0], partitions, 5, 50).await;
    let properties = mm2_properties(
        &format!("{prefix}-.*"),
        &format!("strait.group.id = {prefix}\n{GROUP_KEYS}"),
    );
    let one = Member::start("one", &format!("{properties}group.instance.id = one\n"));
    let two = Member::start("two", &format!("{properties}group.instance.id = two\n"));
    let all = partitions_of(&topics, partitions);
    let before = settled(&[&one, &two], &all).await;
    let generation = one.group().await.unwrap()["generation"].as_i64().unwrap();

    // A rolling restart of `two`: stopped cleanly (a static member does not leave) and started again.
    let mut two = two;
    assert!(two.terminate(), "a clean stop: {}", tail(&two.log()));
    drop(two);
    let two = Member::start("two", &format!("{properties}group.instance.id = two\n"));
    let after = settled(&[&one, &two], &all).await;
    assert_eq!(after, before, "the same partitions with the same members");
    let group = one.group().await.unwrap();
    assert_eq!(
        group["generation"].as_i64().unwrap(),
        generation,
        "no rebalance: the generation stayed; {}",
        tail(&two.log())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn members_with_different_filters_do_not_share_and_say_why() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let prefix = unique("filters");
    let topics = vec![format!("{prefix}-a")];
    let partitions = 3;
    create_topic(&source, &topics[0], partitions).await;
    let group_keys = format!("strait.group.id = {prefix}\n{GROUP_KEYS}");
    let leader = Member::start("leader", &mm2_properties(&format!("{prefix}-.*"), &group_keys));
    let all = partitions_of(&topics, partitions);
    settled(&[&leader], &all).await;
    let other = Member::start("other", &mm2_properties(&format!("{prefix}-a|unrelated"), &group_keys));
    let deadline = Instant::now() + WAIT;
    let refused = loop {
        if let Some(group) = other.group().await {
            if let Some(why) = group["refused"].as_str() {
                break (why.to_owned(), held(&group));
            }
        }
        assert!(
            Instant::now() < deadline,
            "the other member was not refused: {}",
            tail(&other.log())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        refused.0.contains("source->target.topics"),
        "the differing key is named: {}",
        refused.0
    );
    assert!(refused.1.is_empty(), "a refused member holds nothing: {:?}", refused.1);
    assert!(other.log().contains("source->target.topics"), "and says so in its log");
    // The leader keeps everything.
    assert_eq!(held(&leader.group().await.unwrap()), all);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_cut_off_from_the_coordinator_stops_before_its_session_ends() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let (target_cluster, proxy, bootstrap) = proxied_cluster("group-cut").await;
    let prefix = unique("cut");
    let topics = vec![format!("{prefix}-a")];
    let (partitions, per_batch) = (2, 50);
    create_topic(&source, &topics[0], partitions).await;
    let properties = mm2_properties(
        &format!("{prefix}-.*"),
        &format!("strait.group.id = {prefix}\n{GROUP_KEYS}"),
    )
    .replace(&clusters.target.bootstrap_servers(), &bootstrap);
    let writer = Writer::start(&source, &topics, partitions, 0, per_batch);
    let member = Member::start("cut", &properties);
    let all = partitions_of(&topics, partitions);
    settled(&[&member], &all).await;

    // Cut off: every connection closed, and new ones refused.
    let upstream = target_cluster.bootstrap_servers().parse().unwrap();
    proxy.set_upstream(format!("127.0.0.1:{}", free_port()).parse().unwrap());
    proxy.cut_connections();
    let cut = Instant::now();
    let deadline = cut + Duration::from_secs(6);
    loop {
        let group = member.group().await.expect("/status answers");
        if held_with_heartbeats(&group).is_empty() && !holds_singleton(&group) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still holding {:?} at the end of the session timeout: {}",
            held(&group),
            tail(&member.log())
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let released_after = cut.elapsed();
    assert!(
        member.log().contains("releasing every partition"),
        "{}",
        tail(&member.log())
    );

    // Back in touch: it joins again and mirrors everything, nothing lost.
    proxy.set_upstream(upstream);
    settled(&[&member], &all).await;
    let target = client(&target_cluster).await;
    let (_, duplicates) = writer.finish(&target, &target_cluster.bootstrap_servers()).await;
    println!("cut off from the coordinator: stopped after {released_after:.1?} (session 6 s); 0 lost, {duplicates} duplicated");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exactly_once_flow_moves_whole_to_a_standby_that_fences_the_killed_owner() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("eosgroup");
    let (partitions, per_batch) = (3, 50);
    create_topic(&source, &topic, partitions).await;
    let (properties, alias) = exactly_once_properties(&topic, &clusters.target.bootstrap_servers());
    let properties = format!("{properties}strait.group.id = {}\n{GROUP_KEYS}", unique("eosgroup"));
    let remote = format!("{alias}.{topic}");
    let topics = vec![topic.clone()];
    let writer = Writer::start(&source, &topics, partitions, 0, per_batch);
    let first = Member::start("first", &properties);
    let second = Member::start("second", &properties);
    let all = partitions_of(&topics, partitions);
    // An exactly-once flow is assigned whole: one member holds it, the other stands by.
    let split = settled(&[&first, &second], &all).await;
    let (mut owner, standby) = if split["first"].is_empty() {
        (second, first)
    } else {
        (first, second)
    };
    assert!(
        split[&standby.name].is_empty(),
        "one member holds the whole flow: {split:?}"
    );
    let before = end_offsets(&target, &remote).await;
    wait_until("the owner writing", || async {
        end_offsets(&target, &remote).await > before + 500
    })
    .await;

    // SIGKILL mid-transaction: the standby takes the flow over and fences the owner's producer.
    owner.process.0.kill().unwrap();
    owner.process.0.wait().unwrap();
    let killed_at = Instant::now();
    let moved = settled(&[&standby], &all).await;
    assert_eq!(moved[&standby.name], all);
    let at_move = end_offsets(&target, &remote).await;
    wait_until("the standby writing", || async {
        end_offsets(&target, &remote).await > at_move + 500
    })
    .await;
    let recovery = killed_at.elapsed();

    let batches = writer.stop().await;
    let per_partition = batches * per_batch;
    let total = partitions as usize * per_partition;
    let deadline = Instant::now() + WAIT;
    while committed_records(&target, &remote, partitions).await < total {
        assert!(
            Instant::now() < deadline,
            "not every record was committed: {}",
            tail(&standby.log())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let duplicates = judge_at(
        &clusters.target.bootstrap_servers(),
        std::slice::from_ref(&remote),
        partitions,
        per_partition,
        "read_committed",
    );
    assert_eq!(duplicates, 0, "read_committed sees every record once");
    println!(
        "exactly-once hand-over: writing again {recovery:.1?} after the kill; {total} records, 0 lost, 0 duplicated"
    );
    drop(owner);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebalance_held_up_by_a_frozen_member_does_not_make_the_others_drop_their_partitions() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let prefix = unique("frozen");
    let topics = vec![format!("{prefix}-a")];
    let (partitions, per_batch) = (4, 50);
    create_topic(&source, &topics[0], partitions).await;
    // A longer session than the other tests': the rebalance below waits most of it.
    let properties = mm2_properties(
        &format!("{prefix}-.*"),
        &format!(
            "strait.group.id = {prefix}\nsession.timeout.ms = 10000\nheartbeat.interval.ms = 500\nrebalance.timeout.ms = 30000\n"
        ),
    );
    let writer = Writer::start(&source, &topics, partitions, 0, per_batch);
    let steady = Member::start("steady", &properties);
    let mut frozen = Member::start("frozen", &properties);
    let all = partitions_of(&topics, partitions);
    let before = settled(&[&steady, &frozen], &all).await;

    // SIGSTOP: the frozen member neither heartbeats nor joins. A newcomer starts a rebalance,
    // and the coordinator holds every JoinGroup until the frozen one's session ends (10 s):
    // longer than the two thirds of it after which a member without answers gives up.
    frozen.signal("-STOP");
    let frozen_at = Instant::now();
    let start_ends = remote_ends(&target, &topics, partitions).await;
    let newcomer = Member::start("newcomer", &properties);
    let after = settled(&[&steady, &newcomer], &all).await;
    let held_up = frozen_at.elapsed();
    let end_ends = remote_ends(&target, &topics, partitions).await;
    assert!(
        held_up > Duration::from_secs(7),
        "the rebalance waited for the frozen member's session: {held_up:?}"
    );
    assert!(
        !steady.log().contains("releasing every partition"),
        "the steady member kept its partitions through the long JoinGroup: {}",
        tail(&steady.log())
    );
    for partition in before["steady"].intersection(&after["steady"]) {
        assert!(
            end_ends.get(partition) > start_ends.get(partition),
            "{partition} stayed with the steady member and kept advancing while the group waited"
        );
    }

    // Thawed, the frozen member finds its place gone and gives its partitions up.
    frozen.signal("-CONT");
    wait_until("the thawed member giving its partitions up", || async {
        frozen.group().await.is_some_and(|g| held(&g).is_empty()) && frozen.log().contains("releasing every partition")
    })
    .await;
    let (_, duplicates) = writer.finish(&target, &clusters.target.bootstrap_servers()).await;
    println!(
        "a frozen member held a rebalance up for {held_up:.1?}: nobody else gave up; 0 lost, {duplicates} duplicated"
    );
}

/// The offset map stays bounded in a group of two processes with checkpoints on: each member
/// prunes the partitions it mirrors below the slowest group, every
/// `emit.checkpoints.interval.seconds`. A transactional source makes a segment per
/// transaction (the commit markers are skipped offsets), so each partition's map spans
/// several chunks; once a group commits at the end, `strait_offset_map_bytes` falls.
#[tokio::test(flavor = "multi_thread")]
async fn the_offset_map_is_pruned_below_the_slowest_group_across_the_members() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let prefix = unique("prune");
    let topic = format!("{prefix}-t");
    create_topic(&source, &topic, 2).await;
    let (bootstrap, producer_topic) = (clusters.source.bootstrap_servers(), topic.clone());
    tokio::task::spawn_blocking(move || {
        let mut command = java_program("TxnProducer");
        command.args([&bootstrap, &producer_topic, "900", "2"]);
        run_ok(command)
    })
    .await
    .unwrap();
    let properties = mm2_properties(
        &topic,
        &format!("strait.group.id = {prefix}\n{GROUP_KEYS}emit.checkpoints.interval.seconds = 1\n"),
    );
    let first = Member::start("first", &properties);
    let second = Member::start("second", &properties);
    settled(&[&first, &second], &partitions_of(std::slice::from_ref(&topic), 2)).await;
    let remote = format!("source.{topic}");
    wait_until("the first records mirrored", || async {
        end_offsets(&target, &remote).await > 0
    })
    .await;
    settled_end_offsets(&target, &remote).await;

    // The size of each partition's map as its holder shows it (the other member shows none).
    let sizes = || async {
        let mut sizes = BTreeMap::new();
        for member in [&first, &second] {
            let Some((_, text)) = http_get(member.port, "/metrics").await else {
                continue;
            };
            for partition in 0..2 {
                let labels = [format!("topic=\"{topic}\""), format!("partition=\"{partition}\"")];
                let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                if let Some(bytes) = metric(&text, "strait_offset_map_bytes", &labels) {
                    let size: &mut f64 = sizes.entry(partition).or_default();
                    *size = size.max(bytes);
                }
            }
        }
        sizes
    };
    // More than two chunks of 256 segments each (a byte or two a segment).
    wait_until("each partition's offset map spans chunks", || async {
        let sizes = sizes().await;
        sizes.len() == 2 && sizes.values().all(|&bytes| bytes > 600.0)
    })
    .await;
    let before = sizes().await;

    // A group reads everything: below it nothing needs translating any more.
    let ends = source
        .list_offsets(&topic, &[0, 1], strait_client::OffsetSpec::Latest)
        .await
        .unwrap();
    let committed = ends
        .iter()
        .map(|(&partition, &offset)| {
            let offset = strait_client::CommittedOffset {
                offset,
                metadata: String::new(),
            };
            ((topic.clone(), partition), offset)
        })
        .collect();
    source
        .commit_offsets(&format!("{prefix}-readers"), &committed)
        .await
        .unwrap();
    wait_until("the offset map pruned below the group", || async {
        let sizes = sizes().await;
        sizes.len() == 2 && sizes.iter().all(|(partition, &bytes)| bytes < before[partition] / 2.0)
    })
    .await;
    let after = sizes().await;
    println!("offset map in a group of two: {before:?} bytes before the group advanced, {after:?} after");
    assert!(first.process_alive() && second.process_alive());
}
