//! A Strimzi `KafkaMirrorMaker2` resource (`kafka.strimzi.io/v1beta2`, YAML).
//!
//! * `spec.clusters[]` (`alias`, `bootstrapServers`, `tls`, `authentication`, `config`) become
//!   cluster keys `<alias>.*`; `spec.mirrors[]` (`sourceCluster`, `targetCluster`, the three
//!   connectors' `config`, `topicsPattern`, `topicsExcludePattern`, `groupsPattern`,
//!   `groupsExcludePattern` and the deprecated `…BlacklistPattern`) become flows, merged as
//!   connector configs are (see [`super`]). The mirror's patterns win over the connectors'
//!   `topics`, `groups`, … as in Strimzi. The newer layout (`spec.target` and
//!   `spec.mirrors[].source`, Strimzi 0.48 on) is read too.
//! * Secrets are read from the files where Strimzi 0.4x mounts them in a MirrorMaker 2 pod,
//!   under [`ImportOptions::strimzi_mount_root`] (`/opt/kafka`), through Strimzi's own
//!   config provider aliases, so the text keeps placeholders:
//!   - `tls.trustedCertificates[]` (`secretName` and `certificate` or `pattern`):
//!     `<root>/mm2-certs/<alias>/<secretName>/<certificate>`, as a PEM trust store
//!     (`ssl.truststore.certificates`; Strimzi builds a PKCS12 store from the same files);
//!   - `authentication.type: tls` (`certificateAndKey`): the same folder, as a PEM key store
//!     (`ssl.keystore.certificate.chain` and `ssl.keystore.key`);
//!   - `scram-sha-256`, `scram-sha-512`, `plain` (`username`, `passwordSecret`):
//!     `<root>/mm2-password/<alias>/<secretName>/<password>` in `sasl.jaas.config`, as Strimzi
//!     writes it (`${strimzidir:/opt/kafka/mm2-password/<alias>/<secretName>:<password>}`);
//!   - `custom` (`sasl`, `config`): the `sasl.*` and `ssl.keystore.*` keys of its `config` as
//!     client keys (Strimzi drops the others), `SASL_*` as the protocol when `sasl: true` (for
//!     example AWS MSK IAM: `sasl.mechanism: AWS_MSK_IAM`);
//!   - `oauth` (`clientId`, `clientSecret`, `tokenEndpointUri`, `scope`): Kafka's own
//!     OAUTHBEARER client (`sasl.oauthbearer.token.endpoint.url`,
//!     `OAuthBearerLoginCallbackHandler`, JAAS `clientId`, `clientSecret`, `scope`), the secret
//!     from `<root>/mm2-oauth/<alias>/<secretName>/<key>`. Strimzi's pods use Strimzi's OAuth
//!     library instead, whose other options (access and refresh tokens, password grants, its
//!     own trust store) have no Kafka equivalent and are refused.
//! * Kubernetes settings of the pods (`replicas`, `image`, `resources`, `template`, …) are
//!   listed as ignored.
//!
//! # References
//!
//! `strimzi/strimzi-kafka-operator` 0.47.0: `KafkaMirrorMaker2Connectors`
//! (`prepareMirrorMaker2ConnectorConfig`, `addClusterToMirrorMaker2ConnectorConfig`),
//! `KafkaMirrorMaker2Cluster` (the mount folders), `CertUtils` and `AuthenticationUtils` (the
//! volume mounts), `KafkaConnectConfigurationBuilder` (`config.providers`),
//! `kafka_mirror_maker_2_run.sh` and `tls_utils.sh` (how certificates are read, patterns
//! included).

use std::collections::BTreeMap;
use std::path::Path;

use super::connectors::{merge, Connector, Kind, Overrides};
use super::yaml::{self, Node, Value};
use super::{Builder, ImportOptions};
use crate::error::{ConfigError, Result};
use crate::keys::{ignored_reason, is_connection_key};

