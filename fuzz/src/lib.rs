//! Code shared by the fuzz targets: what every target does with a record set or a batch, and the
//! properties it checks. A property that fails panics, which libFuzzer reports as a crash.

use bytes::Bytes;
use strait_wire::{
    decode_records, rebuild_batch, AbortedTransactionFilter, ProducerState, Record, RecordBatch, RecordBatches,
    WireError, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
};

/// The producer fields the rewrite targets write, chosen so that every field changes.
const PRODUCER: ProducerState = ProducerState {
    producer_id: 0x0102_0304_0506_0708,
    producer_epoch: 9,
    base_sequence: 10,
    transactional: false,
};

/// Splits `records` as a fetch response's records field and exercises every batch in it, then
/// runs the read_committed filter over the batches with every batch's producer listed as
/// aborted from its base offset.
pub fn exercise_record_set(records: Bytes) {
    let _ = RecordBatch::new(records.clone());
    let mut batches = RecordBatches::new(records.clone());
    let mut good = Vec::new();
    let mut consumed = 0;
    for batch in batches.by_ref() {
        let Ok(batch) = batch else {
            // An error ends the iteration: nothing after it can be framed.
            break;
        };
        consumed += batch.size();
        exercise_batch(&batch);
        good.push(batch);
    }
    assert!(batches.next().is_none(), "RecordBatches is fused");
    let tail = batches.partial_tail();
    assert!(
        tail == 0 || consumed + tail == records.len(),
        "partial tail {tail} after {consumed} of {}",
        records.len()
    );

    let mut filter = AbortedTransactionFilter::new(good.iter().map(|b| (b.producer_id(), b.base_offset())).collect());
    for batch in &good {
        let _ = filter.check(batch);
    }
}

/// Every accessor and every path of one batch, with the properties that must hold between them.
pub fn exercise_batch(batch: &RecordBatch) {
    assert_eq!(batch.magic(), 2);
    assert_eq!(batch.size(), LOG_OVERHEAD + batch.batch_length() as usize);
    assert!(batch.size() >= RECORD_BATCH_OVERHEAD);
    let _ = (
        batch.partition_leader_epoch(),
        batch.last_offset(),
        batch.next_offset(),
        batch.base_timestamp(),
        batch.max_timestamp(),
        batch.producer_epoch(),
        batch.base_sequence(),
        batch.timestamp_type(),
        batch.is_transactional(),
        batch.has_delete_horizon(),
        batch.is_compacted(),
        batch.compression().map(|c| c.to_string()),
    );
    assert_eq!(batch.records_payload().len(), batch.size() - RECORD_BATCH_OVERHEAD);
    let _ = batch.verify_crc();
    let _ = batch.control_type();
    let records = decode_records(batch);
    if let Ok(records) = &records {
        assert_eq!(records.len(), batch.records_count() as usize);
    }

    for clear_log_append_time in [false, true] {
        check_rewrite(batch, &records, clear_log_append_time);
    }
    check_rebuild(batch, &records, i64::MIN);
    // A position inside the batch: the second half of its offset range.
    let middle = batch
        .base_offset()
        .wrapping_add(i64::from(batch.last_offset_delta() / 2));
    check_rebuild(batch, &records, middle);
}

/// The fast path: refused for control and compacted batches (the mirror checks the source CRC
/// before, where it can fetch again); otherwise a new header with a valid CRC over the untouched
/// records section.
fn check_rewrite(
    batch: &RecordBatch,
    records: &Result<Vec<Record>, WireError>,
    clear_log_append_time: bool,
) {
    let result = batch.rewrite_with(PRODUCER, clear_log_append_time);
    let Ok(forward) = result else {
        let err = result.unwrap_err();
        assert!(
            batch.is_control() || batch.is_compacted(),
            "rewrite refused a good batch: {err}"
        );
        return;
    };
    assert!(
        !batch.is_control() && !batch.is_compacted(),
        "rewrite accepted a bad batch"
    );
    assert_eq!(forward.len(), batch.size());
    assert_eq!(forward.record_count(), batch.records_count());
    let whole = Bytes::from(forward.into_parts().concat());
    let rewritten = RecordBatch::new(whole).expect("a rewritten batch is one batch");
    rewritten.verify_crc().expect("a rewritten batch has a valid CRC");
    assert_eq!(rewritten.base_offset(), 0);
    assert_eq!(rewritten.partition_leader_epoch(), -1);
    assert_eq!(rewritten.producer_id(), PRODUCER.producer_id);
    assert_eq!(rewritten.producer_epoch(), PRODUCER.producer_epoch);
    assert_eq!(rewritten.base_sequence(), PRODUCER.base_sequence);
    assert!(!rewritten.is_transactional() && !rewritten.has_delete_horizon());
    // Errors name the base offset, which the rewrite changed: compare the codecs only.
    assert_eq!(rewritten.compression().ok(), batch.compression().ok());
    assert_eq!(rewritten.attributes() & 0x07, batch.attributes() & 0x07);
    assert_eq!(
        (
            rewritten.last_offset_delta(),
            rewritten.base_timestamp(),
            rewritten.max_timestamp()
        ),
        (batch.last_offset_delta(), batch.base_timestamp(), batch.max_timestamp())
    );
    assert_eq!(rewritten.records_payload(), batch.records_payload());
    if let Ok(records) = records {
        assert_eq!(&decode_records(&rewritten).expect("same records section"), records);
    }
}

/// The slow path: a rebuilt batch is a valid, contiguous batch holding exactly the records at or
/// after `from_offset`.
fn check_rebuild(batch: &RecordBatch, records: &Result<Vec<Record>, WireError>, from_offset: i64) {
    let Ok(rebuilt) = rebuild_batch(batch, from_offset) else {
        return;
    };
    let records = records.as_ref().expect("a rebuilt batch decoded");
    let kept: Vec<&Record> = records
        .iter()
        .filter(|r| batch.base_offset().wrapping_add(i64::from(r.offset_delta)) >= from_offset)
        .collect();
    let Some(rebuilt) = rebuilt else {
        assert!(kept.is_empty(), "rebuild dropped {} records", kept.len());
        return;
    };
    assert_eq!(rebuilt.source_offsets.len(), kept.len());
    let new = &rebuilt.batch;
    new.verify_crc().expect("a rebuilt batch has a valid CRC");
    assert!(!new.is_compacted() && !new.is_control() && !new.is_transactional());
    assert_eq!(new.compression().ok(), batch.compression().ok());
    let decoded = decode_records(new).expect("a rebuilt batch decodes");
    assert_eq!(decoded.len(), kept.len());
    for ((i, new), old) in decoded.iter().enumerate().zip(kept) {
        assert_eq!(new.offset_delta, i as i32);
        assert_eq!(
            (&new.key, &new.value, &new.headers),
            (&old.key, &old.value, &old.headers)
        );
    }
    new.rewrite(PRODUCER).expect("a rebuilt batch can be forwarded");
}

/// Makes `data` one framed batch: pads it to a whole header, then writes batchLength, magic 2 and
/// the CRC-32C, so that the fuzzer's bytes reach the paths behind those checks.
pub fn fix_up(data: &[u8]) -> Bytes {
    let mut bytes = data.to_vec();
    if bytes.len() < RECORD_BATCH_OVERHEAD {
        bytes.resize(RECORD_BATCH_OVERHEAD, 0);
    }
    let batch_length = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[8..12].copy_from_slice(&batch_length.to_be_bytes());
    bytes[16] = 2;
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}
