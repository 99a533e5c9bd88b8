//! Records inside a batch, decoded: the slow path, taken only when a batch must be rebuilt or
//! its contents read.
//!
//! # Format
//!
//! ```text
//! length          varint   bytes of the record after this field
//! attributes      int8     unused
//! timestampDelta  varlong  record timestamp - baseTimestamp
//! offsetDelta     varint   record offset - baseOffset
//! keyLength       varint   -1 = null
//! key             bytes
//! valueLength     varint   -1 = null (a tombstone)
//! value           bytes
//! headerCount     varint
//! headers         headerKeyLength varint, headerKey bytes, headerValueLength varint (-1 = null), headerValue bytes
//! ```
//!
//! # References
//! - <https://kafka.apache.org/documentation/#record>

use bytes::Bytes;

use crate::compression::decompress;
use crate::varint::{get_varint, get_varlong};
use crate::{RecordBatch, WireError};

/// Smallest encoded record: a 1-byte length and six 1-byte fields. Bounds what an untrusted
/// record count may reserve.
const MIN_RECORD_SIZE: usize = 7;
/// Smallest encoded header: empty key, null value.
const MIN_HEADER_SIZE: usize = 2;

/// A record header: a key (UTF-8 by convention, kept as raw bytes) and a nullable value.
/// Keys may repeat and order matters, so a record's headers are a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The key.
    pub key: Bytes,
    /// The value, `None` for null.
    pub value: Option<Bytes>,
}

/// One record of a batch. Keys, values and header parts are slices of the batch's buffer when
/// it is uncompressed, of the decompressed buffer otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    /// Timestamp relative to the batch's base timestamp.
    pub timestamp_delta: i64,
    /// The key, `None` for null.
    pub key: Option<Bytes>,
    /// The value, `None` for null (a tombstone).
    pub value: Option<Bytes>,
    /// The headers, in order, duplicates kept.
    pub headers: Vec<Header>,
}

/// Decodes every record of a batch, decompressing its records section if needed.
///
/// A batch with no records (one the cleaner emptied) decodes as empty without its payload being
/// looked at. Like Kafka's consumer, this is strict: each record must parse to exactly its
/// declared length, and nothing may follow the declared number of records.
pub fn decode_records(batch: &RecordBatch) -> Result<Vec<Record>, WireError> {
    let base_offset = batch.base_offset();
    let records_count = batch.records_count();
    let count = usize::try_from(records_count).map_err(|_| WireError::NegativeRecordCount {
        base_offset,
        records_count,
    })?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let plain = decompress(batch.compression()?, batch.records_payload(), base_offset)?;
    let mut input = Cursor::new(plain);
    let mut records = Vec::with_capacity(count.min(input.remaining() / MIN_RECORD_SIZE));
    for index in 0..count {
        let record = read_record(&mut input).map_err(|reason| WireError::MalformedRecord {
            base_offset,
            index,
            reason,
        })?;
        records.push(record);
    }
    if input.remaining() > 0 {
        return Err(WireError::TrailingRecordBytes {
            base_offset,
            records_count,
            trailing: input.remaining(),
        });
    }
    Ok(records)
}

fn read_record(input: &mut Cursor) -> Result<Record, &'static str> {
    let length = input.varint().ok_or("bad length")?;
    let length = usize::try_from(length).map_err(|_| "negative length")?;
    let mut body = Cursor::new(input.take(length).ok_or("length runs past the end of the records")?);
    body.take(1).ok_or("no attributes")?; // Unused.
    let timestamp_delta = body.varlong().ok_or("bad timestampDelta")?;
    let offset_delta = body.varint().ok_or("bad offsetDelta")?;
    let key = body.nullable().ok_or("bad key")?;
    let value = body.nullable().ok_or("bad value")?;
    let header_count = body.varint().ok_or("bad header count")?;
    let header_count = usize::try_from(header_count).map_err(|_| "negative header count")?;
    let mut headers = Vec::with_capacity(header_count.min(body.remaining() / MIN_HEADER_SIZE));
    for _ in 0..header_count {
        let key_length = body.varint().ok_or("bad header key length")?;
        let key_length = usize::try_from(key_length).map_err(|_| "negative header key length")?;
        let key = body.take(key_length).ok_or("header key runs past the record")?;
        let value = body.nullable().ok_or("bad header value")?;
        headers.push(Header { key, value });
    }
    if body.remaining() > 0 {
        return Err("bytes left over after the headers");
    }
    Ok(Record {
        offset_delta,
        timestamp_delta,
        key,
        value,
        headers,
    })
}

