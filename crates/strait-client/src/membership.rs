//! A member's side of Kafka's classic group protocol, for any protocol type: JoinGroup,
//! SyncGroup, Heartbeat and LeaveGroup (KIP-62 session and rebalance timeouts, KIP-394 member
//! ids, KIP-345 static membership), on a connection of its own to the group's coordinator.
//!
//! A connection of its own, as Kafka's clients keep one: a broker handles a connection's
//! requests one at a time, and the coordinator holds a JoinGroup until the rebalance completes,
//! which would stall every other request sharing the connection.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest};
use kafka_protocol::protocol::{Request, StrBytes};

use crate::client::retrying;
use crate::{BrokerConnection, Error, KafkaClient, Result};

/// Kafka's margin over the rebalance timeout when waiting for a JoinGroup answer
/// (`AbstractCoordinator`'s `joinGroupTimeoutMs`).
const JOIN_MARGIN: Duration = Duration::from_secs(5);

/// Answers that send a member to find its coordinator again (all retriable).
const COORDINATOR_MOVED: [ResponseError; 3] = [
    ResponseError::NotCoordinator,
    ResponseError::CoordinatorNotAvailable,
    ResponseError::CoordinatorLoadInProgress,
];

/// Who a member is and how long the coordinator waits for it.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// The group id.
    pub group_id: String,
    /// The protocol type all members share (`consumer` for Kafka's consumers).
    pub protocol_type: String,
    /// `group.instance.id`: a static member (KIP-345) keeps its place across restarts within
    /// the session timeout, without a rebalance.
    pub group_instance_id: Option<String>,
    /// `session.timeout.ms`: without a heartbeat for this long, the member is removed.
    pub session_timeout: Duration,
    /// `rebalance.timeout.ms`: how long the coordinator waits for members to rejoin.
    pub rebalance_timeout: Duration,
}

/// A generation of the group, as JoinGroup answered it.
#[derive(Debug, Clone)]
pub struct Generation {
    /// The generation id.
    pub generation_id: i32,
    /// This member's id.
    pub member_id: String,
    /// The leader's member id.
    pub leader_id: String,
    /// The protocol the coordinator chose among the members' (for the leader's assignment).
    pub protocol_name: String,
    /// Every member with its metadata for the chosen protocol; only the leader gets them.
    pub members: Vec<JoinedMember>,
}

impl Generation {
    /// Whether this member leads the generation: it assigns, in its SyncGroup.
    pub fn is_leader(&self) -> bool {
        self.member_id == self.leader_id
    }
}

/// A member as the leader sees it in JoinGroup's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Its member id.
    pub member_id: String,
    /// Its `group.instance.id`, if static.
    pub group_instance_id: Option<String>,
    /// Its metadata for the chosen protocol.
    pub metadata: Bytes,
}

/// One member's conversation with its group's coordinator.
#[derive(Debug)]
pub struct GroupMembership {
    client: KafkaClient,
    config: MemberConfig,
    /// The member's own connection to the coordinator, once found.
    connection: std::sync::Mutex<Option<BrokerConnection>>,
}

impl GroupMembership {
    /// A member of `config.group_id` in the cluster of `client`; it connects on first use.
    pub fn new(client: KafkaClient, config: MemberConfig) -> GroupMembership {
        GroupMembership {
            client,
            config,
            connection: std::sync::Mutex::new(None),
        }
    }

    /// The member's settings.
    pub fn config(&self) -> &MemberConfig {
        &self.config
    }

    /// Joins the group (with `member_id`, empty the first time) offering `protocols` (name and
    /// metadata, in order of preference), and waits for the generation. A first join that the
    /// coordinator answers MEMBER_ID_REQUIRED (KIP-394) is sent again with the id it gave. A
    /// coordinator that moved or is loading is found again and asked again.
    ///
    /// # Errors
    ///
    /// Kafka's answer by name (`UNKNOWN_MEMBER_ID`: join again with an empty id;
    /// `FENCED_INSTANCE_ID`: another process runs with this `group.instance.id`;
    /// `INCONSISTENT_GROUP_PROTOCOL`: the group's members speak another protocol type), or
    /// what the connection met.
    pub async fn join(&mut self, member_id: &str, protocols: &[(String, Bytes)]) -> Result<Generation> {
        let mut member_id = member_id.to_owned();
        let timeout = self.config.rebalance_timeout + JOIN_MARGIN;
        loop {
            let request = JoinGroupRequest::default()
                .with_group_id(self.group_id())
                .with_session_timeout_ms(millis(self.config.session_timeout))
                .with_rebalance_timeout_ms(millis(self.config.rebalance_timeout))
                .with_member_id(StrBytes::from_string(member_id.clone()))
                .with_group_instance_id(self.config.group_instance_id.clone().map(StrBytes::from_string))
                .with_protocol_type(StrBytes::from_string(self.config.protocol_type.clone()))
                .with_protocols(
                    protocols
                        .iter()
                        .map(|(name, metadata)| {
                            JoinGroupRequestProtocol::default()
                                .with_name(StrBytes::from_string(name.clone()))
                                .with_metadata(metadata.clone())
                        })
                        .collect(),
                );
            let response = self.coordinated(&request, timeout, |r| r.error_code).await?;
            if response.error_code == ResponseError::MemberIdRequired.code() {
                member_id = response.member_id.to_string();
                continue;
            }
            let group = &self.config.group_id;
            Error::check(response.error_code, || format!("JoinGroup {group}"), None)?;
            return Ok(Generation {
                generation_id: response.generation_id,
                member_id: response.member_id.to_string(),
                leader_id: response.leader.to_string(),
                protocol_name: response.protocol_name.map(|p| p.to_string()).unwrap_or_default(),
                members: response
                    .members
                    .into_iter()
                    .map(|m| JoinedMember {
                        member_id: m.member_id.to_string(),
                        group_instance_id: m.group_instance_id.map(|i| i.to_string()),
                        metadata: m.metadata,
                    })
                    .collect(),
            });
        }
    }

