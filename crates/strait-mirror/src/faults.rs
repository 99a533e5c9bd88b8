//! Faults injected by tests, in debug builds only: `STRAIT_TEST_PANIC=<worker>:<topic>:<count>`
//! (several, separated by commas) makes the `fetcher` or `producer` tasks panic the first
//! `count` times they handle records of `<topic>`, so that a test on real brokers sees the
//! data path supervise its workers. Release builds neither compile this nor read the variable.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The variable that arms the faults.
const VARIABLE: &str = "STRAIT_TEST_PANIC";

struct Fault {
    worker: String,
    topic: String,
    left: AtomicU32,
}

fn faults() -> &'static [Fault] {
    static FAULTS: OnceLock<Vec<Fault>> = OnceLock::new();
    FAULTS.get_or_init(|| {
        let spec = std::env::var(VARIABLE).unwrap_or_default();
        spec.split(',')
            .filter_map(|fault| {
                let mut parts = fault.trim().splitn(3, ':');
                let (worker, topic, count) = (parts.next()?, parts.next()?, parts.next()?);
                Some(Fault {
                    worker: worker.to_owned(),
                    topic: topic.to_owned(),
                    left: AtomicU32::new(count.parse().ok()?),
                })
            })
            .collect()
    })
}

/// Panics if a fault is armed for `worker` handling records of `topic`.
pub(crate) fn strike(worker: &str, topic: &str) {
    for fault in faults() {
        if fault.worker == worker
            && fault.topic == topic
            && fault
                .left
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(1))
                .is_ok()
        {
            panic!("fault injected by {VARIABLE}: the {worker} handling {topic} panics");
        }
    }
}
