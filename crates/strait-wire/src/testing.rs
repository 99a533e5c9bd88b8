//! Batches for the unit tests, built with the crate's own builder and patched the way a broker
//! would have stored them.

use bytes::Bytes;

use crate::layout::{CRC_AT, CRC_START};
use crate::{Compression, Header, RecordBatchBuilder};

/// Every codec, uncompressed first.
pub(crate) const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// Bytes from a spaced hex string ("00 01 ff").
pub(crate) fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("hex"))
        .collect()
}

/// A header with string key and value.
pub(crate) fn header(key: &str, value: Option<&str>) -> Header {
    Header {
        key: Bytes::from(key.to_owned()),
        value: value.map(|v| Bytes::from(v.to_owned())),
    }
}

/// Three records: duplicate header keys with a null value, a null key and value 40 days after
/// the first (a timestamp delta beyond i32), and a large value with the smallest timestamp.
pub(crate) fn sample(codec: Compression) -> Bytes {
    let mut builder = RecordBatchBuilder::new().compression(codec);
    builder.push(
        Some("k1".into()),
        Some("v1".into()),
        vec![header("h", Some("1")), header("h", None)],
        1_000,
    );
    builder.push(None, None, vec![], 1_000 + 40 * 24 * 3600 * 1000);
    builder.push(Some("k3".into()), Some(Bytes::from(vec![7u8; 5000])), vec![], 999);
    builder.build()
}

/// `batch` with `bytes` written at `at` and the CRC recomputed.
pub(crate) fn patch(batch: &Bytes, at: usize, bytes: &[u8]) -> Bytes {
    let mut out = batch.to_vec();
    out[at..at + bytes.len()].copy_from_slice(bytes);
    let crc = crc32c::crc32c(&out[CRC_START..]);
    out[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
    out.into()
}

/// `batch` as a broker stores it: at `base_offset`, with extra attribute bits and a producer id.
pub(crate) fn stored(batch: &Bytes, base_offset: i64, attributes_or: i16, producer_id: i64) -> Bytes {
    let attributes = i16::from_be_bytes([batch[21], batch[22]]) | attributes_or;
    let batch = patch(batch, 0, &base_offset.to_be_bytes());
    let batch = patch(&batch, 21, &attributes.to_be_bytes());
    patch(&batch, 43, &producer_id.to_be_bytes())
}

/// A transaction marker batch as the coordinator writes it (transactional | control).
pub(crate) fn marker(base_offset: i64, producer_id: i64, control_type: i16) -> Bytes {
    let mut key = vec![0, 0];
    key.extend_from_slice(&control_type.to_be_bytes());
    let mut builder = RecordBatchBuilder::new();
    builder.push(
        Some(key.into()),
        Some(Bytes::from_static(&[0, 0, 0, 0, 0, 5])),
        vec![],
        1,
    );
    stored(&builder.build(), base_offset, 0x30, producer_id)
}
