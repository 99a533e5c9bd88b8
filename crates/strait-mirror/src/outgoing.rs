//! A batch on its way from the source to the target, and where its records came from.

use std::sync::Arc;
use std::time::Instant;

use strait_wire::{split_batch, RecordBatch, WireError};

use crate::budget::Charge;
use crate::offset_syncs::OffsetMapping;

/// A batch to forward: the source's own (a slice of the fetch response), or one rebuilt on the
/// slow path.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// The batch as it is forwarded.
    pub batch: RecordBatch,
    /// The last source offset it covers: the position to record once it is acknowledged.
    pub source_last: i64,
    /// For a rebuilt batch, the source offset of each record (offsets have gaps); `None` when
    /// the batch is the source's own and offsets are consecutive from its base offset.
    pub source_offsets: Option<Vec<i64>>,
    /// The budget bytes that hold the batch's memory: the fetch response it is a slice of, or
    /// its own for a rebuilt batch.
    pub charge: Arc<Charge>,
    /// When its fetch response arrived: from then on, the time is Strait's.
    pub fetched_at: Instant,
}

impl Outgoing {
    /// The first source offset it covers.
    pub fn source_first(&self) -> i64 {
        self.source_offsets
            .as_ref()
            .and_then(|o| o.first().copied())
            .unwrap_or(self.batch.base_offset())
    }

    /// The batch as two batches of half its records each, for a target that refused it as too
    /// large; `None` for a single record. The halves hold memory of their own, charged with
    /// `charge` (called with each half's size).
    pub fn split(&self, mut charge: impl FnMut(usize) -> Charge) -> Result<Option<(Outgoing, Outgoing)>, WireError> {
        let Some((head, tail)) = split_batch(&self.batch)? else {
            return Ok(None);
        };
        // Offsets in `self.batch`, mapped back to the source's for a batch rebuilt before.
        let source = |offsets: Vec<i64>| match &self.source_offsets {
            None => offsets,
            Some(original) => offsets
                .into_iter()
                .map(|o| {
                    let index = usize::try_from(o - self.batch.base_offset()).unwrap_or(usize::MAX);
                    original.get(index).copied().unwrap_or(o)
                })
                .collect(),
        };
        let head_offsets = source(head.source_offsets);
        let head = Outgoing {
            fetched_at: self.fetched_at,
            charge: Arc::new(charge(head.batch.size())),
            batch: head.batch,
            source_last: head_offsets.last().copied().unwrap_or(self.source_last),
            source_offsets: Some(head_offsets),
        };
        let tail = Outgoing {
            fetched_at: self.fetched_at,
            charge: Arc::new(charge(tail.batch.size())),
            batch: tail.batch,
            source_last: self.source_last,
            source_offsets: Some(source(tail.source_offsets)),
        };
        Ok(Some((head, tail)))
    }

    /// The batch copied into memory of its own, charged with `charge`: a batch that waits long
    /// (its partition's target keeps refusing it) must not keep the whole fetch response it came
    /// in alive.
    pub fn detach(&mut self, charge: impl FnOnce(usize) -> Charge) {
        let own = bytes::Bytes::copy_from_slice(self.batch.as_bytes());
        if let Ok(batch) = RecordBatch::new(own) {
            self.charge = Arc::new(charge(batch.size()));
            self.batch = batch;
        }
    }

    /// Where each run of consecutive source offsets landed, given the target base offset.
    pub fn mappings(&self, source_topic: &str, partition: i32, target_base: i64) -> Vec<OffsetMapping> {
        mappings(
            source_topic,
            partition,
            self.batch.base_offset(),
            self.batch.records_count(),
            self.source_offsets.as_deref(),
            target_base,
        )
    }
}

/// Where each run of consecutive source offsets of a forwarded batch landed, given its target
/// base offset: `records` records from `source_base`, or for a rebuilt batch the records at
/// `source_offsets`.
pub(crate) fn mappings(
    source_topic: &str,
    partition: i32,
    source_base: i64,
    records: i32,
    source_offsets: Option<&[i64]>,
    target_base: i64,
) -> Vec<OffsetMapping> {
    let mapping = |source_offset, target_offset, records| OffsetMapping {
        source_topic: source_topic.to_owned(),
        partition,
        source_offset,
        target_offset,
        records,
    };
    let Some(offsets) = source_offsets else {
        return vec![mapping(source_base, target_base, records)];
    };
    let mut runs: Vec<OffsetMapping> = Vec::new();
    for (i, &offset) in offsets.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if run.source_offset + i64::from(run.records) == offset => run.records += 1,
            _ => runs.push(mapping(offset, target_base + i as i64, 1)),
        }
    }
    runs
}

