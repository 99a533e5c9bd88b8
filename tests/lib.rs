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
    /// The identity provider whose tokens the source's OAUTHBEARER listener accepts.
    pub identity_provider: strait_testkit::OidcServer,
}

/// How long the identity provider's tokens are valid: short, so that a test outlives some.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(12);
/// The source's OAUTHBEARER listener ends sessions after this unless the client re-authenticates.
pub const REAUTHENTICATION: Duration = Duration::from_secs(4);

/// Starts the shared clusters on first use (both at once, to halve the wait).
pub fn clusters() -> &'static Clusters {
    static CLUSTERS: OnceLock<Clusters> = OnceLock::new();
    // Logs of the mirror under test, when asked for with RUST_LOG.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
    CLUSTERS.get_or_init(|| {
        // The log cleaner wakes up often so that compaction tests need not wait 15 s. Secure
        // listeners (SASL_SSL, SSL, SASL_PLAINTEXT) sit beside PLAINTEXT for the security tests,
        // and the source has an OAUTHBEARER listener too.
        let options = |name| {
            strait_testkit::ClusterOptions::new(name)
                .property("log.cleaner.backoff.ms", "300")
                .secure()
        };
        let identity_provider = strait_testkit::OidcServer::start(
            "strait-mirror",
            &format!("secret-{}", uuid::Uuid::new_v4().simple()),
            TOKEN_LIFETIME,
        )
        .unwrap_or_else(|e| panic!("starting the identity provider: {e}"));
        let source_options = options("source").oauth(&identity_provider, REAUTHENTICATION);
        let source = std::thread::spawn(move || KafkaCluster::start_with(source_options));
        let target =
            KafkaCluster::start_with(options("target")).unwrap_or_else(|e| panic!("starting the target cluster: {e}"));
        let source = source
            .join()
            .expect("source start thread")
            .unwrap_or_else(|e| panic!("starting the source cluster: {e}"));
        Clusters {
            source,
            target,
            identity_provider,
        }
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
    let compression = format!("compression.type={compression}");
    java_produce_with(
        bootstrap,
        topic,
        records,
        record_size,
        &[&compression, "linger.ms=5", "acks=all"],
    );
}

/// As [`java_produce`], with the producer's settings `props` (`key=value`) besides
/// `bootstrap.servers`.
pub fn java_produce_with(bootstrap: &str, topic: &str, records: u64, record_size: u32, props: &[&str]) {
    let bootstrap = format!("bootstrap.servers={bootstrap}");
    let (records, record_size) = (records.to_string(), record_size.to_string());
    let mut args = vec![
        "--topic",
        topic,
        "--num-records",
        &records,
        "--record-size",
        &record_size,
        "--throughput",
        "-1",
        "--producer-props",
        &bootstrap,
    ];
    args.extend_from_slice(props);
    java_tool("org.apache.kafka.tools.ProducerPerformance", &args);
}

/// The `strait` binary, built on first use with the cargo running the tests.
pub fn strait_binary() -> &'static std::path::Path {
    static BINARY: OnceLock<std::path::PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        let _ = build.args(["build", "-p", "strait", "--bin", "strait", "--message-format=short"]);
        // What cargo set for this test binary (CARGO_MANIFEST_DIR, CARGO_PKG_NAME, …) must not
        // reach the inner build: build scripts such as ring's rerun when those change, so the
        // inner build and the next `cargo test` would each rebuild ring and what depends on it.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if [
                "CARGO_MANIFEST_",
                "CARGO_PKG_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
            ]
            .iter()
            .any(|prefix| key.starts_with(prefix))
            {
                let _ = build.env_remove(key.as_ref());
            }
        }
        let output = build.output().expect("running cargo build");
        assert!(
            output.status.success(),
            "building strait: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
        target.join("debug/strait")
    })
}

/// An `mm2.properties` for the flow `source->target` between the shared clusters, replicating
/// topics matching `topics`, followed by `extra` lines. Unless `extra` names one, it has a
/// `strait.group.id` of its own: `strait run`s of different tests, all of the flow
/// `source->target` into the shared target, would otherwise meet in one group (and all but
/// the leader's configuration be refused).
pub fn mm2_properties(topics: &str, extra: &str) -> String {
    let clusters = clusters();
    let group = if extra.contains("strait.group.id") {
        String::new()
    } else {
        format!("strait.group.id = {}\n", unique("strait-test"))
    };
    format!(
        "clusters = source, target\n\
         source.bootstrap.servers = {}\n\
         target.bootstrap.servers = {}\n\
         source->target.enabled = true\n\
         source->target.topics = {topics}\n\
         replication.factor = 1\n\
         {group}{extra}\n",
        clusters.source.bootstrap_servers(),
        clusters.target.bootstrap_servers()
    )
}

