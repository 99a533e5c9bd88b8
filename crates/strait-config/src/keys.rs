//! What every `mm2.properties` key means: the typed MM2 connector keys with their defaults (and
//! the default filters they make), the Kafka client connection keys, and the Connect keys
//! Strait ignores.

use crate::client::ClientRole;
use crate::data_path::{FETCH_KEYS, PRODUCE_KEYS};
use crate::error::Result;
use crate::filter::{ConfigPropertyFilter, GroupFilter, PatternList, TopicFilter, UseDefaultsFrom};
use crate::value::Raw;

/// How a connector key's value is parsed (Kafka `ConfigDef` types).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `true`/`false`, case-insensitive, surrounding blanks ignored.
    Bool,
    /// Java `int`.
    Int,
    /// Java `short`.
    Short,
    /// Java `long`.
    Long,
    /// Comma list of Java regexes joined into one pattern.
    RegexList,
    /// The replication policy separator: any non-blank string, kept verbatim.
    Separator,
    /// One of a fixed set of strings, compared exactly after trimming.
    Choice(&'static [&'static str]),
    /// A Java class name; only the listed classes (full or simple name) are supported.
    Class(&'static [&'static str]),
}

/// An MM2 connector key (`MirrorSourceConfig`, `MirrorCheckpointConfig`,
/// `MirrorHeartbeatConfig`, `MirrorConnectorConfig`).
#[derive(Debug)]
pub(crate) struct KeyDef {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) default: &'static str,
}

const fn key(name: &'static str, kind: Kind, default: &'static str) -> KeyDef {
    KeyDef { name, kind, default }
}

const SOURCE_OR_TARGET: &[&str] = &["source", "target"];

/// Default replication policy class name.
pub(crate) const DEFAULT_POLICY_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";
/// Identity replication policy class name.
pub(crate) const IDENTITY_POLICY_CLASS: &str = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy";

/// Every MM2 connector key Strait reads, in the order `check-config` prints them.
///
/// `enabled` defaults to `false`: MM2's dedicated mode injects that default for every flow.
pub(crate) const CONNECTOR_KEYS: &[KeyDef] = &[
    key("enabled", Kind::Bool, "false"),
    key("topics", Kind::RegexList, ".*"),
    key(
        "topics.exclude",
        Kind::RegexList,
        ".*[\\-\\.]internal, .*\\.replica, __.*",
    ),
    key("groups", Kind::RegexList, ".*"),
    key(
        "groups.exclude",
        Kind::RegexList,
        "console-consumer-.*, connect-.*, __.*",
    ),
    key(
        "config.properties.exclude",
        Kind::RegexList,
        "follower\\.replication\\.throttled\\.replicas, \
         leader\\.replication\\.throttled\\.replicas, \
         message\\.timestamp\\.difference\\.max\\.ms, \
         message\\.timestamp\\.type, \
         unclean\\.leader\\.election\\.enable, \
         min\\.insync\\.replicas",
    ),
    key("use.defaults.from", Kind::Choice(SOURCE_OR_TARGET), "target"),
    key(
        "replication.policy.class",
        Kind::Class(&[DEFAULT_POLICY_CLASS, IDENTITY_POLICY_CLASS]),
        DEFAULT_POLICY_CLASS,
    ),
    key("replication.policy.separator", Kind::Separator, "."),
    key(
        "replication.policy.internal.topic.separator.enabled",
        Kind::Bool,
        "true",
    ),
    key("refresh.topics.enabled", Kind::Bool, "true"),
    key("refresh.topics.interval.seconds", Kind::Long, "600"),
    key("sync.topic.configs.enabled", Kind::Bool, "true"),
    key("sync.topic.configs.interval.seconds", Kind::Long, "600"),
    key("sync.topic.acls.enabled", Kind::Bool, "true"),
    key("sync.topic.acls.interval.seconds", Kind::Long, "600"),
    key("replication.factor", Kind::Int, "2"),
    key("offset-syncs.topic.replication.factor", Kind::Short, "3"),
    key("offset-syncs.topic.location", Kind::Choice(SOURCE_OR_TARGET), "source"),
    key("offset.lag.max", Kind::Long, "100"),
    key("emit.offset-syncs.enabled", Kind::Bool, "true"),
    key("heartbeats.replication.enabled", Kind::Bool, "true"),
    key("emit.checkpoints.enabled", Kind::Bool, "true"),
    key("emit.checkpoints.interval.seconds", Kind::Long, "60"),
    key("sync.group.offsets.enabled", Kind::Bool, "false"),
    key("sync.group.offsets.interval.seconds", Kind::Long, "60"),
    key("refresh.groups.enabled", Kind::Bool, "true"),
    key("refresh.groups.interval.seconds", Kind::Long, "600"),
    key("checkpoints.topic.replication.factor", Kind::Short, "3"),
    key("emit.heartbeats.enabled", Kind::Bool, "true"),
    key("emit.heartbeats.interval.seconds", Kind::Long, "1"),
    key("heartbeats.topic.replication.factor", Kind::Short, "3"),
    key(
        "exactly.once.support",
        Kind::Choice(&["requested", "required"]),
        "requested",
    ),
    key(
        "transaction.boundary",
        Kind::Choice(&["poll", "interval", "connector"]),
        "poll",
    ),
    key("transaction.boundary.interval.ms", Kind::Long, "1000"),
    key("admin.timeout.ms", Kind::Long, "60000"),
    key("consumer.poll.timeout.ms", Kind::Long, "1000"),
    key(
        "topic.filter.class",
        Kind::Class(&["org.apache.kafka.connect.mirror.DefaultTopicFilter"]),
        "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    ),
    key(
        "group.filter.class",
        Kind::Class(&["org.apache.kafka.connect.mirror.DefaultGroupFilter"]),
        "org.apache.kafka.connect.mirror.DefaultGroupFilter",
    ),
    key(
        "config.property.filter.class",
        Kind::Class(&["org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"]),
        "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
    ),
    key(
        "forwarding.admin.class",
        Kind::Class(&["org.apache.kafka.clients.admin.ForwardingAdmin"]),
        "org.apache.kafka.clients.admin.ForwardingAdmin",
    ),
];

/// Connect's worker key that switches exactly-once on (KIP-618), read as MM2's dedicated mode
/// reads worker keys: `<target>.exactly.once.source.support` for the flows into `<target>`,
/// else top-level.
pub(crate) const EXACTLY_ONCE_SOURCE_SUPPORT: &str = "exactly.once.source.support";
/// Its values: `preparing` is MM2's rollout step, which writes no transactions yet.
pub(crate) const EXACTLY_ONCE_VALUES: &[&str] = &["disabled", "preparing", "enabled"];

/// Deprecated exclude aliases accepted by MM2 2.8–3.9 (KIP-629), with their replacement.
pub(crate) const DEPRECATED_KEYS: &[(&str, &str)] = &[
    ("topics.blacklist", "topics.exclude"),
    ("groups.blacklist", "groups.exclude"),
    ("config.properties.blacklist", "config.properties.exclude"),
];

/// Looks up an MM2 connector key.
pub(crate) fn connector_key(name: &str) -> Option<&'static KeyDef> {
    CONNECTOR_KEYS.iter().find(|k| k.name == name)
}

