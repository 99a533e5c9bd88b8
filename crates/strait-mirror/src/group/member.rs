//! One process's membership of one group: join, the leader's assignment, sync, the share
//! handed to the flows (waiting until they applied it), heartbeats, and giving everything up
//! when the coordinator cannot be reached for two thirds of the session timeout.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use strait_client::kafka_protocol::error::ResponseError;
use strait_client::{Backoff, Error, GroupMembership, KafkaClient, MemberConfig};
use strait_config::{ClientRole, FlowConfig, GroupSettings};
use tokio::sync::watch;
use tokio::time::Instant;

use super::assignor::{assign, Candidate, FlowUniverse, Rates};
use super::protocol::{FlowUnits, MemberAssignment, MemberMetadata, TopicUnits, PROTOCOL};
use super::{FlowShare, GroupShared, Share};
use crate::client_config::connect;
use crate::discovery::replicated_topics;
use crate::internal_topics::unless_stopped;
use crate::MirrorError;

/// The group protocol type of Strait's members (Kafka's consumers use `consumer`).
const PROTOCOL_TYPE: &str = "strait";

/// Runs the membership until `stop`, then leaves the group (a static member keeps its place).
pub(super) async fn run(
    shared: Arc<GroupShared>,
    settings: GroupSettings,
    flows: Vec<FlowConfig>,
    mut stop: watch::Receiver<bool>,
) {
    let Some(target) = flows.first().map(|f| f.target.clone()) else {
        return;
    };
    let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    let client = loop {
        match unless_stopped(&mut stop, connect(&target, ClientRole::Consumer)).await {
            None => return,
            Some(Ok(client)) => break client,
            Some(Err(error)) => {
                let delay = backoff.next_delay();
                tracing::warn!(group = %shared.group_id, %error, "cannot reach the group's cluster; retrying in {delay:?}");
                let _ = unless_stopped(&mut stop, tokio::time::sleep(delay)).await;
            }
        }
    };
    let config = MemberConfig {
        group_id: shared.group_id.clone(),
        protocol_type: PROTOCOL_TYPE.to_owned(),
        group_instance_id: settings.instance_id.clone(),
        session_timeout: settings.session_timeout,
        rebalance_timeout: settings.rebalance_timeout,
    };
    let mut membership = GroupMembership::new(client.clone(), config.clone());
    let prober = GroupMembership::new(client, config);
    let mut member = Member::new(shared, settings, flows, prober);
    tracing::info!(group = %member.shared.group_id, "joining the group");
    let _ = unless_stopped(&mut stop, member.run(&mut membership)).await;
    if member.settings.instance_id.is_none() && !member.member_id.is_empty() {
        // At once, rather than after the session timeout: the others take the work over now.
        let leave = membership.leave(&member.member_id);
        match tokio::time::timeout(member.settings.session_timeout, leave).await {
            Ok(Ok(())) => tracing::info!(group = %member.shared.group_id, "left the group"),
            Ok(Err(error)) => tracing::warn!(group = %member.shared.group_id, %error, "leaving the group failed"),
            Err(_) => tracing::warn!(group = %member.shared.group_id, "leaving the group timed out"),
        }
    }
}

/// What ends a generation for this member.
enum Next {
    /// Join again with the same member id: a rebalance, or released partitions to hand out.
    Rejoin,
    /// The coordinator does not know this member (any more): everything was given up.
    Forgotten,
}

