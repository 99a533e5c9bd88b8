//! Operating the mirror: `/metrics`, `/status` and `/health` of a running `strait run`,
//! `strait status`, and `strait lag` checked against Kafka's own consumer-groups tool.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::time::Duration;

use strait_tests::*;

use crate::mirror::{check_numbered, write_numbered};

#[tokio::test(flavor = "multi_thread")]
async fn metrics_status_and_health_of_a_running_mirror() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("metrics");
    let group = unique("metrics-group");
    let (partitions, batches, per_batch) = (3, 10, 500);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let first_wave = (partitions as usize * batches * per_batch) as i64;
    // A consumer group with positions, so that checkpoints (and their latency) exist.
    let positions = (0..partitions).map(|p| ((topic.clone(), p), committed(100))).collect();
    source.commit_offsets(&group, &positions).await.unwrap();

    let port = free_port();
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    let extra = format!("strait.http.listener = 127.0.0.1:{port}\nemit.checkpoints.interval.seconds = 1\n");
    std::fs::write(&config, mm2_properties(&topic, &extra)).unwrap();
    let mirror = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
    let remote = format!("source.{topic}");
    let records_of = |text: &str| {
        metric(
            text,
            "kafka_connect_mirror_source_connector_record_count_total",
            &[&format!("topic=\"{remote}\"")],
        )
        .unwrap_or(0.0)
    };

    wait_until("the first wave mirrored, as /metrics counts it", || async {
        http_get(port, "/metrics")
            .await
            .is_some_and(|(_, text)| records_of(&text) == first_wave as f64)
    })
    .await;
    let before = scrape(port).await;
    // The counters move with new data, and the lag falls back to zero.
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let total = 2 * first_wave;
    wait_until("the second wave mirrored, and no lag left", || async {
        let Some((_, text)) = http_get(port, "/metrics").await else {
            return false;
        };
        let lag = metric(
            &text,
            "strait_replication_lag_records",
            &[&format!("topic=\"{remote}\"")],
        );
        records_of(&text) == total as f64 && lag == Some(0.0)
    })
    .await;
    let after = scrape(port).await;
    let topic_label = format!("topic=\"{remote}\"");
    for name in [
        "kafka_connect_mirror_source_connector_byte_count_total",
        "kafka_connect_mirror_source_connector_replication_latency_ms_max",
        "kafka_connect_mirror_source_connector_record_age_ms_avg",
    ] {
        let (old, new) = (
            metric(&before, name, &[&topic_label]).unwrap_or(0.0),
            metric(&after, name, &[&topic_label]).unwrap_or(0.0),
        );
        assert!(new > 0.0, "{name} is {new}\n{after}");
        if name.ends_with("_total") {
            assert!(new > old, "{name} did not move: {old} -> {new}");
        }
    }
    assert!(
        metric(
            &after,
            "kafka_connect_mirror_source_connector_record_rate",
            &[&topic_label]
        )
        .unwrap()
            > 0.0
    );
    for api in ["Fetch", "Produce"] {
        let count = metric(
            &after,
            "strait_request_latency_seconds_count",
            &[&format!("api=\"{api}\"")],
        );
        assert!(count.unwrap_or(0.0) > 0.0, "{api} latency histogram: {count:?}");
    }
    assert_eq!(
        metric(&after, "strait_flow_up", &["source=\"source\"", "target=\"target\""]),
        Some(1.0)
    );
    wait_until("checkpoint latency of the group", || async {
        http_get(port, "/metrics").await.is_some_and(|(_, text)| {
            metric(
                &text,
                "kafka_connect_mirror_checkpoint_connector_checkpoint_latency_ms_max",
                &[&format!("group=\"{group}\""), &topic_label],
            )
            .is_some()
        })
    })
    .await;
    // The group's checkpoints translate exactly, and the offset map of each partition (one
    // segment: contiguous batches) takes a few bytes.
    let map_label = format!("topic=\"{topic}\"");
    wait_until("the offset map's size after a prune", || async {
        http_get(port, "/metrics")
            .await
            .is_some_and(|(_, text)| metric(&text, "strait_offset_map_bytes", &[&map_label]).is_some())
    })
    .await;
    let text = scrape(port).await;
    for partition in 0..partitions {
        let partition_label = format!("partition=\"{partition}\"");
        let rereads = metric(
            &text,
            "strait_checkpoint_rereads",
            &[&format!("group=\"{group}\""), &topic_label, &partition_label],
        );
        assert_eq!(rereads, Some(0.0), "partition {partition}");
        let bytes = metric(&text, "strait_offset_map_bytes", &[&map_label, &partition_label]);
        assert!(
            bytes.is_some_and(|b| b > 0.0 && b < 64.0),
            "partition {partition}: {bytes:?}"
        );
    }

    let (code, status) = http_get(port, "/status").await.unwrap();
    assert_eq!(code, 200);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let flow = &status["flows"][0];
    assert_eq!(flow["flow"], "source->target");
    assert_eq!(flow["state"], "running");
    let mine: Vec<&serde_json::Value> = flow["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["topic"] == topic.as_str())
        .collect();
    assert_eq!(mine.len(), partitions as usize, "{flow}");
    for partition in mine {
        assert_eq!(partition["state"], "running");
        assert_eq!(partition["lag_records"], 0);
        assert_eq!(partition["position"], total / partitions as i64);
        assert_eq!(partition["remote_topic"], remote.as_str());
    }
    assert_eq!(http_get(port, "/health").await, Some((200, "ok\n".into())));
    assert_eq!(http_get(port, "/nothing").await.map(|r| r.0), Some(404));

    // `strait status` reads the same from the clusters: the mirror heartbeats, and once the
    // progress is stored (every second) nothing is behind.
    let status = || strait_json(&[OsStr::new("status"), config.as_os_str(), OsStr::new("--json")]);
    wait_until("`strait status` to show no lag", || async {
        status()["flows"][0]["lag"] == 0
    })
    .await;
    let report = status();
    let flow = &report["flows"][0];
    assert_eq!(flow["state"], "running", "{report}");
    // The topic's partitions, and `heartbeats` if the source has one (always replicated).
    assert!(flow["partitions"].as_i64() >= Some(partitions.into()), "{report}");
    assert_eq!(flow["partitions_started"], flow["partitions"], "{report}");
    // Present, and recent: `None < Some(_)` would let a missing field pass a plain comparison.
    let heartbeat_age = flow["heartbeat_age_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("no heartbeat age: {report}"));
    assert!((0..10_000).contains(&heartbeat_age), "{report}");

    assert!(mirror.terminate(), "a clean stop exits 0");
    let _ = std::fs::remove_file(&config);
    // Both waves carry the same numbers, so count: nothing lost, nothing doubled.
    assert_eq!(end_offsets(&target, &remote).await, total);
}

/// The JSON `strait <args>` prints.
pub(crate) fn strait_json(args: &[&OsStr]) -> serde_json::Value {
    let output = run_ok({
        let mut command = std::process::Command::new(strait_binary());
        command.args(args);
        command
    });
    serde_json::from_slice(&output.stdout).expect("JSON output")
}

/// `kafka-consumer-groups --describe` of `group`: LAG by partition of `topic`.
fn consumer_groups_lag(group: &str, topic: &str) -> BTreeMap<i32, i64> {
    let output = java_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &[
            "--bootstrap-server",
            &clusters().source.bootstrap_servers(),
            "--describe",
            "--group",
            group,
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut columns: Vec<&str> = Vec::new();
    let mut lags = BTreeMap::new();
    for line in stdout.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.first() == Some(&"GROUP") {
            columns = cells;
        } else if cells.len() == columns.len() && !columns.is_empty() {
            let cell = |name| cells[columns.iter().position(|c| *c == name).expect(name)];
            if cell("TOPIC") == topic {
                lags.insert(cell("PARTITION").parse().unwrap(), cell("LAG").parse().unwrap());
            }
        }
    }
    lags
}

#[tokio::test(flavor = "multi_thread")]
async fn strait_lag_matches_the_consumer_groups_tool() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("lag");
    let (partitions, batches, per_batch) = (3, 4, 250);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let mirrored = (partitions as usize * batches * per_batch) as i64;
    let properties = mm2_properties(&topic, "");
    let mirror = start_mirror(&properties);
    wait_until_complete(&target, &format!("source.{topic}"), mirrored).await;
    mirror.stop().await.unwrap();
    // New data the stopped mirror has not seen: 1, 2 and 3 batches per partition.
    for partition in 0..partitions {
        for _ in 0..=partition {
            write_numbered_partition(&source, &topic, partition, per_batch).await;
        }
    }
    let behind = (1 + 2 + 3) * per_batch as i64;

    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, &properties).unwrap();
    let report = strait_json(&[OsStr::new("lag"), config.as_os_str(), OsStr::new("--json")]);
    let lags: Vec<&serde_json::Value> = report["flows"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["topic"] == topic.as_str())
        .collect();
    assert_eq!(lags.len(), partitions as usize, "{report}");
    let strait: BTreeMap<i32, i64> = lags
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap() as i32, p["lag"].as_i64().unwrap()))
        .collect();
    assert_eq!(strait.values().sum::<i64>(), behind, "{report}");
    // The unmirrored records were written seconds ago: their age is the lag in seconds.
    for lag in &lags {
        let seconds = lag["lag_seconds"]
            .as_f64()
            .unwrap_or_else(|| panic!("lag_seconds in {lag}"));
        assert!((0.0..600.0).contains(&seconds), "{lag}");
    }

    // The same positions committed for a consumer group: Kafka's tool must see the same lag.
    let group = unique("lag-group");
    let positions = lags
        .iter()
        .map(|p| {
            let key = (topic.clone(), p["partition"].as_i64().unwrap() as i32);
            (key, committed(p["position"].as_i64().unwrap()))
        })
        .collect();
    source.commit_offsets(&group, &positions).await.unwrap();
    let kafka = tokio::task::spawn_blocking({
        let (group, topic) = (group.clone(), topic.clone());
        move || consumer_groups_lag(&group, &topic)
    })
    .await
    .unwrap();
    println!("strait lag {strait:?}, kafka-consumer-groups {kafka:?}");
    assert_eq!(strait, kafka);

    // The human table says the same.
    let output = run_ok({
        let mut command = std::process::Command::new(strait_binary());
        command.arg("lag").arg(&config);
        command
    });
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.starts_with("FLOW"), "{table}");
    let row = table
        .lines()
        .find(|l| l.contains(&topic) && l.split_whitespace().nth(2) == Some("2"))
        .unwrap_or_else(|| panic!("partition 2 of {topic} in\n{table}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[6], (3 * per_batch).to_string(), "LAG in {row}");
    assert!(columns[7].parse::<f64>().is_ok(), "LAG-SECONDS in {row}");
    let _ = std::fs::remove_file(&config);
}

fn committed(offset: i64) -> strait_client::CommittedOffset {
    strait_client::CommittedOffset {
        offset,
        metadata: String::new(),
    }
}

/// Writes `records` more numbered-style records to one partition.
async fn write_numbered_partition(client: &strait_client::KafkaClient, topic: &str, partition: i32, records: usize) {
    let mut builder = strait_wire::RecordBatchBuilder::new();
    for n in 0..records {
        builder.push(None, Some(bytes::Bytes::from(format!("late-{n}"))), vec![], now_ms());
    }
    client.produce(topic, partition, vec![builder.build()]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flow_waits_for_an_unreachable_cluster() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let topic = unique("late-target");
    create_topic(&source, &topic, 2).await;
    write_numbered(&source, &topic, 2, 5, 100).await;
    // The target is reached through a proxy that refuses connections until it gets an upstream.
    let proxy = strait_testkit::FaultProxy::start().await;
    let properties = mm2_properties(&topic, "").replace(
        &clusters.target.bootstrap_servers(),
        &format!("127.0.0.1:{}", proxy.port()),
    );
    let mirror = start_mirror(&properties);
    // A failed attempt to connect shows in the state; a flow that gave up would end instead.
    wait_until("a failed attempt to reach the target", || async {
        mirror.stats().state().1.is_some() || mirror.is_finished()
    })
    .await;
    assert!(!mirror.is_finished(), "the flow must wait, not end");
    assert_eq!(mirror.stats().state().0, strait_mirror::FlowState::Starting);
    // The target comes up (bootstrap through the proxy; the brokers' own address after that).
    proxy.set_upstream(clusters.target.bootstrap_servers().parse().unwrap());
    let target = client(&clusters.target).await;
    let remote = format!("source.{topic}");
    wait_until_complete(&target, &remote, 1000).await;
    assert_eq!(mirror.stats().state().0, strait_mirror::FlowState::Running);
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, 2, 500).await;
    assert_eq!(duplicates, 0);
}

/// On a terminal, `strait run` redraws one progress line; `script` (util-linux) gives it one.
#[tokio::test(flavor = "multi_thread")]
async fn strait_run_on_a_terminal_draws_a_progress_line() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("terminal");
    create_topic(&source, &topic, 1).await;
    write_numbered(&source, &topic, 1, 5, 200).await;
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, mm2_properties(&topic, "")).unwrap();
    let screen = std::env::temp_dir().join(format!("{topic}.screen"));
    let command = format!("exec {} run {}", strait_binary().display(), config.display());
    let script = std::process::Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&screen).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting `script` (util-linux) to give strait a terminal");
    // Dropping it kills `script`; the terminal closes and strait, its session leader, gets SIGHUP.
    let terminal = StraitProcess(script);
    wait_until_complete(&target, &format!("source.{topic}"), 1000).await;
    // Each redraw returns to the line's start and clears it. The line wanted counts at least
    // this test's 1 000 records (the flow also mirrors the source's heartbeats, if any).
    let caught_up = |text: &str| {
        text.split("\r\x1b[2K").skip(1).any(|line| {
            let mirrored = line.split(' ').next().and_then(|n| n.parse::<f64>().ok());
            line.ends_with("| lag 0 records, caught up")
                && line.contains(" records, ")
                && line.contains(" mirrored | ")
                && (mirrored.is_some_and(|n| n >= 1000.0) || line.contains(" k records, "))
        })
    };
    wait_until("the progress line to show the 1 000 records and no lag", || async {
        caught_up(&std::fs::read_to_string(&screen).unwrap_or_default())
    })
    .await;
    drop(terminal);
    let text = std::fs::read_to_string(&screen).unwrap();
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&screen);
    assert!(text.contains("lag not known yet, starting"), "{text:?}");
}

