//! Configurations kept in other tools' shapes, run by the `strait` binary against the shared
//! clusters: MM2's three connector configs as JSON files (Connect REST PUT and POST bodies, MSK
//! Connect), and a Strimzi KafkaMirrorMaker2 resource whose secrets are laid out as Strimzi
//! mounts them. `strait import` of each passes `strait check-config`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use strait_testkit::SecureListeners;
use strait_tests::*;

/// A folder of the test's own, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> Self {
        let dir = std::env::temp_dir().join(unique(prefix));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Writes `text` into `name` (folders created), returning its path.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `strait import <files> <options>` into a file, then `strait check-config` of that file,
/// which must pass and show the flow `flow`. Returns the imported text.
fn import_passes_check_config(dir: &TempDir, files: &[PathBuf], options: &[&str], flow: &str) -> String {
    let output = Command::new(strait_binary())
        .arg("import")
        .args(files)
        .args(options)
        .output()
        .unwrap();
    let imported = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "strait import: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        imported.starts_with("# mm2.properties made by `strait import` from "),
        "{imported}"
    );
    let path = dir.write("imported.properties", &imported);
    let check = Command::new(strait_binary())
        .arg("check-config")
        .arg(&path)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "check-config of the imported text:\n{imported}\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        shown.contains(&format!("flow {flow} (enabled, emits heartbeats)")),
        "{shown}"
    );
    imported
}

/// Runs `strait run <args>` until `remote` on the target holds the `records` records of
/// `topic`, then stops it with SIGTERM; it must exit cleanly with exactly those records
/// copied. Returns what it wrote to stderr.
async fn run_until_mirrored(args: &[&std::ffi::OsStr], topic: &str, remote: &str, records: i64) -> String {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    assert_eq!(end_offsets(&source, topic).await, records);
    let mut mirror = Command::new(strait_binary())
        .arg("run")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while end_offsets(&target, remote).await < records {
        if let Some(status) = mirror.try_wait().unwrap() {
            let output = mirror.wait_with_output().unwrap();
            panic!(
                "the mirror exited ({status}): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        if Instant::now() > deadline {
            let _ = mirror.kill();
            let output = mirror.wait_with_output().unwrap();
            panic!(
                "timed out waiting for {records} records in {remote}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Command::new("kill")
        .args(["-TERM", &mirror.id().to_string()])
        .status()
        .unwrap();
    let output = mirror.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "a clean stop exits 0: {stderr}");
    assert_eq!(
        end_offsets(&target, remote).await,
        records,
        "exactly the source's records"
    );
    stderr
}

#[tokio::test(flavor = "multi_thread")]
async fn three_connector_json_files_mirror_as_one_flow() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let topic = unique("connectors");
    let records = 2_000;
    create_topic(&source, &topic, 2).await;
    java_produce(&clusters.source.bootstrap_servers(), &topic, records, 100, "lz4");

    // Aliases of the connectors' own (not `source`/`target`): the remote topic is named after
    // the source connector's `source.cluster.alias`.
    let (from, to) = (unique("east"), unique("west"));
    let (source_servers, target_servers) = (clusters.source.bootstrap_servers(), clusters.target.bootstrap_servers());
    let dir = TempDir::new("connectors");
    // PUT /connectors/<name>/config: the config itself.
    let source_connector = dir.write(
        "mm2-msc.json",
        &format!(
            r#"{{
  "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
  "source.cluster.alias": "{from}",
  "target.cluster.alias": "{to}",
  "source.cluster.bootstrap.servers": "{source_servers}",
  "target.cluster.bootstrap.servers": "{target_servers}",
  "topics": "{topic}",
  "tasks.max": "2",
  "replication.factor": "1",
  "offset-syncs.topic.replication.factor": "1",
  "sync.topic.acls.enabled": "false",
  "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
  "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"
}}"#
        ),
    );
    // POST /connectors: name and config.
    let checkpoint_connector = dir.write(
        "mm2-cpc.json",
        &format!(
            r#"{{"name": "mm2-cpc", "config": {{
  "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
  "source.cluster.alias": "{from}",
  "target.cluster.alias": "{to}",
  "source.cluster.bootstrap.servers": "{source_servers}",
  "target.cluster.bootstrap.servers": "{target_servers}",
  "topics": "{topic}",
  "groups": ".*",
  "checkpoints.topic.replication.factor": "1",
  "emit.checkpoints.interval.seconds": "1"
}}}}"#
        ),
    );
    // MSK Connect: the target is the cluster its workers use.
    let heartbeat_connector = dir.write(
        "mm2-hbc.json",
        &format!(
            r#"{{
  "connectorName": "mm2-hbc",
  "kafkaCluster": {{"apacheKafkaCluster": {{"bootstrapServers": "{target_servers}", "vpc": {{"subnets": []}}}}}},
  "capacity": {{"provisionedCapacity": {{"mcuCount": 1, "workerCount": 1}}}},
  "connectorConfiguration": {{
    "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
    "source.cluster.alias": "{from}",
    "target.cluster.alias": "{to}",
    "heartbeats.topic.replication.factor": "1",
    "emit.heartbeats.interval.seconds": "1"
  }}
}}"#
        ),
    );
    let files = [source_connector, checkpoint_connector, heartbeat_connector];

    let imported = import_passes_check_config(&dir, &files, &[], &format!("{from}->{to}"));
    assert!(
        imported.contains(&format!("\n{from}->{to}.topics = {topic}\n")),
        "{imported}"
    );
    assert!(
        imported.contains(&format!("\n{to}.bootstrap.servers = {target_servers}\n")),
        "{imported}"
    );

    let args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    let remote = format!("{from}.{topic}");
    let _ = run_until_mirrored(&args, &topic, &remote, records as i64).await;
    let target = client(&clusters.target).await;
    // Only the remote name the aliases give: not MM2's default `source.` prefix.
    assert_eq!(end_offsets(&target, &format!("source.{topic}")).await, 0);
}

