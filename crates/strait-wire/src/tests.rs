//! Byte-level tests across the crate's parts.

use bytes::{Bytes, BytesMut};

use crate::*;

fn header(key: &str, value: Option<&str>) -> Header {
    Header {
        key: Bytes::from(key.to_owned()),
        value: value.map(|v| Bytes::from(v.to_owned())),
    }
}

fn sample(codec: Compression) -> Bytes {
    let mut builder = RecordBatchBuilder::new().compression(codec);
    builder.push(
        Some("k1".into()),
        Some("v1".into()),
        vec![header("h", Some("1")), header("h", None)],
        1_000,
    );
    builder.push(None, None, vec![], 1_000 + 40 * 24 * 3600 * 1000); // 40 days later: a varlong delta
    builder.push(Some("k3".into()), Some(Bytes::from(vec![7u8; 5000])), vec![], 999);
    builder.build()
}

/// A batch with its base offset and producer fields set as a broker would store them.
fn stored(batch: &Bytes, base_offset: i64, attributes_or: i16, producer_id: i64) -> Bytes {
    let mut bytes = BytesMut::from(&batch[..]);
    bytes[0..8].copy_from_slice(&base_offset.to_be_bytes());
    let attributes = i16::from_be_bytes([bytes[21], bytes[22]]) | attributes_or;
    bytes[21..23].copy_from_slice(&attributes.to_be_bytes());
    bytes[43..51].copy_from_slice(&producer_id.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes.freeze()
}

#[test]
fn built_batches_split_and_decode_in_every_codec() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let one = sample(codec);
        let set = Bytes::from([&stored(&one, 100, 0, -1)[..], &stored(&one, 103, 0, -1)[..]].concat());
        let batches: Vec<RecordBatch> = RecordBatches::new(set).collect::<Result<_, _>>().unwrap();
        assert_eq!(batches.len(), 2);
        let batch = &batches[1];
        assert_eq!(
            (batch.base_offset(), batch.last_offset(), batch.next_offset()),
            (103, 105, 106)
        );
        assert_eq!(batch.compression().unwrap(), codec);
        batch.verify_crc().unwrap();
        let records = decode_records(batch).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(
            records[0].headers,
            vec![header("h", Some("1")), header("h", None)],
            "duplicate keys and order kept"
        );
        assert_eq!(
            records[1].timestamp_delta,
            40 * 24 * 3600 * 1000 + 1,
            "base timestamp is the smallest"
        );
        assert_eq!((records[1].key.clone(), records[1].value.clone()), (None, None));
        assert_eq!(records[2].value.as_ref().map(Bytes::len), Some(5000));
        assert_eq!(
            records.iter().map(|r| r.offset_delta).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }
}

#[test]
fn a_partial_trailing_batch_is_left_out() {
    let one = sample(Compression::None);
    let set = Bytes::from([&one[..], &one[..one.len() - 1]].concat());
    let mut batches = RecordBatches::new(set);
    assert!(batches.next().unwrap().is_ok());
    assert!(batches.next().is_none());
    assert_eq!(batches.partial_tail(), one.len() - 1);
}

#[test]
fn legacy_and_broken_batches_are_errors_not_panics() {
    let mut legacy = sample(Compression::None).to_vec();
    legacy[16] = 1;
    let err = RecordBatches::new(legacy.into()).next().unwrap().unwrap_err();
    assert_eq!(
        err,
        WireError::UnsupportedMagic {
            base_offset: 0,
            magic: 1
        }
    );
    assert!(err.to_string().contains("only magic 2"));

    let mut short = sample(Compression::None).to_vec();
    short[8..12].copy_from_slice(&10i32.to_be_bytes());
    let err = RecordBatches::new(short.into()).next().unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        "batch at offset 0 declares batchLength 10, below the minimum of 49"
    );

    let mut corrupt = sample(Compression::None).to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let batch = RecordBatch::new(corrupt.into()).unwrap();
    assert!(matches!(batch.verify_crc(), Err(WireError::CrcMismatch { .. })));

    // Every prefix and every single-byte corruption parses or fails cleanly.
    let good = sample(Compression::Gzip);
    for cut in 0..good.len() {
        for batch in RecordBatches::new(good.slice(..cut)).flatten() {
            let _ = decode_records(&batch);
        }
    }
    for at in 0..good.len() {
        let mut bytes = good.to_vec();
        bytes[at] = bytes[at].wrapping_add(0x41);
        for batch in RecordBatches::new(bytes.into()).flatten() {
            let _ = decode_records(&batch);
            let _ = batch.control_type();
        }
    }
}

