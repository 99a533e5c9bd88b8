//! Zero-copy views of magic-2 record batches, and the splitting of fetched record sets (the
//! layout is in `layout`).
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>

use std::iter::FusedIterator;

use bytes::Bytes;

use crate::layout::{
    ATTR_CODEC, ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, CRC_AT, CRC_START,
    LOG_OVERHEAD, MAGIC_AT, RECORD_BATCH_OVERHEAD,
};
use crate::{decode_records, Compression, WireError};

const MIN_BATCH_LENGTH: i32 = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;

/// How record timestamps are to be read (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// Set by the producer: each record's time is baseTimestamp + its delta.
    CreateTime,
    /// Set by the broker on append: every record reads as the batch's maxTimestamp.
    LogAppendTime,
}

/// The type of a control batch's record (the second i16 of its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlType {
    /// A transaction abort marker (type 0).
    Abort,
    /// A transaction commit marker (type 1).
    Commit,
    /// Any other type: KRaft metadata-log records (2–6) or a future type, to be ignored.
    Other(i16),
}

/// One complete magic-2 record batch, as a view over the buffer it arrived in.
///
/// Only [`RecordBatch::new`] and [`RecordBatches`] make one, and both check that the bytes are
/// exactly one batch with a whole header and magic 2; the accessors rely on that. Nothing else
/// (CRC, codec, records) is checked until asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    bytes: Bytes,
}

impl RecordBatch {
    /// Views `bytes` as one batch; they must hold exactly one whole magic-2 batch.
    pub fn new(bytes: Bytes) -> Result<RecordBatch, WireError> {
        let available = bytes.len();
        let mut batches = RecordBatches::new(bytes);
        match batches.next() {
            Some(Ok(batch)) if batches.rest.is_empty() => Ok(batch),
            Some(Ok(batch)) => Err(WireError::TrailingBytes {
                base_offset: batch.base_offset(),
                trailing: batches.rest.len(),
            }),
            Some(Err(error)) => Err(error),
            // The splitter left the bytes as they were; a readable length is at least 49 here.
            None => Err(WireError::IncompleteBatch {
                available,
                needed: batches
                    .rest
                    .get(8..LOG_OVERHEAD)
                    .map_or(RECORD_BATCH_OVERHEAD, |length| {
                        LOG_OVERHEAD + i32::from_be_bytes(length.try_into().expect("4 bytes")) as usize
                    }),
            }),
        }
    }

    fn field<const N: usize>(&self, at: usize) -> [u8; N] {
        self.bytes[at..at + N]
            .try_into()
            .expect("a RecordBatch holds at least the 61-byte header")
    }

    /// Offset of the first record (the source offset of a fetched batch; 0 from producers).
    pub fn base_offset(&self) -> i64 {
        i64::from_be_bytes(self.field(0))
    }

    /// Bytes after the batchLength field: the batch is `12 + batch_length` bytes.
    pub fn batch_length(&self) -> i32 {
        i32::from_be_bytes(self.field(8))
    }

    /// Leader epoch stamped by the leader that appended the batch (-1 from producers).
    pub fn partition_leader_epoch(&self) -> i32 {
        i32::from_be_bytes(self.field(12))
    }

    /// The format version: always 2 for a `RecordBatch`.
    pub fn magic(&self) -> i8 {
        i8::from_be_bytes(self.field(MAGIC_AT))
    }

