//! The effective settings of one replication flow `source->target`.

use std::fmt;
use std::time::Duration;

use crate::client::{AutoOffsetReset, ClusterClientConfig, IsolationLevel, Setting};
use crate::data_path::{FetchSettings, ProduceSettings};
use crate::filter::{ConfigPropertyFilter, GroupFilter, TopicFilter};
use crate::policy::ReplicationPolicy;

/// A periodic job: MM2's `<job>.enabled` plus `<job>.interval.seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// `<job>.enabled`.
    pub enabled: bool,
    /// `<job>.interval.seconds` as configured (MM2 reads a Java long).
    pub interval_seconds: i64,
}

impl Schedule {
    /// The period, or `None` when the job never runs: disabled, or a non-positive interval
    /// (MM2 skips negative intervals and cannot schedule a zero one).
    pub fn interval(&self) -> Option<Duration> {
        let seconds = u64::try_from(self.interval_seconds).ok().filter(|&s| s > 0)?;
        self.enabled.then(|| Duration::from_secs(seconds))
    }
}

/// `offset-syncs.topic.location`: which cluster holds the offset-syncs topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OffsetSyncsTopicLocation {
    /// On the source cluster, named after the target (MM2 default).
    #[default]
    Source,
    /// On the target cluster, named after the source.
    Target,
}

/// Why a flow does not replicate a source topic (see [`FlowConfig::skip_reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A Kafka, Connect or MM2 internal topic (`__*`, `.*`, `*.internal`, `*-internal`, …).
    Internal,
    /// The topic came from the flow's target cluster: copying it back would form a cycle.
    Cycle,
    /// Rejected by `topics`/`topics.exclude` (and not a heartbeats topic replicated anyway).
    Excluded,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Internal => "internal topic",
            SkipReason::Cycle => "came from the target cluster (cycle)",
            SkipReason::Excluded => "excluded by topics/topics.exclude",
        })
    }
}

