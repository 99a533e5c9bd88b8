//! Shared helpers for the integration tests: one pair of real Kafka clusters for the whole test
//! binary, unique names, and Kafka's own Java tools as reference producers and consumers.

use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use strait_client::{ClientConfig, KafkaClient, NewTopic};
use strait_testkit::{KafkaCluster, KafkaDist};

/// How long any single wait in a test may take.
pub const WAIT: Duration = Duration::from_secs(60);

/// The source and target clusters shared by every test in the binary.
pub struct Clusters {
    /// The cluster mirrored from.
    pub source: KafkaCluster,
    /// The cluster mirrored to.
    pub target: KafkaCluster,
}

/// Starts the shared clusters on first use (both at once, to halve the wait).
pub fn clusters() -> &'static Clusters {
    static CLUSTERS: OnceLock<Clusters> = OnceLock::new();
    CLUSTERS.get_or_init(|| {
        let source = std::thread::spawn(|| KafkaCluster::start("source"));
        let target = KafkaCluster::start("target").unwrap_or_else(|e| panic!("starting the target cluster: {e}"));
        let source = source
            .join()
            .expect("source start thread")
            .unwrap_or_else(|e| panic!("starting the source cluster: {e}"));
        Clusters { source, target }
    })
}

/// A name no other test uses: `prefix-<random>`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..10])
}

/// A client of `cluster`.
pub async fn client(cluster: &KafkaCluster) -> KafkaClient {
    KafkaClient::connect(ClientConfig::new(&cluster.bootstrap_servers()))
        .await
        .expect("connecting a client")
}

/// Creates `topic` with `partitions` partitions (replication factor 1) and waits for leaders.
pub async fn create_topic(client: &KafkaClient, topic: &str, partitions: i32) {
    client
        .create_topics(&[NewTopic {
            name: topic.into(),
            partitions,
            replication_factor: 1,
            configs: vec![],
        }])
        .await
        .expect("creating a topic");
    client.wait_for_leaders(topic, WAIT).await.expect("topic leaders");
}

/// Runs a Kafka Java tool (`main_class` with `args`) and fails the test if it fails.
pub fn java_tool(main_class: &str, args: &[&str]) -> Output {
    let output = KafkaDist::get()
        .expect("Kafka jars")
        .java(main_class)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {main_class}: {e}"));
    assert!(
        output.status.success(),
        "{main_class} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Writes `records` records of `record_size` bytes to `topic` with Kafka's own producer
/// (`kafka-producer-perf-test`), compressed with `compression` (`none`, `gzip`, …).
pub fn java_produce(bootstrap: &str, topic: &str, records: u64, record_size: u32, compression: &str) {
    java_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            topic,
            "--num-records",
            &records.to_string(),
            "--record-size",
            &record_size.to_string(),
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={bootstrap}"),
            &format!("compression.type={compression}"),
            "linger.ms=5",
            "acks=all",
        ],
    );
}
