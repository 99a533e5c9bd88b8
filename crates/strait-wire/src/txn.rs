//! read_committed filtering of fetched batches, as Kafka's Java consumer does it.
//!
//! A read_committed fetch stops at the last stable offset but still returns the batches of
//! aborted transactions, with an `aborted_transactions` list of `(producer_id, first_offset)`;
//! the client drops them.
//!
//! # References
//! - <https://kafka.apache.org/documentation/#fetch> (`aborted_transactions`)
//! - KIP-98: <https://cwiki.apache.org/confluence/display/KAFKA/KIP-98+-+Exactly+Once+Delivery+and+Transactional+Messaging>

use std::collections::{BTreeSet, HashSet};

use crate::{ControlType, RecordBatch};

/// What to do with a fetched batch under read_committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchVerdict {
    /// Forward it.
    Forward,
    /// Drop it: data of an aborted transaction.
    SkipAborted,
    /// Drop it: a transaction marker, which only moves the position.
    SkipControl,
}

/// Decides, batch by batch in log order, which batches of one partition's fetch response
/// belong to aborted transactions.
///
/// The algorithm: an aborted transaction becomes active once a batch of a producer reaches its
/// first offset; from then on that producer's transactional batches are dropped, until its
/// ABORT marker ends the transaction. Non-transactional batches are never dropped.
#[derive(Debug, Clone, Default)]
pub struct AbortedTransactionFilter {
    /// `(first_offset, producer_id)` not yet reached, smallest offset first.
    upcoming: BTreeSet<(i64, i64)>,
    /// Producers whose current transaction is aborted.
    aborted: HashSet<i64>,
}

impl AbortedTransactionFilter {
    /// A filter for one fetch response's `aborted_transactions`, as `(producer_id,
    /// first_offset)` pairs.
    pub fn new(aborted_transactions: Vec<(i64, i64)>) -> Self {
        AbortedTransactionFilter {
            upcoming: aborted_transactions
                .into_iter()
                .map(|(producer_id, first_offset)| (first_offset, producer_id))
                .collect(),
            aborted: HashSet::new(),
        }
    }

    /// The verdict for the next batch; call it for every batch, in log order.
    ///
    /// A control batch whose marker cannot be read counts as not an ABORT marker, as if it were
    /// an unknown control type: the producer's later transactional batches stay dropped until a
    /// readable ABORT marker. (Kafka's consumer would fail the fetch instead.)
    pub fn check(&mut self, batch: &RecordBatch) -> BatchVerdict {
        let producer_id = batch.producer_id();
        if producer_id < 0 {
            // No producer id, no transaction; a control batch is still never delivered.
            return if batch.is_control() {
                BatchVerdict::SkipControl
            } else {
                BatchVerdict::Forward
            };
        }
        while let Some(&(first_offset, aborted_producer)) = self.upcoming.first() {
            if first_offset > batch.last_offset() {
                break;
            }
            self.upcoming.pop_first();
            self.aborted.insert(aborted_producer);
        }
        if batch.is_control() {
            if batch.control_type() == Ok(Some(ControlType::Abort)) {
                // That transaction is over; the producer's later data is a new transaction.
                self.aborted.remove(&producer_id);
            }
            BatchVerdict::SkipControl
        } else if batch.is_transactional() && self.aborted.contains(&producer_id) {
            BatchVerdict::SkipAborted
        } else {
            BatchVerdict::Forward
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{marker, sample, stored};
    use crate::Compression;

    /// A 3-record data batch at `base` (covering base..=base+2).
    fn data(base: i64, producer_id: i64, transactional: bool) -> RecordBatch {
        let attributes = if transactional { 0x10 } else { 0 };
        RecordBatch::new(stored(&sample(Compression::None), base, attributes, producer_id)).unwrap()
    }

    fn control(base: i64, producer_id: i64, control_type: i16) -> RecordBatch {
        RecordBatch::new(marker(base, producer_id, control_type)).unwrap()
    }

    #[test]
    fn an_aborted_transaction_is_dropped_and_the_next_one_is_not() {
        // pid 1 aborts 0..=2 (marker 3); pid 2 commits 4..=6 (marker 7); pid 1 again 8..=10.
        let mut filter = AbortedTransactionFilter::new(vec![(1, 0)]);
        assert_eq!(filter.check(&data(0, 1, true)), BatchVerdict::SkipAborted);
        assert_eq!(filter.check(&control(3, 1, 0)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&data(4, 2, true)), BatchVerdict::Forward);
        assert_eq!(filter.check(&control(7, 2, 1)), BatchVerdict::SkipControl);
        assert_eq!(
            filter.check(&data(8, 1, true)),
            BatchVerdict::Forward,
            "a new transaction"
        );
        assert_eq!(filter.check(&data(11, -1, false)), BatchVerdict::Forward);
    }

    #[test]
    fn interleaved_producers_are_told_apart() {
        // pid 1 and pid 2 interleave; only pid 2's transaction (from offset 3) aborted.
        let mut filter = AbortedTransactionFilter::new(vec![(2, 3)]);
        assert_eq!(filter.check(&data(0, 1, true)), BatchVerdict::Forward);
        assert_eq!(filter.check(&data(3, 2, true)), BatchVerdict::SkipAborted);
        assert_eq!(filter.check(&data(6, 1, true)), BatchVerdict::Forward);
        assert_eq!(filter.check(&data(9, 2, true)), BatchVerdict::SkipAborted);
        assert_eq!(filter.check(&control(12, 1, 1)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&control(13, 2, 0)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&data(14, 2, true)), BatchVerdict::Forward);
    }

    #[test]
    fn non_transactional_batches_of_an_aborted_producer_are_forwarded() {
        let mut filter = AbortedTransactionFilter::new(vec![(5, 0)]);
        assert_eq!(filter.check(&data(0, 5, false)), BatchVerdict::Forward);
        assert_eq!(filter.check(&data(3, 5, true)), BatchVerdict::SkipAborted);
    }

    #[test]
    fn an_abort_starting_before_the_fetch_applies_from_the_first_batch() {
        // The fetch started at 100, inside a transaction that began at 40.
        let mut filter = AbortedTransactionFilter::new(vec![(7, 40), (7, 40)]);
        assert_eq!(filter.check(&data(100, 7, true)), BatchVerdict::SkipAborted);
        assert_eq!(filter.check(&control(103, 7, 0)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&data(104, 7, true)), BatchVerdict::Forward);
    }

    #[test]
    fn an_abort_takes_effect_only_once_its_first_offset_is_reached() {
        // pid 3 commits 0..=2, then a later transaction from offset 4 aborts.
        let mut filter = AbortedTransactionFilter::new(vec![(3, 4)]);
        assert_eq!(filter.check(&data(0, 3, true)), BatchVerdict::Forward);
        assert_eq!(filter.check(&control(3, 3, 1)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&data(4, 3, true)), BatchVerdict::SkipAborted);
        // A batch without a producer id neither consumes nor is affected by the list.
        let mut filter = AbortedTransactionFilter::new(vec![(3, 4)]);
        assert_eq!(filter.check(&data(4, -1, false)), BatchVerdict::Forward);
        assert_eq!(filter.check(&data(7, 3, true)), BatchVerdict::SkipAborted);
    }

    #[test]
    fn markers_are_skipped_without_an_aborted_list() {
        let mut filter = AbortedTransactionFilter::new(vec![]);
        assert_eq!(filter.check(&control(0, 1, 1)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&control(1, 1, 0)), BatchVerdict::SkipControl);
        assert_eq!(filter.check(&data(2, 1, true)), BatchVerdict::Forward);
    }
}
