//! Building batches: records Strait writes itself, and the rebuild of batches a target would
//! refuse as they are.

use bytes::{BufMut, Bytes, BytesMut};

use crate::compression::compress;
use crate::layout::{ATTR_TRANSACTIONAL, CRC_AT, CRC_START, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use crate::varint::put_varlong;
use crate::{decode_records, Compression, Header, ProducerState, RecordBatch, TimestampType, WireError};

/// Builds one magic-2 batch: base offset 0, offsets 0..n-1, CreateTime, uncompressed unless
/// [`compression`](Self::compression) says otherwise, no producer id unless
/// [`producer`](Self::producer) sets one.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    records: Vec<PendingRecord>,
    compression: Compression,
    producer: ProducerState,
}

/// A record before the batch's base timestamp is known.
#[derive(Debug, Clone)]
struct PendingRecord {
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<Header>,
    timestamp: i64,
}

impl Default for RecordBatchBuilder {
    fn default() -> Self {
        RecordBatchBuilder {
            records: Vec::new(),
            compression: Compression::None,
            producer: ProducerState::NONE,
        }
    }
}

impl RecordBatchBuilder {
    /// An empty, uncompressed builder without a producer id.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compresses the records section with `codec`.
    pub fn compression(mut self, codec: Compression) -> Self {
        self.compression = codec;
        self
    }

    /// Writes `producer`'s id, epoch and base sequence into the header.
    pub fn producer(mut self, producer: ProducerState) -> Self {
        self.producer = producer;
        self
    }

