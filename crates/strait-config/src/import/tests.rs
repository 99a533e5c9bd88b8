use super::*;

fn import(files: &[(&str, &str)]) -> Result<Imported> {
    let files: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(name, text)| ((*name).to_owned(), text.as_bytes().to_vec()))
        .collect();
    Imported::from_files(&files, &ImportOptions::default())
}

fn error(files: &[(&str, &str)]) -> String {
    import(files).unwrap_err().to_string()
}

/// The settings of a made text, comments dropped.
fn settings(imported: &Imported) -> Vec<&str> {
    imported
        .text()
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect()
}

const SOURCE_PUT: &str = r#"{
  "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
  "source.cluster.alias": "A",
  "target.cluster.alias": "B",
  "source.cluster.bootstrap.servers": "a:9092",
  "target.cluster.bootstrap.servers": "b:9092",
  "topics": "orders.*",
  "tasks.max": 4,
  "replication.factor": 1,
  "source.consumer.fetch.max.bytes": "1000000",
  "target.producer.acks": "all",
  "groups": "ignored-here"
}"#;

const CHECKPOINT_POST: &str = r#"{"name": "mm2-cpc", "config": {
  "connector.class": "MirrorCheckpointConnector",
  "source.cluster.alias": "A",
  "target.cluster.alias": "B",
  "source.cluster.bootstrap.servers": "a:9092",
  "target.cluster.bootstrap.servers": "b:9092",
  "topics": "orders.*",
  "groups": ".*",
  "emit.checkpoints.interval.seconds": "5",
  "sync.group.offsets.enabled": true
}}"#;

const HEARTBEAT_MSK: &str = r#"{
  "connectorName": "mm2-hbc",
  "kafkaCluster": {"apacheKafkaCluster": {"bootstrapServers": "b:9092", "vpc": {"subnets": []}}},
  "connectorConfiguration": {
    "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
    "source.cluster.alias": "A",
    "target.cluster.alias": "B",
    "source.cluster.bootstrap.servers": "a:9092",
    "emit.heartbeats.interval.seconds": "2"
  }
}"#;

#[test]
fn put_post_and_msk_bodies_merge_into_one_flow() {
    let imported = import(&[
        ("source.json", SOURCE_PUT),
        ("checkpoint.json", CHECKPOINT_POST),
        ("heartbeat.json", HEARTBEAT_MSK),
    ])
    .unwrap();
    assert!(imported.is_made());
    let settings = settings(&imported);
    for line in [
        "clusters = A, B",
        "A.bootstrap.servers = a:9092",
        // From MSK's kafkaCluster: the cluster its workers write to.
        "B.bootstrap.servers = b:9092",
        "A->B.enabled = true",
        "A->B.topics = orders.*",
        "A->B.groups = .*",
        "A->B.replication.factor = 1",
        "A->B.source.consumer.fetch.max.bytes = 1000000",
        "A->B.target.producer.acks = all",
        "A->B.emit.checkpoints.interval.seconds = 5",
        "A->B.sync.group.offsets.enabled = true",
        "A->B.emit.heartbeats.interval.seconds = 2",
        "A->B.emit.heartbeats.enabled = true",
        "emit.heartbeats.enabled = false",
    ] {
        assert!(settings.contains(&line), "no `{line}` in\n{}", imported.text());
    }
    // Each setting names where it came from; `topics` is read by two connectors.
    assert!(imported
        .text()
        .contains("# source.json: \"topics\", checkpoint.json: config.\"topics\"\nA->B.topics = orders.*\n"));

    let config = imported.config().unwrap();
    assert_eq!(
        config.imported_from(),
        Some(
            &[
                "source.json".to_owned(),
                "checkpoint.json".to_owned(),
                "heartbeat.json".to_owned()
            ][..]
        )
    );
    let [flow] = config.enabled_flows().collect::<Vec<_>>()[..] else {
        panic!("one flow: {config}")
    };
    assert_eq!((flow.source.alias.as_str(), flow.target.alias.as_str()), ("A", "B"));
    assert_eq!(flow.source.bootstrap_servers, ["a:9092"]);
    assert_eq!(flow.target.bootstrap_servers, ["b:9092"]);
    assert!(flow.emit_checkpoints.enabled && flow.emit_heartbeats.enabled);
    // What one connector reads and another does not, and Connect's own keys, are listed.
    let ignored: Vec<String> = config
        .ignored()
        .iter()
        .map(|i| format!("{}: {}", i.key, i.reason))
        .collect();
    assert!(
        ignored
            .iter()
            .any(|i| i.starts_with("A->B.groups: only MirrorCheckpointConnector") && i.contains("source.json")),
        "{ignored:?}"
    );
    assert!(ignored.iter().any(|i| i.starts_with("A->B.tasks.max")), "{ignored:?}");

    // The printed text says the same when read as an mm2.properties file.
    let reread = Mm2Config::parse(imported.shown_text()).unwrap();
    assert_eq!(reread.to_json()["flows"], config.to_json()["flows"]);
}

