//! A consumer group's source positions translated for the target, with what a cutover needs to
//! know: for `strait translate` and `strait cutover`.

use std::collections::BTreeMap;

use strait_client::{CommittedOffset, GroupMember, KafkaClient, OffsetSpec};
use strait_config::FlowConfig;

use crate::checkpoints::downstream_topic;
use crate::{MirrorError, OffsetMap, ProgressStore, Translation};

/// One partition of a group: where it stands on the source, where the mirror stands, and what
/// its position translates to on the target.
#[derive(Debug, Clone)]
pub struct GroupPartition {
    /// The source topic.
    pub topic: String,
    /// The topic on the target holding its records.
    pub target_topic: String,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// The group's committed position on the source.
    pub committed: CommittedOffset,
    /// The mirror's position: every source offset below it mirrored (`None`: nothing yet).
    pub position: Option<i64>,
    /// The source log end offset.
    pub source_end: Option<i64>,
    /// The committed position translated.
    pub translation: Translation,
}

impl GroupPartition {
    /// Source records not mirrored yet.
    pub fn lag(&self) -> i64 {
        match (self.source_end, self.position) {
            (Some(end), Some(position)) => (end - position).max(0),
            (Some(end), None) => end,
            _ => 0,
        }
    }
}

/// A group as a cutover sees it on one flow.
#[derive(Debug, Clone)]
pub struct GroupReadiness {
    /// Its partitions that the flow mirrors.
    pub partitions: Vec<GroupPartition>,
    /// Its members on the source: while there are any, its positions still move.
    pub source_members: Vec<GroupMember>,
    /// Its members on the target: offsets cannot be committed for a group in use.
    pub target_members: Vec<GroupMember>,
}

impl GroupReadiness {
    /// Whether the mirror has every record of the group's partitions up to the source end.
    pub fn caught_up(&self) -> bool {
        self.partitions.iter().all(|p| p.lag() == 0)
    }

    /// Why the group cannot be committed on the target now, if it cannot.
    pub fn refusal(&self, flow: &FlowConfig, group: &str) -> Option<String> {
        if !self.target_members.is_empty() {
            return Some(format!(
                "group {group} has active members on {}: {}; stop them (its offsets can only be set while it is empty)",
                flow.target.alias,
                names(&self.target_members)
            ));
        }
        if !self.source_members.is_empty() {
            return Some(format!(
                "group {group} has active members on {}, so its positions still move: {}; stop them first",
                flow.source.alias,
                names(&self.source_members)
            ));
        }
        let inexact: Vec<String> = self
            .partitions
            .iter()
            .filter(|p| !matches!(p.translation, Translation::Exact(_)))
            .map(|p| {
                format!(
                    "{}-{} at {}: {}",
                    p.topic, p.partition, p.committed.offset, p.translation
                )
            })
            .collect();
        (!inexact.is_empty()).then(|| {
            format!(
                "group {group} cannot be translated exactly on {}: {}",
                flow.name(),
                inexact.join("; ")
            )
        })
    }

    /// The offsets to commit on the target: every partition's exact translation.
    pub fn target_offsets(&self) -> BTreeMap<(String, i32), CommittedOffset> {
        self.partitions
            .iter()
            .filter_map(|p| match p.translation {
                Translation::Exact(offset) => Some((
                    (p.target_topic.clone(), p.partition),
                    CommittedOffset {
                        offset,
                        metadata: p.committed.metadata.clone(),
                    },
                )),
                _ => None,
            })
            .collect()
    }
}

fn names(members: &[GroupMember]) -> String {
    members.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Reads `group` on both clusters of `flow` and translates its committed source positions
/// through the flow's offset map (no running mirror needed).
pub async fn read_group(
    flow: &FlowConfig,
    (source, target): (&KafkaClient, &KafkaClient),
    group: &str,
) -> Result<GroupReadiness, MirrorError> {
    let on_source = MirrorError::client_at(&flow.source.alias);
    let on_target = MirrorError::client_at(&flow.target.alias);
    let committed = source.committed_offsets(group).await.map_err(on_source)?;
    let source_members = source.describe_group(group).await.map_err(on_source)?.members;
    let target_members = target.describe_group(group).await.map_err(on_target)?.members;
    let progress = ProgressStore::read(target, &flow.source.alias, &flow.target.alias).await?;
    let offset_map = OffsetMap::read(target, &flow.source.alias, &flow.target.alias).await?;
    let mut by_topic: BTreeMap<String, Vec<(i32, CommittedOffset)>> = BTreeMap::new();
    for ((topic, partition), offset) in committed {
        if flow.should_replicate_topic(&topic) {
            by_topic.entry(topic).or_default().push((partition, offset));
        }
    }
    let mut partitions = Vec::new();
    for (topic, committed) in by_topic {
        let numbers: Vec<i32> = committed.iter().map(|(p, _)| *p).collect();
        let ends = source
            .list_offsets(&topic, &numbers, OffsetSpec::Latest)
            .await
            .map_err(on_source)?;
        for (partition, committed) in committed {
            let position = progress
                .as_ref()
                .and_then(|p| p.last_replicated(&topic, partition))
                .map(|last| last + 1);
            let translation = offset_map.as_ref().map_or(Translation::Unknown, |map| {
                map.translate(&topic, partition, committed.offset, position)
            });
            partitions.push(GroupPartition {
                target_topic: downstream_topic(flow, &topic),
                topic: topic.clone(),
                partition,
                committed,
                position,
                source_end: ends.get(&partition).copied(),
                translation,
            });
        }
    }
    Ok(GroupReadiness {
        partitions,
        source_members,
        target_members,
    })
}
