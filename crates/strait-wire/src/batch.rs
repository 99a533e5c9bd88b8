//! Zero-copy views of magic-2 record batches and the splitting of fetched record sets.

use bytes::Bytes;

use crate::WireError;

/// Size of the fixed batch header (baseOffset through recordsCount).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Bytes before `batchLength`'s payload: baseOffset and batchLength.
pub const LOG_OVERHEAD: usize = 12;
/// Where the CRC-covered bytes start (the attributes field).
pub(crate) const CRC_START: usize = 21;

pub(crate) const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
pub(crate) const ATTR_TRANSACTIONAL: i16 = 0x10;
pub(crate) const ATTR_CONTROL: i16 = 0x20;
pub(crate) const ATTR_DELETE_HORIZON: i16 = 0x40;

/// A batch's compression codec (attribute bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Uncompressed.
    None,
    /// gzip.
    Gzip,
    /// Snappy in xerial framing.
    Snappy,
    /// LZ4 frame.
    Lz4,
    /// Zstandard frame.
    Zstd,
}

impl Compression {
    /// The codec's attribute bits.
    pub fn bits(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Kafka's name for the codec (`compression.type`).
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

/// How record timestamps are to be read (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker on append; every record reads as the batch's maxTimestamp.
    LogAppendTime,
}

/// The kind of a control batch's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlType {
    /// A transaction abort marker.
    Abort,
    /// A transaction commit marker.
    Commit,
    /// Any other control type (KRaft metadata records, future types).
    Other(i16),
}

/// One complete magic-2 record batch, as a view over the bytes it arrived in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    bytes: Bytes,
}

macro_rules! field {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $at:expr) => {
        $(#[$doc])*
        pub fn $name(&self) -> $ty {
            <$ty>::from_be_bytes(self.bytes[$at..$at + std::mem::size_of::<$ty>()].try_into().expect("header is 61 bytes"))
        }
    };
}

impl RecordBatch {
    /// Views `bytes` as one batch: it must hold exactly one whole magic-2 batch.
    pub fn new(bytes: Bytes) -> Result<RecordBatch, WireError> {
        let mut batches = RecordBatches::new(bytes.clone());
        match batches.next() {
            Some(Ok(batch)) if batch.size() == bytes.len() => Ok(batch),
            Some(Err(e)) => Err(e),
            _ => Err(WireError::unsupported(format!(
                "{} bytes are not exactly one record batch",
                bytes.len()
            ))),
        }
    }

