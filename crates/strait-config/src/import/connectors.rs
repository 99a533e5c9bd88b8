//! MM2's three connectors, each with its own config, merged into the flows of `mm2.properties`.
//!
//! # References
//!
//! `apache/kafka` `connect/mirror`: `MirrorConnectorConfig` (the keys every connector reads,
//! `enabled` defaulting to true, the `source.cluster.*`, `consumer.*`, `source.consumer.*`, …
//! client views), `MirrorSourceConfig`, `MirrorCheckpointConfig`, `MirrorHeartbeatConfig` (which
//! connector defines which key), `MirrorMakerConfig.connectorBaseConfig` (how dedicated mode
//! writes the same keys per flow).

use std::collections::BTreeMap;

use super::Builder;
use crate::error::{ConfigError, Result};
use crate::keys::{connector_key, deprecated_key, ignored_reason, is_connection_key};
use crate::value::java_trim;

/// One of MM2's connectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Source,
    Checkpoint,
    Heartbeat,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Source, Kind::Checkpoint, Kind::Heartbeat];

    /// The connector's class name without its package.
    pub(crate) fn class(self) -> &'static str {
        match self {
            Kind::Source => "MirrorSourceConnector",
            Kind::Checkpoint => "MirrorCheckpointConnector",
            Kind::Heartbeat => "MirrorHeartbeatConnector",
        }
    }

    /// The kind a `connector.class` names, full or simple name, as Connect accepts both.
    pub(crate) fn from_class(class: &str) -> Option<Kind> {
        let class = java_trim(class);
        let simple = class.strip_prefix("org.apache.kafka.connect.mirror.").unwrap_or(class);
        Kind::ALL.into_iter().find(|k| k.class() == simple)
    }
}

/// The connectors that read an MM2 connector key (or its deprecated alias).
fn readers(key: &str) -> &'static [Kind] {
    const ALL: &[Kind] = &Kind::ALL;
    const SOURCE_AND_CHECKPOINT: &[Kind] = &[Kind::Source, Kind::Checkpoint];
    match key {
        "enabled"
        | "replication.policy.class"
        | "replication.policy.separator"
        | "replication.policy.internal.topic.separator.enabled"
        | "admin.timeout.ms"
        | "forwarding.admin.class" => ALL,
        // The checkpoint connector filters topics too (its DefaultTopicFilter), reads the offset
        // syncs where the source connector writes them, and refuses to run without them.
        "topics"
        | "topics.exclude"
        | "topics.blacklist"
        | "topic.filter.class"
        | "offset-syncs.topic.location"
        | "emit.offset-syncs.enabled"
        | "consumer.poll.timeout.ms" => SOURCE_AND_CHECKPOINT,
        "groups"
        | "groups.exclude"
        | "groups.blacklist"
        | "group.filter.class"
        | "refresh.groups.enabled"
        | "refresh.groups.interval.seconds"
        | "emit.checkpoints.enabled"
        | "emit.checkpoints.interval.seconds"
        | "sync.group.offsets.enabled"
        | "sync.group.offsets.interval.seconds"
        | "checkpoints.topic.replication.factor" => &[Kind::Checkpoint],
        "emit.heartbeats.enabled" | "emit.heartbeats.interval.seconds" | "heartbeats.topic.replication.factor" => {
            &[Kind::Heartbeat]
        }
        _ => &[Kind::Source],
    }
}

/// A connector's config, as read from a file or a resource.
#[derive(Debug)]
pub(crate) struct Connector {
    pub(crate) kind: Kind,
    /// What names it in messages: the file, or the file and YAML path.
    pub(crate) label: String,
    pub(crate) source: String,
    pub(crate) target: String,
    /// `(key, value, origin)` in the order read.
    pub(crate) entries: Vec<(String, String, String)>,
}

/// Keys that identify a connector rather than configure it.
const IDENTITY_KEYS: &[&str] = &[
    "name",
    "connector.class",
    "source.cluster.alias",
    "target.cluster.alias",
];

/// Settings of a flow that win over its connectors' own, with their origin (Strimzi's
/// `topicsPattern` and friends): flow key → (value, origin).
pub(crate) type Overrides = BTreeMap<(String, String), BTreeMap<String, (String, String)>>;