/// One member's state between generations.
struct Member {
    shared: Arc<GroupShared>,
    settings: GroupSettings,
    flows: Vec<FlowConfig>,
    /// Each flow setting's name and the hash of its value: members whose lists differ run
    /// different configurations.
    fingerprint: Vec<(String, u32)>,
    member_id: String,
    /// What the flows hold now (as last published), and the generation it was assigned in.
    held: BTreeMap<String, FlowShare>,
    held_generation: i32,
    /// What it held when it last joined: what the leader may have revoked (KIP-429 counts a
    /// revocation against what the member said it owns, even if it gave that up meanwhile).
    claimed: BTreeMap<String, FlowShare>,
    /// Shares published so far: the flows acknowledge each by this number.
    epoch: u64,
    /// When the coordinator last answered.
    last_contact: Instant,
    /// The leader's view of each flow's partitions when it last assigned, and when it looks
    /// again (a new topic or partition means a new assignment).
    universe: Vec<FlowUniverse>,
    next_universe_check: Option<Instant>,
    sources: HashMap<String, KafkaClient>,
    /// As the leader: the partitions' rates the members last reported.
    rates: Rates,
    /// As the leader: the members it last shared the work among (units move for balance only
    /// when they change).
    assigned_to: BTreeSet<String>,
    /// Heartbeats while a JoinGroup waits, on a coordinator connection of their own (a broker
    /// answers a connection's requests in order, and JoinGroup is answered last).
    prober: GroupMembership,
}

impl Member {
    fn new(
        shared: Arc<GroupShared>,
        settings: GroupSettings,
        flows: Vec<FlowConfig>,
        prober: GroupMembership,
    ) -> Member {
        let fingerprint = fingerprint(&flows);
        Member {
            shared,
            settings,
            flows,
            fingerprint,
            member_id: String::new(),
            held: BTreeMap::new(),
            held_generation: -1,
            claimed: BTreeMap::new(),
            epoch: 0,
            last_contact: Instant::now(),
            universe: Vec::new(),
            next_universe_check: None,
            sources: HashMap::new(),
            rates: Rates::new(),
            assigned_to: BTreeSet::new(),
            prober,
        }
    }

