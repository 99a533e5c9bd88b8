//! Topic discovery: the source topics a flow replicates, with their remote topics created (or
//! grown) on the target before their partitions are mirrored.

use std::time::Duration;

use strait_client::{ClusterMetadata, KafkaClient, NewTopic, TopicId, TopicMetadata};
use strait_config::FlowConfig;

use crate::data_path::Route;
use crate::topic_configs::creation_configs;
use crate::MirrorError;

/// Partitions created with one CreateTopics request at most: a KRaft controller refuses a
/// request of more than 10 000 records (a record per partition, and one per topic).
const CREATE_PARTITIONS_AT_ONCE: i32 = 5_000;

/// The source partitions the flow replicates, after making sure each has its remote topic.
pub(crate) async fn discover(
    flow: &FlowConfig,
    source: &KafkaClient,
    target: &KafkaClient,
    target_brokers: i16,
) -> Result<Vec<Route>, MirrorError> {
    let source_metadata = source
        .metadata(None)
        .await
        .map_err(MirrorError::client_at(&flow.source.alias))?;
    let target_metadata = target
        .metadata(None)
        .await
        .map_err(MirrorError::client_at(&flow.target.alias))?;
    let replication_factor = if flow.replication_factor < 0 {
        -1
    } else {
        (flow.replication_factor as i16).min(target_brokers)
    };
    let target_error = MirrorError::client_at(&flow.target.alias);
    let mut routes = Vec::new();
    let mut new_topics = Vec::new();
    // Remote topics created or grown now: their partitions are mirrored once they have leaders.
    let mut changed: Vec<(&String, String, i32, Option<TopicId>)> = Vec::new();
    for (topic, metadata) in replicated_topics(flow, &source_metadata) {
        let remote = flow.remote_topic(topic);
        let partitions = metadata.partitions.len() as i32;
        match target_metadata.topics.get(&remote) {
            None => {
                tracing::info!(flow = %flow.name(), topic, remote, partitions, replication_factor, "creating remote topic");
                // Created with the source's configs, as MM2 does (`config.properties.exclude` applies).
                let configs = if flow.sync_topic_configs.enabled {
                    let entries = source
                        .describe_topic_configs(topic)
                        .await
                        .map_err(MirrorError::client_at(&flow.source.alias))?;
                    creation_configs(flow, &entries)
                } else {
                    Vec::new()
                };
                new_topics.push(NewTopic {
                    name: remote.clone(),
                    partitions,
                    replication_factor,
                    configs,
                });
                changed.push((topic, remote, partitions, metadata.topic_id));
            }
            // The source gained partitions: so does the remote topic (it never shrinks).
            Some(existing) if (existing.partitions.len() as i32) < partitions => {
                tracing::info!(flow = %flow.name(), topic, remote, from = existing.partitions.len(), to = partitions, "adding partitions to the remote topic");
                target
                    .create_partitions(&remote, partitions)
                    .await
                    .map_err(target_error)?;
                changed.push((topic, remote, partitions, metadata.topic_id));
            }
            Some(_) => {
                routes.extend((0..partitions).map(|p| Route::new(topic, &remote, p).with_topic_id(metadata.topic_id)))
            }
        }
    }
    // Many topics per CreateTopics request, within what a KRaft controller takes in one.
    let mut batch: Vec<NewTopic> = Vec::new();
    for topic in new_topics {
        if !batch.is_empty()
            && batch.iter().map(|t| t.partitions).sum::<i32>() + topic.partitions > CREATE_PARTITIONS_AT_ONCE
        {
            target
                .create_topics(&std::mem::take(&mut batch))
                .await
                .map_err(target_error)?;
        }
        batch.push(topic);
    }
    if !batch.is_empty() {
        target.create_topics(&batch).await.map_err(target_error)?;
    }
    if !changed.is_empty() {
        let names: Vec<&str> = changed.iter().map(|(_, remote, _, _)| remote.as_str()).collect();
        let remote_metadata = target
            .wait_for_leaders_of(&names, Duration::from_secs(60))
            .await
            .map_err(target_error)?;
        for (topic, remote, partitions, topic_id) in changed {
            // Metadata not caught up yet: the next refresh picks the new partitions up.
            let ready = remote_metadata
                .get(&remote)
                .is_some_and(|t| t.partitions.len() as i32 >= partitions);
            if !ready {
                continue;
            }
            // A new partition's leader is named before it takes writes (NOT_LEADER_OR_FOLLOWER
            // for a while): once it answers ListOffsets, it does.
            let all: Vec<i32> = (0..partitions).collect();
            target
                .list_offsets(&remote, &all, strait_client::OffsetSpec::Latest)
                .await
                .map_err(target_error)?;
            routes.extend((0..partitions).map(|p| Route::new(topic, &remote, p).with_topic_id(topic_id)));
        }
    }
    Ok(routes)
}

/// The source topics `flow` replicates, of those in `metadata`.
pub(crate) fn replicated_topics<'a>(
    flow: &'a FlowConfig,
    metadata: &'a ClusterMetadata,
) -> impl Iterator<Item = (&'a String, &'a TopicMetadata)> {
    metadata
        .topics
        .iter()
        .filter(|(topic, t)| !t.is_internal && t.error == 0 && flow.should_replicate_topic(topic))
}
