/// What is wrong with a record batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The batch header is shorter than Kafka's minimum.
    #[error("batch at offset {base_offset} declares batchLength {batch_length}, below the minimum of 49")]
    BadBatchLength {
        /// The batch's base offset.
        base_offset: i64,
        /// The declared length.
        batch_length: i32,
    },
    /// A legacy message set (magic 0 or 1) or an unknown magic.
    #[error("batch at offset {base_offset} has magic {magic}; only magic 2 record batches are supported (legacy v0/v1 message sets must be rewritten by the source cluster first)")]
    UnsupportedMagic {
        /// The batch's base offset.
        base_offset: i64,
        /// The magic byte.
        magic: i8,
    },
    /// Attributes name a codec Kafka does not define.
    #[error("batch at offset {base_offset} names compression codec {codec}, which Kafka does not define")]
    UnknownCompression {
        /// The batch's base offset.
        base_offset: i64,
        /// The codec bits.
        codec: i16,
    },
    /// The stored CRC does not match the batch contents.
    #[error("batch at offset {base_offset} is corrupt: CRC-32C is {actual:#010x}, the header says {expected:#010x}")]
    CrcMismatch {
        /// The batch's base offset.
        base_offset: i64,
        /// The CRC in the header.
        expected: u32,
        /// The CRC of the contents.
        actual: u32,
    },
    /// The records inside a batch do not parse.
    #[error("batch at offset {base_offset}: record {index} is malformed: {reason}")]
    MalformedRecord {
        /// The batch's base offset.
        base_offset: i64,
        /// The record's position in the batch.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// Decompressing or compressing the records failed.
    #[error("batch at offset {base_offset}: {codec} {operation} failed: {reason}")]
    Codec {
        /// The batch's base offset.
        base_offset: i64,
        /// The codec name.
        codec: &'static str,
        /// `decompression` or `compression`.
        operation: &'static str,
        /// The codec's message.
        reason: String,
    },
    /// The batch cannot take the requested path (e.g. forwarding a control batch).
    #[error("{0}")]
    Unsupported(String),
}

impl WireError {
    /// An [`WireError::Unsupported`] with the given explanation.
    pub fn unsupported(message: impl Into<String>) -> Self {
        WireError::Unsupported(message.into())
    }
}