    async fn run(&mut self, membership: &mut GroupMembership) {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
        loop {
            match self.generation(membership).await {
                Ok(Next::Rejoin) => backoff.reset(),
                Ok(Next::Forgotten) => {
                    self.member_id.clear();
                    backoff.reset();
                }
                Err(error) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(group = %self.shared.group_id, %error, "group membership failed; joining again in {delay:?}");
                    self.pause(delay).await;
                }
            }
        }
    }

    /// One generation: join, assign (the leader), sync, apply, heartbeat until it ends.
    async fn generation(&mut self, membership: &mut GroupMembership) -> Result<Next, Error> {
        // Whatever was released must be released before the leader hands it out again.
        self.wait_applied(membership, None).await;
        let metadata = self.metadata().encode();
        self.claimed = self.held.clone();
        let member_id = self.member_id.clone();
        let joined = self.join(membership, &member_id, metadata).await;
        let generation = match joined {
            Ok(generation) => generation,
            Err(error) if error.is(ResponseError::UnknownMemberId) => return Ok(Next::Forgotten),
            Err(error) if error.is(ResponseError::FencedInstanceId) => {
                self.fenced(&error);
                self.pause(self.settings.session_timeout).await;
                return Ok(Next::Forgotten);
            }
            Err(error) => return Err(error),
        };
        self.member_id = generation.member_id.clone();
        let assignments = if generation.is_leader() {
            self.assign(&generation).await
        } else {
            Vec::new()
        };
        let synced = self.contact(membership.sync(&generation, assignments)).await;
        let bytes = match synced {
            Ok(bytes) => bytes,
            Err(error) if error.is(ResponseError::RebalanceInProgress) => return Ok(Next::Rejoin),
            Err(error) if is_forgotten(&error) => {
                self.give_up(
                    "the coordinator no longer knows this member",
                    self.settings.rebalance_timeout,
                );
                return Ok(Next::Forgotten);
            }
            Err(error) => return Err(error),
        };
        let assignment = MemberAssignment::decode(&bytes).unwrap_or_else(|error| {
            tracing::error!(group = %self.shared.group_id, %error, "the leader's assignment is unreadable; holding nothing");
            MemberAssignment {
                refused: Some(format!("the leader's assignment is unreadable: {error}")),
                ..MemberAssignment::default()
            }
        });
        let revoked = self.publish(&generation, assignment);
        if let Some(next) = self.wait_applied(membership, Some(&generation)).await {
            return Ok(next);
        }
        if revoked {
            // KIP-429's second round: what this member released can be handed out now.
            return Ok(Next::Rejoin);
        }
        self.heartbeats(membership, &generation).await
    }

    /// Heartbeats every `heartbeat.interval.ms` until the generation ends; the leader looks
    /// for new topics and partitions meanwhile.
    async fn heartbeats(
        &mut self,
        membership: &mut GroupMembership,
        generation: &strait_client::Generation,
    ) -> Result<Next, Error> {
        loop {
            self.pause(self.settings.heartbeat_interval).await;
            if self.gave_up() {
                return Ok(Next::Rejoin);
            }
            if generation.is_leader() && self.next_universe_check.is_some_and(|at| Instant::now() >= at) {
                let universe = self.universe().await;
                if !same_universe(&universe, &self.universe) {
                    tracing::info!(group = %self.shared.group_id, "the flows' partitions changed; assigning again");
                    return Ok(Next::Rejoin);
                }
            }
            if let Some(next) = self.heartbeat(membership, generation).await {
                return Ok(next);
            }
            if self.gave_up() {
                return Ok(Next::Rejoin);
            }
        }
    }

    /// One heartbeat; what ends the generation, if it does.
    async fn heartbeat(
        &mut self,
        membership: &mut GroupMembership,
        generation: &strait_client::Generation,
    ) -> Option<Next> {
        // Within a third of the session, so that a stalled connection leaves time to retry.
        let beat = heartbeat_within(membership, generation, self.settings.session_timeout / 3);
        match self.contact(beat).await {
            Ok(()) => None,
            Err(error) if error.is(ResponseError::RebalanceInProgress) => Some(Next::Rejoin),
            Err(error) if error.is(ResponseError::FencedInstanceId) => {
                self.fenced(&error);
                Some(Next::Forgotten)
            }
            Err(error) if is_forgotten(&error) => {
                self.give_up(
                    "the coordinator no longer knows this member",
                    self.settings.rebalance_timeout,
                );
                Some(Next::Forgotten)
            }
            Err(error) => {
                tracing::warn!(group = %self.shared.group_id, %error, "heartbeat failed; retrying");
                None
            }
        }
    }

    /// Waits until every flow applied the last share, heartbeating `generation` meanwhile;
    /// what ends the generation, if a heartbeat said so (the wait still completes first).
    async fn wait_applied(
        &mut self,
        membership: &mut GroupMembership,
        generation: Option<&strait_client::Generation>,
    ) -> Option<Next> {
        let mut next = None;
        let mut applied: Vec<watch::Receiver<u64>> = self.shared.applied.values().map(|a| a.subscribe()).collect();
        let epoch = self.epoch;
        loop {
            let all = async {
                for flow in &mut applied {
                    if flow.wait_for(|done| *done >= epoch).await.is_err() {
                        return; // The flow ended: it holds nothing.
                    }
                }
            };
            tokio::select! {
                _ = all => return next,
                _ = tokio::time::sleep(self.settings.heartbeat_interval) => {}
            }
            match generation {
                Some(generation) if next.is_none() => next = self.heartbeat(membership, generation).await,
                _ => self.check_contact(),
            }
        }
    }

    /// JoinGroup, which the coordinator answers once the members have joined (up to
    /// `rebalance.timeout.ms`, waiting for a slow one): meanwhile heartbeats on a connection of
    /// their own tell whether this member still has its place (REBALANCE_IN_PROGRESS says it
    /// does), so that a slow rebalance is not taken for a silent coordinator and every member
    /// does not drop its partitions in it.
    async fn join(
        &mut self,
        membership: &mut GroupMembership,
        member_id: &str,
        metadata: bytes::Bytes,
    ) -> Result<strait_client::Generation, Error> {
        let protocols = [(PROTOCOL.to_owned(), metadata)];
        let probe = Some(member_id).filter(|id| !id.is_empty());
        self.contact_probing(membership.join(member_id, &protocols), probe)
            .await
    }

    /// One heartbeat of the generation this member holds its share in, while it joins.
    async fn probe(&mut self, member_id: &str) {
        let generation = strait_client::Generation {
            generation_id: self.held_generation,
            member_id: member_id.to_owned(),
            leader_id: String::new(),
            protocol_name: String::new(),
            members: Vec::new(),
        };
        match heartbeat_within(&mut self.prober, &generation, self.settings.session_timeout / 3).await {
            Ok(()) => self.answered(),
            Err(error) if error.is(ResponseError::RebalanceInProgress) => self.answered(),
            Err(error) if error.is(ResponseError::UnknownMemberId) => {
                self.answered();
                self.give_up(
                    "the coordinator no longer knows this member",
                    self.settings.rebalance_timeout,
                );
            }
            // ILLEGAL_GENERATION may only mean that the join has just completed; without an
            // answer the deadline decides.
            _ => {}
        }
    }

    /// The coordinator answered: this member is in touch.
    fn answered(&mut self) {
        self.last_contact = Instant::now();
        self.shared.view.lock().expect("group lock").cut_off = None;
    }

    /// `call` to the coordinator, giving everything up should the coordinator stay silent for
    /// two thirds of the session timeout meanwhile: by then the coordinator may have given the
    /// partitions to others.
    async fn contact<T>(&mut self, call: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
        self.contact_probing(call, None).await
    }

    /// As [`Member::contact`]; with `probe` (the member id), heartbeats on the prober's own
    /// connection every `heartbeat.interval.ms` while `call` waits, each answer counting as
    /// contact.
    async fn contact_probing<T>(
        &mut self,
        call: impl std::future::Future<Output = Result<T, Error>>,
        probe: Option<&str>,
    ) -> Result<T, Error> {
        tokio::pin!(call);
        let mut next_probe = Instant::now() + self.settings.heartbeat_interval;
        loop {
            let deadline = self.last_contact + self.cut_off();
            let probing = probe.filter(|_| self.holds_anything());
            tokio::select! {
                result = &mut call => {
                    // A Kafka error is an answer too.
                    if result.as_ref().map_or_else(|e| e.kafka_code().is_some(), |_| true) {
                        self.answered();
                    }
                    return result;
                }
                _ = tokio::time::sleep_until(next_probe), if probing.is_some() => {
                    self.probe(probing.unwrap_or_default()).await;
                    next_probe = Instant::now() + self.settings.heartbeat_interval;
                }
                _ = tokio::time::sleep_until(deadline), if self.holds_anything() => self.check_contact(),
            }
        }
    }

    /// Sleeps `delay`, still giving up on time.
    async fn pause(&mut self, delay: Duration) {
        let end = Instant::now() + delay;
        loop {
            let deadline = self.last_contact + self.cut_off();
            tokio::select! {
                _ = tokio::time::sleep_until(end) => return,
                _ = tokio::time::sleep_until(deadline), if self.holds_anything() => self.check_contact(),
            }
        }
    }

    fn cut_off(&self) -> Duration {
        self.settings.session_timeout * 2 / 3
    }

    /// Whether it gave its share up by itself while in a generation (its coordinator fell
    /// silent): that generation still assigns it what it no longer mirrors, so it joins again.
    fn gave_up(&self) -> bool {
        self.held_generation < 0
    }

    fn holds_anything(&self) -> bool {
        self.held.values().any(|f| f.singleton || !f.partitions.is_empty())
    }

    /// Gives everything up if the coordinator has been silent too long.
    fn check_contact(&mut self) {
        let silent = self.last_contact.elapsed();
        if silent >= self.cut_off() && self.holds_anything() {
            let left = self.settings.session_timeout.saturating_sub(silent);
            let why = format!(
                "the group coordinator has not answered for {silent:?} (session.timeout.ms is {:?})",
                self.settings.session_timeout
            );
            self.give_up(&why, left);
            self.shared.view.lock().expect("group lock").cut_off = Some(why);
        }
    }

    /// Stops every partition and singleton job: they may belong to others by now.
    fn give_up(&mut self, why: &str, within: Duration) {
        if self.holds_anything() {
            tracing::warn!(group = %self.shared.group_id, "{why}: releasing every partition, which may be assigned elsewhere");
        }
        self.held.clear();
        self.held_generation = -1;
        self.epoch += 1;
        self.shared.view.lock().expect("group lock").partitions = 0;
        self.shared.shares.send_replace(Arc::new(Share {
            epoch: self.epoch,
            flows: HashMap::new(),
            members: 0,
            release_within: within,
        }));
    }

    fn fenced(&mut self, error: &Error) {
        let why = format!(
            "another process runs with group.instance.id {:?}: {error}; give each process its own",
            self.settings.instance_id.as_deref().unwrap_or_default()
        );
        tracing::error!(group = %self.shared.group_id, "{why}");
        self.give_up(&why, self.settings.rebalance_timeout);
        self.shared.view.lock().expect("group lock").refused = Some(why);
    }

    /// What this member tells the leader: its configuration, and what it holds with each
    /// partition's measured rate.
    fn metadata(&self) -> MemberMetadata {
        let stats = self.shared.stats.lock().expect("group lock");
        let owned = self
            .held
            .iter()
            .map(|(flow, share)| {
                let rates: HashMap<(String, i32), u64> = stats
                    .get(flow)
                    .map(|s| s.partition_rates())
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                let mut topics: BTreeMap<&str, TopicUnits> = BTreeMap::new();
                for (topic, partition) in &share.partitions {
                    let units = topics.entry(topic).or_insert_with(|| TopicUnits {
                        topic: topic.clone(),
                        ..TopicUnits::default()
                    });
                    units.partitions.push(*partition);
                    units
                        .rates
                        .push(rates.get(&(topic.clone(), *partition)).copied().unwrap_or(0));
                }
                FlowUnits {
                    flow: flow.clone(),
                    singleton: share.singleton,
                    topics: topics.into_values().collect(),
                }
            })
            .collect();
        MemberMetadata {
            config: self.fingerprint.clone(),
            generation: self.held_generation,
            owned,
        }
    }

    /// Keeps the rates the members report, for units that have no owner in a later round (those
    /// just revoked), and forgets the partitions no flow has any more.
    fn remember_rates(&mut self, candidates: &[Candidate]) {
        for owned in candidates.iter().flat_map(|c| &c.metadata.owned) {
            for topic in &owned.topics {
                if topic.rates.len() == topic.partitions.len() {
                    for (partition, rate) in topic.partitions.iter().zip(&topic.rates) {
                        self.rates
                            .insert((owned.flow.clone(), topic.topic.clone(), *partition), *rate);
                    }
                }
            }
        }
        let universe = &self.universe;
        self.rates.retain(|(flow, topic, partition), _| {
            universe
                .iter()
                .any(|f| &f.flow == flow && f.topics.get(topic).is_some_and(|n| partition < n))
        });
    }

    /// The leader's part: every member's share, encoded for SyncGroup.
    async fn assign(&mut self, generation: &strait_client::Generation) -> Vec<(String, bytes::Bytes)> {
        let universe = self.universe().await;
        self.universe = universe;
        let candidates: Vec<Candidate> = generation
            .members
            .iter()
            .map(|m| Candidate {
                member_id: m.member_id.clone(),
                metadata: MemberMetadata::decode(&m.metadata).unwrap_or_else(|error| {
                    tracing::warn!(group = %self.shared.group_id, member = %m.member_id, %error, "a member's metadata is unreadable; it gets nothing");
                    MemberMetadata {
                        config: vec![("unreadable metadata".to_owned(), 0)],
                        generation: -1,
                        owned: Vec::new(),
                    }
                }),
            })
            .collect();
        self.remember_rates(&candidates);
        let mut assignments = assign(
            &generation.leader_id,
            &candidates,
            &self.universe,
            &self.rates,
            &self.assigned_to,
        );
        self.assigned_to = assignments
            .iter()
            .filter(|(_, a)| a.refused.is_none())
            .map(|(member, _)| member.clone())
            .collect();
        for assignment in assignments.values_mut() {
            assignment.generation = generation.generation_id;
        }
        let mut view = self.shared.view.lock().expect("group lock");
        view.members = generation
            .members
            .iter()
            .map(|m| {
                let assignment = assignments.get(&m.member_id).cloned().unwrap_or_default();
                let partitions = assignment.partition_count();
                let singletons = assignment
                    .units
                    .iter()
                    .filter(|f| f.singleton)
                    .map(|f| f.flow.clone())
                    .collect();
                (m.member_id.clone(), m.group_instance_id.clone(), partitions, singletons)
            })
            .collect();
        for (member, assignment) in &assignments {
            if let Some(why) = &assignment.refused {
                tracing::warn!(group = %self.shared.group_id, %member, "{why}");
            }
        }
        assignments
            .into_iter()
            .map(|(member, a)| (member, a.encode()))
            .collect()
    }

    /// Each flow's partitions, from its source cluster (what the flow would discover), and
    /// whether it must stay whole (exactly-once: one transactional producer per flow). A
    /// source that cannot be read keeps what was last seen of it.
    async fn universe(&mut self) -> Vec<FlowUniverse> {
        let refresh = self.flows.iter().filter_map(|f| f.refresh_topics.interval()).min();
        self.next_universe_check = refresh.map(|every| Instant::now() + every);
        let mut universe = Vec::new();
        for flow in self.flows.clone() {
            let name = flow.name();
            let mut topics = BTreeMap::new();
            if flow.enabled {
                match self.source_topics(&flow).await {
                    Ok(found) => topics = found,
                    Err(error) => {
                        tracing::warn!(group = %self.shared.group_id, flow = %name, %error, "cannot read the source's topics; assigning what was last seen");
                        topics = self
                            .universe
                            .iter()
                            .find(|u| u.flow == name)
                            .map(|u| u.topics.clone())
                            .unwrap_or_default();
                        // Soon again: a new look may find more.
                        self.next_universe_check = Some(Instant::now() + Duration::from_secs(5));
                    }
                }
            }
            universe.push(FlowUniverse {
                flow: name,
                whole: flow.exactly_once,
                topics,
            });
        }
        universe
    }

    async fn source_topics(&mut self, flow: &FlowConfig) -> Result<BTreeMap<String, i32>, MirrorError> {
        let client = match self.sources.get(&flow.source.alias) {
            Some(client) => client.clone(),
            None => {
                let client = connect(&flow.source, ClientRole::Consumer).await?;
                self.sources.insert(flow.source.alias.clone(), client.clone());
                client
            }
        };
        let metadata = client
            .metadata(None)
            .await
            .map_err(MirrorError::client_at(&flow.source.alias))?;
        Ok(replicated_topics(flow, &metadata)
            .map(|(topic, t)| (topic.clone(), t.partitions.len() as i32))
            .collect())
    }

    /// Hands the assignment to the flows; whether it revoked anything held.
    fn publish(&mut self, generation: &strait_client::Generation, assignment: MemberAssignment) -> bool {
        let mut flows: BTreeMap<String, FlowShare> = BTreeMap::new();
        for units in &assignment.units {
            let share = flows.entry(units.flow.clone()).or_default();
            share.singleton |= units.singleton;
            for topic in &units.topics {
                share
                    .partitions
                    .extend(topic.partitions.iter().map(|p| (topic.topic.clone(), *p)));
            }
        }
        // Revoked units are handed out in the next round, once this member joins again.
        let revoked = self.claimed.iter().any(|(flow, held)| {
            let now = flows.get(flow);
            (held.singleton && !now.is_some_and(|n| n.singleton))
                || held
                    .partitions
                    .iter()
                    .any(|p| !now.is_some_and(|n| n.partitions.contains(p)))
        });
        {
            let mut view = self.shared.view.lock().expect("group lock");
            view.member_id = generation.member_id.clone();
            view.generation = generation.generation_id;
            view.leader_id = generation.leader_id.clone();
            view.rebalances += 1;
            view.partitions = flows.values().map(|f| f.partitions.len()).sum();
            if !generation.is_leader() {
                view.members.clear();
            }
            match &assignment.refused {
                Some(why) => {
                    if view.refused.as_ref() != Some(why) {
                        tracing::error!(group = %self.shared.group_id, "this member gets no work: {why}");
                    }
                    view.refused = Some(why.clone());
                }
                None => view.refused = None,
            }
        }
        let held_partitions: usize = flows.values().map(|f| f.partitions.len()).sum();
        let singletons: BTreeSet<&String> = flows.iter().filter(|(_, f)| f.singleton).map(|(n, _)| n).collect();
        tracing::info!(
            group = %self.shared.group_id,
            generation = generation.generation_id,
            leader = generation.is_leader(),
            partitions = held_partitions,
            ?singletons,
            revoked,
            "assigned"
        );
        self.held = flows.clone();
        self.held_generation = generation.generation_id;
        self.epoch += 1;
        self.shared.shares.send_replace(Arc::new(Share {
            epoch: self.epoch,
            flows: flows.into_iter().collect(),
            members: assignment.members as usize,
            release_within: self.settings.rebalance_timeout,
        }));
        revoked
    }
}

