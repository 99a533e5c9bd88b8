//! One flow `A->B`, orchestrated: its set-up, the periodic tasks, topic discovery rounds, the
//! data path, the periodic progress flush, and a bounded shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use strait_client::{Backoff, FetchParams, KafkaClient};
use strait_config::{AutoOffsetReset, ClientRole, FlowConfig, IsolationLevel, OffsetSyncsTopicLocation};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::acls::acl_sync_loop;
use crate::budget::Budget;
use crate::checkpoints::{checkpoint_loop, pruning_bounds};
use crate::client_config::connect;
use crate::data_path::{DataPath, NotDrained};
use crate::data_path_config::{DataPathConfig, OffsetReset};
use crate::discovery::{discover, Discovered};
use crate::group::Seat;
use crate::heartbeats::heartbeat_loop;
use crate::holdings::{wait_for_singleton, while_held, Change, Holdings};
use crate::internal_topics::{next_tick, retry_until_stopped, unless_stopped};
use crate::offset_map::OffsetMap;
use crate::offset_syncs::OffsetSyncs;
use crate::progress::ProgressStore;
use crate::sink::producer::ProduceSettings;
use crate::sink::transaction::{Ended, Transaction};
use crate::topic_config_sync::config_sync_loop;
use crate::{FlowState, MirrorError, Stats};

/// How often acknowledged positions are written to the progress topic. Restarting repeats at
/// most this much work (bounded duplicates, never gaps).
const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// Replication factor of the progress topic (Connect's `offset.storage.replication.factor`),
/// capped at the number of target brokers.
const PROGRESS_REPLICATION_FACTOR: i16 = 3;
/// Longest pause between attempts to create a remote topic the target refused.
const REFUSED_TOPIC_MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Longest pause between attempts to start a flow.
const START_UP_MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long a replica the leader prefers (KIP-392) is fetched from before the leader is asked
/// again: Java's `metadata.max.age.ms` default.
const PREFERRED_REPLICA_LEASE: Duration = Duration::from_secs(300);

/// A running flow.
#[derive(Debug)]
pub struct FlowHandle {
    stats: Arc<Stats>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<Result<(), MirrorError>>,
}

impl FlowHandle {
    /// Live counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Whether the flow has ended (it only ends on its own with an error).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops fetching, lets every batch in flight be acknowledged, stores the progress and
    /// returns how the flow ended.
    pub async fn stop(self) -> Result<(), MirrorError> {
        let _ = self.shutdown.send(true);
        self.task.await.unwrap_or_else(joined_error)
    }
}

/// What every flow of a process shares: the byte budget and the process-wide settings.
#[derive(Debug, Clone)]
pub struct Process {
    /// Fetched but unacknowledged bytes of every flow (`strait.buffer.memory`).
    pub budget: Arc<Budget>,
    /// Fetch connections per source broker (`strait.fetchers.per.broker`).
    pub fetchers_per_broker: u16,
    /// Produce connections per target broker (`strait.producers.per.broker`).
    pub producers_per_broker: u16,
    /// How long a stopping flow waits for the batches on the wire, and again for its final
    /// progress and offset-sync writes (`task.shutdown.graceful.timeout.ms`).
    pub shutdown_timeout: Duration,
}

impl Process {
    /// The process settings of `config`.
    pub fn new(config: &strait_config::Mm2Config) -> Process {
        Process {
            budget: Budget::new(usize::try_from(config.buffer_memory()).unwrap_or(usize::MAX)),
            fetchers_per_broker: config.fetchers_per_broker(),
            producers_per_broker: config.producers_per_broker(),
            shutdown_timeout: config.shutdown_timeout(),
        }
    }
}

/// Starts mirroring `flow` on the current tokio runtime, within `process`'s budget: what its
/// `seat` assigns it, or everything if it is alone.
pub fn run_flow(flow: FlowConfig, process: &Process, seat: Seat) -> FlowHandle {
    let stats = Arc::new(Stats::new(&flow.source.alias, &flow.target.alias));
    let (shutdown, signal) = watch::channel(false);
    let process = process.clone();
    let task = tokio::spawn({
        let stats = stats.clone();
        async move {
            seat.register(&stats);
            let holdings = Holdings::new(&flow, seat);
            let result = flow_loop(flow, process, stats.clone(), holdings, signal).await;
            match &result {
                Ok(()) => stats.set_state(FlowState::Stopped, None),
                Err(error) => stats.set_state(FlowState::Failed, Some(error.to_string())),
            }
            result
        }
    });
    FlowHandle { stats, shutdown, task }
}