/// Reads fields off a buffer, handing out byte fields as slices of it.
struct Cursor {
    data: Bytes,
}

impl Cursor {
    fn new(data: Bytes) -> Self {
        Cursor { data }
    }

    fn remaining(&self) -> usize {
        self.data.len()
    }

    fn take(&mut self, len: usize) -> Option<Bytes> {
        (len <= self.data.len()).then(|| self.data.split_to(len))
    }

    fn varint(&mut self) -> Option<i32> {
        self.read(get_varint)
    }

    fn varlong(&mut self) -> Option<i64> {
        self.read(get_varlong)
    }

    fn read<T>(&mut self, read: impl FnOnce(&mut &[u8]) -> Option<T>) -> Option<T> {
        let mut input = &self.data[..];
        let value = read(&mut input)?;
        let used = self.data.len() - input.len();
        self.data = self.data.split_off(used);
        Some(value)
    }

    /// A varint length then that many bytes; length -1 is null.
    fn nullable(&mut self) -> Option<Option<Bytes>> {
        match self.varint()? {
            -1 => Some(None),
            len => self.take(usize::try_from(len).ok()?).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{header, patch, sample, stored, CODECS};
    use crate::{Compression, RecordBatchBuilder, RecordBatches};

    #[test]
    fn built_batches_split_and_decode_in_every_codec() {
        for codec in CODECS {
            let one = sample(codec);
            let set = Bytes::from([&stored(&one, 100, 0, -1)[..], &stored(&one, 103, 0, -1)[..]].concat());
            let batches: Vec<RecordBatch> = RecordBatches::new(set).collect::<Result<_, _>>().unwrap();
            assert_eq!(batches.len(), 2);
            let batch = &batches[1];
            assert_eq!(batch.compression().unwrap(), codec);
            batch.verify_crc().unwrap();
            let records = decode_records(batch).unwrap();
            assert_eq!(records.len(), 3);
            assert_eq!(records[0].key.as_deref(), Some(&b"k1"[..]));
            assert_eq!(records[0].value.as_deref(), Some(&b"v1"[..]));
            assert_eq!(
                records[0].headers,
                vec![header("h", Some("1")), header("h", None)],
                "duplicate keys, null value and order kept"
            );
            assert_eq!((records[1].key.clone(), records[1].value.clone()), (None, None));
            assert_eq!(records[2].value.as_deref(), Some(&[7u8; 5000][..]));
            assert_eq!(batch.base_timestamp(), 999, "the smallest timestamp is the base");
            assert_eq!(
                records.iter().map(|r| r.timestamp_delta).collect::<Vec<_>>(),
                vec![1, 40 * 24 * 3600 * 1000 + 1, 0],
                "deltas beyond i32 are varlongs"
            );
            assert_eq!(
                records.iter().map(|r| r.offset_delta).collect::<Vec<_>>(),
                vec![0, 1, 2]
            );
        }
    }

    #[test]
    fn empty_and_null_fields_and_binary_header_keys_are_kept_apart() {
        let mut builder = RecordBatchBuilder::new();
        let binary = Header {
            key: Bytes::from_static(&[0xff, 0x00, 0xfe]),
            value: Some(Bytes::new()),
        };
        builder.push(
            Some(Bytes::new()),
            Some(Bytes::new()),
            vec![binary.clone(), header("", None)],
            5,
        );
        let batch = RecordBatch::new(builder.build()).unwrap();
        let records = decode_records(&batch).unwrap();
        assert_eq!(records[0].key, Some(Bytes::new()));
        assert_eq!(records[0].value, Some(Bytes::new()));
        assert_eq!(records[0].headers, vec![binary, header("", None)]);
    }

    #[test]
    fn uncompressed_fields_are_slices_of_the_batch() {
        let batch = RecordBatch::new(sample(Compression::None)).unwrap();
        let records = decode_records(&batch).unwrap();
        let value = records[2].value.as_ref().unwrap();
        let whole = batch.as_bytes().as_ptr_range();
        assert!(whole.contains(&value.as_ptr()), "not copied");
    }

    #[test]
    fn an_emptied_compressed_batch_decodes_as_empty() {
        // The cleaner leaves a header-only batch that still names its codec.
        let mut header_only = sample(Compression::Gzip)[..61].to_vec();
        header_only[8..12].copy_from_slice(&49i32.to_be_bytes());
        let header_only = patch(&header_only.into(), 57, &0i32.to_be_bytes());
        let batch = RecordBatch::new(header_only).unwrap();
        assert_eq!(decode_records(&batch).unwrap(), vec![]);
    }

    #[test]
    fn malformed_records_are_errors_naming_batch_record_and_field() {
        // One record "10 00 00 00 02 6b 02 76 00" (see the fixture in batch.rs) at offset 61.
        let mut builder = RecordBatchBuilder::new();
        builder.push(Some("k".into()), Some("v".into()), vec![], 0);
        let one = stored(&builder.build(), 40, 0, -1);
        let decode = |bytes: Bytes| decode_records(&RecordBatch::new(bytes).unwrap()).unwrap_err();
        let with_record = |record: &[u8], count: i32| {
            let mut bytes = one[..61].to_vec();
            bytes[8..12].copy_from_slice(&(49 + record.len() as i32).to_be_bytes());
            bytes[57..61].copy_from_slice(&count.to_be_bytes());
            bytes.extend_from_slice(record);
            Bytes::from(bytes)
        };

        let cases: [(&[u8], &str); 8] = [
            (
                &[0x12, 0, 0, 0, 2, b'k', 2, b'v', 0],
                "length runs past the end of the records",
            ),
            (&[0x01], "negative length"),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], "bad length"),
            (&[0x10, 0, 0, 0, 4, b'k', 2, b'v', 0], "bad value"),
            (&[0x10, 0, 0, 0, 2, b'k', 2, b'v', 3], "negative header count"),
            (
                &[0x12, 0, 0, 0, 2, b'k', 2, b'v', 0, 9],
                "bytes left over after the headers",
            ),
            (&[0x10, 0, 0, 0, 2, b'k', 2, b'v', 2], "bad header key length"),
            (
                &[0x12, 0, 0, 0, 2, b'k', 2, b'v', 2, 4],
                "header key runs past the record",
            ),
        ];
        for (record, reason) in cases {
            let err = decode(with_record(record, 1));
            assert_eq!(
                err,
                WireError::MalformedRecord {
                    base_offset: 40,
                    index: 0,
                    reason
                },
                "{record:02x?}"
            );
            assert_eq!(
                err.to_string(),
                format!("batch at offset 40: record 0 is malformed: {reason}")
            );
        }

        let record = &one[61..];
        let err = decode(with_record(&[record, record].concat(), 1));
        assert_eq!(
            err,
            WireError::TrailingRecordBytes {
                base_offset: 40,
                records_count: 1,
                trailing: 9
            }
        );
        assert_eq!(
            err.to_string(),
            "batch at offset 40: 9 bytes follow its 1 declared records"
        );

        let err = decode(with_record(record, 2));
        assert_eq!(err.to_string(), "batch at offset 40: record 1 is malformed: bad length");

        let err = decode(with_record(record, -3));
        assert_eq!(
            err,
            WireError::NegativeRecordCount {
                base_offset: 40,
                records_count: -3
            }
        );
        assert_eq!(
            err.to_string(),
            "batch at offset 40 declares a negative recordsCount -3"
        );

        let gzip_garbage = patch(&with_record(record, 1), 21, &1i16.to_be_bytes());
        assert!(matches!(
            decode(gzip_garbage),
            WireError::Decompression {
                base_offset: 40,
                codec: Compression::Gzip,
                ..
            }
        ));
    }
}
