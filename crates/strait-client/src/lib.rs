//! An async Kafka client on tokio, built for a mirror.
//!
//! [`BrokerConnection`] is one pipelined connection: requests are framed, tagged with a
//! correlation id and written by a dedicated task; responses are matched back by id. Versions are
//! negotiated per API from ApiVersions. [`KafkaClient`] adds bootstrap, metadata and a connection
//! per broker, plus the requests the mirror and its tools need. Message types come from the
//! `kafka-protocol` crate; Produce is encoded by hand ([`encode_produce_request`]) so that record
//! batches go from the fetch response to the socket without being copied.
//!
//! Connections may use TLS (rustls) and SASL PLAIN or SCRAM, configured with the Java client's
//! keys through [`Security::from_properties`].
//!
//! Protocol guide: <https://kafka.apache.org/protocol>.

mod acls;
mod client;
mod configs;
mod connection;
mod error;
mod groups;
mod jaas;
mod pem;
mod produce;
mod sasl;
mod security;
mod versions;

pub use acls::{
    TopicAcl, OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PATTERN_LITERAL, PERMISSION_ALLOW, PERMISSION_DENY,
};
pub use client::{
    aborted_transactions, submit_produce, topic_name, Broker, ClientConfig, ClusterMetadata, FetchedPartition,
    KafkaClient, NewTopic, OffsetSpec, PartitionMetadata, PendingProduce, ProducerIdAndEpoch, TopicMetadata,
};
pub use configs::{AlterConfigOp, ConfigEntry, ConfigSource};
pub use connection::{decode_response, BrokerConnection, ConnectionConfig, PendingResponse};
pub use error::{AuthenticationFailure, Error, KafkaCode};
pub use groups::{CommittedOffset, GroupDescription, ListedGroup};
pub use kafka_protocol;
pub use produce::{encode_produce_request, PartitionRecords, TopicRecords};
pub use security::{SaslConfig, SaslMechanism, Secret, Security, TlsConfig};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