/// Runs `step` until it succeeds, retrying errors that may pass (a cluster unreachable or
/// restarting) with backoff and showing them in the flow's state; `None` on shutdown. A flow
/// of a long-running appliance waits for its clusters rather than end.
async fn start_up<T, F, Fut>(
    flow: &FlowConfig,
    stats: &Stats,
    shutdown: &mut watch::Receiver<bool>,
    step: F,
) -> Result<Option<T>, MirrorError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, MirrorError>>,
{
    retry_until_stopped(shutdown, START_UP_MAX_BACKOFF, step, |error, delay| {
        if !error.is_retriable() {
            return false;
        }
        tracing::warn!(flow = %flow.name(), %error, "flow cannot start yet; retrying in {delay:?}");
        stats.set_state(FlowState::Starting, Some(error.to_string()));
        true
    })
    .await
}

async fn flow_loop(
    flow: FlowConfig,
    process: Process,
    stats: Arc<Stats>,
    mut holdings: Holdings,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), MirrorError> {
    let Some(target) = start_up(&flow, &stats, &mut shutdown, || {
        connect(&flow.target, ClientRole::Producer)
    })
    .await?
    else {
        return Ok(());
    };
    let name = flow.name();
    let stop_within = process.shutdown_timeout;
    let heartbeats = tokio::spawn(while_held(
        holdings.singleton(),
        shutdown.clone(),
        stop_within,
        name.clone(),
        "heartbeats",
        {
            let (flow, target, stats) = (flow.clone(), target.clone(), stats.clone());
            move |stop| heartbeat_loop(flow.clone(), target.clone(), stats.clone(), stop)
        },
    ));
    let result = if flow.enabled {
        loop {
            let run = data_loop(
                flow.clone(),
                target.clone(),
                process.clone(),
                stats.clone(),
                &mut holdings,
                shutdown.clone(),
            );
            match run.await {
                // Exactly-once mode: nothing uncommitted was taken for mirrored; go on from
                // the committed positions.
                Err(error @ MirrorError::TransactionAborted { .. }) => {
                    tracing::warn!(flow = %name, %error);
                    stats.set_state(FlowState::Starting, Some(error.to_string()));
                }
                // Exactly-once mode: the group gave the flow to another member, whose
                // producer fences this one; wait until it comes back.
                Ok(RunEnd::HandedOver) => {
                    tracing::info!(flow = %name, "the group gave the flow to another member; committed and stopped");
                    stats.set_state(
                        FlowState::Starting,
                        Some("held by another member of the group".to_owned()),
                    );
                }
                Ok(RunEnd::Stopped) => break Ok(()),
                Err(error) => break Err(error),
            }
        }
    } else {
        stats.set_state(FlowState::Running, None);
        // A heartbeat-only flow (MM2 runs one for every pair) lives until shutdown; in a group
        // it holds at most its singleton (the heartbeats).
        while !*shutdown.borrow() {
            tokio::select! {
                share = holdings.next_share() => holdings.pass(&share),
                _ = shutdown.changed() => {}
            }
        }
        Ok(())
    };
    end_task(&name, "heartbeats", heartbeats, stop_within).await;
    result
}

/// Tells the run's periodic jobs to stop and ends each (the next run, if any, starts them
/// again).
async fn end_jobs(flow: &str, stop: &watch::Sender<bool>, jobs: Vec<(&'static str, JoinHandle<()>)>, within: Duration) {
    let _ = stop.send(true);
    for (task, handle) in jobs {
        end_task(flow, task, handle, within).await;
    }
}

/// Waits up to `within` for a periodic task that was told to stop, then aborts it: a task
/// stuck on an unreachable cluster must not hold the process up.
pub(crate) async fn end_task(flow: &str, name: &str, mut task: JoinHandle<()>, within: Duration) {
    match tokio::time::timeout(within, &mut task).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Ok(Err(_)) => {}
        Err(_) => {
            tracing::warn!(
                flow,
                task = name,
                "did not stop within {within:?} (task.shutdown.graceful.timeout.ms); abandoned"
            );
            task.abort();
        }
    }
}

