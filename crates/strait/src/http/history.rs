//! The last 15 minutes of every flow, kept in memory for the status page's plots: one sample
//! every [`SAMPLE_INTERVAL`] of its throughput and lag.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strait_mirror::{FlowSummary, Stats};

/// How often a flow is sampled.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(2);
/// How far back the samples go.
pub const KEPT_FOR: Duration = Duration::from_secs(15 * 60);
/// Samples kept per flow: 15 minutes of them.
const KEPT: usize = (KEPT_FOR.as_secs() / SAMPLE_INTERVAL.as_secs()) as usize;

/// One flow at one moment.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sample {
    /// When, in milliseconds since the epoch.
    pub time_ms: i64,
    /// Records acknowledged per second since the previous sample.
    pub records_per_second: f64,
    /// Record batch bytes acknowledged per second since the previous sample.
    pub bytes_per_second: f64,
    /// Records behind, over all partitions.
    pub lag_records: i64,
    /// The largest lag of a partition in seconds.
    pub lag_seconds: f64,
}

/// The samples of every flow, in the order of the process's flows.
#[derive(Debug)]
pub struct History {
    flows: Vec<Mutex<FlowHistory>>,
}

#[derive(Debug, Default)]
struct FlowHistory {
    samples: VecDeque<Sample>,
    /// The counters at the last sample: (time, records, bytes).
    last: Option<(i64, u64, u64)>,
}

impl History {
    /// An empty history for `flows` flows.
    pub fn new(flows: usize) -> Self {
        History {
            flows: (0..flows).map(|_| Mutex::default()).collect(),
        }
    }

    /// Takes one sample of every flow at `now_ms`.
    pub fn sample(&self, flows: &[Arc<Stats>], now_ms: i64) {
        for (flow, stats) in flows.iter().enumerate() {
            self.record(flow, now_ms, stats.records(), stats.bytes(), &stats.summary());
        }
    }

    /// Records flow `flow` at `now_ms`, from its counters of records and bytes acknowledged so
    /// far and its partitions' summary, dropping samples older than [`KEPT_FOR`].
    fn record(&self, flow: usize, now_ms: i64, records: u64, bytes: u64, summary: &FlowSummary) {
        if let Some(history) = self.flows.get(flow) {
            let mut history = history.lock().expect("history lock");
            let (records_per_second, bytes_per_second) = match history.last {
                Some((then, records_then, bytes_then)) if now_ms > then => {
                    let seconds = (now_ms - then) as f64 / 1000.0;
                    (
                        records.saturating_sub(records_then) as f64 / seconds,
                        bytes.saturating_sub(bytes_then) as f64 / seconds,
                    )
                }
                _ => (0.0, 0.0),
            };
            history.last = Some((now_ms, records, bytes));
            if history.samples.len() == KEPT {
                history.samples.pop_front();
            }
            history.samples.push_back(Sample {
                time_ms: now_ms,
                records_per_second,
                bytes_per_second,
                lag_records: summary.lag_records,
                lag_seconds: summary.lag_seconds,
            });
        }
    }

    /// The samples of flow `flow`, oldest first.
    pub fn samples(&self, flow: usize) -> Vec<Sample> {
        self.flows
            .get(flow)
            .map(|h| h.lock().expect("history lock").samples.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// Samples every flow every [`SAMPLE_INTERVAL`], for as long as the task runs.
pub async fn keep(history: Arc<History>, flows: Arc<Vec<Arc<Stats>>>) {
    let mut ticker = tokio::time::interval(SAMPLE_INTERVAL);
    loop {
        ticker.tick().await;
        history.sample(&flows, now_ms());
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_from_the_counters_between_two_samples() {
        let history = History::new(1);
        let lagging = FlowSummary {
            lag_records: 70,
            lag_seconds: 3.5,
            ..FlowSummary::default()
        };
        history.record(0, 10_000, 1_000, 100_000, &FlowSummary::default());
        history.record(0, 12_000, 1_500, 150_000, &lagging);
        let samples = history.samples(0);
        assert_eq!(samples.len(), 2);
        assert_eq!((samples[0].records_per_second, samples[0].time_ms), (0.0, 10_000));
        assert_eq!(samples[1].records_per_second, 250.0);
        assert_eq!(samples[1].bytes_per_second, 25_000.0);
        assert_eq!((samples[1].lag_records, samples[1].lag_seconds), (70, 3.5));
        assert!(history.samples(1).is_empty(), "no such flow");
    }

    #[test]
    fn every_flow_is_sampled() {
        let flows = [Arc::new(Stats::new("a", "b")), Arc::new(Stats::new("b", "a"))];
        let history = History::new(2);
        history.sample(&flows, 1);
        assert_eq!((history.samples(0).len(), history.samples(1).len()), (1, 1));
    }

    #[test]
    fn only_the_last_fifteen_minutes_are_kept() {
        let history = History::new(1);
        let step = SAMPLE_INTERVAL.as_millis() as i64;
        for i in 0..(2 * KEPT as i64) {
            history.record(0, i * step, 0, 0, &FlowSummary::default());
        }
        let samples = history.samples(0);
        assert_eq!(samples.len(), KEPT);
        let span = samples.last().unwrap().time_ms - samples[0].time_ms;
        assert!(span < KEPT_FOR.as_millis() as i64, "{span} ms kept");
    }
}
