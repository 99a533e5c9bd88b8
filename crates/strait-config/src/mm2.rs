//! The MM2 model: clusters, scopes, inheritance, and the flows built from them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::client::{
    parse_bootstrap_servers, AutoOffsetReset, ClientRole, ClusterClientConfig, IoSetting, IsolationLevel, Origin,
    SecurityProtocol, Setting,
};
use crate::data_path::{check_consumer_value, check_producer_value, setting_raw, FetchSettings, ProduceSettings};
use crate::error::{ConfigError, Result};
use crate::filter::{ConfigPropertyFilter, GroupFilter, PatternList, TopicFilter, UseDefaultsFrom};
use crate::flow::{FlowConfig, OffsetSyncsTopicLocation, Schedule};
use crate::keys::{
    connector_key, connector_key_without_effect, deprecated_key, ignored_reason, ignored_role_reason,
    is_connection_key, known_names, scoped_strait_key, suggest, unknown_security_key, Kind, BUFFER_MEMORY,
    CONNECTOR_KEYS, DEFAULT_BUFFER_MEMORY, DEFAULT_FETCHERS_PER_BROKER, DEFAULT_HEARTBEAT_INTERVAL_MS,
    DEFAULT_POLICY_CLASS, DEFAULT_PRODUCERS_PER_BROKER, DEFAULT_REBALANCE_TIMEOUT_MS, DEFAULT_SESSION_TIMEOUT_MS,
    DEFAULT_SHUTDOWN_TIMEOUT_MS, DEPRECATED_KEYS, EXACTLY_ONCE_SOURCE_SUPPORT, EXACTLY_ONCE_VALUES,
    FETCHERS_PER_BROKER, GROUP_ID, GROUP_INSTANCE_ID, GROUP_KEYS, HEARTBEAT_INTERVAL, HTTP_LISTENER,
    IDENTITY_POLICY_CLASS, IO, MAX_CONNECTIONS_PER_BROKER, MIN_BUFFER_MEMORY, PRODUCERS_PER_BROKER, REBALANCE_TIMEOUT,
    ROLE_PREFIXES, SESSION_TIMEOUT, SHUTDOWN_TIMEOUT, STRAIT_KEYS,
};
use crate::policy::{PolicyKind, ReplicationPolicy};
use crate::properties::{Properties, Property};
use crate::providers::{self, is_provider_key};
use crate::secret::is_secret;
use crate::value::{java_list, java_trim, one_of, Raw};

const WHY_TOP_ROLE: &str = "MM2 dedicated mode does not use top-level `consumer.*`, `producer.*` or `admin.*` keys; use `<alias>.consumer.<key>` (all flows of a cluster) or `<source>-><target>.consumer.<key>`";
const WHY_FLOW_CONNECTION: &str = "MM2's clients do not read flow-level connection settings; use `<alias>.<key>` or `<source>-><target>.source.cluster.<key>`";
const WHY_SIDE_CLUSTER: &str = "only bootstrap.servers, security.protocol, ssl.* and sasl.* are read from `source.cluster.*` and `target.cluster.*`";

/// A key that is valid in `mm2.properties` but has no effect in Strait (or in MM2 itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredKey {
    /// Line of the key.
    pub line: usize,
    /// The key as written.
    pub key: String,
    /// Why it has no effect.
    pub reason: String,
}

