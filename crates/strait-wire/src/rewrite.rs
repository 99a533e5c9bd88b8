//! The forwarding rewrite: a new header, the untouched records section, a new CRC.

use bytes::{BufMut, Bytes, BytesMut};

use crate::layout::{
    ATTR_DELETE_HORIZON, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, CRC_AT, CRC_START, RECORD_BATCH_OVERHEAD,
};
use crate::{RecordBatch, WireError};

/// The producer fields a forwarded batch carries on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerState {
    /// The mirror's producer id on the target (-1: not idempotent).
    pub producer_id: i64,
    /// Its epoch (-1 with no producer id).
    pub producer_epoch: i16,
    /// The sequence number of the batch's first record (-1 with no producer id).
    pub base_sequence: i32,
    /// Whether the batch is part of the producer's open transaction: the transactional
    /// attribute bit is set (an exactly-once mirror) or cleared (a source transaction's batch
    /// forwarded by an idempotent mirror, which a target refuses without a transactional id).
    pub transactional: bool,
}

impl ProducerState {
    /// No producer identity (-1/-1/-1): the target applies no idempotence checks, so retries
    /// may duplicate.
    pub const NONE: ProducerState = ProducerState {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        transactional: false,
    };
}

/// A batch ready for a Produce request: a rewritten 61-byte header, then the source's records
/// section as the very buffer it arrived in.
#[derive(Debug, Clone)]
pub struct ForwardBatch {
    header: Bytes,
    payload: Bytes,
    records: i32,
}

impl ForwardBatch {
    /// Total size in bytes: what the Produce request's records field is long.
    pub fn len(&self) -> usize {
        self.header.len() + self.payload.len()
    }

    /// Always false (a batch has a header); here because `len` is.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Number of records: how far the producer's sequence advances.
    pub fn record_count(&self) -> i32 {
        self.records
    }

    /// The header and the payload, in order, for a vectored write.
    pub fn into_parts(self) -> Vec<Bytes> {
        vec![self.header, self.payload]
    }

    /// Copies the batch into `out`, for callers that need it contiguous.
    pub fn write_to(&self, out: &mut BytesMut) {
        out.reserve(self.len());
        out.put_slice(&self.header);
        out.put_slice(&self.payload);
    }
}

impl RecordBatch {
    /// Rewrites the batch for producing to a target as `producer` (use [`ProducerState::NONE`]
    /// for a non-idempotent mirror). Nothing of the records section is copied or decompressed.
    ///
    /// The new header has baseOffset 0 (required of producers), partitionLeaderEpoch -1, the
    /// producer fields, the transactional bit as `producer` says and the delete-horizon bit
    /// cleared; the CRC is recomputed over it and the unchanged records section. Everything
    /// else is kept.
    ///
    /// Delete horizon: the bit would hand the target the source cluster's deadline for
    /// removing tombstones, so it is cleared. baseTimestamp is left as it is: with the bit set
    /// it holds the horizon rather than the first record's time, but it is still what every
    /// record's timestampDelta was written against, so record timestamps read the same; only
    /// the header's baseTimestamp no longer equals the first record's, which brokers do not
    /// check.
    ///
    /// Control, compacted and empty batches are refused: a target broker rejects them, and the
    /// caller must drop them or take [`rebuild_batch`](crate::rebuild_batch).
    ///
    /// The source CRC is not checked here: the caller checks it with
    /// [`verify_crc`](RecordBatch::verify_crc) where the batch arrives, so that it can fetch a
    /// batch corrupted on the way again; a batch given a fresh CRC here is trusted as it is.
    pub fn rewrite(&self, producer: ProducerState) -> Result<ForwardBatch, WireError> {
        self.rewrite_with(producer, false)
    }

