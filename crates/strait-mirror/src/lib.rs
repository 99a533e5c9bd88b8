//! Strait's mirror engine: MirrorMaker 2's source connector as a zero-copy batch pipeline.
//!
//! For each enabled flow of an `mm2.properties` ([`run_flow`]): discover the source topics the
//! flow replicates (MM2's policy and filters), create their remote topics on the target with
//! the same partition counts, and run one pipeline per partition: fetch raw batches, drop what
//! must not be forwarded (control batches, aborted transactions under read_committed, what lies
//! before the position), rewrite the producer fields and CRC, and produce to the same partition
//! of the remote topic as an idempotent producer with several batches in flight. Progress is
//! recorded only after the target acknowledged, and stored where MM2 keeps it
//! (`mm2-offsets.<source>.internal` on the target, see [`ProgressStore`]).
//!
//! Beside the data path each flow writes MM2's offset syncs ([`OffsetSyncs`]), checkpoints
//! (consumer group positions translated for the target, optionally committed into idle target
//! groups) and heartbeats, byte-compatible with MM2 so that `RemoteClusterUtils` reads them.

mod acls;
mod checkpoints;
mod clients;
mod configs;
mod error;
mod flow;
mod heartbeats;
mod internal;
mod lag;
mod metrics;
mod murmur2;
mod partition;
mod progress;
mod stats;
mod syncs;

pub use checkpoints::read_checkpoints;
pub use clients::client_config;
pub use error::MirrorError;
pub use flow::{run_flow, FlowHandle};
pub use lag::{read_flow_report, read_lag, FlowReport};
pub use metrics::PrometheusText;
pub use partition::OffsetReset;
pub use progress::{connect_offset_key, ProgressStore};
pub use stats::{FlowState, OffsetMapping, PartitionLag, Stats};
pub use syncs::OffsetSyncs;
