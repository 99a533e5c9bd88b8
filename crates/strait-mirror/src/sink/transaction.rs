//! Exactly-once mode: one transaction of the flow at a time, holding the batches forwarded
//! into the target and the new positions in `mm2-offsets.<source>.internal` (with the offset
//! syncs when their topic is on the target, and the checkpoints), so that data and positions
//! commit together (KIP-618's guarantee, as MM2 gives it with
//! `<target>.exactly.once.source.support = enabled`).
//!
//! A commit every interval (or earlier, past [`MAX_TRANSACTION_BYTES`]): the producers stop
//! starting requests (sealed), the requests on the wire are answered, the positions recorded
//! from those answers are written with the same producer id and epoch, then EndTxn commits.
//! Under transaction version 2 (KIP-890, Kafka 4's default) EndTxn returns a bumped epoch and
//! every partition's sequences start again at 0; under versions 0 and 1 partitions are added
//! with AddPartitionsToTxn before their first batch of a transaction and the epoch stays.
//!
//! A Produce failure whose batches may have landed (no answer, or an error after the append)
//! dooms the transaction: after the epoch bump their retries could not be recognised. A batch
//! its leader refused before appending is simply sent again. A doomed
//! transaction is aborted and the flow starts again from the committed positions, so nothing
//! uncommitted is ever taken for mirrored. InitProducerId with the flow's `transactional.id`
//! at start fences a previous owner (a killed or frozen instance) and aborts its open
//! transaction; a fenced producer's errors stop the flow.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use strait_client::kafka_protocol::error::ResponseError;
use strait_client::{Error, KafkaClient, ProducerIdAndEpoch};
use strait_wire::{OffsetSync, ProducerState, RecordBatchBuilder};
use tokio::sync::{oneshot, watch, Notify};

use crate::error::FencedProducer;
use crate::internal_topics::now_ms;
use crate::offset_map::OffsetMap;
use crate::offset_syncs::OffsetSyncs;
use crate::progress::ProgressStore;
use crate::sink::producer_id::ProducerIds;
use crate::sink::queue::add_sequence;
use crate::stats::TransactionCounts;
use crate::MirrorError;

/// A transaction commits early once this many bytes were produced in it: a bound on what an
/// abort sends again, well inside `transaction.timeout.ms` at any rate.
pub(crate) const MAX_TRANSACTION_BYTES: usize = 128 * 1024 * 1024;

/// The highest Produce version a transaction may use under transaction versions 0 and 1.
const PRODUCE_V1_MAX: i16 = 11;

/// The highest EndTxn version under transaction versions 0 and 1: v5 is version 2's, whose
/// coordinator bumps the epoch at every end.
const END_TXN_V1_MAX: i16 = 4;

/// Records to write into one partition in a transaction: topic, partition, (key, value)s.
type PartitionRecords<'a> = (&'a str, i32, Vec<(Bytes, Bytes)>);

/// The transactional producer of one flow into its target.
#[derive(Debug)]
pub(crate) struct Transaction {
    client: KafkaClient,
    cluster: String,
    /// The `transactional.id`.
    id: String,
    /// `transaction.timeout.ms`.
    timeout: Duration,
    /// Whether the target runs transaction version 2 (partitions join with their first
    /// Produce; EndTxn bumps the epoch).
    v2: bool,
    ids: Arc<ProducerIds>,
    state: Mutex<State>,
    /// Signalled when the last request of a sealed transaction is answered.
    drained: Notify,
    /// Signalled when the transaction should end before its interval: too large, or doomed.
    due: Notify,
    /// Bumped when producers may start requests again.
    resumed: watch::Sender<u64>,
    /// Records of other writers (checkpoints) for the next commit, each told how it ended.
    riders: Mutex<Vec<Rider>>,
    /// The flow's counts of committed and aborted transactions.
    counts: Arc<TransactionCounts>,
}

/// Where to tell the riders of a transaction how it ended: "not committed" unless
/// [`Tells::committed`] said otherwise.
struct Tells(Vec<oneshot::Sender<Result<(), String>>>);

impl Tells {
    fn committed(mut self) {
        for tell in self.0.drain(..) {
            let _ = tell.send(Ok(()));
        }
    }
}

