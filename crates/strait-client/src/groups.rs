//! Consumer group requests: listing, committed offsets, state, and committing for a group that
//! has no members (what MirrorMaker 2's checkpoint connector does through the admin client).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, GroupId, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::{retrying, topic_name};
use crate::{BrokerConnection, Error, KafkaClient, Result};

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group id.
    pub group_id: String,
    /// `consumer` for consumer groups (empty for some other kinds).
    pub protocol_type: String,
    /// The state (`Stable`, `Empty`, …).
    pub state: String,
}

/// A committed offset and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The next offset the group will read.
    pub offset: i64,
    /// The commit metadata (empty if none).
    pub metadata: String,
}

/// A group's state as DescribeGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// `Empty`, `Stable`, `PreparingRebalance`, `CompletingRebalance` or `Dead` (no such group).
    pub state: String,
    /// The members, as the consumer-groups tool lists them.
    pub members: Vec<GroupMember>,
}

/// A member of a group as DescribeGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// Its static member id (`group.instance.id`), if any.
    pub group_instance_id: Option<String>,
    /// Its `client.id`.
    pub client_id: String,
    /// The host it connected from.
    pub client_host: String,
    /// What the leader assigned it, in the group's own protocol (a consumer group's
    /// ConsumerProtocolAssignment, a Strait group's assignment).
    pub assignment: bytes::Bytes,
}

impl std::fmt::Display for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (client.id {}, host {})",
            self.member_id, self.client_id, self.client_host
        )?;
        if let Some(instance) = &self.group_instance_id {
            write!(f, ", group.instance.id {instance}")?;
        }
        Ok(())
    }
}

impl KafkaClient {
    /// The connection to `group`'s coordinator.
    pub async fn group_coordinator(&self, group: &str) -> Result<BrokerConnection> {
        self.coordinator(0, group).await
    }

    /// Every group of the cluster (ListGroups on every broker).
    pub async fn list_groups(&self) -> Result<Vec<ListedGroup>> {
        let brokers: Vec<i32> = self.metadata(Some(&[])).await?.brokers.keys().copied().collect();
        let mut groups = Vec::new();
        for broker in brokers {
            let response = self
                .connection(broker)
                .await?
                .send(&ListGroupsRequest::default())
                .await?;
            Error::check(response.error_code, || "ListGroups".into(), None)?;
            groups.extend(response.groups.iter().map(|g| ListedGroup {
                group_id: g.group_id.0.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: g.group_state.to_string(),
            }));
        }
        Ok(groups)
    }

    /// The committed offsets of `group`, by topic and partition.
    pub async fn committed_offsets(&self, group: &str) -> Result<BTreeMap<(String, i32), CommittedOffset>> {
        retrying(self.config().connection.request_timeout, || async {
            let connection = self.group_coordinator(group).await?;
            let group_id = GroupId(StrBytes::from_string(group.into()));
            let version = connection.version(kafka_protocol::messages::ApiKey::OffsetFetch)?;
            let request = if version >= 8 {
                OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                    .with_group_id(group_id)
                    .with_topics(None)])
            } else {
                OffsetFetchRequest::default().with_group_id(group_id).with_topics(None)
            };
            let response = connection.send(&request).await?;
            let context = || format!("OffsetFetch {group}");
            let mut offsets = BTreeMap::new();
            let mut add = |topic: &str, partition: i32, offset: i64, metadata: Option<&StrBytes>, error: i16| {
                Error::check(error, || format!("OffsetFetch {group} {topic}-{partition}"), None)?;
                if offset >= 0 {
                    let metadata = metadata.map(|m| m.to_string()).unwrap_or_default();
                    offsets.insert((topic.to_owned(), partition), CommittedOffset { offset, metadata });
                }
                Ok::<_, Error>(())
            };
            if version >= 8 {
                for g in &response.groups {
                    Error::check(g.error_code, context, None)?;
                    for t in &g.topics {
                        for p in &t.partitions {
                            add(
                                &t.name.0,
                                p.partition_index,
                                p.committed_offset,
                                p.metadata.as_ref(),
                                p.error_code,
                            )?;
                        }
                    }
                }
            } else {
                Error::check(response.error_code, context, None)?;
                for t in &response.topics {
                    for p in &t.partitions {
                        add(
                            &t.name.0,
                            p.partition_index,
                            p.committed_offset,
                            p.metadata.as_ref(),
                            p.error_code,
                        )?;
                    }
                }
            }
            Ok(offsets)
        })
        .await
    }

    /// The state and member count of `group` (`Dead` with no members if it does not exist).
    pub async fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        retrying(self.config().connection.request_timeout, || async {
            let connection = self.group_coordinator(group).await?;
            let request =
                DescribeGroupsRequest::default().with_groups(vec![GroupId(StrBytes::from_string(group.into()))]);
            let response = connection.send(&request).await?;
            let described = response
                .groups
                .first()
                // An answer without the group asked about is a broken response, not an
                // unreachable broker: not retried.
                .ok_or_else(|| Error::Protocol {
                    api: ApiKey::DescribeGroups,
                    version: connection.version(ApiKey::DescribeGroups).unwrap_or(-1),
                    message: format!("no answer for group {group}"),
                })?;
            if described.error_code == ResponseError::GroupIdNotFound.code() {
                // GROUP_ID_NOT_FOUND: Kafka 4 answers so for a group that does not exist.
                return Ok(GroupDescription {
                    state: "Dead".into(),
                    members: Vec::new(),
                });
            }
            Error::check(
                described.error_code,
                || format!("DescribeGroups {group}"),
                described.error_message.as_deref(),
            )?;
            Ok(GroupDescription {
                state: described.group_state.to_string(),
                members: described
                    .members
                    .iter()
                    .map(|m| GroupMember {
                        member_id: m.member_id.to_string(),
                        group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
                        client_id: m.client_id.to_string(),
                        client_host: m.client_host.to_string(),
                        assignment: m.member_assignment.clone(),
                    })
                    .collect(),
            })
        })
        .await
    }

    /// Commits offsets for `group` as a client outside the group (generation -1, no member id).
    /// The broker accepts this only while the group has no members (`UNKNOWN_MEMBER_ID`
    /// otherwise), which protects live consumers.
    pub async fn commit_offsets(&self, group: &str, offsets: &BTreeMap<(String, i32), CommittedOffset>) -> Result<()> {
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for ((topic, partition), committed) in offsets {
            topics.entry(topic).or_default().push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(*partition)
                    .with_committed_offset(committed.offset)
                    .with_committed_leader_epoch(-1)
                    .with_committed_metadata(Some(StrBytes::from_string(committed.metadata.clone()))),
            );
        }
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.into())))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::from_static_str(""))
            .with_topics(
                topics
                    .into_iter()
                    .map(|(name, partitions)| {
                        OffsetCommitRequestTopic::default()
                            .with_name(topic_name(name))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        // Partition errors such as NOT_COORDINATOR (the group moved, or its coordinator is still
        // loading) are retried with the request.
        retrying(self.config().connection.request_timeout, || async {
            let response = self.group_coordinator(group).await?.send(&request).await?;
            for t in &response.topics {
                for p in &t.partitions {
                    Error::check(
                        p.error_code,
                        || format!("OffsetCommit {group} {}-{}", t.name.0.as_str(), p.partition_index),
                        None,
                    )?;
                }
            }
            Ok(())
        })
        .await
    }
}