/// The replacement of a deprecated alias.
pub(crate) fn deprecated_key(name: &str) -> Option<&'static str> {
    DEPRECATED_KEYS
        .iter()
        .find(|(old, _)| *old == name)
        .map(|&(_, new)| new)
}

/// Client keys that set up the connection, inherited from `<alias>.k` and top-level `k` into every
/// client role (MM2's `MirrorClientConfig.CLIENT_CONFIG_DEF`): `bootstrap.servers`,
/// `security.protocol`, `ssl.*`, `sasl.*`.
pub(crate) fn is_connection_key(name: &str) -> bool {
    name == "bootstrap.servers"
        || name == "security.protocol"
        || name.strip_prefix("ssl.").is_some_and(|s| !s.is_empty())
        || name.strip_prefix("sasl.").is_some_and(|s| !s.is_empty())
}

/// The `ssl.*` and `sasl.*` client keys Kafka defines (`SslConfigs`/`SaslConfigs`); other
/// `ssl.*`/`sasl.*` keys are passed on with a warning.
const KNOWN_SECURITY_KEYS: &[&str] = &[
    "ssl.protocol",
    "ssl.provider",
    "ssl.cipher.suites",
    "ssl.enabled.protocols",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    "ssl.client.auth",
    "sasl.kerberos.service.name",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.client.callback.handler.class",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.retry.backoff.ms",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.header.urlencode",
    "sasl.oauthbearer.jwt.retriever.class",
    "sasl.oauthbearer.jwt.validator.class",
    "sasl.oauthbearer.scope",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.algorithm",
    "sasl.oauthbearer.assertion.claim.aud",
    "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss",
    "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds",
    "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.template.file",
];

/// For an `ssl.*`/`sasl.*` key Kafka does not define: the closest one it does.
pub(crate) fn unknown_security_key(name: &str) -> Option<Option<&'static str>> {
    let security = name.starts_with("ssl.") || name.starts_with("sasl.");
    (security && !KNOWN_SECURITY_KEYS.contains(&name)).then(|| suggest(name, KNOWN_SECURITY_KEYS.iter().copied()))
}

/// The three client roles a cluster setting can be prefixed with.
pub(crate) const ROLE_PREFIXES: &[&str] = &["consumer.", "producer.", "admin."];

