//! Exactly-once mode against real clusters: a mirror killed with SIGKILL again and again while
//! the source is written leaves every record exactly once for a `read_committed` reader (Kafka's
//! own console consumer is the judge), and a second process on the same configuration fences
//! the first.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strait_testkit::{KafkaCluster, KafkaDist};
use strait_tests::*;

use crate::mirror::{check_numbered, write_numbered, write_numbered_while};

/// A flow of `topic` from the shared source into `target` (its bootstrap servers) in
/// exactly-once mode, with MM2's keys. Its source alias is the topic's name without dashes: a transactional id, an offsets topic and remote names of its own, so
/// that tests running beside it neither fence it nor wait on its open transactions.
pub(crate) fn exactly_once_properties(topic: &str, target: &str) -> (String, String) {
    let clusters = clusters();
    let alias = topic.replace('-', "");
    let properties = format!(
        "clusters = {alias}, target\n\
         {alias}.bootstrap.servers = {}\n\
         target.bootstrap.servers = {}\n\
         {alias}->target.enabled = true\n\
         {alias}->target.topics = {topic}\n\
         replication.factor = 1\n\
         target.exactly.once.source.support = enabled\n\
         {alias}.consumer.isolation.level = read_committed\n\
         transaction.boundary = interval\n\
         transaction.boundary.interval.ms = 500\n",
        clusters.source.bootstrap_servers(),
        target
    );
    (properties, alias)
}

/// What Kafka's console consumer reads from `topic` at `isolation`: (partition, value) per
/// record, in the order of each partition. Reads until `records + 1` or 10 s of silence, so
/// that a record too many is seen.
pub(crate) fn java_consume(bootstrap: &str, topic: &str, isolation: &str, records: usize) -> Vec<(i32, String)> {
    let mut command = KafkaDist::get()
        .unwrap()
        .java("org.apache.kafka.tools.consumer.ConsoleConsumer");
    command
        .args(["--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning"])
        .args(["--max-messages", &(records + 1).to_string(), "--timeout-ms", "10000"])
        .args(["--isolation-level", isolation])
        .args(["--property", "print.partition=true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // It ends with a timeout error once it read everything: its output is what counts.
    let output = command.output().unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (partition, value) = line
                .split_once('\t')
                .unwrap_or_else(|| panic!("unexpected line {line:?}"));
            let partition = partition.trim_start_matches("Partition:").parse().unwrap();
            (partition, value.to_owned())
        })
        .collect()
}

/// Runs `strait run config`, its log (stderr) going to the file returned, which tests read and
/// remove.
fn start(config: &std::path::Path, run: usize) -> (StraitProcess, std::path::PathBuf) {
    let log = config.with_extension(format!("{run}.log"));
    let child = std::process::Command::new(strait_binary())
        .arg("run")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    (StraitProcess(child), log)
}

