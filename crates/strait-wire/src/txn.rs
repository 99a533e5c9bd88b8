//! read_committed filtering of fetched batches: the Java consumer's algorithm.

use std::collections::{BTreeSet, HashSet};

use crate::{ControlType, RecordBatch};

/// What to do with a fetched batch under read_committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchVerdict {
    /// Forward it.
    Forward,
    /// Drop it: data of an aborted transaction.
    SkipAborted,
    /// Drop it: a transaction marker (only moves the position).
    SkipControl,
}

/// Decides, batch by batch in log order, which batches belong to aborted transactions, from the
/// `aborted_transactions` list of a read_committed fetch response.
#[derive(Debug, Clone, Default)]
pub struct AbortedTransactionFilter {
    /// `(first_offset, producer_id)` not yet reached, smallest first.
    upcoming: BTreeSet<(i64, i64)>,
    /// Producers whose current transaction is aborted.
    aborted: HashSet<i64>,
}

impl AbortedTransactionFilter {
    /// A filter for one fetch response's `(producer_id, first_offset)` list.
    pub fn new(aborted_transactions: Vec<(i64, i64)>) -> Self {
        AbortedTransactionFilter {
            upcoming: aborted_transactions
                .into_iter()
                .map(|(pid, first)| (first, pid))
                .collect(),
            aborted: HashSet::new(),
        }
    }

    /// The verdict for the next batch (call in log order).
    pub fn check(&mut self, batch: &RecordBatch) -> BatchVerdict {
        let producer_id = batch.producer_id();
        if producer_id >= 0 {
            while let Some(&(first, pid)) = self.upcoming.first() {
                if first > batch.last_offset() {
                    break;
                }
                self.upcoming.pop_first();
                self.aborted.insert(pid);
            }
        }
        if batch.is_control() {
            if batch.control_type() == Some(ControlType::Abort) {
                // That transaction is over; later data of the producer is a new transaction.
                self.aborted.remove(&producer_id);
            }
            return BatchVerdict::SkipControl;
        }
        if batch.is_transactional() && self.aborted.contains(&producer_id) {
            return BatchVerdict::SkipAborted;
        }
        BatchVerdict::Forward
    }
}
