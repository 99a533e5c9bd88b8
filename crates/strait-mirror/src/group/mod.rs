//! Scale-out: the `strait run` processes of one configuration share each target cluster's flows
//! through Kafka's classic group protocol (protocol type `strait`), with the group coordinator
//! of that cluster as the only shared engine.
//!
//! - `member`: one process's membership of one group: join, the leader's assignment, sync,
//!   heartbeats, and giving everything up when the coordinator cannot be reached for close to
//!   the session timeout.
//! - `protocol`: the members' metadata and the leader's assignments, compactly encoded.
//! - `assignor`: the leader's cooperative sticky assignment, balanced by bytes per second.
//!
//! The unit of assignment is one source partition of one flow, plus one singleton per flow
//! (topic creation, config and ACL sync, checkpoints, group offset sync, heartbeats). A flow
//! learns its [`Share`] through its [`Seat`], applies it (revoked partitions drained and their
//! progress stored first) and says so, and only then does the member join again to have what
//! it released given out (KIP-429's two rounds).

pub(crate) mod assignor;
mod member;
pub(crate) mod protocol;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use strait_config::{FlowConfig, GroupSettings, Mm2Config};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Stats;

/// What one member holds of one flow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FlowShare {
    /// The flow's singleton jobs.
    pub singleton: bool,
    /// Source partitions (topic, partition).
    pub partitions: BTreeSet<(String, i32)>,
}

/// This member's assignment in one generation of its group.
#[derive(Debug, Clone, Default)]
pub(crate) struct Share {
    /// Shares published so far, this one included: flows acknowledge a share by it.
    pub epoch: u64,
    /// By flow name (`A->B`).
    pub flows: HashMap<String, FlowShare>,
    /// Members sharing the work (the refused not counted): alone, a member's own stores are
    /// current for every partition.
    pub members: usize,
    /// How long revoked partitions may take to drain: the rebalance timeout, or what is left of
    /// the session when the member gives everything up.
    pub release_within: Duration,
}

/// Where a flow learns what it mirrors: alone (everything, as a process outside any group) or
/// as a seat in its target cluster's group.
#[derive(Debug, Clone)]
pub struct Seat(Option<FlowSeat>);

#[derive(Debug, Clone)]
struct FlowSeat {
    flow: String,
    group: Arc<GroupShared>,
}

impl Seat {
    /// A flow that mirrors every partition it discovers and runs its singleton jobs itself.
    pub fn alone() -> Seat {
        Seat(None)
    }

    /// The group's assignments, unless alone.
    pub(crate) fn shares(&self) -> Option<watch::Receiver<Arc<Share>>> {
        self.0.as_ref().map(|seat| seat.group.shares.subscribe())
    }

    /// The flow applied the share of `epoch` (released what it revoked).
    pub(crate) fn applied(&self, epoch: u64) {
        if let Some(seat) = &self.0 {
            if let Some(applied) = seat.group.applied.get(&seat.flow) {
                applied.send_replace(epoch);
            }
        }
    }

    /// The flow's stats, whose per-partition bytes become the rates members report.
    pub(crate) fn register(&self, stats: &Arc<Stats>) {
        if let Some(seat) = &self.0 {
            seat.group
                .stats
                .lock()
                .expect("group lock")
                .insert(seat.flow.clone(), stats.clone());
        }
    }
}

/// What one group shares between its member task and its flows.
#[derive(Debug)]
pub(crate) struct GroupShared {
    group_id: String,
    /// The target cluster's alias.
    target: String,
    shares: watch::Sender<Arc<Share>>,
    /// By flow: the epoch of the last share it applied.
    applied: HashMap<String, watch::Sender<u64>>,
    /// By flow.
    stats: Mutex<HashMap<String, Arc<Stats>>>,
    view: Mutex<View>,
}

