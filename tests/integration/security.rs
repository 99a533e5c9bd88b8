//! Security against the shared clusters' secure listeners: the mirror over SASL_SSL with SCRAM,
//! a wrong password failing clearly without leaking, TLS host name checks, client
//! certificates and SASL PLAIN.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strait_client::{ClientConfig, Error, KafkaClient, Security};
use strait_testkit::{ClusterOptions, KafkaCluster, SecureListeners};
use strait_tests::*;

use crate::mirror::{check_numbered, write_numbered, write_numbered_from};

fn secure(cluster: &KafkaCluster) -> &SecureListeners {
    cluster.security().expect("the shared clusters have secure listeners")
}

fn scram_jaas(username: &str, password: &str) -> String {
    format!(
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="{username}" password="{password}";"#
    )
}

/// Connects to `bootstrap` with the Java client keys `props`.
async fn connect(bootstrap: &str, props: &[(&str, String)]) -> Result<KafkaClient, Error> {
    let props: BTreeMap<String, String> = props.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let mut config = ClientConfig::new(bootstrap);
    config.connection.security = Security::from_properties(&props)?;
    config.connection.connect_timeout = Duration::from_secs(10);
    KafkaClient::connect(config).await
}

/// The `mm2.properties` lines of `alias` connecting over SASL_SSL with SCRAM.
pub(crate) fn sasl_ssl_lines(alias: &str, listeners: &SecureListeners, mechanism: &str, password: &str) -> String {
    format!(
        "{alias}.bootstrap.servers = {}\n\
         {alias}.security.protocol = SASL_SSL\n\
         {alias}.sasl.mechanism = {mechanism}\n\
         {alias}.sasl.jaas.config = {}\n\
         {alias}.ssl.truststore.type = PEM\n\
         {alias}.ssl.truststore.location = {}\n",
        listeners.sasl_ssl,
        scram_jaas(&listeners.username, password),
        listeners.ca_pem.display()
    )
}

/// `properties` with a `strait.group.id` of their own, so that the `strait run`s of other tests
/// into the shared target do not meet this one in a group.
fn with_own_group(properties: &str) -> String {
    format!("{properties}\nstrait.group.id = {}\n", unique("strait-test"))
}

