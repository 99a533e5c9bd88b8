//! Helpers for the compacted internal topics Strait shares with MirrorMaker 2.

use std::time::Duration;

use bytes::Bytes;
use strait_client::{Backoff, KafkaClient, NewTopic, OffsetSpec};
use strait_wire::{decode_records, AbortedTransactionFilter, BatchVerdict, RecordBatchBuilder, RecordBatches};

use crate::MirrorError;

/// How long a read waits for an open transaction on an internal topic to end: past Kafka's
/// default `transaction.timeout.ms` (60 s) and the coordinator's check for timed-out ones (10 s).
const OPEN_TRANSACTION_WAIT: Duration = Duration::from_secs(75);

/// Creates a compacted topic unless it exists, with the replication factor capped at the number
/// of brokers (a one-broker cluster cannot hold three replicas), and waits for its leaders.
/// Returns its partition count.
pub(crate) async fn ensure_compacted_topic(
    client: &KafkaClient,
    cluster: &str,
    topic: &str,
    partitions: i32,
    replication_factor: i16,
) -> Result<i32, MirrorError> {
    let fail = MirrorError::client_at(cluster);
    let brokers = client.metadata(Some(&[])).await.map_err(fail)?.brokers.len() as i16;
    client
        .create_topics(&[NewTopic {
            name: topic.into(),
            partitions,
            replication_factor: replication_factor.min(brokers.max(1)),
            configs: vec![("cleanup.policy".into(), "compact".into())],
        }])
        .await
        .map_err(fail)?;
    let metadata = client
        .wait_for_leaders(topic, Duration::from_secs(60))
        .await
        .map_err(fail)?;
    Ok(metadata.partitions.len() as i32)
}

/// Every data record (key, value) of one partition, from the log start to the current end.
pub(crate) async fn read_partition(
    client: &KafkaClient,
    cluster: &str,
    topic: &str,
    partition: i32,
) -> Result<Vec<(Option<Bytes>, Option<Bytes>)>, MirrorError> {
    read_partitions(client, cluster, topic, &[partition]).await
}

/// Every data record (key, value) of `partitions`, partition after partition, from the log start
/// to the current end. Offsets are listed for all partitions at once and empty partitions are
/// not fetched: over a slow link every round trip counts.
///
/// Records of aborted transactions are left out (an exactly-once mirror writes its positions in
/// transactions), as a `read_committed` consumer leaves them out; the read waits for open
/// transactions to end, as Connect's offsets reader does.
pub(crate) async fn read_partitions(
    client: &KafkaClient,
    cluster: &str,
    topic: &str,
    partitions: &[i32],
) -> Result<Vec<(Option<Bytes>, Option<Bytes>)>, MirrorError> {
    read_records(client, cluster, topic, partitions, None).await
}

/// The data records (key, value) among the last `count` offsets of one partition.
pub(crate) async fn read_tail(
    client: &KafkaClient,
    cluster: &str,
    topic: &str,
    partition: i32,
    count: i64,
) -> Result<Vec<(Option<Bytes>, Option<Bytes>)>, MirrorError> {
    read_records(client, cluster, topic, &[partition], Some(count)).await
}

/// The data records of `partitions`, from the log start (or the last `tail` offsets) to the end.
async fn read_records(
    client: &KafkaClient,
    cluster: &str,
    topic: &str,
    partitions: &[i32],
    tail: Option<i64>,
) -> Result<Vec<(Option<Bytes>, Option<Bytes>)>, MirrorError> {
    let fail = MirrorError::client_at(cluster);
    let corrupt = |message: String| MirrorError::internal_topic(topic, message);
    let starts = client
        .list_offsets(topic, partitions, OffsetSpec::Earliest)
        .await
        .map_err(fail)?;
    let ends = client
        .list_offsets(topic, partitions, OffsetSpec::Latest)
        .await
        .map_err(fail)?;
    let mut records = Vec::new();
    for &partition in partitions {
        let end = ends[&partition];
        let mut position = starts[&partition].max(tail.map_or(i64::MIN, |count| end - count));
        // An open transaction holds the last stable offset back: wait for it to end (a
        // transaction is committed or aborted within its timeout).
        let mut stalled = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
        let stall_until = tokio::time::Instant::now() + OPEN_TRANSACTION_WAIT;
        while position < end {
            let fetched = client
                .fetch(topic, partition, position, 1 << 20, true)
                .await
                .map_err(fail)?;
            let before = position;
            let mut aborted = AbortedTransactionFilter::new(fetched.aborted_transactions);
            for batch in RecordBatches::new(fetched.records) {
                let batch = batch.map_err(|e| corrupt(e.to_string()))?;
                if aborted.check(&batch) == BatchVerdict::Forward {
                    for record in decode_records(&batch).map_err(|e| corrupt(e.to_string()))? {
                        if batch.base_offset() + i64::from(record.offset_delta) >= position {
                            records.push((record.key, record.value));
                        }
                    }
                }
                position = batch.next_offset();
            }
            if position == before {
                if fetched.last_stable_offset <= position && tokio::time::Instant::now() < stall_until {
                    tokio::time::sleep(stalled.next_delay()).await;
                    continue;
                }
                return Err(corrupt(format!(
                    "no progress reading partition {partition} at offset {position} (last stable offset {}): \
                     a transaction on it stays open",
                    fetched.last_stable_offset
                )));
            }
        }
    }
    Ok(records)
}

