//! Remote topics the target does not take at once: one it refuses (an ACL denying CREATE on
//! that name) while the others mirror, and one created while a target broker is down.

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use serde_json::Value;
use strait_testkit::{ClusterOptions, KafkaCluster};
use strait_tests::*;

use crate::mirror::write_numbered;
use crate::security::sasl_ssl_lines;

/// Runs Kafka's `AclCommand` against the target's PLAINTEXT listener (a super user there).
async fn acls(bootstrap: &str, args: &[&str]) {
    let mut all = vec!["--bootstrap-server".to_owned(), bootstrap.to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = all.iter().map(String::as_str).collect();
        java_tool("org.apache.kafka.tools.AclCommand", &args)
    })
    .await
    .unwrap();
}

/// The first flow of `/status`.
async fn flow_status(port: u16) -> Option<Value> {
    let (_, body) = http_get(port, "/status").await?;
    let status: Value = serde_json::from_str(&body).ok()?;
    Some(status["flows"][0].clone())
}

/// The entry of `/status` `waiting_topics` for source topic `topic`.
async fn waiting(port: u16, topic: &str) -> Option<Value> {
    let flow = flow_status(port).await?;
    flow["waiting_topics"]
        .as_array()?
        .iter()
        .find(|t| t["topic"] == topic)
        .cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_topic_the_target_refuses_waits_while_the_others_mirror() {
    // A target with an authorizer; Strait writes to it over SASL_SSL as the SCRAM user, which
    // may do anything to topics but create this one (a DENY wins over an ALLOW; CREATE on the
    // cluster is not granted, as it would allow every topic).
    let target_cluster = tokio::task::spawn_blocking(|| {
        KafkaCluster::start_with(
            ClusterOptions::new("refusing-target")
                .secure()
                .property(
                    "authorizer.class.name",
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                )
                .property("super.users", "User:ANONYMOUS"),
        )
        .unwrap()
    })
    .await
    .unwrap();
    let listeners = target_cluster.security().expect("secure listeners").clone();
    let bootstrap = target_cluster.bootstrap_servers();
    let user = format!("User:{}", listeners.username);
    let prefix = unique("refused");
    let refused = format!("{prefix}-9");
    let refused_remote = format!("source.{refused}");
    acls(
        &bootstrap,
        &[
            "--add",
            "--allow-principal",
            &user,
            "--operation",
            "All",
            "--topic",
            "*",
            "--group",
            "*",
        ],
    )
    .await;
    acls(
        &bootstrap,
        &[
            "--add",
            "--allow-principal",
            &user,
            "--operation",
            "All",
            "--transactional-id",
            "*",
        ],
    )
    .await;
    acls(
        &bootstrap,
        &[
            "--add",
            "--allow-principal",
            &user,
            "--operation",
            "Describe",
            "--operation",
            "DescribeConfigs",
            "--operation",
            "IdempotentWrite",
            "--cluster",
        ],
    )
    .await;
    let deny = [
        "--deny-principal",
        &user,
        "--operation",
        "Create",
        "--topic",
        &refused_remote,
    ];
    acls(&bootstrap, &[&["--add"][..], &deny[..]].concat()).await;

    let source = client(&clusters().source).await;
    let target = client(&target_cluster).await;
    let (topics, per_topic) = (10, 200);
    for n in 0..topics {
        let topic = format!("{prefix}-{n}");
        create_topic(&source, &topic, 1).await;
        write_numbered(&source, &topic, 1, 2, per_topic / 2).await;
    }
    let port = free_port();
    let properties = format!(
        "clusters = source, target\n\
         source.bootstrap.servers = {}\n{}\
         source->target.enabled = true\n\
         source->target.topics = {prefix}-.*\n\
         strait.http.listener = 127.0.0.1:{port}\n\
         strait.group.id = {}\n\
         replication.factor = 1\n\
         heartbeats.topic.replication.factor = 1\n\
         checkpoints.topic.replication.factor = 1\n\
         offset-syncs.topic.replication.factor = 1\n",
        clusters().source.bootstrap_servers(),
        sasl_ssl_lines("target", &listeners, "SCRAM-SHA-512", &listeners.password),
        unique("strait-test"),
    );
    let config = std::env::temp_dir().join(format!("{prefix}.properties"));
    std::fs::write(&config, properties).unwrap();
    let _mirror = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);

    // The nine others mirror completely.
    for n in 0..topics - 1 {
        wait_until_complete(&target, &format!("source.{prefix}-{n}"), per_topic as i64).await;
    }
    // The tenth waits, with the broker's reason, in /status, /metrics and /health.
    wait_until("the refused topic in /status", || async {
        waiting(port, &refused)
            .await
            .is_some_and(|t| t["reason"] == "TOPIC_AUTHORIZATION_FAILED" && t["attempts"].as_u64() >= Some(2))
    })
    .await;
    let shown = waiting(port, &refused).await.unwrap();
    assert_eq!(shown["remote_topic"], refused_remote.as_str(), "{shown}");
    let metrics = scrape(port).await;
    assert_eq!(metric(&metrics, "strait_topics_waiting", &[]), Some(1.0), "{metrics}");
    let labels = [
        format!("topic=\"{refused_remote}\""),
        "reason=\"TOPIC_AUTHORIZATION_FAILED\"".to_owned(),
    ];
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    assert_eq!(
        metric(&metrics, "strait_topic_waiting", &labels),
        Some(1.0),
        "{metrics}"
    );
    let (code, health) = http_get(port, "/health").await.unwrap();
    assert!(code == 503 && health.contains(&refused), "{code} {health}");
    let topics_there = target.metadata(None).await.unwrap().topics;
    assert!(!topics_there.contains_key(&refused_remote), "created despite the DENY");

    // Granted: it is created at the next retry (at most 30 s apart), mirrors, and stops waiting.
    let attempts = waiting(port, &refused).await.unwrap()["attempts"].as_u64().unwrap();
    acls(&bootstrap, &[&["--remove", "--force"][..], &deny[..]].concat()).await;
    let granted = Instant::now();
    wait_until_complete(&target, &refused_remote, per_topic as i64).await;
    let took = granted.elapsed();
    assert!(took < Duration::from_secs(45), "started {took:?} after the grant");
    wait_until("no topic waiting", || async {
        flow_status(port)
            .await
            .is_some_and(|f| f["waiting_topics"].as_array().is_some_and(Vec::is_empty))
    })
    .await;
    let (code, health) = http_get(port, "/health").await.unwrap();
    assert_eq!(code, 200, "{health}");
    assert_eq!(metric(&scrape(port).await, "strait_topics_waiting", &[]), Some(0.0));
    println!(
        "{} topics mirrored while one waited ({attempts} attempts); granted, it started after {took:?}",
        topics - 1
    );
}