/// Generic Kafka client keys that MM2 does not take from `<alias>.k` or top-level `k`.
const CLIENT_GENERIC_KEYS: &[&str] = &[
    "client.id",
    "client.rack",
    "client.dns.lookup",
    "request.timeout.ms",
    "default.api.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "metadata.max.age.ms",
    "metadata.recovery.strategy",
    "connections.max.idle.ms",
    "receive.buffer.bytes",
    "send.buffer.bytes",
    "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms",
    "security.providers",
    "enable.metrics.push",
    "group.id",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
];

const WHY_CLIENT_GENERIC: &str = "MM2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from cluster-level and top-level keys to its clients; use `<alias>.consumer.<key>`, `<alias>.producer.<key>` or `<alias>.admin.<key>`";
const WHY_WORKER: &str = "a Connect worker setting; Strait runs no Connect worker";
const WHY_CONNECTOR: &str = "a Connect connector setting that Strait does not need";
const WHY_STORAGE: &str = "a Connect internal-topic setting; Strait keeps its progress itself";
const WHY_REST: &str = "a Connect REST server setting; Strait has no REST API";
const WHY_METRICS: &str = "a JMX/metrics-reporter setting; Strait exposes its own metrics";

/// Keys (exact) that are accepted everywhere and ignored, with the reason.
const IGNORED_KEYS: &[(&str, &str)] = &[
    ("name", "connector names are fixed by Strait"),
    ("connector.class", "connector classes are fixed by Strait"),
    (
        "source.cluster.alias",
        "the aliases come from the flow name `<source>-><target>`",
    ),
    (
        "target.cluster.alias",
        "the aliases come from the flow name `<source>-><target>`",
    ),
    (
        "tasks.max",
        "Strait spreads partitions over its own workers, not Connect tasks",
    ),
    (
        "tasks.max.enforce",
        "Strait spreads partitions over its own workers, not Connect tasks",
    ),
    ("task.assigned.partitions", "internal to MM2 tasks"),
    ("task.assigned.groups", "internal to MM2 tasks"),
    ("task.index", "internal to MM2 tasks"),
    ("key.converter", "records are copied as raw bytes"),
    ("value.converter", "records are copied as raw bytes"),
    ("header.converter", "records are copied as raw bytes"),
    ("transforms", "Connect single message transforms are not supported"),
    ("predicates", "Connect single message transforms are not supported"),
    ("config.action.reload", WHY_CONNECTOR),
    ("offsets.storage.topic", WHY_STORAGE),
    ("offset.flush.interval.ms", WHY_WORKER),
    ("offset.flush.timeout.ms", WHY_WORKER),
    ("scheduled.rebalance.max.delay.ms", WHY_WORKER),
    ("connect.protocol", WHY_WORKER),
    ("plugin.path", WHY_WORKER),
    ("plugin.discovery", WHY_WORKER),
    ("connector.client.config.override.policy", WHY_WORKER),
    ("topic.tracking.enable", WHY_WORKER),
    ("topic.tracking.allow.reset", WHY_WORKER),
    ("topic.creation.enable", WHY_WORKER),
    (
        "dedicated.mode.enable.internal.rest",
        "not needed: MM2 needs it so that its nodes can send exactly-once fencing to the leader; a Strait process \
         fences its own transactional id with InitProducerId",
    ),
    ("listeners", WHY_REST),
    ("admin.listeners", WHY_REST),
    ("access.control.allow.origin", WHY_REST),
    ("access.control.allow.methods", WHY_REST),
    ("response.http.headers.config", WHY_REST),
    ("metric.reporters", WHY_METRICS),
    ("auto.include.jmx.reporter", WHY_METRICS),
    ("add.source.alias.to.metrics", WHY_METRICS),
    (
        "use.incremental.alter.configs",
        "Strait always syncs topic configs with IncrementalAlterConfigs (MM2 4.0 behaviour)",
    ),
];

const WHY_NO_REBATCH: &str = "record batches are forwarded as the source producer built them; Strait does not re-batch";
const WHY_NO_RECOMPRESS: &str =
    "batches are forwarded compressed as the source wrote them, without decompressing; the target gets the source's codec";
const WHY_PROCESS_MEMORY: &str = "Strait bounds memory for the whole process with `strait.buffer.memory`";

/// Producer keys that cannot apply to forwarded record batches, with the reason. They are
/// ignored in every producer view (`A.producer.k`, `A->B.producer.k`, `A->B.target.producer.k`,
/// …) and wherever else they are written.
const PRODUCER_BATCH_KEYS: &[(&str, &str)] = &[
    ("batch.size", WHY_NO_REBATCH),
    ("linger.ms", WHY_NO_REBATCH),
    ("compression.type", WHY_NO_RECOMPRESS),
    ("buffer.memory", WHY_PROCESS_MEMORY),
];

/// Client keys that every role reads, besides the connection keys ([`is_connection_key`]).
const ROLE_COMMON_KEYS: &[&str] = &["client.id", "request.timeout.ms", "socket.connection.setup.timeout.ms"];

