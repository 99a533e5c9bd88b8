use super::*;
use crate::flow::SkipReason;

fn parse(text: &str) -> Mm2Config {
    Mm2Config::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    Mm2Config::parse(text).unwrap_err().to_string()
}

const TWO: &str = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n";

fn two(extra: &str) -> Mm2Config {
    parse(&format!("{TWO}{extra}"))
}

fn pairs(config: &Mm2Config) -> Vec<String> {
    config.flows().iter().map(FlowConfig::name).collect()
}

fn setting<'a>(flow: &'a FlowConfig, name: &str) -> &'a Setting {
    &flow.settings().iter().find(|(n, _)| *n == name).unwrap().1
}

fn file(line: usize, key: &str) -> Origin {
    Origin::File {
        line,
        key: key.to_owned(),
        written: None,
    }
}

/// `config/connect-mirror-maker.properties` as shipped with Kafka.
const SHIPPED: &str = "\
# Licensed to the Apache Software Foundation (ASF)
clusters = A, B

# connection information for each cluster
A.bootstrap.servers = A_host1:9092, A_host2:9092, A_host3:9092
B.bootstrap.servers = B_host1:9092, B_host2:9092, B_host3:9092

# enable and configure individual replication flows
A->B.enabled = true
A->B.topics = .*
B->A.enabled = true
B->A.topics = .*

replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1
";

#[test]
fn shipped_example() {
    let config = parse(SHIPPED);
    assert_eq!(config.clusters(), ["A", "B"]);
    assert_eq!(pairs(&config), ["A->B", "B->A"]);
    let flow = config.flow("A", "B").unwrap();
    assert!(flow.enabled);
    assert_eq!(flow.replication_factor, 1);
    assert_eq!(flow.checkpoints_topic_replication_factor, 1);
    assert_eq!(flow.heartbeats_topic_replication_factor, 1);
    assert_eq!(flow.offset_syncs_topic_replication_factor, 1);
    assert_eq!(
        flow.source.bootstrap_servers,
        ["A_host1:9092", "A_host2:9092", "A_host3:9092"]
    );
    assert_eq!(flow.target.alias, "B");
    let ignored: Vec<&str> = config.ignored().iter().map(|i| i.key.as_str()).collect();
    assert_eq!(
        ignored,
        [
            "offset.storage.replication.factor",
            "status.storage.replication.factor",
            "config.storage.replication.factor"
        ]
    );
    assert_eq!(
        config.ignored()[0].to_string(),
        "line 18: `offset.storage.replication.factor` ignored: a Connect internal-topic setting; Strait keeps its progress itself"
    );
    assert!(config.warnings().is_empty());
}

#[test]
fn defaults() {
    let config = two("A->B.enabled = true\n");
    let flow = config.flow("A", "B").unwrap();
    let on = |secs| Schedule {
        enabled: true,
        interval_seconds: secs,
    };
    assert_eq!(flow.refresh_topics, on(600));
    assert_eq!(flow.sync_topic_configs, on(600));
    assert_eq!(flow.sync_topic_acls, on(600));
    assert_eq!(flow.refresh_groups, on(600));
    assert_eq!(flow.emit_checkpoints, on(60));
    assert_eq!(flow.emit_heartbeats, on(1));
    assert_eq!(
        flow.sync_group_offsets,
        Schedule {
            enabled: false,
            interval_seconds: 60
        }
    );
    assert_eq!(flow.replication_factor, 2);
    assert_eq!(flow.offset_syncs_topic_replication_factor, 3);
    assert_eq!(flow.checkpoints_topic_replication_factor, 3);
    assert_eq!(flow.heartbeats_topic_replication_factor, 3);
    assert_eq!(flow.offset_syncs_topic_location, OffsetSyncsTopicLocation::Source);
    assert_eq!(flow.offset_lag_max, 100);
    assert!(flow.emit_offset_syncs_enabled);
    assert!(flow.heartbeats_replication_enabled);
    assert_eq!(flow.admin_timeout_ms, 60_000);
    assert_eq!(flow.consumer_poll_timeout_ms, 1_000);
    assert_eq!(flow.source_isolation_level, IsolationLevel::ReadUncommitted);
    assert_eq!(flow.source_auto_offset_reset, AutoOffsetReset::Earliest);
    assert_eq!(flow.policy, ReplicationPolicy::default().with_source_cluster_alias("A"));
    assert_eq!(flow.config_property_filter.use_defaults_from(), UseDefaultsFrom::Target);
    assert_eq!(flow.topic_filter.include_regex(), Some("^(?:.*)$"));
    assert_eq!(setting(flow, "topics").origin, Origin::Default);
    assert_eq!(flow.source.security_protocol, SecurityProtocol::Plaintext);
}

#[test]
fn every_setting_overridden() {
    let config = two("A->B.enabled = TRUE\n\
         refresh.topics.enabled = false\n\
         refresh.topics.interval.seconds = 30\n\
         sync.topic.configs.enabled = false\n\
         sync.topic.configs.interval.seconds = 31\n\
         sync.topic.acls.enabled = false\n\
         sync.topic.acls.interval.seconds = 32\n\
         refresh.groups.enabled = false\n\
         refresh.groups.interval.seconds = 33\n\
         emit.checkpoints.enabled = false\n\
         emit.checkpoints.interval.seconds = 34\n\
         sync.group.offsets.enabled = true\n\
         sync.group.offsets.interval.seconds = 35\n\
         emit.heartbeats.interval.seconds = 36\n\
         replication.factor = -1\n\
         offset-syncs.topic.replication.factor = 4\n\
         checkpoints.topic.replication.factor = 5\n\
         heartbeats.topic.replication.factor = 6\n\
         offset-syncs.topic.location = target\n\
         offset.lag.max = 7\n\
         emit.offset-syncs.enabled = false\n\
         heartbeats.replication.enabled = false\n\
         admin.timeout.ms = 8\n\
         consumer.poll.timeout.ms = 9\n\
         use.defaults.from = source\n\
         replication.policy.class = IdentityReplicationPolicy\n\
         replication.policy.separator = _\n\
         replication.policy.internal.topic.separator.enabled = false\n\
         topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n\
         forwarding.admin.class = ForwardingAdmin\n");
    let flow = config.flow("A", "B").unwrap();
    let off = |secs| Schedule {
        enabled: false,
        interval_seconds: secs,
    };
    assert_eq!(flow.refresh_topics, off(30));
    assert_eq!(flow.sync_topic_configs, off(31));
    assert_eq!(flow.sync_topic_acls, off(32));
    assert_eq!(flow.refresh_groups, off(33));
    assert_eq!(flow.emit_checkpoints, off(34));
    assert_eq!(
        flow.sync_group_offsets,
        Schedule {
            enabled: true,
            interval_seconds: 35
        }
    );
    assert_eq!(flow.emit_heartbeats.interval_seconds, 36);
    assert_eq!(flow.replication_factor, -1);
    assert_eq!(flow.offset_syncs_topic_replication_factor, 4);
    assert_eq!(flow.checkpoints_topic_replication_factor, 5);
    assert_eq!(flow.heartbeats_topic_replication_factor, 6);
    assert_eq!(flow.offset_syncs_topic_location, OffsetSyncsTopicLocation::Target);
    assert_eq!(flow.offset_lag_max, 7);
    assert!(!flow.emit_offset_syncs_enabled);
    assert!(!flow.heartbeats_replication_enabled);
    assert_eq!(flow.admin_timeout_ms, 8);
    assert_eq!(flow.consumer_poll_timeout_ms, 9);
    assert_eq!(flow.config_property_filter.use_defaults_from(), UseDefaultsFrom::Source);
    assert_eq!(flow.policy.kind(), PolicyKind::Identity);
    assert_eq!(flow.policy.separator(), "_");
    assert!(!flow.policy.internal_topic_separator_enabled());
    assert_eq!(flow.policy.source_cluster_alias(), Some("A"));
    // Location target: the topic lives on B and is named after A, with `.` forced.
    assert_eq!(flow.offset_syncs_topic(), "mm2-offset-syncs.A.internal");
    assert_eq!(flow.checkpoints_topic(), "A.checkpoints.internal");
    assert_eq!(flow.remote_topic("orders"), "orders");
    // `consumer.poll.timeout.ms` and `admin.timeout.ms` are not client settings.
    assert_eq!(flow.source.get(ClientRole::Consumer, "poll.timeout.ms"), None);
    assert_eq!(flow.source.get(ClientRole::Admin, "timeout.ms"), None);
}

