//! One source partition's cursor (franz-go's `cursor`): where the partition is fetched from next,
//! and what a fetched partition's data turns into for its queue: batches to forward, offsets that
//! need no forwarding, or a stop. No I/O; tested with batches alone.

use std::sync::Arc;
use std::time::Instant;

use strait_client::{FetchPosition, FetchedPartition, PartitionKey, TopicId};
use strait_wire::{rebuild_batch, AbortedTransactionFilter, BatchVerdict, RecordBatch, RecordBatches, WireError};

use crate::budget::Charge;
use crate::outgoing::Outgoing;
use crate::route::Route;
use crate::sink::queue::{Entry, PartitionQueue};
use crate::MirrorError;

/// How often a batch that fails its checks ([`check_fetched`]) is fetched again before the
/// partition stops: a batch damaged on the way comes back intact, one damaged in the source log
/// does not.
pub(crate) const CORRUPT_REFETCHES: u32 = 3;

/// The checks a fetched batch passes before any decision on it: its CRC, the header fields the
/// CRC does not cover, and where it lies: ending at or after `position` (a fetch starts at the
/// batch holding it) and at most at `high_watermark` (a broker serves nothing past it).
pub(crate) fn check_fetched(batch: &RecordBatch, position: i64, high_watermark: i64) -> Result<(), WireError> {
    batch.verify_crc()?;
    batch.check_header()?;
    let impossible = |reason| WireError::ImpossibleHeader {
        base_offset: batch.base_offset(),
        reason,
    };
    if batch.next_offset() <= position {
        return Err(impossible("it ends before the offset fetched"));
    }
    if high_watermark >= 0 && batch.next_offset() > high_watermark {
        return Err(impossible("it ends past the partition's high watermark"));
    }
    Ok(())
}

/// A source partition being fetched.
#[derive(Debug)]
pub(crate) struct Cursor {
    /// The partition on both clusters.
    pub route: Route,
    /// The next offset to fetch.
    pub position: i64,
    /// Where fetched batches go.
    pub queue: Arc<PartitionQueue>,
    /// Refetches of a damaged batch so far.
    pub corrupt_refetches: u32,
    /// KIP-392: a replica to fetch from instead of the leader, until the lease ends.
    pub preferred: Option<(i32, Instant)>,
    /// The ID of the source topic `position` belongs to (KIP-516), if the broker gives IDs:
    /// another ID under the same name is a new topic, mirrored from its start.
    pub topic_id: Option<TopicId>,
}

/// What a fetched partition's data gave.
#[derive(Debug)]
pub(crate) enum Taken {
    /// Entries for the queue (possibly none); the position moved past them.
    Entries(Vec<Entry>),
    /// A batch failed its checks: the entries before it, then fetch it again.
    Refetch(Vec<Entry>),
    /// The entries before a batch that cannot be forwarded, then a stop there.
    Stop(Vec<Entry>),
}

impl Cursor {
    /// A cursor of `route` at `position`, feeding `queue`.
    pub(crate) fn new(route: Route, position: i64, queue: Arc<PartitionQueue>) -> Cursor {
        Cursor {
            topic_id: route.source_topic_id,
            route,
            position,
            queue,
            corrupt_refetches: 0,
            preferred: None,
        }
    }

    /// The partition as the fetch session knows it.
    pub(crate) fn key(&self) -> PartitionKey {
        (self.route.source_key.clone(), self.route.partition)
    }

    /// Where to fetch from next, with `partition_max_bytes`.
    pub(crate) fn fetch_position(&self, partition_max_bytes: i32) -> FetchPosition {
        FetchPosition {
            fetch_offset: self.position,
            partition_max_bytes,
        }
    }