/// Consumer keys Strait reads besides [`FETCH_KEYS`]: where a partition without progress starts,
/// and whether aborted transactions are copied.
const CONSUMER_KEYS: &[&str] = &["isolation.level", "auto.offset.reset"];

const WHY_NO_GROUP: &str =
    "Strait's fetchers join no consumer group of the source; scale-out takes the top-level keys strait.group.id, group.instance.id, session.timeout.ms, heartbeat.interval.ms and rebalance.timeout.ms (a group on the target cluster), and progress is kept in mm2-offsets.<source>.internal";
const WHY_NO_POLL: &str = "Strait has no poll loop: records move as whole batches, bounded by fetch.max.bytes, \
     max.partition.fetch.bytes and strait.buffer.memory";
const WHY_RAW_BYTES: &str = "records are copied as raw bytes, never deserialized or serialized";
const WHY_NO_CLASSES: &str = "custom Java classes cannot be loaded by Strait";
const WHY_BACKOFF: &str =
    "Strait retries and reconnects with its own exponential backoff with jitter (from 100 ms to a few \
     seconds); it has no per-client setting";
const WHY_OWN_TRANSACTIONAL_ID: &str = "Strait names its transactional ids itself (strait-<source>-<target>-<n>), \
     never after MM2's tasks, whose running producers they would fence";

/// Kafka client keys of some role that Strait does not read, with the reason. A key of a role
/// that is neither read ([`honoured_role_key`]) nor listed here gets a generic reason naming
/// what the role does read.
const ROLE_KEYS_WITHOUT_EFFECT: &[(&str, &str)] = &[
    (
        "enable.auto.commit",
        "MM2 forces it to false for every consumer; Strait commits no consumer offsets and keeps its progress in mm2-offsets.<source>.internal",
    ),
    ("auto.commit.interval.ms", WHY_NO_GROUP),
    ("group.id", WHY_NO_GROUP),
    ("group.instance.id", WHY_NO_GROUP),
    ("group.protocol", WHY_NO_GROUP),
    ("group.remote.assignor", WHY_NO_GROUP),
    ("partition.assignment.strategy", WHY_NO_GROUP),
    ("session.timeout.ms", WHY_NO_GROUP),
    ("heartbeat.interval.ms", WHY_NO_GROUP),
    ("max.poll.records", WHY_NO_POLL),
    ("max.poll.interval.ms", WHY_NO_POLL),
    ("key.deserializer", WHY_RAW_BYTES),
    ("value.deserializer", WHY_RAW_BYTES),
    ("key.serializer", WHY_RAW_BYTES),
    ("value.serializer", WHY_RAW_BYTES),
    (
        "check.crcs",
        "Strait always checks the CRC of every fetched batch, fetches a corrupt one again and stops if it stays corrupt",
    ),
    (
        "exclude.internal.topics",
        "topics.exclude decides which topics are mirrored (by default it excludes __.* and .*.internal)",
    ),
    (
        "allow.auto.create.topics",
        "Strait creates remote topics itself and fetches only topics that exist",
    ),
    ("interceptor.classes", WHY_NO_CLASSES),
    ("partitioner.class", "each batch goes to the partition of the same number as at the source"),
    (
        "partitioner.ignore.keys",
        "each batch goes to the partition of the same number as at the source",
    ),
    (
        "partitioner.adaptive.partitioning.enable",
        "each batch goes to the partition of the same number as at the source",
    ),
    (
        "partitioner.availability.timeout.ms",
        "each batch goes to the partition of the same number as at the source",
    ),
    (
        "retries",
        "Strait retries a batch until delivery.timeout.ms has passed, as Kafka's producer does with its default retries",
    ),
    ("transactional.id", WHY_OWN_TRANSACTIONAL_ID),
    (
        "max.block.ms",
        "Strait never blocks a send on buffer space: strait.buffer.memory holds fetching back instead",
    ),
    ("retry.backoff.ms", WHY_BACKOFF),
    ("retry.backoff.max.ms", WHY_BACKOFF),
    ("reconnect.backoff.ms", WHY_BACKOFF),
    ("reconnect.backoff.max.ms", WHY_BACKOFF),
    (
        "socket.connection.setup.timeout.max.ms",
        "Strait gives every connection attempt socket.connection.setup.timeout.ms, without growing it",
    ),
    (
        "metadata.max.age.ms",
        "Strait refreshes metadata when a broker says it is stale and at every refresh.topics.interval.seconds",
    ),
    (
        "connections.max.idle.ms",
        "Strait keeps its broker connections open while it runs; a broker that closes one is reconnected to",
    ),
    (
        "default.api.timeout.ms",
        "request.timeout.ms bounds each of Strait's requests; operations retry until their own deadline",
    ),
    (
        "client.dns.lookup",
        "Strait resolves each broker address when it connects and tries every address it resolves to",
    ),
    ("send.buffer.bytes", "Strait leaves socket buffers to the kernel's autotuning"),
    ("receive.buffer.bytes", "Strait leaves socket buffers to the kernel's autotuning"),
    ("security.providers", WHY_NO_CLASSES),
    ("enable.metrics.push", WHY_METRICS),
    ("metric.reporters", WHY_METRICS),
    ("auto.include.jmx.reporter", WHY_METRICS),
    ("metrics.num.samples", WHY_METRICS),
    ("metrics.sample.window.ms", WHY_METRICS),
    ("metrics.recording.level", WHY_METRICS),
];