#[test]
fn rewrite_changes_only_the_header_and_keeps_the_payload_buffer() {
    let source = stored(&sample(Compression::Lz4), 5_000, 0x10 | 0x40, 77);
    let batch = RecordBatch::new(source.clone()).unwrap();
    let producer = ProducerState {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 40,
    };
    let forward = batch.rewrite(producer).unwrap();
    assert_eq!(forward.len(), source.len());
    let parts = forward.clone().into_parts();
    assert_eq!(
        parts[1].as_ptr(),
        batch.records_payload().as_ptr(),
        "the records section is not copied"
    );
    let mut out = BytesMut::new();
    forward.write_to(&mut out);
    let rewritten = RecordBatch::new(out.freeze()).unwrap();
    rewritten.verify_crc().unwrap();
    assert_eq!(
        crc32c::crc32c(&parts.concat()[21..]),
        rewritten.crc(),
        "CRC over the concatenation"
    );
    assert_eq!(rewritten.base_offset(), 0);
    assert_eq!(rewritten.partition_leader_epoch(), -1);
    assert_eq!(
        (
            rewritten.producer_id(),
            rewritten.producer_epoch(),
            rewritten.base_sequence()
        ),
        (9, 2, 40)
    );
    assert!(!rewritten.is_transactional() && !rewritten.has_delete_horizon());
    assert_eq!(rewritten.compression().unwrap(), Compression::Lz4);
    assert_eq!(
        &rewritten.as_bytes()[23..43],
        &source[23..43],
        "offset delta and timestamps kept"
    );
    assert_eq!(decode_records(&rewritten).unwrap(), decode_records(&batch).unwrap());
}

/// A transaction marker batch as the coordinator writes it.
fn marker(base_offset: i64, producer_id: i64, control_type: i16) -> Bytes {
    let mut builder = RecordBatchBuilder::new();
    let key = [0u8, 0, (control_type >> 8) as u8, control_type as u8];
    builder.push(
        Some(Bytes::copy_from_slice(&key)),
        Some(Bytes::from_static(&[0, 0, 0, 0, 0, 5])),
        vec![],
        1,
    );
    stored(&builder.build(), base_offset, 0x30, producer_id)
}

#[test]
fn control_and_compacted_batches_are_not_forwarded() {
    let abort = RecordBatch::new(marker(10, 4, 0)).unwrap();
    assert_eq!(abort.control_type(), Some(ControlType::Abort));
    assert_eq!(
        RecordBatch::new(marker(10, 4, 1)).unwrap().control_type(),
        Some(ControlType::Commit)
    );
    assert!(abort.rewrite(ProducerState::NONE).is_err());

    let mut compacted = sample(Compression::None).to_vec();
    compacted[23..27].copy_from_slice(&5i32.to_be_bytes()); // 3 records over 6 offsets
    let compacted = RecordBatch::new(compacted.into()).unwrap();
    assert!(compacted.is_compacted());
    let err = compacted.rewrite(ProducerState::NONE).unwrap_err();
    assert!(err.to_string().contains("compacted"), "{err}");
}

#[test]
fn aborted_transactions_are_filtered_like_the_java_consumer() {
    let data = |base: i64, pid: i64, transactional: bool| {
        RecordBatch::new(stored(
            &sample(Compression::None),
            base,
            if transactional { 0x10 } else { 0 },
            pid,
        ))
        .unwrap()
    };
    // pid 1 aborts at 0..=2 (marker 3), pid 2 commits 4..=6 (marker 7), pid 1 writes again 8..=10.
    let mut filter = AbortedTransactionFilter::new(vec![(1, 0)]);
    assert_eq!(filter.check(&data(0, 1, true)), BatchVerdict::SkipAborted);
    assert_eq!(
        filter.check(&RecordBatch::new(marker(3, 1, 0)).unwrap()),
        BatchVerdict::SkipControl
    );
    assert_eq!(filter.check(&data(4, 2, true)), BatchVerdict::Forward);
    assert_eq!(
        filter.check(&RecordBatch::new(marker(7, 2, 1)).unwrap()),
        BatchVerdict::SkipControl
    );
    assert_eq!(
        filter.check(&data(8, 1, true)),
        BatchVerdict::Forward,
        "a new transaction after the abort marker"
    );
    assert_eq!(filter.check(&data(11, -1, false)), BatchVerdict::Forward);
}

#[test]
fn compacted_batches_and_mid_batch_positions_are_rebuilt() {
    for codec in [Compression::None, Compression::Zstd, Compression::Lz4] {
        let mut builder = RecordBatchBuilder::new().compression(codec);
        for i in 0..5 {
            builder.push(
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("v{i}"))),
                vec![header("h", None)],
                100 + i,
            );
        }
        // Make it look compacted: 5 records spread over offsets 1000..=1009.
        let mut bytes = stored(&builder.build(), 1000, 0, -1).to_vec();
        bytes[23..27].copy_from_slice(&9i32.to_be_bytes());
        let crc = crc32c::crc32c(&bytes[21..]);
        bytes[17..21].copy_from_slice(&crc.to_be_bytes());
        let compacted = RecordBatch::new(bytes.into()).unwrap();
        assert!(compacted.is_compacted());

        let rebuilt = rebuild_batch(&compacted, 1002).unwrap().unwrap();
        assert_eq!(rebuilt.source_offsets, vec![1002, 1003, 1004]);
        assert!(!rebuilt.batch.is_compacted());
        assert_eq!(rebuilt.batch.compression().unwrap(), codec);
        rebuilt.batch.verify_crc().unwrap();
        let records = decode_records(&rebuilt.batch).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].value.as_deref(), Some(&b"v2"[..]));
        assert_eq!(
            rebuilt.batch.base_timestamp() + records[0].timestamp_delta,
            102,
            "timestamps kept"
        );
        assert_eq!(records[0].headers, vec![header("h", None)]);
        assert!(rebuilt.batch.rewrite(ProducerState::NONE).is_ok());
        assert!(
            rebuild_batch(&compacted, 1005).unwrap().is_none(),
            "nothing left past the last record"
        );
    }
}
