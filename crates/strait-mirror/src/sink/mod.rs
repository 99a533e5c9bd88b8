//! The sink side of the data path: a producer per target broker ([`producer`]) with a queue per
//! partition ([`queue`]), sharing one idempotent producer id per target cluster
//! ([`producer_id`]), or in exactly-once mode the flow's transactional producer
//! ([`transaction`]).

pub(crate) mod producer;
pub(crate) mod producer_id;
pub(crate) mod queue;
pub(crate) mod transaction;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use queue::PartitionQueue;

/// The queues of one producer that have something to send, in the order they get to send it:
/// a queue that sent a batch goes to the back, so that every partition gets its turn.
#[derive(Debug, Default)]
pub(crate) struct ReadyQueues {
    list: Mutex<VecDeque<Arc<PartitionQueue>>>,
    notify: Notify,
}

impl ReadyQueues {
    /// Puts `queue` at the back and wakes the producer.
    pub(crate) fn push(&self, queue: Arc<PartitionQueue>) {
        self.list.lock().expect("ready lock").push_back(queue);
        self.notify.notify_one();
    }

    /// Puts `queue` back at the front: its batch did not fit the request and goes first in the next.
    fn push_front(&self, queue: Arc<PartitionQueue>) {
        self.list.lock().expect("ready lock").push_front(queue);
    }

    fn len(&self) -> usize {
        self.list.lock().expect("ready lock").len()
    }

    fn pop(&self) -> Option<Arc<PartitionQueue>> {
        self.list.lock().expect("ready lock").pop_front()
    }

    /// Waits until a queue is pushed.
    async fn notified(&self) {
        self.notify.notified().await;
    }
}