/// One flow `source->target`: every connector setting typed, with MM2's defaults.
///
/// A `FlowConfig` exists for every pair that MM2 would run a herder for: the flow is enabled
/// (`enabled`) or it emits heartbeats (`emit_heartbeats.enabled`). A disabled flow only writes
/// heartbeats into its target.
#[derive(Debug, Clone)]
pub struct FlowConfig {
    /// Source cluster client settings (including `<source>-><target>.source.*` overrides).
    pub source: ClusterClientConfig,
    /// Target cluster client settings (including `<source>-><target>.target.*` overrides).
    pub target: ClusterClientConfig,
    /// `enabled`: replicate topics and checkpoint groups (`<src>-><tgt>.enabled`, default false).
    pub enabled: bool,
    /// `replication.policy.*`, with `source.cluster.alias` set to the source.
    pub policy: ReplicationPolicy,
    /// `topics`, `topics.exclude` (or deprecated `topics.blacklist`).
    pub topic_filter: TopicFilter,
    /// `groups`, `groups.exclude` (or deprecated `groups.blacklist`).
    pub group_filter: GroupFilter,
    /// `config.properties.exclude` (or deprecated `config.properties.blacklist`),
    /// `use.defaults.from`.
    pub config_property_filter: ConfigPropertyFilter,
    /// `refresh.topics.*` (default on, 600 s): discover new topics and partitions.
    pub refresh_topics: Schedule,
    /// `sync.topic.configs.*` (default on, 600 s).
    pub sync_topic_configs: Schedule,
    /// `sync.topic.acls.*` (default on, 600 s).
    pub sync_topic_acls: Schedule,
    /// `refresh.groups.*` (default on, 600 s).
    pub refresh_groups: Schedule,
    /// `emit.checkpoints.*` (default on, 60 s).
    pub emit_checkpoints: Schedule,
    /// `sync.group.offsets.*` (default off, 60 s): write translated offsets into target groups.
    pub sync_group_offsets: Schedule,
    /// `emit.heartbeats.*` (default on, 1 s): write heartbeats into the target, even when the
    /// flow is disabled.
    pub emit_heartbeats: Schedule,
    /// `replication.factor` of created remote topics (default 2; -1 means broker default).
    pub replication_factor: i32,
    /// `offset-syncs.topic.replication.factor` (default 3).
    pub offset_syncs_topic_replication_factor: i16,
    /// `checkpoints.topic.replication.factor` (default 3).
    pub checkpoints_topic_replication_factor: i16,
    /// `heartbeats.topic.replication.factor` (default 3).
    pub heartbeats_topic_replication_factor: i16,
    /// `offset-syncs.topic.location` (default source).
    pub offset_syncs_topic_location: OffsetSyncsTopicLocation,
    /// `offset.lag.max` (default 100).
    pub offset_lag_max: i64,
    /// `emit.offset-syncs.enabled` (default true).
    pub emit_offset_syncs_enabled: bool,
    /// `heartbeats.replication.enabled` (default true): replicate heartbeats topics even when
    /// the topic filter rejects them.
    pub heartbeats_replication_enabled: bool,
    /// `admin.timeout.ms` (default 60000).
    pub admin_timeout_ms: i64,
    /// `consumer.poll.timeout.ms` (default 1000).
    pub consumer_poll_timeout_ms: i64,
    /// Exactly-once mode (KIP-618): `<target>.exactly.once.source.support = enabled` (or
    /// top-level). Data and positions are written in transactions into the target.
    pub exactly_once: bool,
    /// In exactly-once mode, how often a transaction commits: `transaction.boundary.interval.ms`
    /// (default 1000) for `transaction.boundary = poll` (MM2's default, which has no meaning
    /// without a poll loop) or `interval`.
    pub transaction_interval: Duration,
    /// The replication consumer's `isolation.level` (default read_uncommitted).
    pub source_isolation_level: IsolationLevel,
    /// The replication consumer's `auto.offset.reset` (default earliest).
    pub source_auto_offset_reset: AutoOffsetReset,
    /// How the mirror fetches from the source: `fetch.*`, `max.partition.fetch.bytes` and
    /// `client.rack` of the source's consumer view.
    pub source_fetch: FetchSettings,
    /// How the mirror produces to the target: `acks`, `max.request.size`, the timeouts and
    /// `max.in.flight.requests.per.connection` of the target's producer view.
    pub target_produce: ProduceSettings,
    pub(crate) settings: Vec<(&'static str, Setting)>,
    /// `source_fetch` and `target_produce` as `check-config` shows them, by Kafka key.
    pub(crate) source_fetch_settings: Vec<(&'static str, Setting)>,
    pub(crate) target_produce_settings: Vec<(&'static str, Setting)>,
}

impl FlowConfig {
    /// `source->target`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.source.alias, self.target.alias)
    }

    /// Every MM2 connector setting of the flow, effective value and origin, in a fixed order.
    pub fn settings(&self) -> &[(&'static str, Setting)] {
        &self.settings
    }

    /// Whether the source connector copies source topic `topic` (MM2's
    /// `MirrorSourceConnector.shouldReplicateTopic`): (topic filter **or** replicated heartbeats)
    /// **and not** internal **and not** a cycle.
    pub fn should_replicate_topic(&self, topic: &str) -> bool {
        self.skip_reason(topic).is_none()
    }

    /// Why `topic` is not replicated, `None` if it is. The reason reported first is the one a
    /// filter change cannot fix: internal, then cycle, then the topic filter.
    pub fn skip_reason(&self, topic: &str) -> Option<SkipReason> {
        if self.policy.is_internal_topic(topic) {
            Some(SkipReason::Internal)
        } else if self.is_cycle(topic) {
            Some(SkipReason::Cycle)
        } else if !(self.topic_filter.should_replicate_topic(topic)
            || (self.heartbeats_replication_enabled && self.policy.is_heartbeats_topic(topic)))
        {
            Some(SkipReason::Excluded)
        } else {
            None
        }
    }

    /// True when the name chain of `topic` passes through the target cluster.
    fn is_cycle(&self, topic: &str) -> bool {
        let mut current = topic;
        loop {
            match self.policy.topic_source(current) {
                None => return false,
                Some(source) if source == self.target.alias => return true,
                Some(_) => match self.policy.upstream_topic(current) {
                    Some(upstream) if upstream != current => current = upstream,
                    _ => return false,
                },
            }
        }
    }

    /// The name of source topic `topic` on the target.
    pub fn remote_topic(&self, topic: &str) -> String {
        self.policy.format_remote_topic(&self.source.alias, topic)
    }

    /// The offset-syncs topic: on the source named after the target, or on the target named
    /// after the source, per [`FlowConfig::offset_syncs_topic_location`].
    pub fn offset_syncs_topic(&self) -> String {
        match self.offset_syncs_topic_location {
            OffsetSyncsTopicLocation::Source => self.policy.offset_syncs_topic(&self.target.alias),
            OffsetSyncsTopicLocation::Target => self.policy.offset_syncs_topic(&self.source.alias),
        }
    }

    /// The checkpoints topic on the target, named after the source.
    pub fn checkpoints_topic(&self) -> String {
        self.policy.checkpoints_topic(&self.source.alias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_interval() {
        let on = Schedule {
            enabled: true,
            interval_seconds: 60,
        };
        assert_eq!(on.interval(), Some(Duration::from_secs(60)));
        assert_eq!(Schedule { enabled: false, ..on }.interval(), None);
        assert_eq!(
            Schedule {
                interval_seconds: -1,
                ..on
            }
            .interval(),
            None
        );
        assert_eq!(
            Schedule {
                interval_seconds: 0,
                ..on
            }
            .interval(),
            None
        );
    }

    #[test]
    fn skip_reason_display() {
        assert_eq!(SkipReason::Internal.to_string(), "internal topic");
        assert_eq!(SkipReason::Cycle.to_string(), "came from the target cluster (cycle)");
        assert_eq!(SkipReason::Excluded.to_string(), "excluded by topics/topics.exclude");
    }
}
