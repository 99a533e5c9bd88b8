//! Kafka client settings of one cluster, per client role, with where each value came from.

use std::collections::BTreeMap;
use std::fmt;

use crate::secret::is_secret;
use crate::value::java_list;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// MM2's default (or a value MM2 forces).
    Default,
    /// A line of the file; `key` is the full key as written (e.g. `A.consumer.isolation.level`),
    /// which shows whether the value is top-level, cluster-level or flow-level.
    File {
        /// 1-based line number.
        line: usize,
        /// The full key.
        key: String,
        /// The value as written when config providers resolved placeholders in it: shown in
        /// place of the value, which may be a secret.
        written: Option<String>,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File {
                line,
                key,
                written: None,
            } => write!(f, "line {line}: {key}"),
            Origin::File { line, key, .. } => write!(f, "line {line}: {key}, through a config provider"),
        }
    }
}

/// An effective value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The value as written (unescaped), or the default.
    pub value: String,
    /// Where it came from.
    pub origin: Origin,
}

impl Setting {
    pub(crate) fn default_value(value: &str) -> Self {
        Setting {
            value: value.to_owned(),
            origin: Origin::Default,
        }
    }
}

/// The client roles MM2 configures separately (`<alias>.consumer.*`, `.producer.*`, `.admin.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientRole {
    /// Consumers: replication reads on the source, checkpoint/offset-sync reads.
    Consumer,
    /// Producers: data writes on the target, offset-sync and checkpoint writes.
    Producer,
    /// Admin clients: topic, config, ACL and group management.
    Admin,
}

impl ClientRole {
    /// All roles in display order.
    pub const ALL: [ClientRole; 3] = [ClientRole::Consumer, ClientRole::Producer, ClientRole::Admin];

    /// `consumer`, `producer` or `admin`: the key prefix without its dot.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientRole::Consumer => "consumer",
            ClientRole::Producer => "producer",
            ClientRole::Admin => "admin",
        }
    }
}

/// `security.protocol` (case-insensitive in Kafka).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// `PLAINTEXT` (Kafka default).
    #[default]
    Plaintext,
    /// `SSL`.
    Ssl,
    /// `SASL_PLAINTEXT`.
    SaslPlaintext,
    /// `SASL_SSL`.
    SaslSsl,
}

impl SecurityProtocol {
    /// Accepted spellings.
    pub(crate) const NAMES: &'static [&'static str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

    /// Parses a value case-insensitively, ignoring surrounding blanks.
    pub(crate) fn parse(value: &str) -> Option<Self> {
        let upper = value.trim().to_ascii_uppercase();
        match upper.as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    /// The canonical Kafka name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Consumer `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// `read_uncommitted` (Kafka and MM2 default): aborted transactional data is copied too.
    #[default]
    ReadUncommitted,
    /// `read_committed`: only committed transactional data is read.
    ReadCommitted,
}

impl IsolationLevel {
    pub(crate) const NAMES: &'static [&'static str] = &["read_uncommitted", "read_committed"];

    /// The Kafka name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Consumer `auto.offset.reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoOffsetReset {
    /// `earliest` (forced default of every MM2 consumer).
    #[default]
    Earliest,
    /// `latest`.
    Latest,
    /// `none`: fail when there is no valid position.
    None,
}

impl AutoOffsetReset {
    pub(crate) const NAMES: &'static [&'static str] = &["earliest", "latest", "none"];

    /// The Kafka name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Parses a `bootstrap.servers` value: a LIST of `host:port` entries (IPv6 hosts in brackets);
/// empty entries are skipped as Kafka does. `None` if an entry is malformed or none is left.
pub(crate) fn parse_bootstrap_servers(value: &str) -> Option<Vec<String>> {
    let servers: Vec<String> = java_list(value)
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let valid = |s: &String| {
        s.rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
    };
    (!servers.is_empty() && servers.iter().all(valid)).then_some(servers)
}

/// The client settings of one cluster.
///
/// Built like MM2 builds them. Cluster level (`Mm2Config::cluster`): connection keys
/// (`bootstrap.servers`, `security.protocol`, `ssl.*`, `sasl.*`) come from `<alias>.k`, else
/// top-level `k`; each role view is those keys overlaid with `<alias>.<role>.*`, so
/// `A.producer.k` > `A.k` > top-level `k`. For one side of a flow `S->T`
/// (`FlowConfig::source`/`target`) each role view is, later winning:
/// 1. the connection keys (plus `S->T.source.cluster.<k>` / `target.cluster.<k>`),
/// 2. `S->T.<role>.*` (for both sides),
/// 3. the cluster-level role view (`A.<role>.k` > `A.k` > top-level `k`),
/// 4. `S->T.source.<role>.*` / `S->T.target.<role>.*`,
///
/// and consumers get `enable.auto.commit=false` and, unless set, `auto.offset.reset=earliest`.
/// Top-level `consumer.*`/`producer.*`/`admin.*` keys are not used (MM2 dedicated mode ignores
/// them).
///
/// Build clients from the role views: a role may override `bootstrap.servers` or
/// `security.protocol`, which the cluster-level fields below do not show.
#[derive(Clone)]
pub struct ClusterClientConfig {
    /// The cluster alias.
    pub alias: String,
    /// Cluster-level `bootstrap.servers` (`<alias>.bootstrap.servers`, else top-level); empty
    /// when neither is set (only allowed for a cluster no flow needs).
    pub bootstrap_servers: Vec<String>,
    /// Cluster-level `security.protocol`.
    pub security_protocol: SecurityProtocol,
    /// The other cluster-level connection settings (`ssl.*`, `sasl.*`), by key.
    pub props: BTreeMap<String, Setting>,
    /// How the cluster's connections move bytes: the process-wide `strait.io`.
    pub io: IoSetting,
    roles: [BTreeMap<String, Setting>; 3],
}

