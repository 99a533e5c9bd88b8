//! Counters the mirror keeps while it runs, and the exact source→target offset mapping of every
//! forwarded batch (which offset syncs and checkpoints are built on).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Mappings kept per partition; older ones are dropped.
const MAPPINGS_KEPT: usize = 128;

/// Where one forwarded batch landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetMapping {
    /// The source topic.
    pub source_topic: String,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// Source offset of the batch's first record.
    pub source_offset: i64,
    /// Target offset the produce response gave the same record.
    pub target_offset: i64,
    /// Records in the batch (consecutive offsets on both sides).
    pub records: i32,
}

/// Live counters of one flow.
#[derive(Debug, Default)]
pub struct Stats {
    records: AtomicU64,
    bytes: AtomicU64,
    gap_records: AtomicU64,
    source_ends: Mutex<HashMap<(String, i32), i64>>,
    mappings: Mutex<HashMap<(String, i32), VecDeque<OffsetMapping>>>,
}

impl Stats {
    /// Records forwarded and acknowledged so far.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Bytes (of record batches) forwarded and acknowledged so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Source offsets deleted at the source before they could be mirrored.
    pub fn gap_records(&self) -> u64 {
        self.gap_records.load(Ordering::Relaxed)
    }

    /// The latest mappings of a partition, oldest first.
    pub fn mappings(&self, topic: &str, partition: i32) -> Vec<OffsetMapping> {
        let mappings = self.mappings.lock().expect("stats lock");
        mappings
            .get(&(topic.to_owned(), partition))
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The source high watermark last seen per partition.
    pub fn source_ends(&self) -> HashMap<(String, i32), i64> {
        self.source_ends.lock().expect("stats lock").clone()
    }

    pub(crate) fn record_forwarded(&self, records: u64, bytes: u64) {
        self.records.fetch_add(records, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn record_gap(&self, records: i64) {
        self.gap_records.fetch_add(records.max(0) as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_source_end(&self, topic: &str, partition: i32, high_watermark: i64) {
        self.source_ends
            .lock()
            .expect("stats lock")
            .insert((topic.to_owned(), partition), high_watermark);
    }

    pub(crate) fn record_mapping(&self, mapping: OffsetMapping) {
        let mut mappings = self.mappings.lock().expect("stats lock");
        let kept = mappings
            .entry((mapping.source_topic.clone(), mapping.partition))
            .or_default();
        if kept.len() == MAPPINGS_KEPT {
            kept.pop_front();
        }
        kept.push_back(mapping);
    }
}
