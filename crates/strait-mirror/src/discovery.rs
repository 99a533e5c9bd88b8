//! Topic discovery: the source topics a flow replicates, with their remote topics created (or
//! grown) on the target before their partitions are mirrored.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::{ClusterMetadata, KafkaClient, NewTopic, TopicId, TopicMetadata};
use strait_config::FlowConfig;

use crate::route::Route;
use crate::topic_configs::creation_configs;
use crate::{MirrorError, TopicRefusal};

/// Partitions created with one CreateTopics request at most: a KRaft controller refuses a
/// request of more than 10 000 records (a record per partition, and one per topic).
const CREATE_PARTITIONS_AT_ONCE: i32 = 5_000;

/// A remote topic to create, with the source topic it mirrors and that topic's ID.
type Creation<'a> = ((&'a String, Option<TopicId>), NewTopic);

/// What a discovery round found: the partitions to mirror, and the source topics whose remote
/// topic the target refused to create or grow this round (retried at the next).
#[derive(Debug, Default)]
pub(crate) struct Discovered {
    pub(crate) routes: Vec<Route>,
    pub(crate) refused: BTreeMap<String, TopicRefusal>,
}

/// The source partitions the flow replicates, after making sure each has its remote topic. A
/// topic the target refuses (a topic policy, an ACL, a config it does not know) is left out
/// and named with the broker's reason; the others mirror.
pub(crate) async fn discover(
    flow: &FlowConfig,
    source: &KafkaClient,
    target: &KafkaClient,
    target_brokers: i16,
) -> Result<Discovered, MirrorError> {
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
    let mut found = Discovered::default();
    let mut new_topics = Vec::new();
    // Remote topics created or grown now: their partitions are mirrored once they have leaders.
    let mut changed: Vec<(&String, String, i32, Option<TopicId>)> = Vec::new();
    for (topic, metadata) in replicated_topics(flow, &source_metadata) {
        let remote = flow.remote_topic(topic);
        let partitions = metadata.partitions.len() as i32;
        match target_metadata.topics.get(&remote) {
            None => {
                // Created with the source's configs, as MM2 does (`config.properties.exclude` applies).
                let configs = if flow.sync_topic_configs.enabled {
                    match source.describe_topic_configs(topic).await {
                        Ok(entries) => creation_configs(flow, &entries),
                        Err(error) => {
                            tracing::warn!(flow = %flow.name(), topic, %error, "cannot read the source topic's configs; retrying");
                            let _ = found.refused.insert(topic.clone(), TopicRefusal::new(&remote, &error));
                            continue;
                        }
                    }
                } else {
                    Vec::new()
                };
                tracing::info!(flow = %flow.name(), topic, remote, partitions, replication_factor, "creating remote topic");
                new_topics.push((
                    (topic, metadata.topic_id),
                    NewTopic {
                        name: remote.clone(),
                        partitions,
                        replication_factor,
                        configs,
                    },
                ));
            }
            // The source gained partitions: so does the remote topic (it never shrinks).
            Some(existing) if (existing.partitions.len() as i32) < partitions => {
                tracing::info!(flow = %flow.name(), topic, remote, from = existing.partitions.len(), to = partitions, "adding partitions to the remote topic");
                match target.create_partitions(&remote, partitions).await {
                    Ok(()) => changed.push((topic, remote, partitions, metadata.topic_id)),
                    // Its partitions so far go on being mirrored; the new ones wait.
                    Err(error) if !error.is_retriable() => {
                        tracing::warn!(flow = %flow.name(), topic, remote, %error, "the target refused to add partitions to the remote topic; retrying");
                        let _ = found.refused.insert(topic.clone(), TopicRefusal::new(&remote, &error));
                        let known = existing.partitions.len() as i32;
                        found
                            .routes
                            .extend((0..known).map(|p| Route::new(topic, &remote, p).with_topic_id(metadata.topic_id)));
                    }
                    Err(error) => return Err(target_error(error)),
                }
            }
            Some(_) => found
                .routes
                .extend((0..partitions).map(|p| Route::new(topic, &remote, p).with_topic_id(metadata.topic_id))),
        }
    }
    // Many topics per CreateTopics request, within what a KRaft controller takes in one.
    let mut batches: Vec<Vec<Creation>> = Vec::new();
    for topic in new_topics {
        let full = batches.last().is_none_or(|batch| {
            !batch.is_empty()
                && batch.iter().map(|(_, t)| t.partitions).sum::<i32>() + topic.1.partitions > CREATE_PARTITIONS_AT_ONCE
        });
        if full {
            batches.push(Vec::new());
        }
        batches.last_mut().expect("a batch").push(topic);
    }
    for batch in batches {
        let request: Vec<NewTopic> = batch.iter().map(|(_, t)| t.clone()).collect();
        let answers: BTreeMap<String, Result<(), strait_client::Error>> = target
            .create_topics_each(&request)
            .await
            .map_err(target_error)?
            .into_iter()
            .collect();
        for ((topic, topic_id), new) in batch {
            match answers.get(&new.name) {
                Some(Ok(())) => changed.push((topic, new.name, new.partitions, topic_id)),
                Some(Err(error)) => {
                    tracing::warn!(flow = %flow.name(), topic, remote = new.name, %error, "the target refused to create the remote topic; the others mirror, it is retried");
                    let _ = found.refused.insert(topic.clone(), TopicRefusal::new(&new.name, error));
                }
                // Not in the answer: looked for again at the next round.
                None => {
                    let refusal = TopicRefusal {
                        remote_topic: new.name.clone(),
                        reason: "NO_ANSWER".to_owned(),
                        message: format!("CreateTopics {}: the target's answer did not name it", new.name),
                    };
                    let _ = found.refused.insert(topic.clone(), refusal);
                }
            }
        }
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
            found
                .routes
                .extend((0..partitions).map(|p| Route::new(topic, &remote, p).with_topic_id(topic_id)));
        }
    }
    Ok(found)
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