#[test]
fn flow_level_beats_top_level() {
    let config = two("topics = a.*\n\
         A->B.enabled = true\n\
         A->B.topics = b.*\n\
         B->A.enabled = true\n");
    let ab = config.flow("A", "B").unwrap();
    assert!(ab.topic_filter.should_replicate_topic("b1"));
    assert!(!ab.topic_filter.should_replicate_topic("a1"));
    assert_eq!(setting(ab, "topics").origin, file(6, "A->B.topics"));
    let ba = config.flow("B", "A").unwrap();
    assert!(ba.topic_filter.should_replicate_topic("a1"));
    assert_eq!(setting(ba, "topics").origin, file(4, "topics"));
    assert_eq!(setting(ba, "enabled").origin, file(7, "B->A.enabled"));
}

#[test]
fn herders_for_all_pairs_by_default() {
    let config = parse("clusters = a, b, c\nbootstrap.servers = x:1\n");
    assert_eq!(pairs(&config), ["a->b", "a->c", "b->a", "b->c", "c->a", "c->b"]);
    assert!(config.flows().iter().all(|f| !f.enabled && f.emit_heartbeats.enabled));
    assert_eq!(config.enabled_flows().count(), 0);
}

#[test]
fn no_herders_when_heartbeats_disabled_globally() {
    let config = parse("clusters = a, b, c\nemit.heartbeats.enabled = false\n");
    assert!(config.flows().is_empty());
    assert_eq!(
        config.warnings(),
        ["no flow runs: no `<source>-><target>.enabled = true` and heartbeats are disabled (MM2 refuses to start with this file)"]
    );
}

#[test]
fn herders_without_two_disabled_heartbeats() {
    let config = parse(
        "clusters = a, b, c\nbootstrap.servers = x:1\n\
         a->b.emit.heartbeats.enabled = false\n\
         a->c.emit.heartbeats.enabled = false\n",
    );
    assert_eq!(pairs(&config), ["b->a", "b->c", "c->a", "c->b"]);
}

#[test]
fn herders_with_globally_disabled_heartbeats() {
    let config = parse(
        "clusters = a, b, c, d, e, f\nbootstrap.servers = x:1\n\
         emit.heartbeats.enabled = false\n\
         a->b.enabled = true\na->c.enabled = true\na->d.enabled = true\n\
         a->e.enabled = false\na->f.enabled = false\n",
    );
    assert_eq!(pairs(&config), ["a->b", "a->c", "a->d"]);
    assert!(config.flow("b", "a").is_none());
    assert!(config.flows().iter().all(|f| f.enabled && !f.emit_heartbeats.enabled));
}

#[test]
fn herders_central_local() {
    let config = parse(
        "clusters = central, local_one, local_two, beats_emitter\nbootstrap.servers = x:1\n\
         emit.heartbeats.enabled = false\n\
         central->local_one.enabled = true\n\
         central->local_two.enabled = true\n\
         beats_emitter->central.emit.heartbeats.enabled = true\n",
    );
    assert_eq!(
        pairs(&config),
        ["central->local_one", "central->local_two", "beats_emitter->central"]
    );
    let beats = config.flow("beats_emitter", "central").unwrap();
    assert!(!beats.enabled && beats.emit_heartbeats.enabled);
}

#[test]
fn one_enabled_flow_gives_a_heartbeat_flow_back() {
    let config = two("A->B.enabled = true\n");
    assert_eq!(pairs(&config), ["A->B", "B->A"]);
    assert_eq!(
        config.enabled_flows().map(FlowConfig::name).collect::<Vec<_>>(),
        ["A->B"]
    );
    let back = config.flow("B", "A").unwrap();
    assert!(!back.enabled);
    assert!(back.emit_heartbeats.enabled);
}

#[test]
fn top_level_enabled_enables_every_herder() {
    let config = two("enabled = true\n");
    assert_eq!(config.enabled_flows().count(), 2);
    let config = two("enabled = true\nemit.heartbeats.enabled = false\n");
    assert!(config.flows().is_empty());
}

#[test]
fn cluster_client_inheritance() {
    // MirrorMakerConfigTest.testClientConfigProperties
    let config = parse(
        "clusters = a, b\n\
         security.protocol = SSL\n\
         ssl.key.password = secret\n\
         a.security.protocol = PLAINTEXT\n\
         a.producer.security.protocol = SSL\n\
         a.bootstrap.servers = 127.0.0.1:9092, 127.0.0.2:9092\n\
         b.bootstrap.servers = 127.0.0.3:9092\n\
         a.consumer.fetch.max.wait.ms = 50\n",
    );
    let a = config.cluster("a").unwrap();
    assert_eq!(a.bootstrap_servers, ["127.0.0.1:9092", "127.0.0.2:9092"]);
    assert_eq!(a.security_protocol, SecurityProtocol::Plaintext);
    assert_eq!(a.get(ClientRole::Admin, "security.protocol"), Some("PLAINTEXT"));
    assert_eq!(a.get(ClientRole::Producer, "security.protocol"), Some("SSL"));
    assert_eq!(
        a.get(ClientRole::Admin, "bootstrap.servers"),
        Some("127.0.0.1:9092, 127.0.0.2:9092")
    );
    assert_eq!(a.get(ClientRole::Consumer, "fetch.max.wait.ms"), Some("50"));
    assert_eq!(a.get(ClientRole::Producer, "fetch.max.wait.ms"), None);
    assert_eq!(a.props["ssl.key.password"].origin, file(3, "ssl.key.password"));
    let b = config.cluster("b").unwrap();
    assert_eq!(b.security_protocol, SecurityProtocol::Ssl);
    assert_eq!(b.admin()["security.protocol"].origin, file(2, "security.protocol"));
    assert_eq!(b.get(ClientRole::Producer, "ssl.key.password"), Some("secret"));
    assert!(config.cluster("c").is_none());
}