    /// Adds a record; `timestamp` is in epoch milliseconds. Headers keep their order and may
    /// repeat keys.
    pub fn push(
        &mut self,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<Header>,
        timestamp: i64,
    ) -> &mut Self {
        self.records.push(PendingRecord {
            key,
            value,
            headers,
            timestamp,
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

    /// The batch, with its CRC.
    ///
    /// The smallest timestamp is the base, so every delta is ≥ 0; the largest is maxTimestamp.
    ///
    /// # Panics
    /// If no record was added (Kafka refuses empty batches), or if the records section
    /// reaches 2 GiB (beyond what batchLength can express).
    pub fn build(&self) -> Bytes {
        let timestamps = self.records.iter().map(|r| r.timestamp);
        let (Some(base_timestamp), Some(max_timestamp)) = (timestamps.clone().min(), timestamps.max()) else {
            panic!("a record batch needs at least one record");
        };
        let count = i32::try_from(self.records.len()).expect("fewer than 2^31 records");
        let mut plain = Vec::new();
        for (offset_delta, record) in self.records.iter().enumerate() {
            put_record(
                &mut plain,
                offset_delta as i32, // Below `count`.
                record.timestamp.wrapping_sub(base_timestamp),
                record.key.as_deref(),
                record.value.as_deref(),
                &record.headers,
            );
        }
        let payload = compress(self.compression, plain);
        let batch_length =
            i32::try_from(RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + payload.len()).expect("a batch under 2 GiB");
        let mut batch = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + payload.len());
        batch.put_i64(0); // baseOffset
        batch.put_i32(batch_length);
        batch.put_i32(-1); // partitionLeaderEpoch: the leader stamps it.
        batch.put_i8(2); // magic
        batch.put_u32(0); // crc, set below
        let transactional = if self.producer.transactional {
            ATTR_TRANSACTIONAL
        } else {
            0
        };
        batch.put_i16(self.compression.bits() | transactional);
        batch.put_i32(count - 1); // lastOffsetDelta
        batch.put_i64(base_timestamp);
        batch.put_i64(max_timestamp);
        batch.put_i64(self.producer.producer_id);
        batch.put_i16(self.producer.producer_epoch);
        batch.put_i32(self.producer.base_sequence);
        batch.put_i32(count);
        batch.put_slice(&payload);
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
        batch.freeze()
    }
}

/// Appends one length-prefixed record.
fn put_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header],
) {
    let mut body = vec![0]; // Record attributes: unused.
    put_varlong(&mut body, timestamp_delta);
    put_varlong(&mut body, i64::from(offset_delta));
    put_nullable(&mut body, key);
    put_nullable(&mut body, value);
    put_varlong(&mut body, headers.len() as i64);
    for header in headers {
        put_varlong(&mut body, header.key.len() as i64);
        body.extend_from_slice(&header.key);
        put_nullable(&mut body, header.value.as_deref());
    }
    put_varlong(out, body.len() as i64);
    out.extend_from_slice(&body);
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

/// A batch rebuilt on the slow path, and where its records came from.
#[derive(Debug, Clone)]
pub struct RebuiltBatch {
    /// The new batch: offsets 0..n-1, the source's codec, no producer id.
    pub batch: RecordBatch,
    /// The source offset (base offset + offset delta) of each record of `batch`, in order, so
    /// that target offsets map back exactly.
    pub source_offsets: Vec<i64>,
}

/// Rebuilds `batch` from its records at or after `from_offset`: the slow path for compacted
/// batches (whose offset gaps a target refuses) and for a fetch position inside a batch.
/// Pass `i64::MIN` to keep every record.
///
/// Records are decompressed, renumbered 0..n-1 and compressed again with the batch's codec.
/// Keys, values, headers (order and duplicates) and the timestamps a consumer sees are kept:
/// under LogAppendTime that is the batch's maxTimestamp for every record, which the rebuilt
/// (CreateTime) batch then carries per record. Producer fields are -1: forwarding sets them.
///
/// Returns `None` when no record remains, e.g. for a batch the cleaner emptied; the caller
/// skips it and moves on to [`RecordBatch::next_offset`]. Control batches are refused.
pub fn rebuild_batch(batch: &RecordBatch, from_offset: i64) -> Result<Option<RebuiltBatch>, WireError> {
    let records: Vec<SourceRecord> = source_records(batch)?
        .into_iter()
        .filter(|r| r.offset >= from_offset)
        .collect();
    build(batch, records)
}

/// Splits `batch` into two batches holding the first and the second half of its records, for
/// a target that refused it as too large (MESSAGE_TOO_LARGE): a source batch of many small
/// records fits once split, as it would after a Java producer's re-batching. Each half is
/// rebuilt as [`rebuild_batch`] does, with the source offset (base offset + offset delta) of
/// each record. `None` for a batch of fewer than two records, which no split makes smaller.
pub fn split_batch(batch: &RecordBatch) -> Result<Option<(RebuiltBatch, RebuiltBatch)>, WireError> {
    let mut first = source_records(batch)?;
    if first.len() < 2 {
        return Ok(None);
    }
    let second = first.split_off(first.len() / 2);
    match (build(batch, first)?, build(batch, second)?) {
        (Some(first), Some(second)) => Ok(Some((first, second))),
        _ => Ok(None),
    }
}

/// A record with its source offset and the timestamp a consumer sees.
struct SourceRecord {
    offset: i64,
    timestamp: i64,
    record: crate::Record,
}

fn source_records(batch: &RecordBatch) -> Result<Vec<SourceRecord>, WireError> {
    if batch.is_control() {
        return Err(WireError::ControlBatch {
            base_offset: batch.base_offset(),
        });
    }
    let log_append_time = batch.timestamp_type() == TimestampType::LogAppendTime;
    Ok(decode_records(batch)?
        .into_iter()
        .map(|record| SourceRecord {
            offset: batch.base_offset().wrapping_add(i64::from(record.offset_delta)),
            timestamp: if log_append_time {
                batch.max_timestamp()
            } else {
                batch.base_timestamp().wrapping_add(record.timestamp_delta)
            },
            record,
        })
        .collect())
}

/// A batch of `records` in `like`'s codec; `None` if there are none.
fn build(like: &RecordBatch, records: Vec<SourceRecord>) -> Result<Option<RebuiltBatch>, WireError> {
    if records.is_empty() {
        return Ok(None);
    }
    let mut builder = RecordBatchBuilder::new().compression(like.compression()?);
    let mut source_offsets = Vec::with_capacity(records.len());
    for SourceRecord {
        offset,
        timestamp,
        record,
    } in records
    {
        builder.push(record.key, record.value, record.headers, timestamp);
        source_offsets.push(offset);
    }
    Ok(Some(RebuiltBatch {
        batch: RecordBatch::new(builder.build())?,
        source_offsets,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{header, marker, patch, stored};

    #[test]
    fn the_header_says_what_the_records_are() {
        let mut builder = RecordBatchBuilder::new()
            .compression(Compression::Snappy)
            .producer(ProducerState {
                producer_id: 12,
                producer_epoch: 3,
                base_sequence: 40,
                transactional: false,
            });
        assert!(builder.is_empty());
        for timestamp in [500, 100, 900, 300] {
            builder.push(None, Some("x".into()), vec![], timestamp);
        }
        assert_eq!(builder.len(), 4);
        let batch = RecordBatch::new(builder.build()).unwrap();
        batch.verify_crc().unwrap();
        assert_eq!((batch.base_offset(), batch.partition_leader_epoch()), (0, -1));
        assert_eq!(
            (batch.attributes(), batch.compression().unwrap()),
            (2, Compression::Snappy)
        );
        assert_eq!((batch.last_offset_delta(), batch.records_count()), (3, 4));
        assert_eq!((batch.base_timestamp(), batch.max_timestamp()), (100, 900));
        assert_eq!(
            (batch.producer_id(), batch.producer_epoch(), batch.base_sequence()),
            (12, 3, 40)
        );
        let records = decode_records(&batch).unwrap();
        assert_eq!(
            records
                .iter()
                .map(|r| (r.offset_delta, r.timestamp_delta))
                .collect::<Vec<_>>(),
            vec![(0, 400), (1, 0), (2, 800), (3, 200)]
        );

        let plain = RecordBatch::new(RecordBatchBuilder::new().push(None, None, vec![], 1).build()).unwrap();
        assert_eq!(
            (plain.producer_id(), plain.producer_epoch(), plain.base_sequence()),
            (-1, -1, -1)
        );
    }

    #[test]
    #[should_panic(expected = "a record batch needs at least one record")]
    fn an_empty_builder_panics() {
        RecordBatchBuilder::new().build();
    }

    /// 5 records at offsets 1000, 1002, 1004, 1006, 1008 (a compacted batch over 1000..=1009).
    fn compacted(codec: Compression) -> RecordBatch {
        let mut builder = RecordBatchBuilder::new().compression(codec);
        for i in 0..5 {
            builder.push(
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("v{i}"))),
                vec![header("h", None), header("h", Some("again"))],
                100 + i,
            );
        }
        // Renumber the records with even offset deltas, as if the odd ones had been cleaned.
        let mut plain = Vec::new();
        for record in decode_records(&RecordBatch::new(builder.build()).unwrap()).unwrap() {
            put_record(
                &mut plain,
                record.offset_delta * 2,
                record.timestamp_delta,
                record.key.as_deref(),
                record.value.as_deref(),
                &record.headers,
            );
        }
        let payload = compress(codec, plain);
        let mut bytes = RecordBatchBuilder::new()
            .compression(codec)
            .push(None, None, vec![], 100)
            .build()[..61]
            .to_vec();
        bytes[8..12].copy_from_slice(&(49 + payload.len() as i32).to_be_bytes());
        bytes[23..27].copy_from_slice(&9i32.to_be_bytes());
        bytes[57..61].copy_from_slice(&5i32.to_be_bytes());
        bytes.extend_from_slice(&payload);
        let batch = RecordBatch::new(stored(&bytes.into(), 1000, 0, 55)).unwrap();
        batch.verify_crc().unwrap();
        assert!(batch.is_compacted());
        batch
    }

    #[test]
    fn a_compacted_batch_is_rebuilt_with_consecutive_offsets_in_every_codec() {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let source = compacted(codec);
            let rebuilt = rebuild_batch(&source, i64::MIN).unwrap().unwrap();
            assert_eq!(rebuilt.source_offsets, vec![1000, 1002, 1004, 1006, 1008]);
            let batch = &rebuilt.batch;
            batch.verify_crc().unwrap();
            assert!(!batch.is_compacted());
            assert_eq!(batch.compression().unwrap(), codec);
            assert_eq!(
                (batch.base_offset(), batch.last_offset_delta(), batch.records_count()),
                (0, 4, 5)
            );
            assert_eq!(batch.producer_id(), -1);
            let before = decode_records(&source).unwrap();
            let after = decode_records(batch).unwrap();
            for (old, new) in before.iter().zip(&after) {
                assert_eq!(
                    (&old.key, &old.value, &old.headers),
                    (&new.key, &new.value, &new.headers)
                );
                assert_eq!(
                    source.base_timestamp() + old.timestamp_delta,
                    batch.base_timestamp() + new.timestamp_delta,
                    "timestamps kept"
                );
            }
            assert_eq!(
                after.iter().map(|r| r.offset_delta).collect::<Vec<_>>(),
                vec![0, 1, 2, 3, 4]
            );
            assert!(batch.rewrite(ProducerState::NONE).is_ok(), "forwardable");
        }
    }

    #[test]
    fn a_position_inside_a_batch_keeps_the_records_from_there() {
        let source = compacted(Compression::Lz4);
        let rebuilt = rebuild_batch(&source, 1003).unwrap().unwrap();
        assert_eq!(rebuilt.source_offsets, vec![1004, 1006, 1008]);
        let records = decode_records(&rebuilt.batch).unwrap();
        assert_eq!(records[0].value.as_deref(), Some(&b"v2"[..]));
        assert!(rebuild_batch(&source, 1009).unwrap().is_none(), "nothing left");
    }

    #[test]
    fn log_append_time_batches_keep_the_time_consumers_saw() {
        let mut builder = RecordBatchBuilder::new();
        builder
            .push(None, Some("a".into()), vec![], 10)
            .push(None, Some("b".into()), vec![], 20);
        let source = patch(&stored(&builder.build(), 0, 0x08, -1), 35, &5_000i64.to_be_bytes());
        let rebuilt = rebuild_batch(&RecordBatch::new(source).unwrap(), i64::MIN)
            .unwrap()
            .unwrap();
        assert_eq!(rebuilt.batch.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(
            (rebuilt.batch.base_timestamp(), rebuilt.batch.max_timestamp()),
            (5_000, 5_000)
        );
    }

    #[test]
    fn empty_batches_rebuild_to_nothing_and_control_batches_are_refused() {
        let empty = patch(
            &RecordBatchBuilder::new().push(None, None, vec![], 1).build(),
            57,
            &0i32.to_be_bytes(),
        );
        // The record bytes are still there but the count says 0: nothing is read.
        let empty = RecordBatch::new(empty).unwrap();
        assert!(rebuild_batch(&empty, i64::MIN).unwrap().is_none());

        let err = rebuild_batch(&RecordBatch::new(marker(70, 1, 1)).unwrap(), i64::MIN).unwrap_err();
        assert_eq!(err, WireError::ControlBatch { base_offset: 70 });
        assert_eq!(
            err.to_string(),
            "batch at offset 70 is a control batch; clients may not produce control records"
        );
    }

    #[test]
    fn split_halves_keep_records_and_source_offsets() {
        let mut builder = RecordBatchBuilder::new().compression(Compression::Lz4);
        for n in 0..5 {
            builder.push(None, Some(format!("v{n}").into()), vec![], 1_000 + n);
        }
        let batch = stored(&builder.build(), 700, 0, 0);
        let batch = RecordBatch::new(batch).unwrap();
        let (first, second) = split_batch(&batch).unwrap().unwrap();
        assert_eq!(first.source_offsets, vec![700, 701]);
        assert_eq!(second.source_offsets, vec![702, 703, 704]);
        assert_eq!(second.batch.compression().unwrap(), Compression::Lz4);
        let values: Vec<_> = decode_records(&second.batch)
            .unwrap()
            .into_iter()
            .map(|r| r.value.unwrap())
            .collect();
        assert_eq!(values, ["v2", "v3", "v4"]);
        assert_eq!(second.batch.base_timestamp(), 1_002);
        let mut single = RecordBatchBuilder::new();
        single.push(None, Some("only".into()), vec![], 5);
        assert!(split_batch(&RecordBatch::new(single.build()).unwrap())
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_transactional_producer_sets_the_transactional_bit() {
        let mut builder = RecordBatchBuilder::new().producer(ProducerState {
            producer_id: 12,
            producer_epoch: 3,
            base_sequence: 0,
            transactional: true,
        });
        builder.push(Some("k".into()), Some("v".into()), vec![], 1);
        let batch = RecordBatch::new(builder.build()).unwrap();
        batch.verify_crc().unwrap();
        assert!(batch.is_transactional() && !batch.is_control());
    }
}