/// The data-path cases run on both byte paths: `epoll` and `io_uring` (`strait.io`).
pub const BYTE_PATHS: [&str; 2] = ["strait.io = epoll", "strait.io = io_uring"];

/// Starts the flow `source->target` of `properties` in this process.
pub fn start_mirror(properties: &str) -> strait_mirror::FlowHandle {
    start_flow(properties, "source", "target")
}

/// Starts the flow `from->to` of `properties` (enabled, or heartbeats only) in this process.
pub fn start_flow(properties: &str, from: &str, to: &str) -> strait_mirror::FlowHandle {
    start_flow_in_process(properties, from, to).0
}

/// As [`start_mirror`], with the process settings (the byte budget) it runs in.
pub fn start_mirror_in_process(properties: &str) -> (strait_mirror::FlowHandle, strait_mirror::Process) {
    start_flow_in_process(properties, "source", "target")
}

fn start_flow_in_process(
    properties: &str,
    from: &str,
    to: &str,
) -> (strait_mirror::FlowHandle, strait_mirror::Process) {
    let config = strait_config::Mm2Config::parse(properties).expect("a valid mm2.properties");
    let process = strait_mirror::Process::new(&config);
    let flow = config
        .flow(from, to)
        .unwrap_or_else(|| panic!("the {from}->{to} flow"))
        .clone();
    (
        strait_mirror::run_flow(flow, &process, strait_mirror::Seat::alone()),
        process,
    )
}

/// Waits (at most [`WAIT`]) until `condition` holds, checking every 200 ms.
pub async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The sum of the partitions' end offsets of `topic` (0 if it does not exist yet).
pub async fn end_offsets(client: &KafkaClient, topic: &str) -> i64 {
    let Ok(metadata) = client.metadata(Some(&[topic])).await else {
        return 0;
    };
    let Some(t) = metadata.topics.get(topic).filter(|t| t.error == 0) else {
        return 0;
    };
    let partitions: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
    match client
        .list_offsets(topic, &partitions, strait_client::OffsetSpec::Latest)
        .await
    {
        Ok(ends) => ends.values().sum(),
        Err(_) => 0,
    }
}

/// Every batch of one partition from the log start to its end, control batches included.
pub async fn read_batches(client: &KafkaClient, topic: &str, partition: i32) -> Vec<strait_wire::RecordBatch> {
    use strait_client::OffsetSpec;
    let end = client
        .list_offsets(topic, &[partition], OffsetSpec::Latest)
        .await
        .expect("end offset")[&partition];
    let mut position = client
        .list_offsets(topic, &[partition], OffsetSpec::Earliest)
        .await
        .expect("start")[&partition];
    let mut batches = Vec::new();
    while position < end {
        let fetched = client
            .fetch(topic, partition, position, 4 << 20, false)
            .await
            .expect("fetch");
        for batch in strait_wire::RecordBatches::new(fetched.records) {
            let batch = batch.expect("a valid batch");
            batch.verify_crc().expect("a valid CRC");
            position = batch.next_offset();
            batches.push(batch);
        }
    }
    batches
}

/// A record as a consumer sees it: key, value, headers and absolute timestamp.
pub type ConsumedRecord = (
    Option<bytes::Bytes>,
    Option<bytes::Bytes>,
    Vec<strait_wire::Header>,
    i64,
);

/// The data records of one partition in order (control batches skipped).
pub async fn read_records(client: &KafkaClient, topic: &str, partition: i32) -> Vec<ConsumedRecord> {
    let mut records = Vec::new();
    for batch in read_batches(client, topic, partition).await {
        if batch.is_control() {
            continue;
        }
        for r in strait_wire::decode_records(&batch).expect("decodable records") {
            records.push((r.key, r.value, r.headers, batch.base_timestamp() + r.timestamp_delta));
        }
    }
    records
}

