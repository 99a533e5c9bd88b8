//! Checkpoints: consumer groups' source positions translated exactly for the target (by the
//! offset map), written to
//! `<source>.checkpoints.internal` on the target in MM2's format, and, with
//! `sync.group.offsets.enabled`, committed into target groups that have no active members.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strait_client::{CommittedOffset, KafkaClient, OffsetSpec};
use strait_config::FlowConfig;
use strait_wire::Checkpoint;
use tokio::sync::watch;

use crate::internal_topics::{
    ensure_compacted_topic, next_tick, now_ms, read_partition, set_up_task, unless_stopped, write_records,
};
use crate::offset_map::OffsetMap;
use crate::progress::ProgressStore;
use crate::sink::transaction::Transaction;
use crate::{MirrorError, Stats};

/// The latest checkpoint per (group, downstream topic, partition) in a checkpoints topic, sorted.
/// Records that are not checkpoints are skipped, as MM2's `MirrorClient` skips them.
pub async fn read_checkpoints(
    target: &KafkaClient,
    cluster: &str,
    topic: &str,
) -> Result<Vec<Checkpoint>, MirrorError> {
    let mut latest = BTreeMap::new();
    for (key, value) in read_partition(target, cluster, topic, 0).await? {
        if let (Some(key), Some(value)) = (key, value) {
            if let Ok(checkpoint) = Checkpoint::decode(&key, &value) {
                latest.insert(checkpoint_key(&checkpoint), checkpoint);
            }
        }
    }
    Ok(latest.into_values().collect())
}

/// (group, downstream topic, partition).
type CheckpointKey = (String, String, i32);

/// The task's name in `/status`.
const TASK: &str = "checkpoints";

/// Emits checkpoints every `emit.checkpoints.interval.seconds` until `shutdown`. A failed
/// set-up is retried and a failed round shows in `stats` until one succeeds: failover relies
/// on checkpoints. While `alone` says this process does not mirror every partition of the
/// flow (its group shares them out), each round reads the stored progress and offset map of
/// all of them.
pub(crate) async fn checkpoint_loop(
    flow: FlowConfig,
    source: KafkaClient,
    target: KafkaClient,
    stores: (Arc<ProgressStore>, Arc<OffsetMap>),
    transaction: Option<Arc<Transaction>>,
    (stats, alone): (Arc<Stats>, watch::Receiver<bool>),
    mut shutdown: watch::Receiver<bool>,
) {
    let Some(interval) = flow.emit_checkpoints.interval() else {
        return;
    };
    let name = flow.name();
    let target_alias = flow.target.alias.clone();
    let topic = flow.checkpoints_topic();
    // The latest checkpoint per key: the monotonic guard survives restarts (as in MM2 3.8+).
    let set_up = set_up_task(TASK, &name, &stats, &mut shutdown, || async {
        ensure_compacted_topic(
            &target,
            &target_alias,
            &topic,
            1,
            flow.checkpoints_topic_replication_factor,
        )
        .await?;
        read_checkpoints(&target, &target_alias, &topic).await
    });
    let Some(checkpoints) = set_up.await else {
        return;
    };
    let mut latest: HashMap<CheckpointKey, Checkpoint> =
        checkpoints.into_iter().map(|c| (checkpoint_key(&c), c)).collect();
    let sync_interval = flow.sync_group_offsets.interval();
    let mut next_group_sync = tokio::time::Instant::now() + sync_interval.unwrap_or(Duration::MAX / 4);
    let mut ticker = tokio::time::interval(interval);
    while next_tick(&mut ticker, &mut shutdown).await {
        let alone = *alone.borrow();
        let stored;
        let round_stores = if alone {
            (&*stores.0, &*stores.1)
        } else {
            let read = async {
                let progress = ProgressStore::open(&target, &flow.source.alias, &target_alias, 1).await?;
                let offset_map = OffsetMap::open(&target, &flow.source.alias, &target_alias, 1).await?;
                Ok::<_, MirrorError>((progress, offset_map))
            };
            match unless_stopped(&mut shutdown, read).await {
                None => break,
                Some(Ok(read)) => stored = read,
                Some(Err(error)) => {
                    tracing::warn!(flow = %name, %error, "reading the stored progress failed; retrying next interval");
                    stats.set_task(TASK, Some(error.to_string()));
                    continue;
                }
            }
            (&stored.0, &stored.1)
        };
        let emit = emit_checkpoints(
            &flow,
            (&source, &target),
            round_stores,
            transaction.as_deref(),
            &stats,
            &topic,
            &mut latest,
        );
        let Some(emitted) = unless_stopped(&mut shutdown, emit).await else {
            break;
        };
        match emitted {
            Ok(written) => {
                if written > 0 {
                    tracing::debug!(flow = %name, written, "checkpoints written");
                }
                stats.set_task(TASK, None);
            }
            Err(error) => {
                tracing::warn!(flow = %name, %error, "emitting checkpoints failed; retrying next interval");
                stats.set_task(TASK, Some(error.to_string()));
            }
        }
        if sync_interval.is_some() && tokio::time::Instant::now() >= next_group_sync {
            next_group_sync = tokio::time::Instant::now() + sync_interval.unwrap_or_default();
            if unless_stopped(&mut shutdown, sync_group_offsets(&flow, &target, &latest))
                .await
                .is_none()
            {
                break;
            }
        }
    }
}

