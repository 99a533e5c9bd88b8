//! Records inside a batch: decoding (the slow path, with decompression) and building batches of
//! Strait's own records.

use bytes::{BufMut, Bytes, BytesMut};

use crate::batch::{CRC_START, RECORD_BATCH_OVERHEAD};
use crate::compression::{compress, decompress};
use crate::varint::{get_varint, get_varlong, put_varlong};
use crate::{Compression, RecordBatch, WireError};

/// A record header: a key (UTF-8 by convention, kept as bytes) and a nullable value. Keys may
/// repeat and order matters, so headers are a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header key.
    pub key: Bytes,
    /// The header value, `None` for null.
    pub value: Option<Bytes>,
}

/// One record of a batch.
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
    /// The headers, in order.
    pub headers: Vec<Header>,
}

/// Decodes every record of a batch, decompressing its records section if needed.
pub fn decode_records(batch: &RecordBatch) -> Result<Vec<Record>, WireError> {
    let codec = batch.compression()?;
    let payload = batch.records_payload();
    if codec == Compression::None {
        return decode_uncompressed(batch, &payload);
    }
    let plain = decompress(codec, &payload, batch.base_offset())?;
    decode_uncompressed(batch, &plain)
}

/// Decodes `records_count` records from an uncompressed records section.
pub(crate) fn decode_uncompressed(batch: &RecordBatch, data: &[u8]) -> Result<Vec<Record>, WireError> {
    let data = Bytes::copy_from_slice(data);
    let count = usize::try_from(batch.records_count()).unwrap_or(0);
    // The count is untrusted: never reserve more than the data could hold (one byte per record
    // at least... in practice seven).
    let mut records = Vec::with_capacity(count.min(data.len()));
    let mut input: &[u8] = &data;
    for index in 0..count {
        let malformed = |reason: &str| WireError::MalformedRecord {
            base_offset: batch.base_offset(),
            index,
            reason: reason.into(),
        };
        let length = get_varint(&mut input).ok_or_else(|| malformed("bad length varint"))?;
        let length = usize::try_from(length).map_err(|_| malformed("negative length"))?;
        if input.len() < length {
            return Err(malformed("length runs past the end of the batch"));
        }
        let (mut body, rest) = input.split_at(length);
        input = rest;
        let start = data.len() - rest.len() - length;
        let record =
            parse_record(&mut body, &data, start).ok_or_else(|| malformed("fields run past the record length"))?;
        if !body.is_empty() {
            return Err(malformed("bytes left over after the headers"));
        }
        records.push(record);
    }
    if !input.is_empty() {
        return Err(WireError::MalformedRecord {
            base_offset: batch.base_offset(),
            index: count,
            reason: format!("{} bytes after the declared {count} records", input.len()),
        });
    }
    Ok(records)
}

/// Parses one record body; `data[start..]` is where `body` begins, so fields can be sliced out
/// of `data` without copying.
fn parse_record(body: &mut &[u8], data: &Bytes, start: usize) -> Option<Record> {
    let origin = body.len();
    let slice = |body: &mut &[u8], len: usize| -> Option<Bytes> {
        if body.len() < len {
            return None;
        }
        let at = start + (origin - body.len());
        *body = &body[len..];
        Some(data.slice(at..at + len))
    };
    let nullable = |body: &mut &[u8]| -> Option<Option<Bytes>> {
        match get_varint(body)? {
            -1 => Some(None),
            len if len >= 0 => slice(body, len as usize).map(Some),
            _ => None,
        }
    };
    let (_attributes, rest) = body.split_first()?;
    *body = rest;
    let timestamp_delta = get_varlong(body)?;
    let offset_delta = get_varint(body)?;
    let key = nullable(body)?;
    let value = nullable(body)?;
    let header_count = usize::try_from(get_varint(body)?).ok()?;
    let mut headers = Vec::with_capacity(header_count.min(body.len()));
    for _ in 0..header_count {
        let key_len = usize::try_from(get_varint(body)?).ok()?;
        let key = slice(body, key_len)?;
        let value = nullable(body)?;
        headers.push(Header { key, value });
    }
    Some(Record {
        offset_delta,
        timestamp_delta,
        key,
        value,
        headers,
    })
}

/// Builds one magic-2 batch of records Strait writes itself (internal topics, tests). Records
/// are kept as [`Record`]s with an absolute timestamp in `timestamp_delta` until built.
#[derive(Debug, Clone, Default)]
pub struct RecordBatchBuilder {
    records: Vec<Record>,
    compression: Option<Compression>,
}

impl RecordBatchBuilder {
    /// An empty, uncompressed builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compresses the records section with `codec` when building.
    pub fn compression(mut self, codec: Compression) -> Self {
        self.compression = Some(codec);
        self
    }

