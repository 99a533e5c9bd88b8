//! Single-node KRaft clusters from the fetched jars.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::dist::{create_dir, write};
use crate::guard::{Guarded, ScratchDir};
use crate::{Error, KafkaDist, Result};

/// How long a broker may take to start before we give up.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// How a cluster is started.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// A short name, used in folder names and messages (e.g. `source`).
    pub name: String,
    /// Extra `server.properties` entries, added after (and so overriding) the defaults.
    pub properties: Vec<(String, String)>,
    /// The broker's Java heap, e.g. `512m`.
    pub heap: String,
    /// Whether to open secure listeners too (see [`ClusterOptions::secure`]).
    pub secure: bool,
    /// Whether the broker runs with the JVM options of Kafka's own scripts (G1, see
    /// [`crate::KAFKA_JVM_PERFORMANCE_OPTIONS`]) rather than the test kit's SerialGC, which
    /// keeps many test clusters small: for benchmarks, whose latencies the collector shows in.
    pub kafka_jvm: bool,
    /// An OAUTHBEARER listener too (see [`ClusterOptions::oauth`]).
    pub oauth: Option<OAuthOptions>,
    /// Feature levels the cluster is formatted with, e.g. `("transaction.version", 1)` (see
    /// [`ClusterOptions::feature`]); the others are the release's defaults.
    pub features: Vec<(String, i16)>,
}

/// How the broker's OAUTHBEARER listener validates tokens: with Kafka's own validator
/// (`OAuthBearerValidatorCallbackHandler`) against an identity provider's JWKS.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// The provider's JWKS endpoint, which the broker is allowed to call
    /// (`org.apache.kafka.sasl.oauthbearer.allowed.urls`, required since Kafka 4.0).
    pub jwks_url: String,
    /// The `iss` every token must have.
    pub issuer: String,
    /// The `aud` every token must have.
    pub audience: String,
    /// The listener's `connections.max.reauth.ms`: sessions end after it, or when the token
    /// expires if sooner, unless the client re-authenticates (KIP-368).
    pub reauth: Duration,
}

impl ClusterOptions {
    /// Default options for a cluster called `name`.
    pub fn new(name: &str) -> Self {
        ClusterOptions {
            name: name.into(),
            properties: Vec::new(),
            heap: "512m".into(),
            secure: false,
            kafka_jvm: false,
            oauth: None,
            features: Vec::new(),
        }
    }

    /// Formats the cluster with the feature `name` at `level` (`kafka-storage format --feature
    /// name=level`), e.g. `transaction.version` at 1 for the transaction protocol before
    /// KIP-890's (Kafka 4's default is 2).
    pub fn feature(mut self, name: &str, level: i16) -> Self {
        self.features.push((name.into(), level));
        self
    }

    /// Opens an `OAUTHBEARER` listener (SASL_PLAINTEXT) beside the others, validating tokens of
    /// `provider` with no clock skew allowed, and ending sessions after `reauth` unless the
    /// client re-authenticates. See [`KafkaCluster::oauth_listener`].
    pub fn oauth(mut self, provider: &crate::OidcServer, reauth: Duration) -> Self {
        self.oauth = Some(OAuthOptions {
            jwks_url: provider.jwks_url(),
            issuer: provider.issuer().to_owned(),
            audience: provider.audience().to_owned(),
            reauth,
        });
        self
    }

    /// Opens three secure listeners beside PLAINTEXT (which inter-broker and controller traffic
    /// and the Java tools keep using): `SASL_SSL` with SCRAM-SHA-256 and SCRAM-SHA-512, `SSL`
    /// requiring a client certificate, and `SASL_PLAINTEXT` with PLAIN. The certificates (a CA,
    /// the broker's for `localhost`, a client's) are made at start; one user exists for every
    /// mechanism. See [`KafkaCluster::security`].
    pub fn secure(mut self) -> Self {
        self.secure = true;
        self
    }

    /// Adds a `server.properties` entry.
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }
}

