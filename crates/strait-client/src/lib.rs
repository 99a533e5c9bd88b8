//! An async Kafka client on tokio, built for a mirror.
//!
//! # Layout
//!
//! - `connection`: [`BrokerConnection`], one pipelined connection: requests are framed, tagged
//!   with a correlation id and written by a dedicated task; responses are matched back by id.
//!   Versions are negotiated per API from ApiVersions; SASL sessions are renewed before the
//!   broker ends them (KIP-368). TLS (rustls) and SASL PLAIN, SCRAM, OAUTHBEARER or AWS_MSK_IAM
//!   (`security`, `sasl`, `jaas`, `pem`, `keystore` for JKS and PKCS12 stores, `oauth` for
//!   tokens from an OAuth token endpoint, `aws` for Amazon MSK's IAM payloads and AWS
//!   credentials; `endpoint` for their HTTP requests; `tls` for the `ssl.*` keys; `settings`
//!   for what they all share: [`Secret`] and reading a key), configured with the Java client's
//!   keys through [`Security::from_properties`].
//! - `client`: [`KafkaClient`], bootstrap, metadata and a shared connection per broker, plus the
//!   requests the mirror and its tools need (topics, offsets, producer ids; `configs`, `acls`,
//!   `groups` for the admin requests).
//! - `membership`: [`GroupMembership`], a member's side of Kafka's classic group protocol
//!   (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) on a connection of its own to the coordinator.
//! - `fetch`: the Fetch request built and its answer unwrapped, with KIP-227 fetch sessions
//!   ([`FetchSession`]); no I/O.
//! - `produce`: the Produce request encoded by hand ([`encode_produce_request`]) so that record
//!   batches go from the fetch response to the socket without being copied, for many partitions
//!   per request, and its answer unwrapped per partition ([`produced_partitions`]).
//! - `transactions`: a transactional producer's coordinator requests (InitProducerId with a
//!   `transactional.id`, AddPartitionsToTxn, EndTxn) and the cluster's transaction version.
//! - `io`: the byte path under a connection, [`IoPath`]: tokio's sockets (epoll), or the
//!   process's io_uring (`strait-uring`) with zero-copy sends, chosen by `strait.io`.
//! - `backoff`: [`Backoff`], exponential with jitter, for every retry; `versions`: the versions
//!   of each API Strait speaks.
//! - `error`: [`Error`], with Kafka's error codes by name ([`KafkaCode`]).
//!
//! Message types come from the `kafka-protocol` crate. Protocol guide:
//! <https://kafka.apache.org/protocol>.

mod acls;
mod aws;
mod backoff;
mod client;
mod configs;
mod connection;
mod endpoint;
mod error;
mod fetch;
mod groups;
mod io;
mod jaas;
mod keystore;
mod membership;
mod oauth;
mod pem;
mod produce;
mod sasl;
mod security;
mod settings;
mod tls;
mod transactions;
mod versions;

pub use acls::{
    TopicAcl, OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PATTERN_LITERAL, PERMISSION_ALLOW, PERMISSION_DENY,
};
pub use aws::MskIam;
pub use backoff::Backoff;
pub use client::{
    aborted_transactions, topic_name, Broker, ClientConfig, ClusterMetadata, KafkaClient, NewTopic, OffsetSpec,
    PartitionMetadata, ProducerIdAndEpoch, TopicId, TopicMetadata,
};
pub use configs::{AlterConfigOp, ConfigEntry, ConfigSource};
pub use connection::{decode_response, BrokerConnection, ConnectionConfig, ConnectionCounter, PendingResponse};
pub use error::{AuthenticationFailure, Error, KafkaCode};
pub use fetch::{FetchKind, FetchParams, FetchPosition, FetchSession, FetchedPartition, LeaderHint, PartitionKey};
pub use groups::{CommittedOffset, GroupDescription, GroupMember, ListedGroup};
pub use io::{IoPath, AUTO_USES_IO_URING};
pub use kafka_protocol;
pub use membership::{Generation, GroupMembership, JoinedMember, MemberConfig};
pub use oauth::OAuthBearer;
pub use produce::{
    encode_produce_request, is_sequence_error, is_too_large, produced_partitions, submit_produce, PartitionRecords,
    PendingProduce, ProducedPartition, TopicRecords,
};
pub use security::{SaslConfig, SaslCredentials, SaslMechanism, Security};
pub use settings::Secret;
pub use strait_uring::{Ring, RingStats, UNAVAILABLE_SWITCH as IO_URING_UNAVAILABLE_SWITCH};
pub use tls::TlsConfig;
pub use transactions::TRANSACTION_VERSION_FEATURE;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