/// Where a flow's data path records what it mirrored: positions, the offset map, offset syncs.
type Stores<'a> = (&'a Arc<ProgressStore>, &'a Arc<OffsetMap>, &'a Option<Arc<OffsetSyncs>>);

/// What a flow sets up before it mirrors.
struct Setup {
    source: KafkaClient,
    target_brokers: i16,
    progress: ProgressStore,
    offset_map: OffsetMap,
    syncs: Option<OffsetSyncs>,
    transaction: Option<Arc<Transaction>>,
}

/// The `transactional.id` of a flow in exactly-once mode: Strait's own, never one of MM2's
/// task ids (whose running producers it would fence). The trailing number names the unit of
/// work the id writes for; one process writes a whole flow, unit 0.
pub fn transactional_id(flow: &FlowConfig) -> String {
    format!("strait-{}->{}-0", flow.source.alias, flow.target.alias)
}

async fn set_up(flow: &FlowConfig, target: &KafkaClient, stats: &Stats) -> Result<Setup, MirrorError> {
    let source = connect(&flow.source, ClientRole::Consumer).await?;
    // Exactly-once mode: InitProducerId first, which fences a previous owner of the id and
    // aborts its open transaction, so that the positions read next are all committed ones.
    let transaction = if flow.exactly_once {
        let timeout =
            Duration::from_millis(u64::try_from(flow.target_produce.transaction_timeout_ms).unwrap_or(60_000));
        let counts = stats.transactions().clone();
        Some(Transaction::begin(target, &flow.target.alias, transactional_id(flow), timeout, counts).await?)
    } else {
        None
    };
    let target_brokers = target
        .metadata(Some(&[]))
        .await
        .map_err(MirrorError::client_at(&flow.target.alias))?
        .brokers
        .len() as i16;
    let progress = ProgressStore::open(
        target,
        &flow.source.alias,
        &flow.target.alias,
        PROGRESS_REPLICATION_FACTOR.min(target_brokers),
    )
    .await?;
    let offset_map = OffsetMap::open(
        target,
        &flow.source.alias,
        &flow.target.alias,
        PROGRESS_REPLICATION_FACTOR.min(target_brokers),
    )
    .await?;
    let syncs = if flow.emit_offset_syncs_enabled {
        let (client, alias) = match flow.offset_syncs_topic_location {
            OffsetSyncsTopicLocation::Source => (&source, &flow.source.alias),
            OffsetSyncsTopicLocation::Target => (target, &flow.target.alias),
        };
        let topic = flow.offset_syncs_topic();
        Some(OffsetSyncs::open(client, alias, &topic, flow.offset_syncs_topic_replication_factor).await?)
    } else {
        None
    };
    // Skipped records were named in the log; counted here once per start of the flow.
    for (topic, skipped) in [
        (progress.topic(), progress.unreadable_records()),
        (offset_map.topic(), offset_map.unreadable_records()),
    ] {
        if skipped > 0 {
            tracing::warn!(flow = %flow.name(), topic, skipped, "unreadable records skipped; mirroring goes on");
            stats.record_unreadable(topic, skipped);
        }
    }
    Ok(Setup {
        source,
        target_brokers,
        progress,
        offset_map,
        syncs,
        transaction,
    })
}

/// How a run of the data path ended without an error.
enum RunEnd {
    /// Told to stop.
    Stopped,
    /// Exactly-once mode: the group gave the flow to another member.
    HandedOver,
}

async fn data_loop(
    flow: FlowConfig,
    target: KafkaClient,
    process: Process,
    stats: Arc<Stats>,
    holdings: &mut Holdings,
    mut shutdown: watch::Receiver<bool>,
) -> Result<RunEnd, MirrorError> {
    // Exactly-once mode: the flow is never split, and InitProducerId fences whoever holds its
    // transactional id; so only its owner in the group goes on.
    if flow.exactly_once && holdings.is_grouped() && !wait_for_singleton(holdings, &mut shutdown).await {
        return Ok(RunEnd::Stopped);
    }
    let Some(setup) = start_up(&flow, &stats, &mut shutdown, || set_up(&flow, &target, &stats)).await? else {
        return Ok(RunEnd::Stopped);
    };
    let result = mirror(flow, (setup, target), process, stats, holdings, shutdown).await;
    holdings.end_run();
    result
}