/// Adds the flows of `connectors` to `builder`; `clusters` is set from their aliases unless
/// the caller set it.
pub(crate) fn merge(builder: &mut Builder, connectors: Vec<Connector>, overrides: &Overrides) -> Result<()> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for c in &connectors {
        let pair = (c.source.clone(), c.target.clone());
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
    }
    for (source, target) in overrides.keys() {
        let pair = (source.clone(), target.clone());
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
    }
    if builder.clusters.is_empty() {
        let mut aliases: Vec<String> = Vec::new();
        for (source, target) in &pairs {
            for alias in [source, target] {
                if !aliases.contains(alias) {
                    aliases.push(alias.clone());
                }
            }
        }
        builder.clusters(
            aliases,
            "the connectors' source.cluster.alias and target.cluster.alias (MM2's defaults: source, target)",
        );
    }
    builder.set(
        "emit.heartbeats.enabled",
        "false",
        "Connect runs only the connectors it is given: no heartbeat-only flow is added, as MM2's dedicated mode \
         would; flows with a MirrorHeartbeatConnector set it to true",
    )?;
    for (source, target) in &pairs {
        let flow = format!("{source}->{target}");
        let of_pair: Vec<&Connector> = connectors
            .iter()
            .filter(|c| &c.source == source && &c.target == target)
            .collect();
        let mut by_kind: BTreeMap<Kind, &Connector> = BTreeMap::new();
        for c in &of_pair {
            if let Some(other) = by_kind.insert(c.kind, c) {
                return Err(ConfigError::Import {
                    origin: c.label.clone(),
                    reason: format!(
                        "a second {} for {flow} (the first is {}); MM2 runs one of each connector per source and target",
                        c.kind.class(),
                        other.label
                    ),
                });
            }
        }
        let pair_overrides = overrides.get(&(source.clone(), target.clone()));
        for (key, (value, origin)) in pair_overrides.into_iter().flatten() {
            builder.set(&format!("{flow}.{key}"), value, origin)?;
        }
        for c in &of_pair {
            for (key, value, origin) in &c.entries {
                if let Some((_, by)) = pair_overrides.and_then(|o| o.get(key)) {
                    builder.ignore(
                        &format!("{flow}.{key}"),
                        origin,
                        format!("{by} sets it for every connector of the mirror, as Strimzi does"),
                    );
                    continue;
                }
                entry(builder, c, &flow, key, value, origin)?;
            }
        }
        let enabled = format!("{flow}.enabled");
        match by_kind.get(&Kind::Source) {
            Some(c) if !builder.has(&enabled) => builder.set(
                &enabled,
                "true",
                &format!(
                    "{}: a MirrorSourceConnector mirrors unless its `enabled` is false (its default is true)",
                    c.label
                ),
            )?,
            Some(_) => {}
            None => builder.warn(format!(
                "{flow}: no MirrorSourceConnector is given, so no data flows from {source} to {target}, as MM2 would \
                 not mirror it either{}",
                if by_kind.contains_key(&Kind::Checkpoint) {
                    "; checkpoints need the source connector's offset syncs, so Strait writes none for this pair"
                } else {
                    ""
                }
            )),
        }
        if !by_kind.contains_key(&Kind::Checkpoint) {
            builder.set(
                &format!("{flow}.emit.checkpoints.enabled"),
                "false",
                &format!("no MirrorCheckpointConnector is given for {flow}"),
            )?;
        }
        let heartbeats = format!("{flow}.emit.heartbeats.enabled");
        if let Some(c) = by_kind.get(&Kind::Heartbeat) {
            if !builder.has(&heartbeats) {
                builder.set(
                    &heartbeats,
                    "true",
                    &format!("{}: a MirrorHeartbeatConnector emits heartbeats (its default)", c.label),
                )?;
            }
        }
    }
    Ok(())
}

