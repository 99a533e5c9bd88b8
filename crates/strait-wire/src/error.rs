//! The crate's one error type.

use crate::Compression;

/// Why bytes are not a usable record batch, or why a batch cannot take the path asked of it.
///
/// Variants name the batch by its base offset (as read from the bytes) so that a log line
/// points at the data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// `batchLength` is below the 49 bytes every magic-2 header has after that field.
    #[error("batch at offset {base_offset} declares batchLength {batch_length}, below the minimum of 49")]
    BatchLengthTooSmall {
        /// The batch's base offset.
        base_offset: i64,
        /// The declared length.
        batch_length: i32,
    },
    /// Not a magic-2 record batch: a legacy v0/v1 message set, or a format from the future.
    #[error(
        "batch at offset {base_offset} has magic {magic}; only magic-2 record batches are supported, \
         not legacy v0/v1 message sets"
    )]
    UnsupportedMagic {
        /// The batch's base offset.
        base_offset: i64,
        /// The magic byte.
        magic: i8,
    },
    /// Fewer bytes than the batch declares (see [`RecordBatch::new`](crate::RecordBatch::new)).
    #[error("record batch is incomplete: {available} bytes of {needed}")]
    IncompleteBatch {
        /// The bytes given.
        available: usize,
        /// The bytes the batch needs (a whole header when its length is not readable).
        needed: usize,
    },
    /// More bytes than one batch (see [`RecordBatch::new`](crate::RecordBatch::new)).
    #[error("batch at offset {base_offset} is followed by {trailing} more bytes; expected exactly one batch")]
    TrailingBytes {
        /// The batch's base offset.
        base_offset: i64,
        /// The bytes after it.
        trailing: usize,
    },
    /// The attributes name codec 5, 6 or 7, which Kafka does not define.
    #[error("batch at offset {base_offset} names compression codec {codec}, which Kafka does not define")]
    UnknownCompression {
        /// The batch's base offset.
        base_offset: i64,
        /// The codec bits (attributes & 0x07).
        codec: i16,
    },
    /// The header's CRC-32C does not match the bytes it covers.
    #[error(
        "batch at offset {base_offset} is corrupt: its CRC-32C is {actual:#010x}, the header says {expected:#010x}"
    )]
    CrcMismatch {
        /// The batch's base offset.
        base_offset: i64,
        /// The CRC in the header.
        expected: u32,
        /// The CRC of the bytes.
        actual: u32,
    },
    /// The header's offsets or counts are impossible for a batch a broker serves (the CRC does
    /// not cover `baseOffset`, so a damaged one is caught only here).
    #[error("batch at offset {base_offset} is corrupt: {reason}")]
    ImpossibleHeader {
        /// The batch's base offset.
        base_offset: i64,
        /// Which field is impossible, and why.
        reason: &'static str,
    },
    /// `recordsCount` is negative.
    #[error("batch at offset {base_offset} declares a negative recordsCount {records_count}")]
    NegativeRecordCount {
        /// The batch's base offset.
        base_offset: i64,
        /// The declared count.
        records_count: i32,
    },
    /// A record inside the (decompressed) records section does not parse.
    #[error("batch at offset {base_offset}: record {index} is malformed: {reason}")]
    MalformedRecord {
        /// The batch's base offset.
        base_offset: i64,
        /// The record's position in the batch.
        index: usize,
        /// Which field is wrong.
        reason: &'static str,
    },
    /// Bytes are left in the records section after the declared number of records.
    #[error("batch at offset {base_offset}: {trailing} bytes follow its {records_count} declared records")]
    TrailingRecordBytes {
        /// The batch's base offset.
        base_offset: i64,
        /// The declared count.
        records_count: i32,
        /// The bytes left over.
        trailing: usize,
    },
    /// A control batch's record key is not a control record key.
    #[error("control batch at offset {base_offset} is malformed: {reason}")]
    MalformedControlRecord {
        /// The batch's base offset.
        base_offset: i64,
        /// What is wrong with the key.
        reason: &'static str,
    },
    /// The records section does not decompress with the batch's codec.
    #[error("batch at offset {base_offset}: {codec} decompression failed: {reason}")]
    Decompression {
        /// The batch's base offset.
        base_offset: i64,
        /// The batch's codec.
        codec: Compression,
        /// The codec's message.
        reason: String,
    },
    /// A control batch cannot be forwarded or rebuilt: brokers refuse them from clients.
    #[error("batch at offset {base_offset} is a control batch; clients may not produce control records")]
    ControlBatch {
        /// The batch's base offset.
        base_offset: i64,
    },
    /// A compacted or empty batch cannot be forwarded as it is: brokers refuse a batch whose
    /// record count is 0 or differs from `lastOffsetDelta + 1`.
    #[error(
        "batch at offset {base_offset} holds {records_count} records for lastOffsetDelta {last_offset_delta} \
         (compacted or empty); rebuild it or skip it"
    )]
    NotContiguous {
        /// The batch's base offset.
        base_offset: i64,
        /// The records present.
        records_count: i32,
        /// The offset span the batch covers, minus one.
        last_offset_delta: i32,
    },
    /// A record of a MirrorMaker 2 internal topic does not parse.
    #[error("MirrorMaker 2 {record} is malformed: {reason}")]
    MalformedInternalRecord {
        /// Which key or value.
        record: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}