#[test]
fn flow_client_layers() {
    let config = two("A->B.enabled = true\n\
         A.consumer.fetch.max.bytes = 1\n\
         A->B.consumer.fetch.max.bytes = 2\n\
         A->B.consumer.fetch.min.bytes = 3\n\
         A->B.source.consumer.fetch.min.bytes = 4\n\
         A->B.source.cluster.ssl.truststore.location = /flow.jks\n\
         B.producer.delivery.timeout.ms = 50000\n\
         A->B.target.producer.delivery.timeout.ms = 60000\n\
         A->B.producer.acks = all\n\
         A->B.target.admin.request.timeout.ms = 7\n");
    let flow = config.flow("A", "B").unwrap();
    let source = &flow.source;
    // `A.consumer.k` (source.consumer.k) beats flow-level `consumer.k`.
    assert_eq!(source.get(ClientRole::Consumer, "fetch.max.bytes"), Some("1"));
    // `A->B.source.consumer.k` beats everything.
    assert_eq!(source.get(ClientRole::Consumer, "fetch.min.bytes"), Some("4"));
    // `source.cluster.<connection key>` reaches every role when no cluster value exists.
    assert_eq!(
        source.get(ClientRole::Admin, "ssl.truststore.location"),
        Some("/flow.jks")
    );
    assert_eq!(source.get(ClientRole::Consumer, "enable.auto.commit"), Some("false"));
    assert_eq!(source.get(ClientRole::Consumer, "auto.offset.reset"), Some("earliest"));
    assert_eq!(source.get(ClientRole::Producer, "acks"), Some("all"));
    let target = &flow.target;
    assert_eq!(target.get(ClientRole::Producer, "delivery.timeout.ms"), Some("60000"));
    assert_eq!(target.get(ClientRole::Producer, "acks"), Some("all"));
    assert_eq!(target.get(ClientRole::Admin, "request.timeout.ms"), Some("7"));
    assert_eq!(target.get(ClientRole::Consumer, "fetch.max.bytes"), Some("2"));
    assert_eq!(
        target.producer()["bootstrap.servers"].origin,
        file(3, "B.bootstrap.servers")
    );
    assert_eq!(
        target.client_props(ClientRole::Consumer),
        BTreeMap::from([
            ("auto.offset.reset".to_owned(), "earliest".to_owned()),
            ("bootstrap.servers".to_owned(), "b:9092".to_owned()),
            ("enable.auto.commit".to_owned(), "false".to_owned()),
            ("fetch.max.bytes".to_owned(), "2".to_owned()),
            ("fetch.min.bytes".to_owned(), "3".to_owned()),
        ])
    );
    // The cluster-level view is untouched by the flow.
    assert_eq!(
        config
            .cluster("B")
            .unwrap()
            .get(ClientRole::Producer, "delivery.timeout.ms"),
        Some("50000")
    );
}

#[test]
fn cluster_connection_beats_flow_side_cluster() {
    let config = two("A->B.enabled = true\nA->B.source.cluster.bootstrap.servers = other:1\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(
        flow.source.get(ClientRole::Consumer, "bootstrap.servers"),
        Some("a:9092")
    );
}

#[test]
fn source_consumer_isolation_and_reset() {
    let config = two("A->B.enabled = true\n\
         A.consumer.isolation.level = read_committed\n\
         A.consumer.auto.offset.reset = latest\n");
    let ab = config.flow("A", "B").unwrap();
    assert_eq!(ab.source_isolation_level, IsolationLevel::ReadCommitted);
    assert_eq!(ab.source_auto_offset_reset, AutoOffsetReset::Latest);
    // B->A reads from B, whose consumers keep the defaults.
    let ba = config.flow("B", "A").unwrap();
    assert_eq!(ba.source_isolation_level, IsolationLevel::ReadUncommitted);

    let config = two("A->B.enabled = true\n\
         A.consumer.isolation.level = read_committed\n\
         A->B.source.consumer.isolation.level = read_uncommitted\n");
    let ab = config.flow("A", "B").unwrap();
    assert_eq!(ab.source_isolation_level, IsolationLevel::ReadUncommitted);

    // Top-level consumer keys are ignored, as in MM2 dedicated mode.
    let config = two("A->B.enabled = true\nconsumer.isolation.level = read_committed\n");
    assert_eq!(
        config.flow("A", "B").unwrap().source_isolation_level,
        IsolationLevel::ReadUncommitted
    );
    assert_eq!(config.ignored()[0].key, "consumer.isolation.level");
    assert!(config.ignored()[0]
        .reason
        .starts_with("MM2 dedicated mode does not use top-level"));
}

#[test]
fn deprecated_aliases() {
    let config = two("A->B.enabled = true\ntopics.blacklist = secret.*\n");
    let flow = config.flow("A", "B").unwrap();
    assert!(!flow.topic_filter.should_replicate_topic("secret1"));
    assert!(flow.topic_filter.should_replicate_topic("__consumer_offsets"));
    assert_eq!(setting(flow, "topics.exclude").origin, file(5, "topics.blacklist"));
    assert_eq!(
        config.warnings(),
        ["line 5: `topics.blacklist` is deprecated since Kafka 2.8 and removed in 4.0; use `topics.exclude` (when both are set, `topics.exclude` wins)"]
    );

    // The new key wins, even top-level against a flow-level alias.
    let config = two("A->B.enabled = true\n\
         groups.exclude = g1\n\
         A->B.groups.blacklist = g2\n\
         config.properties.blacklist = retention\\.ms\n");
    let flow = config.flow("A", "B").unwrap();
    assert!(!flow.group_filter.should_replicate_group("g1"));
    assert!(flow.group_filter.should_replicate_group("g2"));
    assert!(!flow
        .config_property_filter
        .should_replicate_config_property("retention.ms"));
    assert!(flow
        .config_property_filter
        .should_replicate_config_property("min.insync.replicas"));
    assert_eq!(config.warnings().len(), 2);
}

#[test]
fn ignored_keys_with_reasons() {
    let config = two("A->B.enabled = true\n\
         tasks.max = 4\n\
         B.offset.flush.interval.ms = 1000\n\
         B.exactly.once.source.support = enabled\n\
         A.topics = x\n\
         A->B.producer.override.linger.ms = 5\n\
         A->B.security.protocol = SSL\n\
         A->B.source.cluster.client.id = x\n\
         A.client.id = a\n\
         metric.reporters = com.example.Reporter\n\
         dedicated.mode.enable.internal.rest = true\n\
         listeners = http://:8083\n\
         key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
         A.consumer.poll.timeout.ms = 5\n");
    let lines: Vec<String> = config.ignored().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "line 5: `tasks.max` ignored: Strait spreads partitions over its own workers, not Connect tasks",
            "line 6: `B.offset.flush.interval.ms` ignored: a Connect worker setting; Strait runs no Connect worker",
            "line 8: `A.topics` ignored: MM2 reads connector settings only at top level (`topics`) or per flow (`A-><target>.topics`), not per cluster",
            "line 9: `A->B.producer.override.linger.ms` ignored: a Connect per-connector override of the producer writing to the target, which MM2's dedicated mode hands to its worker; Strait reads that producer's keys as `<source>-><target>.target.producer.<key>` (as `strait import` writes connector JSON's overrides): write that key",
            "line 10: `A->B.security.protocol` ignored: MM2's clients do not read flow-level connection settings; use `<alias>.<key>` or `<source>-><target>.source.cluster.<key>`",
            "line 11: `A->B.source.cluster.client.id` ignored: only bootstrap.servers, security.protocol, ssl.* and sasl.* are read from `source.cluster.*` and `target.cluster.*`",
            "line 12: `A.client.id` ignored: MM2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from cluster-level and top-level keys to its clients; use `<alias>.consumer.<key>`, `<alias>.producer.<key>` or `<alias>.admin.<key>`",
            "line 13: `metric.reporters` ignored: a JMX/metrics-reporter setting; Strait exposes its own metrics",
            "line 14: `dedicated.mode.enable.internal.rest` ignored: not needed: MM2 needs it so that its nodes can send \
             exactly-once fencing to the leader; a Strait process fences its own transactional id with InitProducerId",
            "line 15: `listeners` ignored: a Connect REST server setting; Strait has no REST API",
            "line 16: `key.converter` ignored: records are copied as raw bytes",
            "line 17: `A.consumer.poll.timeout.ms` ignored: MM2 reads connector settings only at top level (`consumer.poll.timeout.ms`) or per flow (`A-><target>.consumer.poll.timeout.ms`), not per cluster",
        ]
    );
    // Ignored keys do not leak into the model.
    let flow = config.flow("A", "B").unwrap();
    assert!(flow.topic_filter.should_replicate_topic("anything"));
    assert_eq!(flow.target.get(ClientRole::Producer, "override.linger.ms"), None);
}