impl Drop for Tells {
    fn drop(&mut self) {
        for tell in self.0.drain(..) {
            let _ = tell.send(Err("the transaction was not committed".to_owned()));
        }
    }
}

/// Records another writer hands to the next commit: topic, partition, (key, value)s, and
/// where to say whether they were committed.
type Rider = (String, i32, Vec<(Bytes, Bytes)>, oneshot::Sender<Result<(), String>>);

#[derive(Debug, Default)]
struct State {
    /// No new request may start: the transaction is being committed or aborted.
    sealed: bool,
    /// Produce requests of the transaction on the wire (or being built).
    in_flight: usize,
    /// Bytes produced in the transaction.
    bytes: usize,
    /// Whether anything was produced in it (an empty transaction is not ended).
    written: bool,
    /// Why it must be aborted.
    doomed: Option<String>,
    /// A Produce answer saying the producer was fenced: the transaction is not this
    /// producer's to end any more, and the flow stops.
    fenced: Option<Error>,
    /// Partitions added to it (transaction versions 0 and 1).
    added: HashSet<(String, i32)>,
    /// The next sequence of each partition of the positions and syncs topics, for the current
    /// identity.
    sequences: HashMap<(String, i32), i32>,
}

/// A Produce request of the transaction on its way: while any is held, the transaction is not
/// ended.
#[derive(Debug)]
pub(crate) struct InTransaction(Arc<Transaction>);

impl Drop for InTransaction {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().expect("transaction lock");
        state.in_flight -= 1;
        if state.in_flight == 0 {
            self.0.drained.notify_waiters();
        }
    }
}

/// How a transaction ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Committed (or nothing was written), with the offset syncs of its data that are to be
    /// written now, outside it (their topic is on another cluster).
    Committed(Vec<OffsetSync>),
    /// Aborted: the flow must start again from its committed positions.
    Aborted(String),
}

impl Transaction {
    /// Starts the transactional producer `id` on the target: reads the transaction version and
    /// fences the id's previous owner (InitProducerId).
    pub(crate) async fn begin(
        client: &KafkaClient,
        cluster: &str,
        id: String,
        timeout: Duration,
        counts: Arc<TransactionCounts>,
    ) -> Result<Arc<Transaction>, MirrorError> {
        let fail = MirrorError::client_at(cluster);
        let version = client.transaction_version().await.map_err(fail)?;
        let within = client.config().connection.request_timeout.max(timeout);
        let identity = client
            .init_transactional_producer(&id, timeout, within)
            .await
            .map_err(|error| fenced_or(cluster, &id, error))?;
        tracing::info!(cluster, transactional_id = %id, producer_id = identity.producer_id,
            epoch = identity.producer_epoch, transaction_version = version, "exactly-once producer ready");
        Ok(Arc::new(Transaction {
            client: client.clone(),
            cluster: cluster.to_owned(),
            id,
            timeout,
            v2: version >= 2,
            ids: ProducerIds::transactional(client, cluster, identity),
            state: Mutex::new(State::default()),
            drained: Notify::new(),
            due: Notify::new(),
            resumed: watch::channel(0).0,
            riders: Mutex::new(Vec::new()),
            counts,
        }))
    }

    /// The producer identity the partitions send with.
    pub(crate) fn ids(&self) -> &Arc<ProducerIds> {
        &self.ids
    }

    /// The `transactional.id`.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The highest Produce version the transaction's requests may use.
    pub(crate) fn max_produce_version(&self) -> i16 {
        if self.v2 {
            i16::MAX
        } else {
            PRODUCE_V1_MAX
        }
    }

    /// The highest EndTxn version the transaction may end with.
    fn max_end_txn_version(&self) -> i16 {
        if self.v2 {
            i16::MAX
        } else {
            END_TXN_V1_MAX
        }
    }

