//! The effective configuration as text (`Display`) and JSON, for `strait check-config`.
//!
//! Client settings are printed with MM2's connector-config names (`source.consumer.<key>`,
//! `target.producer.<key>`, …). The keys of the data path (the source's consumer `fetch.*`,
//! `max.partition.fetch.bytes`, `client.rack`; the target's producer `acks`, timeouts, …) are
//! printed for every flow with their effective value, default included. Passwords,
//! `sasl.jaas.config` and `ssl.keystore.key` are replaced by `[hidden]`.

use std::fmt;

use serde_json::{json, Map, Value};

use crate::client::{ClientRole, ClusterClientConfig, Origin, Setting};
use crate::data_path::{FETCH_KEYS, PRODUCE_KEYS};
use crate::flow::FlowConfig;
use crate::keys::{
    BUFFER_MEMORY, FETCHERS_PER_BROKER, GROUP_ID, GROUP_INSTANCE_ID, HEARTBEAT_INTERVAL, IO, PRODUCERS_PER_BROKER,
    REBALANCE_TIMEOUT, SESSION_TIMEOUT, SHUTDOWN_TIMEOUT,
};
use crate::mm2::Mm2Config;
use crate::secret::is_secret;

const HIDDEN: &str = "[hidden]";

/// What may be printed of a setting: secrets are hidden, and a value that config providers
/// resolved is shown as written, placeholders and all.
fn shown<'a>(key: &str, setting: &'a Setting) -> &'a str {
    match &setting.origin {
        _ if is_secret(key) => HIDDEN,
        Origin::File {
            written: Some(written), ..
        } => written,
        _ => &setting.value,
    }
}

/// `(prefix + key, setting)` for every role view of one side of a flow.
fn client_lines<'a>(
    side: &'static str,
    client: &'a ClusterClientConfig,
) -> impl Iterator<Item = (String, &'a str, &'a Setting)> {
    ClientRole::ALL.into_iter().flat_map(move |role| {
        client
            .role(role)
            .iter()
            .map(move |(key, setting)| (format!("{side}.{}.{key}", role.as_str()), key.as_str(), setting))
    })
}

/// The flow's fetch and produce settings, effective value and origin, under their client
/// names (`source.consumer.fetch.max.bytes`, `target.producer.acks`).
fn data_path_lines(flow: &FlowConfig) -> impl Iterator<Item = (String, &Setting)> {
    let fetch = flow
        .source_fetch_settings
        .iter()
        .map(|(key, setting)| (format!("{FETCH_PREFIX}{key}"), setting));
    let produce = flow
        .target_produce_settings
        .iter()
        .map(|(key, setting)| (format!("{PRODUCE_PREFIX}{key}"), setting));
    fetch.chain(produce)
}

const FETCH_PREFIX: &str = "source.consumer.";
const PRODUCE_PREFIX: &str = "target.producer.";

/// Whether a client line is one of [`data_path_lines`].
fn is_data_path_line(name: &str) -> bool {
    name.strip_prefix(FETCH_PREFIX)
        .is_some_and(|key| FETCH_KEYS.contains(&key))
        || name
            .strip_prefix(PRODUCE_PREFIX)
            .is_some_and(|key| PRODUCE_KEYS.contains(&key))
}

fn flow_status(flow: &FlowConfig) -> &'static str {
    match (flow.enabled, flow.emit_heartbeats.enabled) {
        (true, true) => "enabled, emits heartbeats",
        (true, false) => "enabled, no heartbeats",
        (false, _) => "disabled, only emits heartbeats into the target",
    }
}

fn write_setting(f: &mut fmt::Formatter<'_>, name: &str, value: &str, origin: &Origin) -> fmt::Result {
    writeln!(f, "  {name} = {value}  ({origin})")
}