#[test]
fn warnings() {
    let config = two("A->B.enabled = true\n\
         A.ssl.trustore.location = /x.jks\n\
         A.sasl.jaas.config = ${file:/secrets:jaas}\n\
         replication.policy.separator = _\\ \n");
    assert_eq!(
        config.warnings(),
        [
            "line 6: `A.sasl.jaas.config` holds a `${file:…}` placeholder, but `file` is not in `config.providers`; the text is used as written, as Kafka does",
            "line 5: `A.ssl.trustore.location` is not a Kafka client setting (did you mean `ssl.truststore.location`?); it is passed on unchanged",
            "line 7: `replication.policy.separator` has surrounding whitespace, which MM2 keeps as part of the separator; so does Strait",
        ]
    );
    assert_eq!(config.flow("A", "B").unwrap().policy.separator(), "_ ");
}

#[test]
fn aliases_with_dots() {
    let config = parse(
        "clusters = us.west, us\n\
         us.west.bootstrap.servers = w:1\n\
         us.bootstrap.servers = u:1\n\
         us.west->us.enabled = true\n\
         us.west->us.topics = t\n",
    );
    let flow = config.flow("us.west", "us").unwrap();
    assert!(flow.enabled);
    assert_eq!(flow.source.bootstrap_servers, ["w:1"]);
    assert_eq!(flow.target.bootstrap_servers, ["u:1"]);
    assert!(flow.topic_filter.should_replicate_topic("t"));
}

