//! Reads an Apache Kafka MirrorMaker 2 `mm2.properties` file and answers every policy question
//! the Strait mirror engine asks: which flows run, how each cluster's clients connect, which
//! topics, groups and topic configs are copied, and how remote topics are named.
//!
//! It also reads the same configuration in the shapes other tools keep it: the JSON configs of
//! MM2's three connectors (Connect REST bodies, MSK Connect) and a Strimzi `KafkaMirrorMaker2`
//! resource, turned into `mm2.properties` text ([`Imported`]).
//!
//! The crate is pure: no async runtime and no I/O besides [`Mm2Config::from_path`],
//! [`Mm2Config::from_paths`] and the config providers a file names (which read files, folders
//! and environment variables).
//!
//! # Example
//!
//! ```
//! use strait_config::{ClientRole, Mm2Config, SkipReason};
//!
//! let config = Mm2Config::parse(
//!     "clusters = A, B\n\
//!      A.bootstrap.servers = a1:9092\n\
//!      B.bootstrap.servers = b1:9092\n\
//!      A->B.enabled = true\n\
//!      A->B.topics = orders.*\n\
//!      A.consumer.isolation.level = read_committed\n\
//!      tasks.max = 4\n",
//! )?;
//! let flow = config.flow("A", "B").expect("A->B is enabled");
//! assert!(flow.enabled);
//! assert_eq!(flow.remote_topic("orders.eu"), "A.orders.eu");
//! assert!(flow.should_replicate_topic("orders.eu"));
//! assert_eq!(flow.skip_reason("B.orders"), Some(SkipReason::Cycle));
//! assert_eq!(flow.source.get(ClientRole::Consumer, "isolation.level"), Some("read_committed"));
//! assert_eq!(flow.source_fetch.max_bytes, 52_428_800); // fetch.max.bytes, Java's default
//! // B->A exists only to write heartbeats into A.
//! assert!(!config.flow("B", "A").expect("heartbeats").enabled);
//! assert_eq!(config.ignored()[0].key, "tasks.max");
//! # Ok::<(), strait_config::ConfigError>(())
//! ```
//!
//! # Layout
//!
//! * [`properties`]: a `java.util.Properties` reader (comments, separators, continuations,
//!   escapes, last duplicate wins) that keeps line numbers.
//! * [`Mm2Config`]: `clusters`, the three key scopes and MM2's inheritance rules; one
//!   [`FlowConfig`] per pair MM2 would run (enabled, or heartbeats only); the keys that are
//!   [ignored](IgnoredKey) and the warnings; the process-wide keys
//!   ([`Mm2Config::http_listener`], [`Mm2Config::buffer_memory`],
//!   [`Mm2Config::fetchers_per_broker`], [`Mm2Config::shutdown_timeout`]); `Display` and [`Mm2Config::to_json`] render the
//!   effective configuration with the origin of every value.
//! * [`ClusterClientConfig`] (module `client`): client settings of one cluster per [`ClientRole`].
//! * [`FetchSettings`] and [`ProduceSettings`] (module `data_path`): the Kafka client keys that
//!   shape the mirror's Fetch and Produce requests, typed with Java's defaults and ranges, read
//!   per flow from the source's consumer view ([`FlowConfig::source_fetch`]) and the target's
//!   producer view ([`FlowConfig::target_produce`]).
//! * [`ReplicationPolicy`] (module `policy`): remote topic naming (Default and Identity
//!   policies).
//! * [`TopicFilter`], [`GroupFilter`], [`ConfigPropertyFilter`] (module `filter`): MM2's topic,
//!   group and topic-config filters.
//! * [`FlowConfig`] (module `flow`): one flow's effective settings.
//! * `keys`: what every key means (MM2's connector keys with their defaults, the client keys,
//!   the Connect keys Strait ignores and why, the process-wide keys); `value`: Java-compatible
//!   parsing of a raw value with its key and line; `secret`: which settings are never printed;
//!   `render`: `check-config`'s text and JSON. The modules form no import cycle: `error`,
//!   `secret`, `properties` and `value` are at the bottom, `mm2` and `render` on top.
//! * `providers`: Kafka's config providers (`config.providers`; file, directory and environment
//!   variable), resolving `${alias:path:key}` placeholders in every value before anything else
//!   reads it, and keeping the text as written for renderings and errors.
//! * [`Imported`] (module `import`): connector configs (`import/json.rs` reads the three JSON
//!   shapes, `import/connectors.rs` merges connectors into flows) and Strimzi resources
//!   (`import/strimzi.rs`, with `import/yaml.rs` keeping each node's line) written as
//!   `mm2.properties` text whose every setting names the file and key or path it came from;
//!   that text is then read like any `mm2.properties`.
//! * [`ConfigError`]: the crate's single error type; messages name the line and key.
//!
//! # Key scopes
//!
//! ```text
//! key = value               top level: MM2 connector keys for every flow, connection fallbacks
//! A.key = value             cluster A: bootstrap.servers, security.protocol, ssl.*, sasl.*,
//!                           consumer.* / producer.* / admin.*
//! A->B.key = value          flow A->B: enabled, connector keys (override top level), client keys
//! ```
//!
//! Strait's own keys, and Connect's `task.shutdown.graceful.timeout.ms`, are process-wide and
//! read only at top level; written at a cluster or flow scope (`A.strait.buffer.memory`) they
//! are refused:
//!
//! ```text
//! strait.http.listener = host:port    where /metrics, /status and /health are served (unset: nowhere)
//! strait.buffer.memory = 268435456    bytes fetched but not yet acknowledged by the target, for the
//!                                     whole process (a long, at least 1048576)
//! strait.fetchers.per.broker = 1      fetch connections per source broker (1 to 16)
//! strait.producers.per.broker = 2     produce connections per target broker (1 to 16)
//! task.shutdown.graceful.timeout.ms = 5000
//!                                     at shutdown, how long each flow waits for the batches on
//!                                     the wire, and again for each of its last writes (ms)
//! ```
//!
//! Connector keys: flow level > top level > MM2 default. Client connection keys
//! (`bootstrap.servers`, `security.protocol`, `ssl.*`, `sasl.*`): `A.producer.k` > `A.k` >
//! top-level `k`; other client keys (`fetch.max.bytes`, `acks`, …) only from a role,
//! `A.consumer.k` or `A.producer.k`, as in MM2 (see [`ClusterClientConfig`] for flow overrides);
//! the known ones written at `A.k` or top level are listed as ignored.
//! Known Connect worker and connector keys are accepted and listed by [`Mm2Config::ignored`];
//! anything else is an error with a "did you mean" suggestion.
//!
//! # Deliberate differences from MM2
//!
//! * Custom Java classes (policy, filters, forwarding admin) are rejected; the Default and
//!   Identity policies and the default filters are built in.
//! * `${provider:path:key}` placeholders are not resolved (a warning is recorded).
//! * A top-level `use.defaults.from` is honoured (MM2 3.x/4.0 drops it in dedicated mode).
//! * Strait's producer is always idempotent and must know what the target has: the producer
//!   keys `acks = 0`, `enable.idempotence = false`, more than 5 requests in flight and
//!   `request.timeout.ms = 0` are refused; `acks = 1` is accepted with a warning.
//! * The producer keys that shape batches (`batch.size`, `linger.ms`, `compression.type`,
//!   `buffer.memory`) are listed as ignored wherever they are written: record batches are
//!   forwarded as the source producer built and compressed them, and `strait.buffer.memory`
//!   bounds memory for the whole process.
//! * Values MM2 would reject later (at connector or client start) are rejected up front:
//!   booleans other than `true`/`false`, out-of-range numbers, unknown enum values, bad regexes,
//!   bootstrap servers that are not `host:port`.
//!
//! # References
//!
//! `apache/kafka` `connect/mirror` and `connect/mirror-client`: `MirrorMakerConfig`,
//! `MirrorConnectorConfig`, `MirrorSourceConfig`, `MirrorCheckpointConfig`,
//! `MirrorHeartbeatConfig`, `DefaultReplicationPolicy`, `IdentityReplicationPolicy`,
//! `Default{Topic,Group,ConfigProperty}Filter`, `MirrorSourceConnector.shouldReplicateTopic`.

mod client;
mod data_path;
mod error;
mod filter;
mod flow;
mod import;
mod keys;
mod mm2;
mod policy;
pub mod properties;
mod providers;
mod render;
mod secret;
mod value;

pub use client::{
    AutoOffsetReset, ClientRole, ClusterClientConfig, IoSetting, IsolationLevel, Origin, SecurityProtocol, Setting,
};
pub use data_path::{Acks, FetchSettings, ProduceSettings};
pub use error::{ConfigError, Result};
pub use filter::{ConfigPropertyFilter, GroupFilter, TopicFilter, UseDefaultsFrom};
pub use flow::{FlowConfig, OffsetSyncsTopicLocation, Schedule, SkipReason};
pub use import::{ImportOptions, Imported, STRIMZI_MOUNT_ROOT};
pub use mm2::{GroupSettings, IgnoredKey, Mm2Config};
pub use policy::{PolicyKind, ReplicationPolicy};