/// Strimzi's config providers, as its Connect pods configure them, without
/// `strimzisecrets` (`KubernetesSecretConfigProvider`: Strait does not call the Kubernetes
/// API).
const PROVIDERS: &[(&str, &str)] = &[
    ("config.providers", "strimzienv, strimzifile, strimzidir"),
    (
        "config.providers.strimzienv.class",
        "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    ),
    ("config.providers.strimzienv.param.allowlist.pattern", ".*"),
    (
        "config.providers.strimzifile.class",
        "org.apache.kafka.common.config.provider.FileConfigProvider",
    ),
    (
        "config.providers.strimzidir.class",
        "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
    ),
];

const WHY_POD: &str = "a Kubernetes setting of Strimzi's Connect pods; Strait is deployed on its own";

/// Fields of `spec` that configure the pods, not the mirror.
const POD_FIELDS: &[&str] = &[
    "version",
    "replicas",
    "image",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "jvmOptions",
    "jmxOptions",
    "logging",
    "clientRackInitImage",
    "template",
    "externalConfiguration",
    "metricsConfig",
    "tracing",
    "rack",
];

/// A node of the resource, the file it is in and the path that leads to it
/// (`spec.clusters[0].alias`), for messages.
#[derive(Clone)]
struct At<'a> {
    node: &'a Node,
    file: &'a str,
    path: String,
}

impl<'a> At<'a> {
    fn origin(&self) -> String {
        format!("{} line {}: {}", self.file, self.node.line, self.path)
    }

    fn fail(&self, reason: impl Into<String>) -> ConfigError {
        ConfigError::Import {
            origin: self.origin(),
            reason: reason.into(),
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.node.value, Value::Null)
    }

    /// The entries of a mapping (a null node is an empty one).
    fn entries(&self) -> Result<Vec<(String, At<'a>)>> {
        match &self.node.value {
            Value::Null => Ok(Vec::new()),
            Value::Mapping(map) => Ok(map
                .iter()
                .map(|(key, node)| {
                    let path = if key.contains(['.', ' ']) || key.is_empty() {
                        format!("{}.\"{key}\"", self.path)
                    } else if self.path.is_empty() {
                        key.clone()
                    } else {
                        format!("{}.{key}", self.path)
                    };
                    (
                        key.clone(),
                        At {
                            node,
                            file: self.file,
                            path,
                        },
                    )
                })
                .collect()),
            _ => Err(self.fail("expected a mapping (`key: value` lines)")),
        }
    }

    /// The mapping's entries, refusing fields not in `known` (with `ignored` fields listed as
    /// ignored, with `why`).
    fn fields(
        &self,
        known: &[&str],
        builder: &mut Builder,
        ignored: &[&str],
        why: &str,
    ) -> Result<BTreeMap<String, At<'a>>> {
        let mut fields = BTreeMap::new();
        for (key, at) in self.entries()? {
            if ignored.contains(&key.as_str()) {
                builder.ignore(&at.path, &at.origin(), why);
            } else if known.contains(&key.as_str()) {
                let _ = fields.insert(key, at);
            } else {
                let mut all: Vec<&str> = known.to_vec();
                all.extend(ignored);
                return Err(at.fail(format!(
                    "unknown field `{key}` (Strimzi's fields here: {}); remove it or fix its name",
                    all.join(", ")
                )));
            }
        }
        Ok(fields)
    }

    fn items(&self) -> Result<Vec<At<'a>>> {
        match &self.node.value {
            Value::Null => Ok(Vec::new()),
            Value::Sequence(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, node)| At {
                    node,
                    file: self.file,
                    path: format!("{}[{i}]", self.path),
                })
                .collect()),
            _ => Err(self.fail("expected a list (`- …` lines)")),
        }
    }

    /// A scalar's text, as written.
    fn text(&self) -> Result<String> {
        match &self.node.value {
            Value::Scalar(text) => Ok(text.clone()),
            Value::Null => Ok(String::new()),
            _ => Err(self.fail("expected a value, not a list or mapping")),
        }
    }
}

/// The `alias` of a cluster node, read before its other fields.
fn alias(at: &At<'_>) -> Result<String> {
    at.entries()?
        .into_iter()
        .find(|(k, v)| k == "alias" && !v.is_null())
        .ok_or_else(|| at.fail("`alias` is required here"))?
        .1
        .text()
}