#[test]
fn top_level_bootstrap_is_a_fallback() {
    let config =
        parse("clusters = A, B\nbootstrap.servers = all:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.source.bootstrap_servers, ["all:9092"]);
    assert_eq!(flow.target.bootstrap_servers, ["b:9092"]);
}

#[test]
fn properties_syntax_in_mm2_files() {
    let config = parse(
        "clusters : A,\\\n    B\n\
         A.bootstrap.servers a:9092\n\
         B.bootstrap.servers=b:9092\n\
         A->B.enabled=true\n\
         A->B.topics = orders, \\\n   payments\n",
    );
    let flow = config.flow("A", "B").unwrap();
    assert!(flow.topic_filter.should_replicate_topic("payments"));
    assert_eq!(setting(flow, "topics").origin, file(6, "A->B.topics"));
}

#[test]
fn cycles_default_policy() {
    // MirrorSourceConnectorTest.testNoCycles
    let config = parse("clusters = source, target\nbootstrap.servers = x:1\nsource->target.enabled = true\n");
    let flow = config.flow("source", "target").unwrap();
    for skipped in [
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
    ] {
        assert_eq!(flow.skip_reason(skipped), Some(SkipReason::Cycle), "{skipped}");
    }
    assert!(flow.should_replicate_topic("topic1"));
    assert!(flow.should_replicate_topic("source.topic1"));
}

#[test]
fn cycles_identity_policy() {
    // MirrorSourceConnectorTest.testIdentityReplication
    let config = parse(
        "clusters = source, target\nbootstrap.servers = x:1\nsource->target.enabled = true\n\
         replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n",
    );
    let flow = config.flow("source", "target").unwrap();
    for replicated in [
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
        "topic1",
        "othersource.topic1",
        "heartbeats",
        "othersource.heartbeats",
    ] {
        assert!(flow.should_replicate_topic(replicated), "{replicated}");
    }
    for cycle in [
        "target.heartbeats",
        "target.source.heartbeats",
        "source.target.heartbeats",
        "target.source.target.heartbeats",
        "source.target.source.heartbeats",
    ] {
        assert_eq!(flow.skip_reason(cycle), Some(SkipReason::Cycle), "{cycle}");
    }
}

#[test]
fn heartbeats_replicated_despite_filter() {
    // testReplicatesHeartbeatsByDefault / testReplicatesHeartbeatsDespiteFilter
    let config = parse(
        "clusters = source, target\nbootstrap.servers = x:1\nsource->target.enabled = true\n\
         source->target.topics =\n",
    );
    let flow = config.flow("source", "target").unwrap();
    assert!(flow.should_replicate_topic("heartbeats"));
    assert!(flow.should_replicate_topic("us-west.heartbeats"));
    assert_eq!(flow.skip_reason("orders"), Some(SkipReason::Excluded));

    let underscore = parse(
        "clusters = source, target\nbootstrap.servers = x:1\nsource->target.enabled = true\n\
         source->target.topics =\nreplication.policy.separator = _\n",
    );
    let flow = underscore.flow("source", "target").unwrap();
    assert!(flow.should_replicate_topic("heartbeats"));
    assert!(!flow.should_replicate_topic("us-west.heartbeats"));
    assert!(flow.should_replicate_topic("us-west_heartbeats"));
}

#[test]
fn heartbeats_replication_disabled() {
    // testDoesNotReplicateHeartbeatsWhenDisabled / ...WhenDisabledButFilterAllows
    let base = "clusters = source, target\nbootstrap.servers = x:1\nsource->target.enabled = true\n\
                heartbeats.replication.enabled = false\n";
    let config = parse(&format!("{base}topics = orders\n"));
    let flow = config.flow("source", "target").unwrap();
    assert!(!flow.should_replicate_topic("heartbeats"));
    assert!(!flow.should_replicate_topic("us-west.heartbeats"));
    let config = parse(base);
    let flow = config.flow("source", "target").unwrap();
    assert!(flow.should_replicate_topic("heartbeats"));
    assert!(flow.should_replicate_topic("us-west.heartbeats"));
}

#[test]
fn skip_reasons() {
    let config = two("A->B.enabled = true\ntopics = .*\ntopics.exclude = secret.*\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.skip_reason("__consumer_offsets"), Some(SkipReason::Internal));
    assert_eq!(flow.skip_reason(".hidden"), Some(SkipReason::Internal));
    assert_eq!(flow.skip_reason("mm2-offsets.A.internal"), Some(SkipReason::Internal));
    assert_eq!(flow.skip_reason("A.checkpoints.internal"), Some(SkipReason::Internal));
    assert_eq!(flow.skip_reason("B.orders"), Some(SkipReason::Cycle));
    assert_eq!(flow.skip_reason("secret1"), Some(SkipReason::Excluded));
    assert_eq!(flow.skip_reason("_schemas"), None);
    assert_eq!(flow.skip_reason("connect-offsets"), None);
    assert_eq!(flow.skip_reason("C.orders"), None);
}

#[test]
fn look_ahead_filter_from_file() {
    let config = two("A->B.enabled = true\nA->B.topics = (?!us-west\\\\.).*\n");
    let flow = config.flow("A", "B").unwrap();
    assert!(flow.should_replicate_topic("orders"));
    assert!(!flow.should_replicate_topic("us-west.orders"));
}

#[test]
fn internal_topic_names_per_flow() {
    let config = two("A->B.enabled = true\nreplication.policy.separator = __\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.offset_syncs_topic(), "mm2-offset-syncs__B__internal");
    assert_eq!(flow.checkpoints_topic(), "A__checkpoints__internal");
    assert_eq!(flow.remote_topic("t"), "A__t");
    assert_eq!(flow.policy.heartbeats_topic(), "heartbeats");
}

#[test]
fn errors_unknown_keys() {
    assert_eq!(
        error(&format!("{TWO}topcs = x\n")),
        "line 4: unknown key `topcs` (did you mean `topics`?)"
    );
    assert_eq!(
        error(&format!("{TWO}A.bootstrap.server = x:1\n")),
        "line 4: unknown key `A.bootstrap.server` (did you mean `A.bootstrap.servers`?)"
    );
    assert_eq!(
        error(&format!("{TWO}A->B.emit.heartbeat.enabled = true\n")),
        "line 4: unknown key `A->B.emit.heartbeat.enabled` (did you mean `A->B.emit.heartbeats.enabled`?)"
    );
    assert_eq!(
        error(&format!("{TWO}frobnicate.everything = 1\n")),
        "line 4: unknown key `frobnicate.everything` (not an MM2, Kafka client or Connect setting; remove it or fix the spelling)"
    );
    assert_eq!(
        error(&format!("{TWO}A->B = true\n")),
        "line 4: unknown key `A->B` (not an MM2, Kafka client or Connect setting; remove it or fix the spelling)"
    );
    assert!(matches!(
        Mm2Config::parse(&format!("{TWO}A.max.poll.records = 5\n")).unwrap_err(),
        ConfigError::UnknownKey { line: 4, .. }
    ));
}

#[test]
fn errors_aliases_and_flows() {
    assert_eq!(
        error(&format!("{TWO}A->C.enabled = true\n")),
        "line 4: `A->C.enabled` names cluster `C`, which is not in `clusters` (A, B); add it to `clusters` or fix the alias"
    );
    assert_eq!(
        error(&format!("{TWO}C->A.enabled = true\n")),
        "line 4: `C->A.enabled` names cluster `C`, which is not in `clusters` (A, B); add it to `clusters` or fix the alias"
    );
    assert_eq!(
        error(&format!("{TWO}C.bootstrap.servers = c:1\n")),
        "line 4: `C.bootstrap.servers` names cluster `C`, which is not in `clusters` (A, B); add it to `clusters` or fix the alias"
    );
    assert_eq!(
        error(&format!("{TWO}A->A.enabled = true\n")),
        "line 4: `A->A.enabled` describes a flow from `A` to itself; a flow needs two different clusters"
    );
    assert_eq!(
        error("bootstrap.servers = x:1\n"),
        "missing required key `clusters`; add a line such as `clusters = A, B`"
    );
    assert_eq!(
        error("clusters = \n"),
        "line 1: invalid value `` for `clusters`: expected a comma-separated list of cluster aliases"
    );
    assert_eq!(
        error("clusters = A,,B\n"),
        "line 1: invalid cluster alias `` in `clusters`: an alias must not be empty"
    );
    assert_eq!(
        error("clusters = A->B\n"),
        "line 1: invalid cluster alias `A->B` in `clusters`: an alias must not contain `->`"
    );
    assert_eq!(
        parse("clusters = A, B, A\nemit.heartbeats.enabled=false").clusters(),
        ["A", "B"]
    );
}

#[test]
fn errors_values() {
    assert_eq!(
        error(&format!("{TWO}A->B.enabled = yes\n")),
        "line 4: invalid value `yes` for `A->B.enabled`: expected `true` or `false`"
    );
    assert_eq!(
        error(&format!("{TWO}replication.factor = two\n")),
        "line 4: invalid value `two` for `replication.factor`: expected an integer (Java int)"
    );
    assert_eq!(
        error(&format!("{TWO}heartbeats.topic.replication.factor = 40000\n")),
        "line 4: invalid value `40000` for `heartbeats.topic.replication.factor`: expected an integer from -32768 to 32767 (Java short)"
    );
    assert_eq!(
        error(&format!("{TWO}A->B.offset-syncs.topic.location = Target\n")),
        "line 4: invalid value `Target` for `A->B.offset-syncs.topic.location`: expected `source` or `target`"
    );
    assert_eq!(
        error(&format!("{TWO}replication.policy.class = com.acme.Policy\n")),
        "line 4: invalid value `com.acme.Policy` for `replication.policy.class`: expected \
         `org.apache.kafka.connect.mirror.DefaultReplicationPolicy` or \
         `org.apache.kafka.connect.mirror.IdentityReplicationPolicy` (custom Java classes are not supported)"
    );
    assert_eq!(
        error(&format!("{TWO}topics = ok, (unclosed\n")),
        "line 4: invalid regular expression in `topics` (`ok|(unclosed`): Parsing error at position 12: Opening parenthesis without closing parenthesis; fix the pattern (note that commas always separate list entries)"
    );
    assert_eq!(
        error(&format!("{TWO}A.security.protocol = TLS\n")),
        "line 4: invalid value `TLS` for `A.security.protocol`: expected `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL` (case-insensitive)"
    );
    assert_eq!(
        error(&format!("{TWO}A.consumer.isolation.level = committed\n")),
        "line 4: invalid value `committed` for `A.consumer.isolation.level`: expected `read_uncommitted` or `read_committed`"
    );
    assert_eq!(
        error(&format!("{TWO}A->B.source.consumer.auto.offset.reset = first\n")),
        "line 4: invalid value `first` for `A->B.source.consumer.auto.offset.reset`: expected `earliest`, `latest` or `none`"
    );
    assert_eq!(
        error("clusters = A, B\nA.bootstrap.servers = a\n"),
        "line 2: invalid value `a` for `A.bootstrap.servers`: expected a comma-separated list of `host:port`"
    );
    assert_eq!(
        error(&format!("{TWO}replication.policy.separator =\n")),
        "line 4: invalid value `` for `replication.policy.separator`: expected a non-blank separator such as `.` or `_`"
    );
    assert!(matches!(
        Mm2Config::parse("clusters = A\nbad = \\u00zz").unwrap_err(),
        ConfigError::MalformedEscape { line: 2, .. }
    ));
}

#[test]
fn errors_missing_bootstrap_servers() {
    assert_eq!(
        error("clusters = A, B\nA.bootstrap.servers = a:1\nA->B.enabled = true\n"),
        "line 1: cluster `B` has no bootstrap servers, but flow `A->B` needs them; set `B.bootstrap.servers`"
    );
    assert_eq!(
        error("clusters = A, B, C\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"),
        "line 1: cluster `C` has no bootstrap servers, but the heartbeats of flow `A->C` needs them; \
         set `C.bootstrap.servers`, remove `C` from `clusters`, or set `A->C.emit.heartbeats.enabled = false`"
    );
    // A heartbeats-only flow does not need its source.
    let config = parse("clusters = A, B\nB.bootstrap.servers = b:1\nB->A.emit.heartbeats.enabled = false\n");
    assert_eq!(pairs(&config), ["A->B"]);
}

#[test]
fn from_path() {
    let dir = std::env::temp_dir().join(format!("strait-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mm2.properties");
    // ISO-8859-1 bytes (MM2 reads the file as ISO-8859-1): `é` is 0xE9.
    let mut bytes = format!("{TWO}A->B.enabled = true\nA->B.topics = caf").into_bytes();
    bytes.push(0xe9);
    std::fs::write(&path, bytes).unwrap();
    let config = Mm2Config::from_path(&path).unwrap();
    assert!(config.flow("A", "B").unwrap().should_replicate_topic("café"));
    std::fs::remove_dir_all(&dir).unwrap();

    let err = Mm2Config::from_path(dir.join("missing.properties")).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }));
    assert!(err.to_string().starts_with("cannot read `"), "{err}");
}

#[test]
fn render_text() {
    let config = two("A->B.enabled = true\nA->B.topics = orders.*\nA.sasl.jaas.config = secret\ntasks.max = 2\n");
    let text = config.to_string();
    assert!(
        text.starts_with(
            "clusters = A, B\n\
             strait.buffer.memory = 268435456  (default)\n\
             strait.fetchers.per.broker = 1  (default)\n\
             strait.producers.per.broker = 2  (default)\n\
             strait.io = auto  (default)\n\
             task.shutdown.graceful.timeout.ms = 5000  (default)\n\
             session.timeout.ms = 10000  (default)\n\
             heartbeat.interval.ms = 3000  (default)\n\
             rebalance.timeout.ms = 60000  (default)\n\
             \nflow A->B (enabled, emits heartbeats)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n  topics = orders.*  (line 5: A->B.topics)\n"),
        "{text}"
    );
    assert!(text.contains("\n  replication.factor = 2  (default)\n"), "{text}");
    assert!(
        text.contains("\n  source.consumer.bootstrap.servers = a:9092  (line 2: A.bootstrap.servers)\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  source.admin.sasl.jaas.config = [hidden]  (line 6: A.sasl.jaas.config)\n"),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
    assert!(
        text.contains("\nflow B->A (disabled, only emits heartbeats into the target)\n"),
        "{text}"
    );
    assert!(text.ends_with(
        "\nignored keys:\n  line 7: `tasks.max` ignored: Strait spreads partitions over its own workers, not Connect tasks\n"
    ), "{text}");
}

#[test]
fn render_json() {
    let config = two("A->B.enabled = true\nB.ssl.truststore.password = pw\n");
    let json = config.to_json();
    assert_eq!(json["clusters"], serde_json::json!(["A", "B"]));
    let flow = &json["flows"][0];
    assert_eq!(flow["name"], "A->B");
    assert_eq!(flow["enabled"], true);
    assert_eq!(flow["emit_heartbeats"], true);
    assert_eq!(
        flow["settings"]["enabled"],
        serde_json::json!({ "value": "true", "origin": { "line": 4, "key": "A->B.enabled" } })
    );
    assert_eq!(
        flow["settings"]["topics"],
        serde_json::json!({ "value": ".*", "origin": "default" })
    );
    assert_eq!(
        flow["clients"]["target.producer.ssl.truststore.password"]["value"],
        "[hidden]"
    );
    assert_eq!(flow["clients"]["source.consumer.enable.auto.commit"]["value"], "false");
    assert_eq!(json["flows"][1]["enabled"], false);
    assert_eq!(json["ignored"], serde_json::json!([]));
    assert_eq!(
        json["buffer_memory"],
        serde_json::json!({ "value": "268435456", "origin": "default" })
    );
    assert_eq!(
        json["fetchers_per_broker"],
        serde_json::json!({ "value": "1", "origin": "default" })
    );
    assert!(!json.to_string().contains("\"pw\""));
}

#[test]
fn http_listener() {
    assert_eq!(two("").http_listener(), None);
    let config = two("strait.http.listener = 127.0.0.1:9464\n");
    assert_eq!(config.http_listener(), Some("127.0.0.1:9464"));
    assert!(config.to_string().contains("strait.http.listener = 127.0.0.1:9464"));
    assert!(
        error("clusters = A\nA.bootstrap.servers = a:1\nstrait.http.listener = 9464\n")
            .contains("line 3: invalid value `9464` for `strait.http.listener`")
    );
    assert!(
        error("clusters = A\nA.bootstrap.servers = a:1\nstrait.http.listner = x:1\n").contains("strait.http.listener")
    );
}

#[test]
fn strait_process_keys() {
    let config = two("");
    assert_eq!(config.buffer_memory(), 268_435_456);
    assert_eq!(config.fetchers_per_broker(), 1);
    assert_eq!(config.producers_per_broker(), 2);
    assert_eq!(config.io(), IoSetting::Auto);
    assert!(config.flows().iter().all(|f| f.source.io == IoSetting::Auto));
    for (value, io) in [
        ("epoll", IoSetting::Epoll),
        (" io_uring ", IoSetting::IoUring),
        ("auto", IoSetting::Auto),
    ] {
        let config = two(&format!("A->B.enabled = true\nstrait.io = {value}\n"));
        assert_eq!(config.io(), io);
        // Every cluster's connections take it, in the flows as in the cluster list.
        let flow = config.flow("A", "B").unwrap();
        assert_eq!((flow.source.io, flow.target.io), (io, io));
        assert_eq!(config.to_json()["io"]["value"], io.as_str());
    }
    assert_eq!(
        error(&format!("{TWO}strait.io = uring\n")),
        "line 4: invalid value `uring` for `strait.io`: expected epoll, io_uring or auto (the default: io_uring where \
         the kernel allows it and the benchmark chose it, else epoll)"
    );
    let config =
        two("strait.buffer.memory = 1048576\nstrait.fetchers.per.broker = 16\nstrait.producers.per.broker = 1\n");
    assert_eq!(config.buffer_memory(), 1_048_576);
    assert_eq!(config.fetchers_per_broker(), 16);
    assert_eq!(config.producers_per_broker(), 1);
    assert!(
        error("clusters = A\nA.bootstrap.servers = a:1\nstrait.producers.per.broker = 17\n")
            .contains("an integer from 1 to 16 (produce connections per target broker); the default is 2")
    );
    // Trimmed and parsed as a decimal Java long, as ConfigDef does; the file's value is shown with
    // its line.
    let config = two("strait.buffer.memory = +536870912 \nstrait.fetchers.per.broker=\t4\n");
    assert_eq!(config.buffer_memory(), 536_870_912);
    assert_eq!(config.fetchers_per_broker(), 4);
    let text = config.to_string();
    assert!(
        text.starts_with(
            "clusters = A, B\n\
             strait.buffer.memory = 536870912  (line 4: strait.buffer.memory)\n\
             strait.fetchers.per.broker = 4  (line 5: strait.fetchers.per.broker)\n"
        ),
        "{text}"
    );
    let json = config.to_json();
    assert_eq!(
        json["buffer_memory"],
        serde_json::json!({ "value": "536870912", "origin": { "line": 4, "key": "strait.buffer.memory" } })
    );
    assert_eq!(
        json["fetchers_per_broker"],
        serde_json::json!({ "value": "4", "origin": { "line": 5, "key": "strait.fetchers.per.broker" } })
    );
}

#[test]
fn shutdown_timeout_is_connects_key_read_at_top_level() {
    assert_eq!(two("").shutdown_timeout(), std::time::Duration::from_secs(5));
    let config = two("task.shutdown.graceful.timeout.ms = 20000\n");
    assert_eq!(config.shutdown_timeout(), std::time::Duration::from_secs(20));
    assert!(config.ignored().is_empty(), "{:?}", config.ignored());
    assert_eq!(
        config.to_json()["shutdown_timeout_ms"],
        serde_json::json!({ "value": "20000", "origin": { "line": 4, "key": "task.shutdown.graceful.timeout.ms" } })
    );
    assert_eq!(
        error(&format!("{TWO}task.shutdown.graceful.timeout.ms = -1\n")),
        "line 4: invalid value `-1` for `task.shutdown.graceful.timeout.ms`: expected milliseconds from 0 to \
         9223372036854775807 (Java long): how long a stopping flow waits for the batches on the wire, and again \
         for its last writes; the default is 5000"
    );
    assert!(error(&format!("{TWO}B.task.shutdown.graceful.timeout.ms = 1\n"))
        .contains("`task.shutdown.graceful.timeout.ms` is process-wide"),);
}

#[test]
fn errors_strait_process_keys() {
    let buffer = |value: &str| {
        format!(
            "line 4: invalid value `{value}` for `strait.buffer.memory`: expected a number of bytes from 1048576 \
             (1 MiB) to 9223372036854775807 (Java long); the default is 268435456 (256 MiB)"
        )
    };
    for value in ["1048575", "0", "-1", "256MB", "0x10000000", "9223372036854775808"] {
        assert_eq!(
            error(&format!("{TWO}strait.buffer.memory = {value}\n")),
            buffer(value),
            "{value}"
        );
    }
    let fetchers = |value: &str| {
        format!(
            "line 4: invalid value `{value}` for `strait.fetchers.per.broker`: expected an integer from 1 to 16 \
             (fetch connections per source broker); the default is 1"
        )
    };
    for value in ["0", "17", "-1", "two", ""] {
        assert_eq!(
            error(&format!("{TWO}strait.fetchers.per.broker = {value}\n")),
            fetchers(value),
            "{value}"
        );
    }
    let process_wide = |key: &str, name: &str| {
        format!(
            "line 4: `{key}` refused: `{name}` is process-wide: one value for every cluster and flow of this Strait \
             process; set it once, at top level (`{name} = ...`)"
        )
    };
    for (key, name) in [
        ("A.strait.buffer.memory", "strait.buffer.memory"),
        ("A->B.strait.buffer.memory", "strait.buffer.memory"),
        ("A.consumer.strait.fetchers.per.broker", "strait.fetchers.per.broker"),
        (
            "A->B.source.consumer.strait.fetchers.per.broker",
            "strait.fetchers.per.broker",
        ),
        ("B.strait.http.listener", "strait.http.listener"),
    ] {
        assert_eq!(error(&format!("{TWO}{key} = 4\n")), process_wide(key, name), "{key}");
    }
    assert_eq!(
        error(&format!("{TWO}strait.fetcher.per.broker = 2\n")),
        "line 4: unknown key `strait.fetcher.per.broker` (did you mean `strait.fetchers.per.broker`?)"
    );
}

#[test]
fn connector_keys_that_change_nothing_are_listed_and_no_offset_syncs_warns() {
    let config = two("A->B.enabled = true\n\
         offset.lag.max = 1\n\
         A->B.refresh.groups.interval.seconds = 5\n\
         admin.timeout.ms = 1000\n\
         consumer.poll.timeout.ms = 100\n\
         A->B.emit.offset-syncs.enabled = false\n");
    let ignored: Vec<&str> = config.ignored().iter().map(|i| i.key.as_str()).collect();
    assert_eq!(
        ignored,
        [
            "offset.lag.max",
            "A->B.refresh.groups.interval.seconds",
            "admin.timeout.ms",
            "consumer.poll.timeout.ms"
        ]
    );
    assert!(config.ignored()[0]
        .reason
        .contains("offset sync for every forwarded batch"));
    assert!(
        config
            .warnings()
            .iter()
            .any(|w| w.contains("checkpoints and group offset sync stop")),
        "{:?}",
        config.warnings()
    );
    assert!(two("A->B.enabled = true\nemit.offset-syncs.enabled = true\n")
        .warnings()
        .is_empty());
}

#[test]
fn oauth_client_secrets_and_key_passphrases_are_hidden() {
    let config = two("A->B.enabled = true\n\
         A.sasl.oauthbearer.client.credentials.client.secret = s3cr3t-a\n\
         B.sasl.oauthbearer.assertion.private.key.passphrase = s3cr3t-b\n");
    let text = format!("{config}{}", config.to_json());
    assert!(
        text.contains("sasl.oauthbearer.client.credentials.client.secret"),
        "{text}"
    );
    assert!(
        text.contains("sasl.oauthbearer.assertion.private.key.passphrase"),
        "{text}"
    );
    assert!(!text.contains("s3cr3t"), "{text}");
}

#[test]
fn client_keys_that_change_nothing_are_listed_per_role() {
    let config = two("A->B.enabled = true\n\
         A.consumer.max.poll.records = 10\n\
         A->B.target.producer.compression.type = zstd\n\
         B.producer.linger.ms = 5\n\
         A->B.source.consumer.fetch.max.wait = 100\n\
         A.admin.fetch.min.bytes = 5\n\
         A.consumer.fetch.min.bytes = 5\n\
         B.producer.acks = all\n\
         A.consumer.client.id = mirror\n\
         A.consumer.group.id = g\n");
    let ignored: Vec<String> = config.ignored().iter().map(|i| i.to_string()).collect();
    let line = |key: &str| ignored.iter().find(|i| i.contains(&format!("`{key}`"))).cloned();
    assert!(
        line("A.consumer.max.poll.records").is_some_and(|l| l.contains("no poll loop")),
        "{ignored:?}"
    );
    assert!(
        line("A->B.target.producer.compression.type")
            .is_some_and(|l| l.contains("forwarded compressed as the source wrote them")),
        "{ignored:?}"
    );
    assert!(line("B.producer.linger.ms").is_some(), "{ignored:?}");
    assert!(
        line("A->B.source.consumer.fetch.max.wait").is_some_and(
            |l| l.contains("did you mean `fetch.max.wait.ms`?") && l.contains("Strait's consumer reads only")
        ),
        "{ignored:?}"
    );
    assert!(
        line("A.admin.fetch.min.bytes").is_some_and(|l| l.contains("Strait's admin reads only")),
        "{ignored:?}"
    );
    assert!(
        line("A.consumer.group.id").is_some_and(|l| l.contains("no consumer group")),
        "{ignored:?}"
    );
    assert_eq!(ignored.len(), 6, "honoured keys are not listed: {ignored:?}");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.source.consumer().get("fetch.min.bytes").unwrap().value, "5");
    assert!(
        flow.source.consumer().get("max.poll.records").is_none(),
        "an ignored key is passed to no client"
    );
    assert_eq!(flow.source.consumer().get("client.id").unwrap().value, "mirror");
}

#[test]
fn role_keys_of_a_side_no_client_plays_are_listed() {
    let config = two("A->B.enabled = true\n\
         B.consumer.fetch.min.bytes = 5\n\
         A.producer.acks = 1\n\
         B->A.emit.heartbeats.enabled = false\n\
         A->B.target.consumer.isolation.level = read_committed\n\
         A->B.source.producer.request.timeout.ms = 5000\n\
         A.consumer.fetch.min.bytes = 5\n\
         B.producer.acks = all\n\
         A.admin.request.timeout.ms = 5000\n");
    let ignored: Vec<(usize, &str)> = config.ignored().iter().map(|i| (i.line, i.key.as_str())).collect();
    assert_eq!(
        ignored,
        [
            (5, "B.consumer.fetch.min.bytes"),
            (6, "A.producer.acks"),
            (8, "A->B.target.consumer.isolation.level"),
            (9, "A->B.source.producer.request.timeout.ms"),
        ]
    );
    assert!(config.ignored()[0]
        .reason
        .contains("`B` is the source of no enabled flow"));
    assert!(config.ignored()[1].reason.contains("`A` is the target of no flow"));
    // B->A emits heartbeats into A (MM2's default for every pair), so A's producer is used.
    let config = two("A->B.enabled = true\nB->A.enabled = true\nB.consumer.fetch.min.bytes = 5\n");
    assert!(config.ignored().is_empty(), "{:?}", config.ignored());
    let config = two("A->B.enabled = true\nA.producer.acks = all\n");
    assert!(config.ignored().is_empty(), "{:?}", config.ignored());
}

#[test]
fn exactly_once_is_switched_on_per_target_as_mm2_does() {
    let config = two("A->B.enabled = true\nB->A.enabled = true\nB.exactly.once.source.support = enabled\n");
    assert!(config.flow("A", "B").unwrap().exactly_once, "into B");
    assert!(!config.flow("B", "A").unwrap().exactly_once, "into A");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.transaction_interval, std::time::Duration::from_secs(1));
    assert!(
        config
            .warnings()
            .iter()
            .any(|w| w.contains("A.consumer.isolation.level = read_committed")),
        "{:?}",
        config.warnings()
    );
    let text = config.to_string();
    assert!(
        text.contains("exactly.once.source.support = enabled  (line 6: B.exactly.once.source.support)"),
        "{text}"
    );
    // Top level reaches every target; `preparing` is off, with a warning.
    let config = two(
        "A->B.enabled = true\nexactly.once.source.support = enabled\nA->B.transaction.boundary = interval\n\
                      A->B.transaction.boundary.interval.ms = 250\nA.consumer.isolation.level = read_committed\n",
    );
    let flow = config.flow("A", "B").unwrap();
    assert!(flow.exactly_once);
    assert_eq!(flow.transaction_interval, std::time::Duration::from_millis(250));
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
    let config = two("A->B.enabled = true\nB.exactly.once.source.support = preparing\n");
    assert!(!config.flow("A", "B").unwrap().exactly_once);
    assert!(config.warnings().iter().any(|w| w.contains("`preparing`")));
    // A flow-level worker key is not read: listed, naming the key to set.
    let config = two("A->B.enabled = true\nA->B.exactly.once.source.support = enabled\n");
    assert!(!config.flow("A", "B").unwrap().exactly_once);
    assert!(config.ignored()[0].reason.contains("`B.exactly.once.source.support`"));
    // Boundary keys without exactly-once mode say they change nothing.
    let config = two("A->B.enabled = true\ntransaction.boundary.interval.ms = 100\n");
    assert!(config.warnings().iter().any(|w| w.contains("not in exactly-once mode")));
    // `poll` written out means MM2's commit per poll, which Strait has not: it says what it does.
    let config = two(
        "A->B.enabled = true\nexactly.once.source.support = enabled\nA.consumer.isolation.level = read_committed\n\
         transaction.boundary = poll\ntransaction.boundary.interval.ms = 300\n",
    );
    let said = config
        .warnings()
        .iter()
        .find(|w| w.contains("`transaction.boundary = poll`"));
    assert!(
        said.is_some_and(|w| w.contains("line 7") && w.contains("every `transaction.boundary.interval.ms` (300 ms)")),
        "{:?}",
        config.warnings()
    );
}