    /// Turns the partition's data (without error) into queue entries: control batches,
    /// aborted transactions (under read_committed) and empty batches become offsets to skip;
    /// compacted batches and a position inside a batch take the slow path; every other batch is
    /// forwarded as the slice of the response it is, holding `charge`.
    /// `on_corrupt` is called for each batch that fails its checks ([`check_fetched`]).
    pub(crate) fn take(
        &mut self,
        data: FetchedPartition,
        charge: &Arc<Charge>,
        read_committed: bool,
        mut on_corrupt: impl FnMut(),
    ) -> Taken {
        let fetched_at = Instant::now();
        let stats = self.queue.stats().clone();
        stats.record_source_end(data.high_watermark);
        let mut filter = AbortedTransactionFilter::new(data.aborted_transactions);
        let mut entries = Vec::new();
        let batch_error =
            |offset, error| MirrorError::batch(&self.route.source_topic, self.route.partition, offset, error);
        for batch in RecordBatches::new(data.records) {
            let batch = match batch {
                Ok(batch) => batch,
                Err(error) => {
                    entries.push(Entry::Stop(batch_error(self.position, error)));
                    return Taken::Stop(entries);
                }
            };
            // Before any decision: a damaged header could otherwise make a batch look mirrored.
            if let Err(error) = check_fetched(&batch, self.position, data.high_watermark) {
                on_corrupt();
                let error = batch_error(batch.base_offset(), error);
                if self.corrupt_refetches == CORRUPT_REFETCHES {
                    entries.push(Entry::Stop(error));
                    return Taken::Stop(entries);
                }
                self.corrupt_refetches += 1;
                tracing::warn!(%error, attempt = self.corrupt_refetches, "fetching the batch again");
                return Taken::Refetch(entries);
            }
            self.corrupt_refetches = 0;
            // An undefined codec (bits 5-7) would be forwarded as is; refuse it here, by name.
            if let Err(error) = batch.compression() {
                entries.push(Entry::Stop(batch_error(batch.base_offset(), error)));
                return Taken::Stop(entries);
            }
            stats.record_polled(batch.last_offset(), batch.first_timestamp(), batch.max_timestamp());
            let verdict = if read_committed {
                filter.check(&batch)
            } else {
                BatchVerdict::Forward
            };
            let entry = if verdict != BatchVerdict::Forward || batch.is_control() || batch.records_count() == 0 {
                Entry::Skip {
                    last: batch.last_offset(),
                }
            } else if batch.is_compacted() || batch.base_offset() < self.position {
                // The slow path: decompress, keep the records at or after the position,
                // renumber, compress again. The new batch holds memory of its own.
                match rebuild_batch(&batch, self.position) {
                    Ok(Some(rebuilt)) => Entry::Forward(Outgoing {
                        fetched_at,
                        charge: Arc::new(self.queue.budget().charge(rebuilt.batch.size())),
                        batch: rebuilt.batch,
                        source_last: batch.last_offset(),
                        source_offsets: Some(rebuilt.source_offsets),
                    }),
                    Ok(None) => Entry::Skip {
                        last: batch.last_offset(),
                    },
                    Err(error) => {
                        entries.push(Entry::Stop(batch_error(self.position, error)));
                        return Taken::Stop(entries);
                    }
                }
            } else {
                Entry::Forward(Outgoing {
                    source_last: batch.last_offset(),
                    source_offsets: None,
                    charge: charge.clone(),
                    batch,
                    fetched_at,
                })
            };
            self.position = match &entry {
                Entry::Forward(outgoing) => outgoing.source_last + 1,
                Entry::Skip { last } => last + 1,
                Entry::Stop(_) | Entry::Restart { .. } => self.position,
            };
            entries.push(entry);
        }
        Taken::Entries(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outgoing::tests::batch_at;

    fn reason(result: Result<(), WireError>) -> Option<&'static str> {
        match result {
            Ok(()) => None,
            Err(WireError::ImpossibleHeader { reason, .. }) => Some(reason),
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn a_fetched_batch_must_hold_or_follow_the_position_and_end_by_the_high_watermark() {
        let batch = batch_at(100, 10); // offsets 100-109
        assert_eq!(reason(check_fetched(&batch, 100, 110)), None);
        assert_eq!(
            reason(check_fetched(&batch, 105, 200)),
            None,
            "a fetch starts at the batch holding it"
        );
        assert_eq!(
            reason(check_fetched(&batch, 50, -1)),
            None,
            "a gap, the high watermark unknown"
        );
        assert_eq!(
            reason(check_fetched(&batch, 110, 200)),
            Some("it ends before the offset fetched")
        );
        assert_eq!(
            reason(check_fetched(&batch, 100, 109)),
            Some("it ends past the partition's high watermark")
        );
    }
}
