//! Topic config sync (`sync.topic.configs.enabled`): remote topics follow their source topic's
//! configs as MirrorMaker 2 makes them, and are created with them.

use strait_client::{AlterConfigOp, ConfigEntry, ConfigSource, KafkaClient};
use strait_config::FlowConfig;
use tokio::sync::watch;

use crate::flow::replicated_topics;
use crate::internal_topics::{next_tick, unless_stopped};

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

/// Syncs the configs of every replicated topic every `sync.topic.configs.interval.seconds`
/// (first run at once) until `shutdown`.
pub(crate) async fn config_sync_loop(
    flow: FlowConfig,
    source: KafkaClient,
    target: KafkaClient,
    mut shutdown: watch::Receiver<bool>,
) {
    let Some(interval) = flow.sync_topic_configs.interval() else {
        return;
    };
    let mut ticker = tokio::time::interval(interval);
    while next_tick(&mut ticker, &mut shutdown).await {
        let Some(synced) = unless_stopped(&mut shutdown, sync_configs(&flow, &source, &target)).await else {
            break;
        };
        if let Err(error) = synced {
            tracing::warn!(flow = %flow.name(), %error, "topic config sync failed; retrying next interval");
        }
    }
}

async fn sync_configs(
    flow: &FlowConfig,
    source: &KafkaClient,
    target: &KafkaClient,
) -> Result<(), strait_client::Error> {
    let source_metadata = source.metadata(None).await?;
    let target_topics = target.metadata(None).await?.topics;
    // A topic whose metadata has an error this round is synced the next.
    for (topic, _) in replicated_topics(flow, &source_metadata) {
        let remote = flow.remote_topic(topic);
        if !target_topics.contains_key(&remote) {
            continue;
        }
        let ops = config_ops(flow, &source.describe_topic_configs(topic).await?);
        target.alter_topic_configs(&remote, &ops).await?;
    }
    Ok(())
}
