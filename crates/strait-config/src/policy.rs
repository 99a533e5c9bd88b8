//! Remote topic naming: MM2's `DefaultReplicationPolicy` and `IdentityReplicationPolicy`.
//!
//! # Default policy (`sep` defaults to `.`)
//!
//! ```text
//! format_remote_topic("A", "t")  = "A.t"        (multi-hop names stack: "B.A.t")
//! topic_source("B.A.t")          = Some("B")    (Java String.split on the literal separator)
//! upstream_topic("B.A.t")        = Some("A.t")
//! original_topic("B.A.t")        = "t"
//! offset_syncs_topic("B")        = "mm2-offset-syncs.B.internal"
//! checkpoints_topic("A")         = "A.checkpoints.internal"
//! heartbeats_topic()             = "heartbeats" (never renamed)
//! ```
//!
//! `topic_source` reproduces Java `split` quirks: trailing empty pieces are dropped and a leading
//! empty piece is kept, so `a.` is not remote, `.a` has source `""`, `a..b` has source `a` and
//! upstream `.b`, and `.` alone is not remote.
//!
//! The internal topics (offset syncs, checkpoints) use the separator too unless
//! `replication.policy.internal.topic.separator.enabled = false`, which forces `.` (KIP-949).
//!
//! # Identity policy
//!
//! Topics keep their names, except "heartbeat-looking" ones (name ends with `heartbeats`, a
//! plain suffix test, so `myheartbeats` qualifies), which behave as in the default policy. For
//! other topics `topic_source` is the configured source alias and `upstream_topic` the topic
//! itself.
//!
//! # References
//!
//! `connect/mirror-client/.../DefaultReplicationPolicy.java`, `IdentityReplicationPolicy.java` and
//! `ReplicationPolicy.java` in apache/kafka.

const HEARTBEATS_TOPIC: &str = "heartbeats";

/// Which policy class `replication.policy.class` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PolicyKind {
    /// `org.apache.kafka.connect.mirror.DefaultReplicationPolicy`: remote topics are prefixed.
    #[default]
    Default,
    /// `org.apache.kafka.connect.mirror.IdentityReplicationPolicy`: topic names are kept.
    Identity,
}

impl PolicyKind {
    /// The Java class name MM2 uses for this policy.
    pub fn class_name(self) -> &'static str {
        match self {
            PolicyKind::Default => crate::keys::DEFAULT_POLICY_CLASS,
            PolicyKind::Identity => crate::keys::IDENTITY_POLICY_CLASS,
        }
    }
}

/// A configured replication policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationPolicy {
    kind: PolicyKind,
    separator: String,
    internal_separator_enabled: bool,
    source_cluster_alias: Option<String>,
}

impl Default for ReplicationPolicy {
    /// The default policy with separator `.`.
    fn default() -> Self {
        ReplicationPolicy::new(PolicyKind::Default, ".")
    }
}

impl ReplicationPolicy {
    /// A policy of `kind` with `separator`, internal topics following the separator, and no
    /// source alias.
    ///
    /// # Panics
    ///
    /// If `separator` is empty (MM2 would split names between every character).
    pub fn new(kind: PolicyKind, separator: impl Into<String>) -> Self {
        let separator = separator.into();
        assert!(!separator.is_empty(), "replication policy separator must not be empty");
        ReplicationPolicy {
            kind,
            separator,
            internal_separator_enabled: true,
            source_cluster_alias: None,
        }
    }

    /// Sets `replication.policy.internal.topic.separator.enabled`: `false` names the offset-syncs
    /// and checkpoints topics with `.` whatever the separator.
    pub fn with_internal_topic_separator(mut self, enabled: bool) -> Self {
        self.internal_separator_enabled = enabled;
        self
    }

    /// Sets `source.cluster.alias`, which the identity policy reports as the source of every
    /// non-heartbeat topic (MM2 sets it to the flow's source for its connectors).
    pub fn with_source_cluster_alias(mut self, alias: impl Into<String>) -> Self {
        self.source_cluster_alias = Some(alias.into());
        self
    }