/// The group as `/status` and `/metrics` show it.
#[derive(Debug, Default)]
struct View {
    member_id: String,
    generation: i32,
    leader_id: String,
    /// Why this member holds nothing, if it was refused or lost its place.
    refused: Option<String>,
    /// Why this member gave its share up on its own: its coordinator stopped answering.
    cut_off: Option<String>,
    /// As the leader assigned them: member, partitions, singletons (the leader only).
    members: Vec<(String, Option<String>, usize, Vec<String>)>,
    rebalances: u64,
    partitions: usize,
}

/// The process's groups, one per target cluster of its flows.
#[derive(Debug)]
pub struct Membership {
    groups: Vec<Arc<GroupShared>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    stop: watch::Sender<bool>,
}

impl Membership {
    /// Joins a group on each target cluster of `flows`, on the current tokio runtime.
    pub fn start(config: &Mm2Config, flows: &[FlowConfig]) -> Membership {
        let (stop, stopped) = watch::channel(false);
        let mut groups = Vec::new();
        let mut tasks = Vec::new();
        for (target, flows) in by_target(flows) {
            let group_id = group_id(config.group(), &flows);
            let shared = Arc::new(GroupShared {
                group_id,
                target,
                shares: watch::channel(Arc::new(Share::default())).0,
                applied: flows.iter().map(|f| (f.name(), watch::channel(0).0)).collect(),
                stats: Mutex::new(HashMap::new()),
                view: Mutex::new(View::default()),
            });
            tasks.push(tokio::spawn(member::run(
                shared.clone(),
                config.group().clone(),
                flows,
                stopped.clone(),
            )));
            groups.push(shared);
        }
        Membership {
            groups,
            tasks: Mutex::new(tasks),
            stop,
        }
    }

    /// Where `flow` learns its share.
    pub fn seat(&self, flow: &FlowConfig) -> Seat {
        let group = self.groups.iter().find(|g| g.target == flow.target.alias);
        Seat(group.map(|group| FlowSeat {
            flow: flow.name(),
            group: group.clone(),
        }))
    }

    /// The groups as `/status` shows them: each with its id, this member, the generation, the
    /// leader, and (on the leader) every member with what it holds.
    pub fn status(&self) -> Value {
        Value::Array(self.groups.iter().map(|g| g.status()).collect())
    }

    /// Why this process is unhealthy as a member: a group whose coordinator stopped answering,
    /// so that it gave its share up. (A member refused for its configuration is not: during a
    /// rolling restart with a new configuration it waits, by design, for the leader's turn.)
    pub fn problems(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter_map(|g| {
                let view = g.view.lock().expect("group lock");
                view.cut_off.as_ref().map(|why| format!("group {}: {why}", g.group_id))
            })
            .collect()
    }

    /// The groups' metrics, as Prometheus text.
    pub fn write_prometheus(&self, out: &mut crate::PrometheusText) {
        for group in &self.groups {
            let view = group.view.lock().expect("group lock");
            let labels: &[(&str, &str)] = &[("group", &group.group_id)];
            out.counter(
                "strait_group_rebalances_total",
                "Generations of its group this member took part in",
                labels,
                view.rebalances as f64,
            );
            out.gauge(
                "strait_group_assigned_partitions",
                "Source partitions this member holds in its group",
                labels,
                view.partitions as f64,
            );
            out.gauge(
                "strait_group_generation",
                "The generation of the group this member holds its share in (-1: none)",
                labels,
                f64::from(view.generation),
            );
        }
    }

    /// Leaves the groups (a static member keeps its place, as Kafka's consumers do), once the
    /// flows stopped and stored their progress.
    pub async fn stop(&self, within: Duration) {
        let _ = self.stop.send(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().expect("group lock"));
        for mut task in tasks {
            if tokio::time::timeout(within, &mut task).await.is_err() {
                task.abort();
            }
        }
    }
}