/// A Heartbeat on `membership`'s connection, answered within `within` or a timeout error.
async fn heartbeat_within(
    membership: &mut GroupMembership,
    generation: &strait_client::Generation,
    within: Duration,
) -> Result<(), Error> {
    tokio::time::timeout(within, membership.heartbeat(generation))
        .await
        .unwrap_or_else(|_| {
            Err(Error::Timeout {
                what: "a Heartbeat answer".to_owned(),
                after_ms: within.as_millis() as u64,
            })
        })
}

fn same_universe(a: &[FlowUniverse], b: &[FlowUniverse]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.flow == b.flow && a.whole == b.whole && a.topics == b.topics)
}

/// The coordinator no longer counts this member in (its session expired, or a rebalance
/// went on without it): what it held may be someone else's now.
fn is_forgotten(error: &Error) -> bool {
    error.is(ResponseError::UnknownMemberId) || error.is(ResponseError::IllegalGeneration)
}

/// Every flow setting as `<flow>.<key>` with a hash of its value (FNV-1a: stable across
/// builds and processes), and the flows themselves.
fn fingerprint(flows: &[FlowConfig]) -> Vec<(String, u32)> {
    let mut names: Vec<String> = flows.iter().map(|f| f.name()).collect();
    names.sort();
    let mut entries = vec![("flows".to_owned(), fnv1a(names.join(",").as_bytes()))];
    for flow in flows {
        for (key, setting) in flow.settings() {
            entries.push((format!("{}.{key}", flow.name()), fnv1a(setting.value.as_bytes())));
        }
    }
    entries.sort();
    entries
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flows(text: &str) -> Vec<FlowConfig> {
        strait_config::Mm2Config::parse(text)
            .unwrap()
            .enabled_flows()
            .cloned()
            .collect()
    }

    #[test]
    fn the_fingerprint_names_each_flow_setting_and_changes_with_its_value() {
        let base = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n";
        let one = fingerprint(&flows(&format!("{base}A->B.topics = orders.*\n")));
        let other = fingerprint(&flows(&format!("{base}A->B.topics = payments.*\n")));
        let changed: Vec<&String> = one
            .iter()
            .zip(&other)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| &a.0)
            .collect();
        assert_eq!(changed, vec!["A->B.topics"]);
        assert_eq!(one, fingerprint(&flows(&format!("{base}A->B.topics = orders.*\n"))));
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
    }
}