fn checkpoint_key(checkpoint: &Checkpoint) -> CheckpointKey {
    (checkpoint.group.clone(), checkpoint.topic.clone(), checkpoint.partition)
}

/// The name of a source topic on the target, for checkpoints: a topic that came from the target
/// goes back to its own name, others get the policy's remote name (MM2's `renameTopicPartition`).
pub(crate) fn downstream_topic(flow: &FlowConfig, topic: &str) -> String {
    if flow.policy.topic_source(topic) == Some(flow.target.alias.as_str()) {
        flow.policy.original_topic(topic).to_owned()
    } else {
        flow.remote_topic(topic)
    }
}

/// Whether `checkpoint` is worth emitting after the `previous` one of its key: only what moves
/// forward downstream, or follows an upstream rewind (MM2's rule), so that a group's translated
/// position never goes back because of a coarser translation.
fn is_due(checkpoint: &Checkpoint, previous: Option<&Checkpoint>) -> bool {
    previous.is_none_or(|previous| {
        checkpoint.upstream_offset < previous.upstream_offset
            || checkpoint.downstream_offset > previous.downstream_offset
    })
}

/// The commits that bring a target group with the `current` offsets to its `checkpoints`: only
/// forward, never back over records the group has consumed at the target.
fn group_offset_updates(
    current: &BTreeMap<(String, i32), CommittedOffset>,
    checkpoints: &[&Checkpoint],
) -> BTreeMap<(String, i32), CommittedOffset> {
    let mut updates = BTreeMap::new();
    for checkpoint in checkpoints {
        let key = (checkpoint.topic.clone(), checkpoint.partition);
        if current
            .get(&key)
            .is_none_or(|c| c.offset < checkpoint.downstream_offset)
        {
            updates.insert(
                key,
                CommittedOffset {
                    offset: checkpoint.downstream_offset,
                    metadata: checkpoint.metadata.clone(),
                },
            );
        }
    }
    updates
}