async fn mirror(
    flow: FlowConfig,
    (setup, target): (Setup, KafkaClient),
    process: Process,
    stats: Arc<Stats>,
    holdings: &mut Holdings,
    mut shutdown: watch::Receiver<bool>,
) -> Result<RunEnd, MirrorError> {
    let name = flow.name();
    let (source, target_brokers) = (setup.source, setup.target_brokers);
    // Metadata, offsets, internal topics, config and ACL sync: the clients' shared connections.
    stats.count_connections(&flow.source.alias, "admin", source.config().connection.counter.clone());
    stats.count_connections(&flow.target.alias, "admin", target.config().connection.counter.clone());
    let progress = Arc::new(setup.progress);
    let offset_map = Arc::new(setup.offset_map);
    let syncs = setup.syncs.map(Arc::new);
    let transaction = setup.transaction;
    // The singleton jobs: run by one member of the group, for as long as it holds them, and
    // stopped with this run.
    let (stop_jobs, jobs_stopped) = watch::channel(false);
    let singleton_job = |task: &'static str| {
        (
            holdings.singleton(),
            jobs_stopped.clone(),
            process.shutdown_timeout,
            name.clone(),
            task,
        )
    };
    let config_sync = tokio::spawn({
        let (held, stopped, within, flow_name, task) = singleton_job("config sync");
        let (flow, source, target, stats) = (flow.clone(), source.clone(), target.clone(), stats.clone());
        while_held(held, stopped, within, flow_name, task, move |stop| {
            config_sync_loop(flow.clone(), source.clone(), target.clone(), stats.clone(), stop)
        })
    });
    let acl_sync = tokio::spawn({
        let (held, stopped, within, flow_name, task) = singleton_job("ACL sync");
        let (flow, source, target, stats) = (flow.clone(), source.clone(), target.clone(), stats.clone());
        while_held(held, stopped, within, flow_name, task, move |stop| {
            acl_sync_loop(flow.clone(), source.clone(), target.clone(), stats.clone(), stop)
        })
    });
    // As in MM2, checkpoints need offset syncs to be emitted.
    let checkpoints = syncs.is_some().then(|| {
        let (held, stopped, within, flow_name, task) = singleton_job("checkpoints");
        let (flow, source, target, stats) = (flow.clone(), source.clone(), target.clone(), stats.clone());
        let (stores, transaction, alone) = (
            (progress.clone(), offset_map.clone()),
            transaction.clone(),
            holdings.alone(),
        );
        tokio::spawn(while_held(held, stopped, within, flow_name, task, move |stop| {
            checkpoint_loop(
                flow.clone(),
                source.clone(),
                target.clone(),
                stores.clone(),
                transaction.clone(),
                (stats.clone(), alone.clone()),
                stop,
            )
        }))
    });
    // The offset map is pruned in every mode: each member prunes the partitions it mirrors,
    // below bounds read every `emit.checkpoints.interval.seconds`.
    let (bounds_found, mut bounds) = watch::channel(Arc::new(PruningBounds::new()));
    let pruning = tokio::spawn(pruning_loop(
        flow.clone(),
        source.clone(),
        offset_map.clone(),
        bounds_found,
        jobs_stopped.clone(),
    ));
    let jobs: Vec<(&'static str, JoinHandle<()>)> = [
        ("config sync", config_sync),
        ("ACL sync", acl_sync),
        ("offset map pruning", pruning),
    ]
    .into_iter()
    .chain(checkpoints.map(|handle| ("checkpoints", handle)))
    .collect();
    let stores = (&progress, &offset_map, &syncs);
    let mut config = data_path_config(&flow, (&source, &target), &process, &stats, stores);
    config.transaction = transaction.clone();
    let data_path = DataPath::start(config).await?;
    if let Some(share) = holdings.current_share() {
        holdings.take(&share, &data_path);
    }
    tracing::info!(flow = %name, "flow started");
    stats.set_state(FlowState::Running, None);
    if flow.policy.kind() == strait_config::PolicyKind::Identity {
        tracing::warn!(
            flow = %name,
            "IdentityReplicationPolicy keeps topic names, so they carry no origin: only heartbeats are protected from \
             loops. If the reverse flow is enabled too, give each topic one direction with topics/topics.exclude, or \
             its records will circulate between the clusters"
        );
    }
    let refresh = flow.refresh_topics.interval();
    let mut next_refresh = Some(tokio::time::Instant::now());
    let mut discovery_backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    let mut refused_backoff = Backoff::new(Duration::from_secs(1), REFUSED_TOPIC_MAX_BACKOFF);
    let mut flush = tokio::time::interval(match &transaction {
        Some(_) => flow.transaction_interval,
        None => FLUSH_INTERVAL,
    });
    // Exactly-once mode: why the open transaction was aborted, or the producer fenced, which
    // ends this run.
    let mut ended: Option<Result<String, MirrorError>> = None;
    let mut handed_over = false;
    while !*shutdown.borrow() && ended.is_none() && !handed_over {
        if let Err(error) = holdings.acquire(&data_path, (&progress, &offset_map)).await {
            tracing::warn!(flow = %name, %error, "cannot read the stored progress of acquired partitions; retrying");
        }
        if next_refresh.is_some_and(|at| tokio::time::Instant::now() >= at) {
            // In a group, remote topics are created by the singleton's holder, and each member
            // mirrors what it was assigned (placed again here, should a start not be found).
            let discovery = async {
                if !holdings.is_grouped() {
                    return discover(&flow, &source, &target, target_brokers).await;
                }
                let refused = if holdings.holds_singleton() {
                    discover(&flow, &source, &target, target_brokers).await?.refused
                } else {
                    Default::default()
                };
                Ok(Discovered {
                    routes: holdings.routes(),
                    refused,
                })
            };
            match unless_stopped(&mut shutdown, discovery).await {
                None => continue,
                Some(Ok(Discovered { routes, refused })) => {
                    data_path.add(routes);
                    stats.record_discovery();
                    discovery_backoff.reset();
                    // Without `refresh.topics`, the topics found are the flow's for good.
                    next_refresh = refresh.map(|every| tokio::time::Instant::now() + every);
                    // A topic the target refused is tried again with backoff, not only at the
                    // next refresh (10 minutes by default, or never without `refresh.topics`).
                    if refused.is_empty() {
                        refused_backoff.reset();
                    } else {
                        let retry = tokio::time::Instant::now() + refused_backoff.next_delay();
                        next_refresh = Some(next_refresh.map_or(retry, |at| at.min(retry)));
                    }
                    stats.set_waiting_topics(refused);
                }
                Some(Err(error)) => {
                    // Soon, not at the next refresh (10 minutes by default, or never without
                    // `refresh.topics`): remote topics just created may not have leaders yet.
                    let delay = discovery_backoff.next_delay();
                    tracing::error!(flow = %name, %error, "topic discovery failed; retrying in {delay:?}");
                    next_refresh = Some(tokio::time::Instant::now() + delay);
                }
            }
        }
        let due = async {
            match &transaction {
                Some(transaction) => transaction.due().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = flush.tick() => match &transaction {
                // The commit is not cut short by a stop: the final one would wait for it anyway.
                Some(transaction) => {
                    ended = commit(&name, transaction, stores, within_of(&process)).await.transpose();
                }
                None => {
                    let flushes = async {
                        // The offset map first: translation trusts every stored position.
                        if let Err(error) = offset_map.flush().await {
                            tracing::warn!(flow = %name, %error, "writing the offset map failed; progress is stored after it is");
                            return;
                        }
                        // Syncs next: a checkpoint must never rely on progress the syncs do not show.
                        if let Some(syncs) = &syncs {
                            if let Err(error) = syncs.flush().await {
                                tracing::warn!(flow = %name, %error, "writing offset syncs failed; they are written at the next flush");
                            }
                        }
                        if let Err(error) = progress.flush().await {
                            tracing::warn!(flow = %name, %error, "storing progress failed; retrying");
                        }
                    };
                    // Both flushes are cancel-safe: cut short by a stop, the final flush writes it all.
                    unless_stopped(&mut shutdown, flushes).await;
                }
            },
            _ = due => {
                let transaction = transaction.as_ref().expect("only a transaction is ever due");
                ended = commit(&name, transaction, stores, within_of(&process)).await.transpose();
                flush.reset();
            }
            change = holdings.next_change() => match change {
                Change::Share(share) => {
                    let had_singleton = holdings.holds_singleton();
                    holdings.take(&share, &data_path);
                    handed_over = flow.exactly_once && !holdings.holds_singleton();
                    if holdings.holds_singleton() && !had_singleton {
                        // The new holder creates what appeared since the old one last looked
                        // (the remote topics of the partitions just assigned, perhaps) now.
                        next_refresh = Some(tokio::time::Instant::now());
                    }
                }
                Change::Released(released, drained) => {
                if drained.is_err() {
                    // Their positions stay where the last acknowledged batch left them: the
                    // new owner mirrors the rest again (duplicates, never gaps).
                    tracing::warn!(flow = %name, partitions = released.len(), "revoked partitions were not drained in time; their unacknowledged batches are mirrored again by their new owner");
                }
                    release(&name, &released, stores, within_of(&process)).await;
                    holdings.forget(&released, &stats);
                }
            },
            _ = changed(&mut bounds) => {
                let bounds = bounds.borrow_and_update().clone();
                let held = holdings.held();
                let held = |key: &(String, i32)| held.as_ref().is_none_or(|held| held.contains(key));
                unless_stopped(&mut shutdown, prune(&name, &offset_map, &bounds, &held)).await;
                stats.record_offset_map_bytes(offset_map.stored_bytes_of(held));
            }
            _ = sleep_until(next_refresh) => {}
            _ = shutdown.changed() => {}
        }
    }
    if ended.is_none() && !handed_over {
        tracing::info!(flow = %name, "stopping: waiting for the batches on the wire");
        stats.set_state(FlowState::Stopping, None);
    }
    let within = process.shutdown_timeout;
    let drained = data_path.stop(within).await;
    if let Some(transaction) = &transaction {
        // Exactly-once mode: the last transaction commits what was acknowledged, or aborts
        // if batches stayed unanswered (they may have landed; a restart mirrors them again).
        if let Err(NotDrained) = drained {
            transaction.doom_because("batches on the wire were not answered at shutdown");
        }
        let ended = match ended {
            Some(Ok(why)) => Ok(Ended::Aborted(why)),
            Some(Err(fatal)) => Err(fatal),
            None => transaction.end(&progress, &offset_map, syncs.as_deref(), within).await,
        };
        if let (Some(syncs), Ok(Ended::Committed(after))) = (&syncs, &ended) {
            if !after.is_empty() {
                if let Err(error) = bounded(within, "offset syncs", || syncs.write(after.clone())).await {
                    tracing::error!(flow = %name, %error, "the last offset syncs were not stored");
                }
            }
        }
        end_jobs(&name, &stop_jobs, jobs, within).await;
        return match ended {
            Err(fatal) => Err(fatal),
            Ok(Ended::Aborted(why)) => Err(MirrorError::TransactionAborted { flow: name, why }),
            Ok(Ended::Committed(_)) if handed_over => drained.ok().flatten().map_or(Ok(RunEnd::HandedOver), Err),
            Ok(Ended::Committed(_)) => {
                tracing::info!(flow = %name, records = stats.records(), bytes = stats.bytes(), "flow stopped");
                drained.ok().flatten().map_or(Ok(RunEnd::Stopped), Err)
            }
        };
    }
    let mut first_error = match drained {
        Ok(stopped) => stopped,
        Err(NotDrained) => {
            // Nothing is lost: their positions were not recorded, so a restart fetches them
            // again (duplicates, if the target did take them).
            let partitions: Vec<String> = stats
                .unacknowledged()
                .iter()
                .map(|(topic, partition, position)| match position {
                    Some(position) => format!("{topic}-{partition} from {position}"),
                    None => format!("{topic}-{partition}"),
                })
                .collect();
            tracing::error!(
                flow = %name,
                "batches on the wire were not acknowledged within {within:?} (task.shutdown.graceful.timeout.ms); \
                 a restart fetches these partitions again: {}",
                partitions.join(", ")
            );
            Some(MirrorError::NotDrained {
                flow: name.clone(),
                within,
                partitions: partitions.len(),
            })
        }
    };
    // All are written even if one fails: each is what a restart starts from. Progress beyond
    // the stored offset map costs exactness (a failed-over group may re-read), never records.
    if let Err(error) = bounded(within, "offset map", || offset_map.flush()).await {
        tracing::error!(flow = %name, %error, "the last offset mappings were not stored");
        first_error.get_or_insert(error);
    }
    if let Some(syncs) = &syncs {
        if let Err(error) = bounded(within, "offset syncs", || syncs.flush()).await {
            tracing::error!(flow = %name, %error, "the last offset syncs were not stored");
            first_error.get_or_insert(error);
        }
    }
    if let Err(error) = bounded(within, "progress", || progress.flush()).await {
        tracing::error!(flow = %name, %error, "the last progress was not stored; a restart repeats what it covered");
        first_error.get_or_insert(error);
    }
    end_jobs(&name, &stop_jobs, jobs, within).await;
    tracing::info!(flow = %name, records = stats.records(), bytes = stats.bytes(), "flow stopped");
    first_error.map_or(Ok(RunEnd::Stopped), Err)
}