/// Whether Strait reads client key `name` in `role`'s view.
fn honoured_role_key(role: ClientRole, name: &str) -> bool {
    let of_role = match role {
        ClientRole::Consumer => FETCH_KEYS.contains(&name) || CONSUMER_KEYS.contains(&name),
        ClientRole::Producer => PRODUCE_KEYS.contains(&name),
        ClientRole::Admin => false,
    };
    of_role || is_connection_key(name) || ROLE_COMMON_KEYS.contains(&name)
}

/// Why client key `name`, written for `role` (`A.consumer.k`, `A->B.target.producer.k`, …),
/// changes nothing; `None` if Strait reads it.
pub(crate) fn ignored_role_reason(role: ClientRole, name: &str) -> Option<String> {
    if honoured_role_key(role, name) {
        return None;
    }
    let listed = (role == ClientRole::Producer)
        .then(|| ignored_producer_reason(name))
        .flatten()
        .or_else(|| {
            ROLE_KEYS_WITHOUT_EFFECT
                .iter()
                .find(|(k, _)| *k == name)
                .map(|&(_, why)| why)
        });
    if let Some(why) = listed {
        return Some(why.to_owned());
    }
    let read: Vec<&str> = ROLE_COMMON_KEYS
        .iter()
        .chain(match role {
            ClientRole::Consumer => FETCH_KEYS.iter().chain(CONSUMER_KEYS),
            ClientRole::Producer => PRODUCE_KEYS.iter().chain(&[]),
            ClientRole::Admin => [].iter().chain(&[]),
        })
        .copied()
        .collect();
    let typo = suggest(name, read.iter().copied()).map_or(String::new(), |s| format!("did you mean `{s}`? "));
    Some(format!(
        "{typo}Strait's {role} reads only bootstrap.servers, security.protocol, ssl.*, sasl.* and {}",
        read.join(", "),
        role = role.as_str(),
    ))
}

/// MM2 connector keys that Strait validates and shows but that change nothing, with the reason.
const CONNECTOR_KEYS_WITHOUT_EFFECT: &[(&str, &str)] = &[
    (
        "offset.lag.max",
        "Strait writes an offset sync for every forwarded batch, which translates at least as precisely as any offset.lag.max",
    ),
    (
        "refresh.groups.enabled",
        "Strait lists the source's consumer groups at every checkpoint round (emit.checkpoints.interval.seconds)",
    ),
    (
        "refresh.groups.interval.seconds",
        "Strait lists the source's consumer groups at every checkpoint round (emit.checkpoints.interval.seconds)",
    ),
    (
        "admin.timeout.ms",
        "Strait's admin requests time out after the admin client's request.timeout.ms (`<alias>.admin.request.timeout.ms`)",
    ),
    (
        "consumer.poll.timeout.ms",
        "Strait has no poll loop: a Fetch waits at most fetch.max.wait.ms (`<alias>.consumer.fetch.max.wait.ms`)",
    ),
];

/// Why an MM2 connector key changes nothing in Strait, if it is one of
/// [`CONNECTOR_KEYS_WITHOUT_EFFECT`].
pub(crate) fn connector_key_without_effect(name: &str) -> Option<&'static str> {
    CONNECTOR_KEYS_WITHOUT_EFFECT
        .iter()
        .find(|(k, _)| *k == name)
        .map(|&(_, why)| why)
}

/// Why a producer key has no effect on forwarded batches, if it is one of
/// [`PRODUCER_BATCH_KEYS`].
fn ignored_producer_reason(name: &str) -> Option<&'static str> {
    PRODUCER_BATCH_KEYS
        .iter()
        .find(|(k, _)| *k == name)
        .map(|&(_, why)| why)
}

