//! MirrorMaker 2's internal records: `OffsetSync`, `Checkpoint` and `Heartbeat` decoded from a key
//! and a value (the first input byte says how many of the following bytes are the key). Where a
//! decode succeeds, encoding the result and decoding again gives the same record, and the encoded
//! bytes are the prefix of the input that the reader consumed (readers ignore trailing bytes, and
//! the version field of Checkpoint and Heartbeat values is read but not kept).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait_wire::{Checkpoint, Heartbeat, OffsetSync};

fn prefix_of(encoded: &[u8], input: &[u8]) -> bool {
    input.starts_with(encoded)
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let split = usize::from(split).min(rest.len());
    let (key, value) = rest.split_at(split);

    if let Ok(sync) = OffsetSync::decode(key, value) {
        assert_eq!(OffsetSync::decode(&sync.key(), &sync.value()).unwrap(), sync);
        assert!(prefix_of(&sync.key(), key) && prefix_of(&sync.value(), value));
    }
    if let Ok(checkpoint) = Checkpoint::decode(key, value) {
        assert_eq!(
            Checkpoint::decode(&checkpoint.key(), &checkpoint.value()).unwrap(),
            checkpoint
        );
        assert!(prefix_of(&checkpoint.key(), key));
        assert!(prefix_of(&checkpoint.value()[2..], &value[2..]));
    }
    if let Ok(heartbeat) = Heartbeat::decode(key, value) {
        assert_eq!(
            Heartbeat::decode(&heartbeat.key(), &heartbeat.value()).unwrap(),
            heartbeat
        );
        assert!(prefix_of(&heartbeat.key(), key));
        assert!(prefix_of(&heartbeat.value()[2..], &value[2..]));
    }
});
