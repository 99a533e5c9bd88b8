//! A consumer group's positions translated from one cluster to the other, with what a move
//! needs to know: for `strait translate`, `strait cutover` (source to target, through the
//! offset map) and `strait failback` (target to source: back through the offset map for
//! remote topics, through the reverse flow's for topics written on the target).

use std::collections::BTreeMap;

use strait_client::{CommittedOffset, GroupMember, KafkaClient, OffsetSpec};
use strait_config::FlowConfig;

use crate::checkpoints::downstream_topic;
use crate::{MirrorError, OffsetMap, ProgressStore, Translation};

/// One partition of a group: where it stands on the cluster it leaves, where the mirror
/// stands, and what its position translates to on the cluster it moves to.
#[derive(Debug, Clone)]
pub struct GroupPartition {
    /// The topic the group's offset is committed in, on the cluster it leaves.
    pub topic: String,
    /// The topic holding the same records on the cluster it moves to.
    pub to_topic: String,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// The group's committed position on the cluster it leaves.
    pub committed: CommittedOffset,
    /// The mirror's position in `topic`: every offset below it mirrored (`None`: nothing yet,
    /// or no mirror from `topic`'s cluster, as in a failback of a remote topic).
    pub position: Option<i64>,
    /// `topic`'s log end offset, when a mirror copies it (else `None`).
    pub end: Option<i64>,
    /// The committed position translated.
    pub translation: Translation,
}

impl GroupPartition {
    /// Records of `topic` not mirrored yet.
    pub fn lag(&self) -> i64 {
        match (self.end, self.position) {
            (Some(end), Some(position)) => (end - position).max(0),
            (Some(end), None) => end,
            _ => 0,
        }
    }
}

/// A group as a move sees it, from one cluster to another.
#[derive(Debug, Clone)]
pub struct GroupReadiness {
    /// The alias of the cluster the group leaves.
    pub from: String,
    /// The alias of the cluster it moves to.
    pub to: String,
    /// Its partitions that translate (one flow's).
    pub partitions: Vec<GroupPartition>,
    /// Its members on `from`: while there are any, its positions still move.
    pub from_members: Vec<GroupMember>,
    /// Its members on `to`: offsets cannot be committed for a group in use.
    pub to_members: Vec<GroupMember>,
}

impl GroupReadiness {
    /// Whether the mirror has every record of the group's partitions up to the source end.
    pub fn caught_up(&self) -> bool {
        self.partitions.iter().all(|p| p.lag() == 0)
    }

    /// Why the group cannot be committed on `to` now, if it cannot.
    pub fn refusal(&self, group: &str) -> Option<String> {
        if !self.to_members.is_empty() {
            return Some(format!(
                "group {group} has active members on {}: {}; stop them (its offsets can only be set while it is empty)",
                self.to,
                names(&self.to_members)
            ));
        }
        if !self.from_members.is_empty() {
            return Some(format!(
                "group {group} has active members on {}, so its positions still move: {}; stop them first",
                self.from,
                names(&self.from_members)
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
                "group {group} cannot be translated exactly from {} to {}: {}",
                self.from,
                self.to,
                inexact.join("; ")
            )
        })
    }

    /// The offsets to commit on `to`: every partition's exact translation.
    pub fn target_offsets(&self) -> BTreeMap<(String, i32), CommittedOffset> {
        self.partitions
            .iter()
            .filter_map(|p| match p.translation {
                Translation::Exact(offset) => Some((
                    (p.to_topic.clone(), p.partition),
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
/// to the target through the flow's offset map (no running mirror needed): a cutover.
pub async fn read_group(
    flow: &FlowConfig,
    (source, target): (&KafkaClient, &KafkaClient),
    group: &str,
) -> Result<GroupReadiness, MirrorError> {
    let on_source = MirrorError::client_at(&flow.source.alias);
    let committed = source.committed_offsets(group).await.map_err(on_source)?;
    let (source_members, target_members) = members(flow, (source, target), group).await?;
    let mut readiness = GroupReadiness {
        from: flow.source.alias.clone(),
        to: flow.target.alias.clone(),
        partitions: Vec::new(),
        from_members: source_members,
        to_members: target_members,
    };
    let progress = ProgressStore::read(target, &flow.source.alias, &flow.target.alias).await?;
    let offset_map = OffsetMap::read(target, &flow.source.alias, &flow.target.alias).await?;
    let mut by_topic: BTreeMap<String, Vec<(i32, CommittedOffset)>> = BTreeMap::new();
    for ((topic, partition), offset) in committed {
        if flow.should_replicate_topic(&topic) {
            by_topic.entry(topic).or_default().push((partition, offset));
        }
    }
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
            readiness.partitions.push(GroupPartition {
                to_topic: downstream_topic(flow, &topic),
                topic: topic.clone(),
                partition,
                committed,
                position,
                end: ends.get(&partition).copied(),
                translation,
            });
        }
    }
    Ok(readiness)
}

/// Reads `group` on both clusters of `flow` and translates its committed positions in the
/// flow's remote topics on the target back to the source topics, through the inverse of the
/// flow's offset map: the first half of a failback.
pub async fn read_group_back(
    flow: &FlowConfig,
    (source, target): (&KafkaClient, &KafkaClient),
    group: &str,
) -> Result<GroupReadiness, MirrorError> {
    let committed = target
        .committed_offsets(group)
        .await
        .map_err(MirrorError::client_at(&flow.target.alias))?;
    let (source_members, target_members) = members(flow, (source, target), group).await?;
    let mut readiness = GroupReadiness {
        from: flow.target.alias.clone(),
        to: flow.source.alias.clone(),
        partitions: Vec::new(),
        from_members: target_members,
        to_members: source_members,
    };
    let offset_map = OffsetMap::read(target, &flow.source.alias, &flow.target.alias).await?;
    for ((remote, partition), committed) in committed {
        let Some(topic) = upstream_topic(flow, &remote) else {
            continue;
        };
        let translation = offset_map.as_ref().map_or(Translation::Unknown, |map| {
            map.untranslate(topic, partition, committed.offset)
        });
        readiness.partitions.push(GroupPartition {
            to_topic: topic.to_owned(),
            topic: remote.clone(),
            partition,
            committed,
            position: None,
            end: None,
            translation,
        });
    }
    Ok(readiness)
}

/// The source topic of `flow` whose records `remote` holds on the target, if it is one.
fn upstream_topic<'a>(flow: &FlowConfig, remote: &'a str) -> Option<&'a str> {
    let topic = flow.policy.upstream_topic(remote)?;
    (flow.remote_topic(topic) == remote && flow.should_replicate_topic(topic)).then_some(topic)
}

/// The group's members on the source and on the target of `flow`.
async fn members(
    flow: &FlowConfig,
    (source, target): (&KafkaClient, &KafkaClient),
    group: &str,
) -> Result<(Vec<GroupMember>, Vec<GroupMember>), MirrorError> {
    let on_source = source
        .describe_group(group)
        .await
        .map_err(MirrorError::client_at(&flow.source.alias))?
        .members;
    let on_target = target
        .describe_group(group)
        .await
        .map_err(MirrorError::client_at(&flow.target.alias))?
        .members;
    Ok((on_source, on_target))
}