impl fmt::Display for IgnoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}` ignored: {}", self.line, self.key, self.reason)
    }
}

/// A `host:port` to listen on (IPv6 hosts in brackets).
fn parse_listener(prop: &Property) -> Result<String> {
    let value = java_trim(&prop.value);
    match parse_bootstrap_servers(value) {
        Some(servers) if servers.len() == 1 => Ok(servers.into_iter().next().unwrap_or_default()),
        _ => Err(ConfigError::InvalidValue {
            line: prop.line,
            key: prop.key.clone(),
            value: prop.value.clone(),
            expected: "one host:port to serve /metrics, /status and /health on, e.g. 127.0.0.1:9464".into(),
        }),
    }
}

/// `strait.buffer.memory`: a Java long, at least 1 MiB.
fn parse_buffer_memory(prop: &Property) -> Result<u64> {
    let raw = Raw::from(prop);
    let expected = format!(
        "a number of bytes from {MIN_BUFFER_MEMORY} (1 MiB) to 9223372036854775807 (Java long); \
         the default is {DEFAULT_BUFFER_MEMORY} (256 MiB)"
    );
    let bytes: i64 = raw.number(&expected)?;
    u64::try_from(bytes)
        .ok()
        .filter(|&bytes| bytes >= MIN_BUFFER_MEMORY)
        .ok_or_else(|| raw.invalid(expected))
}

/// `task.shutdown.graceful.timeout.ms`: milliseconds, a Java long, at least 0.
fn parse_shutdown_timeout(prop: &Property) -> Result<u64> {
    let raw = Raw::from(prop);
    let expected = format!(
        "milliseconds from 0 to 9223372036854775807 (Java long): how long a stopping flow waits for \
         the batches on the wire, and again for its last writes; the default is {DEFAULT_SHUTDOWN_TIMEOUT_MS}"
    );
    let ms: i64 = raw.number(&expected)?;
    u64::try_from(ms).map_err(|_| raw.invalid(expected))
}

/// `session.timeout.ms`, `heartbeat.interval.ms`, `rebalance.timeout.ms`: milliseconds, 1 to
/// i32::MAX (JoinGroup carries them as int32).
fn parse_group_timeout(prop: &Property, default: u64) -> Result<u64> {
    let raw = Raw::from(prop);
    let expected = format!("milliseconds from 1 to 2147483647; the default is {default}");
    let ms: i64 = raw.number(&expected)?;
    u64::try_from(ms)
        .ok()
        .filter(|&ms| (1..=i32::MAX as u64).contains(&ms))
        .ok_or_else(|| raw.invalid(expected))
}

/// `strait.group.id`, `group.instance.id`: a non-empty name.
fn parse_group_name(prop: &Property) -> Result<String> {
    match prop.value.trim() {
        "" => Err(Raw::from(prop).invalid("a non-empty name")),
        name => Ok(name.to_owned()),
    }
}

/// `strait.io`: `epoll`, `io_uring` or `auto`.
fn parse_io(prop: &Property) -> Result<IoSetting> {
    match prop.value.trim() {
        "epoll" => Ok(IoSetting::Epoll),
        "io_uring" => Ok(IoSetting::IoUring),
        "auto" => Ok(IoSetting::Auto),
        _ => Err(Raw::from(prop).invalid(
            "epoll, io_uring or auto (the default: io_uring where the kernel allows it and the benchmark chose it, \
             else epoll)",
        )),
    }
}

/// `strait.fetchers.per.broker`: 1 to 16.
fn parse_fetchers_per_broker(prop: &Property) -> Result<u16> {
    parse_connections_per_broker(prop, "fetch connections per source broker", DEFAULT_FETCHERS_PER_BROKER)
}

/// `strait.producers.per.broker`: 1 to 16.
fn parse_producers_per_broker(prop: &Property) -> Result<u16> {
    parse_connections_per_broker(
        prop,
        "produce connections per target broker",
        DEFAULT_PRODUCERS_PER_BROKER,
    )
}

fn parse_connections_per_broker(prop: &Property, what: &str, default: u16) -> Result<u16> {
    let raw = Raw::from(prop);
    let expected = format!("an integer from 1 to {MAX_CONNECTIONS_PER_BROKER} ({what}); the default is {default}");
    let connections: u16 = raw.number(&expected)?;
    if (1..=MAX_CONNECTIONS_PER_BROKER).contains(&connections) {
        Ok(connections)
    } else {
        Err(raw.invalid(expected))
    }
}

/// A process-wide Strait key: its typed value and its effective setting, or the default.
fn strait_key<T: ToString>(
    props: &Properties,
    key: &'static str,
    default: T,
    parse: impl Fn(&Property) -> Result<T>,
) -> Result<(T, (&'static str, Setting))> {
    match props.get(key) {
        None => {
            let setting = Setting::default_value(&default.to_string());
            Ok((default, (key, setting)))
        }
        Some(prop) => {
            let value = parse(prop)?;
            let mut setting = file_setting(prop);
            setting.value = value.to_string();
            Ok((value, (key, setting)))
        }
    }
}

/// How the `strait run` processes of one configuration share the work: a group on each target
/// cluster (Kafka's classic group protocol).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSettings {
    /// `strait.group.id`, if set: the group's name (on every target cluster).
    pub group_id: Option<String>,
    /// `group.instance.id`: static membership (KIP-345), so that a restart within the session
    /// timeout moves nothing.
    pub instance_id: Option<String>,
    /// `session.timeout.ms`: a member not heard from this long is gone; a member that cannot
    /// reach the coordinator stops writing before this has passed.
    pub session_timeout: std::time::Duration,
    /// `heartbeat.interval.ms`.
    pub heartbeat_interval: std::time::Duration,
    /// `rebalance.timeout.ms`: how long members have to release revoked partitions and join.
    pub rebalance_timeout: std::time::Duration,
}

/// A parsed and validated `mm2.properties`.
#[derive(Debug, Clone)]
pub struct Mm2Config {
    pub(crate) clusters: Vec<String>,
    pub(crate) cluster_configs: Vec<ClusterClientConfig>,
    pub(crate) flows: Vec<FlowConfig>,
    pub(crate) ignored: Vec<IgnoredKey>,
    pub(crate) warnings: Vec<String>,
    pub(crate) http_listener: Option<String>,
    pub(crate) buffer_memory: u64,
    pub(crate) fetchers_per_broker: u16,
    pub(crate) producers_per_broker: u16,
    pub(crate) io: IoSetting,
    pub(crate) shutdown_timeout_ms: u64,
    pub(crate) group: GroupSettings,
    /// The process-wide keys' settings, as `check-config` shows them.
    pub(crate) process_settings: Vec<(&'static str, Setting)>,
    /// The connector configs or Strimzi resource the text was imported from; line numbers are
    /// then those of the text `strait import` prints for them.
    pub(crate) imported_from: Option<Vec<String>>,
}

impl Mm2Config {
    /// Parses `mm2.properties` text.
    ///
    /// # Errors
    ///
    /// Any [`ConfigError`] except `Io`: malformed escapes, a missing `clusters`, unknown keys or
    /// aliases, malformed values, and clusters without bootstrap servers that a flow needs.
    pub fn parse(text: &str) -> Result<Self> {
        Self::from_properties(&Properties::parse(text)?)
    }

    /// Reads and parses a file. Like MM2, which loads the file as ISO-8859-1, bytes that are not
    /// valid UTF-8 are read as ISO-8859-1.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] if the file cannot be read, otherwise as [`Mm2Config::parse`].
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        let text = String::from_utf8(bytes).unwrap_or_else(|e| e.into_bytes().iter().map(|&b| char::from(b)).collect());
        Self::parse(&text)
    }

    /// The files this configuration was imported from (connector configs or a Strimzi
    /// resource), if it was; its line numbers are then those of the text `strait import`
    /// prints for them.
    pub fn imported_from(&self) -> Option<&[String]> {
        self.imported_from.as_deref()
    }

    /// Builds the model from parsed properties.
    ///
    /// # Errors
    ///
    /// As [`Mm2Config::parse`].
    pub fn from_properties(props: &Properties) -> Result<Self> {
        let (props, provider_warnings) = providers::resolve(props.clone())?;
        let props = &props;
        let clusters_prop = props.get("clusters").ok_or(ConfigError::MissingClusters)?;
        let clusters = parse_clusters(clusters_prop)?;
        let mut scopes = Scopes::new(&clusters);
        scopes.warnings.extend(provider_warnings);
        for prop in props.iter().filter(|p| {
            p.key != "clusters"
                && !STRAIT_KEYS.contains(&p.key.as_str())
                && !GROUP_KEYS.contains(&p.key.as_str())
                && !is_provider_key(&p.key)
        }) {
            scopes.classify(prop)?;
        }
        let http_listener = match props.get(HTTP_LISTENER) {
            None => None,
            Some(prop) => Some(parse_listener(prop)?),
        };
        let (buffer_memory, buffer_memory_setting) =
            strait_key(props, BUFFER_MEMORY, DEFAULT_BUFFER_MEMORY, parse_buffer_memory)?;
        let (fetchers_per_broker, fetchers_setting) = strait_key(
            props,
            FETCHERS_PER_BROKER,
            DEFAULT_FETCHERS_PER_BROKER,
            parse_fetchers_per_broker,
        )?;
        let (producers_per_broker, producers_setting) = strait_key(
            props,
            PRODUCERS_PER_BROKER,
            DEFAULT_PRODUCERS_PER_BROKER,
            parse_producers_per_broker,
        )?;
        let (io, io_setting) = strait_key(props, IO, IoSetting::default(), parse_io)?;
        let (shutdown_timeout_ms, shutdown_setting) = strait_key(
            props,
            SHUTDOWN_TIMEOUT,
            DEFAULT_SHUTDOWN_TIMEOUT_MS,
            parse_shutdown_timeout,
        )?;
        let (group_id, group_id_setting) = strait_key(props, GROUP_ID, String::new(), parse_group_name)?;
        let (instance_id, instance_setting) = strait_key(props, GROUP_INSTANCE_ID, String::new(), parse_group_name)?;
        let ms = |key: &'static str, default: u64| {
            strait_key(props, key, default, |prop| parse_group_timeout(prop, default))
        };
        let (session_ms, session_setting) = ms(SESSION_TIMEOUT, DEFAULT_SESSION_TIMEOUT_MS)?;
        let (heartbeat_ms, heartbeat_setting) = ms(HEARTBEAT_INTERVAL, DEFAULT_HEARTBEAT_INTERVAL_MS)?;
        let (rebalance_ms, rebalance_setting) = ms(REBALANCE_TIMEOUT, DEFAULT_REBALANCE_TIMEOUT_MS)?;
        if heartbeat_ms >= session_ms {
            let prop = props
                .get(HEARTBEAT_INTERVAL)
                .or(props.get(SESSION_TIMEOUT))
                .expect("one was set");
            return Err(Raw::from(prop).invalid(format!(
                "{HEARTBEAT_INTERVAL} ({heartbeat_ms}) below {SESSION_TIMEOUT} ({session_ms}), typically a third of it"
            )));
        }
        let group = GroupSettings {
            group_id: Some(group_id).filter(|id| !id.is_empty()),
            instance_id: Some(instance_id).filter(|id| !id.is_empty()),
            session_timeout: std::time::Duration::from_millis(session_ms),
            heartbeat_interval: std::time::Duration::from_millis(heartbeat_ms),
            rebalance_timeout: std::time::Duration::from_millis(rebalance_ms),
        };

        let mut flows = Vec::new();
        for source in &clusters {
            for target in clusters.iter().filter(|t| *t != source) {
                if let Some(flow) = scopes.flow(source, target)? {
                    check_bootstrap(&flow, clusters_prop.line)?;
                    if flow.enabled && !flow.exactly_once {
                        for (name, setting) in &flow.settings {
                            if let (true, Origin::File { line, key, .. }) =
                                (name.starts_with("transaction.boundary"), &setting.origin)
                            {
                                scopes.warnings.push(format!(
                                    "line {line}: `{key}` has no effect on flow {}: it is not in exactly-once mode \
                                     (`{target}.{EXACTLY_ONCE_SOURCE_SUPPORT} = enabled`)",
                                    flow.name()
                                ));
                            }
                        }
                    }
                    let boundary = flow.settings.iter().find(|(name, _)| *name == "transaction.boundary");
                    if let (true, Some((_, setting))) = (flow.enabled && flow.exactly_once, boundary) {
                        if let (true, Origin::File { line, key, .. }) =
                            (setting.value.trim() == "poll", &setting.origin)
                        {
                            scopes.warnings.push(format!(
                                "line {line}: `{key} = poll` commits a transaction every \
                                 `transaction.boundary.interval.ms` ({} ms) on flow {}: Strait fetches for many \
                                 partitions at once and has no per-task poll to end a transaction on; set `interval` \
                                 to say so",
                                flow.transaction_interval.as_millis(),
                                flow.name()
                            ));
                        }
                    }
                    if flow.enabled && flow.exactly_once && flow.source_isolation_level != IsolationLevel::ReadCommitted
                    {
                        scopes.warnings.push(format!(
                            "flow {}: exactly-once mode with the source consumer at read_uncommitted copies aborted \
                             source transactions into the target's committed ones; set `{source}.consumer.isolation.level = read_committed`",
                            flow.name()
                        ));
                    }
                    flows.push(flow);
                }
            }
        }
        if flows.is_empty() {
            scopes.warnings.push(
                "no flow runs: no `<source>-><target>.enabled = true` and heartbeats are disabled (MM2 refuses to start with this file)"
                    .to_owned(),
            );
        }
        scopes.ignore_unused_roles(&flows);
        let mut cluster_configs: Vec<ClusterClientConfig> = clusters.iter().map(|a| scopes.client(a, None)).collect();
        let every_cluster = cluster_configs
            .iter_mut()
            .chain(flows.iter_mut().flat_map(|f| [&mut f.source, &mut f.target]));
        for cluster in every_cluster {
            cluster.io = io;
        }
        Ok(Mm2Config {
            http_listener,
            buffer_memory,
            fetchers_per_broker,
            producers_per_broker,
            io,
            shutdown_timeout_ms,
            group,
            // The group's names show only when set: unset, the id is derived from the flows
            // and membership is dynamic.
            process_settings: [
                buffer_memory_setting,
                fetchers_setting,
                producers_setting,
                io_setting,
                shutdown_setting,
                group_id_setting,
                instance_setting,
                session_setting,
                heartbeat_setting,
                rebalance_setting,
            ]
            .into_iter()
            .filter(|(_, setting)| !setting.value.is_empty())
            .collect(),
            cluster_configs,
            flows,
            ignored: scopes.ignored,
            warnings: scopes.warnings,
            clusters,
            imported_from: None,
        })
    }

    /// Where to serve `/metrics`, `/status` and `/health` (`strait.http.listener`, `host:port`),
    /// if anywhere.
    pub fn http_listener(&self) -> Option<&str> {
        self.http_listener.as_deref()
    }

    /// How many bytes fetched but not yet acknowledged by the target the whole process may hold
    /// (`strait.buffer.memory`, default 256 MiB, at least 1 MiB).
    pub fn buffer_memory(&self) -> u64 {
        self.buffer_memory
    }

    /// Fetch connections per source broker (`strait.fetchers.per.broker`, default 1, 1 to 16).
    pub fn fetchers_per_broker(&self) -> u16 {
        self.fetchers_per_broker
    }

    /// Produce connections per target broker (`strait.producers.per.broker`, default 2, 1 to 16).
    pub fn producers_per_broker(&self) -> u16 {
        self.producers_per_broker
    }

    /// How broker connections move bytes (`strait.io`, default `auto`).
    pub fn io(&self) -> IoSetting {
        self.io
    }

    /// How long a stopping flow waits for the batches on the wire, and again for its last
    /// progress and offset-sync writes (`task.shutdown.graceful.timeout.ms`, Connect's key and
    /// default, 5 s).
    pub fn shutdown_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.shutdown_timeout_ms)
    }

    /// How the processes of this configuration share the work (the group keys).
    pub fn group(&self) -> &GroupSettings {
        &self.group
    }

    /// The aliases of `clusters`, in file order, without duplicates.
    pub fn clusters(&self) -> &[String] {
        &self.clusters
    }

    /// Cluster-level client settings of `alias` (no flow overrides), as MM2's
    /// `MirrorMakerConfig.clientConfig` builds them.
    pub fn cluster(&self, alias: &str) -> Option<&ClusterClientConfig> {
        self.cluster_configs.iter().find(|c| c.alias == alias)
    }

    /// Every flow MM2 would run a herder for: enabled flows and flows that only emit heartbeats,
    /// ordered by source then target as listed in `clusters`.
    pub fn flows(&self) -> &[FlowConfig] {
        &self.flows
    }

    /// The flows that replicate (`<source>-><target>.enabled = true`).
    pub fn enabled_flows(&self) -> impl Iterator<Item = &FlowConfig> {
        self.flows.iter().filter(|f| f.enabled)
    }

    /// The flow `source->target`, if MM2 would run it.
    pub fn flow(&self, source: &str, target: &str) -> Option<&FlowConfig> {
        self.flows
            .iter()
            .find(|f| f.source.alias == source && f.target.alias == target)
    }

    /// Keys that are accepted but have no effect, with the reason, in file order.
    pub fn ignored(&self) -> &[IgnoredKey] {
        &self.ignored
    }

    /// Things worth logging: deprecated keys, unknown `ssl.*`/`sasl.*` keys, unresolved
    /// `${…}` placeholders, and similar.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

fn parse_clusters(prop: &Property) -> Result<Vec<String>> {
    let invalid = |alias: &str, reason| ConfigError::InvalidAlias {
        line: prop.line,
        alias: alias.to_owned(),
        reason,
    };
    let aliases = java_list(&prop.value);
    if aliases.is_empty() {
        return Err(Raw::from(prop).invalid("a comma-separated list of cluster aliases"));
    }
    let mut clusters: Vec<String> = Vec::new();
    for alias in aliases {
        if alias.is_empty() {
            return Err(invalid(alias, "an alias must not be empty"));
        }
        if alias.contains("->") {
            return Err(invalid(alias, "an alias must not contain `->`"));
        }
        if alias.contains(char::is_whitespace) {
            return Err(invalid(alias, "an alias must not contain whitespace"));
        }
        if !clusters.iter().any(|c| c == alias) {
            clusters.push(alias.to_owned());
        }
    }
    Ok(clusters)
}

/// The cluster-level servers every role of the sides a flow uses must have.
fn check_bootstrap(flow: &FlowConfig, line: usize) -> Result<()> {
    let sides: &[&ClusterClientConfig] = if flow.enabled {
        &[&flow.source, &flow.target]
    } else {
        &[&flow.target]
    };
    for side in sides {
        if ClientRole::ALL
            .iter()
            .any(|&role| side.get(role, "bootstrap.servers").is_none())
        {
            return Err(ConfigError::MissingBootstrapServers {
                line,
                alias: side.alias.clone(),
                flow: flow.name(),
                heartbeats_only: !flow.enabled,
            });
        }
    }
    Ok(())
}

fn file_setting(p: &Property) -> Setting {
    Setting {
        value: p.value.clone(),
        origin: Origin::File {
            line: p.line,
            key: p.key.clone(),
            written: p.written.clone(),
        },
    }
}

/// A client value, trimmed as Kafka's `ConfigDef` does for every type except passwords.
fn client_setting(key: &str, p: &Property) -> Setting {
    let mut setting = file_setting(p);
    if !is_secret(key) {
        setting.value = java_trim(&setting.value).to_owned();
    }
    setting
}

fn split_role(key: &str) -> Option<(ClientRole, &str)> {
    ClientRole::ALL
        .into_iter()
        .zip(ROLE_PREFIXES)
        .find_map(|(role, prefix)| {
            key.strip_prefix(prefix)
                .filter(|rest| !rest.is_empty())
                .map(|rest| (role, rest))
        })
}

/// Keys by scope, after validation. Ignored keys are not kept.
struct Scopes<'p> {
    aliases: &'p [String],
    top: BTreeMap<&'p str, &'p Property>,
    clusters: BTreeMap<&'p str, BTreeMap<&'p str, &'p Property>>,
    flows: BTreeMap<(&'p str, &'p str), BTreeMap<&'p str, &'p Property>>,
    ignored: Vec<IgnoredKey>,
    warnings: Vec<String>,
}

impl<'p> Scopes<'p> {
    fn new(aliases: &'p [String]) -> Self {
        Scopes {
            aliases,
            top: BTreeMap::new(),
            clusters: BTreeMap::new(),
            flows: BTreeMap::new(),
            ignored: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn is_alias(&self, name: &str) -> bool {
        self.aliases.iter().any(|a| a == name)
    }

    /// The longest alias `a` such that `key` starts with `a.`, and the rest.
    fn split_alias<'k>(&self, key: &'k str) -> Option<(&'k str, &'k str)> {
        self.aliases
            .iter()
            .filter(|a| key.len() > a.len() + 1 && key.starts_with(a.as_str()) && key[a.len()..].starts_with('.'))
            .max_by_key(|a| a.len())
            .map(|a| (&key[..a.len()], &key[a.len() + 1..]))
    }

    fn unknown_alias(&self, prop: &Property, alias: &str) -> ConfigError {
        ConfigError::UnknownAlias {
            line: prop.line,
            key: prop.key.clone(),
            alias: alias.to_owned(),
            known: self.aliases.to_vec(),
        }
    }

    fn unknown_key(prop: &Property, prefix: &str, name: &str) -> ConfigError {
        ConfigError::UnknownKey {
            line: prop.line,
            key: prop.key.clone(),
            suggestion: suggest(name, known_names()).map(|s| format!("{prefix}{s}")),
        }
    }

    fn ignore(&mut self, prop: &Property, reason: impl Into<String>) {
        self.ignored.push(IgnoredKey {
            line: prop.line,
            key: prop.key.clone(),
            reason: reason.into(),
        });
    }

    fn warn(&mut self, prop: &Property, message: impl fmt::Display) {
        self.warnings
            .push(format!("line {}: `{}` {message}", prop.line, prop.key));
    }

    /// Sorts one property into its scope, validating its value.
    fn classify(&mut self, prop: &'p Property) -> Result<()> {
        let key = prop.key.as_str();
        if let Some(name) = scoped_strait_key(key) {
            return Err(ConfigError::Refused {
                line: prop.line,
                key: prop.key.clone(),
                reason: format!(
                    "`{name}` is process-wide: one value for every cluster and flow of this Strait process; \
                     set it once, at top level (`{name} = ...`)"
                ),
            });
        }
        if let Some(arrow) = key.find("->") {
            return self.flow_key(prop, arrow);
        }
        let top_level = connector_key(key).is_some() || deprecated_key(key).is_some() || is_connection_key(key);
        match self.split_alias(key) {
            Some((alias, sub)) if !top_level => self.cluster_key(prop, alias, sub),
            _ => self.top_key(prop),
        }
    }

    fn top_key(&mut self, prop: &'p Property) -> Result<()> {
        let key = prop.key.as_str();
        if self.worker_value(prop, key)? || self.connector_value(prop, key)? || self.client_value(prop, None, key)? {
            let _ = self.top.insert(key, prop);
        } else if let Some(why) = ignored_reason(key) {
            self.ignore(prop, why);
        } else if split_role(key).is_some() {
            self.ignore(prop, WHY_TOP_ROLE);
        } else {
            // `X.bootstrap.servers` or `X.consumer.k` with an `X` missing from `clusters`.
            if let Some((alias, rest)) = key.split_once('.') {
                if is_connection_key(rest) || split_role(rest).is_some() {
                    return Err(self.unknown_alias(prop, alias));
                }
            }
            return Err(Self::unknown_key(prop, "", key));
        }
        Ok(())
    }

    fn cluster_key(&mut self, prop: &'p Property, alias: &'p str, sub: &'p str) -> Result<()> {
        if self.worker_value(prop, sub)? {
            let _ = self.clusters.entry(alias).or_default().insert(sub, prop);
            return Ok(());
        }
        if connector_key(sub).is_some() || deprecated_key(sub).is_some() || sub == "clusters" {
            self.ignore(
                prop,
                format!("MM2 reads connector settings only at top level (`{sub}`) or per flow (`{alias}-><target>.{sub}`), not per cluster"),
            );
            return Ok(());
        }
        if let Some(why) = ignored_reason(sub) {
            self.ignore(prop, why);
            return Ok(());
        }
        let role = split_role(sub);
        let client_key = role.map_or(sub, |(_, rest)| rest);
        if let Some((role, name)) = role {
            if self.ignored_role_key(prop, role, name) {
                return Ok(());
            }
        }
        if self.client_value(prop, role.map(|(r, _)| r), client_key)? {
            let _ = self.clusters.entry(alias).or_default().insert(sub, prop);
            Ok(())
        } else {
            Err(Self::unknown_key(prop, &format!("{alias}."), sub))
        }
    }

    fn flow_key(&mut self, prop: &'p Property, arrow: usize) -> Result<()> {
        let key = prop.key.as_str();
        let source = &key[..arrow];
        let rest = &key[arrow + 2..];
        if !self.is_alias(source) {
            return Err(self.unknown_alias(prop, source));
        }
        let Some((target, sub)) = self.split_alias(rest) else {
            let guess = rest.split('.').next().unwrap_or(rest);
            return Err(if self.is_alias(guess) {
                Self::unknown_key(prop, "", key)
            } else {
                self.unknown_alias(prop, guess)
            });
        };
        if source == target {
            return Err(ConfigError::SelfFlow {
                line: prop.line,
                key: prop.key.clone(),
                alias: source.to_owned(),
            });
        }
        let keep = if sub == EXACTLY_ONCE_SOURCE_SUPPORT {
            self.ignore(
                prop,
                format!(
                    "a Connect worker setting, which MM2 reads per target cluster: set `{target}.{EXACTLY_ONCE_SOURCE_SUPPORT}`"
                ),
            );
            false
        } else if self.connector_value(prop, sub)? {
            true
        } else if let Some(why) = ignored_reason(sub) {
            self.ignore(prop, why);
            false
        } else if let Some(side_key) = sub.strip_prefix("source.").or_else(|| sub.strip_prefix("target.")) {
            if let Some(conn) = side_key.strip_prefix("cluster.") {
                let keep = is_connection_key(conn) && self.client_value(prop, None, conn)?;
                if !keep {
                    self.ignore(prop, WHY_SIDE_CLUSTER);
                }
                keep
            } else {
                self.flow_role_value(prop, side_key)?
            }
        } else if is_connection_key(sub) {
            self.ignore(prop, WHY_FLOW_CONNECTION);
            false
        } else {
            self.flow_role_value(prop, sub)?
        };
        if keep {
            let _ = self.flows.entry((source, target)).or_default().insert(sub, prop);
        }
        Ok(())
    }

    /// A flow-level `<role>.<key>` (possibly after `source.`/`target.`): kept, or unknown.
    fn flow_role_value(&mut self, prop: &Property, key: &str) -> Result<bool> {
        match split_role(key) {
            Some((role, rest)) if self.ignored_role_key(prop, role, rest) => Ok(false),
            Some((role, rest)) => self.client_value(prop, Some(role), rest),
            None => {
                let (prefix, name) = prop.key.split_at(prop.key.len() - key.len());
                Err(Self::unknown_key(prop, prefix, name))
            }
        }
    }

    /// Lists a client key that Strait's `role` does not read (`linger.ms`, `max.poll.records`,
    /// …) as ignored; true if it is one.
    fn ignored_role_key(&mut self, prop: &Property, role: ClientRole, name: &str) -> bool {
        match ignored_role_reason(role, name) {
            Some(why) => {
                self.ignore(prop, why);
                true
            }
            None => false,
        }
    }

    /// Lists the role keys that no client of `flows` reads: the mirror fetches with the consumer
    /// view of a flow's source and writes (data, heartbeats, and offset syncs on the source) with
    /// the consumer view of its source and the producer view of its target, so a cluster's
    /// consumer keys mean something only if it is the source of an enabled flow, its producer
    /// keys only if it is a target. Admin keys serve `plan`, `lag`, `translate` and `checkpoints`.
    fn ignore_unused_roles(&mut self, flows: &[FlowConfig]) {
        let is_source = |alias: &str| flows.iter().any(|f| f.enabled && f.source.alias == alias);
        let is_target = |alias: &str| flows.iter().any(|f| f.target.alias == alias);
        let mut unused = Vec::new();
        for (alias, keys) in &self.clusters {
            for (sub, prop) in keys {
                let reason = match split_role(sub) {
                    Some((ClientRole::Consumer, _)) if !is_source(alias) => format!(
                        "`{alias}` is the source of no enabled flow, and Strait reads consumer keys only on the clusters it fetches from"
                    ),
                    Some((ClientRole::Producer, _)) if !is_target(alias) => format!(
                        "`{alias}` is the target of no flow, and Strait reads producer keys only on the clusters it mirrors into; \
                         offset syncs written to a source use its consumer view's connection"
                    ),
                    _ => continue,
                };
                unused.push((*prop, reason));
            }
        }
        for ((source, target), keys) in &self.flows {
            for (sub, prop) in keys {
                let reason = if sub.starts_with("target.consumer.") {
                    format!("Strait has no consumer on the target `{target}`; consumer keys are read on the source")
                } else if sub.starts_with("source.producer.") {
                    format!(
                        "Strait has no producer view on the source `{source}`: offset syncs written there use its consumer view's connection"
                    )
                } else {
                    continue;
                };
                unused.push((*prop, reason));
            }
        }
        for (prop, reason) in unused {
            self.ignore(prop, reason);
        }
        self.ignored.sort_by_key(|ignored| ignored.line);
    }

    /// Validates the worker key Strait reads (`exactly.once.source.support`); false if `name`
    /// is not it.
    fn worker_value(&mut self, prop: &Property, name: &str) -> Result<bool> {
        if name != EXACTLY_ONCE_SOURCE_SUPPORT {
            return Ok(false);
        }
        let raw = Raw::from(prop);
        if raw.choice(EXACTLY_ONCE_VALUES)? == 1 {
            self.warn(
                prop,
                "is `preparing`, MM2's first rollout step: no transactions are written until it is `enabled`",
            );
        }
        Ok(true)
    }

    /// Validates an MM2 connector key (or deprecated alias); false if `name` is not one.
    fn connector_value(&mut self, prop: &Property, name: &str) -> Result<bool> {
        let raw = Raw::from(prop);
        if let Some(def) = connector_key(name) {
            raw.check(def.kind)?;
            if let Some(why) = connector_key_without_effect(name) {
                self.ignore(prop, why);
            }
            if name == "emit.offset-syncs.enabled" && !raw.bool()? {
                self.warn(
                    prop,
                    "is false: without offset syncs no offset can be translated, so checkpoints and group offset sync \
                     stop with them, as in MM2",
                );
            }
            if matches!(def.kind, Kind::Separator) && java_trim(&prop.value) != prop.value {
                self.warn(
                    prop,
                    "has surrounding whitespace, which MM2 keeps as part of the separator; so does Strait",
                );
            }
        } else if let Some(new) = deprecated_key(name) {
            raw.check(Kind::RegexList)?;
            self.warn(
                prop,
                format_args!(
                    "is deprecated since Kafka 2.8 and removed in 4.0; use `{new}` (when both are set, `{new}` wins)"
                ),
            );
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// Validates a client setting of `role` (`None`: connection keys only); false if `name`
    /// cannot be one.
    fn client_value(&mut self, prop: &Property, role: Option<ClientRole>, name: &str) -> Result<bool> {
        if role.is_none() && !is_connection_key(name) {
            return Ok(false);
        }
        let raw = Raw::from(prop);
        match name {
            "security.protocol" if SecurityProtocol::parse(&prop.value).is_none() => {
                return Err(raw.invalid(format!("{} (case-insensitive)", one_of(SecurityProtocol::NAMES))));
            }
            "bootstrap.servers" if parse_bootstrap_servers(&prop.value).is_none() => {
                return Err(raw.invalid("a comma-separated list of `host:port`"));
            }
            "isolation.level" if role == Some(ClientRole::Consumer) => {
                let _ = parse_isolation_level(raw)?;
            }
            "auto.offset.reset" if role == Some(ClientRole::Consumer) => {
                let _ = parse_auto_offset_reset(raw)?;
            }
            _ => {}
        }
        match role {
            Some(ClientRole::Consumer) => check_consumer_value(name, raw)?,
            Some(ClientRole::Producer) => {
                if let Some(warning) = check_producer_value(name, raw)? {
                    self.warn(prop, warning);
                }
            }
            _ => {}
        }
        if let Some(suggestion) = unknown_security_key(name) {
            let hint = suggestion.map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
            self.warn(
                prop,
                format_args!("is not a Kafka client setting{hint}; it is passed on unchanged"),
            );
        }
        Ok(true)
    }

    /// A connector key of flow `source->target`: flow-level, else top-level, else the deprecated
    /// alias (flow, then top), else MM2's default (`ConfigUtils.translateDeprecatedConfigs`).
    fn connector_setting(&self, flow: &BTreeMap<&str, &Property>, name: &'static str, default: &str) -> Setting {
        let lookup = |key: &str| flow.get(key).or_else(|| self.top.get(key)).copied();
        let alias = DEPRECATED_KEYS
            .iter()
            .find(|(_, new)| *new == name)
            .map(|&(old, _)| old);
        lookup(name)
            .or_else(|| alias.and_then(lookup))
            .map_or_else(|| Setting::default_value(default), file_setting)
    }

    /// The flow `source->target` if MM2 would run a herder for it.
    fn flow(&self, source: &str, target: &str) -> Result<Option<FlowConfig>> {
        let empty = BTreeMap::new();
        let flow = self.flows.get(&(source, target)).unwrap_or(&empty);
        let settings: Vec<(&'static str, Setting)> = CONNECTOR_KEYS
            .iter()
            .map(|d| (d.name, self.connector_setting(flow, d.name, d.default)))
            .collect();
        let eff = Effective(&settings);

        // MirrorMakerConfig.clusterPairs: only the flow-level `enabled` creates a herder.
        let explicitly_enabled = match flow.get("enabled") {
            Some(p) => Raw::from(*p).bool()?,
            None => false,
        };
        let emit_heartbeats = eff.schedule("emit.heartbeats")?;
        if !explicitly_enabled && !emit_heartbeats.enabled {
            return Ok(None);
        }

        let kind = match eff
            .raw("replication.policy.class")
            .class(&[DEFAULT_POLICY_CLASS, IDENTITY_POLICY_CLASS])?
        {
            0 => PolicyKind::Default,
            _ => PolicyKind::Identity,
        };
        let policy = ReplicationPolicy::new(kind, eff.raw("replication.policy.separator").value)
            .with_internal_topic_separator(eff.bool("replication.policy.internal.topic.separator.enabled")?)
            .with_source_cluster_alias(source);
        let use_defaults_from = match eff.raw("use.defaults.from").choice(&["source", "target"])? {
            0 => UseDefaultsFrom::Source,
            _ => UseDefaultsFrom::Target,
        };
        let offset_syncs_topic_location = match eff.raw("offset-syncs.topic.location").choice(&["source", "target"])? {
            0 => OffsetSyncsTopicLocation::Source,
            _ => OffsetSyncsTopicLocation::Target,
        };
        let source_client = self.client(source, Some((flow, "source")));
        let consumer_raw = |key: &'static str| source_client.consumer().get(key).map(|s| setting_raw(key, s));
        let source_isolation_level = consumer_raw("isolation.level")
            .map(parse_isolation_level)
            .transpose()?
            .unwrap_or_default();
        let source_auto_offset_reset = consumer_raw("auto.offset.reset")
            .map(parse_auto_offset_reset)
            .transpose()?
            .unwrap_or_default();
        let (source_fetch, source_fetch_settings) = FetchSettings::from_view(source_client.consumer())?;
        let target_client = self.client(target, Some((flow, "target")));
        let (target_produce, target_produce_settings) = ProduceSettings::from_view(target_client.producer())?;
        let exactly_once_prop = self
            .clusters
            .get(target)
            .and_then(|keys| keys.get(EXACTLY_ONCE_SOURCE_SUPPORT))
            .or_else(|| self.top.get(EXACTLY_ONCE_SOURCE_SUPPORT))
            .copied();
        let exactly_once = match exactly_once_prop {
            Some(prop) => Raw::from(prop).choice(EXACTLY_ONCE_VALUES)? == 2,
            None => false,
        };
        let mut settings = settings;
        settings.push((
            EXACTLY_ONCE_SOURCE_SUPPORT,
            exactly_once_prop.map_or_else(|| Setting::default_value("disabled"), file_setting),
        ));
        let eff = Effective(&settings);
        // A heartbeat-only flow mirrors nothing: `required` asks nothing of it.
        if eff.raw("exactly.once.support").choice(&["requested", "required"])? == 1 && explicitly_enabled {
            let why = if !exactly_once {
                Some(format!(
                    "needs exactly-once mode: set `{target}.{EXACTLY_ONCE_SOURCE_SUPPORT} = enabled`"
                ))
            } else if source_isolation_level != IsolationLevel::ReadCommitted {
                Some(format!(
                    "needs the source consumer at read_committed, or aborted source transactions would be copied \
                     (MirrorSourceConnector supports exactly-once only then): set `{source}.consumer.isolation.level = read_committed`"
                ))
            } else {
                None
            };
            if let Some(reason) = why {
                let raw = eff.raw("exactly.once.support");
                return Err(ConfigError::Refused {
                    line: raw.line,
                    key: raw.key.to_owned(),
                    reason: format!("`required` {reason}"),
                });
            }
        }
        let boundary = eff.raw("transaction.boundary");
        if boundary.choice(&["poll", "interval", "connector"])? == 2 {
            return Err(ConfigError::Refused {
                line: boundary.line,
                key: boundary.key.to_owned(),
                reason: "`connector` lets the connector define transactions, and MirrorSourceConnector defines none \
                         (MM2 refuses it too); use `poll` or `interval`"
                    .into(),
            });
        }
        let interval = eff.raw("transaction.boundary.interval.ms");
        let transaction_interval_ms: i64 = interval.number("a long")?;
        if !(1..=i64::from(i32::MAX)).contains(&transaction_interval_ms) {
            return Err(interval.invalid("a number of milliseconds from 1 to 2147483647"));
        }

        Ok(Some(FlowConfig {
            enabled: eff.bool("enabled")?,
            topic_filter: TopicFilter::new(eff.patterns("topics")?, eff.patterns("topics.exclude")?),
            group_filter: GroupFilter::new(eff.patterns("groups")?, eff.patterns("groups.exclude")?),
            config_property_filter: ConfigPropertyFilter::new(
                eff.patterns("config.properties.exclude")?,
                use_defaults_from,
            ),
            policy,
            refresh_topics: eff.schedule("refresh.topics")?,
            sync_topic_configs: eff.schedule("sync.topic.configs")?,
            sync_topic_acls: eff.schedule("sync.topic.acls")?,
            refresh_groups: eff.schedule("refresh.groups")?,
            emit_checkpoints: eff.schedule("emit.checkpoints")?,
            sync_group_offsets: eff.schedule("sync.group.offsets")?,
            emit_heartbeats,
            replication_factor: eff.raw("replication.factor").number("an int")?,
            offset_syncs_topic_replication_factor: eff
                .raw("offset-syncs.topic.replication.factor")
                .number("a short")?,
            checkpoints_topic_replication_factor: eff.raw("checkpoints.topic.replication.factor").number("a short")?,
            heartbeats_topic_replication_factor: eff.raw("heartbeats.topic.replication.factor").number("a short")?,
            offset_syncs_topic_location,
            offset_lag_max: eff.raw("offset.lag.max").number("a long")?,
            emit_offset_syncs_enabled: eff.bool("emit.offset-syncs.enabled")?,
            heartbeats_replication_enabled: eff.bool("heartbeats.replication.enabled")?,
            admin_timeout_ms: eff.raw("admin.timeout.ms").number("a long")?,
            consumer_poll_timeout_ms: eff.raw("consumer.poll.timeout.ms").number("a long")?,
            exactly_once,
            transaction_interval: std::time::Duration::from_millis(transaction_interval_ms.unsigned_abs()),
            source_isolation_level,
            source_auto_offset_reset,
            source_fetch,
            target_produce,
            target: target_client,
            source: source_client,
            settings,
            source_fetch_settings,
            target_produce_settings,
        }))
    }

    /// Client settings of `alias`, optionally as one side (`"source"`/`"target"`) of a flow.
    fn client(&self, alias: &str, flow: Option<(&BTreeMap<&str, &Property>, &str)>) -> ClusterClientConfig {
        let empty = BTreeMap::new();
        let cluster = self.clusters.get(alias).unwrap_or(&empty);
        let mut connection = BTreeMap::new();
        for (key, prop) in self.top.iter().chain(cluster) {
            if is_connection_key(key) {
                let _ = connection.insert(key.to_string(), client_setting(key, prop));
            }
        }
        let with_prefix = |scope: &BTreeMap<&str, &Property>, prefix: &str| -> Vec<(String, Setting)> {
            scope
                .iter()
                .filter_map(|(key, prop)| {
                    let rest = key.strip_prefix(prefix)?;
                    // `consumer.poll.timeout.ms` and `admin.timeout.ms` are connector keys.
                    (connector_key(key).is_none()).then(|| (rest.to_owned(), client_setting(rest, prop)))
                })
                .collect()
        };
        let roles = ClientRole::ALL.map(|role| {
            let prefix = format!("{}.", role.as_str());
            let mut cluster_view = connection.clone();
            cluster_view.extend(with_prefix(cluster, &prefix));
            let Some((flow, side)) = flow else {
                return cluster_view;
            };
            let mut view = connection.clone();
            view.extend(with_prefix(flow, &format!("{side}.cluster.")));
            view.extend(with_prefix(flow, &prefix));
            view.extend(cluster_view);
            view.extend(with_prefix(flow, &format!("{side}.{prefix}")));
            if role == ClientRole::Consumer {
                // Forced by MirrorConnectorConfig for every MM2 consumer.
                let _ = view.insert("enable.auto.commit".to_owned(), Setting::default_value("false"));
                let _ = view
                    .entry("auto.offset.reset".to_owned())
                    .or_insert_with(|| Setting::default_value("earliest"));
            }
            view
        });
        ClusterClientConfig::new(alias, &connection, roles)
    }
}

fn parse_isolation_level(raw: Raw<'_>) -> Result<IsolationLevel> {
    match raw.trimmed().to_ascii_lowercase().as_str() {
        "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
        "read_committed" => Ok(IsolationLevel::ReadCommitted),
        _ => Err(raw.invalid(one_of(IsolationLevel::NAMES))),
    }
}

fn parse_auto_offset_reset(raw: Raw<'_>) -> Result<AutoOffsetReset> {
    match raw.trimmed().to_ascii_lowercase().as_str() {
        "earliest" => Ok(AutoOffsetReset::Earliest),
        "latest" => Ok(AutoOffsetReset::Latest),
        "none" => Ok(AutoOffsetReset::None),
        _ => Err(raw.invalid(one_of(AutoOffsetReset::NAMES))),
    }
}

/// Typed access to a flow's effective connector settings.
struct Effective<'a>(&'a [(&'static str, Setting)]);

impl<'a> Effective<'a> {
    fn raw(&self, name: &'static str) -> Raw<'a> {
        let (_, setting) = self
            .0
            .iter()
            .find(|(n, _)| *n == name)
            .expect("every connector key has an effective setting");
        setting_raw(name, setting)
    }

    fn bool(&self, name: &'static str) -> Result<bool> {
        self.raw(name).bool()
    }

    fn patterns(&self, name: &'static str) -> Result<PatternList> {
        self.raw(name).patterns()
    }

    /// `<job>.enabled` and `<job>.interval.seconds`.
    fn schedule(&self, job: &'static str) -> Result<Schedule> {
        let enabled = CONNECTOR_KEYS
            .iter()
            .find(|d| d.name.strip_prefix(job) == Some(".enabled"))
            .expect("every schedule has an enabled key");
        let interval = CONNECTOR_KEYS
            .iter()
            .find(|d| d.name.strip_prefix(job) == Some(".interval.seconds"))
            .expect("every schedule has an interval key");
        Ok(Schedule {
            enabled: self.bool(enabled.name)?,
            interval_seconds: self.raw(interval.name).number("a long")?,
        })
    }
}

#[cfg(test)]
mod tests;
