//! MM2's default topic, group and topic-config filters (`DefaultTopicFilter`,
//! `DefaultGroupFilter`, `DefaultConfigPropertyFilter`).
//!
//! A filter value is a Kafka LIST: trimmed, split on `\s*,\s*`, the entries joined with `|` into
//! one Java regex that must match the **whole** name. An empty list matches nothing, so
//! `topics =` replicates nothing and `topics.exclude =` excludes nothing. A name passes when the
//! include list matches and the exclude list does not. Regexes are compiled with `fancy-regex`,
//! which accepts Java's look-around and back-references.

use fancy_regex::Regex;

use crate::error::ConfigError;
use crate::value::{java_list, Raw};

/// A compiled MM2 pattern list; `None` matches nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct PatternList(Option<Regex>);

impl PatternList {
    /// Parses a LIST value. On error returns the combined pattern and the regex engine's message.
    pub(crate) fn parse(value: &str) -> Result<Self, (String, String)> {
        let entries = java_list(value);
        if entries.is_empty() {
            return Ok(PatternList(None));
        }
        let joined = entries.join("|");
        let compile = |pattern: &str| Regex::new(pattern).map_err(|e| (joined.clone(), e.to_string()));
        // Compile the pattern as written first, as Java does: the error positions then match
        // what the user wrote, and a stray `)` cannot close the wrapper group below.
        let _ = compile(&joined)?;
        // Java's `Matcher.matches()` needs the whole input to match.
        compile(&format!("^(?:{joined})$")).map(|re| PatternList(Some(re)))
    }

    /// True when the whole of `name` matches. A regex that exhausts fancy-regex's backtracking
    /// limit counts as no match.
    fn matches(&self, name: &str) -> bool {
        self.0.as_ref().is_some_and(|re| re.is_match(name).unwrap_or(false))
    }

    /// The regex as compiled (with the `^(?:…)$` wrapper), or `None` for an empty list.
    fn as_str(&self) -> Option<&str> {
        self.0.as_ref().map(Regex::as_str)
    }
}

/// Which topics a flow replicates and checkpoints (`topics`, `topics.exclude`).
#[derive(Debug, Clone)]
pub struct TopicFilter {
    include: PatternList,
    exclude: PatternList,
}

impl TopicFilter {
    pub(crate) fn new(include: PatternList, exclude: PatternList) -> Self {
        TopicFilter { include, exclude }
    }

    /// True when `topic` matches `topics` and not `topics.exclude`.
    pub fn should_replicate_topic(&self, topic: &str) -> bool {
        self.include.matches(topic) && !self.exclude.matches(topic)
    }

    /// The compiled include regex, `None` when the list is empty.
    pub fn include_regex(&self) -> Option<&str> {
        self.include.as_str()
    }

    /// The compiled exclude regex, `None` when the list is empty.
    pub fn exclude_regex(&self) -> Option<&str> {
        self.exclude.as_str()
    }
}

/// Which consumer groups a flow checkpoints (`groups`, `groups.exclude`).
#[derive(Debug, Clone)]
pub struct GroupFilter {
    include: PatternList,
    exclude: PatternList,
}

impl GroupFilter {
    pub(crate) fn new(include: PatternList, exclude: PatternList) -> Self {
        GroupFilter { include, exclude }
    }

    /// True when `group` matches `groups` and not `groups.exclude`.
    pub fn should_replicate_group(&self, group: &str) -> bool {
        self.include.matches(group) && !self.exclude.matches(group)
    }
}

/// Which cluster's broker defaults win when syncing topic configs (`use.defaults.from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UseDefaultsFrom {
    /// Copy source defaults too, so the remote topic looks exactly like the upstream one.
    Source,
    /// Leave properties that are at their default upstream to the target's defaults (MM2 default).
    #[default]
    Target,
}

/// Which topic config properties a flow copies (`config.properties.exclude`,
/// `use.defaults.from`).
#[derive(Debug, Clone)]
pub struct ConfigPropertyFilter {
    exclude: PatternList,
    use_defaults_from: UseDefaultsFrom,
}

impl ConfigPropertyFilter {
    pub(crate) fn new(exclude: PatternList, use_defaults_from: UseDefaultsFrom) -> Self {
        ConfigPropertyFilter {
            exclude,
            use_defaults_from,
        }
    }

    /// True unless `property` matches `config.properties.exclude`.
    pub fn should_replicate_config_property(&self, property: &str) -> bool {
        !self.exclude.matches(property)
    }

