//! One MM2 connector's config in JSON, in the three shapes it is kept in:
//!
//! * Connect REST `PUT /connectors/<name>/config`: the config itself, a flat object;
//! * Connect REST `POST /connectors` (and what `GET /connectors/<name>` answers):
//!   `{"name": …, "config": {…}}`;
//! * MSK Connect `CreateConnector` (and what `DescribeConnector` answers):
//!   `{"connectorName": …, "connectorConfiguration": {…}, "kafkaCluster": …, …}`.
//!
//! Values are strings; numbers and booleans are taken as their text, as Connect's JSON reader
//! (Jackson) coerces them.

use serde_json::{Map, Value};

use super::connectors::{Connector, Kind};
use crate::error::{ConfigError, Result};

const SHAPES: &str = "expected an MM2 connector config: a Connect REST body (a flat object of string values with \
                      `connector.class`, or `{\"name\": …, \"config\": {…}}`) or an MSK Connect connector \
                      (`{\"connectorName\": …, \"connectorConfiguration\": {…}}`)";

/// Reads the connector config in `text`, the contents of `file`.
pub(crate) fn connector(file: &str, text: &str) -> Result<Connector> {
    let fail = |at: &str, reason: String| ConfigError::Import {
        origin: if at.is_empty() {
            file.to_owned()
        } else {
            format!("{file}: {at}")
        },
        reason,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| fail("", format!("not JSON ({e}); {SHAPES}")))?;
    let Value::Object(top) = value else {
        return Err(fail("", format!("a JSON {}; {SHAPES}", kind_of(&value))));
    };
    // Which shape: the wrapper's member holding the config, if any.
    let (config, at, name) = if let Some(config) = top.get("connectorConfiguration") {
        (config, "connectorConfiguration.", top.get("connectorName"))
    } else if let (Some(config), false) = (top.get("config"), top.contains_key("connector.class")) {
        (config, "config.", top.get("name"))
    } else {
        (&Value::Object(top.clone()), "", None)
    };
    let Value::Object(config) = config else {
        let member = at.trim_end_matches('.');
        return Err(fail(
            member,
            format!("a JSON {}, not an object; {SHAPES}", kind_of(config)),
        ));
    };
    let origin = |key: &str| format!("{file}: {at}{}", Value::String(key.to_owned()));
    let mut entries = Vec::with_capacity(config.len());
    for (key, value) in config {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                return Err(fail(
                    &format!("{at}{}", Value::String(key.clone())),
                    format!(
                        "a JSON {}; connector settings are strings (write it as \"…\")",
                        kind_of(other)
                    ),
                ));
            }
        };
        entries.push((key.clone(), text, origin(key)));
    }
    let get = |key: &str| config.get(key).and_then(Value::as_str);
    let Some(class) = get("connector.class") else {
        return Err(fail(
            at.trim_end_matches('.'),
            format!("no `connector.class`; {SHAPES}"),
        ));
    };
    let kind = Kind::from_class(class).ok_or_else(|| {
        fail(
            &format!("{at}\"connector.class\""),
            format!(
                "`{class}` is not one of MM2's connectors (org.apache.kafka.connect.mirror.MirrorSourceConnector, \
                 MirrorCheckpointConnector or MirrorHeartbeatConnector)"
            ),
        )
    })?;
    // MSK Connect's workers write to the cluster of `kafkaCluster`: the target, unless the
    // config names one.
    if let Some(servers) = msk_bootstrap(&top).filter(|_| !config.contains_key("target.cluster.bootstrap.servers")) {
        entries.push((
            "target.cluster.bootstrap.servers".into(),
            servers.to_owned(),
            format!(
                "{file}: kafkaCluster.apacheKafkaCluster.bootstrapServers (the cluster MSK Connect's workers write to)"
            ),
        ));
    }
    let name = name.and_then(Value::as_str).or_else(|| get("name"));
    let label = match name {
        Some(name) => format!("{file} ({} `{name}`)", kind.class()),
        None => format!("{file} ({})", kind.class()),
    };
    Ok(Connector {
        kind,
        label,
        // MirrorConnectorConfig's defaults.
        source: get("source.cluster.alias").unwrap_or("source").to_owned(),
        target: get("target.cluster.alias").unwrap_or("target").to_owned(),
        entries,
    })
}

fn msk_bootstrap(top: &Map<String, Value>) -> Option<&str> {
    top.get("kafkaCluster")?
        .get("apacheKafkaCluster")?
        .get("bootstrapServers")?
        .as_str()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
