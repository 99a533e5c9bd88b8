//! The source side of the data path: a fetcher per source broker ([`fetcher`]) with a cursor per
//! partition ([`cursor`]).

pub(crate) mod cursor;
pub(crate) mod fetcher;

use std::collections::HashMap;
use std::sync::RwLock;

use strait_client::TopicId;

/// The source topics' IDs as Metadata last gave them: the router learns them from discovery
/// rounds and placements, a fetcher from a fetch error that may mean the topic is gone; each
/// fetcher compares its partitions' IDs with them.
#[derive(Debug, Default)]
pub(crate) struct TopicIds(RwLock<HashMap<String, TopicId>>);

impl TopicIds {
    /// The ID of `topic` last seen, if any.
    pub(crate) fn get(&self, topic: &str) -> Option<TopicId> {
        self.0.read().expect("topic ids lock").get(topic).copied()
    }

    /// `topic` has the ID `id` now; `None` (no ID given, or the topic gone) changes nothing.
    pub(crate) fn set(&self, topic: &str, id: Option<TopicId>) {
        let Some(id) = id else { return };
        if self.get(topic) != Some(id) {
            self.0.write().expect("topic ids lock").insert(topic.to_owned(), id);
        }
    }
}