    /// Ends the join: the leader hands in `assignments` (member id and its assignment; the
    /// others hand in none) and every member gets its own.
    ///
    /// # Errors
    ///
    /// `REBALANCE_IN_PROGRESS` (join again), `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`, or what
    /// the connection met.
    pub async fn sync(&mut self, generation: &Generation, assignments: Vec<(String, Bytes)>) -> Result<Bytes> {
        let request = SyncGroupRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id(generation.generation_id)
            .with_member_id(StrBytes::from_string(generation.member_id.clone()))
            .with_group_instance_id(self.config.group_instance_id.clone().map(StrBytes::from_string))
            .with_protocol_type(Some(StrBytes::from_string(self.config.protocol_type.clone())))
            .with_protocol_name(Some(StrBytes::from_string(generation.protocol_name.clone())))
            .with_assignments(
                assignments
                    .into_iter()
                    .map(|(member_id, assignment)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(StrBytes::from_string(member_id))
                            .with_assignment(assignment)
                    })
                    .collect(),
            );
        // The coordinator answers once the leader has synced, which may take a rebalance.
        let timeout = self.config.rebalance_timeout + JOIN_MARGIN;
        let response = self.coordinated(&request, timeout, |r| r.error_code).await?;
        let group = &self.config.group_id;
        Error::check(response.error_code, || format!("SyncGroup {group}"), None)?;
        Ok(response.assignment)
    }

    /// Tells the coordinator the member is alive (every `heartbeat.interval.ms`).
    ///
    /// # Errors
    ///
    /// `REBALANCE_IN_PROGRESS`: the member must join again (keeping its member id) within the
    /// rebalance timeout; `UNKNOWN_MEMBER_ID` or `ILLEGAL_GENERATION`: it is out of the group,
    /// and must join again from scratch; `FENCED_INSTANCE_ID`; or what the connection met.
    pub async fn heartbeat(&mut self, generation: &Generation) -> Result<()> {
        let request = HeartbeatRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id(generation.generation_id)
            .with_member_id(StrBytes::from_string(generation.member_id.clone()))
            .with_group_instance_id(self.config.group_instance_id.clone().map(StrBytes::from_string));
        let timeout = self.client.config().connection.request_timeout;
        let response = self.coordinated(&request, timeout, |r| r.error_code).await?;
        let group = &self.config.group_id;
        Error::check(response.error_code, || format!("Heartbeat {group}"), None)
    }

    /// Leaves the group, so that the others rebalance now rather than after the session
    /// timeout. A static member leaves only when told to: Kafka's consumers keep a static
    /// member's place on a plain restart.
    pub async fn leave(&mut self, member_id: &str) -> Result<()> {
        let request = LeaveGroupRequest::default()
            .with_group_id(self.group_id())
            .with_members(vec![MemberIdentity::default()
                .with_member_id(StrBytes::from_string(member_id.to_owned()))
                .with_group_instance_id(
                    self.config.group_instance_id.clone().map(StrBytes::from_string),
                )]);
        let timeout = self.client.config().connection.request_timeout;
        let response = self.coordinated(&request, timeout, |r| r.error_code).await?;
        let group = &self.config.group_id;
        Error::check(response.error_code, || format!("LeaveGroup {group}"), None)?;
        for member in &response.members {
            let context = || format!("LeaveGroup {group} member {}", member.member_id.as_str());
            Error::check(member.error_code, context, None)?;
        }
        Ok(())
    }

    fn group_id(&self) -> GroupId {
        GroupId(StrBytes::from_string(self.config.group_id.clone()))
    }

    /// Sends `request` to the coordinator on the member's own connection (found with
    /// FindCoordinator and opened when there is none or it failed) and waits at most `timeout`
    /// for the answer. A coordinator that moved, is unavailable or is loading (the answer's
    /// `error_code`), and a lost connection, are tried again within the request timeout.
    async fn coordinated<R: Request>(
        &self,
        request: &R,
        timeout: Duration,
        error_code: impl Fn(&R::Response) -> i16,
    ) -> Result<R::Response> {
        let (client, group, slot) = (&self.client, &self.config.group_id, &self.connection);
        retrying(client.config().connection.request_timeout, || async {
            let cached = slot.lock().expect("connection lock").clone().filter(|c| !c.is_closed());
            let connection = match cached {
                Some(connection) => connection,
                None => {
                    let node = client.coordinator_node(0, group).await?;
                    let connection = client.connect_to(node, client.config().connection.clone()).await?;
                    *slot.lock().expect("connection lock") = Some(connection.clone());
                    connection
                }
            };
            let response = connection.send_within(request, timeout).await?;
            let code = error_code(&response);
            if COORDINATOR_MOVED.iter().any(|moved| moved.code() == code) {
                // Found again next time; the error is retriable, so `retrying` asks again.
                *slot.lock().expect("connection lock") = None;
                Error::check(code, || format!("the coordinator of group {group}"), None)?;
            }
            Ok(response)
        })
        .await
    }
}

fn millis(duration: Duration) -> i32 {
    i32::try_from(duration.as_millis()).unwrap_or(i32::MAX)
}