#[cfg(test)]
pub(crate) mod tests {
    use bytes::{BufMut, Bytes, BytesMut};
    use strait_wire::RecordBatchBuilder;

    use super::*;
    use crate::budget::Budget;

    /// A batch of `records` records with base offset `base`, as a fetch returns it.
    pub(crate) fn batch_at(base: i64, records: usize) -> RecordBatch {
        let mut builder = RecordBatchBuilder::new();
        for i in 0..records {
            builder.push(
                None,
                Some(Bytes::from(format!("value-{i}"))),
                vec![],
                1_700_000_000_000 + i as i64,
            );
        }
        let built = builder.build();
        let mut bytes = BytesMut::from(&built[..]);
        (&mut bytes[..8]).put_i64(base);
        RecordBatch::new(bytes.freeze()).unwrap()
    }

    pub(crate) fn outgoing(batch: RecordBatch, budget: &Arc<Budget>) -> Outgoing {
        Outgoing {
            source_last: batch.last_offset(),
            charge: Arc::new(budget.charge(batch.size())),
            batch,
            source_offsets: None,
            fetched_at: Instant::now(),
        }
    }

    #[test]
    fn a_split_keeps_the_source_offsets_of_each_half() {
        let budget = Budget::new(1 << 20);
        let whole = outgoing(batch_at(100, 5), &budget);
        let (head, tail) = whole.split(|bytes| budget.charge(bytes)).unwrap().unwrap();
        assert_eq!(head.source_offsets, Some(vec![100, 101]));
        assert_eq!((head.source_first(), head.source_last), (100, 101));
        assert_eq!(tail.source_offsets, Some(vec![102, 103, 104]));
        assert_eq!((tail.source_first(), tail.source_last), (102, 104));
        // Split again: offsets still map to the source's.
        let (_, tail_tail) = tail.split(|bytes| budget.charge(bytes)).unwrap().unwrap();
        assert_eq!(tail_tail.source_offsets, Some(vec![103, 104]));
        assert!(outgoing(batch_at(7, 1), &budget)
            .split(|bytes| budget.charge(bytes))
            .unwrap()
            .is_none());
    }

    #[test]
    fn mappings_follow_runs_of_consecutive_source_offsets() {
        let budget = Budget::new(1 << 20);
        let plain = outgoing(batch_at(40, 3), &budget);
        let runs = plain.mappings("t", 2, 1000);
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].source_offset, runs[0].target_offset, runs[0].records),
            (40, 1000, 3)
        );
        let rebuilt = Outgoing {
            source_offsets: Some(vec![10, 11, 15, 16, 20]),
            ..outgoing(batch_at(0, 5), &budget)
        };
        let runs: Vec<(i64, i64, i32)> = rebuilt
            .mappings("t", 2, 500)
            .iter()
            .map(|m| (m.source_offset, m.target_offset, m.records))
            .collect();
        assert_eq!(runs, vec![(10, 500, 2), (15, 502, 2), (20, 504, 1)]);
    }

    #[test]
    fn a_detached_batch_no_longer_holds_the_response_it_came_in() {
        let budget = Budget::new(1 << 20);
        let response = Arc::new(budget.charge(10_000));
        let batch = batch_at(0, 3);
        let mut waiting = Outgoing {
            source_last: batch.last_offset(),
            charge: response.clone(),
            batch: batch.clone(),
            source_offsets: None,
            fetched_at: Instant::now(),
        };
        drop(response);
        assert_eq!(budget.used(), 10_000);
        waiting.detach(|bytes| budget.charge(bytes));
        assert_eq!(budget.used(), batch.size(), "only the batch's own copy is held");
        assert_eq!(waiting.batch.as_bytes(), batch.as_bytes());
        assert_ne!(waiting.batch.as_bytes().as_ptr(), batch.as_bytes().as_ptr());
    }
}