/// Lays out the secrets of cluster `alias` as Strimzi mounts them under `root`: its SCRAM
/// password and the CA certificate of its listener.
fn mount_secrets(root: &TempDir, alias: &str, listeners: &SecureListeners) {
    let _ = root.write(
        &format!("mm2-password/{alias}/{alias}-user/password"),
        &listeners.password,
    );
    let ca = std::fs::read_to_string(&listeners.ca_pem).unwrap();
    let _ = root.write(&format!("mm2-certs/{alias}/{alias}-cluster-ca-cert/ca.crt"), &ca);
}

/// `spec.clusters[]` entry for `alias`: SCRAM-SHA-512 over TLS, the secrets by name.
fn strimzi_cluster(alias: &str, listeners: &SecureListeners) -> String {
    format!(
        r#"    - alias: "{alias}"
      bootstrapServers: {servers}
      tls:
        trustedCertificates:
          - secretName: {alias}-cluster-ca-cert
            certificate: ca.crt
      authentication:
        type: scram-sha-512
        username: {username}
        passwordSecret:
          secretName: {alias}-user
          password: password
"#,
        servers = listeners.sasl_ssl,
        username = listeners.username,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_strimzi_resource_mirrors_over_scram_and_tls_with_its_mounted_secrets() {
    let clusters = clusters();
    let (source_tls, target_tls) = (
        clusters.source.security().expect("secure listeners"),
        clusters.target.security().expect("secure listeners"),
    );
    let source = client(&clusters.source).await;
    let topic = unique("strimzi");
    let records = 2_000;
    create_topic(&source, &topic, 2).await;
    java_produce(&clusters.source.bootstrap_servers(), &topic, records, 100, "zstd");

    let (from, to) = (unique("east"), unique("west"));
    let root = TempDir::new("strimzi-mounts");
    mount_secrets(&root, &from, source_tls);
    mount_secrets(&root, &to, target_tls);
    let dir = TempDir::new("strimzi");
    let resource = dir.write(
        "mm2.yaml",
        &format!(
            r#"apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaMirrorMaker2
metadata:
  name: my-mirror-maker2
spec:
  version: 3.9.0
  replicas: 1
  connectCluster: "{to}"
  clusters:
{}{}  mirrors:
    - sourceCluster: "{from}"
      targetCluster: "{to}"
      topicsPattern: "{topic}"
      groupsPattern: ".*"
      sourceConnector:
        tasksMax: 2
        config:
          replication.factor: 1
          offset-syncs.topic.replication.factor: 1
          sync.topic.acls.enabled: "false"
      checkpointConnector:
        config:
          checkpoints.topic.replication.factor: 1
      heartbeatConnector:
        config:
          heartbeats.topic.replication.factor: 1
"#,
            strimzi_cluster(&from, source_tls),
            strimzi_cluster(&to, target_tls),
        ),
    );
    let mount_root = root.0.to_str().unwrap();

    let imported = import_passes_check_config(
        &dir,
        std::slice::from_ref(&resource),
        &["--strimzi-mount-root", mount_root],
        &format!("{from}->{to}"),
    );
    assert!(
        !imported.contains(&source_tls.password) && !imported.contains(&target_tls.password),
        "{imported}"
    );
    assert!(
        imported.contains(&format!(
            "password=\"${{strimzidir:{mount_root}/mm2-password/{from}/{from}-user:password}}\""
        )),
        "{imported}"
    );

    let args = [
        resource.as_os_str(),
        "--strimzi-mount-root".as_ref(),
        mount_root.as_ref(),
    ];
    let remote = format!("{from}.{topic}");
    let stderr = run_until_mirrored(&args, &topic, &remote, records as i64).await;
    assert!(!stderr.contains(&source_tls.password) && !stderr.contains(&target_tls.password));

    // Without the secrets where Strimzi mounts them, the error names the resource's field.
    let output = Command::new(strait_binary())
        .arg("check-config")
        .arg(&resource)
        .args([
            "--strimzi-mount-root",
            &Path::new(mount_root).join("elsewhere").display().to_string(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("it comes from") && stderr.contains("spec.clusters[0].tls.trustedCertificates[0]"),
        "{stderr}"
    );
}
