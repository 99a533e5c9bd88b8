//! SASL OAUTHBEARER against the source's OAUTHBEARER listener, whose broker validates tokens
//! with Kafka's own validator against the test identity provider's JWKS: the mirror gets its
//! tokens with the client-credentials grant, keeps mirroring past their expiry and past the
//! listener's re-authentication deadline without a connection being cut, and a wrong client
//! secret stops it with a clear message.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strait_tests::*;

const HANDLER: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler";

/// The `mm2.properties` of a flow from the source's OAUTHBEARER listener to the target.
fn properties(topic: &str, client_secret: &str) -> String {
    let clusters = clusters();
    let provider = &clusters.identity_provider;
    format!(
        "clusters = source, target\n\
         source.bootstrap.servers = {}\n\
         source.security.protocol = SASL_PLAINTEXT\n\
         source.sasl.mechanism = OAUTHBEARER\n\
         source.sasl.login.callback.handler.class = {HANDLER}\n\
         source.sasl.oauthbearer.token.endpoint.url = {}\n\
         source.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         clientId=\"{}\" clientSecret=\"{client_secret}\" scope=\"kafka\";\n\
         target.bootstrap.servers = {}\n\
         source->target.enabled = true\n\
         source->target.topics = {topic}\n\
         strait.group.id = strait-test-{topic}\n\
         replication.factor = 1\n\
         emit.checkpoints.interval.seconds = 1\n",
        clusters
            .source
            .oauth_listener()
            .expect("the source has an OAUTHBEARER listener"),
        provider.token_url(),
        provider.client_id(),
        clusters.target.bootstrap_servers(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn oauthbearer_mirrors_past_token_expiry_and_reauthentication_deadlines() {
    let clusters = clusters();
    let provider = &clusters.identity_provider;
    let listener_port: u16 = clusters
        .source
        .oauth_listener()
        .unwrap()
        .rsplit_once(':')
        .unwrap()
        .1
        .parse()
        .unwrap();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("oauth");
    let remote = format!("source.{topic}");
    create_topic(&source, &topic, 2).await;
    let wave = 2_000;
    java_produce(&clusters.source.bootstrap_servers(), &topic, wave, 100, "lz4");

    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(&config, properties(&topic, provider.client_secret())).unwrap();
    let log = std::env::temp_dir().join(format!("{topic}.log"));
    let mirror = StraitProcess(
        Command::new(strait_binary())
            .arg("run")
            .arg(&config)
            .env("RUST_LOG", "info,strait_client=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let pid = mirror.0.id();
    wait_until_complete(&target, &remote, wave as i64).await;
    let tokens_at_start = provider.tokens_issued();
    let started = Instant::now();
    let connections = strait_testkit::tcp_sockets_to(pid, listener_port).unwrap();
    assert!(
        !connections.is_empty(),
        "the mirror is connected to the OAUTHBEARER listener"
    );

    // Keep data flowing past the first tokens' expiry, and so past several re-authentication
    // deadlines, until every token held at the start has been replaced.
    let mut waves = 1;
    while started.elapsed() < TOKEN_LIFETIME + REAUTHENTICATION || provider.tokens_issued() < 2 * tokens_at_start {
        assert!(
            started.elapsed() < WAIT,
            "tokens were not refreshed: {} issued, {tokens_at_start} at the start; log:\n{}",
            provider.tokens_issued(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        java_produce(&clusters.source.bootstrap_servers(), &topic, wave, 100, "lz4");
        waves += 1;
        wait_until_complete(&target, &remote, waves * wave as i64).await;
    }
    let still_open = strait_testkit::tcp_sockets_to(pid, listener_port).unwrap();
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        connections.is_subset(&still_open),
        "the broker cut connections the mirror had open (re-authentication failed): {connections:?} then \
         {still_open:?}; log:\n{output}"
    );
    assert!(output.contains("re-authenticated"), "{output}");
    assert!(
        !output.contains(provider.client_secret()),
        "the secret leaked: {output}"
    );
    assert!(mirror.terminate(), "a clean stop exits 0");
    assert_eq!(
        end_offsets(&target, &remote).await,
        waves * wave as i64,
        "exactly the source's records"
    );
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&log);
    println!(
        "OAUTHBEARER: {waves} waves of {wave} records over {:?}; {} tokens issued; connections kept: {}",
        started.elapsed(),
        provider.tokens_issued() - tokens_at_start,
        connections.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_client_secret_stops_the_mirror_with_a_clear_message() {
    let clusters = clusters();
    let provider = &clusters.identity_provider;
    let wrong = format!("wrong-{}", unique("secret"));
    let config = std::env::temp_dir().join(format!("{}.properties", unique("oauth-wrong")));
    std::fs::write(&config, properties(&unique("never"), &wrong)).unwrap();
    let binary = strait_binary(); // Built on first use: not part of the time limit.
    let started = Instant::now();
    let mut mirror = StraitProcess(
        Command::new(binary)
            .arg("run")
            .arg(&config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let status = loop {
        if let Some(status) = mirror.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < WAIT, "the mirror did not stop");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut output = String::new();
    if let Some(mut stdout) = mirror.0.stdout.take() {
        stdout.read_to_string(&mut output).unwrap();
    }
    if let Some(mut stderr) = mirror.0.stderr.take() {
        stderr.read_to_string(&mut output).unwrap();
    }
    let _ = std::fs::remove_file(&config);
    assert!(!status.success(), "{output}");
    assert!(
        output.contains(&provider.token_url()) && output.contains("HTTP 401: invalid_client"),
        "names the endpoint and its answer: {output}"
    );
    assert!(
        output.contains("source cluster") && output.contains("clientSecret"),
        "{output}"
    );
    assert!(!output.contains(&wrong), "the secret leaked: {output}");
    println!("wrong client secret: exit after {:?}:\n{output}", started.elapsed());
}
