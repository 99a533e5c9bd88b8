//! Strait's mirror engine: MirrorMaker 2's source connector as a zero-copy batch data path.
//!
//! For each enabled flow of an `mm2.properties` ([`run_flow`]): discover the source topics the
//! flow replicates (MM2's policy and filters), create their remote topics on the target with
//! the same partition counts, and mirror every partition through the data path: a fetcher per
//! source broker fetches raw batches for all the partitions that broker leads (KIP-227
//! incremental fetch sessions), each partition's cursor drops what must not be forwarded
//! (control batches, aborted transactions under read_committed, what lies before the position),
//! and a producer per target broker sends one batch of each of many partitions per Produce
//! request, as an idempotent producer with the producer fields and CRC rewritten. Progress is
//! recorded only after the target acknowledged, and stored where MM2 keeps it
//! (`mm2-offsets.<source>.internal` on the target, see [`ProgressStore`]). Fetched but
//! unacknowledged bytes stay within one budget for the whole process ([`Budget`]).
//!
//! Beside the data path each flow writes MM2's offset syncs ([`OffsetSyncs`]), checkpoints
//! (consumer group positions translated for the target, optionally committed into idle target
//! groups) and heartbeats, byte-compatible with MM2 so that `RemoteClusterUtils` reads them.
//!
//! # Layout
//!
//! - `flow`: one flow's life: set-up, topic discovery, the periodic flush, shutdown.
//! - `group`: scale-out: the processes of one configuration share each target cluster's flows
//!   through Kafka's group protocol ([`Membership`]); `holdings`: a flow's share applied to its
//!   data path (acquired partitions started from stored progress, revoked ones drained first).
//! - `data_path`: the router placing each partition with the fetcher of its source leader and
//!   the producer of its target leader, again when a leader moves; it is set up from
//!   `data_path_config` and told by `event`; `route`: a partition on both clusters, as every
//!   part of the data path names it; `landed`: at a partition's
//!   start from stored progress (after a crash), the batches the target acknowledged past it
//!   are recognised, and mirroring resumes after them.
//! - `source`: `fetcher` (one per source broker: connection, fetch session, one Fetch in flight)
//!   and `cursor` (one per partition: position; fetched data into queue entries).
//! - `sink`: `producer` (one per target broker: multi-partition Produce requests), `queue` (one
//!   per partition: sequences, window, resends, what may be recorded) and `producer_id`.
//! - `outgoing`: a batch on its way, with the source offsets it covers; `budget`: the byte budget.
//! - `offset_map`: where every mirrored record landed, for exact translation at any lag.
//! - `progress` (keys placed by `murmur2`, Kafka's partitioner hash), `offset_syncs`,
//!   `checkpoints`, `heartbeats`: MM2's internal topics, over
//!   `internal_topics` (compacted-topic reads and writes).
//! - `discovery`: the topics a flow replicates, and their remote topics created or grown.
//! - `topic_config_sync` (over the rules of `topic_configs`), `acls`: topic config and ACL sync;
//!   `lag`: the lag read from the clusters; `cutover`: a group's positions translated from
//!   one cluster to the other, for `strait translate`, `strait cutover` and `strait failback`.
//! - `stats`: what a flow knows of itself (`stats/mod.rs`), rendered as Prometheus text
//!   (`stats/prometheus.rs`) and as the `/status` JSON (`stats/status.rs`); `metrics`: the
//!   Prometheus text format, histograms and windows; `client_config`: Kafka clients, set up and
//!   connected from `mm2.properties`; `error`: [`MirrorError`].

mod acls;
mod budget;
mod checkpoints;
mod client_config;
mod cutover;
mod data_path;
mod data_path_config;
mod discovery;
mod error;
mod event;
#[cfg(debug_assertions)]
mod faults;
mod flow;
mod group;
mod heartbeats;
mod holdings;
mod internal_topics;
mod lag;
mod landed;
mod metrics;
mod murmur2;
mod offset_map;
mod offset_syncs;
mod outgoing;
mod progress;
mod route;
mod sink;
mod source;
mod stats;
mod topic_config_sync;
mod topic_configs;

pub use budget::Budget;
pub use checkpoints::read_checkpoints;
pub use client_config::client_config;
pub use cutover::{read_group, read_group_back, GroupPartition, GroupReadiness};
pub use data_path_config::OffsetReset;
pub use error::{FencedProducer, MirrorError};
pub use flow::{run_flow, transactional_id, FlowHandle, Process};
pub use group::{describe_groups, Membership, Seat};
pub use lag::{read_flow_report, read_lag, FlowReport};
pub use metrics::{write_io_prometheus, PrometheusText};
pub use offset_map::{OffsetMap, Translation};
pub use offset_syncs::{OffsetMapping, OffsetSyncs};
pub use progress::{connect_offset_key, ProgressStore};
pub use stats::{FlowState, FlowSummary, PartitionLag, RecentError, Stats, TopicRefusal};