/// Where the offset map of each source partition may be pruned.
type PruningBounds = HashMap<(String, i32), i64>;

/// Reads the pruning bounds of the offset map's partitions every
/// `emit.checkpoints.interval.seconds` (also with checkpoints or offset syncs off), until `stop`.
async fn pruning_loop(
    flow: FlowConfig,
    source: KafkaClient,
    offset_map: Arc<OffsetMap>,
    found: watch::Sender<Arc<PruningBounds>>,
    mut stop: watch::Receiver<bool>,
) {
    let seconds = u64::try_from(flow.emit_checkpoints.interval_seconds)
        .ok()
        .filter(|&s| s > 0);
    let mut ticker = tokio::time::interval(Duration::from_secs(seconds.unwrap_or(60)));
    while next_tick(&mut ticker, &mut stop).await {
        match unless_stopped(&mut stop, pruning_bounds(&flow, &source, offset_map.prunable())).await {
            None => break,
            Some(Ok(bounds)) => {
                found.send_replace(Arc::new(bounds));
            }
            Some(Err(error)) => {
                tracing::warn!(flow = %flow.name(), %error, "cannot read where the groups are; the offset map is pruned at a later interval")
            }
        }
    }
}

/// Prunes the offset map of the partitions `held` says this process mirrors (their mapping is
/// this process's to write) below `bounds`.
async fn prune(name: &str, offset_map: &OffsetMap, bounds: &PruningBounds, held: &impl Fn(&(String, i32)) -> bool) {
    for ((topic, partition), &below) in bounds.iter().filter(|(key, _)| held(key)) {
        match offset_map.prune(topic, *partition, below).await {
            Ok(0) => {}
            Ok(chunks) => tracing::debug!(flow = name, topic, partition, below, chunks, "offset map pruned"),
            Err(error) => {
                tracing::warn!(flow = name, topic, partition, %error, "pruning the offset map failed; retrying next interval")
            }
        }
    }
}