    /// The header's CRC-32C of bytes 21.. of the batch.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(self.field(CRC_AT))
    }

    /// Attribute bits: codec, timestamp type, transactional, control, delete horizon.
    pub fn attributes(&self) -> i16 {
        i16::from_be_bytes(self.field(21))
    }

    /// Last record's offset minus the base offset (also the sequence span).
    pub fn last_offset_delta(&self) -> i32 {
        i32::from_be_bytes(self.field(23))
    }

    /// The base that record timestamp deltas are relative to: the first record's timestamp,
    /// or the delete horizon when [`has_delete_horizon`](Self::has_delete_horizon).
    pub fn base_timestamp(&self) -> i64 {
        i64::from_be_bytes(self.field(27))
    }

    /// The largest record timestamp (CreateTime) or the broker's append time (LogAppendTime).
    pub fn max_timestamp(&self) -> i64 {
        i64::from_be_bytes(self.field(35))
    }

    /// The first record's timestamp as a consumer sees it, from the header alone: the broker's
    /// append time under LogAppendTime; otherwise the base timestamp, or, when that holds the
    /// delete horizon, the largest timestamp (the nearest the header tells).
    pub fn first_timestamp(&self) -> i64 {
        if self.timestamp_type() == TimestampType::LogAppendTime || self.has_delete_horizon() {
            self.max_timestamp()
        } else {
            self.base_timestamp()
        }
    }

    /// The producer id, -1 if none.
    pub fn producer_id(&self) -> i64 {
        i64::from_be_bytes(self.field(43))
    }

    /// The producer epoch, -1 if none.
    pub fn producer_epoch(&self) -> i16 {
        i16::from_be_bytes(self.field(51))
    }

    /// The first record's sequence number, -1 if none.
    pub fn base_sequence(&self) -> i32 {
        i32::from_be_bytes(self.field(53))
    }

    /// Number of records actually present (fewer than the offset span once compacted).
    pub fn records_count(&self) -> i32 {
        i32::from_be_bytes(self.field(57))
    }

    /// Offset of the last record the batch covers (wrapping, so a corrupt header cannot panic).
    pub fn last_offset(&self) -> i64 {
        self.base_offset().wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// Offset after the batch: where the next fetch continues.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Total size in bytes, header included.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// The whole batch.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The records section after the 61-byte header (compressed if the batch is), sharing the
    /// batch's buffer.
    pub fn records_payload(&self) -> Bytes {
        self.bytes.slice(RECORD_BATCH_OVERHEAD..)
    }

    /// The compression codec; codecs 5–7 are an error.
    pub fn compression(&self) -> Result<Compression, WireError> {
        match self.attributes() & ATTR_CODEC {
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
        if self.attributes() & ATTR_LOG_APPEND_TIME != 0 {
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

    /// Whether baseTimestamp holds a delete horizon (KIP-534, set by the log cleaner).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & ATTR_DELETE_HORIZON != 0
    }

    /// Whether the log cleaner removed records (so the offsets have gaps) or emptied the batch:
    /// either way a target broker refuses the batch as it is.
    pub fn is_compacted(&self) -> bool {
        let count = self.records_count();
        count == 0 || i64::from(count) != i64::from(self.last_offset_delta()) + 1
    }

    /// Recomputes the CRC-32C and compares it with the header's.
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

    /// Checks what the CRC does not cover or cannot make sense of: a base offset that is not
    /// negative, an offset span that is neither negative nor overflows, and no more records than
    /// the span holds (compaction only removes records).
    pub fn check_header(&self) -> Result<(), WireError> {
        let impossible = |reason| {
            Err(WireError::ImpossibleHeader {
                base_offset: self.base_offset(),
                reason,
            })
        };
        if self.base_offset() < 0 {
            return impossible("a negative baseOffset");
        }
        if self.last_offset_delta() < 0 {
            return impossible("a negative lastOffsetDelta");
        }
        if self
            .base_offset()
            .checked_add(i64::from(self.last_offset_delta()) + 1)
            .is_none()
        {
            return impossible("its last offset overflows");
        }
        if self.records_count() < 0 || i64::from(self.records_count()) > i64::from(self.last_offset_delta()) + 1 {
            return impossible("recordsCount is negative or above lastOffsetDelta + 1");
        }
        Ok(())
    }

    /// For a control batch, the type read from its first record's key; `None` for a data batch
    /// or a control batch the cleaner emptied.
    ///
    /// Lenient as Kafka's consumer is: any key version ≥ 0 is read, bytes after the first four
    /// of the key are ignored, and unknown types come back as [`ControlType::Other`]. A null or
    /// short key, or a negative key version, is an error.
    pub fn control_type(&self) -> Result<Option<ControlType>, WireError> {
        if !self.is_control() {
            return Ok(None);
        }
        let Some(record) = decode_records(self)?.into_iter().next() else {
            return Ok(None);
        };
        let malformed = |reason| WireError::MalformedControlRecord {
            base_offset: self.base_offset(),
            reason,
        };
        let key = record.key.ok_or_else(|| malformed("its record key is null"))?;
        let (Some(version), Some(kind)) = (key.get(0..2), key.get(2..4)) else {
            return Err(malformed("its record key is shorter than 4 bytes"));
        };
        if i16::from_be_bytes([version[0], version[1]]) < 0 {
            return Err(malformed("its record key has a negative version"));
        }
        Ok(Some(match i16::from_be_bytes([kind[0], kind[1]]) {
            0 => ControlType::Abort,
            1 => ControlType::Commit,
            other => ControlType::Other(other),
        }))
    }
}

/// The complete batches of a fetched record set, in order, each a slice of the same buffer.
///
/// A fetch response may end in a partial batch, cut at the byte limit: iteration stops before
/// it, and [`partial_tail`](Self::partial_tail) says how many bytes that was (the caller fetches
/// them again from [`RecordBatch::next_offset`] of the last batch). A malformed batch yields one
/// error and ends the iteration, since nothing after it can be framed.
#[derive(Debug, Clone)]
pub struct RecordBatches {
    rest: Bytes,
}

impl RecordBatches {
    /// Splits `records`, the raw records field of a fetch response.
    pub fn new(records: Bytes) -> RecordBatches {
        RecordBatches { rest: records }
    }

    /// Bytes not yet yielded: once iteration has returned `None`, the size of the partial
    /// trailing batch that was dropped (0 if none, and 0 after an error).
    pub fn partial_tail(&self) -> usize {
        self.rest.len()
    }

    fn fail(&mut self, error: WireError) -> Option<Result<RecordBatch, WireError>> {
        self.rest = Bytes::new();
        Some(Err(error))
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (Some(offset), Some(length)) = (self.rest.get(..8), self.rest.get(8..LOG_OVERHEAD)) else {
            return None; // Not even a length: a partial tail.
        };
        let base_offset = i64::from_be_bytes(offset.try_into().expect("8 bytes"));
        let batch_length = i32::from_be_bytes(length.try_into().expect("4 bytes"));
        // Magic sits at byte 16 in every format, so check it first: a legacy message set is then
        // named as such, not by its length (which may well be below 49).
        if let Some(&magic) = self.rest.get(MAGIC_AT) {
            if magic != 2 {
                return self.fail(WireError::UnsupportedMagic {
                    base_offset,
                    magic: magic as i8,
                });
            }
        }
        if batch_length < MIN_BATCH_LENGTH {
            return self.fail(WireError::BatchLengthTooSmall {
                base_offset,
                batch_length,
            });
        }
        let size = LOG_OVERHEAD + batch_length as usize; // batch_length >= 49 here.
        if self.rest.len() < size {
            return None;
        }
        Some(Ok(RecordBatch {
            bytes: self.rest.split_to(size),
        }))
    }
}

// Once `next` returns `None` the state no longer changes.
impl FusedIterator for RecordBatches {}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};

    use super::*;
    use crate::testing::{hex, marker, patch, sample, stored};
    use crate::{Header, RecordBatchBuilder};

    /// CRC-32C bit by bit (reflected Castagnoli polynomial 0x82F63B78): a reference that shares
    /// nothing with the `crc32c` crate.
    fn reference_crc32c(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0x82f6_3b78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    /// One record (key "k", value "v", no headers) at 2023-11-14T22:13:20Z, uncompressed,
    /// without a producer id: the bytes Kafka's Java producer writes for that record with
    /// idempotence off, laid out by hand from the spec. The CRC was computed independently
    /// (a bitwise CRC-32C in Python over bytes 21..70) and is pinned here.
    const FIXTURE: [(&str, &str); 20] = [
        ("00 00 00 00 00 00 00 00", "baseOffset 0"),
        ("00 00 00 3a", "batchLength 58"),
        ("ff ff ff ff", "partitionLeaderEpoch -1"),
        ("02", "magic 2"),
        ("e9 9b 8d d8", "crc"),
        ("00 00", "attributes: no codec, CreateTime"),
        ("00 00 00 00", "lastOffsetDelta 0"),
        ("00 00 01 8b cf e5 68 00", "baseTimestamp 1700000000000"),
        ("00 00 01 8b cf e5 68 00", "maxTimestamp 1700000000000"),
        ("ff ff ff ff ff ff ff ff", "producerId -1"),
        ("ff ff", "producerEpoch -1"),
        ("ff ff ff ff", "baseSequence -1"),
        ("00 00 00 01", "recordsCount 1"),
        ("10", "record length 8 (zigzag: 16)"),
        ("00", "record attributes"),
        ("00", "timestampDelta 0"),
        ("00", "offsetDelta 0"),
        ("02 6b", "key length 1, 'k'"),
        ("02 76", "value length 1, 'v'"),
        ("00", "header count 0"),
    ];
    const FIXTURE_CRC: u32 = 0xe99b_8dd8;

    fn fixture() -> Bytes {
        FIXTURE.iter().flat_map(|(bytes, _field)| hex(bytes)).collect()
    }

    #[test]
    fn the_crc_is_castagnoli() {
        // The CRC-32C check value from the CRC catalogue.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(reference_crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn a_hand_laid_out_batch_reads_and_its_crc_matches_the_pinned_constant() {
        let bytes = fixture();
        assert_eq!(bytes.len(), 70);
        assert_eq!(reference_crc32c(&bytes[CRC_START..]), FIXTURE_CRC);
        let batch = RecordBatch::new(bytes.clone()).unwrap();
        assert_eq!(batch.crc(), FIXTURE_CRC);
        batch.verify_crc().unwrap();
        assert_eq!(
            (
                batch.base_offset(),
                batch.batch_length(),
                batch.partition_leader_epoch(),
                batch.magic()
            ),
            (0, 58, -1, 2)
        );
        assert_eq!((batch.attributes(), batch.last_offset_delta()), (0, 0));
        assert_eq!(
            (batch.base_timestamp(), batch.max_timestamp()),
            (1_700_000_000_000, 1_700_000_000_000)
        );
        assert_eq!(
            (
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence(),
                batch.records_count()
            ),
            (-1, -1, -1, 1)
        );
        assert_eq!(batch.size(), 70);
        assert_eq!(batch.records_payload(), bytes.slice(61..));

        // The builder writes exactly these bytes.
        let mut builder = RecordBatchBuilder::new();
        builder.push(Some("k".into()), Some("v".into()), vec![], 1_700_000_000_000);
        assert_eq!(builder.build(), bytes);
    }

    #[test]
    fn every_header_field_and_flag_is_read_from_its_offset() {
        let mut bytes = BytesMut::new();
        bytes.put_i64(1234);
        bytes.put_i32(49);
        bytes.put_i32(7);
        bytes.put_i8(2);
        bytes.put_u32(0xdead_beef);
        bytes.put_i16(0x7c); // zstd, LogAppendTime, transactional, control, delete horizon
        bytes.put_i32(41);
        bytes.put_i64(1_000);
        bytes.put_i64(2_000);
        bytes.put_i64(99);
        bytes.put_i16(3);
        bytes.put_i32(17);
        bytes.put_i32(42);
        let batch = RecordBatch::new(bytes.freeze()).unwrap();
        assert_eq!(
            (
                batch.base_offset(),
                batch.batch_length(),
                batch.partition_leader_epoch(),
                batch.crc()
            ),
            (1234, 49, 7, 0xdead_beef)
        );
        assert_eq!((batch.attributes(), batch.last_offset_delta()), (0x7c, 41));
        assert_eq!((batch.base_timestamp(), batch.max_timestamp()), (1_000, 2_000));
        assert_eq!(
            (
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence(),
                batch.records_count()
            ),
            (99, 3, 17, 42)
        );
        assert_eq!((batch.last_offset(), batch.next_offset()), (1275, 1276));
        assert_eq!(batch.compression().unwrap(), Compression::Zstd);
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert!(batch.is_transactional() && batch.is_control() && batch.has_delete_horizon());
        assert!(!batch.is_compacted(), "42 records over offsets 0..=41");
        assert!(batch.records_payload().is_empty());

        let plain = RecordBatch::new(sample(Compression::None)).unwrap();
        assert_eq!(plain.timestamp_type(), TimestampType::CreateTime);
        assert!(!plain.is_transactional() && !plain.is_control() && !plain.has_delete_horizon());
    }

    #[test]
    fn codecs_zero_to_four_are_known_and_five_to_seven_are_errors() {
        let batch = sample(Compression::None);
        let expected = [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ];
        for (bits, codec) in expected.into_iter().enumerate() {
            let patched = RecordBatch::new(patch(&batch, 21, &(bits as i16).to_be_bytes())).unwrap();
            assert_eq!(patched.compression().unwrap(), codec);
            assert_eq!(codec.bits(), bits as i16);
        }
        for codec in 5..=7i16 {
            let bytes = stored(&patch(&batch, 21, &codec.to_be_bytes()), 300, 0, -1);
            let err = RecordBatch::new(bytes).unwrap().compression().unwrap_err();
            assert_eq!(
                err,
                WireError::UnknownCompression {
                    base_offset: 300,
                    codec
                }
            );
            assert_eq!(
                err.to_string(),
                format!("batch at offset 300 names compression codec {codec}, which Kafka does not define")
            );
        }
        assert_eq!(Compression::Lz4.to_string(), "lz4");
    }

    #[test]
    fn the_first_timestamp_follows_the_timestamp_type_and_delete_horizon() {
        let batch = sample(Compression::None);
        let create_time = RecordBatch::new(batch.clone()).unwrap();
        // Kafka's producer writes the first record's timestamp there; our builder the smallest.
        assert_eq!(create_time.first_timestamp(), create_time.base_timestamp());
        assert_eq!(create_time.first_timestamp(), 999);
        for attribute in [ATTR_LOG_APPEND_TIME, ATTR_DELETE_HORIZON] {
            let stored = RecordBatch::new(stored(&batch, 0, attribute, -1)).unwrap();
            assert_eq!(stored.first_timestamp(), stored.max_timestamp(), "{attribute:#x}");
        }
    }

    #[test]
    fn compacted_and_empty_batches_are_recognised() {
        let batch = sample(Compression::None); // 3 records, lastOffsetDelta 2
        assert!(!RecordBatch::new(batch.clone()).unwrap().is_compacted());
        let gaps = patch(&batch, 23, &5i32.to_be_bytes());
        assert!(RecordBatch::new(gaps).unwrap().is_compacted());
        let empty = patch(&batch, 57, &0i32.to_be_bytes());
        assert!(RecordBatch::new(empty).unwrap().is_compacted());
    }

    #[test]
    fn a_corrupt_batch_fails_its_crc_check() {
        let mut bytes = stored(&sample(Compression::None), 77, 0, -1).to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let batch = RecordBatch::new(bytes.into()).unwrap();
        let err = batch.verify_crc().unwrap_err();
        let WireError::CrcMismatch {
            base_offset,
            expected,
            actual,
        } = err
        else {
            panic!("{err:?}");
        };
        assert_eq!((base_offset, expected), (77, batch.crc()));
        assert_eq!(
            err.to_string(),
            format!("batch at offset 77 is corrupt: its CRC-32C is {actual:#010x}, the header says {expected:#010x}")
        );
    }

    #[test]
    fn impossible_offsets_and_counts_in_the_header_are_caught() {
        let batch = stored(&sample(Compression::None), 77, 0, -1); // 3 records, lastOffsetDelta 2
        assert_eq!(RecordBatch::new(batch.clone()).unwrap().check_header(), Ok(()));
        let compacted = patch(&batch, 57, &1i32.to_be_bytes());
        assert_eq!(RecordBatch::new(compacted).unwrap().check_header(), Ok(()));
        for (at, value, reason) in [
            (0, (-5i64).to_be_bytes().to_vec(), "a negative baseOffset"),
            (0, (i64::MAX - 1).to_be_bytes().to_vec(), "its last offset overflows"),
            (23, (-1i32).to_be_bytes().to_vec(), "a negative lastOffsetDelta"),
            (
                57,
                (-1i32).to_be_bytes().to_vec(),
                "recordsCount is negative or above lastOffsetDelta + 1",
            ),
            (
                57,
                4i32.to_be_bytes().to_vec(),
                "recordsCount is negative or above lastOffsetDelta + 1",
            ),
        ] {
            let damaged = RecordBatch::new(patch(&batch, at, &value)).unwrap();
            assert_eq!(
                damaged.check_header(),
                Err(WireError::ImpossibleHeader {
                    base_offset: damaged.base_offset(),
                    reason
                }),
                "{reason}"
            );
        }
    }

    #[test]
    fn a_record_set_splits_into_slices_of_the_same_buffer() {
        let one = sample(Compression::Gzip);
        let set = Bytes::from([&stored(&one, 100, 0, -1)[..], &stored(&one, 103, 0, -1)[..]].concat());
        let mut batches = RecordBatches::new(set.clone());
        let first = batches.next().unwrap().unwrap();
        let second = batches.next().unwrap().unwrap();
        assert!(batches.next().is_none());
        assert!(batches.next().is_none(), "fused");
        assert_eq!(batches.partial_tail(), 0);
        assert_eq!((first.base_offset(), first.next_offset()), (100, 103));
        assert_eq!((second.base_offset(), second.last_offset()), (103, 105));
        assert_eq!(first.as_bytes().as_ptr(), set.as_ptr(), "not copied");
        assert_eq!(second.as_bytes().as_ptr(), set[one.len()..].as_ptr(), "not copied");
        assert!(RecordBatches::new(Bytes::new()).next().is_none());
    }

    #[test]
    fn a_partial_trailing_batch_is_dropped_and_reported() {
        let one = sample(Compression::None);
        for cut in [1, 11, 12, 16, 17, 60, 61, one.len() - 1] {
            let set = Bytes::from([&one[..], &one[..cut]].concat());
            let mut batches = RecordBatches::new(set);
            assert!(batches.next().unwrap().is_ok());
            assert!(batches.next().is_none(), "cut at {cut}");
            assert_eq!(batches.partial_tail(), cut);
        }
    }

    #[test]
    fn legacy_message_sets_are_named_by_magic_and_offset() {
        for magic in [0u8, 1, 3] {
            let mut bytes = stored(&sample(Compression::None), 512, 0, -1).to_vec();
            bytes[16] = magic;
            // A v0 message is far shorter than a v2 header: the magic is still what is reported.
            bytes[8..12].copy_from_slice(&14i32.to_be_bytes());
            let mut batches = RecordBatches::new(bytes.into());
            let err = batches.next().unwrap().unwrap_err();
            assert_eq!(
                err,
                WireError::UnsupportedMagic {
                    base_offset: 512,
                    magic: magic as i8
                }
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "batch at offset 512 has magic {magic}; only magic-2 record batches are supported, \
                     not legacy v0/v1 message sets"
                )
            );
            assert!(batches.next().is_none(), "iteration ends after an error");
            assert_eq!(batches.partial_tail(), 0);
        }
    }

    #[test]
    fn a_batch_length_below_the_header_is_an_error() {
        for length in [48, 10, 0, -1, i32::MIN] {
            let bytes = patch(&sample(Compression::None), 8, &length.to_be_bytes());
            let err = RecordBatches::new(bytes).next().unwrap().unwrap_err();
            assert_eq!(
                err,
                WireError::BatchLengthTooSmall {
                    base_offset: 0,
                    batch_length: length
                }
            );
            assert_eq!(
                err.to_string(),
                format!("batch at offset 0 declares batchLength {length}, below the minimum of 49")
            );
        }
        // Even with only the length readable.
        let err = RecordBatches::new(Bytes::from(hex("00 00 00 00 00 00 00 05 00 00 00 30")))
            .next()
            .unwrap()
            .unwrap_err();
        assert!(matches!(
            err,
            WireError::BatchLengthTooSmall {
                base_offset: 5,
                batch_length: 48
            }
        ));
    }

    #[test]
    fn new_wants_exactly_one_batch() {
        let one = stored(&sample(Compression::None), 9, 0, -1);
        let err = RecordBatch::new(one.slice(..one.len() - 1)).unwrap_err();
        assert_eq!(
            err,
            WireError::IncompleteBatch {
                available: one.len() - 1,
                needed: one.len()
            }
        );
        assert_eq!(
            err.to_string(),
            format!("record batch is incomplete: {} bytes of {}", one.len() - 1, one.len())
        );
        let err = RecordBatch::new(one.slice(..5)).unwrap_err();
        assert_eq!(err.to_string(), "record batch is incomplete: 5 bytes of 61");

        let two = Bytes::from([&one[..], &one[..3]].concat());
        let err = RecordBatch::new(two).unwrap_err();
        assert_eq!(
            err,
            WireError::TrailingBytes {
                base_offset: 9,
                trailing: 3
            }
        );
        assert_eq!(
            err.to_string(),
            "batch at offset 9 is followed by 3 more bytes; expected exactly one batch"
        );
    }

    #[test]
    fn control_types_are_read_from_the_marker_key() {
        let read = |bytes: Bytes| RecordBatch::new(bytes).unwrap().control_type();
        assert_eq!(read(marker(10, 4, 0)), Ok(Some(ControlType::Abort)));
        assert_eq!(read(marker(10, 4, 1)), Ok(Some(ControlType::Commit)));
        assert_eq!(read(marker(10, 4, 5)), Ok(Some(ControlType::Other(5))));
        assert_eq!(read(sample(Compression::None)), Ok(None), "a data batch");
        let emptied = patch(&marker(10, 4, 0), 57, &0i32.to_be_bytes());
        assert_eq!(read(emptied), Ok(None), "a marker the cleaner removed");

        // A newer key version with extra bytes is read; a broken key is an error.
        let control = |key: Option<&[u8]>| {
            let mut builder = RecordBatchBuilder::new();
            builder.push(key.map(Bytes::copy_from_slice), None, Vec::<Header>::new(), 0);
            stored(&builder.build(), 20, 0x30, 4)
        };
        assert_eq!(read(control(Some(&[0, 3, 0, 1, 9, 9]))), Ok(Some(ControlType::Commit)));
        for (key, reason) in [
            (None, "its record key is null"),
            (Some(&[0u8, 0, 0][..]), "its record key is shorter than 4 bytes"),
            (Some(&[0xff, 0xff, 0, 0][..]), "its record key has a negative version"),
        ] {
            let err = read(control(key)).unwrap_err();
            assert_eq!(
                err,
                WireError::MalformedControlRecord {
                    base_offset: 20,
                    reason
                }
            );
            assert_eq!(
                err.to_string(),
                format!("control batch at offset 20 is malformed: {reason}")
            );
        }
    }

    /// Every prefix and every single-byte change of real batches (compressed or not, marker or
    /// data) parses or fails cleanly through every entry point: nothing panics.
    #[test]
    fn no_input_panics() {
        let inputs = [
            sample(Compression::None),
            sample(Compression::Gzip),
            sample(Compression::Snappy),
            marker(3, 1, 0),
        ];
        let exercise = |bytes: Bytes| {
            let _ = RecordBatch::new(bytes.clone());
            let mut batches = RecordBatches::new(bytes);
            for batch in batches.by_ref().flatten() {
                let _ = (batch.compression(), batch.verify_crc(), batch.control_type());
                let _ = (batch.last_offset(), batch.next_offset(), batch.is_compacted());
                let _ = crate::decode_records(&batch);
                let _ = crate::rebuild_batch(&batch, i64::MIN);
                let _ = batch.rewrite(crate::ProducerState::NONE);
            }
            let _ = batches.partial_tail();
        };
        for input in inputs {
            for cut in 0..input.len() {
                exercise(input.slice(..cut));
            }
            for at in 0..input.len() {
                for delta in [0x01, 0x41, 0x80, 0xff] {
                    let mut bytes = input.to_vec();
                    bytes[at] = bytes[at].wrapping_add(delta);
                    exercise(bytes.into());
                }
            }
        }
        let mut extreme = sample(Compression::None).to_vec();
        extreme[0..8].copy_from_slice(&i64::MAX.to_be_bytes());
        extreme[23..27].copy_from_slice(&i32::MAX.to_be_bytes());
        extreme[27..35].copy_from_slice(&i64::MAX.to_be_bytes());
        exercise(extreme.into());
    }
}
