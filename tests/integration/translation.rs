//! Exact offset translation at any lag, through restarts and a crash, and `strait cutover`:
//! judged record by record by real Java consumer groups, and by MM2's `RemoteClusterUtils`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::process::{Output, Stdio};

use bytes::Bytes;
use strait_client::KafkaClient;
use strait_tests::*;
use strait_wire::{Compression, RecordBatchBuilder};

use crate::checkpoints::{consume_partitions, remote_cluster_utils};

const PER_BATCH: i64 = 200;
/// Records already in the remote topic before mirroring starts, so that target offsets differ
/// from source offsets.
const SHIFT: i64 = 37;
/// Where the groups stop on the source: inside lz4 batches, the first far behind the end.
const STOPS: [i64; 3] = [777, 50_001, 150_003];

/// Writes the values `v<n>` for `n` in `from..to` to partition 0, in lz4 batches.
async fn write(client: &KafkaClient, topic: &str, from: i64, to: i64) {
    write_prefixed(client, topic, "v", from, to).await;
}

/// Writes the values `<prefix><n>` for `n` in `from..to` to partition 0, in lz4 batches.
async fn write_prefixed(client: &KafkaClient, topic: &str, prefix: &str, from: i64, to: i64) {
    for start in (from..to).step_by(PER_BATCH as usize) {
        let mut builder = RecordBatchBuilder::new().compression(Compression::Lz4);
        for n in start..(start + PER_BATCH).min(to) {
            builder.push(None, Some(Bytes::from(format!("{prefix}{n}"))), vec![], now_ms());
        }
        client.produce(topic, 0, vec![builder.build()]).await.unwrap();
    }
}

/// Writes `count` junk records to partition 0, so that a topic's offsets differ from its
/// mirror's.
async fn write_junk(client: &KafkaClient, topic: &str, count: i64) {
    let mut junk = RecordBatchBuilder::new();
    for i in 0..count {
        junk.push(None, Some(Bytes::from(format!("junk-{i}"))), vec![], now_ms());
    }
    client.produce(topic, 0, vec![junk.build()]).await.unwrap();
}

/// `v<n>` → `n`; anything else (the junk in front) → `None`.
fn number(value: &str) -> Option<i64> {
    value.strip_prefix('v')?.parse().ok()
}

/// `strait <args>`, to completion.
fn strait(args: &[&OsStr]) -> Output {
    std::process::Command::new(strait_binary())
        .args(args)
        .output()
        .expect("running strait")
}

/// The mirror's stored position in the source partition (every offset below it is mirrored).
async fn stored_position(target: &KafkaClient, topic: &str) -> i64 {
    strait_mirror::ProgressStore::read(target, "source", "target")
        .await
        .unwrap()
        .and_then(|progress| progress.last_replicated(topic, 0))
        .map_or(0, |last| last + 1)
}

/// What a consumer starting at target offset `at` of `log` (the remote partition's values, in
/// order) reads, checked against the source records it had not read yet (`from..end`): returns
/// how many it re-reads (below `from`) and skips, and how many crash duplicates it meets.
fn reading_from(log: &[Option<i64>], at: usize, from: i64, end: i64) -> (usize, usize, usize) {
    let read: Vec<i64> = log[at..]
        .iter()
        .map(|v| v.expect("no junk after the first record"))
        .collect();
    judge(&read, from, end)
}

/// Re-read (below `from`), skipped (in `from..end` but not read) and duplicated records.
fn judge(read: &[i64], from: i64, end: i64) -> (usize, usize, usize) {
    let rereads = read.iter().filter(|&&n| n < from).count();
    let distinct: BTreeSet<i64> = read.iter().copied().filter(|&n| n >= from).collect();
    let skipped = (from..end).filter(|n| !distinct.contains(n)).count();
    let duplicates = read.len() - rereads - distinct.len();
    (rereads, skipped, duplicates)
}