async fn emit_checkpoints(
    flow: &FlowConfig,
    (source, target): (&KafkaClient, &KafkaClient),
    (progress, offset_map): (&ProgressStore, &OffsetMap),
    transaction: Option<&Transaction>,
    stats: &Stats,
    topic: &str,
    latest: &mut HashMap<CheckpointKey, Checkpoint>,
) -> Result<usize, MirrorError> {
    let fail = MirrorError::client_at(&flow.source.alias);
    let groups = source.list_groups().await.map_err(fail)?;
    // With when its group's offsets were read (for MM2's checkpoint latency) and how many
    // records a group failing over there would re-read.
    let mut fresh: Vec<(Checkpoint, i64, i64)> = Vec::new();
    for group in groups
        .iter()
        .filter(|g| flow.group_filter.should_replicate_group(&g.group_id))
    {
        let read_at = now_ms();
        let offsets = match source.committed_offsets(&group.group_id).await {
            Ok(offsets) => offsets,
            Err(error) => {
                tracing::warn!(group = %group.group_id, %error, "reading the group's offsets failed; skipped this cycle");
                continue;
            }
        };
        for ((upstream_topic, partition), committed) in offsets {
            if !flow.should_replicate_topic(&upstream_topic) {
                continue;
            }
            let covered = progress
                .last_replicated(&upstream_topic, partition)
                .map(|last| last + 1);
            let translation = offset_map.translate(&upstream_topic, partition, committed.offset, covered);
            let Some((downstream, rereads)) = translation.offset_and_rereads() else {
                tracing::debug!(group = %group.group_id, topic = %upstream_topic, partition, %translation, "no checkpoint");
                continue;
            };
            let checkpoint = Checkpoint {
                group: group.group_id.clone(),
                topic: downstream_topic(flow, &upstream_topic),
                partition,
                upstream_offset: committed.offset,
                downstream_offset: downstream,
                metadata: committed.metadata,
            };
            stats.record_rereads(&checkpoint.group, &checkpoint.topic, partition, rereads);
            if is_due(&checkpoint, latest.get(&checkpoint_key(&checkpoint))) {
                fresh.push((checkpoint, read_at, rereads));
            }
        }
    }
    for chunk in fresh.chunks(1000) {
        let records: Vec<(Bytes, Bytes)> = chunk.iter().map(|(c, _, _)| (c.key(), c.value())).collect();
        match transaction {
            // Exactly-once mode: with the data and positions of the flow's next commit.
            Some(transaction) => transaction.write_with_next_commit(topic, 0, records).await?,
            None => write_records(target, &flow.target.alias, topic, 0, records).await?,
        }
        let acked = now_ms();
        // Only once written: a round that failed is written again at the next one.
        for (c, read_at, _) in chunk {
            stats.record_checkpoint(&c.group, &c.topic, c.partition, acked - read_at);
            latest.insert(checkpoint_key(c), c.clone());
        }
    }
    Ok(fresh.len())
}

/// Where the offset map of each of `partitions` may be pruned: below the slowest of the flow's
/// groups (`groups`, `groups.exclude`) that committed there, and below the source log start
/// (the only bound where no group did). Groups that commit below that later are translated
/// as pruned. Partitions whose log start cannot be read are left out (pruned later).
pub(crate) async fn pruning_bounds(
    flow: &FlowConfig,
    source: &KafkaClient,
    partitions: Vec<(String, i32)>,
) -> Result<HashMap<(String, i32), i64>, MirrorError> {
    if partitions.is_empty() {
        return Ok(HashMap::new());
    }
    let fail = MirrorError::client_at(&flow.source.alias);
    let mut slowest: HashMap<(String, i32), i64> = HashMap::new();
    let groups = source.list_groups().await.map_err(fail)?;
    for group in groups
        .iter()
        .filter(|g| flow.group_filter.should_replicate_group(&g.group_id))
    {
        // A group whose offsets cannot be read now could be the slowest: prune nothing this round.
        let offsets = source.committed_offsets(&group.group_id).await.map_err(fail)?;
        for (key, committed) in offsets {
            let slowest = slowest.entry(key).or_insert(committed.offset);
            *slowest = (*slowest).min(committed.offset);
        }
    }
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        by_topic.entry(topic).or_default().push(partition);
    }
    let mut bounds = HashMap::new();
    for (topic, partitions) in by_topic {
        let starts = match source.list_offsets(&topic, &partitions, OffsetSpec::Earliest).await {
            Ok(starts) => starts,
            Err(error) => {
                tracing::debug!(flow = %flow.name(), topic, %error, "cannot read the log start; the offset map is pruned later");
                continue;
            }
        };
        for (partition, start) in starts {
            let key = (topic.clone(), partition);
            let below = slowest.get(&key).map_or(start, |&g| g.max(start));
            bounds.insert(key, below);
        }
    }
    Ok(bounds)
}