    /// The policy class.
    pub fn kind(&self) -> PolicyKind {
        self.kind
    }

    /// `replication.policy.separator`.
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// `replication.policy.internal.topic.separator.enabled`.
    pub fn internal_topic_separator_enabled(&self) -> bool {
        self.internal_separator_enabled
    }

    /// The configured `source.cluster.alias`.
    pub fn source_cluster_alias(&self) -> Option<&str> {
        self.source_cluster_alias.as_deref()
    }

    fn identity_keeps(&self, topic: &str) -> bool {
        self.kind == PolicyKind::Identity && !topic.ends_with(HEARTBEATS_TOPIC)
    }

    /// The name of `topic` from cluster `source_alias` on the target: `source_alias + sep + topic`
    /// (identity: `topic` unchanged unless it looks like a heartbeats topic).
    pub fn format_remote_topic(&self, source_alias: &str, topic: &str) -> String {
        if self.identity_keeps(topic) {
            topic.to_owned()
        } else {
            format!("{source_alias}{}{topic}", self.separator)
        }
    }

    /// The alias of the cluster `topic` was replicated from, `None` if it is not a remote topic.
    pub fn topic_source<'a>(&'a self, topic: &'a str) -> Option<&'a str> {
        if self.identity_keeps(topic) {
            return self.source_cluster_alias.as_deref();
        }
        // Java `Pattern.split(topic)`: the pieces between separators, minus trailing empty ones.
        let mut pieces: Vec<&str> = topic.split(self.separator.as_str()).collect();
        while pieces.last() == Some(&"") {
            let _ = pieces.pop();
        }
        (pieces.len() >= 2).then(|| pieces[0])
    }