/// Both clusters go away (killed) under a running `strait run` mid-transfer (one cluster plays
/// both here): its heartbeats show as failing in `/status` and `/health`, and SIGTERM still ends it within the
/// bound of `task.shutdown.graceful.timeout.ms`, non-zero, saying what it could not store.
#[tokio::test(flavor = "multi_thread")]
async fn shutdown_is_bounded_when_the_clusters_are_gone() {
    let cluster = tokio::task::spawn_blocking(|| strait_testkit::KafkaCluster::start("gone").unwrap())
        .await
        .unwrap();
    let own = client(&cluster).await;
    let topic = unique("gone");
    create_topic(&own, &topic, 2).await;
    write_numbered(&own, &topic, 2, 5, 100).await;
    let port = free_port();
    let grace = Duration::from_secs(2);
    let properties = format!(
        "clusters = source, target\n\
         source.bootstrap.servers = {servers}\n\
         target.bootstrap.servers = {servers}\n\
         source->target.enabled = true\n\
         source->target.topics = {topic}\n\
         replication.factor = 1\n\
         emit.heartbeats.interval.seconds = 1\n\
         task.shutdown.graceful.timeout.ms = {}\n\
         strait.http.listener = 127.0.0.1:{port}\n",
        grace.as_millis(),
        servers = cluster.bootstrap_servers(),
    );
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    let log = std::env::temp_dir().join(format!("{topic}.log"));
    std::fs::write(&config, properties).unwrap();
    let mut mirror = StraitProcess(
        std::process::Command::new(strait_binary())
            .args([OsStr::new("run"), config.as_os_str()])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting strait"),
    );
    wait_until_complete(&own, &format!("source.{topic}"), 1000).await;
    wait_until("both flows' heartbeats running in /status", || async {
        let Some((200, body)) = http_get(port, "/status").await else {
            return false;
        };
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        status["flows"].as_array().is_some_and(|flows| {
            flows.len() == 2 && flows.iter().all(|f| f["tasks"]["heartbeats"]["state"] == "running")
        })
    })
    .await;

    // Records keep coming until the cluster dies, so that positions acknowledged since the last
    // flush (every second) are certain to be unstored when it does.
    let writing = tokio::spawn({
        let own = own.clone();
        let topic = topic.clone();
        async move {
            let mut written = 0usize;
            loop {
                let mut builder = strait_wire::RecordBatchBuilder::new();
                for n in 0..10 {
                    builder.push(
                        None,
                        Some(bytes::Bytes::from(format!("more-{written}-{n}"))),
                        vec![],
                        now_ms(),
                    );
                }
                if own.produce(&topic, 0, vec![builder.build()]).await.is_err() {
                    return written;
                }
                written += 10;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    wait_until("the mirror taking the records written meanwhile", || async {
        own.list_offsets(&format!("source.{topic}"), &[0], strait_client::OffsetSpec::Latest)
            .await
            .is_ok_and(|ends| ends.get(&0).is_some_and(|&end| end > 600))
    })
    .await;
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.kill_broker();
        cluster
    })
    .await
    .unwrap();
    let written = tokio::time::timeout(Duration::from_secs(60), writing)
        .await
        .expect("the writer ends with the cluster")
        .unwrap();
    assert!(written > 0, "records were written up to the kill");
    // Each flow's heartbeats fail, or (after two thirds of session.timeout.ms without its group
    // coordinator) the process gives its share up and says so.
    wait_until(
        "the heartbeats failing or the group cut off in /status, and /health unhealthy",
        || async {
            let Some((200, body)) = http_get(port, "/status").await else {
                return false;
            };
            let status: serde_json::Value = serde_json::from_str(&body).unwrap();
            let cut_off = |flow: &serde_json::Value| {
                status["groups"].as_array().is_some_and(|groups| {
                    groups
                        .iter()
                        .any(|g| g["cluster"] == flow["target"] && g["cut_off"].is_string())
                })
            };
            let failing = status["flows"].as_array().is_some_and(|flows| {
                flows.iter().all(|f| {
                    (f["tasks"]["heartbeats"]["state"] == "failing"
                        && f["tasks"]["heartbeats"]["last_error"].is_string())
                        || cut_off(f)
                })
            });
            failing && http_get(port, "/health").await.is_some_and(|(code, _)| code == 503)
        },
    )
    .await;

    let stopping = std::time::Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &mirror.0.id().to_string()])
        .status()
        .unwrap();
    // The drain, the last offset syncs and the last progress get `grace` each; everything else
    // (a periodic flush, heartbeats, discovery) is cut short by the signal. Against a cluster
    // that is gone, each of those writes would otherwise retry for `request.timeout.ms` (30 s).
    let bound = 3 * grace + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = mirror.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopping.elapsed() < bound,
            "strait run still running {:?} after SIGTERM; its log:\n{}",
            stopping.elapsed(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let took = stopping.elapsed();
    let text = std::fs::read_to_string(&log).unwrap();
    println!("stopped {took:?} after SIGTERM with {status}");
    assert!(
        !status.success(),
        "what could not be stored makes the exit non-zero; log:\n{text}"
    );
    assert!(
        text.contains("write did not finish within 2s (task.shutdown.graceful.timeout.ms)"),
        "the log says what could not be stored, and by which key's bound:\n{text}"
    );
    drop(cluster);
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&log);
}
