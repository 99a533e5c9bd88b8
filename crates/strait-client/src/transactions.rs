//! A transactional producer's requests (KIP-98; KIP-890 on Kafka 4): the transaction
//! coordinator of a `transactional.id`, InitProducerId with the id (which fences the id's
//! previous owner and aborts its open transaction), and EndTxn. Batches are produced with the
//! id by the caller ([`crate::encode_produce_request`]).
//!
//! Under transaction version 2 (the cluster feature `transaction.version` at 2, Kafka 4.0's
//! default) a partition joins a transaction with its first Produce (v12) and EndTxn (v5)
//! bumps the epoch every time; under version 0 or 1 the caller adds partitions with
//! AddPartitionsToTxn first and the epoch stays.

use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, EndTxnRequest, FindCoordinatorRequest, InitProducerIdRequest, ProducerId,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::{retrying, topic_name};
use crate::{BrokerConnection, Error, KafkaClient, ProducerIdAndEpoch, Result};

/// FindCoordinator's key type for a transactional id.
const TRANSACTION_KEY: i8 = 1;

/// The cluster feature that names the transaction protocol (KIP-890).
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";

impl KafkaClient {
    /// The connection to the coordinator of `key` of `key_type` (0: group, 1: transaction).
    pub(crate) async fn coordinator(&self, key_type: i8, key: &str) -> Result<BrokerConnection> {
        let node = self.coordinator_node(key_type, key).await?;
        self.connection(node).await
    }

    /// The broker that coordinates `key` of `key_type` (FindCoordinator).
    pub(crate) async fn coordinator_node(&self, key_type: i8, key: &str) -> Result<i32> {
        let connection = self.any_connection().await?;
        // v4+ asks for a list of keys; older versions for one.
        let request = if connection.version(ApiKey::FindCoordinator)? >= 4 {
            FindCoordinatorRequest::default().with_coordinator_keys(vec![StrBytes::from_string(key.into())])
        } else {
            FindCoordinatorRequest::default().with_key(StrBytes::from_string(key.into()))
        }
        .with_key_type(key_type);
        let response = connection.send(&request).await?;
        let context = || format!("FindCoordinator {key}");
        let node = match response.coordinators.first() {
            Some(c) => {
                Error::check(c.error_code, context, c.error_message.as_deref())?;
                c.node_id.0
            }
            None => {
                Error::check(response.error_code, context, response.error_message.as_deref())?;
                response.node_id.0
            }
        };
        Ok(node)
    }

    /// The cluster's transaction protocol version (`transaction.version`: 0, 1 or 2), as a
    /// broker reports it in ApiVersions.
    pub async fn transaction_version(&self) -> Result<i16> {
        Ok(self.any_connection().await?.feature_level(TRANSACTION_VERSION_FEATURE))
    }

    /// InitProducerId for `transactional_id`: the producer id and a new epoch. This fences
    /// every earlier holder of the id and aborts (or completes) its open transaction first:
    /// the coordinator answers CONCURRENT_TRANSACTIONS until then, which is retried, as are a
    /// coordinator that moved or is loading, for up to `within`.
    pub async fn init_transactional_producer(
        &self,
        transactional_id: &str,
        transaction_timeout: Duration,
        within: Duration,
    ) -> Result<ProducerIdAndEpoch> {
        let timeout_ms = i32::try_from(transaction_timeout.as_millis()).unwrap_or(i32::MAX);
        retrying(within, || async {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(StrBytes::from_string(transactional_id.into()))))
                .with_transaction_timeout_ms(timeout_ms)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            let response = self
                .coordinator(TRANSACTION_KEY, transactional_id)
                .await?
                .send(&request)
                .await?;
            Error::check(
                response.error_code,
                || format!("InitProducerId {transactional_id}"),
                None,
            )?;
            Ok(ProducerIdAndEpoch {
                producer_id: response.producer_id.0,
                producer_epoch: response.producer_epoch,
            })
        })
        .await
    }

    /// Adds partitions to the open transaction of `transactional_id` (transaction versions 0
    /// and 1; under version 2 the first Produce adds them). Retries what may pass for up to
    /// `within`; the first partition error otherwise.
    pub async fn add_partitions_to_transaction(
        &self,
        transactional_id: &str,
        identity: ProducerIdAndEpoch,
        partitions: &[(String, i32)],
        within: Duration,
    ) -> Result<()> {
        let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
        for (topic, partition) in partitions {
            let name = topic_name(topic);
            match topics.iter_mut().find(|t| t.name == name) {
                Some(t) => t.partitions.push(*partition),
                None => topics.push(
                    AddPartitionsToTxnTopic::default()
                        .with_name(name)
                        .with_partitions(vec![*partition]),
                ),
            }
        }
        retrying(within, || async {
            let connection = self.coordinator(TRANSACTION_KEY, transactional_id).await?;
            // v4+ is for brokers; clients speak v3 and below.
            let version = connection.version(ApiKey::AddPartitionsToTxn)?.min(3);
            let request = AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_string(transactional_id.into())))
                .with_v3_and_below_producer_id(ProducerId(identity.producer_id))
                .with_v3_and_below_producer_epoch(identity.producer_epoch)
                .with_v3_and_below_topics(topics.clone());
            let response = connection.send_version(&request, version).await?;
            Error::check(
                response.error_code,
                || format!("AddPartitionsToTxn {transactional_id}"),
                None,
            )?;
            for topic in &response.results_by_topic_v3_and_below {
                for result in &topic.results_by_partition {
                    Error::check(
                        result.partition_error_code,
                        || {
                            format!(
                                "AddPartitionsToTxn {transactional_id} {}-{}",
                                topic.name.0.as_str(),
                                result.partition_index
                            )
                        },
                        None,
                    )?;
                }
            }
            Ok(())
        })
        .await
    }

    /// Ends the open transaction of `transactional_id`: commits it, or aborts it, with EndTxn at
    /// most at `max_version`. Returns the identity to go on with: under transaction version 2
    /// (EndTxn v5) a bumped epoch, or a new producer id at epoch 0 once the epoch is exhausted;
    /// otherwise `identity` itself. Retries what may pass (the coordinator moved or is loading)
    /// for up to `within`.
    ///
    /// A transaction begun under versions 0 and 1 must end with v4 at most (as Kafka's
    /// `EndTxnRequest.Builder` without transaction V2): the coordinator takes v5 for version
    /// 2 and bumps the epoch, whatever the cluster's feature level.
    pub async fn end_transaction(
        &self,
        transactional_id: &str,
        identity: ProducerIdAndEpoch,
        commit: bool,
        max_version: i16,
        within: Duration,
    ) -> Result<ProducerIdAndEpoch> {
        retrying(within, || async {
            let connection = self.coordinator(TRANSACTION_KEY, transactional_id).await?;
            let version = connection.version(ApiKey::EndTxn)?.min(max_version);
            let request = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(transactional_id.into())))
                .with_producer_id(ProducerId(identity.producer_id))
                .with_producer_epoch(identity.producer_epoch)
                .with_committed(commit);
            let response = connection.send_version(&request, version).await?;
            let verb = if commit { "commit" } else { "abort" };
            Error::check(
                response.error_code,
                || format!("EndTxn ({verb}) {transactional_id}"),
                None,
            )?;
            Ok(if version >= 5 && response.producer_id.0 >= 0 {
                ProducerIdAndEpoch {
                    producer_id: response.producer_id.0,
                    producer_epoch: response.producer_epoch,
                }
            } else {
                identity
            })
        })
        .await
    }
}
