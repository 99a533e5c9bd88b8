//! Topic configs: DescribeConfigs and IncrementalAlterConfigs.

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::{DescribeConfigsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::protocol::StrBytes;

use crate::client::retrying;
use crate::{Error, KafkaClient, Result};

/// `ConfigResource.Type.TOPIC`.
const TOPIC: i8 = 2;

/// Where a config value comes from (Kafka's `ConfigEntry.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// Set on the topic.
    DynamicTopicConfig,
    /// A dynamic per-broker value.
    DynamicBrokerConfig,
    /// A dynamic cluster-wide default.
    DynamicDefaultBrokerConfig,
    /// From the broker's `server.properties`.
    StaticBrokerConfig,
    /// Kafka's built-in default.
    DefaultConfig,
    /// Anything else.
    Other(i8),
}

impl From<i8> for ConfigSource {
    fn from(code: i8) -> Self {
        match code {
            1 => ConfigSource::DynamicTopicConfig,
            2 => ConfigSource::DynamicBrokerConfig,
            3 => ConfigSource::DynamicDefaultBrokerConfig,
            4 => ConfigSource::StaticBrokerConfig,
            5 => ConfigSource::DefaultConfig,
            other => ConfigSource::Other(other),
        }
    }
}

/// One config entry of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// The config name, e.g. `retention.ms`.
    pub name: String,
    /// Its value (`None` for sensitive or unset values).
    pub value: Option<String>,
    /// Whether it cannot be changed.
    pub read_only: bool,
    /// Whether its value is hidden.
    pub is_sensitive: bool,
    /// Where the value comes from.
    pub source: ConfigSource,
}

/// A change IncrementalAlterConfigs applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterConfigOp {
    /// Set the config to a value.
    Set(String, String),
    /// Remove the topic's own value (back to the cluster default).
    Delete(String),
}

impl KafkaClient {
    /// Every config entry of `topic`.
    pub async fn describe_topic_configs(&self, topic: &str) -> Result<Vec<ConfigEntry>> {
        let request = DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(StrBytes::from_string(topic.into()))
            .with_configuration_keys(None)]);
        let response = retrying(self.config().connection.request_timeout, || async {
            self.any_connection().await?.send(&request).await
        })
        .await?;
        let mut entries = Vec::new();
        for result in &response.results {
            Error::check(
                result.error_code,
                || format!("DescribeConfigs {topic}"),
                result.error_message.as_deref(),
            )?;
            entries.extend(result.configs.iter().map(|c| ConfigEntry {
                name: c.name.to_string(),
                value: c.value.as_ref().map(|v| v.to_string()),
                read_only: c.read_only,
                is_sensitive: c.is_sensitive,
                source: ConfigSource::from(c.config_source),
            }));
        }
        Ok(entries)
    }

    /// Applies `ops` to `topic`'s configs (IncrementalAlterConfigs).
    pub async fn alter_topic_configs(&self, topic: &str, ops: &[AlterConfigOp]) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let configs = ops
            .iter()
            .map(|op| match op {
                AlterConfigOp::Set(name, value) => AlterableConfig::default()
                    .with_name(StrBytes::from_string(name.clone()))
                    .with_config_operation(0)
                    .with_value(Some(StrBytes::from_string(value.clone()))),
                AlterConfigOp::Delete(name) => AlterableConfig::default()
                    .with_name(StrBytes::from_string(name.clone()))
                    .with_config_operation(1)
                    .with_value(None),
            })
            .collect();
        let request = IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(StrBytes::from_string(topic.into()))
            .with_configs(configs)]);
        let response = retrying(self.config().connection.request_timeout, || async {
            self.any_connection().await?.send(&request).await
        })
        .await?;
        for result in &response.responses {
            Error::check(
                result.error_code,
                || format!("IncrementalAlterConfigs {topic}"),
                result.error_message.as_deref(),
            )?;
        }
        Ok(())
    }
}
