//! Strait's sans-IO record batch codec: bytes in, bytes out, no I/O and no async.
//!
//! A mirror fetches record batches from a source cluster and produces them to a target. Most
//! batches can be forwarded without decompressing them: only the 61-byte header changes, and
//! the records section travels on as the buffer it arrived in. This crate is that fast path,
//! and the slow path for batches a target broker would refuse as they are.
//!
//! - [`RecordBatches`] splits a fetched record set into zero-copy [`RecordBatch`] views and
//!   stops before a partial trailing batch.
//! - [`RecordBatch::rewrite`] prepares a batch for the target: a new header (base offset 0, the
//!   mirror's producer fields, transactional and delete-horizon bits cleared) with a CRC-32C over
//!   it and the untouched records section, handed out as two [`bytes::Bytes`] for a vectored
//!   write ([`ForwardBatch`]).
//! - [`AbortedTransactionFilter`] drops aborted transactional data and markers under
//!   read_committed, as Kafka's Java consumer does.
//! - [`decode_records`] and [`rebuild_batch`] are the slow path (decompression, for compacted
//!   batches and positions inside a batch); [`RecordBatchBuilder`] builds batches of records
//!   Strait writes itself.
//! - [`OffsetSync`], [`Checkpoint`] and [`Heartbeat`] are MirrorMaker 2's internal records.
//!
//! # Layout
//!
//! - `layout`: the batch header's field offsets, attribute bits and codecs.
//! - `batch`: zero-copy batch views and the splitting of fetched record sets; `rewrite`: the
//!   forwarding rewrite (new header and CRC, untouched records section).
//! - `txn`: read_committed filtering; `records`: decoded records (the slow path); `builder`:
//!   building and rebuilding batches; `compression`: the four codecs in Kafka's byte formats;
//!   `varint`: the record format's zigzag varints.
//! - `mm2`: MirrorMaker 2's internal records; `error`: [`WireError`]; `testing`: batches for the
//!   unit tests, stored as a broker would.
//!
//! Only magic-2 record batches are supported; legacy v0/v1 message sets are reported as
//! [`WireError::UnsupportedMagic`]. Nothing here panics on malformed input.
//!
//! # References
//! - Record batch format: <https://kafka.apache.org/documentation/#recordbatch>

mod batch;
mod builder;
mod compression;
mod error;
mod layout;
mod mm2;
mod records;
mod rewrite;
mod txn;
pub mod varint;

#[cfg(test)]
mod testing;

pub use batch::{ControlType, RecordBatch, RecordBatches, TimestampType};
pub use builder::{rebuild_batch, split_batch, RebuiltBatch, RecordBatchBuilder};
pub use error::WireError;
pub use layout::{Compression, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
pub use mm2::{Checkpoint, Heartbeat, OffsetSync};
pub use records::{decode_records, Header, Record};
pub use rewrite::{ForwardBatch, ProducerState};
pub use txn::{AbortedTransactionFilter, BatchVerdict};