/// Runs `strait run` on `properties` until it exits or `limit` passes; returns (exit success,
/// stdout + stderr, elapsed).
fn run_to_exit(properties: &str, limit: Duration) -> (Option<bool>, String, Duration) {
    let config = std::env::temp_dir().join(format!("{}.properties", unique("security")));
    std::fs::write(&config, with_own_group(properties)).unwrap();
    let binary = strait_binary(); // Built on first use: not part of the time limit.
    let start = Instant::now();
    let mut child = Command::new(binary)
        .arg("run")
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut success = None;
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            success = Some(status.success());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if success.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&config);
    let text = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
    (success, text, start.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn mirrors_between_sasl_ssl_clusters_with_scram() {
    let clusters = clusters();
    let (source_tls, target_tls) = (secure(&clusters.source), secure(&clusters.target));
    let source = client(&clusters.source).await;
    let topic = unique("scram");
    let records = 5_000;
    create_topic(&source, &topic, 2).await;
    java_produce(&clusters.source.bootstrap_servers(), &topic, records, 100, "lz4");

    // The target's CA goes inline (ssl.truststore.certificates), the source's by file.
    let ca = std::fs::read_to_string(&target_tls.ca_pem).unwrap();
    let target_lines = sasl_ssl_lines("target", target_tls, "SCRAM-SHA-512", &target_tls.password).replace(
        &format!("target.ssl.truststore.location = {}\n", target_tls.ca_pem.display()),
        &format!(
            "target.ssl.truststore.certificates = {}\n",
            ca.trim().replace('\n', "\\n")
        ),
    );
    let properties = format!(
        "clusters = source, target\n{}{target_lines}\
         source->target.enabled = true\n\
         source->target.topics = {topic}\n\
         replication.factor = 1\n",
        sasl_ssl_lines("source", source_tls, "SCRAM-SHA-256", &source_tls.password),
    );
    let (took, stderr) = mirror_topic(&properties, &[], &topic, records).await;
    assert!(!stderr.contains(&source_tls.password) && !stderr.contains(&target_tls.password));
    println!("SASL_SSL/SCRAM mirror: {records} records in {took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_from_strimzis_config_providers_mirror_over_sasl_ssl() {
    let clusters = clusters();
    let (source_tls, target_tls) = (secure(&clusters.source), secure(&clusters.target));
    let source = client(&clusters.source).await;
    let topic = unique("providers");
    let records = 3_000;
    create_topic(&source, &topic, 2).await;
    java_produce(&clusters.source.bootstrap_servers(), &topic, records, 100, "lz4");

    // Where Strimzi mounts a KafkaMirrorMaker2's secrets, under a folder of the test's own.
    let root = std::env::temp_dir().join(unique("mm2-secrets"));
    let password_dir = root.join("mm2-password/source/mirror-user");
    std::fs::create_dir_all(&password_dir).unwrap();
    std::fs::write(password_dir.join("password"), &source_tls.password).unwrap();
    let target_file = root.join("target.properties");
    std::fs::write(
        &target_file,
        format!(
            "bootstrap.servers = {}
password = {}
",
            target_tls.sasl_ssl, target_tls.password
        ),
    )
    .unwrap();
    let variable = format!("STRAIT_SOURCE_BOOTSTRAP_{}", std::process::id());
    let (root, file) = (root.display(), target_file.display());
    let properties = format!(
        "clusters = source, target
         config.providers = strimzienv, strimzifile, strimzidir
         config.providers.strimzienv.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
         config.providers.strimzienv.param.allowlist.pattern = STRAIT_.*
         config.providers.strimzifile.class = org.apache.kafka.common.config.provider.FileConfigProvider
         config.providers.strimzifile.param.allowed.paths = {root}
         config.providers.strimzidir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider
         config.providers.strimzidir.param.allowed.paths = {root}
         source.bootstrap.servers = ${{strimzienv:{variable}}}
         source.security.protocol = SASL_SSL
         source.sasl.mechanism = SCRAM-SHA-256
         source.sasl.jaas.config = {}
         source.ssl.truststore.type = PEM
         source.ssl.truststore.location = {}
         target.bootstrap.servers = ${{strimzifile:{file}:bootstrap.servers}}
         target.security.protocol = SASL_SSL
         target.sasl.mechanism = SCRAM-SHA-512
         target.sasl.jaas.config = {}
         target.ssl.truststore.type = PEM
         target.ssl.truststore.location = {}
         source->target.enabled = true
         source->target.topics = {topic}
         replication.factor = 1
",
        scram_jaas(
            &source_tls.username,
            &format!("${{strimzidir:{root}/mm2-password/source/mirror-user:password}}")
        ),
        source_tls.ca_pem.display(),
        scram_jaas(&target_tls.username, &format!("${{strimzifile:{file}:password}}")),
        target_tls.ca_pem.display(),
    );
    let env = [(variable.as_str(), source_tls.sasl_ssl.as_str())];

    // check-config resolves the same placeholders, and prints none of their values.
    let config = std::env::temp_dir().join(format!("{topic}-check.properties"));
    std::fs::write(&config, &properties).unwrap();
    let output = Command::new(strait_binary())
        .arg("check-config")
        .arg(&config)
        .env(env[0].0, env[0].1)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(
        !text.contains(&source_tls.password) && !text.contains(&target_tls.password),
        "{text}"
    );
    assert!(
        text.contains(&format!("${{strimzienv:{variable}}}")),
        "shown as written: {text}"
    );
    let unset = Command::new(strait_binary())
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    let unset = String::from_utf8_lossy(&unset.stderr);
    assert!(
        unset.contains(&format!("environment variable `{variable}` is not set")),
        "{unset}"
    );
    let _ = std::fs::remove_file(&config);

    let (took, stderr) = mirror_topic(&properties, &env, &topic, records).await;
    assert!(!stderr.contains(&source_tls.password) && !stderr.contains(&target_tls.password));
    println!("SASL_SSL mirror with secrets from config providers: {records} records in {took:?}");
}

/// Runs `strait run` on `properties` (with the environment variables `env`) until the
/// `records` records of `topic` are on the target as `source.<topic>`, stops it with SIGTERM and
/// checks that it exited cleanly with exactly those records copied. Returns how long the copy
/// took and what the mirror wrote to stderr.
async fn mirror_topic(properties: &str, env: &[(&str, &str)], topic: &str, records: u64) -> (Duration, String) {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, with_own_group(properties)).unwrap();
    let binary = strait_binary(); // Built on first use: not part of the timing.
    let started = Instant::now();
    let mut mirror = Command::new(binary)
        .arg("run")
        .arg(&config)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let remote = format!("source.{topic}");
    let total = end_offsets(&source, topic).await;
    assert_eq!(total, records as i64);
    let deadline = Instant::now() + WAIT;
    while end_offsets(&target, &remote).await < total {
        if let Some(status) = mirror.try_wait().unwrap() {
            let output = mirror.wait_with_output().unwrap();
            panic!(
                "the mirror exited ({status}): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {total} records on the target"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = started.elapsed();
    Command::new("kill")
        .args(["-TERM", &mirror.id().to_string()])
        .status()
        .unwrap();
    let output = mirror.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "a clean stop exits 0: {stderr}");
    let _ = std::fs::remove_file(&config);
    assert_eq!(
        end_offsets(&target, &remote).await,
        total,
        "exactly the source's records"
    );
    (took, stderr)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_password_stops_the_mirror_with_a_clear_message() {
    let clusters = clusters();
    let (source_tls, target_tls) = (secure(&clusters.source), secure(&clusters.target));
    let wrong = format!("wrong-{}", unique("pw"));
    let properties = format!(
        "clusters = source, target\n{}{}\
         source->target.enabled = true\n\
         source->target.topics = {}\n\
         replication.factor = 1\n",
        sasl_ssl_lines("source", source_tls, "SCRAM-SHA-256", &wrong),
        sasl_ssl_lines("target", target_tls, "SCRAM-SHA-512", &target_tls.password),
        unique("never"),
    );
    let (success, output, took) = run_to_exit(&properties, Duration::from_secs(60));
    assert_eq!(success, Some(false), "the mirror must exit non-zero in time: {output}");
    assert!(
        output.contains("SASL_AUTHENTICATION_FAILED") && output.contains("source cluster"),
        "{output}"
    );
    assert!(output.contains("sasl.jaas.config"), "says what to check: {output}");
    assert!(!output.contains(&wrong), "the password leaked: {output}");
    println!("wrong password: exit after {took:?}:\n{output}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_settings_stop_the_mirror_naming_cluster_and_key() {
    let clusters = clusters();
    let target_tls = secure(&clusters.target);
    let properties = format!(
        "clusters = source, target\n\
         source.bootstrap.servers = {}\n\
         source.security.protocol = SASL_SSL\n\
         source.sasl.mechanism = GSSAPI\n\
         source.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;\n\
         {}source->target.enabled = true\n\
         replication.factor = 1\n",
        secure(&clusters.source).sasl_ssl,
        sasl_ssl_lines("target", target_tls, "SCRAM-SHA-512", &target_tls.password),
    );
    let (success, output, _) = run_to_exit(&properties, Duration::from_secs(60));
    assert_eq!(success, Some(false), "{output}");
    assert!(
        output.contains("source cluster: sasl.mechanism: GSSAPI is not supported"),
        "{output}"
    );
    // check-config reads the security settings as run does, so it refuses them too.
    let config = std::env::temp_dir().join(format!("{}.properties", unique("check")));
    std::fs::write(&config, &properties).unwrap();
    let output = Command::new(strait_binary())
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("source cluster: sasl.mechanism: GSSAPI"), "{stderr}");
    assert!(!stderr.contains(&target_tls.password), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_checks_host_names_and_trust() {
    let listeners = secure(&clusters().source);
    let scram = |verify: &str| {
        vec![
            ("security.protocol", "SASL_SSL".to_string()),
            ("sasl.mechanism", "SCRAM-SHA-512".to_string()),
            ("sasl.jaas.config", scram_jaas(&listeners.username, &listeners.password)),
            ("ssl.truststore.type", "PEM".to_string()),
            ("ssl.truststore.location", listeners.ca_pem.display().to_string()),
            ("ssl.endpoint.identification.algorithm", verify.to_string()),
        ]
    };
    // The broker's certificate names `localhost` only.
    let by_ip = listeners.sasl_ssl.replace("localhost", "127.0.0.1");
    match connect(&by_ip, &scram("https")).await {
        Err(Error::Tls { message, hint, .. }) => {
            assert!(message.contains("not valid for name"), "{message}");
            assert!(hint.contains("ssl.endpoint.identification.algorithm"), "{hint}");
        }
        other => panic!("expected a TLS name error, got {other:?}"),
    }
    let client = connect(&by_ip, &scram("")).await.expect("no host name check");
    assert!(!client.metadata(Some(&[])).await.unwrap().brokers.is_empty());
    connect(&listeners.sasl_ssl, &scram("https"))
        .await
        .expect("the certificate's own name");

    // Without our CA the public roots do not trust the broker.
    let mut untrusted = scram("https");
    untrusted.retain(|(k, _)| !k.starts_with("ssl.truststore"));
    match connect(&listeners.sasl_ssl, &untrusted).await {
        Err(Error::Tls { hint, .. }) => assert!(hint.contains("ssl.truststore"), "{hint}"),
        other => panic!("expected an untrusted certificate error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mutual_tls_and_sasl_plain() {
    let listeners = secure(&clusters().target);
    let ssl = |with_certificate: bool| {
        let mut props = vec![
            ("security.protocol", "SSL".to_string()),
            ("ssl.truststore.type", "PEM".to_string()),
            ("ssl.truststore.location", listeners.ca_pem.display().to_string()),
        ];
        if with_certificate {
            props.push(("ssl.keystore.type", "PEM".to_string()));
            props.push(("ssl.keystore.location", listeners.client_pem.display().to_string()));
        }
        props
    };
    let client = connect(&listeners.ssl, &ssl(true)).await.expect("mutual TLS");
    assert!(!client.metadata(Some(&[])).await.unwrap().brokers.is_empty());
    // TLS 1.3 finishes the client's side of the handshake before the broker checks for a
    // certificate, so the refusal may surface on the first request instead.
    let refused = connect(&listeners.ssl, &ssl(false)).await;
    assert!(refused.is_err(), "the SSL listener requires a client certificate");

    let plain = |password: &str| {
        vec![
            ("security.protocol", "SASL_PLAINTEXT".to_string()),
            ("sasl.mechanism", "PLAIN".to_string()),
            (
                "sasl.jaas.config",
                format!(
                    r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="{}" password="{password}";"#,
                    listeners.username
                ),
            ),
        ]
    };
    let client = connect(&listeners.sasl_plaintext, &plain(&listeners.password))
        .await
        .expect("SASL PLAIN");
    assert!(!client.metadata(Some(&[])).await.unwrap().brokers.is_empty());
    let wrong = "not-the-password";
    let error = connect(&listeners.sasl_plaintext, &plain(wrong)).await.unwrap_err();
    assert_eq!(
        error.kafka_code().map(|c| c.name()).as_deref(),
        Some("SASL_AUTHENTICATION_FAILED"),
        "{error}"
    );
    let text = format!("{error} {error:?}");
    assert!(
        text.contains(&listeners.sasl_plaintext) && !text.contains(wrong),
        "{text}"
    );
    // PLAIN is not enabled on the SCRAM listener: the broker says which mechanisms are.
    let error = connect(
        &listeners.sasl_ssl,
        &[
            plain(&listeners.password),
            vec![
                ("security.protocol", "SASL_SSL".to_string()),
                ("ssl.truststore.type", "PEM".to_string()),
                ("ssl.truststore.location", listeners.ca_pem.display().to_string()),
            ],
        ]
        .concat(),
    )
    .await
    .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("UNSUPPORTED_SASL_MECHANISM") && text.contains("SCRAM-SHA-256"),
        "{text}"
    );
}

/// Runs `program` with `args`, failing the test with its output when it fails.
fn run_tool(program: &str, args: &[&str]) {
    let output = Command::new(program).args(args).output().unwrap_or_else(|e| {
        panic!("`{program}` cannot run ({e}); it comes with the JDK (keytool) or Debian's openssl")
    });
    assert!(
        output.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn jks_and_pkcs12_stores_made_by_keytool_connect_with_mutual_tls() {
    let listeners = secure(&clusters().target);
    let dir = std::env::temp_dir().join(unique("stores"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    let (store_password, key_password) = ("store-secret-1", "key-secret-2");
    let ca = listeners.ca_pem.display().to_string();
    for (kind, file) in [("JKS", "trust.jks"), ("PKCS12", "trust.p12")] {
        run_tool(
            "keytool",
            &[
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                &ca,
                "-keystore",
                &path(file),
                "-storetype",
                kind,
                "-storepass",
                store_password,
            ],
        );
    }
    // The client's key and chain, packed by openssl, then turned by keytool into a JKS store
    // (whose key has a password of its own) and into a PKCS12 store of Java's making.
    let client = listeners.client_pem.display().to_string();
    let packed = path("client-openssl.p12");
    run_tool(
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-in",
            &client,
            "-out",
            &packed,
            "-name",
            "client",
            "-passout",
            &format!("pass:{store_password}"),
        ],
    );
    let import = |file: &str, kind: &str, key_pass: &[&str]| {
        let destination = path(file);
        let mut args = vec![
            "-importkeystore",
            "-noprompt",
            "-srckeystore",
            &packed,
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            store_password,
            "-destkeystore",
            &destination,
            "-deststoretype",
            kind,
            "-deststorepass",
            store_password,
        ];
        args.extend_from_slice(key_pass);
        run_tool("keytool", &args);
    };
    import(
        "client.jks",
        "JKS",
        &["-destkeypass", key_password, "-srcalias", "client"],
    );
    import("client.p12", "PKCS12", &[]);

    let props = |kind: &str, trust: &str, keys: &str, store: &str, key: Option<&str>| {
        let mut props = vec![
            ("security.protocol", "SSL".to_string()),
            ("ssl.truststore.type", kind.to_string()),
            ("ssl.truststore.location", path(trust)),
            ("ssl.truststore.password", store_password.to_string()),
            ("ssl.keystore.type", kind.to_string()),
            ("ssl.keystore.location", path(keys)),
            ("ssl.keystore.password", store.to_string()),
        ];
        if let Some(key) = key {
            props.push(("ssl.key.password", key.to_string()));
        }
        props
    };
    let jks = props("JKS", "trust.jks", "client.jks", store_password, Some(key_password));
    let pkcs12 = props("PKCS12", "trust.p12", "client.p12", store_password, None);
    for (kind, props) in [("JKS", &jks), ("PKCS12", &pkcs12)] {
        let client = connect(&listeners.ssl, props)
            .await
            .unwrap_or_else(|e| panic!("mutual TLS with {kind} stores: {e}"));
        assert!(!client.metadata(Some(&[])).await.unwrap().brokers.is_empty());
    }

    // Wrong passwords fail at once, naming the key and the store, and never echo a password.
    let wrong = "not-the-password";
    let cases = [
        (
            props("PKCS12", "trust.p12", "client.p12", wrong, None),
            "ssl.keystore.location",
            "client.p12",
            "wrong password",
        ),
        (
            props("JKS", "trust.jks", "client.jks", wrong, Some(key_password)),
            "ssl.keystore.location",
            "client.jks",
            "wrong password",
        ),
        (
            props("JKS", "trust.jks", "client.jks", store_password, Some(wrong)),
            "ssl.keystore.location",
            "client.jks",
            "wrong key password",
        ),
        (
            props("JKS", "trust.p12", "client.jks", store_password, Some(key_password)),
            "ssl.truststore.location",
            "trust.p12",
            "looks like PKCS12",
        ),
    ];
    for (props, key, file, says) in cases {
        let error = connect(&listeners.ssl, &props).await.unwrap_err().to_string();
        assert!(
            error.contains(key) && error.contains(file) && error.contains(says),
            "{error}"
        );
        assert!(
            !error.contains(wrong) && !error.contains(store_password) && !error.contains(key_password),
            "{error}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sets the SCRAM-SHA-256 password of `user` on `cluster` (the broker alters one credential of
/// a user per request), with Kafka's own tool.
async fn set_scram_password(cluster: &KafkaCluster, user: &str, password: &str) {
    let bootstrap = cluster.bootstrap_servers();
    let user = user.to_owned();
    let credentials = format!("SCRAM-SHA-256=[password={password}]");
    tokio::task::spawn_blocking(move || {
        java_tool(
            "kafka.admin.ConfigCommand",
            &[
                "--bootstrap-server",
                &bootstrap,
                "--alter",
                "--add-config",
                &credentials,
                "--entity-type",
                "users",
                "--entity-name",
                &user,
            ],
        )
    })
    .await
    .unwrap();
}

/// A password rotated on the source mid-run (its SASL sessions end after 3 s unless
/// re-authenticated, KIP-368, and re-authentication is refused): the partitions turn `failing`
/// with the broker's authentication error within the documented bound, `/health` says so, and
/// once the broker takes the configured password again they mirror on by themselves.
#[tokio::test(flavor = "multi_thread")]
async fn a_password_changed_on_the_source_mid_run_turns_its_partitions_failing_until_it_is_fixed() {
    let source_cluster = tokio::task::spawn_blocking(|| {
        KafkaCluster::start_with(
            ClusterOptions::new("rotated-source")
                .secure()
                .property("listener.name.sasl_ssl.connections.max.reauth.ms", "3000"),
        )
        .unwrap()
    })
    .await
    .unwrap();
    let listeners = secure(&source_cluster);
    let clusters = clusters();
    let source = client(&source_cluster).await;
    let target = client(&clusters.target).await;
    let topic = unique("rotated");
    let remote = format!("source.{topic}");
    let (partitions, batches, per_batch) = (2, 10, 100);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    // The default request.timeout.ms, 30 s: the bound is 35 s.
    let properties = format!(
        "clusters = source, target\n{}\
         target.bootstrap.servers = {}\n\
         source->target.enabled = true\n\
         source->target.topics = {topic}\n\
         replication.factor = 1\n\
         strait.group.id = {}\n",
        sasl_ssl_lines("source", listeners, "SCRAM-SHA-256", &listeners.password),
        clusters.target.bootstrap_servers(),
        unique("strait-test"),
    );
    let mirror = start_mirror(&properties);
    let first = i64::from(partitions) * (batches * per_batch) as i64;
    wait_until_complete(&target, &remote, first).await;
    assert!(mirror.stats().is_healthy());

    set_scram_password(
        &source_cluster,
        &listeners.username,
        &format!("rotated-{}", unique("pw")),
    )
    .await;
    let rotated = Instant::now();
    write_numbered_from(&source, &topic, partitions, batches, batches, per_batch).await;
    let states = || {
        let status = mirror.stats().status();
        status["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["topic"] == topic.as_str())
            .map(|p| (p["state"].as_str().unwrap().to_owned(), p["last_error"].to_string()))
            .collect::<Vec<_>>()
    };
    wait_until("both partitions failing with the authentication error", || async {
        let states = states();
        states.len() == partitions as usize
            && states
                .iter()
                .all(|(state, error)| state == "failing" && error.contains("SASL_AUTHENTICATION_FAILED"))
    })
    .await;
    let took = rotated.elapsed();
    // The sessions end within 3 s (re-authentication is refused), then the bound: 30 s + 5 s;
    // the check runs every second.
    assert!(took < Duration::from_secs(3 + 35 + 5), "failing after {took:?}");
    assert!(!mirror.stats().is_healthy(), "/health is 503 while partitions fail");
    println!("password rotated: failing after {took:?}: {:?}", states()[0]);

    // The cause fixed: the broker takes the configured password again.
    set_scram_password(&source_cluster, &listeners.username, &listeners.password).await;
    let fixed = Instant::now();
    wait_until_complete(&target, &remote, 2 * first).await;
    wait_until("the partitions running again", || async {
        states().iter().all(|(state, _)| state == "running") && mirror.stats().is_healthy()
    })
    .await;
    println!("password fixed: mirroring again after {:?}", fixed.elapsed());
    mirror.stop().await.unwrap();
    let duplicates = check_numbered(&target, &remote, partitions, 2 * batches * per_batch).await;
    assert_eq!(duplicates, 0);
}