impl fmt::Display for Mm2Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(files) = &self.imported_from {
            writeln!(
                f,
                "# imported from {}: line numbers are those of `strait import {}`",
                files.join(", "),
                files.join(" ")
            )?;
        }
        writeln!(f, "clusters = {}", self.clusters.join(", "))?;
        if let Some(listener) = &self.http_listener {
            writeln!(f, "strait.http.listener = {listener}")?;
        }
        for (name, setting) in &self.process_settings {
            writeln!(f, "{name} = {}  ({})", shown(name, setting), setting.origin)?;
        }
        for flow in &self.flows {
            writeln!(f, "\nflow {} ({})", flow.name(), flow_status(flow))?;
            for (name, setting) in &flow.settings {
                write_setting(f, name, shown(name, setting), &setting.origin)?;
            }
            for (name, setting) in data_path_lines(flow) {
                write_setting(f, &name, shown(&name, setting), &setting.origin)?;
            }
            // The data path's keys are shown above, with their effective value or default.
            let clients = client_lines("source", &flow.source)
                .chain(client_lines("target", &flow.target))
                .filter(|(name, _, _)| !is_data_path_line(name));
            for (name, key, setting) in clients {
                write_setting(f, &name, shown(key, setting), &setting.origin)?;
            }
        }
        if !self.ignored.is_empty() {
            writeln!(f, "\nignored keys:")?;
            for ignored in &self.ignored {
                writeln!(f, "  {ignored}")?;
            }
        }
        if !self.warnings.is_empty() {
            writeln!(f, "\nwarnings:")?;
            for warning in &self.warnings {
                writeln!(f, "  {warning}")?;
            }
        }
        Ok(())
    }
}

fn origin_json(origin: &Origin) -> Value {
    match origin {
        Origin::Default => json!("default"),
        Origin::File {
            line,
            key,
            written: None,
        } => json!({ "line": line, "key": key }),
        Origin::File { line, key, .. } => json!({ "line": line, "key": key, "config_provider": true }),
    }
}

fn setting_json(value: &str, origin: &Origin) -> Value {
    json!({ "value": value, "origin": origin_json(origin) })
}

fn flow_json(flow: &FlowConfig) -> Value {
    let settings: Map<String, Value> = flow
        .settings
        .iter()
        .map(|(name, s)| (name.to_string(), setting_json(shown(name, s), &s.origin)))
        .collect();
    let clients: Map<String, Value> = client_lines("source", &flow.source)
        .chain(client_lines("target", &flow.target))
        .map(|(name, key, s)| (name, setting_json(shown(key, s), &s.origin)))
        .collect();
    let by_key = |settings: &[(&'static str, Setting)]| -> Map<String, Value> {
        settings
            .iter()
            .map(|(key, s)| (key.to_string(), setting_json(shown(key, s), &s.origin)))
            .collect()
    };
    json!({
        "name": flow.name(),
        "source": flow.source.alias,
        "target": flow.target.alias,
        "enabled": flow.enabled,
        "emit_heartbeats": flow.emit_heartbeats.enabled,
        "settings": settings,
        "source_fetch": by_key(&flow.source_fetch_settings),
        "target_produce": by_key(&flow.target_produce_settings),
        "clients": clients,
    })
}

impl Mm2Config {
    /// The effective configuration as JSON: `clusters`, `http_listener`, `buffer_memory`,
    /// `fetchers_per_broker`, `producers_per_broker` and `io` (`strait.*` keys), `shutdown_timeout_ms`
    /// (`task.shutdown.graceful.timeout.ms`), `group` (`strait.group.id` and Connect's group keys), `imported_from` (the connector configs or Strimzi
    /// resource read, or null), `flows` (each with `settings`, `source_fetch`
    /// and `target_produce` by Kafka key, and `clients`, the role views as given to the clients),
    /// `ignored` and `warnings`; every value with its `origin`. Secrets are hidden.
    pub fn to_json(&self) -> Value {
        let process = |key: &str| {
            self.process_settings
                .iter()
                .find(|(name, _)| *name == key)
                .map_or(Value::Null, |(name, s)| setting_json(shown(name, s), &s.origin))
        };
        json!({
            "imported_from": self.imported_from,
            "clusters": self.clusters,
            "http_listener": self.http_listener,
            "buffer_memory": process(BUFFER_MEMORY),
            "fetchers_per_broker": process(FETCHERS_PER_BROKER),
            "producers_per_broker": process(PRODUCERS_PER_BROKER),
            "io": process(IO),
            "shutdown_timeout_ms": process(SHUTDOWN_TIMEOUT),
            "group": {
                "group_id": process(GROUP_ID),
                "group_instance_id": process(GROUP_INSTANCE_ID),
                "session_timeout_ms": process(SESSION_TIMEOUT),
                "heartbeat_interval_ms": process(HEARTBEAT_INTERVAL),
                "rebalance_timeout_ms": process(REBALANCE_TIMEOUT),
            },
            "flows": self.flows.iter().map(flow_json).collect::<Vec<_>>(),
            "ignored": self.ignored.iter().map(|i| json!({
                "line": i.line,
                "key": i.key,
                "reason": i.reason,
            })).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
    }
}
