//! Topic config sync (`sync.topic.configs.enabled`): every interval, remote topics follow their
//! source topic's configs, by the rules of `topic_configs`.

use std::sync::Arc;

use strait_client::KafkaClient;
use strait_config::FlowConfig;
use tokio::sync::watch;

use crate::discovery::replicated_topics;
use crate::internal_topics::{next_tick, unless_stopped};
use crate::topic_configs::config_ops;
use crate::Stats;

/// Syncs the configs of every replicated topic every `sync.topic.configs.interval.seconds`
/// (first run at once) until `shutdown`.
pub(crate) async fn config_sync_loop(
    flow: FlowConfig,
    source: KafkaClient,
    target: KafkaClient,
    stats: Arc<Stats>,
    mut shutdown: watch::Receiver<bool>,
) {
    let Some(interval) = flow.sync_topic_configs.interval() else {
        return;
    };
    let mut ticker = tokio::time::interval(interval);
    while next_tick(&mut ticker, &mut shutdown).await {
        let Some(synced) = unless_stopped(&mut shutdown, sync_configs(&flow, &source, &target, &stats)).await else {
            break;
        };
        if let Err(error) = synced {
            tracing::warn!(flow = %flow.name(), %error, "topic config sync failed; retrying next interval");
        }
    }
}

/// One round. A topic whose configs cannot be read or that the target refuses is named and
/// counted (`strait_errors_total`), and the round goes on with the others.
async fn sync_configs(
    flow: &FlowConfig,
    source: &KafkaClient,
    target: &KafkaClient,
    stats: &Stats,
) -> Result<(), strait_client::Error> {
    let source_metadata = source.metadata(None).await?;
    let target_topics = target.metadata(None).await?.topics;
    // A topic whose metadata has an error this round is synced the next.
    for (topic, _) in replicated_topics(flow, &source_metadata) {
        let remote = flow.remote_topic(topic);
        if !target_topics.contains_key(&remote) {
            continue;
        }
        let entries = match source.describe_topic_configs(topic).await {
            Ok(entries) => entries,
            Err(error) => {
                stats.record_error(&flow.source.alias, "DescribeConfigs", &error);
                tracing::warn!(flow = %flow.name(), topic, %error, "cannot read the topic's configs; retrying next interval");
                continue;
            }
        };
        if let Err(error) = target.alter_topic_configs(&remote, &config_ops(flow, &entries)).await {
            stats.record_error(&flow.target.alias, "IncrementalAlterConfigs", &error);
            tracing::warn!(flow = %flow.name(), topic, remote, %error, "the target refused the topic's configs; retrying next interval");
        }
    }
    Ok(())
}