/// `strait.io`: how broker connections move bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoSetting {
    /// tokio's sockets on epoll.
    Epoll,
    /// io_uring for plaintext connections; Strait refuses to start where the kernel does not
    /// allow it.
    IoUring,
    /// io_uring where the benchmark chose it and the kernel allows it, else epoll (the default).
    #[default]
    Auto,
}

impl IoSetting {
    /// The value as written in `mm2.properties`.
    pub fn as_str(self) -> &'static str {
        match self {
            IoSetting::Epoll => "epoll",
            IoSetting::IoUring => "io_uring",
            IoSetting::Auto => "auto",
        }
    }
}

impl fmt::Display for IoSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Settings with secret values (passwords, `sasl.jaas.config`, `ssl.keystore.key`) hidden.
struct Redacted<'a>(&'a BTreeMap<String, Setting>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = Setting {
            value: "[hidden]".into(),
            origin: Origin::Default,
        };
        f.debug_map()
            .entries(self.0.iter().map(|(key, setting)| {
                let shown = if is_secret(key) {
                    Setting {
                        origin: setting.origin.clone(),
                        ..hidden.clone()
                    }
                } else {
                    setting.clone()
                };
                (key, shown)
            }))
            .finish()
    }
}

// By hand, so that `{:?}` of a configuration never prints a password.
impl fmt::Debug for ClusterClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterClientConfig")
            .field("alias", &self.alias)
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("security_protocol", &self.security_protocol)
            .field("io", &self.io)
            .field("props", &Redacted(&self.props))
            .field("roles", &self.roles.iter().map(Redacted).collect::<Vec<_>>())
            .finish()
    }
}

impl ClusterClientConfig {
    pub(crate) fn new(
        alias: &str,
        connection: &BTreeMap<String, Setting>,
        roles: [BTreeMap<String, Setting>; 3],
    ) -> Self {
        let value = |k: &str| connection.get(k).map(|s| s.value.as_str());
        ClusterClientConfig {
            alias: alias.to_owned(),
            bootstrap_servers: value("bootstrap.servers")
                .and_then(parse_bootstrap_servers)
                .unwrap_or_default(),
            security_protocol: value("security.protocol")
                .and_then(SecurityProtocol::parse)
                .unwrap_or_default(),
            props: connection
                .iter()
                .filter(|(k, _)| *k != "bootstrap.servers" && *k != "security.protocol")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            io: IoSetting::default(),
            roles,
        }
    }

    /// Every effective setting of `role`, by key (connection keys included).
    pub fn role(&self, role: ClientRole) -> &BTreeMap<String, Setting> {
        &self.roles[role as usize]
    }

    /// The consumer view.
    pub fn consumer(&self) -> &BTreeMap<String, Setting> {
        self.role(ClientRole::Consumer)
    }

    /// The producer view.
    pub fn producer(&self) -> &BTreeMap<String, Setting> {
        self.role(ClientRole::Producer)
    }

    /// The admin client view.
    pub fn admin(&self) -> &BTreeMap<String, Setting> {
        self.role(ClientRole::Admin)
    }

    /// One effective value of `role`.
    pub fn get(&self, role: ClientRole, key: &str) -> Option<&str> {
        self.role(role).get(key).map(|s| s.value.as_str())
    }

    /// The plain key/value map of `role`, ready for a Kafka client.
    pub fn client_props(&self, role: ClientRole) -> BTreeMap<String, String> {
        self.role(role)
            .iter()
            .map(|(k, s)| (k.clone(), s.value.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_servers() {
        assert_eq!(
            parse_bootstrap_servers(" a:9092 , b:9093,, [::1]:9094 "),
            Some(vec!["a:9092".into(), "b:9093".into(), "[::1]:9094".into()])
        );
        assert_eq!(parse_bootstrap_servers(""), None);
        assert_eq!(parse_bootstrap_servers("a"), None);
        assert_eq!(parse_bootstrap_servers("a:port"), None);
        assert_eq!(parse_bootstrap_servers(":9092"), None);
    }

    #[test]
    fn security_protocol_is_case_insensitive() {
        assert_eq!(SecurityProtocol::parse(" sasl_ssl "), Some(SecurityProtocol::SaslSsl));
        assert_eq!(SecurityProtocol::parse("SSL"), Some(SecurityProtocol::Ssl));
        assert_eq!(SecurityProtocol::parse("TLS"), None);
        assert_eq!(SecurityProtocol::SaslPlaintext.as_str(), "SASL_PLAINTEXT");
    }

    #[test]
    fn debug_hides_secrets() {
        let setting = |value: &str| Setting {
            value: value.into(),
            origin: Origin::Default,
        };
        let connection: BTreeMap<String, Setting> = [
            (
                "sasl.jaas.config".to_string(),
                setting("x required password=\"hunter2\";"),
            ),
            ("ssl.key.password".to_string(), setting("hunter3")),
            ("sasl.mechanism".to_string(), setting("PLAIN")),
        ]
        .into();
        let config = ClusterClientConfig::new(
            "A",
            &connection,
            [connection.clone(), connection.clone(), connection.clone()],
        );
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter"), "{debug}");
        assert!(debug.contains("PLAIN") && debug.contains("[hidden]"), "{debug}");
    }

    #[test]
    fn origin_display() {
        assert_eq!(Origin::Default.to_string(), "default");
        let origin = Origin::File {
            line: 4,
            key: "A.bootstrap.servers".into(),
            written: None,
        };
        assert_eq!(origin.to_string(), "line 4: A.bootstrap.servers");
    }
}
