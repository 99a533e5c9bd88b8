//! A partition on both clusters: what every part of the data path names a partition by.

use strait_client::kafka_protocol::messages::TopicName;
use strait_client::TopicId;

/// A partition on both clusters.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The source topic.
    pub source_topic: String,
    /// The source topic, as Fetch requests name it.
    pub source_key: TopicName,
    /// The remote topic on the target, as Produce requests name it.
    pub target_topic: TopicName,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// The source topic's ID when discovery saw it (KIP-516), if the broker has IDs.
    pub source_topic_id: Option<TopicId>,
}

impl Route {
    /// The partition `partition` of `source_topic`, mirrored into `target_topic`.
    pub(crate) fn new(source_topic: &str, target_topic: &str, partition: i32) -> Route {
        Route {
            source_topic: source_topic.to_owned(),
            source_key: strait_client::topic_name(source_topic),
            target_topic: strait_client::topic_name(target_topic),
            partition,
            source_topic_id: None,
        }
    }

    /// The route, with the source topic's ID as Metadata gave it.
    pub(crate) fn with_topic_id(mut self, topic_id: Option<TopicId>) -> Route {
        self.source_topic_id = topic_id;
        self
    }
}
