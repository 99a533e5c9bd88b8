//! Topic ACL sync (`sync.topic.acls.enabled`), as MirrorMaker 2 does it: literal topic ACLs of
//! replicated topics are copied to their remote topics, without ALLOW WRITE (only the mirror
//! should write remote topics) and with ALLOW ALL narrowed to ALLOW READ. ACLs are never
//! removed from the target.

use strait_client::{
    KafkaClient, TopicAcl, OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PATTERN_LITERAL, PERMISSION_ALLOW,
};
use strait_config::FlowConfig;
use tokio::sync::watch;

use crate::internal_topics::{next_tick, unless_stopped};

/// The target ACLs for the source's `acls`.
pub(crate) fn remote_acls(flow: &FlowConfig, acls: &[TopicAcl]) -> Vec<TopicAcl> {
    acls.iter()
        .filter(|a| a.pattern_type == PATTERN_LITERAL && flow.should_replicate_topic(&a.topic))
        .filter(|a| !(a.permission == PERMISSION_ALLOW && a.operation == OPERATION_WRITE))
        .map(|a| TopicAcl {
            topic: flow.remote_topic(&a.topic),
            operation: if a.permission == PERMISSION_ALLOW && a.operation == OPERATION_ALL {
                OPERATION_READ
            } else {
                a.operation
            },
            ..a.clone()
        })
        .collect()
}

/// Syncs ACLs every `sync.topic.acls.interval.seconds` (first run at once) until `shutdown`.
pub(crate) async fn acl_sync_loop(
    flow: FlowConfig,
    source: KafkaClient,
    target: KafkaClient,
    mut shutdown: watch::Receiver<bool>,
) {
    let Some(interval) = flow.sync_topic_acls.interval() else {
        return;
    };
    let mut ticker = tokio::time::interval(interval);
    while next_tick(&mut ticker, &mut shutdown).await {
        let Some(described) = unless_stopped(&mut shutdown, source.describe_topic_acls()).await else {
            break;
        };
        match described {
            Ok(None) => {
                tracing::info!(
                    flow = %flow.name(),
                    "the source cluster has no authorizer: ACL sync stops (set sync.topic.acls.enabled = false to silence this)"
                );
                return;
            }
            Ok(Some(acls)) => {
                let remote = remote_acls(&flow, &acls);
                let create = target.create_topic_acls(&remote);
                if let Some(Err(error)) = unless_stopped(&mut shutdown, create).await {
                    tracing::warn!(flow = %flow.name(), %error, "creating ACLs on the target failed; retrying next interval");
                }
            }
            Err(error) => {
                tracing::warn!(flow = %flow.name(), %error, "reading the source's ACLs failed; retrying next interval")
            }
        }
    }
}
