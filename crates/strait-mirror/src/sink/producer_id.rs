//! The idempotent producer id of one target cluster, shared by all its partitions as Kafka's
//! producer shares one: one InitProducerId at start, whatever the number of partitions.
//!
//! A partition whose target refuses the id or its sequences (OUT_OF_ORDER_SEQUENCE_NUMBER,
//! INVALID_PRODUCER_EPOCH) asks for a new one; it takes the new id with sequences from 0, and the
//! other partitions keep theirs (the broker keeps producer state per partition).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strait_client::{Backoff, KafkaClient, ProducerIdAndEpoch};
use tokio::sync::watch;

use crate::MirrorError;

/// The target cluster's producer id now.
#[derive(Debug)]
pub(crate) struct ProducerIds {
    client: KafkaClient,
    cluster: String,
    current: watch::Sender<ProducerIdAndEpoch>,
    refreshing: AtomicBool,
}

impl ProducerIds {
    /// Gets the first producer id, retrying errors that may pass.
    pub(crate) async fn init(client: &KafkaClient, cluster: &str) -> Result<Arc<ProducerIds>, MirrorError> {
        let first = init_producer_id(client, cluster).await?;
        Ok(Arc::new(ProducerIds {
            client: client.clone(),
            cluster: cluster.to_owned(),
            current: watch::channel(first).0,
            refreshing: AtomicBool::new(false),
        }))
    }

    /// The identity of a transactional producer, which its [`Transaction`](crate::sink::transaction::Transaction)
    /// publishes anew after each commit (a bumped epoch under KIP-890).
    pub(crate) fn transactional(client: &KafkaClient, cluster: &str, first: ProducerIdAndEpoch) -> Arc<ProducerIds> {
        Arc::new(ProducerIds {
            client: client.clone(),
            cluster: cluster.to_owned(),
            current: watch::channel(first).0,
            refreshing: AtomicBool::new(false),
        })
    }

    /// Publishes a transactional producer's new identity.
    pub(crate) fn publish(&self, identity: ProducerIdAndEpoch) {
        self.current.send_replace(identity);
    }

    /// The id partitions send with now.
    pub(crate) fn current(&self) -> ProducerIdAndEpoch {
        *self.current.borrow()
    }

    /// Tells of new ids.
    pub(crate) fn subscribe(&self) -> watch::Receiver<ProducerIdAndEpoch> {
        self.current.subscribe()
    }

    /// A partition's target refused `stale`: unless a newer id is there or on its way, ask for one.
    pub(crate) fn replace(self: &Arc<Self>, stale: ProducerIdAndEpoch) {
        if self.current() != stale || self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let ids = self.clone();
        tokio::spawn(async move {
            match init_producer_id(&ids.client, &ids.cluster).await {
                Ok(fresh) => {
                    tracing::info!(cluster = %ids.cluster, producer_id = fresh.producer_id, "new producer id");
                    ids.current.send_replace(fresh);
                }
                Err(error) => {
                    tracing::error!(cluster = %ids.cluster, %error, "no new producer id; partitions that need one wait")
                }
            }
            ids.refreshing.store(false, Ordering::Release);
        });
    }
}

async fn init_producer_id(client: &KafkaClient, cluster: &str) -> Result<ProducerIdAndEpoch, MirrorError> {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        match client.init_producer_id().await {
            Ok(identity) => return Ok(identity),
            Err(error) if error.is_retriable() && backoff.attempts() < 20 => {
                let delay = backoff.next_delay();
                tracing::warn!(cluster, %error, "InitProducerId failed; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
            }
            Err(error) => return Err(MirrorError::client(cluster, error)),
        }
    }
}
