//! Heartbeats: a record every `emit.heartbeats.interval.seconds` in the target's `heartbeats`
//! topic, in MM2's format, so that `RemoteClusterUtils` sees the flow (and, replicated onwards as
//! `<source>.heartbeats`, the whole chain of clusters).

use std::sync::Arc;

use strait_client::KafkaClient;
use strait_config::FlowConfig;
use strait_wire::Heartbeat;
use tokio::sync::watch;

use crate::internal_topics::{ensure_compacted_topic, next_tick, now_ms, set_up_task, unless_stopped, write_records};
use crate::Stats;

/// The task's name in `/status`.
const TASK: &str = "heartbeats";

/// Emits heartbeats until `shutdown`. A failed set-up is retried and a failed write shows in
/// `stats` until one succeeds: heartbeats are what `strait status` and MM2's tools look for.
pub(crate) async fn heartbeat_loop(
    flow: FlowConfig,
    target: KafkaClient,
    stats: Arc<Stats>,
    mut shutdown: watch::Receiver<bool>,
) {
    let Some(interval) = flow.emit_heartbeats.interval() else {
        return;
    };
    let name = flow.name();
    let topic = flow.policy.heartbeats_topic();
    let set_up = set_up_task(TASK, &name, &stats, &mut shutdown, || {
        ensure_compacted_topic(
            &target,
            &flow.target.alias,
            topic,
            1,
            flow.heartbeats_topic_replication_factor,
        )
    });
    if set_up.await.is_none() {
        return;
    }
    let mut ticker = tokio::time::interval(interval);
    while next_tick(&mut ticker, &mut shutdown).await {
        let heartbeat = Heartbeat {
            source_cluster_alias: flow.source.alias.clone(),
            target_cluster_alias: flow.target.alias.clone(),
            timestamp: now_ms(),
        };
        let write = write_records(
            &target,
            &flow.target.alias,
            topic,
            0,
            [(heartbeat.key(), heartbeat.value())],
        );
        match unless_stopped(&mut shutdown, write).await {
            None => break,
            Some(Ok(())) => {
                stats.record_heartbeat(heartbeat.timestamp);
                stats.set_task(TASK, None);
            }
            Some(Err(error)) => {
                tracing::warn!(flow = %name, %error, "writing a heartbeat failed; retrying at the next interval");
                stats.set_task(TASK, Some(error.to_string()));
            }
        }
    }
}