/// Key prefixes that are accepted everywhere and ignored, with the reason.
const IGNORED_PREFIXES: &[(&str, &str)] = &[
    ("offset.storage.", WHY_STORAGE),
    ("config.storage.", WHY_STORAGE),
    ("status.storage.", WHY_STORAGE),
    ("key.converter.", "records are copied as raw bytes"),
    ("value.converter.", "records are copied as raw bytes"),
    ("header.converter.", "records are copied as raw bytes"),
    ("transforms.", "Connect single message transforms are not supported"),
    ("predicates.", "Connect single message transforms are not supported"),
    ("errors.", WHY_CONNECTOR),
    ("topic.creation.", WHY_CONNECTOR),
    (
        "producer.override.",
        "a Connect per-connector override of the producer writing to the target, which MM2's dedicated mode hands to its worker; Strait reads that producer's keys as `<source>-><target>.target.producer.<key>` (as `strait import` writes connector JSON's overrides): write that key",
    ),
    (
        "consumer.override.",
        "Connect gives source connectors such as MM2's no consumer of its own, so it has no effect; use `<source>.consumer.<key>` or `<source>-><target>.source.consumer.<key>`",
    ),
    (
        "admin.override.",
        "a Connect per-connector override of the worker's admin client, which MM2's tasks do not use; use `<alias>.admin.<key>`",
    ),
    ("worker.", WHY_WORKER),
    ("inter.worker.", WHY_WORKER),
    ("rest.", WHY_REST),
    ("listeners.", WHY_REST),
    ("admin.listeners.", WHY_REST),
    ("metrics.", WHY_METRICS),
];

/// Why a key that Strait accepts but does not use is ignored, if it is one.
pub(crate) fn ignored_reason(name: &str) -> Option<&'static str> {
    IGNORED_KEYS
        .iter()
        .find(|(k, _)| *k == name)
        .or_else(|| IGNORED_PREFIXES.iter().find(|(p, _)| name.starts_with(p)))
        .map(|&(_, why)| why)
        .or_else(|| is_client_role_key(name).then_some(WHY_CLIENT_GENERIC))
        .or_else(|| ignored_producer_reason(name))
}

/// Kafka client keys that only a client role reads (`<alias>.<role>.k`,
/// `<source>-><target>.[source.|target.]<role>.k`), never `<alias>.k` or top-level `k`: the
/// generic client keys and the data path's consumer and producer keys.
fn is_client_role_key(name: &str) -> bool {
    CLIENT_GENERIC_KEYS.contains(&name) || FETCH_KEYS.contains(&name) || PRODUCE_KEYS.contains(&name)
}

/// Every exact key name known in some scope, for "did you mean" suggestions.
pub(crate) fn known_names() -> impl Iterator<Item = &'static str> {
    CONNECTOR_KEYS
        .iter()
        .map(|k| k.name)
        .chain(DEPRECATED_KEYS.iter().map(|&(old, _)| old))
        .chain(IGNORED_KEYS.iter().map(|&(k, _)| k))
        .chain(PRODUCER_BATCH_KEYS.iter().map(|&(k, _)| k))
        .chain(CLIENT_GENERIC_KEYS.iter().copied())
        .chain(FETCH_KEYS.iter().copied())
        .chain(PRODUCE_KEYS.iter().copied())
        .chain(KNOWN_SECURITY_KEYS.iter().copied())
        .chain([
            "clusters",
            "bootstrap.servers",
            "security.protocol",
            EXACTLY_ONCE_SOURCE_SUPPORT,
        ])
        .chain(STRAIT_KEYS.iter().copied())
}

/// Strait's own top-level key: where `/metrics`, `/status` and `/health` are served
/// (`host:port`); unset means no HTTP endpoint.
pub(crate) const HTTP_LISTENER: &str = "strait.http.listener";

/// Strait's own top-level key: how many bytes fetched but not yet acknowledged by the target the
/// whole process may hold (a Java long, at least [`MIN_BUFFER_MEMORY`]).
pub(crate) const BUFFER_MEMORY: &str = "strait.buffer.memory";
/// Default of [`BUFFER_MEMORY`]: 256 MiB.
pub(crate) const DEFAULT_BUFFER_MEMORY: u64 = 256 * 1024 * 1024;
/// Least [`BUFFER_MEMORY`]: 1 MiB.
pub(crate) const MIN_BUFFER_MEMORY: u64 = 1024 * 1024;

/// Strait's own top-level key: fetch connections per source broker (1 to
/// [`MAX_CONNECTIONS_PER_BROKER`]).
pub(crate) const FETCHERS_PER_BROKER: &str = "strait.fetchers.per.broker";
/// Default of [`FETCHERS_PER_BROKER`].
pub(crate) const DEFAULT_FETCHERS_PER_BROKER: u16 = 1;
/// Most [`FETCHERS_PER_BROKER`] or [`PRODUCERS_PER_BROKER`].
pub(crate) const MAX_CONNECTIONS_PER_BROKER: u16 = 16;

/// Strait's own top-level key: how broker connections move bytes, `epoll`, `io_uring` or `auto`
/// (the default).
pub(crate) const IO: &str = "strait.io";

