//! The mirror against two real clusters: data written by Kafka's own Java clients arrives with
//! identical bytes, aborted transactions do not, new topics are picked up, and neither a killed
//! mirror nor a restarted broker loses a record.

use std::collections::HashMap;
use std::io::Write;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_testkit::KafkaDist;
use strait_tests::*;
use strait_wire::{Header, RecordBatchBuilder};

/// Writes `lines` through Kafka's console producer, which parses `headers<TAB>key<TAB>value`.
fn console_produce(bootstrap: &str, topic: &str, codec: &str, lines: &str) {
    let mut command = KafkaDist::get().unwrap().java("org.apache.kafka.tools.ConsoleProducer");
    command
        .args([
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--compression-codec",
            codec,
        ])
        .args(["--property", "parse.key=true", "--property", "parse.headers=true"])
        .args([
            "--producer-property",
            "linger.ms=50",
            "--producer-property",
            "batch.size=4096",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "console producer: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What Kafka's console consumer prints for `topic` (`headers key value` per line), sorted,
/// since it interleaves partitions.
fn console_consume(bootstrap: &str, topic: &str, records: usize) -> Vec<String> {
    let mut command = KafkaDist::get()
        .unwrap()
        .java("org.apache.kafka.tools.consumer.ConsoleConsumer");
    command
        .args(["--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning"])
        .args(["--max-messages", &records.to_string(), "--timeout-ms", "30000"])
        .args([
            "--property",
            "print.key=true",
            "--property",
            "print.headers=true",
            "--property",
            "print.partition=true",
        ]);
    let output = run_ok(command);
    let mut lines: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn mirrors_java_clients_data_in_every_codec_with_identical_bytes() {
    every_codec(BYTE_PATHS[0]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mirrors_every_codec_with_identical_bytes_over_io_uring() {
    every_codec(BYTE_PATHS[1]).await;
}

async fn every_codec(io: &str) {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let prefix = unique(if io.ends_with("io_uring") {
        "codecs-uring"
    } else {
        "codecs"
    });
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    for codec in codecs {
        let topic = format!("{prefix}-{codec}");
        create_topic(&source, &topic, 2).await;
        let lines: String = (0..400)
            .map(|i| format!("trace:{i},h:x,h:y\tkey-{}\tvalue-{codec}-{i}\n", i % 7))
            .collect();
        let bootstrap = clusters.source.bootstrap_servers();
        tokio::task::spawn_blocking(move || console_produce(&bootstrap, &topic, codec, &lines))
            .await
            .unwrap();
    }
    let bulk = format!("{prefix}-bulk");
    create_topic(&source, &bulk, 3).await;
    let (bootstrap, bulk_topic) = (clusters.source.bootstrap_servers(), bulk.clone());
    tokio::task::spawn_blocking(move || java_produce(&bootstrap, &bulk_topic, 30_000, 300, "zstd"))
        .await
        .unwrap();

    let mirror = start_mirror(&mm2_properties(&format!("{prefix}-.*"), io));
    let mut topics: Vec<(String, i32)> = codecs.iter().map(|c| (format!("{prefix}-{c}"), 2)).collect();
    topics.push((bulk, 3));
    for (topic, _) in &topics {
        let expected = end_offsets(&source, topic).await;
        let remote = format!("source.{topic}");
        wait_until(&format!("{remote} to hold {expected} records"), || async {
            end_offsets(&target, &remote).await >= expected
        })
        .await;
    }
    mirror.stop().await.unwrap();

    for (topic, partitions) in &topics {
        let remote = format!("source.{topic}");
        assert_eq!(
            target.metadata(Some(&[&remote])).await.unwrap().topics[&remote]
                .partitions
                .len() as i32,
            *partitions
        );
        for partition in 0..*partitions {
            let source_batches = read_batches(&source, topic, partition).await;
            let target_batches = read_batches(&target, &remote, partition).await;
            assert_eq!(
                source_batches.len(),
                target_batches.len(),
                "{topic}-{partition}: one target batch per source batch"
            );
            for (s, t) in source_batches.iter().zip(&target_batches) {
                assert_eq!(
                    s.records_payload(),
                    t.records_payload(),
                    "{topic}-{partition}: records section byte for byte"
                );
                assert_eq!(s.compression().unwrap(), t.compression().unwrap());
                assert_eq!(
                    (s.base_timestamp(), s.max_timestamp()),
                    (t.base_timestamp(), t.max_timestamp())
                );
            }
            let (s, t) = (
                read_records(&source, topic, partition).await,
                read_records(&target, &remote, partition).await,
            );
            assert!(!s.is_empty());
            assert_eq!(
                s, t,
                "{topic}-{partition}: keys, values, headers and timestamps in the same order"
            );
        }
    }
    // Kafka's own consumer is the judge: it reads the same records from both sides.
    let (source_bootstrap, target_bootstrap) =
        (clusters.source.bootstrap_servers(), clusters.target.bootstrap_servers());
    let topic = format!("{prefix}-snappy");
    let judged = tokio::task::spawn_blocking(move || {
        (
            console_consume(&source_bootstrap, &topic, 400),
            console_consume(&target_bootstrap, &format!("source.{topic}"), 400),
        )
    })
    .await
    .unwrap();
    assert_eq!(judged.0.len(), 400);
    assert!(judged.0[0].contains("trace:"), "headers are printed: {}", judged.0[0]);
    assert_eq!(judged.0, judged.1);
}

#[tokio::test(flavor = "multi_thread")]
async fn drops_aborted_transactions_under_read_committed() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("txn");
    create_topic(&source, &topic, 2).await;
    let (bootstrap, producer_topic) = (clusters.source.bootstrap_servers(), topic.clone());
    tokio::task::spawn_blocking(move || {
        let mut command = java_program("TxnProducer");
        command.args([&bootstrap, &producer_topic, "9", "50"]);
        run_ok(command)
    })
    .await
    .unwrap();

    let mirror = start_mirror(&mm2_properties(
        &topic,
        "source.consumer.isolation.level = read_committed",
    ));
    // 6 committed transactions of 50 records arrive; nothing of the 3 aborted ones.
    let remote = format!("source.{topic}");
    wait_until("the committed records", || async {
        end_offsets(&target, &remote).await >= 300
    })
    .await;
    let source_end = end_offsets(&source, &topic).await;
    // The mirror has passed everything, aborted data and markers included, once its position
    // is the source end in every partition: whatever it forwarded has been acknowledged then.
    wait_until("the mirrored position at the source end", || async {
        let lag: Vec<_> = mirror.stats().lag().into_iter().filter(|l| l.topic == topic).collect();
        lag.len() == 2 && lag.iter().filter_map(|l| l.position).sum::<i64>() == source_end
    })
    .await;
    mirror.stop().await.unwrap();
    let mut values = Vec::new();
    for partition in 0..2 {
        for (_, value, _, _) in read_records(&target, &remote, partition).await {
            values.push(String::from_utf8(value.unwrap().to_vec()).unwrap());
        }
        for batch in read_batches(&target, &remote, partition).await {
            assert!(
                !batch.is_control() && !batch.is_transactional(),
                "no markers, no transactional batches on the target"
            );
        }
    }
    assert_eq!(values.len(), 300, "exactly the committed records");
    assert!(
        values.iter().all(|v| v.starts_with("commit-")),
        "no aborted record: {values:?}"
    );
    assert!(
        source_end > 450,
        "the source holds the aborted records and markers too ({source_end})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn picks_up_a_topic_created_while_running() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let prefix = unique("late");
    let mirror = start_mirror(&mm2_properties(
        &format!("{prefix}-.*"),
        "refresh.topics.interval.seconds = 1",
    ));
    // The first discovery round has found nothing to mirror: only a later refresh can find
    // the topic created now.
    wait_until("the first topic discovery", || async {
        mirror.stats().discovery_rounds() >= 1
    })
    .await;
    let topic = format!("{prefix}-orders");
    create_topic(&source, &topic, 3).await;
    let mut builder = RecordBatchBuilder::new();
    for i in 0..10 {
        builder.push(
            Some(Bytes::from(format!("k{i}"))),
            Some(Bytes::from(format!("v{i}"))),
            vec![],
            now_ms(),
        );
    }
    source.produce(&topic, 2, vec![builder.build()]).await.unwrap();
    let remote = format!("source.{topic}");
    wait_until("the new topic's records on the target", || async {
        end_offsets(&target, &remote).await == 10
    })
    .await;
    assert_eq!(
        target.metadata(Some(&[&remote])).await.unwrap().topics[&remote]
            .partitions
            .len(),
        3
    );
    assert_eq!(read_records(&target, &remote, 2).await.len(), 10);
    mirror.stop().await.unwrap();
}

/// Writes `batches` batches of `per_batch` records to each partition; values are
/// `p<partition>-<n>` so that the target can be checked for gaps and duplicates.
pub(crate) async fn write_numbered(
    client: &strait_client::KafkaClient,
    topic: &str,
    partitions: i32,
    batches: usize,
    per_batch: usize,
) {
    write_numbered_from(client, topic, partitions, 0, batches, per_batch).await;
}

/// As [`write_numbered`], numbering on from batch `first` (so records start at `first * per_batch`).
pub(crate) async fn write_numbered_from(
    client: &strait_client::KafkaClient,
    topic: &str,
    partitions: i32,
    first: usize,
    batches: usize,
    per_batch: usize,
) {
    let payload = "x".repeat(200);
    for partition in 0..partitions {
        for b in first..first + batches {
            let mut builder = RecordBatchBuilder::new();
            for r in 0..per_batch {
                let n = b * per_batch + r;
                let header = Header {
                    key: Bytes::from("n"),
                    value: Some(Bytes::from(n.to_string())),
                };
                builder.push(
                    None,
                    Some(Bytes::from(format!("p{partition}-{n}-{payload}"))),
                    vec![header],
                    now_ms(),
                );
            }
            client.produce(topic, partition, vec![builder.build()]).await.unwrap();
        }
    }
}

/// A live stream: numbered batches of `per_batch` records to each partition from batch `first`
/// on, one every 20 ms while `writing` holds; ends with the number of the batch after the last.
pub(crate) fn write_numbered_while(
    client: &strait_client::KafkaClient,
    topic: &str,
    partitions: i32,
    first: usize,
    per_batch: usize,
    writing: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<usize> {
    let (client, topic, writing) = (client.clone(), topic.to_owned(), writing.clone());
    tokio::spawn(async move {
        let mut batch = first;
        while writing.load(Ordering::Relaxed) {
            write_numbered_from(&client, &topic, partitions, batch, 1, per_batch).await;
            batch += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        batch
    })
}

/// Checks that every numbered record is on the target in order; returns the duplicates.
pub(crate) async fn check_numbered(
    target: &strait_client::KafkaClient,
    remote: &str,
    partitions: i32,
    per_partition: usize,
) -> usize {
    let mut duplicates = 0;
    for partition in 0..partitions {
        let mut seen: HashMap<usize, usize> = HashMap::new();
        let mut highest = None;
        for (_, value, _, _) in read_records(target, remote, partition).await {
            let value = String::from_utf8(value.unwrap().to_vec()).unwrap();
            let n: usize = value.split('-').nth(1).unwrap().parse().unwrap();
            assert!(
                value.starts_with(&format!("p{partition}-")),
                "record of another partition: {value}"
            );
            // A duplicate run restarts at an earlier number; within a run the order is kept.
            if let Some(h) = highest {
                assert!(
                    n == h + 1 || seen.contains_key(&n),
                    "{remote}-{partition}: {n} follows {h}: a gap"
                );
            }
            highest = Some(highest.map_or(n, |h: usize| h.max(n)));
            *seen.entry(n).or_default() += 1;
        }
        let missing: Vec<usize> = (0..per_partition).filter(|n| !seen.contains_key(n)).collect();
        assert!(
            missing.is_empty(),
            "{remote}-{partition}: lost {} records, first {:?}",
            missing.len(),
            missing.first()
        );
        duplicates += seen.values().map(|c| c - 1).sum::<usize>();
    }
    duplicates
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mirror_killed_with_sigkill_and_restarted_loses_nothing() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("sigkill");
    let (partitions, batches, per_batch) = (3, 300, 200);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;

    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, mm2_properties(&topic, "")).unwrap();
    let remote = format!("source.{topic}");
    // How much the target holds when: each sample is taken after the end offsets were read, so
    // the target held at least that much by then.
    let samples: Arc<Mutex<Vec<(Instant, i64)>>> = Arc::default();
    let sampler = tokio::spawn({
        let (target, remote, samples) = (target.clone(), remote.clone(), samples.clone());
        async move {
            loop {
                let end = end_offsets(&target, &remote).await;
                samples.lock().unwrap().push((Instant::now(), end));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    let mut mirror = std::process::Command::new(strait_binary())
        .arg("run")
        .arg(&config)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Data keeps arriving at the source, so that the mirror is busy when it is killed, however
    // fast it took in the first records.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = tokio::spawn({
        let (source, topic, writing) = (source.clone(), topic.clone(), writing.clone());
        async move {
            // One batch more once told to stop: the restart has something left to mirror.
            let mut batch = batches;
            loop {
                let last = !writing.load(Ordering::Relaxed);
                write_numbered_from(&source, &topic, partitions, batch, 1, per_batch).await;
                batch += 1;
                if last {
                    return batch;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    // The progress is stored every second, and a store started then takes a moment to land:
    // what the restart resumes from is at most 1 s + 1 s old. Kill once the mirror has kept up
    // with the writer for longer than that, past the first records' rush.
    let window = Duration::from_secs(2);
    let first = (partitions as usize * batches * per_batch) as i64;
    wait_until(
        "the mirror keeping up with the writer for longer than the window",
        || async {
            let samples = samples.lock().unwrap();
            let since = samples.iter().find(|(_, end)| *end >= first).map(|(at, _)| *at);
            since.is_some_and(|at| at.elapsed() > window + Duration::from_millis(500))
        },
    )
    .await;
    mirror.kill().unwrap(); // SIGKILL: no drain, no final progress flush.
    let killed = Instant::now();
    mirror.wait().unwrap();
    writing.store(false, Ordering::Relaxed);
    let batches = writer.await.unwrap();
    sampler.abort();
    let total = (partitions as usize * batches * per_batch) as i64;
    // What the killed mirror wrote, including the batches it had in flight.
    let at_kill = settled_end_offsets(&target, &remote).await;
    assert!(
        at_kill < total,
        "the kill must land mid-transfer ({at_kill} of {total} already there)"
    );
    // Only what reached the target in the window before the kill, or after it (in flight),
    // may come twice.
    let before_window = samples
        .lock()
        .unwrap()
        .iter()
        .filter(|(at, _)| *at + window <= killed)
        .map(|&(_, end)| end)
        .max()
        .expect("samples from before the window");
    let bound = at_kill - before_window;

    let mut mirror = std::process::Command::new(strait_binary())
        .arg("run")
        .arg(&config)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Duplicates make the count pass `total` early: wait until it stops growing too.
    wait_until_complete(&target, &remote, total).await;
    // SIGTERM: a clean stop that drains and stores the progress.
    std::process::Command::new("kill")
        .args(["-TERM", &mirror.id().to_string()])
        .status()
        .unwrap();
    assert!(mirror.wait().unwrap().success(), "a clean stop exits 0");
    let _ = std::fs::remove_file(&config);

    let duplicates = check_numbered(&target, &remote, partitions, batches * per_batch).await;
    println!(
        "sigkill: {total} records, killed at {at_kill} ({before_window} there {window:?} before), {duplicates} \
         duplicates after the restart"
    );
    assert!(
        duplicates as i64 <= bound,
        "{duplicates} duplicates, but only {bound} records reached the target in the {window:?} before the kill \
         or after it"
    );
}

/// A `strait run` SIGKILLed again and again under a live stream, as a systemd unit with
/// `group.instance.id` restarts it: Kafka's console consumer finds every record on the target
/// exactly once. What the target acknowledged past the stored progress at each kill is
/// recognised at the restart, not sent again.
#[tokio::test(flavor = "multi_thread")]
async fn a_mirror_killed_again_and_again_under_a_live_stream_writes_nothing_twice() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("sigkills");
    let (partitions, per_batch, kills) = (3, 100, 6);
    create_topic(&source, &topic, partitions).await;
    let remote = format!("source.{topic}");
    let port = free_port();
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    let extra = format!(
        "group.instance.id = {}\nstrait.http.listener = 127.0.0.1:{port}\n",
        unique("mirror")
    );
    std::fs::write(&config, mm2_properties(&topic, &extra)).unwrap();
    let log = std::env::temp_dir().join(format!("{topic}.log"));
    let start = || {
        StraitProcess(
            std::process::Command::new(strait_binary())
                .args([std::ffi::OsStr::new("run"), config.as_os_str()])
                .stdout(Stdio::null())
                .stderr(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&log)
                        .unwrap(),
                )
                .spawn()
                .expect("starting strait"),
        )
    };
    // A live stream of distinct batches, about 10 000 records/s over the three partitions.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = write_numbered_while(&source, &topic, partitions, 0, per_batch, &writing);
    let (mut found, mut fallbacks) = (0, 0);
    for kill in 0..kills {
        let mut mirror = start();
        // Killed once it has mirrored a while past where the last one was killed: its stored
        // progress (every second) is behind what the target acknowledged.
        let from = end_offsets(&target, &remote).await;
        wait_until(&format!("run {kill} mirroring 20 000 records"), || async {
            end_offsets(&target, &remote).await >= from + 20_000
        })
        .await;
        let Some((200, body)) = http_get(port, "/status").await else {
            panic!("/status of run {kill}");
        };
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        found += status["flows"][0]["resume_found_records"].as_u64().unwrap();
        fallbacks += status["flows"][0]["resume_fallbacks"].as_u64().unwrap();
        mirror.0.kill().unwrap(); // SIGKILL: no drain, no final progress flush.
        mirror.0.wait().unwrap();
    }
    writing.store(false, Ordering::Relaxed);
    let batches = writer.await.unwrap();
    let total = partitions as usize * batches * per_batch;
    let mirror = start();
    wait_until_complete(&target, &remote, total as i64).await;
    assert!(mirror.terminate(), "a clean stop exits 0");
    let _ = std::fs::remove_file(&config);

    // Kafka's console consumer judges: every value `p<partition>-<n>-…` once.
    let on_target = end_offsets(&target, &remote).await as usize;
    let lines = tokio::task::spawn_blocking({
        let (bootstrap, remote) = (clusters.target.bootstrap_servers(), remote.clone());
        move || console_consume(&bootstrap, &remote, on_target)
    })
    .await
    .unwrap();
    assert_eq!(lines.len(), on_target, "the console consumer read the whole topic");
    let mut seen: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        let value = line.rsplit('\t').next().unwrap();
        let mut fields = value.splitn(3, '-');
        let key = format!("{}-{}", fields.next().unwrap(), fields.next().unwrap());
        *seen.entry(key).or_default() += 1;
    }
    let lost = (0..partitions)
        .flat_map(|p| (0..batches * per_batch).map(move |n| format!("p{p}-{n}")))
        .filter(|key| !seen.contains_key(key))
        .count();
    let duplicates: usize = seen.values().map(|c| c - 1).sum();
    println!(
        "{kills} SIGKILLs: {total} records, {lost} lost, {duplicates} duplicated; {found} records found on the \
         target at the restarts, {fallbacks} fallbacks (log: {})",
        log.display()
    );
    assert_eq!(lost, 0, "records lost");
    assert_eq!(duplicates, 0, "records written twice");
    assert!(found > 0, "the restarts found what the killed runs had not stored");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_broker_restart_mid_stream_loses_nothing() {
    target_broker_restart(BYTE_PATHS[0]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_broker_restart_mid_stream_loses_nothing_over_io_uring() {
    target_broker_restart(BYTE_PATHS[1]).await;
}

async fn target_broker_restart(io: &str) {
    let clusters = clusters();
    // A target of its own: restarting the shared one would disturb the other tests.
    let own_target = tokio::task::spawn_blocking(|| strait_testkit::KafkaCluster::start("restart-target").unwrap())
        .await
        .unwrap();
    let source = client(&clusters.source).await;
    let topic = unique("restart");
    let (partitions, batches, per_batch) = (2, 250, 200);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let total = (partitions as usize * batches * per_batch) as i64;

    let properties =
        mm2_properties(&topic, io).replace(&clusters.target.bootstrap_servers(), &own_target.bootstrap_servers());
    let mirror = start_mirror(&properties);
    let target = client(&own_target).await;
    let remote = format!("source.{topic}");
    wait_until("part of the data on the target", || async {
        end_offsets(&target, &remote).await > total / 10
    })
    .await;
    let at_crash = end_offsets(&target, &remote).await;
    own_target.kill_broker(); // A crash: SIGKILL, then the same broker comes back on the same data.
    assert!(
        at_crash < total,
        "the crash must land mid-stream ({at_crash} of {total} already there)"
    );
    let own_target = tokio::task::spawn_blocking(move || {
        std::thread::sleep(std::time::Duration::from_secs(2));
        own_target.start_broker().unwrap();
        own_target
    })
    .await
    .unwrap();
    let target = client(&own_target).await;
    wait_until_complete(&target, &remote, total).await;
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, batches * per_batch).await;
    println!("broker restart ({io}): {total} records, crashed at {at_crash}, {duplicates} duplicates");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_config_is_refused_with_the_line() {
    let config = std::env::temp_dir().join(format!("{}.properties", unique("bad")));
    std::fs::write(&config, "clusters = A, B\nA.bootstrap.servers = localhost:9092\nB.bootstrap.servers = localhost:9093\nA->B.enabled = yes\n").unwrap();
    for command in ["run", "check-config"] {
        let output = std::process::Command::new(strait_binary())
            .arg(command)
            .arg(&config)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("line 4") && stderr.contains("A->B.enabled"),
            "{command}: {stderr}"
        );
    }
    std::fs::write(&config, "clusters = A, B\nA.bootstrap.servers = localhost:9092\nB.bootstrap.servers = localhost:9093\nA->B.enabled = true\nA->B.topicz = x\n").unwrap();
    let output = std::process::Command::new(strait_binary())
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("topicz") && stderr.contains("topics"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(&config);
}

#[tokio::test(flavor = "multi_thread")]
async fn rebuilds_compacted_batches_on_the_slow_path() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("compacted");
    source
        .create_topics(&[strait_client::NewTopic {
            name: topic.clone(),
            partitions: 1,
            replication_factor: 1,
            configs: [
                ("cleanup.policy", "compact"),
                ("segment.ms", "100"),
                ("min.cleanable.dirty.ratio", "0.01"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }])
        .await
        .unwrap();
    source.wait_for_leaders(&topic, WAIT).await.unwrap();
    // Keys repeat across batches, and segments roll every 100 ms of record time, so the
    // cleaner removes records from inside batches.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 60_000;
    for b in 0..20 {
        let codec = if b % 2 == 0 {
            strait_wire::Compression::Lz4
        } else {
            strait_wire::Compression::None
        };
        let mut builder = RecordBatchBuilder::new().compression(codec);
        for r in 0..50 {
            let header = Header {
                key: Bytes::from("batch"),
                value: Some(Bytes::from(b.to_string())),
            };
            builder.push(
                Some(Bytes::from(format!("k{}", (r * 7 + b) % 30))),
                Some(Bytes::from(format!("v{b}-{r}"))),
                vec![header],
                now + b * 1000,
            );
        }
        source.produce(&topic, 0, vec![builder.build()]).await.unwrap();
    }
    wait_until("the log cleaner to compact batches", || async {
        read_batches(&source, &topic, 0).await.iter().any(|b| b.is_compacted())
    })
    .await;

    // Let the cleaner finish, so that source and target can be compared record for record.
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut previous = read_records(&source, &topic, 0).await;
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let current = read_records(&source, &topic, 0).await;
        if current == previous {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the log cleaner did not settle");
        previous = current;
    }
    let mirror = start_mirror(&mm2_properties(&topic, ""));
    let remote = format!("source.{topic}");
    let expected = previous;
    wait_until("the compacted records on the target", || async {
        read_records(&target, &remote, 0).await.len() >= expected.len()
    })
    .await;
    mirror.stop().await.unwrap();
    assert!(
        expected.len() < 1000,
        "compaction removed records ({} left)",
        expected.len()
    );
    assert_eq!(
        read_records(&target, &remote, 0).await,
        expected,
        "the same records, in order, with headers and timestamps"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_config_lists_client_keys_that_change_nothing_with_the_reason() {
    let config = std::env::temp_dir().join(format!("{}.properties", unique("ignored")));
    std::fs::write(
        &config,
        "clusters = A, B\nA.bootstrap.servers = localhost:9092\nB.bootstrap.servers = localhost:9093\n\
         A->B.enabled = true\nA->B.target.producer.compression.type = zstd\nA.consumer.max.poll.records = 10\n\
         A.consumer.fetch.max.wait.ms = 100\n",
    )
    .unwrap();
    let output = std::process::Command::new(strait_binary())
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(
            "line 5: `A->B.target.producer.compression.type` ignored: batches are forwarded compressed as the source \
             wrote them, without decompressing; the target gets the source's codec"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("line 6: `A.consumer.max.poll.records` ignored: Strait has no poll loop"),
        "{stdout}"
    );
    assert!(!stdout.contains("`A.consumer.fetch.max.wait.ms` ignored"), "{stdout}");
    let json = std::process::Command::new(strait_binary())
        .args(["check-config", "--json"])
        .arg(&config)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let keys: Vec<&str> = json["ignored"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["key"].as_str())
        .collect();
    assert_eq!(
        keys,
        ["A->B.target.producer.compression.type", "A.consumer.max.poll.records"]
    );
    let _ = std::fs::remove_file(&config);
}