/// A running single-node KRaft cluster (one JVM acting as broker and controller).
///
/// Dropping it kills the JVM and removes its folder; both also happen when the process ends.
#[derive(Debug)]
pub struct KafkaCluster {
    options: ClusterOptions,
    dir: PathBuf,
    port: u16,
    controller_port: u16,
    cluster_id: String,
    security: Option<SecureListeners>,
    oauth_listener: Option<String>,
    broker: Mutex<Option<Guarded>>,
    /// Removes the folder when the process ends; `None` only while a start is retried.
    janitor: Option<Guarded>,
}

impl KafkaCluster {
    /// Starts a cluster called `name` with default options.
    pub fn start(name: &str) -> Result<KafkaCluster> {
        Self::start_with(ClusterOptions::new(name))
    }

    /// Starts a cluster: fetches Kafka if needed, formats a fresh log folder, starts the JVM and
    /// waits until the broker answers.
    pub fn start_with(options: ClusterOptions) -> Result<KafkaCluster> {
        let dist = KafkaDist::get()?;
        let dir = std::env::temp_dir().join(format!(
            "strait-kafka-{}-{}",
            options.name,
            uuid::Uuid::new_v4().simple()
        ));
        create_dir(&dir)?;
        let mut janitor = Some(Guarded::janitor(&dir)?);
        write(&dir.join("log4j2.xml"), &broker_log4j2(&dir.join("broker.log")))?;
        // Free ports are found by binding and releasing them, so a process starting at the same
        // moment can take one first; the broker then fails to bind and we try other ports.
        let cluster_id = new_cluster_id();
        let credentials = if options.secure {
            write_certificates(&dir)?;
            // Random, so that a password found in some output is known to be leaked from here.
            Some(("strait".to_string(), format!("pw-{}", uuid::Uuid::new_v4().simple())))
        } else {
            None
        };
        let mut attempt = 0;
        loop {
            // Distinct: a port released can be handed out again at the next bind.
            let mut ports = DistinctPorts::default();
            let (port, controller_port) = (ports.next()?, ports.next()?);
            let security = match &credentials {
                Some((username, password)) => Some(SecureListeners {
                    sasl_ssl: format!("localhost:{}", ports.next()?),
                    ssl: format!("localhost:{}", ports.next()?),
                    sasl_plaintext: format!("127.0.0.1:{}", ports.next()?),
                    ca_pem: dir.join(CA_PEM),
                    client_pem: dir.join(CLIENT_PEM),
                    username: username.clone(),
                    password: password.clone(),
                }),
                None => None,
            };
            let oauth_listener = match options.oauth {
                Some(_) => Some(format!("127.0.0.1:{}", ports.next()?)),
                None => None,
            };
            let listeners = Listeners {
                secure: security.as_ref(),
                oauth: oauth_listener.as_deref(),
            };
            write(
                &dir.join("server.properties"),
                &server_properties(&options, &dir, Node::Combined, port, controller_port, listeners),
            )?;
            if attempt == 0 {
                format_storage(dist, &options, &dir, &cluster_id, security.as_ref())?;
            }
            let cluster = KafkaCluster {
                options: options.clone(),
                dir: dir.clone(),
                port,
                controller_port,
                cluster_id: cluster_id.clone(),
                security,
                oauth_listener,
                broker: Mutex::new(None),
                janitor: janitor.take(),
            };
            match cluster.start_broker() {
                Ok(()) => return Ok(cluster),
                Err(Error::Start { reason, .. }) if attempt < 2 && reason == "the JVM exited" => {
                    attempt += 1;
                    // Keep the janitor (and so the folder) for the next attempt.
                    janitor = Some(cluster.into_janitor());
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Gives up this cluster (its broker is not running) but keeps its folder's janitor.
    fn into_janitor(mut self) -> Guarded {
        self.kill_broker();
        self.janitor
            .take()
            .expect("a cluster has its janitor until it is given up")
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// `bootstrap.servers` for clients of this cluster.
    pub fn bootstrap_servers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The secure listeners and credentials, for a cluster started with
    /// [`ClusterOptions::secure`].
    pub fn security(&self) -> Option<&SecureListeners> {
        self.security.as_ref()
    }

    /// `127.0.0.1:port` of the `OAUTHBEARER` listener, if opened with [`ClusterOptions::oauth`].
    pub fn oauth_listener(&self) -> Option<&str> {
        self.oauth_listener.as_deref()
    }

    /// The broker's log file (`server.log` equivalent).
    pub fn log_file(&self) -> PathBuf {
        self.dir.join("broker.log")
    }

    /// Starts the broker JVM (again, after [`stop_broker`](Self::stop_broker) or
    /// [`kill_broker`](Self::kill_broker)) on the same port and data, and waits until it answers.
    pub fn start_broker(&self) -> Result<()> {
        let dist = KafkaDist::get()?;
        let mut slot = self.broker.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if slot.is_some() {
            return Ok(());
        }
        *slot = Some(start_jvm(dist, &self.options, &self.dir, self.port)?);
        Ok(())
    }

    /// Adds a broker to the cluster: node `node_id` (2, 3, …), a JVM of its own in the broker
    /// role only, using this cluster's controller. Topics created afterwards can have replicas
    /// on it, so that stopping one broker moves partition leaders to another.
    pub fn add_broker(&self, node_id: u32) -> Result<KafkaBroker> {
        let dist = KafkaDist::get()?;
        let name = format!("{}-broker-{node_id}", self.options.name);
        let scratch = ScratchDir::new(&format!("kafka-{name}"))?;
        let dir = scratch.path();
        write(&dir.join("log4j2.xml"), &broker_log4j2(&dir.join("broker.log")))?;
        let port = free_port()?;
        let node = Node::Broker(node_id);
        let text = server_properties(
            &self.options,
            dir,
            node,
            port,
            self.controller_port,
            Listeners::default(),
        );
        write(&dir.join("server.properties"), &text)?;
        let options = ClusterOptions {
            name,
            ..self.options.clone()
        };
        format_storage(dist, &options, dir, &self.cluster_id, None)?;
        let process = start_jvm(dist, &options, dir, port)?;
        Ok(KafkaBroker {
            options,
            dir: scratch,
            port,
            process: Mutex::new(Some(process)),
        })
    }

    /// Stops the broker cleanly (SIGTERM, controlled shutdown), keeping its data.
    pub fn stop_broker(&self) {
        if let Some(process) = self
            .broker
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
        {
            process.terminate(Duration::from_secs(30));
        }
    }

    /// Kills the broker at once (SIGKILL, as in a crash), keeping its data.
    pub fn kill_broker(&self) {
        self.broker
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    }
}

impl Drop for KafkaCluster {
    fn drop(&mut self) {
        self.kill_broker();
    }
}

/// Which node of a cluster a `server.properties` is for.
#[derive(Debug, Clone, Copy)]
enum Node {
    /// The first node, node 1: broker and the cluster's controller.
    Combined,
    /// A node added by [`KafkaCluster::add_broker`]: a broker only, with node 1 as controller.
    Broker(u32),
}

/// The listeners a node opens beside PLAINTEXT and CONTROLLER.
#[derive(Debug, Default, Clone, Copy)]
struct Listeners<'a> {
    secure: Option<&'a SecureListeners>,
    oauth: Option<&'a str>,
}

fn server_properties(
    options: &ClusterOptions,
    dir: &Path,
    node: Node,
    port: u16,
    controller_port: u16,
    listeners_beside: Listeners<'_>,
) -> String {
    let (roles, node_id, listeners) = match node {
        Node::Combined => (
            "broker,controller",
            1,
            format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}"),
        ),
        Node::Broker(node_id) => ("broker", node_id, format!("PLAINTEXT://127.0.0.1:{port}")),
    };
    let mut properties = vec![
        ("process.roles".to_string(), roles.to_string()),
        ("node.id".into(), node_id.to_string()),
        (
            "controller.quorum.voters".into(),
            format!("1@127.0.0.1:{controller_port}"),
        ),
        ("listeners".into(), listeners),
        ("advertised.listeners".into(), format!("PLAINTEXT://127.0.0.1:{port}")),
        ("controller.listener.names".into(), "CONTROLLER".into()),
        ("inter.broker.listener.name".into(), "PLAINTEXT".into()),
        (
            "listener.security.protocol.map".into(),
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
        ),
        ("log.dirs".into(), dir.join("data").display().to_string()),
        ("num.partitions".into(), "1".into()),
        ("offsets.topic.replication.factor".into(), "1".into()),
        ("offsets.topic.num.partitions".into(), "5".into()),
        ("transaction.state.log.replication.factor".into(), "1".into()),
        ("transaction.state.log.min.isr".into(), "1".into()),
        ("transaction.state.log.num.partitions".into(), "5".into()),
        ("share.coordinator.state.topic.replication.factor".into(), "1".into()),
        ("share.coordinator.state.topic.min.isr".into(), "1".into()),
        ("group.initial.rebalance.delay.ms".into(), "0".into()),
        ("log.flush.interval.messages".into(), "9223372036854775807".into()),
    ];
    let mut beside = Vec::new();
    if let Some(security) = listeners_beside.secure {
        beside.extend(secure_properties(dir, security));
    }
    if let (Some(address), Some(oauth)) = (listeners_beside.oauth, &options.oauth) {
        beside.extend(oauth_properties(address, oauth));
    }
    // Listener lists gain the listeners beside; other keys are new.
    for (key, value) in beside {
        match properties.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => *existing = format!("{existing},{value}"),
            None => properties.push((key, value)),
        }
    }
    properties.extend(options.properties.iter().cloned());
    properties.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

/// Starts the JVM of the node in `dir` (its `server.properties`) and waits until it answers on
/// `port`.
fn start_jvm(dist: &KafkaDist, options: &ClusterOptions, dir: &Path, port: u16) -> Result<Guarded> {
    let gc: &[&str] = if options.kafka_jvm {
        crate::KAFKA_JVM_PERFORMANCE_OPTIONS
    } else {
        &["-XX:+UseSerialGC"]
    };
    let mut jvm_options: Vec<String> = gc.iter().map(|o| o.to_string()).collect();
    if let Some(oauth) = &options.oauth {
        jvm_options.push(format!(
            "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={}",
            oauth.jwks_url
        ));
    }
    let jvm_options: Vec<&str> = jvm_options.iter().map(String::as_str).collect();
    let mut command = dist.jvm(&options.heap, &dir.join("log4j2.xml"), &jvm_options, "kafka.Kafka");
    command.arg(dir.join("server.properties"));
    let process = Guarded::spawn(&command, &dir.join("stdout.log"))?;
    let deadline = Instant::now() + START_TIMEOUT;
    let failed = |reason: String| {
        let log = dir.join("broker.log");
        Error::Start {
            cluster: options.name.clone(),
            reason,
            log_tail: tail(&log, 30) + &tail(&dir.join("stdout.log"), 10),
            log,
        }
    };
    loop {
        if !process.is_running() {
            return Err(failed("the JVM exited".into()));
        }
        if api_versions_ok(port) {
            return Ok(process);
        }
        if Instant::now() > deadline {
            return Err(failed(format!("no answer on port {port} within {START_TIMEOUT:?}")));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A broker added to a cluster with [`KafkaCluster::add_broker`]. Dropping it kills its JVM
/// and removes its folder.
#[derive(Debug)]
pub struct KafkaBroker {
    options: ClusterOptions,
    dir: ScratchDir,
    port: u16,
    process: Mutex<Option<Guarded>>,
}

impl KafkaBroker {
    /// `host:port` of this broker.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops it cleanly (SIGTERM, controlled shutdown: its partition leaders move first).
    pub fn stop(&self) {
        if let Some(process) = self.process.lock().unwrap_or_else(|p| p.into_inner()).take() {
            process.terminate(Duration::from_secs(30));
        }
    }

    /// Starts it again on the same port and data, and waits until it answers.
    pub fn start(&self) -> Result<()> {
        let mut slot = self.process.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(start_jvm(KafkaDist::get()?, &self.options, self.dir.path(), self.port)?);
        }
        Ok(())
    }
}

fn broker_log4j2(log: &Path) -> String {
    format!(
        r#"<Configuration status="WARN">
  <Appenders><File name="F" fileName="{}"><PatternLayout pattern="[%d] %p %m (%c)%n"/></File></Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="F"/></Root>
    <Logger name="kafka.request.logger" level="WARN"/>
  </Loggers>
</Configuration>
"#,
        log.display()
    )
}

/// A fresh KRaft cluster id. Like Kafka's Uuid.randomUuid, never starting with '-': the
/// storage tool would read it as an option.
fn new_cluster_id() -> String {
    std::iter::repeat_with(|| base64url(uuid::Uuid::new_v4().as_bytes()))
        .find(|id| !id.starts_with('-'))
        .expect("an endless supply of ids")
}

fn format_storage(
    dist: &KafkaDist,
    options: &ClusterOptions,
    dir: &Path,
    cluster_id: &str,
    security: Option<&SecureListeners>,
) -> Result<()> {
    let mut command = dist.java("kafka.tools.StorageTool");
    command
        .args(["format", "-t", cluster_id, "-c"])
        .arg(dir.join("server.properties"));
    for (name, level) in &options.features {
        command.arg("--feature").arg(format!("{name}={level}"));
    }
    if let Some(security) = security {
        // SCRAM credentials live in the metadata log; writing them at format time means they
        // exist before the first client connects.
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            command.arg("--add-scram").arg(format!(
                "{mechanism}=[name={},password={}]",
                security.username, security.password
            ));
        }
    }
    let output = command.output().map_err(|source| Error::Spawn {
        program: "java".into(),
        source,
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::Format {
            cluster: options.name.clone(),
            output: String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into(),
        })
    }
}

/// Kafka cluster ids are 16 random bytes in URL-safe base64 without padding.
fn base64url(bytes: &[u8; 16]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = String::new();
    for &byte in bytes {
        bits = (bits << 8) | u32::from(byte);
        nbits += 8;
        while nbits >= 6 {
            nbits -= 6;
            out.push(ALPHABET[((bits >> nbits) & 63) as usize] as char);
        }
    }
    if nbits > 0 {
        out.push(ALPHABET[((bits << (6 - nbits)) & 63) as usize] as char);
    }
    out
}

/// A free TCP port on loopback, for a server about to start.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|source| Error::Io {
        what: "binding a free port on",
        path: "127.0.0.1".into(),
        source,
    })?;
    Ok(listener.local_addr().expect("a bound listener has an address").port())
}

/// Free ports, none handed out twice.
#[derive(Default)]
struct DistinctPorts(Vec<u16>);

impl DistinctPorts {
    fn next(&mut self) -> Result<u16> {
        loop {
            let port = free_port()?;
            if !self.0.contains(&port) {
                self.0.push(port);
                return Ok(port);
            }
        }
    }
}

/// Sends ApiVersions v0 and checks that the broker answers it without an error.
fn api_versions_ok(port: u16) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        // size, api_key 18, api_version 0, correlation_id 1, client_id null.
        stream.write_all(&[0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff])?;
        let mut head = [0u8; 10];
        stream.read_exact(&mut head)?;
        Ok(head[4..8] == [0, 0, 0, 1] && head[8..10] == [0, 0])
    };
    attempt().unwrap_or(false)
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_ids_are_22_characters_of_url_safe_base64() {
        assert_eq!(base64url(&[0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(base64url(&[0xff; 16]), "_____________________w");
    }
}

/// The secure listeners of a cluster started with [`ClusterOptions::secure`].
#[derive(Debug, Clone)]
pub struct SecureListeners {
    /// `localhost:port` of the `SASL_SSL` listener (SCRAM-SHA-256 and SCRAM-SHA-512).
    pub sasl_ssl: String,
    /// `localhost:port` of the `SSL` listener, which requires a client certificate.
    pub ssl: String,
    /// `127.0.0.1:port` of the `SASL_PLAINTEXT` listener (PLAIN).
    pub sasl_plaintext: String,
    /// PEM file with the CA certificate that signed the broker's and the client's certificates.
    /// The broker's names only `localhost` (no IP address), so connecting to `127.0.0.1` with
    /// host name verification fails.
    pub ca_pem: PathBuf,
    /// PEM file with a client private key and its certificate chain, for the `SSL` listener.
    pub client_pem: PathBuf,
    /// The user known to every SASL mechanism.
    pub username: String,
    /// Its password.
    pub password: String,
}

const CA_PEM: &str = "ca.pem";
const BROKER_PEM: &str = "broker.pem";
const CLIENT_PEM: &str = "client.pem";

/// Writes a CA, a broker key store for `localhost` and a client key store, all PEM (Kafka reads
/// `ssl.keystore.type=PEM` with an unencrypted PKCS#8 key).
fn write_certificates(dir: &Path) -> Result<()> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let failed = |e: rcgen::Error| Error::Io {
        what: "generating test certificates for",
        path: dir.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let ca_key = KeyPair::generate().map_err(failed)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "Strait test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(failed)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |name: &str, sans: Vec<String>| -> Result<String> {
        let key = KeyPair::generate().map_err(failed)?;
        let mut params = CertificateParams::new(sans).map_err(failed)?;
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &issuer).map_err(failed)?;
        Ok(format!("{}{}{}", key.serialize_pem(), cert.pem(), ca_cert.pem()))
    };
    write(&dir.join(CA_PEM), &ca_cert.pem())?;
    write(&dir.join(BROKER_PEM), &leaf("localhost", vec!["localhost".into()])?)?;
    write(&dir.join(CLIENT_PEM), &leaf("strait-client", Vec::new())?)?;
    Ok(())
}