    /// Adds a record with a timestamp in milliseconds.
    pub fn push(
        &mut self,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<Header>,
        timestamp: i64,
    ) -> &mut Self {
        let offset_delta = self.records.len() as i32;
        self.records.push(Record {
            offset_delta,
            timestamp_delta: timestamp,
            key,
            value,
            headers,
        });
        self
    }

    /// Number of records added.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The batch: base offset 0, offsets 0..n-1, CreateTime, no producer id, CRC set.
    ///
    /// # Panics
    /// If no record was added (Kafka rejects empty batches) or compression fails (it cannot
    /// on in-memory data).
    pub fn build(&self) -> Bytes {
        assert!(!self.records.is_empty(), "a record batch needs at least one record");
        let base_timestamp = self.records.iter().map(|r| r.timestamp_delta).min().expect("not empty");
        let max_timestamp = self.records.iter().map(|r| r.timestamp_delta).max().expect("not empty");
        let mut plain = Vec::new();
        let mut body = Vec::new();
        for record in &self.records {
            body.clear();
            body.push(0); // record attributes
            put_varlong(&mut body, record.timestamp_delta - base_timestamp);
            put_varlong(&mut body, i64::from(record.offset_delta));
            put_nullable(&mut body, record.key.as_deref());
            put_nullable(&mut body, record.value.as_deref());
            put_varlong(&mut body, record.headers.len() as i64);
            for header in &record.headers {
                put_varlong(&mut body, header.key.len() as i64);
                body.extend_from_slice(&header.key);
                put_nullable(&mut body, header.value.as_deref());
            }
            put_varlong(&mut plain, body.len() as i64);
            plain.extend_from_slice(&body);
        }
        let codec = self.compression.unwrap_or(Compression::None);
        let payload = compress(codec, &plain).expect("in-memory compression does not fail");
        let mut batch = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + payload.len());
        batch.put_i64(0); // baseOffset
        batch.put_i32((RECORD_BATCH_OVERHEAD - 12 + payload.len()) as i32);
        batch.put_i32(-1); // partitionLeaderEpoch
        batch.put_i8(2); // magic
        batch.put_u32(0); // crc, below
        batch.put_i16(codec.bits());
        batch.put_i32(self.records.len() as i32 - 1);
        batch.put_i64(base_timestamp);
        batch.put_i64(max_timestamp);
        batch.put_i64(-1); // producerId
        batch.put_i16(-1); // producerEpoch
        batch.put_i32(-1); // baseSequence
        batch.put_i32(self.records.len() as i32);
        batch.put_slice(&payload);
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
        batch.freeze()
    }
}

/// A batch rebuilt on the slow path, and which source offsets its records came from.
#[derive(Debug, Clone)]
pub struct RebuiltBatch {
    /// The new batch: offsets 0..n-1, same codec, same record contents and timestamps.
    pub batch: RecordBatch,
    /// Source offset of each record of `batch`, in order.
    pub source_offsets: Vec<i64>,
}

/// Rebuilds `batch` keeping only its records at or after `from_offset`: the slow path for
/// compacted batches (whose offsets have gaps, which a target refuses) and for a position
/// inside a batch. Records are decompressed, renumbered 0..n-1 and compressed again with the
/// batch's codec; keys, values, headers (duplicates and order) and the timestamps consumers see
/// are kept. Returns `None` when no record remains.
pub fn rebuild_batch(batch: &RecordBatch, from_offset: i64) -> Result<Option<RebuiltBatch>, WireError> {
    let log_append_time = batch.timestamp_type() == crate::TimestampType::LogAppendTime;
    let mut builder = RecordBatchBuilder::new().compression(batch.compression()?);
    let mut source_offsets = Vec::new();
    for record in decode_records(batch)? {
        let offset = batch.base_offset() + i64::from(record.offset_delta);
        if offset < from_offset {
            continue;
        }
        // Under LogAppendTime every record reads as the batch's max timestamp.
        let timestamp = if log_append_time {
            batch.max_timestamp()
        } else {
            batch.base_timestamp() + record.timestamp_delta
        };
        builder.push(record.key, record.value, record.headers, timestamp);
        source_offsets.push(offset);
    }
    if builder.is_empty() {
        return Ok(None);
    }
    let rebuilt = RecordBatch::new(builder.build())?;
    Ok(Some(RebuiltBatch {
        batch: rebuilt,
        source_offsets,
    }))
}

fn put_nullable(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        None => put_varlong(out, -1),
        Some(bytes) => {
            put_varlong(out, bytes.len() as i64);
            out.extend_from_slice(bytes);
        }
    }
}