/// Commits the latest checkpoints into target groups that have no active members, only moving
/// them forward (MM2's `sync.group.offsets.enabled`). Groups with members are left alone.
async fn sync_group_offsets(flow: &FlowConfig, target: &KafkaClient, latest: &HashMap<CheckpointKey, Checkpoint>) {
    let mut by_group: BTreeMap<&str, Vec<&Checkpoint>> = BTreeMap::new();
    for checkpoint in latest.values() {
        by_group.entry(&checkpoint.group).or_default().push(checkpoint);
    }
    for (group, checkpoints) in by_group {
        let result = async {
            let description = target.describe_group(group).await?;
            if !description.members.is_empty() {
                tracing::debug!(group, state = %description.state, "target group has active members; not syncing its offsets");
                return Ok(0);
            }
            let current = target.committed_offsets(group).await?;
            let updates = group_offset_updates(&current, &checkpoints);
            if !updates.is_empty() {
                target.commit_offsets(group, &updates).await?;
            }
            Ok::<_, strait_client::Error>(updates.len())
        }
        .await;
        match result {
            Ok(0) => {}
            Ok(count) => {
                tracing::info!(flow = %flow.name(), group, partitions = count, "synced group offsets to the target")
            }
            Err(error) => tracing::warn!(flow = %flow.name(), group, %error, "syncing group offsets failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(topic: &str, partition: i32, upstream_offset: i64, downstream_offset: i64) -> Checkpoint {
        Checkpoint {
            group: "g".into(),
            topic: topic.into(),
            partition,
            upstream_offset,
            downstream_offset,
            metadata: format!("m{upstream_offset}"),
        }
    }

    fn flow(extra: &str) -> FlowConfig {
        let config = strait_config::Mm2Config::parse(&format!(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n{extra}"
        ))
        .unwrap();
        config.flow("A", "B").unwrap().clone()
    }

    #[test]
    fn a_checkpoint_is_due_first_then_only_forward_downstream_or_after_an_upstream_rewind() {
        let previous = checkpoint("A.t", 0, 250, 237);
        assert!(is_due(&previous, None), "the first of its key");
        assert!(is_due(&checkpoint("A.t", 0, 300, 337), Some(&previous)), "forward");
        assert!(
            !is_due(&checkpoint("A.t", 0, 260, 237), Some(&previous)),
            "the same downstream offset again"
        );
        assert!(
            !is_due(&checkpoint("A.t", 0, 260, 200), Some(&previous)),
            "a coarser translation must not move the group back"
        );
        assert!(
            is_due(&checkpoint("A.t", 0, 10, 5), Some(&previous)),
            "the group rewound upstream: follow it"
        );
    }

    #[test]
    fn group_offsets_only_move_forward() {
        let committed = |offset| CommittedOffset {
            offset,
            metadata: String::new(),
        };
        let current: BTreeMap<(String, i32), CommittedOffset> = [
            (("A.t".to_owned(), 0), committed(100)),
            (("A.t".to_owned(), 1), committed(500)),
            (("A.t".to_owned(), 2), committed(300)),
        ]
        .into();
        let (behind, ahead, equal, new) = (
            checkpoint("A.t", 0, 150, 150),
            checkpoint("A.t", 1, 400, 400),
            checkpoint("A.t", 2, 300, 300),
            checkpoint("A.t", 3, 20, 20),
        );
        let updates = group_offset_updates(&current, &[&behind, &ahead, &equal, &new]);
        let updated: Vec<(i32, i64, &str)> = updates
            .iter()
            .map(|((_, p), c)| (*p, c.offset, c.metadata.as_str()))
            .collect();
        assert_eq!(
            updated,
            [(0, 150, "m150"), (3, 20, "m20")],
            "forward, or new; never back over what the group consumed at the target"
        );
    }

    #[test]
    fn checkpoints_name_the_topic_as_the_target_knows_it() {
        let flow = flow("");
        assert_eq!(downstream_topic(&flow, "orders"), "A.orders");
        // A topic that came from the target goes back to its own name there.
        assert_eq!(downstream_topic(&flow, "B.orders"), "orders");
        // One that came from a third cluster keeps its prefix, under this flow's.
        assert_eq!(downstream_topic(&flow, "C.orders"), "A.C.orders");
    }
}
