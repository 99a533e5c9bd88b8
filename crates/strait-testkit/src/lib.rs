//! Real Apache Kafka on demand, for tests, the demo and the benchmarks.
//!
//! [`KafkaDist`] fetches the Kafka jars pinned in `kafka/pom.xml` from Maven Central into a
//! cache folder, once. [`KafkaCluster`] starts a single-node KRaft cluster (one JVM acting as
//! broker and controller) from those jars on free loopback ports in a temporary folder, waits
//! until it answers, and stops it again. With [`ClusterOptions::secure`] it also opens
//! `SASL_SSL`, `SSL` and `SASL_PLAINTEXT` listeners with certificates made at start
//! ([`SecureListeners`]).
//!
//! No JVM outlives the process that started it: every JVM runs under a small `bash` guard that
//! kills it as soon as its standard input closes, which the kernel does when our process ends
//! for any reason (normal exit, panic, Ctrl-C or SIGKILL). Data folders are removed the same way.
//!
//! # Layout
//!
//! - `dist`: the Kafka jars (and reference libraries, [`maven_jars`]) fetched once with Maven; `cluster`: single-node KRaft clusters from
//!   them; `guard`: child processes that cannot outlive us.
//! - `browser`: headless Chromium through ChromeDriver, for the status page's test;
//!   `debian`: programs from Debian packages (Prometheus, Chromium), installed on first use;
//!   `fault`: the fault-injection proxy; `sockets`: a process's TCP connections from `/proc`;
//!   `oidc`: a small OAuth identity provider (token and JWKS endpoints) for OAUTHBEARER
//!   listeners ([`ClusterOptions::oauth`]); `error`: the crate's error type.
//!
//! The clusters are synchronous (std only) so that one pair of clusters can be shared by tests
//! that each run on their own async runtime. [`FaultProxy`], a TCP proxy that adds latency or
//! injects faults between clients and a cluster, runs on the caller's tokio runtime.
//! [`tcp_connections`] counts the TCP connections of a process, as the operating system sees
//! them.

mod browser;
mod cluster;
mod debian;
mod dist;
mod error;
mod fault;
mod guard;
mod oidc;
mod sockets;

pub use browser::Browser;
pub use cluster::{free_port, ClusterOptions, KafkaBroker, KafkaCluster, OAuthOptions, SecureListeners};
pub use debian::debian_program;
pub use dist::{kafka_version, maven_jars, KafkaDist, KAFKA_JVM_PERFORMANCE_OPTIONS, MIRROR_MAKER_JVM_OPTIONS};
pub use error::Error;
pub use fault::FaultProxy;
pub use guard::{Guarded, ScratchDir};
pub use oidc::OidcServer;
pub use sockets::{tcp_connections, tcp_sockets_to};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
