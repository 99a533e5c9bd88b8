//! The raw bytes of a fetch response's records field: `RecordBatches` splitting, every
//! `RecordBatch` accessor, CRC check, `control_type`, `decode_records`, `rebuild_batch`,
//! `rewrite`/`rewrite_with` and `AbortedTransactionFilter` (see `strait_fuzz::exercise_batch`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strait_fuzz::exercise_record_set(bytes::Bytes::copy_from_slice(data));
});