#[test]
fn a_connector_without_aliases_is_mm2s_source_to_target() {
    let imported = import(&[(
        "mm2-msc.json",
        r#"{"connector.class": "MirrorSourceConnector", "source.cluster.bootstrap.servers": "a:9092",
            "target.cluster.bootstrap.servers": "b:9092", "topics": "t"}"#,
    )])
    .unwrap();
    let settings = settings(&imported);
    assert!(settings.contains(&"clusters = source, target"), "{settings:?}");
    assert!(settings.contains(&"source->target.enabled = true"));
    // Only what is given runs: no checkpoint or heartbeat connector.
    assert!(settings.contains(&"source->target.emit.checkpoints.enabled = false"));
    assert!(!settings
        .iter()
        .any(|s| s.starts_with("source->target.emit.heartbeats.enabled")));
    let config = imported.config().unwrap();
    let flow = &config.enabled_flows().next().unwrap();
    assert!(!flow.emit_checkpoints.enabled && !flow.emit_heartbeats.enabled);
}

#[test]
fn literal_secrets_are_read_but_not_shown() {
    let jaas =
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"s3cret\";"#;
    let text = format!(
        r#"{{"connector.class": "MirrorSourceConnector", "source.cluster.bootstrap.servers": "a:9092",
            "source.cluster.security.protocol": "SASL_PLAINTEXT", "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
            "source.cluster.sasl.jaas.config": "{jaas}", "target.cluster.bootstrap.servers": "b:9092",
            "target.cluster.sasl.jaas.config": "${{file:/etc/mm2/secrets.properties:jaas}}"}}"#
    );
    let imported = import(&[("s.json", &text)]).unwrap();
    assert!(imported.text().contains("s3cret"), "run reads the value");
    let shown = imported.shown_text();
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("\nsource.sasl.jaas.config = [hidden]\n"), "{shown}");
    assert!(
        shown.contains("# warning: `source.sasl.jaas.config` is written as it is in s.json"),
        "{shown}"
    );
    // A placeholder is no secret: it stays as written.
    assert!(
        shown.contains("\ntarget.sasl.jaas.config = ${file:/etc/mm2/secrets.properties:jaas}\n"),
        "{shown}"
    );
}

