//! Strait's sans-IO record batch codec: bytes in, bytes out, no I/O.
//!
//! - [`RecordBatches`] splits a fetched record set into zero-copy [`RecordBatch`] views and
//!   stops before a partial trailing batch.
//! - [`RecordBatch::rewrite`] prepares a batch for the target: a new header (base offset 0,
//!   the mirror's producer fields) and a CRC-32C over it and the untouched records section,
//!   which is passed on as the same buffer: nothing is decompressed or copied.
//! - [`AbortedTransactionFilter`] drops aborted transactional data under read_committed.
//! - [`decode_records`] (the slow path: decompression) and [`RecordBatchBuilder`] for records
//!   Strait writes itself.
//! - [`OffsetSync`], [`Checkpoint`], [`Heartbeat`]: MirrorMaker 2's internal records.
//!
//! Format: <https://kafka.apache.org/documentation/#recordbatch>.

mod batch;
mod compression;
mod error;
mod mm2;
mod records;
mod rewrite;
mod txn;
pub mod varint;

pub use batch::{
    Compression, ControlType, RecordBatch, RecordBatches, TimestampType, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
};
pub use error::WireError;
pub use mm2::{Checkpoint, Heartbeat, OffsetSync};
pub use records::{decode_records, rebuild_batch, Header, RebuiltBatch, Record, RecordBatchBuilder};
pub use rewrite::{ForwardBatch, ProducerState};
pub use txn::{AbortedTransactionFilter, BatchVerdict};

#[cfg(test)]
mod tests;