/// One partition of lz4 batches, mirrored by two runs stopped cleanly and one SIGKILLed mid-
/// transfer (the next run resumes past what the target acknowledged, sending nothing twice);
/// three real groups stopped inside batches, the first more than 100 000 records behind. Their
/// checkpoints, `strait translate` and MM2's `RemoteClusterUtils` give the exact target offset
/// of the first record each did not read; `strait cutover --dry-run` writes nothing, `strait
/// cutover` refuses while a member is active and then commits those offsets; the groups' Java
/// consumers then read on the target what they had not read on the source, with nothing re-read
/// and nothing skipped.
#[tokio::test(flavor = "multi_thread")]
async fn groups_fail_over_exactly_at_any_lag_after_restarts_and_a_crash() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("exact");
    let remote = format!("source.{topic}");
    create_topic(&source, &topic, 1).await;
    create_topic(&target, &remote, 1).await;
    write_junk(&target, &remote, SHIFT).await;
    let properties = mm2_properties(&topic, "emit.checkpoints.interval.seconds = 1");
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, &properties).unwrap();

    // Two runs, each stopped cleanly once it has mirrored what was written.
    let mut written = 0;
    for _ in 0..2 {
        write(&source, &topic, written, written + 60_000).await;
        written += 60_000;
        let mirror = start_mirror(&properties);
        wait_until_complete(&target, &remote, SHIFT + written).await;
        mirror.stop().await.unwrap();
    }
    // A `strait run` SIGKILLed mid-transfer, with records acknowledged by the target after its
    // last stored position (killed again if a kill happened to follow a flush). The next run
    // finds them on the target and does not send them again.
    for attempt in 0.. {
        assert!(attempt < 5, "5 SIGKILLs in a row each followed a flush");
        let run = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
        write(&source, &topic, written, written + 40_000).await;
        written += 40_000;
        wait_until("the killed run's records arriving", || async {
            end_offsets(&target, &remote).await >= SHIFT + written - 20_000
        })
        .await;
        drop(run); // SIGKILL
        let landed = settled_end_offsets(&target, &remote).await;
        let ahead = landed - SHIFT - stored_position(&target, &topic).await;
        println!("{written} records written; the killed run landed {ahead} after its last stored position");
        if ahead > 0 {
            break;
        }
    }
    // Real groups stop on the source, inside batches.
    let mut groups = Vec::new();
    for stop in STOPS {
        let group = unique(&format!("group-{stop}"));
        let read = consume_partitions(
            clusters.source.bootstrap_servers(),
            topic.clone(),
            group.clone(),
            1,
            stop,
        )
        .await;
        assert_eq!(read.last().map(String::as_str), Some(format!("v{}", stop - 1).as_str()));
        groups.push((group, stop));
    }
    let run = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
    wait_until_complete(&target, &remote, SHIFT + written).await;
    let log: Vec<Option<i64>> = read_records(&target, &remote, 0)
        .await
        .iter()
        .map(|(_, value, _, _)| value.as_deref().and_then(|v| number(std::str::from_utf8(v).unwrap())))
        .collect();
    assert_eq!(
        log.len() as i64,
        SHIFT + written,
        "nothing mirrored twice after the SIGKILL"
    );

    // `strait translate`: each group's exact target offset, once the running mirror has
    // stored the offset map of what it acknowledged last.
    let mut translated = Vec::new();
    for (group, stop) in &groups {
        let translate = || {
            let output = strait(&[
                OsStr::new("translate"),
                config.as_os_str(),
                OsStr::new("--group"),
                OsStr::new(group),
                OsStr::new("--json"),
            ]);
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            let entries: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            entries.as_array().unwrap()[0].clone()
        };
        wait_until(&format!("an exact translation of {group}"), || async {
            translate()["exact"] == true
        })
        .await;
        let entry = &translate();
        assert_eq!(
            (entry["topic"].as_str(), entry["sourceOffset"].as_i64()),
            (Some(remote.as_str()), Some(*stop))
        );
        assert_eq!(entry["exact"], true, "{entry}");
        let offset = entry["offset"].as_i64().unwrap();
        let (rereads, skipped, _) = reading_from(&log, offset as usize, *stop, written);
        println!("{group} stopped at {stop}: target offset {offset}, {rereads} re-read, {skipped} skipped");
        assert_eq!((rereads, skipped), (0, 0), "{group} at {stop}: translated to {offset}");
        assert_eq!(log[offset as usize], Some(*stop), "the same record");
        translated.push(offset);
    }

    // The checkpoints say the same, and MM2's own client reads them so.
    wait_until("every group's checkpoint at its exact offset", || async {
        let Ok(all) = strait_mirror::read_checkpoints(&target, "target", "source.checkpoints.internal").await else {
            return false;
        };
        groups.iter().zip(&translated).all(|((group, stop), offset)| {
            all.iter()
                .any(|c| &c.group == group && c.upstream_offset == *stop && c.downstream_offset == *offset)
        })
    })
    .await;
    for ((group, _), offset) in groups.iter().zip(&translated) {
        let answers = remote_cluster_utils(group).await;
        assert_eq!(
            answers[&format!("offset {remote} 0")],
            offset.to_string(),
            "{answers:?}"
        );
    }

    // A dry run writes nothing.
    let group_args: Vec<&OsStr> = groups
        .iter()
        .flat_map(|(group, _)| [OsStr::new("--group"), OsStr::new(group)])
        .collect();
    let cutover = |extra: &[&OsStr]| {
        let mut args = vec![OsStr::new("cutover"), config.as_os_str()];
        args.extend_from_slice(&group_args);
        args.extend_from_slice(extra);
        strait(&args)
    };
    let output = cutover(&[OsStr::new("--dry-run")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("would commit") && stdout.contains("nothing was written"),
        "{stdout}"
    );
    assert!(
        stdout.contains("quiet"),
        "the source topic is no longer written: {stdout}"
    );
    for (group, _) in &groups {
        let committed = target.committed_offsets(group).await.unwrap();
        assert!(committed.is_empty(), "a dry run committed {committed:?} for {group}");
    }

    // A member active on the target: the cutover is refused, naming it, and commits nothing.
    let (active, _) = &groups[0];
    let mut member = strait_testkit::KafkaDist::get()
        .unwrap()
        .java("org.apache.kafka.tools.consumer.ConsoleConsumer")
        .args([
            "--bootstrap-server",
            &clusters.target.bootstrap_servers(),
            "--topic",
            &remote,
        ])
        .args(["--group", active, "--consumer-property", "enable.auto.commit=false"])
        .args(["--consumer-property", "client.id=cutover-blocker"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the member to join on the target", || async {
        target.describe_group(active).await.is_ok_and(|d| !d.members.is_empty())
    })
    .await;
    let output = cutover(&[OsStr::new("--timeout"), OsStr::new("30")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "refused while a member is active");
    assert!(
        stderr.contains(&format!("group {active} has active members on target")) && stderr.contains("cutover-blocker"),
        "{stderr}"
    );
    for (group, _) in &groups {
        assert!(target.committed_offsets(group).await.unwrap().is_empty(), "{group}");
    }
    // SIGTERM: the console consumer leaves the group as it closes.
    std::process::Command::new("kill")
        .args(["-TERM", &member.id().to_string()])
        .status()
        .unwrap();
    let _ = member.wait();
    wait_until("the member to leave", || async {
        target.describe_group(active).await.is_ok_and(|d| d.members.is_empty())
    })
    .await;

    // The cutover commits the exact offsets; the groups' consumers go on at the target.
    let output = cutover(&[OsStr::new("--timeout"), OsStr::new("60")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("committed:") && stdout.contains("next:"), "{stdout}");
    assert!(run.terminate(), "the last run stops cleanly");
    for ((group, stop), offset) in groups.iter().zip(&translated) {
        let committed = target.committed_offsets(group).await.unwrap();
        assert_eq!(committed[&(remote.clone(), 0)].offset, *offset, "{group}");
        let read: Vec<i64> = consume_partitions(
            clusters.target.bootstrap_servers(),
            remote.clone(),
            group.clone(),
            1,
            -1,
        )
        .await
        .iter()
        .map(|v| number(v).expect("only mirrored records after the group's offset"))
        .collect();
        let (rereads, skipped, crash_duplicates) = judge(&read, *stop, written);
        println!(
            "{group}: read {} on the target after {stop} on the source: {rereads} re-read, {skipped} skipped, \
             {crash_duplicates} duplicates from the mirror's crash",
            read.len()
        );
        assert_eq!(
            read.first(),
            Some(stop),
            "{group} starts with the first record it had not read"
        );
        assert_eq!((rereads, skipped), (0, 0), "{group}");
    }
    let _ = std::fs::remove_file(&config);
}

/// Consumes with the Java client as `group` (it commits after what it read): the numbers of the
/// values read, which must all carry `prefix`.
async fn consume_numbers(bootstrap: String, topic: &str, group: &str, prefix: &str, limit: i64) -> Vec<i64> {
    consume_partitions(bootstrap, topic.to_owned(), group.to_owned(), 1, limit)
        .await
        .iter()
        .map(|v| {
            v.strip_prefix(prefix)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{topic}: read {v:?}, not a {prefix}<n> record"))
        })
        .collect()
}

/// A full cycle in an active-active setup: a group moves to the target with `strait cutover`,
/// reads there (the mirrored topic, and a topic its producers now write on the target), moves
/// back with `strait failback` (the mirrored topic through the inverse of the offset map, the
/// target's topic through the reverse flow's), and reads on the source: every record of both
/// topics read exactly once over the cycle.
#[tokio::test(flavor = "multi_thread")]
async fn a_cutover_and_failback_cycle_reads_every_record_once() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("cycle");
    let (remote, back) = (format!("source.{topic}"), format!("target.{topic}"));
    create_topic(&source, &topic, 1).await;
    create_topic(&target, &topic, 1).await;
    // Junk in front of both mirrored copies, so that no offset is the same on both sides.
    create_topic(&target, &remote, 1).await;
    write_junk(&target, &remote, 11).await;
    create_topic(&source, &back, 1).await;
    write_junk(&source, &back, 5).await;
    write_prefixed(&source, &topic, "s", 0, 10_000).await;
    let properties = mm2_properties(
        &topic,
        &format!("target->source.enabled = true\ntarget->source.topics = {topic}"),
    );
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, &properties).unwrap();
    let run = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
    let group = unique("group-cycle");
    let (on_source, on_target) = (clusters.source.bootstrap_servers(), clusters.target.bootstrap_servers());

    // On the source: the first 3 333 records.
    let mut read_s = consume_numbers(on_source.clone(), &topic, &group, "s", 3_333).await;
    wait_until_complete(&target, &remote, 11 + 10_000).await;
    let moving = |command: &str, to: &str| {
        strait(&[
            OsStr::new(command),
            config.as_os_str(),
            OsStr::new("--group"),
            OsStr::new(&group),
            OsStr::new("--to"),
            OsStr::new(to),
            OsStr::new("--timeout"),
            OsStr::new("60"),
        ])
    };
    let output = moving("cutover", "target");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    // On the target: 4 000 more of the mirrored topic; its producers now write there too, and
    // the group reads the first 2 222 of that.
    read_s.extend(consume_numbers(on_target.clone(), &remote, &group, "s", 4_000).await);
    write_prefixed(&target, &topic, "t", 0, 5_000).await;
    let mut read_t = consume_numbers(on_target, &topic, &group, "t", 2_222).await;
    wait_until_complete(&source, &back, 5 + 5_000).await;

    // Back to the source.
    let output = moving("failback", "source");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let committed = source.committed_offsets(&group).await.unwrap();
    assert_eq!(committed[&(topic.clone(), 0)].offset, 7_333, "{stdout}");
    assert_eq!(committed[&(back.clone(), 0)].offset, 5 + 2_222, "{stdout}");
    read_s.extend(consume_numbers(on_source.clone(), &topic, &group, "s", -1).await);
    read_t.extend(consume_numbers(on_source, &back, &group, "t", -1).await);
    assert!(run.terminate(), "the mirror stops cleanly");
    let _ = std::fs::remove_file(&config);

    for (name, read, end) in [(&topic, &read_s, 10_000), (&back, &read_t, 5_000)] {
        let (rereads, skipped, duplicates) = judge(read, 0, end);
        assert_eq!(
            (rereads, skipped, duplicates),
            (0, 0, 0),
            "{name}: every record once over the cycle"
        );
        assert!(read.windows(2).all(|w| w[0] < w[1]), "{name}: in order");
    }
}