/// Compiles `tests/java/<name>.java` against the Kafka jars (once per test run) and returns a
/// command running it.
pub fn java_program(name: &str) -> std::process::Command {
    // Removed when the test run ends, however it ends.
    static CLASSES: OnceLock<strait_testkit::ScratchDir> = OnceLock::new();
    let classes = CLASSES.get_or_init(|| {
        let dir = strait_testkit::ScratchDir::new("java").expect("a folder for the Java classes");
        let sources: Vec<_> = std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("java"))
            .expect("tests/java")
            .map(|e| e.expect("a file").path())
            .collect();
        KafkaDist::get()
            .expect("Kafka jars")
            .javac(&sources, dir.path())
            .expect("compiling tests/java");
        dir
    });
    KafkaDist::get().expect("Kafka jars").java_program(classes.path(), name)
}

/// Runs a command to completion, failing the test with its output if it fails.
pub fn run_ok(mut command: std::process::Command) -> Output {
    let output = command.output().expect("starting a process");
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Now in epoch milliseconds: test records carry current timestamps, since the brokers delete
/// segments older than the 7-day retention (which old fixed timestamps would be).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

/// Waits until `topic` holds at least `records` records and then stops growing for 1.5 s: with
/// duplicates (after a crash) the count passes `records` before every record has arrived.
pub async fn wait_until_complete(client: &KafkaClient, topic: &str, records: i64) {
    wait_until(&format!("{topic} to hold {records} records"), || async {
        end_offsets(client, topic).await >= records
    })
    .await;
    settled_end_offsets(client, topic).await;
}

/// The records `topic` holds once it has stopped growing for 1.5 s: requests a killed client
/// had already sent still land after it is gone.
pub async fn settled_end_offsets(client: &KafkaClient, topic: &str) -> i64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut previous = end_offsets(client, topic).await;
    loop {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let current = end_offsets(client, topic).await;
        if current == previous {
            return current;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{topic} kept growing for {WAIT:?}"
        );
        previous = current;
    }
}

/// A `strait` process started by a test: killed when dropped, so a failing test leaves none.
pub struct StraitProcess(pub std::process::Child);

impl StraitProcess {
    /// Starts `strait <args>` with its output discarded.
    pub fn start(args: &[&std::ffi::OsStr]) -> StraitProcess {
        Self::start_with_env(args, &[])
    }

    /// As [`StraitProcess::start`], with these environment variables set.
    pub fn start_with_env(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> StraitProcess {
        let child = std::process::Command::new(strait_binary())
            .args(args)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting strait");
        StraitProcess(child)
    }

    /// Stops it with SIGTERM (a clean stop) and returns whether it exited with success.
    pub fn terminate(mut self) -> bool {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + WAIT;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.0.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for StraitProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    strait_testkit::free_port().expect("a free port")
}

/// `GET path` over HTTP/1.0 from `127.0.0.1:port`: the status code and body, or `None` if
/// nothing listens there (yet). HTTP/1.0, so that no server (Strait's, Prometheus's Go server)
/// answers with a chunked body, and the connection closes after the answer.
pub async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        let code = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((code, body.to_owned()))
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
}

/// The sum of the samples of metric `name` in Prometheus text whose labels contain every
/// `labels` fragment.
pub fn metric(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| line.split(['{', ' ']).next() == Some(name))
        .filter(|line| labels.iter().all(|l| line.contains(l)))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// `/metrics` of a `strait run` serving HTTP on `port`.
pub async fn scrape(port: u16) -> String {
    let (code, body) = http_get(port, "/metrics").await.expect("/metrics answers");
    assert_eq!(code, 200, "{body}");
    body
}

/// Deletes the records of partition 0 of `topic` below `offset` on the cluster at `bootstrap`
/// (as retention would), with Kafka's own `DeleteRecordsCommand`; returns its output.
pub async fn delete_records_below(bootstrap: &str, topic: &str, offset: i64) -> Output {
    let file = std::env::temp_dir().join(format!("{topic}-delete.json"));
    std::fs::write(
        &file,
        format!(r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"offset":{offset}}}]}}"#),
    )
    .unwrap();
    let (bootstrap, file_arg) = (bootstrap.to_owned(), file.display().to_string());
    let output = tokio::task::spawn_blocking(move || {
        java_tool(
            "org.apache.kafka.tools.DeleteRecordsCommand",
            &["--bootstrap-server", &bootstrap, "--offset-json-file", &file_arg],
        )
    })
    .await
    .unwrap();
    let _ = std::fs::remove_file(&file);
    output
}