    /// `topic` one hop upstream: without its leading `source + sep`, `None` if it is not remote
    /// (identity: `topic` itself unless it looks like a heartbeats topic).
    pub fn upstream_topic<'a>(&self, topic: &'a str) -> Option<&'a str> {
        if self.identity_keeps(topic) {
            return Some(topic);
        }
        let source = self.topic_source(topic)?;
        Some(&topic[source.len() + self.separator.len()..])
    }

    /// The name of `topic` on the cluster where it was first produced.
    pub fn original_topic<'a>(&self, topic: &'a str) -> &'a str {
        let mut current = topic;
        while let Some(upstream) = self.upstream_topic(current) {
            if upstream == current {
                break;
            }
            current = upstream;
        }
        current
    }

    /// `heartbeats`, whatever the separator.
    pub fn heartbeats_topic(&self) -> &'static str {
        HEARTBEATS_TOPIC
    }

    fn internal_separator(&self) -> &str {
        if self.internal_separator_enabled {
            &self.separator
        } else {
            "."
        }
    }

    /// `mm2-offset-syncs{isep}{alias}{isep}internal`.
    pub fn offset_syncs_topic(&self, cluster_alias: &str) -> String {
        let isep = self.internal_separator();
        format!("mm2-offset-syncs{isep}{cluster_alias}{isep}internal")
    }

    /// `{alias}{isep}checkpoints{isep}internal`.
    pub fn checkpoints_topic(&self, cluster_alias: &str) -> String {
        let isep = self.internal_separator();
        format!("{cluster_alias}{isep}checkpoints{isep}internal")
    }

    /// True when the original name of `topic` is `heartbeats` (`heartbeats`, `A.heartbeats`,
    /// `B.A.heartbeats`; not `A-heartbeats`).
    pub fn is_heartbeats_topic(&self, topic: &str) -> bool {
        self.original_topic(topic) == HEARTBEATS_TOPIC
    }

    /// True when `topic` ends with `{isep}checkpoints{isep}internal`.
    pub fn is_checkpoints_topic(&self, topic: &str) -> bool {
        let isep = self.internal_separator();
        topic.ends_with(&format!("{isep}checkpoints{isep}internal"))
    }

    /// True when `topic` ends with `{isep}internal`.
    pub fn is_mm2_internal_topic(&self, topic: &str) -> bool {
        topic.ends_with(&format!("{}internal", self.internal_separator()))
    }

    /// True for MM2-internal topics and for names starting with `__` or `.` or ending with
    /// `-internal` or `.internal` (Kafka and Connect internal topics). Never replicated.
    pub fn is_internal_topic(&self, topic: &str) -> bool {
        self.is_mm2_internal_topic(topic)
            || topic.starts_with("__")
            || topic.starts_with('.')
            || topic.ends_with("-internal")
            || topic.ends_with(".internal")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_policy() -> ReplicationPolicy {
        ReplicationPolicy::default()
    }

    #[test]
    fn remote_topic_names() {
        let p = default_policy();
        assert_eq!(p.format_remote_topic("A", "t"), "A.t");
        assert_eq!(p.format_remote_topic("B", "A.t"), "B.A.t");
        assert_eq!(p.topic_source("B.A.t"), Some("B"));
        assert_eq!(p.upstream_topic("B.A.t"), Some("A.t"));
        assert_eq!(p.original_topic("B.A.t"), "t");
        assert_eq!(p.topic_source("t"), None);
        assert_eq!(p.upstream_topic("t"), None);
        assert_eq!(p.original_topic("t"), "t");
    }

    #[test]
    fn java_split_quirks() {
        let p = default_policy();
        // Trailing empty pieces are dropped.
        assert_eq!(p.topic_source("a."), None);
        assert_eq!(p.topic_source("a.."), None);
        assert_eq!(p.topic_source("a.b."), Some("a"));
        assert_eq!(p.upstream_topic("a.b."), Some("b."));
        // A leading empty piece is kept.
        assert_eq!(p.topic_source(".a"), Some(""));
        assert_eq!(p.upstream_topic(".a"), Some("a"));
        // Empty pieces in the middle are kept.
        assert_eq!(p.topic_source("a..b"), Some("a"));
        assert_eq!(p.upstream_topic("a..b"), Some(".b"));
        // Only separators: no pieces at all.
        assert_eq!(p.topic_source("."), None);
        assert_eq!(p.topic_source(""), None);
    }

    #[test]
    fn multi_character_separator_is_literal() {
        let p = ReplicationPolicy::new(PolicyKind::Default, "__");
        assert_eq!(p.format_remote_topic("A", "t"), "A__t");
        assert_eq!(p.topic_source("A__t"), Some("A"));
        assert_eq!(p.topic_source("A.t"), None);
        assert_eq!(p.topic_source("a___b"), Some("a"));
        assert_eq!(p.upstream_topic("a___b"), Some("_b"));
        let regexy = ReplicationPolicy::new(PolicyKind::Default, "|");
        assert_eq!(regexy.topic_source("A|t"), Some("A"));
    }

    #[test]
    fn internal_topic_names_follow_separator_unless_disabled() {
        let p = ReplicationPolicy::new(PolicyKind::Default, "__");
        assert_eq!(p.offset_syncs_topic("CLUSTER"), "mm2-offset-syncs__CLUSTER__internal");
        assert_eq!(p.checkpoints_topic("CLUSTER"), "CLUSTER__checkpoints__internal");
        assert_eq!(p.heartbeats_topic(), "heartbeats");
        assert!(p.is_checkpoints_topic("A__checkpoints__internal"));
        assert!(p.is_mm2_internal_topic("x__internal"));
        let p = p.with_internal_topic_separator(false);
        assert_eq!(p.offset_syncs_topic("CLUSTER"), "mm2-offset-syncs.CLUSTER.internal");
        assert_eq!(p.checkpoints_topic("CLUSTER"), "CLUSTER.checkpoints.internal");
        assert_eq!(p.heartbeats_topic(), "heartbeats");
        assert!(!p.internal_topic_separator_enabled());
    }

    #[test]
    fn default_internal_topic_names() {
        let p = default_policy();
        assert_eq!(p.offset_syncs_topic("B"), "mm2-offset-syncs.B.internal");
        assert_eq!(p.checkpoints_topic("A"), "A.checkpoints.internal");
        assert!(p.is_checkpoints_topic("A.checkpoints.internal"));
        assert!(!p.is_checkpoints_topic("checkpoints.internal"));
    }

    #[test]
    fn heartbeats_topics() {
        let p = default_policy();
        for yes in ["heartbeats", "A.heartbeats", "B.A.heartbeats"] {
            assert!(p.is_heartbeats_topic(yes), "{yes}");
        }
        for no in ["A-heartbeats", "Aheartbeats", "heartbeats!"] {
            assert!(!p.is_heartbeats_topic(no), "{no}");
        }
        let underscore = ReplicationPolicy::new(PolicyKind::Default, "_");
        assert!(!underscore.is_heartbeats_topic("us-west.heartbeats"));
        assert!(underscore.is_heartbeats_topic("us-west_heartbeats"));
    }

    #[test]
    fn internal_topics() {
        let p = default_policy();
        assert!(p.is_internal_topic("__consumer_offsets"));
        assert!(p.is_internal_topic(".hiddentopic"));
        assert!(p.is_internal_topic("mm2-offsets.CLUSTER.internal"));
        assert!(p.is_internal_topic("mm2-offsets-CLUSTER-internal"));
        assert!(!p.is_internal_topic("mm2-offsets_CLUSTER_internal"));
        assert!(!p.is_internal_topic("_schemas"));
        assert!(!p.is_internal_topic("connect-offsets"));
        let underscore = ReplicationPolicy::new(PolicyKind::Default, "_");
        assert!(underscore.is_internal_topic("x_internal"));
        assert!(underscore.is_internal_topic("x.internal"));
        assert!(underscore.is_internal_topic("x-internal"));
    }

    #[test]
    fn identity_policy() {
        let p = ReplicationPolicy::new(PolicyKind::Identity, ".").with_source_cluster_alias("A");
        assert_eq!(p.format_remote_topic("A", "orders"), "orders");
        assert_eq!(p.format_remote_topic("A", "heartbeats"), "A.heartbeats");
        assert_eq!(p.format_remote_topic("A", "myheartbeats"), "A.myheartbeats");
        assert_eq!(p.topic_source("orders"), Some("A"));
        assert_eq!(p.topic_source("B.orders"), Some("A"));
        assert_eq!(p.topic_source("B.heartbeats"), Some("B"));
        assert_eq!(p.upstream_topic("B.orders"), Some("B.orders"));
        assert_eq!(p.upstream_topic("B.heartbeats"), Some("heartbeats"));
        assert_eq!(p.original_topic("B.orders"), "B.orders");
        assert_eq!(p.original_topic("C.B.heartbeats"), "heartbeats");
        assert!(p.is_heartbeats_topic("C.B.heartbeats"));
        assert_eq!(p.offset_syncs_topic("B"), "mm2-offset-syncs.B.internal");
        let unconfigured = ReplicationPolicy::new(PolicyKind::Identity, ".");
        assert_eq!(unconfigured.topic_source("orders"), None);
        assert_eq!(unconfigured.source_cluster_alias(), None);
    }

    #[test]
    fn class_names() {
        assert_eq!(
            PolicyKind::Identity.class_name(),
            "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
        );
        assert_eq!(default_policy().kind(), PolicyKind::Default);
        assert_eq!(default_policy().separator(), ".");
    }

    #[test]
    #[should_panic(expected = "separator must not be empty")]
    fn empty_separator_panics() {
        let _ = ReplicationPolicy::new(PolicyKind::Default, "");
    }
}
