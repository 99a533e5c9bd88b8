//! One batch whose batchLength, magic and CRC-32C are fixed up before parsing, so that the
//! fuzzer's bytes get past the framing and CRC checks into the rewrite fast path, decompression
//! (attributes bits 0-2 pick the codec) and record decoding. The same batch is then also split as
//! a record set followed by a copy of itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let batch = strait_fuzz::fix_up(data);
    let one = strait_wire::RecordBatch::new(batch.clone()).expect("fix_up frames exactly one batch");
    one.verify_crc().expect("fix_up sets the CRC");
    strait_fuzz::exercise_batch(&one);
    // Two batches in a row, the second cut short: the splitter must stop at the partial tail.
    let mut set = batch.to_vec();
    set.extend_from_slice(&batch[..batch.len() - 1]);
    strait_fuzz::exercise_record_set(set.into());
});
