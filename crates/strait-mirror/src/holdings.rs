//! What one flow of a group member mirrors: its share of the group ([`crate::Seat`]) applied
//! to its data path. An acquired partition starts from the progress its previous owner stored;
//! a revoked one stops fetching, its batches in flight are acknowledged and its progress is
//! stored, and only then does the member hear that it was released.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use strait_config::FlowConfig;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::data_path::{DataPath, NotDrained};
use crate::group::{FlowShare, Seat, Share};
use crate::offset_map::OffsetMap;
use crate::progress::ProgressStore;
use crate::route::Route;
use crate::{MirrorError, Stats};

type Partition = (String, i32);

/// A flow's partitions and singleton jobs, as its group assigns them (or all of them, alone).
pub(crate) struct Holdings {
    flow: FlowConfig,
    seat: Seat,
    shares: Option<watch::Receiver<Arc<Share>>>,
    /// Partitions the data path mirrors.
    mirrored: BTreeSet<Partition>,
    /// Assigned partitions not mirrored yet: their stored progress could not be read, or they
    /// are still being released from an earlier share.
    acquiring: BTreeSet<Partition>,
    /// Revoked partitions on their way out.
    releasing: JoinSet<(Vec<Partition>, Result<(), NotDrained>)>,
    releasing_keys: HashSet<Partition>,
    /// The last share taken; acknowledged once nothing is being released.
    epoch: u64,
    /// Whether this process runs the flow's singleton jobs.
    singleton: watch::Sender<bool>,
    /// Whether this process mirrors every partition of the flow (its own stores are current
    /// for all of them).
    alone: watch::Sender<bool>,
}

impl Holdings {
    /// The holdings of `flow`, seated in a group or alone.
    pub(crate) fn new(flow: &FlowConfig, seat: Seat) -> Holdings {
        let shares = seat.shares();
        let grouped = shares.is_some();
        Holdings {
            flow: flow.clone(),
            seat,
            shares,
            mirrored: BTreeSet::new(),
            acquiring: BTreeSet::new(),
            releasing: JoinSet::new(),
            releasing_keys: HashSet::new(),
            epoch: 0,
            singleton: watch::channel(!grouped).0,
            alone: watch::channel(!grouped).0,
        }
    }

    /// Whether the flow's work is shared out by a group (else discovery decides it).
    pub(crate) fn is_grouped(&self) -> bool {
        self.shares.is_some()
    }

    /// The partitions this process mirrors in its group; `None` without a group (it mirrors
    /// every partition it knows of).
    pub(crate) fn held(&self) -> Option<BTreeSet<Partition>> {
        self.is_grouped().then(|| self.mirrored.clone())
    }

    /// Whether this process runs the flow's singleton jobs, as it changes.
    pub(crate) fn singleton(&self) -> watch::Receiver<bool> {
        self.singleton.subscribe()
    }

    /// Whether this process mirrors every partition of the flow, as it changes.
    pub(crate) fn alone(&self) -> watch::Receiver<bool> {
        self.alone.subscribe()
    }

    /// Whether this process holds the flow's singleton now.
    pub(crate) fn holds_singleton(&self) -> bool {
        *self.singleton.borrow()
    }

    /// The next share of the group (never, alone).
    pub(crate) async fn next_share(&mut self) -> Arc<Share> {
        next_share(&mut self.shares).await
    }

    /// The latest share, seen or not.
    pub(crate) fn current_share(&mut self) -> Option<Arc<Share>> {
        self.shares.as_mut().map(|shares| shares.borrow_and_update().clone())
    }

    /// What `share` gives this flow.
    pub(crate) fn mine(&self, share: &Share) -> FlowShare {
        share.flows.get(&self.flow.name()).cloned().unwrap_or_default()
    }

    /// Says that `share` was applied, holding nothing of it (a flow not running its data path).
    pub(crate) fn pass(&mut self, share: &Share) {
        self.epoch = share.epoch;
        self.singleton
            .send_if_modified(|held| std::mem::replace(held, self.mine(share).singleton) != *held);
        self.seat.applied(share.epoch);
    }

    /// Takes `share`: revoked partitions start their release, acquired ones wait for
    /// [`acquire`](Self::acquire).
    pub(crate) fn take(&mut self, share: &Share, data_path: &DataPath) {
        let mine = self.mine(share);
        let revoked: Vec<Partition> = self.mirrored.difference(&mine.partitions).cloned().collect();
        self.acquiring = mine.partitions.difference(&self.mirrored).cloned().collect();
        if !revoked.is_empty() {
            tracing::info!(flow = %self.flow.name(), partitions = revoked.len(), "releasing revoked partitions");
            for key in &revoked {
                self.mirrored.remove(key);
            }
            self.releasing_keys.extend(revoked.iter().cloned());
            let release = data_path.remove(revoked.clone(), share.release_within);
            self.releasing.spawn(async move { (revoked, release.await) });
        }
        self.singleton
            .send_if_modified(|held| std::mem::replace(held, mine.singleton) != *held);
        self.alone.send_replace(share.members <= 1);
        self.epoch = share.epoch;
        self.acknowledge();
    }

