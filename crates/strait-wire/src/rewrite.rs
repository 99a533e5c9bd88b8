//! The forwarding rewrite: a new header, the untouched records section, a new CRC.

use bytes::{BufMut, Bytes, BytesMut};

use crate::batch::{ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL, CRC_START, RECORD_BATCH_OVERHEAD};
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
}

impl ProducerState {
    /// No producer identity: the target applies no idempotence checks.
    pub const NONE: ProducerState = ProducerState {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
}

/// A batch ready for a Produce request: a rewritten 61-byte header and the source's records
/// section as the same buffer it arrived in.
#[derive(Debug, Clone)]
pub struct ForwardBatch {
    header: Bytes,
    payload: Bytes,
    records: i32,
}

impl ForwardBatch {
    /// Total size in bytes.
    pub fn len(&self) -> usize {
        self.header.len() + self.payload.len()
    }

    /// Always false: a batch has a header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Number of records.
    pub fn record_count(&self) -> i32 {
        self.records
    }

    /// The parts, in order, for a vectored write.
    pub fn into_parts(self) -> Vec<Bytes> {
        vec![self.header, self.payload]
    }

    /// Copies the batch into `out`, for callers that need it contiguous.
    pub fn write_to(&self, out: &mut BytesMut) {
        out.put_slice(&self.header);
        out.put_slice(&self.payload);
    }
}

impl RecordBatch {
    /// Rewrites the batch for producing to a target as `producer`: baseOffset 0, leader epoch
    /// -1, the producer fields, the transactional and delete-horizon bits cleared, and a CRC
    /// over the new header and the unchanged records section. Nothing of the records section
    /// is copied.
    ///
    /// The delete-horizon bit is cleared because it would carry a source-cluster deletion
    /// deadline to the target; baseTimestamp is kept, so with that bit set the records' times
    /// read shifted (only compacted, tombstone-cleaned batches carry it, and those are rebuilt).
    ///
    /// Refuses control batches and compacted batches, which a target broker rejects as they
    /// are; the caller drops or rebuilds them.
    pub fn rewrite(&self, producer: ProducerState) -> Result<ForwardBatch, WireError> {
        self.rewrite_with(producer, false)
    }

    /// As [`rewrite`](Self::rewrite), also clearing the LogAppendTime bit when
    /// `clear_log_append_time` (a LogAppendTime target topic refuses batches that carry it).
    pub fn rewrite_with(
        &self,
        producer: ProducerState,
        clear_log_append_time: bool,
    ) -> Result<ForwardBatch, WireError> {
        if self.is_control() {
            return Err(WireError::unsupported(format!(
                "batch at offset {} is a control batch; clients may not produce those",
                self.base_offset()
            )));
        }
        if self.is_compacted() {
            return Err(WireError::unsupported(format!(
                "batch at offset {} holds {} records for {} offsets (compacted); it must be rebuilt",
                self.base_offset(),
                self.records_count(),
                i64::from(self.last_offset_delta()) + 1
            )));
        }
        let source = self.as_bytes();
        let mut clear = ATTR_TRANSACTIONAL | ATTR_DELETE_HORIZON;
        if clear_log_append_time {
            clear |= ATTR_TIMESTAMP_TYPE;
        }
        let mut header = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD);
        header.put_i64(0);
        header.put_slice(&source[8..12]); // batchLength
        header.put_i32(-1);
        header.put_i8(2);
        header.put_u32(0); // crc, below
        header.put_i16(self.attributes() & !clear);
        header.put_slice(&source[23..43]); // lastOffsetDelta, baseTimestamp, maxTimestamp
        header.put_i64(producer.producer_id);
        header.put_i16(producer.producer_epoch);
        header.put_i32(producer.base_sequence);
        header.put_i32(self.records_count());
        let payload = self.records_payload();
        let crc = crc32c::crc32c_append(crc32c::crc32c(&header[CRC_START..]), &payload);
        header[17..21].copy_from_slice(&crc.to_be_bytes());
        Ok(ForwardBatch {
            header: header.freeze(),
            payload,
            records: self.records_count(),
        })
    }
}