/// The next change of `bounds`; never once its sender is gone.
async fn changed(bounds: &mut watch::Receiver<Arc<PruningBounds>>) {
    if bounds.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Stores what a release left recorded (the offset map, offset syncs, then progress, as the
/// periodic flush does), so that the partitions' new owner starts where this process ended.
/// A write that fails costs duplicates there, never gaps: the member goes on regardless.
async fn release(
    name: &str,
    partitions: &[(String, i32)],
    (progress, offset_map, syncs): Stores<'_>,
    within: Duration,
) {
    if let Err(error) = bounded(within, "offset map", || offset_map.flush()).await {
        tracing::warn!(flow = %name, %error, "the offset map of released partitions was not stored");
    }
    if let Some(syncs) = syncs {
        if let Err(error) = bounded(within, "offset syncs", || syncs.flush()).await {
            tracing::warn!(flow = %name, %error, "the offset syncs of released partitions were not stored");
        }
    }
    match bounded(within, "progress", || progress.flush()).await {
        Ok(()) => {
            tracing::info!(flow = %name, partitions = partitions.len(), "released partitions; their progress is stored")
        }
        Err(error) => {
            tracing::warn!(flow = %name, %error, "the progress of released partitions was not stored; their new owner repeats what it covered")
        }
    }
}

/// How long a transaction's requests on the wire may take to be answered before it aborts.
fn within_of(process: &Process) -> Duration {
    process.shutdown_timeout.max(Duration::from_secs(30))
}

/// Exactly-once mode: ends the open transaction (the positions go in it), then writes the
/// offset syncs of what it committed. Returns why it was aborted, if it was.
async fn commit(
    name: &str,
    transaction: &Transaction,
    (progress, offset_map, syncs): Stores<'_>,
    within: Duration,
) -> Result<Option<String>, MirrorError> {
    match transaction.end(progress, offset_map, syncs.as_deref(), within).await? {
        Ended::Aborted(why) => Ok(Some(why)),
        Ended::Committed(after) => {
            // Syncs on another cluster than the target: written after the commit, as MM2
            // writes them, so that a sync never names uncommitted records.
            if let Some(syncs) = syncs.as_ref().filter(|_| !after.is_empty()) {
                if let Err(error) = syncs.write(after).await {
                    tracing::warn!(flow = %name, %error, "writing offset syncs failed; they are written after the next commit");
                }
            }
            Ok(None)
        }
    }
}

/// The last `write` of a stopping flow: retried while its errors may pass (a stalled
/// connection is only replaced after a request on it timed out), within `within` in all, or an
/// error saying what could not be stored. `write` must be cancel-safe.
async fn bounded<F, Fut>(within: Duration, what: &'static str, mut write: F) -> Result<(), MirrorError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), MirrorError>>,
{
    let deadline = tokio::time::Instant::now() + within;
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    loop {
        match tokio::time::timeout_at(deadline, write()).await {
            Err(_) => return Err(MirrorError::NotStored { what, within }),
            Ok(Err(error)) if error.is_retriable() => {
                tracing::warn!(%error, "storing the last {what} failed; retrying until {within:?} have passed");
                if tokio::time::timeout_at(deadline, tokio::time::sleep(backoff.next_delay()))
                    .await
                    .is_err()
                {
                    return Err(MirrorError::NotStored { what, within });
                }
            }
            Ok(result) => return result,
        }
    }
}

/// The data path's settings, from the flow's: the source consumer's keys and the target
/// producer's.
fn data_path_config(
    flow: &FlowConfig,
    (source, target): (&KafkaClient, &KafkaClient),
    process: &Process,
    stats: &Arc<Stats>,
    (progress, offset_map, syncs): Stores<'_>,
) -> DataPathConfig {
    let fetch = &flow.source_fetch;
    let produce = &flow.target_produce;
    DataPathConfig {
        source: source.clone(),
        target: target.clone(),
        source_alias: flow.source.alias.clone(),
        target_alias: flow.target.alias.clone(),
        fetch: FetchParams {
            max_wait_ms: fetch.max_wait_ms,
            min_bytes: fetch.min_bytes,
            max_bytes: fetch.max_bytes,
            read_committed: flow.source_isolation_level == IsolationLevel::ReadCommitted,
            rack_id: fetch.client_rack.clone(),
        },
        partition_max_bytes: fetch.partition_max_bytes,
        preferred_lease: PREFERRED_REPLICA_LEASE,
        produce: ProduceSettings {
            acks: produce.acks.as_i16(),
            // The timeout the target broker gets in each Produce request, as a Java producer
            // sends it; the client waits as long for the answer.
            timeout_ms: target.config().connection.request_timeout.as_millis() as i32,
            max_request_size: usize::try_from(produce.max_request_size).unwrap_or(0),
            max_in_flight: usize::try_from(produce.max_in_flight).unwrap_or(1).max(1),
            delivery_timeout: Duration::from_millis(u64::try_from(produce.delivery_timeout_ms).unwrap_or(0)),
        },
        fetchers_per_broker: process.fetchers_per_broker,
        producers_per_broker: process.producers_per_broker,
        reset: match flow.source_auto_offset_reset {
            AutoOffsetReset::Latest => OffsetReset::Latest,
            // `none` has no meaning for a mirror that starts with no position: MM2 forces earliest.
            AutoOffsetReset::Earliest | AutoOffsetReset::None => OffsetReset::Earliest,
        },
        budget: process.budget.clone(),
        stats: stats.clone(),
        progress: progress.clone(),
        offset_map: offset_map.clone(),
        syncs: syncs.clone(),
        transaction: None,
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What a task that did not finish normally means: its panic is raised again here; a task
/// cancelled because the runtime is shutting down simply stopped.
fn joined_error(error: tokio::task::JoinError) -> Result<(), MirrorError> {
    if error.is_panic() {
        std::panic::resume_unwind(error.into_panic());
    }
    Ok(())
}