/// What a run logged.
fn log_of(log: &std::path::Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_three_times_a_read_committed_consumer_sees_every_record_exactly_once() {
    let (logged, _) = killed_and_restarted(&clusters().target, "eos", 3).await;
    assert!(logged.contains("transaction_version=2"), "{logged}");
}

/// The same under the transaction protocol before KIP-890 (`transaction.version=1`, as on a
/// cluster upgraded to Kafka 4 without finalizing the feature): partitions join with
/// AddPartitionsToTxn, Produce stays at v11 and the epoch stays across transactions, so
/// sequences go on. The broker's verification (`transaction.partition.verification.enable`)
/// refuses a batch in a partition not added.
#[tokio::test(flavor = "multi_thread")]
async fn under_transaction_version_1_killed_twice_every_record_is_there_exactly_once() {
    let target = tokio::task::spawn_blocking(|| {
        let options = strait_testkit::ClusterOptions::new("tv1-target").feature("transaction.version", 1);
        KafkaCluster::start_with(options).unwrap_or_else(|e| panic!("starting the TV1 target: {e}"))
    })
    .await
    .unwrap();
    let version = client(&target).await.transaction_version().await.unwrap();
    assert_eq!(version, 1, "the cluster was formatted at transaction.version=1");
    let (logged, identities) = killed_and_restarted(&target, "eos1", 2).await;
    assert!(logged.contains("transaction_version=1"), "{logged}");
    // The epoch stays across transactions: every epoch in the data is one InitProducerId gave
    // (at each start, and after an abort), none one EndTxn bumped.
    let initialized: std::collections::BTreeSet<(i64, i16)> = logged
        .lines()
        .filter(|line| line.contains("exactly-once producer ready"))
        .map(|line| (field(line, "producer_id"), field(line, "epoch") as i16))
        .collect();
    assert!(
        identities.is_subset(&initialized),
        "epochs in the data {identities:?}, from InitProducerId {initialized:?}"
    );
}

/// Mirrors a new topic of the shared source into `target` in exactly-once mode while the
/// source is written, SIGKILLs `strait run` `kills` times in busy transactions, then lets a
/// last run commit the rest and stop cleanly. The judge is Kafka's consumer at
/// read_committed: every record once, in order. Returns what the runs logged, and the
/// producer identities (id and epoch) that wrote the data.
async fn killed_and_restarted(
    target_cluster: &KafkaCluster,
    prefix: &str,
    kills: usize,
) -> (String, std::collections::BTreeSet<(i64, i16)>) {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(target_cluster).await);
    let topic = unique(prefix);
    let (partitions, batches, per_batch) = (3, 100, 200);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    // A group on the source, so that checkpoints are written.
    let group = format!("{topic}-readers");
    let positions = (0..partitions)
        .map(|p| {
            let committed = strait_client::CommittedOffset {
                offset: 1_000,
                metadata: String::new(),
            };
            ((topic.clone(), p), committed)
        })
        .collect();
    source.commit_offsets(&group, &positions).await.unwrap();
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    let (properties, alias) = exactly_once_properties(&topic, &target_cluster.bootstrap_servers());
    // On the target, the offset syncs join the transactions, and so do the checkpoints.
    let properties = properties + "offset-syncs.topic.location = target\nemit.checkpoints.interval.seconds = 1\n";
    std::fs::write(&config, &properties).unwrap();
    let remote = format!("{alias}.{topic}");
    let mut logged = String::new();

    // The source is written all along, so that every kill lands in a busy transaction.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = write_numbered_while(&source, &topic, partitions, batches, per_batch, &writing);
    for kill in 1..=kills {
        let (mut mirror, log) = start(&config, kill);
        // Busy: the target grows by more than a transaction's worth after the start.
        let at_start = end_offsets(&target, &remote).await;
        let deadline = std::time::Instant::now() + WAIT;
        while end_offsets(&target, &remote).await <= at_start + 20_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "run {kill} did not write: {}",
                log_of(&log)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        mirror.0.kill().unwrap(); // SIGKILL: the open transaction is left open.
        mirror.0.wait().unwrap();
        logged += &log_of(&log);
        let _ = std::fs::remove_file(&log);
    }
    writing.store(false, Ordering::Relaxed);
    let batches = writer.await.unwrap();
    let per_partition = batches * per_batch;
    let total = partitions as usize * per_partition;

    // The last run mirrors the rest, then stops cleanly; it serves /metrics.
    let port = free_port();
    std::fs::write(
        &config,
        format!("{properties}strait.http.listener = 127.0.0.1:{port}\n"),
    )
    .unwrap();
    let (mut mirror, log) = start(&config, kills + 1);
    let deadline = std::time::Instant::now() + WAIT;
    while committed_records(&target, &remote, partitions).await < total {
        if std::time::Instant::now() >= deadline {
            let mut seen = Vec::new();
            for partition in 0..partitions {
                let fetched = target.fetch(&remote, partition, 0, 1, true).await.unwrap();
                let committed = read_committed_values(&target, &remote, partition).await.len();
                seen.push((committed, fetched.last_stable_offset, fetched.high_watermark));
            }
            panic!(
                "the last run did not commit all {total} records: (committed, last stable offset, high \
                 watermark) per partition {seen:?}; its log: {}",
                log_of(&log)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A checkpoint round commits with a transaction after the group was read: wait for it.
    let checkpoints_topic = format!("{alias}.checkpoints.internal");
    wait_until("the group's checkpoints committed", || async {
        !committed_checkpoints(&target, &checkpoints_topic, &group)
            .await
            .is_empty()
    })
    .await;
    let metrics = scrape(port).await;
    let committed = metric(&metrics, "strait_transactions_total", &["outcome=\"committed\""]);
    assert!(
        committed.is_some_and(|n| n > 0.0),
        "transactions committed: {committed:?}"
    );
    println!(
        "the last run: {committed:?} transactions committed, {:?} aborted",
        metric(&metrics, "strait_transactions_total", &["outcome=\"aborted\""])
    );
    std::process::Command::new("kill")
        .args(["-TERM", &mirror.0.id().to_string()])
        .status()
        .unwrap();
    let status = mirror.0.wait().unwrap();
    assert!(status.success(), "a clean stop exits 0: {}", log_of(&log));
    logged += &log_of(&log);
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&config);

    // The judge: Kafka's consumer at read_committed sees each record once, in order.
    let consumed = java_consume(&target_cluster.bootstrap_servers(), &remote, "read_committed", total);
    assert_eq!(consumed.len(), total, "read_committed: every record, and no more");
    let mut next: HashMap<i32, usize> = HashMap::new();
    for (partition, value) in &consumed {
        let n: usize = value.split('-').nth(1).unwrap().parse().unwrap();
        let expected = next.entry(*partition).or_default();
        assert!(
            value.starts_with(&format!("p{partition}-")),
            "{value} in partition {partition}"
        );
        assert_eq!(
            n, *expected,
            "partition {partition}: {value} where record {expected} was due"
        );
        *expected += 1;
    }
    // Every checkpoint was written in a transaction, and the group's are there to read.
    for batch in read_batches(&target, &checkpoints_topic, 0).await {
        assert!(
            batch.is_transactional(),
            "checkpoints outside the transactions: the batch at {}",
            batch.base_offset()
        );
    }
    assert!(
        !committed_checkpoints(&target, &checkpoints_topic, &group)
            .await
            .is_empty(),
        "the group's checkpoints were committed"
    );
    // Every offset sync was written in a transaction, and each committed one points at the
    // committed copy of its record.
    let syncs_topic = format!("mm2-offset-syncs.{alias}.internal");
    for batch in read_batches(&target, &syncs_topic, 0).await {
        assert!(batch.is_transactional(), "offset syncs outside the transactions");
    }
    let committed: Vec<HashMap<i64, String>> = {
        let mut committed = Vec::new();
        for partition in 0..partitions {
            committed.push(
                read_committed_records(&target, &remote, partition)
                    .await
                    .into_iter()
                    .collect(),
            );
        }
        committed
    };
    let mut syncs = 0;
    for (key, value) in read_committed_records_raw(&target, &syncs_topic, 0).await {
        let sync = strait_wire::OffsetSync::decode(&key, &value).unwrap();
        if sync.topic != topic {
            continue;
        }
        let at = committed[sync.partition as usize].get(&sync.downstream_offset);
        assert!(
            at.is_some_and(|value| value.starts_with(&format!("p{}-{}-", sync.partition, sync.upstream_offset))),
            "{sync:?} names a committed record, not {at:?}"
        );
        syncs += 1;
    }
    assert!(syncs > 0, "offset syncs were written");

    // The kills landed inside transactions: a read_uncommitted reader sees their aborted copies.
    let uncommitted = check_numbered(&target, &remote, partitions, per_partition).await;
    println!(
        "exactly-once into {}: {total} records over {kills} SIGKILLs: {} read_committed, 0 duplicates; \
         {uncommitted} aborted copies visible to read_uncommitted",
        target_cluster.name(),
        consumed.len()
    );
    assert!(uncommitted > 0, "no kill landed inside a transaction");
    let identities = producer_identities(&target, &remote, partitions).await;
    println!("producer ids and epochs of the data: {identities:?}");
    // The offset map stays small though every commit marker is a breakpoint: a byte or two a
    // commit, as stored on the target and reloaded from there.
    let offset_map = strait_mirror::OffsetMap::read(&target, &alias, "target")
        .await
        .unwrap()
        .expect("the offset map topic exists");
    let sizes = offset_map.stored_bytes();
    for partition in 0..partitions {
        let markers = read_batches(&target, &remote, partition)
            .await
            .iter()
            .filter(|b| b.is_control())
            .count();
        let bytes = sizes[&(topic.clone(), partition)];
        println!("offset map of {topic}-{partition}: {bytes} bytes for {markers} transaction markers");
        assert!(markers > 0, "the transactions left markers in partition {partition}");
        assert!(
            bytes <= 3 * markers + 64,
            "{bytes} bytes for {markers} markers in partition {partition}"
        );
    }
    (logged, identities)
}

/// The number after `name=` in a log line.
fn field(line: &str, name: &str) -> i64 {
    let start = line
        .find(&format!(" {name}="))
        .unwrap_or_else(|| panic!("{name} in {line}"))
        + name.len()
        + 2;
    let digits: String = line[start..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap()
}

/// The (producer id, epoch) pairs of `topic`'s data batches, aborted ones too.
async fn producer_identities(
    client: &strait_client::KafkaClient,
    topic: &str,
    partitions: i32,
) -> std::collections::BTreeSet<(i64, i16)> {
    let mut identities = std::collections::BTreeSet::new();
    for partition in 0..partitions {
        let mut position = 0;
        loop {
            let fetched = client.fetch(topic, partition, position, 8 << 20, false).await.unwrap();
            let before = position;
            for batch in strait_wire::RecordBatches::new(fetched.records) {
                let Ok(batch) = batch else { break };
                if !batch.is_control() {
                    identities.insert((batch.producer_id(), batch.producer_epoch()));
                }
                position = batch.next_offset();
            }
            if position == before {
                break;
            }
        }
    }
    identities
}

/// Records of `topic` a read_committed reader sees: the last stable offsets, less the markers
/// and aborted records, counted by reading.
pub(crate) async fn committed_records(client: &strait_client::KafkaClient, topic: &str, partitions: i32) -> usize {
    let mut count = 0;
    for partition in 0..partitions {
        count += read_committed_values(client, topic, partition).await.len();
    }
    count
}

/// The committed checkpoints of `group` in `topic`.
async fn committed_checkpoints(
    client: &strait_client::KafkaClient,
    topic: &str,
    group: &str,
) -> Vec<strait_wire::Checkpoint> {
    read_committed_records_raw(client, topic, 0)
        .await
        .iter()
        .map(|(key, value)| strait_wire::Checkpoint::decode(key, value).unwrap())
        .filter(|c| c.group == group)
        .collect()
}

/// The values of one partition as a read_committed reader sees them.
async fn read_committed_values(client: &strait_client::KafkaClient, topic: &str, partition: i32) -> Vec<String> {
    read_committed_records(client, topic, partition)
        .await
        .into_iter()
        .map(|(_, value)| value)
        .collect()
}

/// The offsets and values of one partition as a read_committed reader sees them.
async fn read_committed_records(
    client: &strait_client::KafkaClient,
    topic: &str,
    partition: i32,
) -> Vec<(i64, String)> {
    let mut records = Vec::new();
    read_committed(client, topic, partition, |offset, _, value| {
        records.push((offset, String::from_utf8_lossy(&value).into_owned()))
    })
    .await;
    records
}

/// The keys and values of one partition as a read_committed reader sees them.
async fn read_committed_records_raw(
    client: &strait_client::KafkaClient,
    topic: &str,
    partition: i32,
) -> Vec<(bytes::Bytes, bytes::Bytes)> {
    let mut records = Vec::new();
    read_committed(client, topic, partition, |_, key, value| records.push((key, value))).await;
    records
}

/// Reads one partition as a read_committed reader does: `each(offset, key, value)` for every
/// committed record, up to the last stable offset.
async fn read_committed(
    client: &strait_client::KafkaClient,
    topic: &str,
    partition: i32,
    mut each: impl FnMut(i64, bytes::Bytes, bytes::Bytes),
) {
    let mut position = 0;
    loop {
        let fetched = client.fetch(topic, partition, position, 8 << 20, true).await.unwrap();
        let before = position;
        let mut aborted = strait_wire::AbortedTransactionFilter::new(fetched.aborted_transactions);
        for batch in strait_wire::RecordBatches::new(fetched.records) {
            let Ok(batch) = batch else { break };
            // Every batch goes through the filter: an ABORT marker ends its transaction.
            if aborted.check(&batch) == strait_wire::BatchVerdict::Forward {
                for record in strait_wire::decode_records(&batch).unwrap() {
                    let offset = batch.base_offset() + i64::from(record.offset_delta);
                    each(offset, record.key.unwrap_or_default(), record.value.unwrap_or_default());
                }
            }
            position = batch.next_offset();
        }
        if position == before {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
/// Processes of one configuration share the work through their group (one holds an
/// exactly-once flow, the others stand by); a process outside it (another `strait.group.id`) on
/// the same flow is not coordinated with, and the transactional ids keep the two from both
/// writing: the newer fences the older.
async fn a_second_process_outside_the_group_on_the_same_flow_fences_the_first() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("fence");
    create_topic(&source, &topic, 1).await;
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    let (properties, alias) = exactly_once_properties(&topic, &clusters.target.bootstrap_servers());
    std::fs::write(&config, properties).unwrap();
    let remote = format!("{alias}.{topic}");
    let writing = Arc::new(AtomicBool::new(true));
    let writer = write_numbered_while(&source, &topic, 1, 0, 100, &writing);
    let (mut first, first_log) = start(&config, 1);
    let deadline = std::time::Instant::now() + WAIT;
    while end_offsets(&target, &remote).await <= 1_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first process did not write: {}",
            log_of(&first_log)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let outside = config.with_extension("outside.properties");
    let (properties, _) = exactly_once_properties(&topic, &clusters.target.bootstrap_servers());
    std::fs::write(
        &outside,
        format!("{properties}strait.group.id = {}\n", unique("outside")),
    )
    .unwrap();
    let (mut second, second_log) = start(&outside, 2);
    // The second's InitProducerId fences the first, whose next write or commit is refused.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = first.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < WAIT, "the fenced process went on");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let stderr = log_of(&first_log);
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("was fenced") && stderr.contains(&format!("strait-{alias}->target-0")),
        "names the fence and the transactional id: {stderr}"
    );
    // The second goes on writing.
    let now = end_offsets(&target, &remote).await;
    wait_until("the second process writing", || async {
        end_offsets(&target, &remote).await > now + 1_000
    })
    .await;
    writing.store(false, Ordering::Relaxed);
    writer.await.unwrap();
    second.0.kill().unwrap();
    second.0.wait().unwrap();
    for file in [&first_log, &second_log, &config, &outside] {
        let _ = std::fs::remove_file(file);
    }
    println!("fenced after {:?}", started.elapsed());
}
