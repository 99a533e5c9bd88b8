//! The magic-2 record batch layout: where its header fields lie, its attribute bits, and the
//! compression codecs they name; it depends on nothing else in the crate.
//!
//! # Format
//!
//! ```text
//! offset  width  field                 in CRC
//!      0      8  baseOffset            no
//!      8      4  batchLength           no   (bytes after this field)
//!     12      4  partitionLeaderEpoch  no
//!     16      1  magic (2)             no
//!     17      4  crc (CRC-32C)         -
//!     21      2  attributes            yes
//!     23      4  lastOffsetDelta       yes
//!     27      8  baseTimestamp         yes
//!     35      8  maxTimestamp          yes
//!     43      8  producerId            yes
//!     51      2  producerEpoch         yes
//!     53      4  baseSequence          yes
//!     57      4  recordsCount          yes
//!     61      n  records               yes  (one compressed blob if a codec is set)
//! ```
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>

use std::fmt;

/// Bytes before a batch's `batchLength` payload: baseOffset and batchLength.
pub const LOG_OVERHEAD: usize = 12;
/// Size of the fixed batch header, baseOffset through recordsCount.
pub const RECORD_BATCH_OVERHEAD: usize = 61;

pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17;
/// The CRC covers everything from the attributes field to the end of the batch.
pub(crate) const CRC_START: usize = 21;

pub(crate) const ATTR_CODEC: i16 = 0x07;
pub(crate) const ATTR_LOG_APPEND_TIME: i16 = 0x08;
pub(crate) const ATTR_TRANSACTIONAL: i16 = 0x10;
pub(crate) const ATTR_CONTROL: i16 = 0x20;
pub(crate) const ATTR_DELETE_HORIZON: i16 = 0x40;

/// A batch's compression codec (attribute bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Uncompressed.
    #[default]
    None,
    /// A gzip stream.
    Gzip,
    /// Snappy in snappy-java's (xerial) stream framing.
    Snappy,
    /// The LZ4 frame format.
    Lz4,
    /// A Zstandard frame.
    Zstd,
}

impl Compression {
    /// The codec's attribute bits.
    pub(crate) fn bits(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Kafka's name for the codec, as in the `compression.type` topic config.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