    field!(/// Offset of the first record.
        base_offset, i64, 0);
    field!(/// Bytes after the batchLength field.
        batch_length, i32, 8);
    field!(/// Leader epoch stamped by the source leader.
        partition_leader_epoch, i32, 12);
    field!(/// The format version (2).
        magic, i8, 16);
    field!(/// CRC-32C of bytes 21.. of the batch.
        crc, u32, 17);
    field!(/// Attribute bits (codec, timestamp type, transactional, control, delete horizon).
        attributes, i16, 21);
    field!(/// Last record's offset minus the base offset.
        last_offset_delta, i32, 23);
    field!(/// Base for record timestamp deltas (the delete horizon if that bit is set).
        base_timestamp, i64, 27);
    field!(/// The largest record timestamp (or the append time).
        max_timestamp, i64, 35);
    field!(/// The producer id, -1 if none.
        producer_id, i64, 43);
    field!(/// The producer epoch, -1 if none.
        producer_epoch, i16, 51);
    field!(/// The first record's sequence number, -1 if none.
        base_sequence, i32, 53);
    field!(/// Number of records actually present.
        records_count, i32, 57);

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.base_offset() + i64::from(self.last_offset_delta())
    }

    /// Offset after the last record: where the next fetch continues.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    /// Total size in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// The whole batch.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The records section after the 61-byte header (compressed if the batch is).
    pub fn records_payload(&self) -> Bytes {
        self.bytes.slice(RECORD_BATCH_OVERHEAD..)
    }

    /// The compression codec.
    pub fn compression(&self) -> Result<Compression, WireError> {
        match self.attributes() & 0x07 {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            codec => Err(WireError::UnknownCompression {
                base_offset: self.base_offset(),
                codec,
            }),
        }
    }

    /// The timestamp type.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & ATTR_TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes() & ATTR_TRANSACTIONAL != 0
    }

    /// Whether the batch holds a control record (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes() & ATTR_CONTROL != 0
    }

    /// Whether baseTimestamp holds a delete horizon (set by the log cleaner).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & ATTR_DELETE_HORIZON != 0
    }

    /// Whether the log cleaner removed records from the batch (or emptied it), so that its
    /// offsets are no longer consecutive: a target broker refuses such a batch as it is.
    pub fn is_compacted(&self) -> bool {
        self.records_count() == 0 || i64::from(self.records_count()) != i64::from(self.last_offset_delta()) + 1
    }

    /// Recomputes the CRC and compares it with the header's.
    pub fn verify_crc(&self) -> Result<(), WireError> {
        let actual = crc32c::crc32c(&self.bytes[CRC_START..]);
        if actual == self.crc() {
            Ok(())
        } else {
            Err(WireError::CrcMismatch {
                base_offset: self.base_offset(),
                expected: self.crc(),
                actual,
            })
        }
    }

    /// For a control batch, the type of its (first) control record; `None` for data batches or
    /// a control record too short to read. Control batches are never compressed.
    pub fn control_type(&self) -> Option<ControlType> {
        if !self.is_control() || self.records_count() < 1 {
            return None;
        }
        let record = crate::records::decode_uncompressed(self, &self.bytes[RECORD_BATCH_OVERHEAD..])
            .ok()?
            .into_iter()
            .next()?;
        let key = record.key?;
        if key.len() < 4 || i16::from_be_bytes([key[0], key[1]]) < 0 {
            return None;
        }
        Some(match i16::from_be_bytes([key[2], key[3]]) {
            0 => ControlType::Abort,
            1 => ControlType::Commit,
            other => ControlType::Other(other),
        })
    }
}

/// The complete batches of a fetched record set, in order, without copying.
///
/// A fetch response may end in a partial batch (cut at the byte limit); iteration stops
/// before it and [`RecordBatches::partial_tail`] tells how many bytes were left.
#[derive(Debug, Clone)]
pub struct RecordBatches {
    rest: Bytes,
    failed: bool,
}

impl RecordBatches {
    /// Splits `records` (the raw records field of a fetch response).
    pub fn new(records: Bytes) -> RecordBatches {
        RecordBatches {
            rest: records,
            failed: false,
        }
    }

    /// Bytes after the last complete batch (a partial batch), once iteration has ended.
    pub fn partial_tail(&self) -> usize {
        self.rest.len()
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.len() < LOG_OVERHEAD {
            return None;
        }
        let base_offset = i64::from_be_bytes(self.rest[..8].try_into().expect("8 bytes"));
        let batch_length = i32::from_be_bytes(self.rest[8..12].try_into().expect("4 bytes"));
        // Magic sits at byte 16 in every format; check it first so that a legacy message set
        // (whose own minimum size is smaller) is named as such.
        if self.rest.len() > 16 && self.rest[16] != 2 {
            self.failed = true;
            return Some(Err(WireError::UnsupportedMagic {
                base_offset,
                magic: self.rest[16] as i8,
            }));
        }
        if batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
            self.failed = true;
            return Some(Err(WireError::BadBatchLength {
                base_offset,
                batch_length,
            }));
        }
        let size = LOG_OVERHEAD + batch_length as usize;
        if self.rest.len() < size {
            return None; // A partial trailing batch.
        }
        Some(Ok(RecordBatch {
            bytes: self.rest.split_to(size),
        }))
    }
}