#[test]
fn exactly_once_values_mm2_refuses_are_refused() {
    let err = |extra: &str| {
        Mm2Config::parse(&format!("{TWO}A->B.enabled = true\n{extra}"))
            .unwrap_err()
            .to_string()
    };
    assert!(err("B.exactly.once.source.support = on\n").contains("expected `disabled`, `preparing` or `enabled`"));
    assert!(
        err("exactly.once.support = required\n").contains("set `B.exactly.once.source.support = enabled`"),
        "without the mode"
    );
    assert!(
        err("B.exactly.once.source.support = enabled\nexactly.once.support = required\n")
            .contains("set `A.consumer.isolation.level = read_committed`"),
        "with read_uncommitted"
    );
    assert!(err("transaction.boundary = connector\n").contains("MirrorSourceConnector defines none"));
    assert!(err("transaction.boundary.interval.ms = 0\n").contains("from 1 to 2147483647"));
    Mm2Config::parse(&format!(
        "{TWO}A->B.enabled = true\nB.exactly.once.source.support = enabled\nexactly.once.support = required\n\
         A.consumer.isolation.level = read_committed\n"
    ))
    .unwrap();
}

#[test]
fn group_keys_set_how_processes_share_the_work() {
    let config = two("A->B.enabled = true\n");
    let group = config.group();
    assert_eq!(group.group_id, None);
    assert_eq!(group.instance_id, None);
    assert_eq!(group.session_timeout, std::time::Duration::from_secs(10));
    assert_eq!(group.heartbeat_interval, std::time::Duration::from_secs(3));
    assert_eq!(group.rebalance_timeout, std::time::Duration::from_secs(60));
    let config = two(
        "A->B.enabled = true\nstrait.group.id = mirrors\ngroup.instance.id = host-1\nsession.timeout.ms = 6000\n\
         heartbeat.interval.ms = 500\nrebalance.timeout.ms = 20000\n",
    );
    let group = config.group();
    assert_eq!(group.group_id.as_deref(), Some("mirrors"));
    assert_eq!(group.instance_id.as_deref(), Some("host-1"));
    assert_eq!(group.session_timeout, std::time::Duration::from_millis(6000));
    assert_eq!(group.heartbeat_interval, std::time::Duration::from_millis(500));
    assert_eq!(group.rebalance_timeout, std::time::Duration::from_millis(20000));
    let text = config.to_string();
    assert!(
        text.contains("strait.group.id = mirrors  (line 5: strait.group.id)"),
        "{text}"
    );
    assert!(text.contains("group.instance.id = host-1  (line 6"), "{text}");
}

#[test]
fn bad_group_keys_are_refused_naming_the_key() {
    assert_eq!(
        error(&format!(
            "{TWO}A->B.enabled = true\nsession.timeout.ms = 3000\nheartbeat.interval.ms = 3000\n"
        )),
        "line 6: invalid value `3000` for `heartbeat.interval.ms`: expected heartbeat.interval.ms (3000) below \
         session.timeout.ms (3000), typically a third of it"
    );
    let bad = error(&format!("{TWO}A->B.enabled = true\nsession.timeout.ms = -1\n"));
    assert!(
        bad.contains("session.timeout.ms") && bad.contains("milliseconds from 1"),
        "{bad}"
    );
    let empty = error(&format!("{TWO}A->B.enabled = true\ngroup.instance.id =\n"));
    assert!(
        empty.contains("group.instance.id") && empty.contains("non-empty"),
        "{empty}"
    );
}