/// Strait's own top-level key: produce connections per target broker (1 to
/// [`MAX_CONNECTIONS_PER_BROKER`]). A broker handles the requests of one connection one at a
/// time, so a second connection lets it append two requests at once.
pub(crate) const PRODUCERS_PER_BROKER: &str = "strait.producers.per.broker";
/// Default of [`PRODUCERS_PER_BROKER`].
pub(crate) const DEFAULT_PRODUCERS_PER_BROKER: u16 = 2;

/// Connect's worker key, read by Strait at top level: how long a stopping flow waits for the
/// batches on the wire, and again for its last progress and offset-sync writes.
pub(crate) const SHUTDOWN_TIMEOUT: &str = "task.shutdown.graceful.timeout.ms";
/// Default of [`SHUTDOWN_TIMEOUT`], Connect's: 5 s.
pub(crate) const DEFAULT_SHUTDOWN_TIMEOUT_MS: u64 = 5_000;

/// Strait's own top-level key: the group the `strait run` processes of one configuration join on
/// each target cluster to share its flows' work (default `strait-<flows to that target>`).
pub(crate) const GROUP_ID: &str = "strait.group.id";

/// Connect's worker keys, read by Strait at top level for its group on each target cluster:
/// static membership, and the session, heartbeat and rebalance timing (Connect's defaults).
pub(crate) const GROUP_INSTANCE_ID: &str = "group.instance.id";
pub(crate) const SESSION_TIMEOUT: &str = "session.timeout.ms";
pub(crate) const DEFAULT_SESSION_TIMEOUT_MS: u64 = 10_000;
pub(crate) const HEARTBEAT_INTERVAL: &str = "heartbeat.interval.ms";
pub(crate) const DEFAULT_HEARTBEAT_INTERVAL_MS: u64 = 3_000;
pub(crate) const REBALANCE_TIMEOUT: &str = "rebalance.timeout.ms";
pub(crate) const DEFAULT_REBALANCE_TIMEOUT_MS: u64 = 60_000;
/// The group keys read only at top level (elsewhere they are client keys, without effect).
pub(crate) const GROUP_KEYS: &[&str] = &[
    GROUP_INSTANCE_ID,
    SESSION_TIMEOUT,
    HEARTBEAT_INTERVAL,
    REBALANCE_TIMEOUT,
];

/// Process-wide keys, read only at top level: Strait's own, and Connect's
/// [`SHUTDOWN_TIMEOUT`] (in MM2 a worker setting).
pub(crate) const STRAIT_KEYS: &[&str] = &[
    HTTP_LISTENER,
    BUFFER_MEMORY,
    FETCHERS_PER_BROKER,
    PRODUCERS_PER_BROKER,
    IO,
    SHUTDOWN_TIMEOUT,
    GROUP_ID,
];

/// The Strait key that a key written at a cluster or flow scope (`A.strait.buffer.memory`,
/// `A->B.strait.fetchers.per.broker`, `A.producer.strait.http.listener`) names.
pub(crate) fn scoped_strait_key(key: &str) -> Option<&'static str> {
    STRAIT_KEYS
        .iter()
        .copied()
        .find(|name| key.strip_suffix(name).is_some_and(|scope| scope.ends_with('.')))
}

/// The closest candidate within a small edit distance.
pub(crate) fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 4);
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The default of connector key `key`, a pattern list.
fn default_patterns(key: &str) -> PatternList {
    PatternList::parse(connector_key(key).map_or("", |k| k.default)).unwrap_or_default()
}

impl Default for TopicFilter {
    /// MM2's defaults: `topics = .*`, `topics.exclude = .*[\-\.]internal, .*\.replica, __.*`.
    fn default() -> Self {
        Self::new(default_patterns("topics"), default_patterns("topics.exclude"))
    }
}

impl Default for GroupFilter {
    /// MM2's defaults: `groups = .*`, `groups.exclude = console-consumer-.*, connect-.*, __.*`.
    fn default() -> Self {
        Self::new(default_patterns("groups"), default_patterns("groups.exclude"))
    }
}

impl Default for ConfigPropertyFilter {
    /// MM2's defaults: the six throttling/timestamp/ISR properties excluded, target defaults.
    fn default() -> Self {
        Self::new(default_patterns("config.properties.exclude"), UseDefaultsFrom::Target)
    }
}