    /// Tells when producers may start requests again after a commit.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.resumed.subscribe()
    }

    /// A Produce request may start: `None` while the transaction is being ended.
    pub(crate) fn enter(self: &Arc<Self>) -> Option<InTransaction> {
        let mut state = self.state.lock().expect("transaction lock");
        if state.sealed {
            return None;
        }
        state.in_flight += 1;
        Some(InTransaction(self.clone()))
    }

    /// A request of `bytes` goes out: past [`MAX_TRANSACTION_BYTES`] the transaction is due.
    pub(crate) fn produced(&self, bytes: usize) {
        let mut state = self.state.lock().expect("transaction lock");
        state.written = true;
        state.bytes += bytes;
        if state.bytes >= MAX_TRANSACTION_BYTES {
            self.due.notify_one();
        }
    }

    /// Adds the partitions of a request to the transaction, those not yet in it (transaction
    /// versions 0 and 1; nothing under version 2).
    pub(crate) async fn add_partitions(&self, partitions: &[(String, i32)]) -> Result<(), Error> {
        if self.v2 {
            return Ok(());
        }
        let new: Vec<(String, i32)> = {
            let state = self.state.lock().expect("transaction lock");
            partitions
                .iter()
                .filter(|p| !state.added.contains(*p))
                .cloned()
                .collect()
        };
        if new.is_empty() {
            return Ok(());
        }
        let within = self.client.config().connection.request_timeout;
        self.client
            .add_partitions_to_transaction(&self.id, self.ids.current(), &new, within)
            .await?;
        self.state.lock().expect("transaction lock").added.extend(new);
        Ok(())
    }

    /// A request of the transaction failed: it must be aborted, or, if the answer says that
    /// the producer was fenced, left to its new owner.
    pub(crate) fn doom(&self, error: &Error) {
        if is_fenced(error) {
            self.state
                .lock()
                .expect("transaction lock")
                .fenced
                .get_or_insert_with(|| error.clone());
        }
        self.doom_because(&error.to_string());
    }

    /// The transaction must be aborted, for `why`.
    pub(crate) fn doom_because(&self, why: &str) {
        let mut state = self.state.lock().expect("transaction lock");
        if state.doomed.is_none() {
            state.doomed = Some(why.to_owned());
            self.due.notify_one();
        }
    }

    /// Writes `records` into `topic`/`partition` in the next transaction to commit, and
    /// returns once it did; an error if it was aborted instead.
    pub(crate) async fn write_with_next_commit(
        &self,
        topic: &str,
        partition: i32,
        records: Vec<(Bytes, Bytes)>,
    ) -> Result<(), MirrorError> {
        let (told, ended) = oneshot::channel();
        self.riders
            .lock()
            .expect("riders lock")
            .push((topic.to_owned(), partition, records, told));
        let why = match ended.await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(why)) => why,
            Err(_) => "the flow stopped before it committed".to_owned(),
        };
        Err(MirrorError::internal_topic(topic, format!("not written: {why}")))
    }

    /// Waits until the transaction should end before its interval.
    pub(crate) async fn due(&self) {
        self.due.notified().await;
    }

    /// Ends the transaction: seals it, waits (up to `within`) for its requests on the wire,
    /// then commits it with the positions of `progress` and the changes of `offset_map` written
    /// in it, and the offset syncs of
    /// `syncs` too when their topic is on the target; or aborts it if one of its requests
    /// failed. Producers resume after a commit; after an abort the caller starts the flow again
    /// from the committed positions.
    pub(crate) async fn end(
        &self,
        progress: &ProgressStore,
        offset_map: &OffsetMap,
        syncs: Option<&OffsetSyncs>,
        within: Duration,
    ) -> Result<Ended, MirrorError> {
        let drained = async {
            loop {
                let notified = self.drained.notified();
                {
                    let mut state = self.state.lock().expect("transaction lock");
                    state.sealed = true;
                    if state.in_flight == 0 {
                        return;
                    }
                }
                notified.await;
            }
        };
        let drained = tokio::time::timeout(within, drained).await.is_ok();
        let (doomed, fenced_by) = {
            let state = self.state.lock().expect("transaction lock");
            (state.doomed.clone(), state.fenced.clone())
        };
        // Fenced: the coordinator already aborted the transaction (for the new owner, or
        // because it outlived its timeout). Ending it again, or a new InitProducerId, would
        // fence the new owner in turn: this producer stops instead.
        if let Some(error) = fenced_by {
            return Err(fenced_or(&self.cluster, &self.id, error));
        }
        let doomed = match drained {
            true => doomed,
            false => Some(format!("requests on the wire were not answered within {within:?}")),
        };
        if let Some(why) = doomed {
            self.abort().await?;
            return Ok(Ended::Aborted(why));
        }
        // Taken while sealed: the syncs of exactly the data this transaction holds.
        let mut after = syncs.map(OffsetSyncs::take).unwrap_or_default();
        let mut records: Vec<PartitionRecords> = Vec::new();
        if let Some(syncs) = syncs.filter(|syncs| syncs.cluster() == self.cluster && !after.is_empty()) {
            let synced = std::mem::take(&mut after)
                .iter()
                .map(|s| (s.key(), s.value()))
                .collect();
            records.push((syncs.topic(), 0, synced));
        }
        // Lost if the transaction aborts: the restart reloads the map as committed.
        let mapped = offset_map.take();
        if !mapped.is_empty() {
            records.push((offset_map.topic(), 0, mapped));
        }
        let (positions, due) = progress.take_due().unzip();
        for (partition, positions) in positions.into_iter().flatten() {
            records.push((progress.topic(), partition, positions));
        }
        let riders = std::mem::take(&mut *self.riders.lock().expect("riders lock"));
        let (mut ridden, tells): (Vec<_>, Vec<_>) = riders.into_iter().map(|(t, p, r, tell)| ((t, p, r), tell)).unzip();
        // Told "not committed" on every way out but the commit.
        let tells = Tells(tells);
        for (topic, partition, rider) in ridden.iter_mut() {
            records.push((topic.as_str(), *partition, std::mem::take(rider)));
        }
        if !records.is_empty() {
            if let Err(error) = self.write_records(records).await {
                if is_fenced(&error) {
                    return Err(fenced_or(&self.cluster, &self.id, error));
                }
                self.abort().await?;
                return Ok(Ended::Aborted(format!(
                    "writing the positions and offset syncs failed: {error}"
                )));
            }
            self.state.lock().expect("transaction lock").written = true;
        }
        if self.state.lock().expect("transaction lock").written {
            let identity = self.ids.current();
            match self
                .client
                .end_transaction(&self.id, identity, true, self.max_end_txn_version(), self.timeout)
                .await
            {
                Ok(next) => {
                    self.next(identity, next);
                    self.counts.committed.fetch_add(1, Ordering::Relaxed);
                    tells.committed();
                }
                Err(error) if is_fenced(&error) => return Err(fenced_or(&self.cluster, &self.id, error)),
                // Out of time: committed or not, a restart reads what was (InitProducerId
                // completes or aborts the transaction before the positions are read).
                Err(error) if error.is_retriable() => return Ok(Ended::Aborted(format!("committing failed: {error}"))),
                // Refused (as Kafka's producer takes it, fatal): most likely another process
                // took the id at that moment (the coordinator then answers an unknown server
                // error), which a restart's InitProducerId would fence in turn.
                Err(error) => return Err(fenced(&self.cluster, &self.id, error)),
            }
        }
        if let Some(due) = due {
            due.written();
        }
        self.resume();
        Ok(Ended::Committed(after))
    }

    /// Aborts the open transaction (if anything was written in it). An abort that fails for
    /// another reason than a fence is left to the restart's InitProducerId, which aborts it.
    async fn abort(&self) -> Result<(), MirrorError> {
        let written = self.state.lock().expect("transaction lock").written;
        if written {
            let identity = self.ids.current();
            match self
                .client
                .end_transaction(&self.id, identity, false, self.max_end_txn_version(), self.timeout)
                .await
            {
                Ok(next) => {
                    self.next(identity, next);
                    self.counts.aborted.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) if is_fenced(&error) => return Err(fenced_or(&self.cluster, &self.id, error)),
                Err(error) if error.is_retriable() => {
                    tracing::warn!(cluster = %self.cluster, transactional_id = %self.id,
                    %error, "aborting the transaction failed; the restart's InitProducerId aborts it")
                }
                // Refused: fatal, as for a commit.
                Err(error) => return Err(fenced(&self.cluster, &self.id, error)),
            }
        }
        Ok(())
    }

    /// A transaction ended: the identity to go on with, and an empty transaction.
    fn next(&self, before: ProducerIdAndEpoch, identity: ProducerIdAndEpoch) {
        let mut state = self.state.lock().expect("transaction lock");
        let sealed = state.sealed;
        let sequences = std::mem::take(&mut state.sequences);
        *state = State {
            sealed,
            // Under versions 0 and 1 the epoch stays and sequences go on.
            sequences: if identity == before { sequences } else { HashMap::new() },
            ..State::default()
        };
        drop(state);
        if identity != before {
            self.ids.publish(identity);
        }
    }

    /// Lets the producers start requests again.
    fn resume(&self) {
        self.state.lock().expect("transaction lock").sealed = false;
        self.resumed.send_modify(|generation| *generation += 1);
    }

    /// Writes records into the transaction: one batch per partition, `(topic, partition,
    /// records)`.
    async fn write_records(&self, batches: Vec<PartitionRecords<'_>>) -> Result<(), Error> {
        let partitions: Vec<(String, i32)> = batches.iter().map(|(t, p, _)| ((*t).to_owned(), *p)).collect();
        self.add_partitions(&partitions).await?;
        let identity = self.ids.current();
        let now = now_ms();
        for ((topic, partition, records), key) in batches.into_iter().zip(partitions) {
            let sequence = *self
                .state
                .lock()
                .expect("transaction lock")
                .sequences
                .get(&key)
                .unwrap_or(&0);
            let mut builder = RecordBatchBuilder::new().producer(ProducerState {
                producer_id: identity.producer_id,
                producer_epoch: identity.producer_epoch,
                base_sequence: sequence,
                transactional: true,
            });
            for (key, value) in records {
                builder.push(Some(key), Some(value), Vec::new(), now);
            }
            let count = builder.len() as i32;
            self.client
                .produce_in_transaction(
                    topic,
                    partition,
                    vec![builder.build()],
                    &self.id,
                    self.max_produce_version(),
                )
                .await?;
            self.state
                .lock()
                .expect("transaction lock")
                .sequences
                .insert(key, add_sequence(sequence, count));
        }
        Ok(())
    }
}