fn get<'m, 'a>(fields: &'m BTreeMap<String, At<'a>>, key: &str) -> Option<&'m At<'a>> {
    fields.get(key).filter(|at| !at.is_null())
}

fn required<'m, 'a>(fields: &'m BTreeMap<String, At<'a>>, parent: &At<'_>, key: &str) -> Result<&'m At<'a>> {
    get(fields, key).ok_or_else(|| parent.fail(format!("`{key}` is required here")))
}

/// Reads the `KafkaMirrorMaker2` resource in `text`, the contents of `file`.
pub(crate) fn import(builder: &mut Builder, file: &str, text: &str, options: &ImportOptions) -> Result<()> {
    let documents = yaml::load(text).map_err(|e| ConfigError::Import {
        origin: file.to_owned(),
        reason: format!("not YAML ({e}); expected a Strimzi KafkaMirrorMaker2 resource"),
    })?;
    let mut resources = Vec::new();
    let mut kinds = Vec::new();
    for node in &documents {
        let at = At {
            node,
            file,
            path: String::new(),
        };
        let kind = at
            .entries()
            .ok()
            .and_then(|entries| entries.into_iter().find(|(k, _)| k == "kind"))
            .and_then(|(_, kind)| kind.text().ok())
            .unwrap_or_default();
        if kind == "KafkaMirrorMaker2" {
            resources.push(at);
        } else {
            kinds.push(if kind.is_empty() { "no kind".to_owned() } else { kind });
        }
    }
    let resource = match &resources[..] {
        [one] => one,
        [] => {
            return Err(ConfigError::Import {
                origin: file.to_owned(),
                reason: format!(
                    "no `kind: KafkaMirrorMaker2` resource (found: {}); Strait reads Strimzi's KafkaMirrorMaker2, \
                     MM2 connector configs (JSON) and mm2.properties",
                    if kinds.is_empty() {
                        "nothing".to_owned()
                    } else {
                        kinds.join(", ")
                    }
                ),
            });
        }
        [_, second, ..] => {
            return Err(second.fail("a second KafkaMirrorMaker2 resource; give one at a time"));
        }
    };
    let top = resource.fields(&["apiVersion", "kind", "metadata", "spec", "status"], builder, &[], "")?;
    // v1beta2 and v1 (Strimzi 0.49 on) share the fields read here; older versions are
    // converted by Strimzi's own tools before any current operator reads them.
    let version_at = required(&top, resource, "apiVersion")?;
    let version = version_at.text()?;
    if !matches!(version.as_str(), "kafka.strimzi.io/v1beta2" | "kafka.strimzi.io/v1") {
        return Err(version_at.fail(format!(
            "`apiVersion: {version}` is not read: Strait reads KafkaMirrorMaker2 of kafka.strimzi.io/v1beta2 (or \
             kafka.strimzi.io/v1); convert older resources with Strimzi's api-conversion tool first"
        )));
    }
    let name = get(&top, "metadata")
        .and_then(|m| m.entries().ok())
        .and_then(|e| e.into_iter().find(|(k, _)| k == "name"))
        .and_then(|(_, n)| n.text().ok());
    builder.note(format!(
        "{file}: Strimzi KafkaMirrorMaker2{}; its secrets are read where Strimzi mounts them, under {}",
        name.map(|n| format!(" `{n}`")).unwrap_or_default(),
        options.strimzi_mount_root.display()
    ));
    let spec_at = required(&top, resource, "spec")?;
    let mut known = vec!["clusters", "connectCluster", "target", "mirrors"];
    known.extend(POD_FIELDS);
    let spec = spec_at.fields(&known, builder, &[], "")?;
    for field in POD_FIELDS {
        if let Some(at) = get(&spec, field) {
            let why = match *field {
                "rack" => {
                    "Strimzi sets the consumers' client.rack from the node's zone; Strait does not know it: set \
                           `consumer.client.rack` in the source connector's config"
                }
                "tracing" => "Strait does not trace records through OpenTelemetry",
                "metricsConfig" => "Strait serves its own Prometheus metrics (`strait.http.listener`)",
                _ => WHY_POD,
            };
            builder.ignore(&at.path, &at.origin(), why);
        }
    }

    for (key, value) in PROVIDERS {
        builder.set(key, value, "Strimzi's config providers, as its Connect pods set them (without strimzisecrets: Strait does not call the Kubernetes API)")?;
    }
    let root = &options.strimzi_mount_root;
    builder.set(
        "config.providers.strimzidir.param.allowed.paths",
        &root.display().to_string(),
        "where Strimzi mounts the secrets (`--strimzi-mount-root`, by default /opt/kafka)",
    )?;

    // The clusters, and the mirrors as (source alias, target alias, mirror node).
    let mut clusters: Vec<(String, At<'_>)> = Vec::new();
    let mut mirrors: Vec<(String, String, BTreeMap<String, At<'_>>)> = Vec::new();
    let mirror_list = required(&spec, spec_at, "mirrors")?.items()?;
    let mirror_common = [
        "sourceConnector",
        "checkpointConnector",
        "topicsPattern",
        "topicsExcludePattern",
        "groupsPattern",
        "groupsExcludePattern",
        "topicsBlacklistPattern",
        "groupsBlacklistPattern",
    ];
    let connect_alias;
    if let Some(target) = get(&spec, "target") {
        // Strimzi 0.48 on: one target, which is also the Connect cluster; sources per mirror.
        let target_alias = alias(target)?;
        connect_alias = Some(target_alias.clone());
        clusters.push((target_alias.clone(), target.clone()));
        for mirror in &mirror_list {
            let mut known: Vec<&str> = mirror_common.to_vec();
            known.push("source");
            let fields = mirror.fields(&known, builder, &[], "")?;
            let source = required(&fields, mirror, "source")?;
            let source_alias = alias(source)?;
            if !clusters.iter().any(|(a, _)| *a == source_alias) {
                clusters.push((source_alias.clone(), source.clone()));
            }
            mirrors.push((source_alias, target_alias.clone(), fields));
        }
    } else {
        for cluster in required(&spec, spec_at, "clusters")?.items()? {
            let alias = alias(&cluster)?;
            if clusters.iter().any(|(a, _)| *a == alias) {
                return Err(cluster.fail(format!("a second cluster with alias `{alias}`")));
            }
            clusters.push((alias, cluster));
        }
        connect_alias = get(&spec, "connectCluster").map(At::text).transpose()?;
        for mirror in &mirror_list {
            let mut known: Vec<&str> = mirror_common.to_vec();
            known.extend(["sourceCluster", "targetCluster", "heartbeatConnector"]);
            let fields = mirror.fields(&known, builder, &[], "")?;
            let alias_of = |key: &str| -> Result<String> {
                let at = required(&fields, mirror, key)?;
                let alias = at.text()?;
                if !clusters.iter().any(|(a, _)| *a == alias) {
                    let known: Vec<&str> = clusters.iter().map(|(a, _)| a.as_str()).collect();
                    return Err(at.fail(format!(
                        "cluster `{alias}` is not in spec.clusters ({})",
                        known.join(", ")
                    )));
                }
                Ok(alias)
            };
            let (source, target) = (alias_of("sourceCluster")?, alias_of("targetCluster")?);
            if connect_alias.as_deref().is_some_and(|c| c != target) {
                // Strimzi refuses this (unless both aliases have the same bootstrap servers):
                // the Connect cluster's producers write the mirrored records.
                let servers = |alias: &str| {
                    clusters
                        .iter()
                        .find(|(a, _)| a == alias)
                        .and_then(|(_, at)| at.entries().ok())
                        .and_then(|e| e.into_iter().find(|(k, _)| k == "bootstrapServers"))
                        .and_then(|(_, at)| at.text().ok())
                };
                let connect = connect_alias.clone().unwrap_or_default();
                if servers(&connect).is_none() || servers(&connect) != servers(&target) {
                    return Err(fields["targetCluster"].fail(format!(
                        "the target `{target}` is not spec.connectCluster (`{connect}`): Strimzi refuses this, as the \
                         Connect cluster's producers write the mirrored records"
                    )));
                }
            }
            mirrors.push((source, target, fields));
        }
    }
    if mirrors.is_empty() {
        return Err(spec_at.fail("`mirrors` is empty: there is nothing to mirror"));
    }

    // Only the clusters the mirrors use: Strimzi starts no connector for the others.
    let used: Vec<String> = clusters
        .iter()
        .map(|(a, _)| a.clone())
        .filter(|a| mirrors.iter().any(|(s, t, _)| s == a || t == a))
        .collect();
    builder.clusters(used.clone(), format!("{file}: the clusters of spec.mirrors"));
    for (alias, at) in &clusters {
        if used.contains(alias) {
            cluster(builder, alias, at, connect_alias.as_deref() == Some(alias), root)?;
        }
    }

    let mut connectors = Vec::new();
    let mut overrides = Overrides::new();
    for (source, target, fields) in &mirrors {
        let pair = overrides.entry((source.clone(), target.clone())).or_default();
        for (field, key, deprecated) in [
            ("topicsPattern", "topics", None),
            ("topicsExcludePattern", "topics.exclude", Some("topicsBlacklistPattern")),
            ("groupsPattern", "groups", None),
            ("groupsExcludePattern", "groups.exclude", Some("groupsBlacklistPattern")),
        ] {
            let chosen = get(fields, field).or_else(|| deprecated.and_then(|d| get(fields, d)));
            if let (Some(_), Some(old)) = (get(fields, field), deprecated.and_then(|d| get(fields, d))) {
                builder.ignore(
                    &old.path,
                    &old.origin(),
                    format!("`{field}` is set too and wins, as in Strimzi"),
                );
            }
            if let Some(at) = chosen {
                let _ = pair.insert(key.to_owned(), (at.text()?, at.origin()));
            }
        }
        for (field, kind) in [
            ("sourceConnector", Kind::Source),
            ("checkpointConnector", Kind::Checkpoint),
            ("heartbeatConnector", Kind::Heartbeat),
        ] {
            let Some(at) = get(fields, field) else { continue };
            if let Some(c) = connector(builder, at, kind, source, target)? {
                connectors.push(c);
            }
        }
    }
    merge(builder, connectors, &overrides)
}

/// One connector of a mirror; `None` when it is paused or stopped.
fn connector(builder: &mut Builder, at: &At<'_>, kind: Kind, source: &str, target: &str) -> Result<Option<Connector>> {
    let fields = at.fields(
        &["config", "tasksMax", "pause", "state"],
        builder,
        &["autoRestart", "listOffsets", "alterOffsets", "version"],
        "a Strimzi connector operation; Strait has no Connect connector to operate",
    )?;
    let flow = format!("{source}->{target}");
    if let Some(tasks) = get(&fields, "tasksMax") {
        builder.ignore(
            &format!("{flow}.tasks.max"),
            &tasks.origin(),
            ignored_reason("tasks.max").unwrap_or_default(),
        );
    }
    let paused = get(&fields, "pause")
        .map(At::text)
        .transpose()?
        .is_some_and(|p| p == "true");
    let state = get(&fields, "state").map(At::text).transpose()?;
    if paused || state.as_deref().is_some_and(|s| s == "paused" || s == "stopped") {
        builder.warn(format!(
            "{}: the {} of {flow} is {}, so Strait does not run it (as if it were not given)",
            at.origin(),
            kind.class(),
            state.as_deref().unwrap_or("paused")
        ));
        return Ok(None);
    }
    let mut entries = Vec::new();
    if let Some(config) = get(&fields, "config") {
        for (key, value) in config.entries()? {
            entries.push((key, value.text()?, value.origin()));
        }
    }
    Ok(Some(Connector {
        kind,
        label: at.origin(),
        source: source.to_owned(),
        target: target.to_owned(),
        entries,
    }))
}

/// `${strimzidir:<folder>:<file>}` for a file Strimzi mounts under `<root>/<mount>/<alias>/<secret>/`.
fn mounted(root: &Path, mount: &str, alias: &str, secret: &str, file: &str) -> String {
    format!(
        "${{strimzidir:{}:{file}}}",
        root.join(mount).join(alias).join(secret).display()
    )
}

/// A secret reference (`secretName` and `key_field`): the secret's name and the key's.
fn secret_ref(at: &At<'_>, builder: &mut Builder, key_field: &str) -> Result<(String, String)> {
    let fields = at.fields(&["secretName", key_field], builder, &[], "")?;
    Ok((
        required(&fields, at, "secretName")?.text()?,
        required(&fields, at, key_field)?.text()?,
    ))
}

/// The cluster keys of one `spec.clusters[]` entry (or `spec.target`, `spec.mirrors[].source`).
fn cluster(builder: &mut Builder, alias: &str, at: &At<'_>, connect: bool, root: &Path) -> Result<()> {
    let fields = at.fields(
        &["alias", "bootstrapServers", "tls", "authentication", "config"],
        builder,
        &[
            "groupId",
            "configStorageTopic",
            "statusStorageTopic",
            "offsetStorageTopic",
        ],
        "a Connect worker setting; Strait keeps its progress itself",
    )?;
    let servers = required(&fields, at, "bootstrapServers")?;
    builder.set(
        &format!("{alias}.bootstrap.servers"),
        &servers.text()?,
        &servers.origin(),
    )?;
    let tls = get(&fields, "tls");
    let mut protocol = (if tls.is_some() { "SSL" } else { "PLAINTEXT" }, at.origin());
    if let Some(tls) = tls {
        protocol.1 = tls.origin();
        let tls_fields = tls.fields(&["trustedCertificates"], builder, &[], "")?;
        let mut certificates = Vec::new();
        let mut origins = Vec::new();
        for cert in get(&tls_fields, "trustedCertificates")
            .map(At::items)
            .transpose()?
            .unwrap_or_default()
        {
            let f = cert.fields(&["secretName", "certificate", "pattern"], builder, &[], "")?;
            let secret = required(&f, &cert, "secretName")?.text()?;
            match (get(&f, "certificate"), get(&f, "pattern")) {
                (Some(file), None) => certificates.push(mounted(root, "mm2-certs", alias, &secret, &file.text()?)),
                (None, Some(pattern)) => {
                    certificates.extend(matching(root, alias, &secret, &pattern.text()?, pattern)?);
                }
                _ => return Err(cert.fail("give exactly one of `certificate` and `pattern`")),
            }
            origins.push(cert.origin());
        }
        if !certificates.is_empty() {
            let origin = origins.join(", ");
            builder.set(&format!("{alias}.ssl.truststore.type"), "PEM", &origin)?;
            // One PEM text of every certificate, each from its mounted file.
            builder.set(
                &format!("{alias}.ssl.truststore.certificates"),
                &certificates.join("\n"),
                &origin,
            )?;
        }
    }
    if let Some(auth) = get(&fields, "authentication") {
        let entries = auth.entries()?;
        let type_at = entries
            .iter()
            .find(|(k, _)| k == "type")
            .map(|(_, at)| at)
            .ok_or_else(|| {
                auth.fail("`type` is required: tls, scram-sha-256, scram-sha-512, plain, oauth or custom")
            })?;
        let kind = type_at.text()?;
        let origin = auth.origin();
        let sasl = |builder: &mut Builder, mechanism: &str, jaas: String| -> Result<()> {
            builder.set(&format!("{alias}.sasl.mechanism"), mechanism, &origin)?;
            builder.set(&format!("{alias}.sasl.jaas.config"), &jaas, &origin)
        };
        match kind.as_str() {
            "tls" => {
                let f = auth.fields(&["type", "certificateAndKey"], builder, &[], "")?;
                let pair = required(&f, auth, "certificateAndKey")?;
                let p = pair.fields(&["secretName", "certificate", "key"], builder, &[], "")?;
                let secret = required(&p, pair, "secretName")?.text()?;
                let chain = mounted(
                    root,
                    "mm2-certs",
                    alias,
                    &secret,
                    &required(&p, pair, "certificate")?.text()?,
                );
                let key = mounted(root, "mm2-certs", alias, &secret, &required(&p, pair, "key")?.text()?);
                builder.set(&format!("{alias}.ssl.keystore.type"), "PEM", &origin)?;
                builder.set(&format!("{alias}.ssl.keystore.certificate.chain"), &chain, &origin)?;
                builder.set(&format!("{alias}.ssl.keystore.key"), &key, &origin)?;
            }
            "scram-sha-256" | "scram-sha-512" | "plain" => {
                let f = auth.fields(&["type", "username", "passwordSecret"], builder, &[], "")?;
                let username = required(&f, auth, "username")?.text()?;
                let (secret, key) = secret_ref(required(&f, auth, "passwordSecret")?, builder, "password")?;
                let password = mounted(root, "mm2-password", alias, &secret, &key);
                let (mechanism, module) = match kind.as_str() {
                    "scram-sha-256" => (
                        "SCRAM-SHA-256",
                        "org.apache.kafka.common.security.scram.ScramLoginModule",
                    ),
                    "scram-sha-512" => (
                        "SCRAM-SHA-512",
                        "org.apache.kafka.common.security.scram.ScramLoginModule",
                    ),
                    _ => ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
                };
                sasl(
                    builder,
                    mechanism,
                    format!("{module} required username=\"{username}\" password=\"{password}\";"),
                )?;
                protocol.0 = if tls.is_some() { "SASL_SSL" } else { "SASL_PLAINTEXT" };
            }
            "oauth" => {
                let refused = [
                    "accessToken",
                    "refreshToken",
                    "passwordSecret",
                    "username",
                    "clientAssertion",
                    "clientAssertionLocation",
                    "clientAssertionType",
                    "accessTokenLocation",
                    "tlsTrustedCertificates",
                    "disableTlsHostnameVerification",
                    "accessTokenIsJwt",
                    "maxTokenExpirySeconds",
                    "connectTimeoutSeconds",
                    "readTimeoutSeconds",
                    "httpRetries",
                    "httpRetryPauseMs",
                    "enableMetrics",
                    "includeAcceptHeader",
                    "saslExtensions",
                    "audience",
                ];
                for (field, at) in &entries {
                    if refused.contains(&field.as_str()) {
                        return Err(at.fail(format!(
                            "Strait's OAUTHBEARER client is Kafka's own (client credentials: clientId, clientSecret, \
                             tokenEndpointUri, scope); `{field}` belongs to Strimzi's OAuth library and has no Kafka \
                             equivalent: remove it"
                        )));
                    }
                }
                let f = auth.fields(
                    &["type", "clientId", "clientSecret", "tokenEndpointUri", "scope"],
                    builder,
                    &[],
                    "",
                )?;
                let endpoint = required(&f, auth, "tokenEndpointUri")?;
                let client_id = required(&f, auth, "clientId")?.text()?;
                let (secret, key) = secret_ref(required(&f, auth, "clientSecret")?, builder, "key")?;
                let mut jaas = format!(
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId=\"{client_id}\" \
                     clientSecret=\"{}\"",
                    mounted(root, "mm2-oauth", alias, &secret, &key)
                );
                if let Some(scope) = get(&f, "scope") {
                    jaas.push_str(&format!(" scope=\"{}\"", scope.text()?));
                }
                jaas.push(';');
                builder.set(
                    &format!("{alias}.sasl.oauthbearer.token.endpoint.url"),
                    &endpoint.text()?,
                    &endpoint.origin(),
                )?;
                builder.set(
                    &format!("{alias}.sasl.login.callback.handler.class"),
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                    &origin,
                )?;
                sasl(builder, "OAUTHBEARER", jaas)?;
                protocol.0 = if tls.is_some() { "SASL_SSL" } else { "SASL_PLAINTEXT" };
            }
            "custom" => {
                let f = auth.fields(&["type", "sasl", "config"], builder, &[], "")?;
                let sasl = match get(&f, "sasl") {
                    None => false,
                    Some(at) => match at.text()?.as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(at.fail("`sasl` is true or false")),
                    },
                };
                for (key, value) in get(&f, "config").map(At::entries).transpose()?.unwrap_or_default() {
                    // Strimzi passes only these prefixes of a custom authentication's config
                    // (`KafkaClientAuthenticationCustom.ALLOWED_PREFIXES`) and drops the rest.
                    if key.starts_with("sasl.") || key.starts_with("ssl.keystore.") {
                        builder.set(&format!("{alias}.{key}"), &value.text()?, &value.origin())?;
                    } else {
                        builder.ignore(
                            &value.path,
                            &value.origin(),
                            "Strimzi passes only `sasl.*` and `ssl.keystore.*` keys of a custom authentication's \
                             config to the clients; set other keys in the cluster's `config`",
                        );
                    }
                }
                if sasl {
                    protocol.0 = if tls.is_some() { "SASL_SSL" } else { "SASL_PLAINTEXT" };
                }
            }
            other => {
                return Err(type_at.fail(format!(
                    "authentication type `{other}` is not supported; Strait reads tls, scram-sha-256, scram-sha-512, \
                     plain, oauth and custom"
                )));
            }
        }
    }
    builder.set(&format!("{alias}.security.protocol"), protocol.0, &protocol.1)?;
    if let Some(config) = get(&fields, "config") {
        for (key, value) in config.entries()? {
            config_key(builder, alias, &key, &value, connect)?;
        }
    }
    Ok(())
}

/// One key of a cluster's `config`. Strimzi passes it to the connectors as
/// `source.cluster.<key>` / `target.cluster.<key>`, where MM2 reads only the connection keys,
/// and, for the Connect cluster, to the Connect worker, whose producers write the mirrored
/// records.
fn config_key(builder: &mut Builder, alias: &str, key: &str, value: &At<'_>, connect: bool) -> Result<()> {
    let origin = value.origin();
    let text = value.text()?;
    if connect && (key == crate::providers::CONFIG_PROVIDERS || key.starts_with("config.providers.")) {
        if key == crate::providers::CONFIG_PROVIDERS {
            // Strimzi puts the user's providers ahead of its own. One Strait cannot run (Strimzi's
            // KubernetesSecretConfigProvider) is a warning at start while no value uses it.
            return builder.prepend(key, &text, &origin);
        }
        return builder.set(key, &text, &origin);
    }
    let flow_key = format!("{alias}.{key}");
    if is_connection_key(key) || ignored_reason(key).is_some() || (connect && key.starts_with("producer.")) {
        return builder.set(&flow_key, &text, &origin);
    }
    if key.starts_with("consumer.") || key.starts_with("admin.") || key.starts_with("producer.") {
        builder.ignore(
            &flow_key,
            &origin,
            "Strimzi passes a cluster's config to MM2's connectors as `source.cluster.<key>`/`target.cluster.<key>`, \
             where MM2 reads only connection settings (and the Connect cluster's `producer.*` to its workers); set \
             client keys in a connector's config (`consumer.<key>`, `target.producer.<key>`)",
        );
        return Ok(());
    }
    builder.set(&flow_key, &text, &origin)
}

/// The certificates of a `pattern` (a shell glob, as Strimzi's `tls_utils.sh` expands it)
/// among the files mounted for `secret`, sorted by name.
fn matching(root: &Path, alias: &str, secret: &str, pattern: &str, at: &At<'_>) -> Result<Vec<String>> {
    let folder = root.join("mm2-certs").join(alias).join(secret);
    let listing = std::fs::read_dir(&folder).map_err(|e| {
        at.fail(format!(
            "the pattern `{pattern}` is matched against the files of the mounted secret, but `{}` cannot be read ({e}); \
             mount the secret there (see --strimzi-mount-root) or name the file with `certificate`",
            folder.display()
        ))
    })?;
    let mut names: Vec<String> = listing
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .filter(|name| glob(pattern, name))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(at.fail(format!(
            "no file of `{}` matches the pattern `{pattern}`",
            folder.display()
        )));
    }
    Ok(names
        .iter()
        .map(|name| mounted(root, "mm2-certs", alias, secret, name))
        .collect())
}

/// Whether `name` matches a shell glob with `*` and `?`.
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_as_the_shell() {
        assert!(glob("*.crt", "ca.crt"));
        assert!(glob("*", "anything"));
        assert!(glob("ca?.crt", "ca1.crt"));
        assert!(!glob("*.crt", "ca.key"));
        assert!(!glob("ca.crt", "xca.crt"));
        assert!(glob("*a*b", "xxaxxb"));
        assert!(!glob("*a*b", "xxaxxc"));
    }
}
