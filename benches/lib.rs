//! Inputs for the benchmarks: fetch responses holding realistic record batches.

use bytes::{BufMut, Bytes, BytesMut};
use strait_wire::{Compression, RecordBatchBuilder};

/// A fetched records blob of `batches` batches of `records` records of `record_size` bytes each,
/// compressed with `codec`, with consecutive source offsets as a broker stores them.
pub fn fetched_records(batches: usize, records: usize, record_size: usize, codec: Compression) -> Bytes {
    let mut out = BytesMut::new();
    let mut offset = 0i64;
    // xorshift: random letters compress about as well as real payloads with ids and numbers
    // (lz4 ~1.6x), unlike repeated text.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut letter = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        b'a' + (state % 26) as u8
    };
    for b in 0..batches {
        let mut builder = RecordBatchBuilder::new().compression(codec);
        for r in 0..records {
            // Log-like text: compressible, not trivially so.
            let line = format!(
                "{{\"ts\":{},\"level\":\"INFO\",\"batch\":{b},\"n\":{r},\"msg\":\"",
                1_700_000_000_000u64 + r as u64
            );
            let mut value = line.into_bytes();
            let fill = record_size.saturating_sub(value.len() + 2);
            value.extend((0..fill).map(|_| letter()));
            value.extend_from_slice(b"\"}");
            builder.push(
                Some(Bytes::from(format!("key-{r}"))),
                Some(Bytes::from(value)),
                Vec::new(),
                1_700_000_000_000,
            );
        }
        let batch = builder.build();
        let start = out.len();
        out.put_slice(&batch);
        out[start..start + 8].copy_from_slice(&offset.to_be_bytes());
        offset += records as i64;
    }
    out.freeze()
}