#[test]
fn connector_errors_name_the_file_and_what_to_do() {
    let unknown = error(&[(
        "s.json",
        r#"{"connector.class": "io.confluent.connect.replicator.ReplicatorSourceConnector"}"#,
    )]);
    assert_eq!(
        unknown,
        "s.json: \"connector.class\": `io.confluent.connect.replicator.ReplicatorSourceConnector` is not one of MM2's \
         connectors (org.apache.kafka.connect.mirror.MirrorSourceConnector, MirrorCheckpointConnector or \
         MirrorHeartbeatConnector)"
    );
    let missing = error(&[("c.json", r#"{"name": "x", "config": {"topics": "t"}}"#)]);
    assert!(
        missing.starts_with("c.json: config: no `connector.class`; expected an MM2 connector config"),
        "{missing}"
    );
    let not_json = error(&[("c.json", "topics = t")]);
    assert!(not_json.starts_with("c.json: not JSON ("), "{not_json}");
    let array = error(&[(
        "c.json",
        r#"{"connector.class": "MirrorSourceConnector", "topics": ["a", "b"]}"#,
    )]);
    assert_eq!(
        array,
        "c.json: \"topics\": a JSON array; connector settings are strings (write it as \"…\")"
    );

    // Two connectors naming different clusters for one alias.
    let other_target = SOURCE_PUT.replace(
        "\"target.cluster.bootstrap.servers\": \"b:9092\"",
        "\"target.cluster.bootstrap.servers\": \"c:9092\"",
    );
    let clash = error(&[("source.json", &other_target), ("checkpoint.json", CHECKPOINT_POST)]);
    assert_eq!(
        clash,
        "checkpoint.json: config.\"target.cluster.bootstrap.servers\": names cluster `B` `b:9092`, but source.json: \
         \"target.cluster.bootstrap.servers\" names it `c:9092`: an alias is one cluster; give every connector the \
         same bootstrap servers for `B`, or different clusters different aliases (`source.cluster.alias`, \
         `target.cluster.alias`)"
    );
    // Two connectors of one pair disagreeing about a key both read.
    let other_topics = CHECKPOINT_POST.replace("\"topics\": \"orders.*\"", "\"topics\": \"payments\"");
    let topics = error(&[("source.json", SOURCE_PUT), ("checkpoint.json", &other_topics)]);
    assert!(
        topics.starts_with("checkpoint.json: config.\"topics\": sets `A->B.topics` to `payments`, but source.json: \"topics\" sets it to `orders.*`"),
        "{topics}"
    );
    let twice = error(&[("a.json", SOURCE_PUT), ("b.json", SOURCE_PUT)]);
    assert!(
        twice.starts_with("b.json (MirrorSourceConnector): a second MirrorSourceConnector for A->B"),
        "{twice}"
    );
    let mixed = error(&[("a.json", SOURCE_PUT), ("mm2.properties", "clusters = A, B\n")]);
    assert!(
        mixed.starts_with("mm2.properties: read as an mm2.properties file, which must be given alone"),
        "{mixed}"
    );
}

#[test]
fn an_error_in_the_made_text_names_its_origin() {
    let bad = SOURCE_PUT.replace("\"topics\": \"orders.*\"", "\"topics\": \"orders[\"");
    let error = import(&[("source.json", &bad)]).unwrap().config().unwrap_err();
    assert!(matches!(error, ConfigError::Imported { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("orders["), "{text}");
    assert!(text.ends_with("it comes from source.json: \"topics\"]"), "{text}");
}

#[test]
fn an_mm2_properties_file_is_read_as_it_is() {
    let imported = import(&[(
        "mm2.properties",
        "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n",
    )])
    .unwrap();
    assert!(!imported.is_made());
    assert_eq!(imported.shown_text(), imported.text());
    assert_eq!(imported.config().unwrap().imported_from(), None);
    // Its shape is chosen by content when the name says nothing.
    assert_eq!(shape("config", "{\"connector.class\": \"x\"}"), Shape::Json);
    assert_eq!(
        shape("mm2", "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaMirrorMaker2\n"),
        Shape::Yaml
    );
    assert_eq!(shape("mm2", "clusters = A\n"), Shape::Properties);
}

/// A KafkaMirrorMaker2 whose source cluster authenticates as `authentication` (YAML lines,
/// indented for `spec.clusters[0]`), over TLS.
fn strimzi(authentication: &str) -> String {
    format!(
        r#"apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaMirrorMaker2
metadata:
  name: my-mm2
spec:
  version: 3.9.0
  replicas: 1
  connectCluster: "target"
  clusters:
    - alias: "source"
      bootstrapServers: a:9093
      tls:
        trustedCertificates:
          - secretName: source-ca
            certificate: ca.crt
{authentication}
    - alias: "target"
      bootstrapServers: b:9092
      config:
        config.storage.replication.factor: 1
        producer.linger.ms: 5
        consumer.max.poll.records: 10
  mirrors:
    - sourceCluster: "source"
      targetCluster: "target"
      topicsPattern: "orders.*"
      topicsExcludePattern: "orders-internal"
      groupsPattern: ".*"
      sourceConnector:
        tasksMax: 2
        config:
          replication.factor: 1
          topics: "ignored-as-topicsPattern-wins"
          sync.topic.acls.enabled: "false"
      checkpointConnector:
        config:
          checkpoints.topic.replication.factor: 1
      heartbeatConnector:
        config:
          heartbeats.topic.replication.factor: 1
"#
    )
}

fn strimzi_settings(authentication: &str) -> Vec<String> {
    let imported = import(&[("mm2.yaml", &strimzi(authentication))]).unwrap();
    assert_eq!(
        imported.shown_text(),
        imported.text(),
        "a Strimzi resource holds no secret itself"
    );
    settings(&imported).into_iter().map(str::to_owned).collect()
}

fn assert_has(settings: &[String], lines: &[&str]) {
    for line in lines {
        assert!(
            settings.iter().any(|s| s == line),
            "no `{line}` in\n{}",
            settings.join("\n")
        );
    }
}

#[test]
fn strimzi_clusters_mirrors_and_tls() {
    let settings = strimzi_settings("");
    assert_has(
        &settings,
        &[
            "clusters = source, target",
            "config.providers = strimzienv, strimzifile, strimzidir",
            "config.providers.strimzidir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider",
            "config.providers.strimzidir.param.allowed.paths = /opt/kafka",
            "source.bootstrap.servers = a:9093",
            "source.security.protocol = SSL",
            "source.ssl.truststore.type = PEM",
            "source.ssl.truststore.certificates = ${strimzidir:/opt/kafka/mm2-certs/source/source-ca:ca.crt}",
            "target.bootstrap.servers = b:9092",
            "target.security.protocol = PLAINTEXT",
            // The Connect cluster's producer settings reach the producers that write the records.
            "target.producer.linger.ms = 5",
            "source->target.enabled = true",
            "source->target.topics = orders.*",
            "source->target.topics.exclude = orders-internal",
            "source->target.groups = .*",
            "source->target.replication.factor = 1",
            "source->target.sync.topic.acls.enabled = false",
            "source->target.checkpoints.topic.replication.factor = 1",
            "source->target.heartbeats.topic.replication.factor = 1",
            "source->target.emit.heartbeats.enabled = true",
        ],
    );
    assert!(!settings.iter().any(|s| s.contains("ignored-as-topicsPattern-wins")));
    let imported = import(&[("mm2.yaml", &strimzi(""))]).unwrap();
    let text = imported.text();
    assert!(
        text.contains("# mm2.yaml line 26: spec.mirrors[0].topicsPattern\nsource->target.topics = orders.*\n"),
        "{text}"
    );
    assert!(
        text.contains("# ignored: mm2.yaml line 7: spec.replicas: `spec.replicas`: a Kubernetes setting"),
        "{text}"
    );
    assert!(
        text.contains("`target.consumer.max.poll.records`"),
        "listed as ignored: {text}"
    );
}

#[test]
fn strimzi_scram_and_plain_read_the_mounted_password() {
    for (kind, mechanism, module) in [
        ("scram-sha-512", "SCRAM-SHA-512", "scram.ScramLoginModule"),
        ("scram-sha-256", "SCRAM-SHA-256", "scram.ScramLoginModule"),
        ("plain", "PLAIN", "plain.PlainLoginModule"),
    ] {
        let settings = strimzi_settings(&format!(
            "      authentication:\n        type: {kind}\n        username: mirror\n        passwordSecret:\n          \
             secretName: mirror-user\n          password: pw"
        ));
        assert_has(
            &settings,
            &[
                "source.security.protocol = SASL_SSL",
                &format!("source.sasl.mechanism = {mechanism}"),
                &format!(
                    "source.sasl.jaas.config = org.apache.kafka.common.security.{module} required username=\"mirror\" \
                     password=\"${{strimzidir:/opt/kafka/mm2-password/source/mirror-user:pw}}\";"
                ),
            ],
        );
    }
}

#[test]
fn strimzi_tls_authentication_reads_the_mounted_key_pair() {
    let settings = strimzi_settings(
        "      authentication:\n        type: tls\n        certificateAndKey:\n          secretName: mirror-user\n          \
         certificate: user.crt\n          key: user.key",
    );
    assert_has(
        &settings,
        &[
            "source.security.protocol = SSL",
            "source.ssl.keystore.type = PEM",
            "source.ssl.keystore.certificate.chain = ${strimzidir:/opt/kafka/mm2-certs/source/mirror-user:user.crt}",
            "source.ssl.keystore.key = ${strimzidir:/opt/kafka/mm2-certs/source/mirror-user:user.key}",
        ],
    );
}

#[test]
fn strimzi_oauth_is_kafkas_client_credentials_login() {
    let settings = strimzi_settings(
        "      authentication:\n        type: oauth\n        tokenEndpointUri: https://sso/token\n        clientId: mirror\n        \
         clientSecret:\n          secretName: mirror-oauth\n          key: secret\n        scope: kafka",
    );
    assert_has(
        &settings,
        &[
            "source.security.protocol = SASL_SSL",
            "source.sasl.mechanism = OAUTHBEARER",
            "source.sasl.oauthbearer.token.endpoint.url = https://sso/token",
            "source.sasl.login.callback.handler.class = \
             org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "source.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             clientId=\"mirror\" clientSecret=\"${strimzidir:/opt/kafka/mm2-oauth/source/mirror-oauth:secret}\" \
             scope=\"kafka\";",
        ],
    );
    let refused = error(&[(
        "mm2.yaml",
        &strimzi(
            "      authentication:\n        type: oauth\n        tokenEndpointUri: https://sso/token\n        \
             accessToken:\n          secretName: t\n          key: k",
        ),
    )]);
    assert!(
        refused
            .starts_with("mm2.yaml line 19: spec.clusters[0].authentication.accessToken: Strait's OAUTHBEARER client"),
        "{refused}"
    );
}

#[test]
fn the_mount_root_is_an_option() {
    let options = ImportOptions {
        strimzi_mount_root: PathBuf::from("/tmp/pod"),
    };
    let files = vec![("mm2.yaml".to_owned(), strimzi("").into_bytes())];
    let imported = Imported::from_files(&files, &options).unwrap();
    assert!(imported
        .text()
        .contains("\nsource.ssl.truststore.certificates = ${strimzidir:/tmp/pod/mm2-certs/source/source-ca:ca.crt}\n"));
    assert!(imported
        .text()
        .contains("\nconfig.providers.strimzidir.param.allowed.paths = /tmp/pod\n"));
    // The secret is read when the text is: a missing file names the resource's field.
    let error = imported.config().unwrap_err().to_string();
    assert!(error.contains("/tmp/pod/mm2-certs/source/source-ca"), "{error}");
    assert!(
        error.ends_with("it comes from mm2.yaml line 14: spec.clusters[0].tls.trustedCertificates[0]]"),
        "{error}"
    );
}

#[test]
fn a_strimzi_resource_without_secrets_is_a_whole_config() {
    let yaml = strimzi("").replace(
        "      tls:\n        trustedCertificates:\n          - secretName: source-ca\n            certificate: ca.crt\n",
        "",
    );
    let config = import(&[("mm2.yaml", &yaml)]).unwrap().config().unwrap();
    let flow = config.enabled_flows().next().unwrap();
    assert_eq!(flow.source.bootstrap_servers, ["a:9093"]);
    assert!(flow.emit_checkpoints.enabled && flow.emit_heartbeats.enabled);
    assert_eq!(config.imported_from(), Some(&["mm2.yaml".to_owned()][..]));
}

#[test]
fn strimzi_errors_name_the_file_the_field_and_what_to_do() {
    let other_kind = error(&[(
        "mm2.yaml",
        "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaConnect\nspec: {}\n",
    )]);
    assert!(
        other_kind.starts_with("mm2.yaml: no `kind: KafkaMirrorMaker2` resource (found: KafkaConnect); Strait reads"),
        "{other_kind}"
    );
    let old = error(&[("mm2.yaml", &strimzi("").replace("v1beta2", "v1alpha1"))]);
    assert_eq!(
        old,
        "mm2.yaml line 1: apiVersion: `apiVersion: kafka.strimzi.io/v1alpha1` is not read: Strait reads \
         KafkaMirrorMaker2 of kafka.strimzi.io/v1beta2 (or kafka.strimzi.io/v1); convert older resources with \
         Strimzi's api-conversion tool first"
    );
    let no_servers = error(&[("mm2.yaml", &strimzi("").replace("      bootstrapServers: b:9092\n", ""))]);
    assert_eq!(
        no_servers,
        "mm2.yaml line 17: spec.clusters[1]: `bootstrapServers` is required here"
    );
    let auth = error(&[(
        "mm2.yaml",
        &strimzi("      authentication:\n        type: scram-sha-512\n        username: mirror"),
    )]);
    assert_eq!(
        auth,
        "mm2.yaml line 16: spec.clusters[0].authentication: `passwordSecret` is required here"
    );
    let unknown_auth = error(&[("mm2.yaml", &strimzi("      authentication:\n        type: gssapi"))]);
    assert!(
        unknown_auth
            .starts_with("mm2.yaml line 17: spec.clusters[0].authentication.type: authentication type `gssapi`"),
        "{unknown_auth}"
    );
    let typo = error(&[("mm2.yaml", &strimzi("").replace("topicsPattern:", "topicPattern:"))]);
    assert!(
        typo.starts_with("mm2.yaml line 26: spec.mirrors[0].topicPattern: unknown field `topicPattern`"),
        "{typo}"
    );
    let missing_cluster = error(&[(
        "mm2.yaml",
        &strimzi("").replace("sourceCluster: \"source\"", "sourceCluster: \"east\""),
    )]);
    assert_eq!(
        missing_cluster,
        "mm2.yaml line 24: spec.mirrors[0].sourceCluster: cluster `east` is not in spec.clusters (source, target)"
    );
    let not_yaml = error(&[("mm2.yaml", "kind: [KafkaMirrorMaker2\n")]);
    assert!(not_yaml.starts_with("mm2.yaml: not YAML ("), "{not_yaml}");
    let two = error(&[("a.yaml", &strimzi("")), ("b.yaml", &strimzi(""))]);
    assert!(
        two.starts_with("a.yaml: a Strimzi KafkaMirrorMaker2 resource must be given alone"),
        "{two}"
    );
}

#[test]
fn strimzi_custom_authentication_sets_the_client_keys_of_its_config() {
    let imported = import(&[(
        "mm2.yaml",
        &strimzi(
            "      authentication:\n        type: custom\n        sasl: true\n        config:\n          \
             sasl.mechanism: AWS_MSK_IAM\n          \
             sasl.jaas.config: software.amazon.msk.auth.iam.IAMLoginModule required;\n          \
             sasl.client.callback.handler.class: software.amazon.msk.auth.iam.IAMClientCallbackHandler\n          \
             not.allowed: foo",
        ),
    )])
    .unwrap();
    let settings: Vec<String> = settings(&imported).into_iter().map(str::to_owned).collect();
    assert_has(
        &settings,
        &[
            "source.security.protocol = SASL_SSL",
            "source.sasl.mechanism = AWS_MSK_IAM",
            "source.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;",
            "source.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler",
        ],
    );
    // Strimzi drops keys outside sasl.* and ssl.keystore.*; so does the import, saying so.
    assert!(!settings.iter().any(|s| s.contains("not.allowed")), "{settings:?}");
    let imported = import(&[(
        "mm2.yaml",
        &strimzi(
            "      authentication:\n        type: custom\n        sasl: false\n        config:\n          \
             ssl.keystore.location: /mnt/keystore.p12\n          not.allowed: foo",
        ),
    )])
    .unwrap();
    let text = imported.text();
    assert!(text.contains("\nsource.security.protocol = SSL\n"), "{text}");
    assert!(
        text.contains("\nsource.ssl.keystore.location = /mnt/keystore.p12\n"),
        "{text}"
    );
    assert!(
        text.contains("spec.clusters[0].authentication.config.\"not.allowed\"")
            && text.contains("only `sasl.*` and `ssl.keystore.*`"),
        "{text}"
    );
}

#[test]
fn a_strimzi_config_provider_no_value_uses_is_a_warning() {
    let resource = strimzi("").replace(
        "        producer.linger.ms: 5\n",
        "        producer.linger.ms: 5\n        config.providers: secrets\n        \
         config.providers.secrets.class: io.strimzi.kafka.KubernetesSecretConfigProvider\n",
    );
    let imported = import(&[("mm2.yaml", &resource)]).unwrap();
    assert!(
        imported
            .text()
            .contains("\nconfig.providers = secrets, strimzienv, strimzifile, strimzidir\n"),
        "{}",
        imported.text()
    );
    // Without the mounted trust store, which this machine has not.
    let text: String = imported
        .shown_text()
        .lines()
        .filter(|line| !line.contains("ssl.truststore"))
        .map(|line| format!("{line}\n"))
        .collect();
    let config = Mm2Config::parse(&text).unwrap();
    assert!(
        config
            .warnings()
            .iter()
            .any(|w| w.contains("config provider `secrets` is declared but no value uses it")),
        "{:?}",
        config.warnings()
    );
}

#[test]
fn producer_overrides_reach_the_flows_target_producer() {
    let source = SOURCE_PUT.replace(
        "\"target.producer.acks\": \"all\",",
        "\"producer.override.max.request.size\": \"2097152\", \"producer.override.client.id\": \"mm2-writer\",",
    );
    let imported = import(&[("source.json", &source)]).unwrap();
    let settings = settings(&imported);
    assert!(
        settings.contains(&"A->B.target.producer.max.request.size = 2097152"),
        "{settings:?}"
    );
    let config = Mm2Config::parse(imported.shown_text()).unwrap();
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(
        flow.target.get(crate::client::ClientRole::Producer, "max.request.size"),
        Some("2097152")
    );
    assert_eq!(
        flow.target.get(crate::client::ClientRole::Producer, "client.id"),
        Some("mm2-writer")
    );
}