    /// Starts mirroring the acquired partitions from their stored progress. Those whose
    /// progress cannot be read now are tried again at the next call.
    pub(crate) async fn acquire(
        &mut self,
        data_path: &DataPath,
        (progress, offset_map): (&ProgressStore, &OffsetMap),
    ) -> Result<(), MirrorError> {
        let ready: HashSet<Partition> = self
            .acquiring
            .iter()
            .filter(|key| !self.releasing_keys.contains(*key))
            .cloned()
            .collect();
        if ready.is_empty() {
            return Ok(());
        }
        // Another member mirrored them meanwhile: what this process remembers is stale.
        progress.reload(&ready).await?;
        offset_map.reload(&ready).await?;
        let routes: Vec<Route> = ready
            .iter()
            .map(|(topic, partition)| Route::new(topic, &self.flow.remote_topic(topic), *partition))
            .collect();
        tracing::info!(flow = %self.flow.name(), partitions = routes.len(), "mirroring acquired partitions");
        data_path.add(routes);
        for key in ready {
            self.acquiring.remove(&key);
            self.mirrored.insert(key);
        }
        Ok(())
    }

    /// Every partition held, for the data path to place again (a route whose start could not
    /// be found is dropped by it and added again here).
    pub(crate) fn routes(&self) -> Vec<Route> {
        self.mirrored
            .iter()
            .map(|(topic, partition)| Route::new(topic, &self.flow.remote_topic(topic), *partition))
            .collect()
    }

    /// The next share, or the next release that ended.
    pub(crate) async fn next_change(&mut self) -> Change {
        let Holdings { shares, releasing, .. } = self;
        tokio::select! {
            share = next_share(shares) => Change::Share(share),
            (partitions, drained) = released(releasing) => Change::Released(partitions, drained),
        }
    }

    /// A release ended and its progress was stored: the partitions are someone else's.
    pub(crate) fn forget(&mut self, partitions: &[Partition], stats: &Stats) {
        for (topic, partition) in partitions {
            self.releasing_keys.remove(&(topic.clone(), *partition));
            stats.forget_partition(topic, *partition);
        }
        self.acknowledge();
    }

    /// Tells the member the last share was applied, once nothing is being released.
    fn acknowledge(&self) {
        if self.releasing_keys.is_empty() {
            self.seat.applied(self.epoch);
        }
    }

    /// The data path stopped: nothing is mirrored or being released any more; a next run
    /// starts again from the group's current share.
    pub(crate) fn end_run(&mut self) {
        self.releasing.abort_all();
        self.releasing_keys.clear();
        self.mirrored.clear();
        self.acquiring.clear();
        self.acknowledge();
    }
}

/// What changed for a flow's holdings.
pub(crate) enum Change {
    /// The group assigned a new share.
    Share(Arc<Share>),
    /// A release ended: its partitions, and whether every batch of them was acknowledged in
    /// time.
    Released(Vec<Partition>, Result<(), NotDrained>),
}

async fn next_share(shares: &mut Option<watch::Receiver<Arc<Share>>>) -> Arc<Share> {
    match shares {
        Some(shares) => match shares.changed().await {
            Ok(()) => shares.borrow_and_update().clone(),
            // The membership ended (the process is stopping): nothing more comes.
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

async fn released(
    releasing: &mut JoinSet<(Vec<Partition>, Result<(), NotDrained>)>,
) -> (Vec<Partition>, Result<(), NotDrained>) {
    match releasing.join_next().await {
        Some(Ok(released)) => released,
        Some(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Aborted only when the run ends; none under way: wait for a share.
        Some(Err(_)) | None => std::future::pending().await,
    }
}

/// Waits until `holdings` holds the flow's singleton, saying meanwhile that each share was
/// applied (a flow that waits holds nothing). `false` on shutdown.
pub(crate) async fn wait_for_singleton(holdings: &mut Holdings, shutdown: &mut watch::Receiver<bool>) -> bool {
    if let Some(share) = holdings.current_share() {
        holdings.pass(&share);
    }
    while !holdings.holds_singleton() {
        tokio::select! {
            share = holdings.next_share() => holdings.pass(&share),
            _ = shutdown.changed() => return false,
        }
    }
    !*shutdown.borrow()
}

/// Runs `start` (a singleton job, told to stop by its receiver) while `held` says this process
/// runs the flow's singleton jobs, until `shutdown`: stopped when the group gives them to
/// another member, started again when they come back.
pub(crate) async fn while_held<F, Fut>(
    mut held: watch::Receiver<bool>,
    mut shutdown: watch::Receiver<bool>,
    within: Duration,
    flow: String,
    task: &'static str,
    mut start: F,
) where
    F: FnMut(watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    loop {
        tokio::select! {
            held = held.wait_for(|held| *held) => if held.is_err() { return },
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        let (stop, stopped) = watch::channel(false);
        let job = tokio::spawn(start(stopped));
        tokio::select! {
            _ = held.wait_for(|held| !*held) => {}
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
        let _ = stop.send(true);
        crate::flow::end_task(&flow, task, job, within).await;
        if *shutdown.borrow() {
            return;
        }
        tracing::info!(
            flow,
            task,
            "stopped: the group gave the flow's singleton jobs to another member"
        );
    }
}
