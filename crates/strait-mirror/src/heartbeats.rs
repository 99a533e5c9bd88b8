//! Heartbeats: a record every `emit.heartbeats.interval.seconds` in the target's `heartbeats`
//! topic, in MM2's format, so that `RemoteClusterUtils` sees the flow (and, replicated onwards as
//! `<source>.heartbeats`, the whole chain of clusters).

use strait_client::KafkaClient;
use strait_config::FlowConfig;
use strait_wire::Heartbeat;
use tokio::sync::watch;

use crate::internal_topics::{ensure_compacted_topic, next_tick, now_ms, write_records};
use crate::MirrorError;

/// Emits heartbeats until `shutdown`.
pub(crate) async fn heartbeat_loop(
    flow: FlowConfig,
    target: KafkaClient,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), MirrorError> {
    let Some(interval) = flow.emit_heartbeats.interval() else {
        return Ok(());
    };
    let topic = flow.policy.heartbeats_topic();
    ensure_compacted_topic(
        &target,
        &flow.target.alias,
        topic,
        1,
        flow.heartbeats_topic_replication_factor,
    )
    .await?;
    let mut ticker = tokio::time::interval(interval);
    while next_tick(&mut ticker, &mut shutdown).await {
        let heartbeat = Heartbeat {
            source_cluster_alias: flow.source.alias.clone(),
            target_cluster_alias: flow.target.alias.clone(),
            timestamp: now_ms(),
        };
        if let Err(error) = write_records(
            &target,
            &flow.target.alias,
            topic,
            0,
            [(heartbeat.key(), heartbeat.value())],
        )
        .await
        {
            tracing::warn!(flow = %flow.name(), %error, "writing a heartbeat failed");
        }
    }
    Ok(())
}