    /// As [`rewrite`](Self::rewrite), also clearing the LogAppendTime bit when
    /// `clear_log_append_time`: a LogAppendTime target topic refuses batches that carry it
    /// (INVALID_TIMESTAMP) and stamps its own time on append anyway.
    pub fn rewrite_with(
        &self,
        producer: ProducerState,
        clear_log_append_time: bool,
    ) -> Result<ForwardBatch, WireError> {
        let base_offset = self.base_offset();
        if self.is_control() {
            return Err(WireError::ControlBatch { base_offset });
        }
        if self.is_compacted() {
            return Err(WireError::NotContiguous {
                base_offset,
                records_count: self.records_count(),
                last_offset_delta: self.last_offset_delta(),
            });
        }
        let mut clear = ATTR_TRANSACTIONAL | ATTR_DELETE_HORIZON;
        if clear_log_append_time {
            clear |= ATTR_LOG_APPEND_TIME;
        }
        let mut header = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD);
        header.put_i64(0);
        header.put_i32(self.batch_length());
        header.put_i32(-1);
        header.put_i8(2);
        header.put_u32(0); // crc, set below
        let transactional = if producer.transactional { ATTR_TRANSACTIONAL } else { 0 };
        header.put_i16(self.attributes() & !clear | transactional);
        header.put_i32(self.last_offset_delta());
        header.put_i64(self.base_timestamp());
        header.put_i64(self.max_timestamp());
        header.put_i64(producer.producer_id);
        header.put_i16(producer.producer_epoch);
        header.put_i32(producer.base_sequence);
        header.put_i32(self.records_count());
        let payload = self.records_payload();
        let crc = crc32c::crc32c_append(crc32c::crc32c(&header[CRC_START..]), &payload);
        header[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
        Ok(ForwardBatch {
            header: header.freeze(),
            payload,
            records: self.records_count(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{marker, patch, sample, stored};
    use crate::{decode_records, Compression, TimestampType};

    const PRODUCER: ProducerState = ProducerState {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 40,
        transactional: false,
    };

    /// A fetched, transactional, delete-horizon, LogAppendTime LZ4 batch at offset 5000.
    fn fetched() -> RecordBatch {
        let batch = stored(&sample(Compression::Lz4), 5_000, 0x10 | 0x40 | 0x08, 77);
        RecordBatch::new(patch(&batch, 12, &33i32.to_be_bytes())).unwrap()
    }

    #[test]
    fn only_the_header_changes_and_the_payload_is_the_same_buffer() {
        let batch = fetched();
        let forward = batch.rewrite(PRODUCER).unwrap();
        assert_eq!((forward.len(), forward.record_count()), (batch.size(), 3));
        assert!(!forward.is_empty());
        let parts = forward.clone().into_parts();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].len(), 61);
        assert_eq!(parts[1].as_ptr(), batch.as_bytes()[61..].as_ptr(), "not copied");

        let whole = parts.concat();
        assert_eq!(
            crc32c::crc32c(&whole[21..]).to_be_bytes(),
            whole[17..21],
            "CRC checked independently over the concatenation"
        );
        let mut out = BytesMut::from(&b"prefix"[..]);
        forward.write_to(&mut out);
        assert_eq!(&out[6..], &whole[..]);

        let rewritten = RecordBatch::new(Bytes::from(whole)).unwrap();
        rewritten.verify_crc().unwrap();
        assert_eq!((rewritten.base_offset(), rewritten.partition_leader_epoch()), (0, -1));
        assert_eq!(rewritten.batch_length(), batch.batch_length());
        assert_eq!(
            (
                rewritten.producer_id(),
                rewritten.producer_epoch(),
                rewritten.base_sequence()
            ),
            (9, 2, 40)
        );
        assert_eq!(
            rewritten.attributes(),
            0x08 | 3,
            "transactional and delete horizon cleared"
        );
        assert_eq!(
            rewritten.timestamp_type(),
            TimestampType::LogAppendTime,
            "kept by default"
        );
        assert_eq!(
            (
                rewritten.last_offset_delta(),
                rewritten.base_timestamp(),
                rewritten.max_timestamp()
            ),
            (batch.last_offset_delta(), batch.base_timestamp(), batch.max_timestamp())
        );
        assert_eq!(rewritten.records_count(), batch.records_count());
        assert_eq!(decode_records(&rewritten).unwrap(), decode_records(&batch).unwrap());
    }

    #[test]
    fn a_corrupted_batch_fails_its_crc_check() {
        let batch = fetched();
        batch.verify_crc().unwrap();
        let mut bytes = batch.as_bytes().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01; // One flipped bit in the records section.
        let corrupt = RecordBatch::new(bytes.into()).unwrap();
        let err = corrupt.verify_crc().unwrap_err();
        assert!(
            matches!(err, WireError::CrcMismatch { expected, .. } if expected == batch.crc()),
            "{err}"
        );
    }

    #[test]
    fn log_append_time_is_cleared_on_request() {
        let rewritten = fetched().rewrite_with(PRODUCER, true).unwrap().into_parts().concat();
        let rewritten = RecordBatch::new(rewritten.into()).unwrap();
        rewritten.verify_crc().unwrap();
        assert_eq!(rewritten.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(rewritten.attributes(), 3);
    }

    #[test]
    fn without_a_producer_the_fields_are_minus_one() {
        let rewritten = fetched().rewrite(ProducerState::NONE).unwrap().into_parts().concat();
        let rewritten = RecordBatch::new(rewritten.into()).unwrap();
        rewritten.verify_crc().unwrap();
        assert_eq!(
            (
                rewritten.producer_id(),
                rewritten.producer_epoch(),
                rewritten.base_sequence()
            ),
            (-1, -1, -1)
        );
    }

    #[test]
    fn control_compacted_and_empty_batches_are_refused() {
        let err = RecordBatch::new(marker(10, 4, 0))
            .unwrap()
            .rewrite(PRODUCER)
            .unwrap_err();
        assert_eq!(err, WireError::ControlBatch { base_offset: 10 });

        let sample = stored(&sample(Compression::None), 300, 0, -1);
        let gaps = RecordBatch::new(patch(&sample, 23, &5i32.to_be_bytes())).unwrap();
        let err = gaps.rewrite(PRODUCER).unwrap_err();
        assert_eq!(
            err,
            WireError::NotContiguous {
                base_offset: 300,
                records_count: 3,
                last_offset_delta: 5
            }
        );
        assert_eq!(
            err.to_string(),
            "batch at offset 300 holds 3 records for lastOffsetDelta 5 (compacted or empty); rebuild it or skip it"
        );

        let empty = RecordBatch::new(patch(&sample, 57, &0i32.to_be_bytes())).unwrap();
        assert!(matches!(
            empty.rewrite(PRODUCER),
            Err(WireError::NotContiguous { records_count: 0, .. })
        ));
    }

    #[test]
    fn a_transactional_producer_marks_the_forwarded_batch_transactional() {
        let batch = fetched();
        let producer = ProducerState {
            transactional: true,
            ..PRODUCER
        };
        let rewritten = RecordBatch::new(Bytes::from(batch.rewrite(producer).unwrap().into_parts().concat())).unwrap();
        rewritten.verify_crc().unwrap();
        assert_eq!(
            rewritten.attributes(),
            0x10 | 0x08 | 3,
            "transactional kept, delete horizon cleared"
        );
        let plain = RecordBatch::new(stored(&sample(Compression::Lz4), 0, 0, 1)).unwrap();
        let rewritten = RecordBatch::new(Bytes::from(plain.rewrite(producer).unwrap().into_parts().concat())).unwrap();
        assert!(rewritten.is_transactional(), "set on a batch that had no bit");
    }
}
