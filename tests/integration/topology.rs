//! Active-active replication and loop prevention, partition growth, and `strait plan`.

use bytes::Bytes;
use strait_tests::*;
use strait_wire::RecordBatchBuilder;

async fn write(client: &strait_client::KafkaClient, topic: &str, partition: i32, records: usize, tag: &str) {
    let mut builder = RecordBatchBuilder::new();
    for i in 0..records {
        builder.push(None, Some(Bytes::from(format!("{tag}-{i}"))), vec![], now_ms());
    }
    client.produce(topic, partition, vec![builder.build()]).await.unwrap();
}

async fn topics_like(client: &strait_client::KafkaClient, needle: &str) -> Vec<String> {
    client
        .metadata(None)
        .await
        .unwrap()
        .topics
        .into_keys()
        .filter(|t| t.contains(needle))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clusters_replicating_into_each_other_do_not_loop() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("orders");
    create_topic(&source, &topic, 1).await;
    create_topic(&target, &topic, 1).await;
    write(&source, &topic, 0, 10, "from-source").await;
    write(&target, &topic, 0, 20, "from-target").await;
    // Both directions, with a filter that would let every name through: only the replication
    // policy stops `target.<topic>` from going back to the target.
    let properties = mm2_properties(
        &format!(".*{topic}.*"),
        "target->source.enabled = true\nrefresh.topics.interval.seconds = 1",
    );
    let (forward, backward) = (
        start_flow(&properties, "source", "target"),
        start_flow(&properties, "target", "source"),
    );
    let (on_target, on_source) = (format!("source.{topic}"), format!("target.{topic}"));
    wait_until("both remote topics filled", || async {
        end_offsets(&target, &on_target).await == 10 && end_offsets(&source, &on_source).await == 20
    })
    .await;
    // Three more refresh rounds of each flow, in which a loop would show up.
    let rounds = (forward.stats().discovery_rounds(), backward.stats().discovery_rounds());
    wait_until("three more discovery rounds of both flows", || async {
        forward.stats().discovery_rounds() >= rounds.0 + 3 && backward.stats().discovery_rounds() >= rounds.1 + 3
    })
    .await;
    forward.stop().await.unwrap();
    backward.stop().await.unwrap();
    let mut expected_source = vec![topic.clone(), on_source.clone()];
    let mut expected_target = vec![topic.clone(), on_target.clone()];
    expected_source.sort();
    expected_target.sort();
    assert_eq!(topics_like(&source, &topic).await, expected_source);
    assert_eq!(topics_like(&target, &topic).await, expected_target);
    assert_eq!(end_offsets(&target, &on_target).await, 10, "no record came back around");
    assert_eq!(end_offsets(&source, &on_source).await, 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn partitions_added_at_the_source_appear_at_the_target() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("grow");
    create_topic(&source, &topic, 1).await;
    write(&source, &topic, 0, 5, "p0").await;
    let mirror = start_mirror(&mm2_properties(&topic, "refresh.topics.interval.seconds = 1"));
    let remote = format!("source.{topic}");
    wait_until("the first partition mirrored", || async {
        end_offsets(&target, &remote).await == 5
    })
    .await;
    source.create_partitions(&topic, 3).await.unwrap();
    source.wait_for_leaders(&topic, WAIT).await.unwrap();
    write(&source, &topic, 2, 7, "p2").await;
    wait_until("the new partition's records on the target", || async {
        end_offsets(&target, &remote).await == 12
    })
    .await;
    mirror.stop().await.unwrap();
    assert_eq!(
        target.metadata(Some(&[&remote])).await.unwrap().topics[&remote]
            .partitions
            .len(),
        3
    );
    assert_eq!(
        read_records(&target, &remote, 2).await.len(),
        7,
        "records of partition 2 land in partition 2"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_shows_what_would_be_replicated_and_why_not() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let id = unique("plan");
    for topic in [format!("{id}-a"), format!("target.{id}-b"), format!("{id}-c.internal")] {
        create_topic(&source, &topic, 2).await;
    }
    let config = std::env::temp_dir().join(format!("{id}.properties"));
    std::fs::write(&config, mm2_properties(&format!(".*{id}.*"), "")).unwrap();
    let output = run_ok({
        let mut command = std::process::Command::new(strait_binary());
        command.arg("plan").arg(&config).arg("--json");
        command
    });
    let _ = std::fs::remove_file(&config);
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = |topic: &str| {
        plan.as_array()
            .unwrap()
            .iter()
            .find(|r| r["topic"] == topic)
            .cloned()
            .unwrap()
    };
    let a = row(&format!("{id}-a"));
    assert_eq!(a["remoteTopic"], format!("source.{id}-a"));
    assert_eq!(a["action"], "create with 2 partitions, then replicate");
    assert!(row(&format!("target.{id}-b"))["action"]
        .as_str()
        .unwrap()
        .contains("cycle"));
    assert!(row(&format!("{id}-c.internal"))["action"]
        .as_str()
        .unwrap()
        .contains("internal"));
    assert!(row("__consumer_offsets")["action"]
        .as_str()
        .unwrap()
        .contains("internal"));
    // Nothing was written: no remote topic exists.
    let target = client(&clusters.target).await;
    assert_eq!(end_offsets(&target, &format!("source.{id}-a")).await, 0);
    assert!(!target
        .metadata(None)
        .await
        .unwrap()
        .topics
        .contains_key(&format!("source.{id}-a")));
}

async fn config_value(client: &strait_client::KafkaClient, topic: &str, name: &str) -> Option<String> {
    // None while the topic does not exist yet.
    client
        .describe_topic_configs(topic)
        .await
        .ok()?
        .into_iter()
        .find(|e| e.name == name)
        .and_then(|e| e.value)
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_configs_follow_the_source_except_excluded_ones() {
    let clusters = clusters();
    let (source, target) = (client(&clusters.source).await, client(&clusters.target).await);
    let topic = unique("configs");
    let configs = [("retention.ms", "3600000"), ("unclean.leader.election.enable", "true")];
    source
        .create_topics(&[strait_client::NewTopic {
            name: topic.clone(),
            partitions: 1,
            replication_factor: 1,
            configs: configs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }])
        .await
        .unwrap();
    source.wait_for_leaders(&topic, WAIT).await.unwrap();
    let mirror = start_mirror(&mm2_properties(&topic, "sync.topic.configs.interval.seconds = 1"));
    let remote = format!("source.{topic}");
    wait_until("the remote topic with the source's retention", || async {
        end_offsets(&target, &remote).await == 0
            && config_value(&target, &remote, "retention.ms").await.as_deref() == Some("3600000")
    })
    .await;
    source
        .alter_topic_configs(
            &topic,
            &[strait_client::AlterConfigOp::Set(
                "retention.ms".into(),
                "7200000".into(),
            )],
        )
        .await
        .unwrap();
    wait_until("the retention change on the remote topic", || async {
        config_value(&target, &remote, "retention.ms").await.as_deref() == Some("7200000")
    })
    .await;
    mirror.stop().await.unwrap();
    // unclean.leader.election.enable is in MM2's default config.properties.exclude.
    assert_eq!(
        config_value(&target, &remote, "unclean.leader.election.enable")
            .await
            .as_deref(),
        Some("false")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_acls_are_copied_read_only() {
    use strait_client::{TopicAcl, OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PERMISSION_ALLOW, PERMISSION_DENY};
    // A pair of clusters with an authorizer (PLAINTEXT clients are User:ANONYMOUS, a super user).
    let (source_cluster, target_cluster) = tokio::task::spawn_blocking(|| {
        let options = |name| {
            strait_testkit::ClusterOptions::new(name)
                .property(
                    "authorizer.class.name",
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                )
                .property("super.users", "User:ANONYMOUS")
        };
        let source =
            std::thread::spawn(move || strait_testkit::KafkaCluster::start_with(options("acl-source")).unwrap());
        let target = strait_testkit::KafkaCluster::start_with(options("acl-target")).unwrap();
        (source.join().unwrap(), target)
    })
    .await
    .unwrap();
    let (source, target) = (client(&source_cluster).await, client(&target_cluster).await);
    let topic = unique("acls");
    create_topic(&source, &topic, 1).await;
    let acl = |topic: &str, pattern_type, principal: &str, operation, permission| TopicAcl {
        topic: topic.into(),
        pattern_type,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission,
    };
    source
        .create_topic_acls(&[
            acl(&topic, 3, "User:alice", OPERATION_READ, PERMISSION_ALLOW),
            acl(&topic, 3, "User:bob", OPERATION_WRITE, PERMISSION_ALLOW),
            acl(&topic, 3, "User:carol", OPERATION_ALL, PERMISSION_ALLOW),
            acl(&topic, 3, "User:dave", OPERATION_READ, PERMISSION_DENY),
            acl(&topic, 4, "User:erin", OPERATION_READ, PERMISSION_ALLOW), // prefixed: not copied
        ])
        .await
        .unwrap();
    let properties = mm2_properties(&format!("{topic}.*"), "sync.topic.acls.interval.seconds = 1")
        .replace(
            &clusters().source.bootstrap_servers(),
            &source_cluster.bootstrap_servers(),
        )
        .replace(
            &clusters().target.bootstrap_servers(),
            &target_cluster.bootstrap_servers(),
        );
    let mirror = start_mirror(&properties);
    let remote = format!("source.{topic}");
    let mut expected = vec![
        acl(&remote, 3, "User:alice", OPERATION_READ, PERMISSION_ALLOW),
        acl(&remote, 3, "User:carol", OPERATION_READ, PERMISSION_ALLOW),
        acl(&remote, 3, "User:dave", OPERATION_READ, PERMISSION_DENY),
    ];
    expected.sort();
    let remote_acls = || async {
        let mut acls: Vec<TopicAcl> = target.describe_topic_acls().await.unwrap().unwrap_or_default();
        acls.retain(|a| a.topic.contains(&topic));
        acls.sort();
        acls
    };
    wait_until("the ACLs on the target", || async {
        remote_acls().await.len() >= expected.len()
    })
    .await;
    // Another sync round changes nothing. (The round that created them may count only after
    // this reading: two more, so that one surely started after it.)
    let rounds = mirror.stats().acl_sync_rounds();
    wait_until("another ACL sync round", || async {
        mirror.stats().acl_sync_rounds() >= rounds + 2
    })
    .await;
    mirror.stop().await.unwrap();
    assert_eq!(
        remote_acls().await,
        expected,
        "READ copied, ALL narrowed to READ, DENY kept, WRITE and prefixed dropped"
    );
}