/// Writes (key, value) records to one partition as one uncompressed batch; a value of `None`
/// is a tombstone (the key is deleted by compaction).
pub(crate) async fn write_records<V: Into<Option<Bytes>>>(
    client: &KafkaClient,
    cluster: &str,
    topic: &str,
    partition: i32,
    records: impl IntoIterator<Item = (Bytes, V)>,
) -> Result<(), MirrorError> {
    let now = now_ms();
    let mut builder = RecordBatchBuilder::new();
    for (key, value) in records {
        builder.push(Some(key), value.into(), Vec::new(), now);
    }
    if builder.is_empty() {
        return Ok(());
    }
    client
        .produce(topic, partition, vec![builder.build()])
        .await
        .map(drop)
        .map_err(MirrorError::client_at(cluster))
}

/// Wall-clock time in epoch milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Waits for the next tick of a periodic task: `true` when it is due, `false` once `shutdown`
/// says stop (or its sender is gone).
pub(crate) async fn next_tick(
    ticker: &mut tokio::time::Interval,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    tokio::select! {
        _ = ticker.tick() => true,
        _ = shutdown.changed() => false,
    }
}

/// `work`, unless `shutdown` says stop first: a periodic task's round against an unreachable
/// cluster must not hold a shutdown up. Only for work that is safe to cut short.
pub(crate) async fn unless_stopped<F: std::future::Future>(
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
    work: F,
) -> Option<F::Output> {
    tokio::select! {
        output = work => Some(output),
        _ = shutdown.changed() => None,
    }
}

/// Longest pause between attempts to set up a periodic task.
const SET_UP_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Runs `step` until it succeeds, pausing with a jittered backoff (from 1 s up to
/// `max_backoff`) after each error that `failed` says may pass (`failed` also reports it,
/// given the pause); an error `failed` refuses is returned. `Ok(None)` once `shutdown` says
/// stop, which also cuts an attempt short.
pub(crate) async fn retry_until_stopped<T, F, Fut>(
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
    max_backoff: Duration,
    mut step: F,
    mut failed: impl FnMut(&MirrorError, Duration) -> bool,
) -> Result<Option<T>, MirrorError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, MirrorError>>,
{
    let mut backoff = strait_client::Backoff::new(Duration::from_secs(1), max_backoff);
    loop {
        let Some(attempt) = unless_stopped(shutdown, step()).await else {
            return Ok(None);
        };
        match attempt {
            Ok(value) => return Ok(Some(value)),
            Err(error) => {
                let delay = backoff.next_delay();
                if !failed(&error, delay) {
                    return Err(error);
                }
                if unless_stopped(shutdown, tokio::time::sleep(delay)).await.is_none() {
                    return Ok(None);
                }
            }
        }
    }
}

/// Runs the set-up of the periodic task `task` of `flow` until it succeeds, showing each
/// failure in `stats` (so `/status` and `/health` see it) rather than ending the task; `None`
/// once `shutdown` says stop.
pub(crate) async fn set_up_task<T, F, Fut>(
    task: &'static str,
    flow: &str,
    stats: &crate::Stats,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
    step: F,
) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, MirrorError>>,
{
    let set_up = retry_until_stopped(shutdown, SET_UP_MAX_BACKOFF, step, |error, delay| {
        tracing::error!(flow, task, %error, "cannot set up {task}; retrying in {delay:?}");
        stats.set_task(task, Some(error.to_string()));
        true
    });
    // Every error is retried, so the only end without a value is a stop.
    let value = set_up.await.ok().flatten()?;
    stats.set_task(task, None);
    Some(value)
}