impl GroupShared {
    fn status(&self) -> Value {
        let view = self.view.lock().expect("group lock");
        let members: Vec<Value> = view
            .members
            .iter()
            .map(|(member_id, instance_id, partitions, singletons)| {
                json!({
                    "member_id": member_id,
                    "group_instance_id": instance_id,
                    "partitions": partitions,
                    "singletons": singletons,
                })
            })
            .collect();
        let share = self.shares.borrow().clone();
        let mut flows: Vec<(&String, &FlowShare)> = share.flows.iter().collect();
        flows.sort_by(|a, b| a.0.cmp(b.0));
        let held: Vec<Value> = flows
            .into_iter()
            .map(|(flow, share)| {
                json!({
                    "flow": flow,
                    "singleton": share.singleton,
                    "partitions": share.partitions.iter().map(|(t, p)| format!("{t}-{p}")).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "group_id": self.group_id,
            "cluster": self.target,
            "member_id": view.member_id,
            "generation": view.generation,
            "leader_id": view.leader_id,
            "leader": !view.member_id.is_empty() && view.member_id == view.leader_id,
            "refused": view.refused,
            "cut_off": view.cut_off,
            "rebalances": view.rebalances,
            "members": members,
            "held": held,
        })
    }
}

/// The groups of `flows` (one per target cluster) as their coordinators describe them, for
/// `strait status`: the state, the generation, and every member with what the leader assigned
/// it (read from DescribeGroups and decoded). A cluster that cannot be asked gets its error.
pub async fn describe_groups(config: &Mm2Config, flows: &[FlowConfig]) -> Vec<Value> {
    let mut groups = Vec::new();
    for (_, into) in by_target(flows) {
        let target = &into[0].target;
        let group_id = group_id(config.group(), &into);
        let described = async {
            let client = crate::client_config::connect(target, strait_config::ClientRole::Admin).await?;
            client
                .describe_group(&group_id)
                .await
                .map_err(crate::MirrorError::client_at(&target.alias))
        };
        groups.push(match described.await {
            Ok(group) => {
                let mut generation = None;
                let members: Vec<Value> = group
                    .members
                    .iter()
                    .map(|member| {
                        let assignment = protocol::MemberAssignment::decode(&member.assignment);
                        let (refused, held, partitions) = match &assignment {
                            Ok(a) => {
                                generation = generation.max(Some(a.generation));
                                (a.refused.clone(), held_json(&a.units), a.partition_count())
                            }
                            Err(error) => (Some(format!("unreadable assignment: {error}")), json!([]), 0),
                        };
                        json!({
                            "member_id": member.member_id,
                            "group_instance_id": member.group_instance_id,
                            "client_host": member.client_host,
                            "refused": refused,
                            "partitions": partitions,
                            "held": held,
                        })
                    })
                    .collect();
                json!({
                    "group_id": group_id,
                    "cluster": target.alias,
                    "state": group.state,
                    "generation": generation,
                    "members": members,
                    "error": null,
                })
            }
            Err(error) => json!({
                "group_id": group_id,
                "cluster": target.alias,
                "error": error.to_string(),
            }),
        });
    }
    groups
}

/// Assigned units as `/status` shows them: per flow, the singleton and `topic-partition`s.
fn held_json(units: &[protocol::FlowUnits]) -> Value {
    Value::Array(
        units
            .iter()
            .map(|flow| {
                let partitions: Vec<String> = flow
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(move |p| format!("{}-{p}", t.topic)))
                    .collect();
                json!({ "flow": flow.flow, "singleton": flow.singleton, "partitions": partitions })
            })
            .collect(),
    )
}

/// `flows` by their target cluster (sorted by its alias): each target's flows share a group.
fn by_target(flows: &[FlowConfig]) -> BTreeMap<String, Vec<FlowConfig>> {
    let mut targets: BTreeMap<String, Vec<FlowConfig>> = BTreeMap::new();
    for flow in flows {
        targets.entry(flow.target.alias.clone()).or_default().push(flow.clone());
    }
    targets
}

/// The group of the flows to one target cluster: `strait.group.id`, or named after the flows
/// (so that processes of one configuration meet, and others do not).
fn group_id(settings: &GroupSettings, flows: &[FlowConfig]) -> String {
    match &settings.group_id {
        Some(id) => id.clone(),
        None => {
            let mut names: Vec<String> = flows.iter().map(|f| f.name()).collect();
            names.sort();
            format!("strait-{}", names.join(","))
        }
    }
}