/// Whether a partition's error in a Produce answer says that its leader refused the batch
/// before appending it: it is not in the transaction, and its queue sends it again (in this
/// transaction, or from sequence 0 in the next), so the transaction goes on. A leader that
/// could not have the partition added to the transaction answers NOT_ENOUGH_REPLICAS (KIP-890:
/// for instance while another request of the same transactional id is being verified).
/// Anything else (an answer lost, a timeout after the append, a sequence or epoch refused)
/// leaves a batch of unknown fate, which only an abort settles.
pub(crate) fn refused_before_append(error: &Error) -> bool {
    error.kafka_code().is_some_and(|code| {
        matches!(
            code.0,
            ResponseError::NotEnoughReplicas
                | ResponseError::NotLeaderOrFollower
                | ResponseError::LeaderNotAvailable
                | ResponseError::UnknownTopicOrPartition
                | ResponseError::ConcurrentTransactions
                | ResponseError::CoordinatorNotAvailable
                | ResponseError::NotCoordinator
                | ResponseError::CoordinatorLoadInProgress
                | ResponseError::NetworkException
        )
    })
}

/// Whether `error` says another producer took over the `transactional.id`.
fn is_fenced(error: &Error) -> bool {
    error.kafka_code().is_some_and(|code| {
        matches!(
            code.0,
            ResponseError::ProducerFenced
                | ResponseError::InvalidProducerEpoch
                | ResponseError::TransactionalIdAuthorizationFailed
                | ResponseError::InvalidProducerIdMapping
                | ResponseError::InvalidTxnState
        )
    })
}

/// A transaction error as the flow's error: a fenced producer says who fenced it.
fn fenced_or(cluster: &str, id: &str, error: Error) -> MirrorError {
    if is_fenced(&error) {
        fenced(cluster, id, error)
    } else {
        MirrorError::client(cluster, error)
    }
}

/// The producer of `id` must write nothing more: `error` says it was fenced, or ended a
/// transaction in a way only a fence explains.
fn fenced(cluster: &str, id: &str, error: Error) -> MirrorError {
    MirrorError::Fenced(Box::new(FencedProducer {
        cluster: cluster.to_owned(),
        transactional_id: id.to_owned(),
        error,
    }))
}
