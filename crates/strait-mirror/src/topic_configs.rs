//! Which topic configs a remote topic gets from its source topic, as MirrorMaker 2 decides:
//! the pure rules of topic config sync and of remote topic creation.

use strait_client::{AlterConfigOp, ConfigEntry, ConfigSource};
use strait_config::FlowConfig;

/// The changes that make a remote topic follow `source`'s config entries: read-only, sensitive,
/// static-broker and excluded (`config.properties.exclude`) properties are left alone; a
/// property at its default on the source is removed from the remote topic (so the target's own
/// default applies) unless `use.defaults.from = source`; every other one is set to the source's
/// value.
pub(crate) fn config_ops(flow: &FlowConfig, source: &[ConfigEntry]) -> Vec<AlterConfigOp> {
    let filter = &flow.config_property_filter;
    source
        .iter()
        .filter(|e| !e.read_only && !e.is_sensitive && e.source != ConfigSource::StaticBrokerConfig)
        .filter(|e| filter.should_replicate_config_property(&e.name))
        .filter_map(|e| {
            if e.source == ConfigSource::DefaultConfig && !filter.should_replicate_source_default(&e.name) {
                Some(AlterConfigOp::Delete(e.name.clone()))
            } else {
                e.value.clone().map(|value| AlterConfigOp::Set(e.name.clone(), value))
            }
        })
        .collect()
}

/// The configs a new remote topic is created with: the values [`config_ops`] would set.
pub(crate) fn creation_configs(flow: &FlowConfig, source: &[ConfigEntry]) -> Vec<(String, String)> {
    config_ops(flow, source)
        .into_iter()
        .filter_map(|op| match op {
            AlterConfigOp::Set(name, value) => Some((name, value)),
            AlterConfigOp::Delete(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(extra: &str) -> FlowConfig {
        let config = strait_config::Mm2Config::parse(&format!(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n{extra}"
        ))
        .unwrap();
        config.flow("A", "B").unwrap().clone()
    }

    fn entry(name: &str, value: &str, source: ConfigSource) -> ConfigEntry {
        ConfigEntry {
            name: name.into(),
            value: Some(value.into()),
            read_only: false,
            is_sensitive: false,
            source,
        }
    }

    /// A source topic's configs: one of each kind `config_ops` tells apart.
    fn source_configs() -> Vec<ConfigEntry> {
        vec![
            entry("retention.ms", "3600000", ConfigSource::DynamicTopicConfig),
            entry("cleanup.policy", "delete", ConfigSource::DefaultConfig),
            entry("segment.bytes", "1048576", ConfigSource::DynamicDefaultBrokerConfig),
            entry("log.dirs", "/var/kafka", ConfigSource::StaticBrokerConfig),
            entry("min.insync.replicas", "2", ConfigSource::DynamicTopicConfig),
            ConfigEntry {
                read_only: true,
                ..entry("message.format.version", "3.0", ConfigSource::DynamicTopicConfig)
            },
            // Brokers hide sensitive values; were one shown, it is still not copied.
            ConfigEntry {
                is_sensitive: true,
                ..entry("sasl.secret", "hunter2", ConfigSource::DynamicTopicConfig)
            },
        ]
    }

    #[test]
    fn remote_topics_follow_the_source_except_defaults_excluded_static_read_only_and_secret_configs() {
        let ops = config_ops(&flow(""), &source_configs());
        assert_eq!(
            ops,
            [
                AlterConfigOp::Set("retention.ms".into(), "3600000".into()),
                // At its default on the source: the target's own default applies (MM2's
                // use.defaults.from = target).
                AlterConfigOp::Delete("cleanup.policy".into()),
                AlterConfigOp::Set("segment.bytes".into(), "1048576".into()),
                // min.insync.replicas is in MM2's default config.properties.exclude.
            ]
        );
        assert_eq!(
            creation_configs(&flow(""), &source_configs()),
            [
                ("retention.ms".to_owned(), "3600000".to_owned()),
                ("segment.bytes".to_owned(), "1048576".to_owned()),
            ],
            "a new remote topic gets the values only"
        );
    }

    #[test]
    fn use_defaults_from_source_copies_the_source_defaults_and_exclude_is_honoured() {
        let ops = config_ops(
            &flow("use.defaults.from = source\nconfig.properties.exclude = retention\\..*\n"),
            &source_configs(),
        );
        assert_eq!(
            ops,
            [
                AlterConfigOp::Set("cleanup.policy".into(), "delete".into()),
                AlterConfigOp::Set("segment.bytes".into(), "1048576".into()),
                // The exclude list was replaced: min.insync.replicas is copied now.
                AlterConfigOp::Set("min.insync.replicas".into(), "2".into()),
            ]
        );
    }
}