/// Connector values are checked against their key's kind where the kinds are defined.
impl Raw<'_> {
    /// Validates a value against a connector key's kind.
    pub(crate) fn check(&self, kind: Kind) -> Result<()> {
        match kind {
            Kind::Bool => self.bool().map(|_| ()),
            Kind::Int => self.number::<i32>("an integer (Java int)").map(|_| ()),
            Kind::Short => self
                .number::<i16>("an integer from -32768 to 32767 (Java short)")
                .map(|_| ()),
            Kind::Long => self.number::<i64>("an integer (Java long)").map(|_| ()),
            Kind::RegexList => self.patterns().map(|_| ()),
            Kind::Separator if self.trimmed().is_empty() => {
                Err(self.invalid("a non-blank separator such as `.` or `_`"))
            }
            Kind::Separator => Ok(()),
            Kind::Choice(choices) => self.choice(choices).map(|_| ()),
            Kind::Class(classes) => self.class(classes).map(|_| ()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(value: &str) -> Raw<'_> {
        Raw {
            key: "k",
            value,
            line: 7,
            written: None,
        }
    }

    #[test]
    fn booleans_follow_config_def() {
        assert!(raw(" TRUE ").bool().unwrap());
        assert!(!raw("False").bool().unwrap());
        assert_eq!(
            raw("yes").bool().unwrap_err().to_string(),
            "line 7: invalid value `yes` for `k`: expected `true` or `false`"
        );
    }

    #[test]
    fn numbers_and_ranges() {
        assert_eq!(raw(" 42 ").number::<i32>("int").unwrap(), 42);
        assert_eq!(raw("+3").number::<i16>("short").unwrap(), 3);
        assert!(raw("40000").check(Kind::Short).is_err());
        assert!(raw("3000000000").check(Kind::Int).is_err());
        assert!(raw("3000000000").check(Kind::Long).is_ok());
        assert_eq!(
            raw("ten").check(Kind::Long).unwrap_err().to_string(),
            "line 7: invalid value `ten` for `k`: expected an integer (Java long)"
        );
    }

    #[test]
    fn choices_and_classes() {
        assert_eq!(raw("target").choice(SOURCE_OR_TARGET).unwrap(), 1);
        assert_eq!(
            raw("Source").choice(SOURCE_OR_TARGET).unwrap_err().to_string(),
            "line 7: invalid value `Source` for `k`: expected `source` or `target`"
        );
        let classes = &[DEFAULT_POLICY_CLASS, IDENTITY_POLICY_CLASS];
        assert_eq!(raw(IDENTITY_POLICY_CLASS).class(classes).unwrap(), 1);
        assert_eq!(raw("DefaultReplicationPolicy").class(classes).unwrap(), 0);
        assert_eq!(
            raw("com.acme.MyPolicy").class(classes).unwrap_err().to_string(),
            "line 7: invalid value `com.acme.MyPolicy` for `k`: expected \
             `org.apache.kafka.connect.mirror.DefaultReplicationPolicy` or \
             `org.apache.kafka.connect.mirror.IdentityReplicationPolicy` \
             (custom Java classes are not supported)"
        );
    }

    #[test]
    fn separator_must_not_be_blank() {
        assert!(raw("__").check(Kind::Separator).is_ok());
        assert!(raw(" ").check(Kind::Separator).is_err());
    }

    #[test]
    fn defaults_are_valid() {
        for def in CONNECTOR_KEYS {
            raw(def.default).check(def.kind).unwrap();
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("topcs", known_names()), Some("topics"));
        assert_eq!(suggest("bootstrap.server", known_names()), Some("bootstrap.servers"));
        assert_eq!(suggest("completely.different", known_names()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            unknown_security_key("ssl.trustore.location"),
            Some(Some("ssl.truststore.location"))
        );
        assert_eq!(unknown_security_key("ssl.truststore.location"), None);
        assert_eq!(unknown_security_key("linger.ms"), None);
    }

    #[test]
    fn strait_keys_at_a_scope() {
        assert_eq!(scoped_strait_key("A.strait.buffer.memory"), Some(BUFFER_MEMORY));
        assert_eq!(
            scoped_strait_key("A->B.target.producer.strait.fetchers.per.broker"),
            Some(FETCHERS_PER_BROKER)
        );
        assert_eq!(scoped_strait_key("A.strait.http.listener"), Some(HTTP_LISTENER));
        assert_eq!(scoped_strait_key("strait.buffer.memory"), None);
        assert_eq!(scoped_strait_key("A.xstrait.buffer.memory"), None);
        assert_eq!(suggest("strait.bufer.memory", known_names()), Some(BUFFER_MEMORY));
    }

    #[test]
    fn ignored_keys() {
        assert_eq!(
            ignored_reason("tasks.max"),
            Some("Strait spreads partitions over its own workers, not Connect tasks")
        );
        assert_eq!(ignored_reason("offset.storage.replication.factor"), Some(WHY_STORAGE));
        assert_eq!(ignored_reason("client.id"), Some(WHY_CLIENT_GENERIC));
        assert_eq!(ignored_reason("topics"), None);
        assert_eq!(ignored_reason("linger.ms"), Some(WHY_NO_REBATCH));
        assert_eq!(ignored_producer_reason("compression.type"), Some(WHY_NO_RECOMPRESS));
        assert_eq!(ignored_producer_reason("buffer.memory"), Some(WHY_PROCESS_MEMORY));
        assert_eq!(ignored_producer_reason("acks"), None);
    }
}