/// The `OAUTH` listener (SASL_PLAINTEXT with OAUTHBEARER) and how its broker validates tokens.
fn oauth_properties(address: &str, oauth: &OAuthOptions) -> Vec<(String, String)> {
    let prefix = "listener.name.oauth.oauthbearer.";
    [
        ("listeners", format!("OAUTH://{address}")),
        ("advertised.listeners", format!("OAUTH://{address}")),
        ("listener.security.protocol.map", "OAUTH:SASL_PLAINTEXT".into()),
        ("listener.name.oauth.sasl.enabled.mechanisms", "OAUTHBEARER".into()),
        (
            &format!("{prefix}sasl.jaas.config"),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;".into(),
        ),
        (
            &format!("{prefix}sasl.server.callback.handler.class"),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler".into(),
        ),
        (
            &format!("{prefix}connections.max.reauth.ms"),
            oauth.reauth.as_millis().to_string(),
        ),
        ("sasl.oauthbearer.jwks.endpoint.url", oauth.jwks_url.clone()),
        ("sasl.oauthbearer.expected.issuer", oauth.issuer.clone()),
        ("sasl.oauthbearer.expected.audience", oauth.audience.clone()),
        ("sasl.oauthbearer.clock.skew.seconds", "0".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn secure_properties(dir: &Path, security: &SecureListeners) -> Vec<(String, String)> {
    let port = |address: &str| address.rsplit_once(':').map_or("0", |(_, p)| p).to_owned();
    let (sasl_ssl, ssl, sasl_plaintext) = (
        port(&security.sasl_ssl),
        port(&security.ssl),
        port(&security.sasl_plaintext),
    );
    let scram_jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;".to_string();
    [
        (
            "listeners",
            format!(
                "SASL_SSL://127.0.0.1:{sasl_ssl},SSL://127.0.0.1:{ssl},SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext}"
            ),
        ),
        (
            "advertised.listeners",
            format!(
                "SASL_SSL://{},SSL://{},SASL_PLAINTEXT://{}",
                security.sasl_ssl, security.ssl, security.sasl_plaintext
            ),
        ),
        (
            "listener.security.protocol.map",
            "SASL_SSL:SASL_SSL,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT".into(),
        ),
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.location", dir.join(BROKER_PEM).display().to_string()),
        ("ssl.truststore.type", "PEM".into()),
        ("ssl.truststore.location", dir.join(CA_PEM).display().to_string()),
        ("listener.name.ssl.ssl.client.auth", "required".into()),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN".into()),
        (
            "listener.name.sasl_ssl.sasl.enabled.mechanisms",
            "SCRAM-SHA-256,SCRAM-SHA-512".into(),
        ),
        (
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
            scram_jaas.clone(),
        ),
        ("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", scram_jaas),
        ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN".into()),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            format!(
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_{}=\"{}\";",
                security.username, security.password
            ),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