/// One key of a connector's config, as a flow key (or top-level, ignored, or part of another).
fn entry(builder: &mut Builder, c: &Connector, flow: &str, key: &str, value: &str, origin: &str) -> Result<()> {
    let flow_key = format!("{flow}.{key}");
    if IDENTITY_KEYS.contains(&key) {
        return Ok(());
    }
    // MM2 gives a connector's clients the connection keys of `source.cluster.*` and
    // `target.cluster.*`; with one file per connector these name each cluster's connection,
    // which mm2.properties keeps per cluster, so that connectors disagreeing about a cluster
    // are caught.
    for (prefix, alias) in [("source.cluster.", &c.source), ("target.cluster.", &c.target)] {
        if let Some(client_key) = key.strip_prefix(prefix).filter(|k| is_connection_key(k)) {
            return builder.set(&format!("{alias}.{client_key}"), value, origin);
        }
    }
    // Kafka's config providers: the worker's in Connect, process-wide in Strait.
    if key == crate::providers::CONFIG_PROVIDERS || key.starts_with("config.providers.") {
        return builder.set(key, value, origin);
    }
    if key == "enabled" {
        return match c.kind {
            Kind::Source => builder.set(&flow_key, value, origin),
            Kind::Checkpoint => match java_trim(value).to_ascii_lowercase().as_str() {
                "false" => builder.set(&format!("{flow}.emit.checkpoints.enabled"), "false", origin),
                "true" => Ok(()),
                _ => Err(ConfigError::Import {
                    origin: origin.to_owned(),
                    reason: format!("invalid value `{value}` for `enabled`: expected `true` or `false`"),
                }),
            },
            Kind::Heartbeat => {
                builder.ignore(
                    &flow_key,
                    origin,
                    "MirrorHeartbeatConnector ignores `enabled`; set `emit.heartbeats.enabled` to stop heartbeats",
                );
                Ok(())
            }
        };
    }
    if connector_key(key).is_some() || deprecated_key(key).is_some() {
        let readers = readers(key);
        if readers.contains(&c.kind) {
            return builder.set(&flow_key, value, origin);
        }
        let names: Vec<&str> = readers.iter().map(|k| k.class()).collect();
        builder.ignore(
            &flow_key,
            origin,
            format!(
                "only {} read(s) it; MM2's {} does not, so it has no effect here",
                names.join(" and "),
                c.kind.class()
            ),
        );
        return Ok(());
    }
    // Connect gives a source connector's tasks the worker's producer with the connector's
    // `producer.override.*` on top (KIP-458). The worker's `connector.client.config.override.policy`
    // is `All` by default since Kafka 3.0, and Connect refuses a connector whose overrides it
    // forbids, so a running connector's overrides were applied: for MM2 that producer writes the
    // mirrored records (and the checkpoints, heartbeats) to the target.
    if let Some(client_key) = key.strip_prefix("producer.override.") {
        return builder.set(&format!("{flow}.target.producer.{client_key}"), value, origin);
    }
    if let Some(why) = ignored_reason(key) {
        // Connect keys (`tasks.max`, converters, …) may differ between connectors harmlessly.
        builder.ignore(&flow_key, origin, why);
        return Ok(());
    }
    builder.set(&flow_key, value, origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connector_classes_full_or_simple() {
        assert_eq!(
            Kind::from_class("org.apache.kafka.connect.mirror.MirrorSourceConnector"),
            Some(Kind::Source)
        );
        assert_eq!(Kind::from_class(" MirrorCheckpointConnector "), Some(Kind::Checkpoint));
        assert_eq!(Kind::from_class("MirrorHeartbeatConnector"), Some(Kind::Heartbeat));
        assert_eq!(Kind::from_class("com.acme.MirrorSourceConnector"), None);
        assert_eq!(Kind::from_class("FileStreamSource"), None);
    }

    #[test]
    fn every_connector_key_has_readers() {
        for def in crate::keys::CONNECTOR_KEYS {
            assert!(!readers(def.name).is_empty());
        }
        assert_eq!(readers("emit.checkpoints.interval.seconds"), &[Kind::Checkpoint]);
        assert_eq!(readers("topics"), &[Kind::Source, Kind::Checkpoint]);
        assert_eq!(readers("sync.topic.acls.enabled"), &[Kind::Source]);
        assert_eq!(readers("heartbeats.topic.replication.factor"), &[Kind::Heartbeat]);
    }
}
