//! Topic ACL sync (`sync.topic.acls.enabled`), as MirrorMaker 2 does it: literal topic ACLs of
//! replicated topics are copied to their remote topics, without ALLOW WRITE (only the mirror
//! should write remote topics) and with ALLOW ALL narrowed to ALLOW READ. ACLs are never
//! removed from the target.

use std::sync::Arc;

use strait_client::{
    KafkaClient, TopicAcl, OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PATTERN_LITERAL, PERMISSION_ALLOW,
};
use strait_config::FlowConfig;
use tokio::sync::watch;

use crate::internal_topics::{next_tick, unless_stopped};
use crate::Stats;

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
    stats: Arc<Stats>,
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
                match unless_stopped(&mut shutdown, create).await {
                    None => break,
                    Some(Ok(())) => stats.record_acl_sync(),
                    Some(Err(error)) => {
                        tracing::warn!(flow = %flow.name(), %error, "creating ACLs on the target failed; retrying next interval")
                    }
                }
            }
            Err(error) => {
                tracing::warn!(flow = %flow.name(), %error, "reading the source's ACLs failed; retrying next interval")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use strait_client::PERMISSION_DENY;

    use super::*;

    const PATTERN_PREFIXED: i8 = 4;

    fn acl(topic: &str, pattern_type: i8, principal: &str, operation: i8, permission: i8) -> TopicAcl {
        TopicAcl {
            topic: topic.into(),
            pattern_type,
            principal: principal.into(),
            host: "*".into(),
            operation,
            permission,
        }
    }

    #[test]
    fn literal_acls_of_replicated_topics_are_copied_without_write_and_with_all_narrowed_to_read() {
        let config = strait_config::Mm2Config::parse(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n\
             A->B.topics = orders.*\n",
        )
        .unwrap();
        let flow = config.flow("A", "B").unwrap();
        let source = [
            acl(
                "orders",
                PATTERN_LITERAL,
                "User:alice",
                OPERATION_READ,
                PERMISSION_ALLOW,
            ),
            acl("orders", PATTERN_LITERAL, "User:bob", OPERATION_WRITE, PERMISSION_ALLOW),
            acl("orders", PATTERN_LITERAL, "User:carol", OPERATION_ALL, PERMISSION_ALLOW),
            acl("orders", PATTERN_LITERAL, "User:dave", OPERATION_READ, PERMISSION_DENY),
            acl(
                "orders",
                PATTERN_LITERAL,
                "User:mallory",
                OPERATION_WRITE,
                PERMISSION_DENY,
            ),
            acl("orders", PATTERN_LITERAL, "User:trent", OPERATION_ALL, PERMISSION_DENY),
            acl(
                "orders",
                PATTERN_PREFIXED,
                "User:erin",
                OPERATION_READ,
                PERMISSION_ALLOW,
            ),
            acl(
                "payments",
                PATTERN_LITERAL,
                "User:frank",
                OPERATION_READ,
                PERMISSION_ALLOW,
            ),
        ];
        assert_eq!(
            remote_acls(flow, &source),
            [
                acl(
                    "A.orders",
                    PATTERN_LITERAL,
                    "User:alice",
                    OPERATION_READ,
                    PERMISSION_ALLOW
                ),
                // ALLOW ALL narrowed to ALLOW READ: only the mirror writes remote topics.
                acl(
                    "A.orders",
                    PATTERN_LITERAL,
                    "User:carol",
                    OPERATION_READ,
                    PERMISSION_ALLOW
                ),
                // DENY kept as it is, whatever the operation.
                acl(
                    "A.orders",
                    PATTERN_LITERAL,
                    "User:dave",
                    OPERATION_READ,
                    PERMISSION_DENY
                ),
                acl(
                    "A.orders",
                    PATTERN_LITERAL,
                    "User:mallory",
                    OPERATION_WRITE,
                    PERMISSION_DENY
                ),
                acl(
                    "A.orders",
                    PATTERN_LITERAL,
                    "User:trent",
                    OPERATION_ALL,
                    PERMISSION_DENY
                ),
            ],
            "ALLOW WRITE, prefixed patterns and topics not replicated are left out"
        );
    }
}