    /// True when a property that is at its default on the source should still be copied
    /// (`use.defaults.from = source`). MM2 answers the same for every property.
    pub fn should_replicate_source_default(&self, _property: &str) -> bool {
        self.use_defaults_from == UseDefaultsFrom::Source
    }

    /// The configured `use.defaults.from`.
    pub fn use_defaults_from(&self) -> UseDefaultsFrom {
        self.use_defaults_from
    }
}

/// A filter value compiled where it is read, with its key and line in the error.
impl Raw<'_> {
    pub(crate) fn patterns(&self) -> crate::error::Result<PatternList> {
        PatternList::parse(self.value).map_err(|(pattern, reason)| ConfigError::InvalidRegex {
            line: self.line,
            key: self.key.to_owned(),
            pattern,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(value: &str) -> PatternList {
        PatternList::parse(value).unwrap()
    }

    #[test]
    fn default_topic_filter() {
        let f = TopicFilter::default();
        for ok in [
            "topic1",
            "a.b",
            "_schemas",
            "connect-offsets",
            "x-internal-y",
            "heartbeats",
        ] {
            assert!(f.should_replicate_topic(ok), "{ok}");
        }
        for no in [
            "__consumer_offsets",
            "mm2-offsets.A.internal",
            "a-internal",
            "t.replica",
            "A.checkpoints.internal",
        ] {
            assert!(!f.should_replicate_topic(no), "{no}");
        }
    }

    #[test]
    fn default_group_filter() {
        let f = GroupFilter::default();
        assert!(f.should_replicate_group("orders-app"));
        assert!(!f.should_replicate_group("console-consumer-123"));
        assert!(!f.should_replicate_group("connect-sink"));
        assert!(!f.should_replicate_group("__strait"));
    }

    #[test]
    fn default_config_property_filter() {
        let f = ConfigPropertyFilter::default();
        assert!(f.should_replicate_config_property("retention.ms"));
        assert!(f.should_replicate_config_property("min.insync.replicasX"));
        assert!(!f.should_replicate_config_property("min.insync.replicas"));
        assert!(!f.should_replicate_config_property("leader.replication.throttled.replicas"));
        assert!(!f.should_replicate_source_default("retention.ms"));
        let source = ConfigPropertyFilter::new(list(""), UseDefaultsFrom::Source);
        assert!(source.should_replicate_source_default("retention.ms"));
        assert!(source.should_replicate_config_property("min.insync.replicas"));
    }

    #[test]
    fn whole_name_must_match() {
        let f = TopicFilter::new(list("topic1, ^test-topic-.*$"), list(""));
        assert!(f.should_replicate_topic("topic1"));
        assert!(!f.should_replicate_topic("topic10"));
        assert!(!f.should_replicate_topic("xtopic1"));
        assert!(f.should_replicate_topic("test-topic-7"));
        assert_eq!(f.include_regex(), Some("^(?:topic1|^test-topic-.*$)$"));
        assert_eq!(f.exclude_regex(), None);
    }

    #[test]
    fn empty_include_matches_nothing_and_empty_exclude_excludes_nothing() {
        let nothing = TopicFilter::new(list(""), list(""));
        assert!(!nothing.should_replicate_topic("t"));
        let everything = TopicFilter::new(list(".*"), list("  "));
        assert!(everything.should_replicate_topic("__consumer_offsets"));
    }

    #[test]
    fn java_look_ahead() {
        let f = TopicFilter::new(list(r"(?!us-west\.).*"), list(""));
        assert!(f.should_replicate_topic("orders"));
        assert!(f.should_replicate_topic("eu.orders"));
        assert!(!f.should_replicate_topic("us-west.orders"));
    }

    #[test]
    fn include_and_not_exclude() {
        let f = TopicFilter::new(list("orders.*"), list(r"orders\.dlq"));
        assert!(f.should_replicate_topic("orders.eu"));
        assert!(!f.should_replicate_topic("orders.dlq"));
        assert!(!f.should_replicate_topic("payments"));
    }

    #[test]
    fn comma_inside_regex_is_split() {
        // `a{1,3}` becomes the two entries `a{1` and `3}`, so it never means "1 to 3 a's".
        let f = TopicFilter::new(list("a{1,3}"), list(""));
        assert!(!f.should_replicate_topic("aa"));
        assert_eq!(PatternList::parse("x, (unclosed").unwrap_err().0, "x|(unclosed");
        // A stray `)` must not close the `^(?:…)$` wrapper.
        assert!(PatternList::parse("a)|(b").is_err());
    }
}
