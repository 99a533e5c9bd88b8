//! Topic ACLs: DescribeAcls and CreateAcls.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{CreateAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::StrBytes;

use crate::{Error, KafkaClient, Result};

/// `ResourceType.TOPIC`.
const TOPIC: i8 = 2;
/// `ResourceType.ANY`, `PatternType.ANY`, `AclOperation.ANY`, `AclPermissionType.ANY`.
const ANY: i8 = 1;

/// Kafka's `PatternType.LITERAL`.
pub const PATTERN_LITERAL: i8 = 3;
/// Kafka's `AclOperation.ALL`.
pub const OPERATION_ALL: i8 = 2;
/// Kafka's `AclOperation.READ`.
pub const OPERATION_READ: i8 = 3;
/// Kafka's `AclOperation.WRITE`.
pub const OPERATION_WRITE: i8 = 4;
/// Kafka's `AclPermissionType.DENY`.
pub const PERMISSION_DENY: i8 = 2;
/// Kafka's `AclPermissionType.ALLOW`.
pub const PERMISSION_ALLOW: i8 = 3;

/// An ACL on a topic (resource pattern and entry), with Kafka's numeric codes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TopicAcl {
    /// The topic name (or prefix, or `*`).
    pub topic: String,
    /// `PatternType`: 3 literal, 4 prefixed.
    pub pattern_type: i8,
    /// The principal, e.g. `User:alice`.
    pub principal: String,
    /// The host, `*` for any.
    pub host: String,
    /// `AclOperation` (2 ALL, 3 READ, 4 WRITE, …).
    pub operation: i8,
    /// `AclPermissionType` (2 DENY, 3 ALLOW).
    pub permission: i8,
}

impl KafkaClient {
    /// Every ACL on a topic resource; `Ok(None)` when the cluster has no authorizer
    /// (SECURITY_DISABLED).
    pub async fn describe_topic_acls(&self) -> Result<Option<Vec<TopicAcl>>> {
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(TOPIC)
            .with_resource_name_filter(None)
            .with_pattern_type_filter(ANY)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(ANY)
            .with_permission_type(ANY);
        let response = self.any_connection().await?.send(&request).await?;
        if response.error_code == ResponseError::SecurityDisabled.code() {
            return Ok(None);
        }
        Error::check(
            response.error_code,
            || "DescribeAcls".into(),
            response.error_message.as_deref(),
        )?;
        Ok(Some(
            response
                .resources
                .iter()
                .flat_map(|r| {
                    r.acls.iter().map(|a| TopicAcl {
                        topic: r.resource_name.to_string(),
                        pattern_type: r.pattern_type,
                        principal: a.principal.to_string(),
                        host: a.host.to_string(),
                        operation: a.operation,
                        permission: a.permission_type,
                    })
                })
                .collect(),
        ))
    }

    /// Creates ACLs (existing identical ACLs are left as they are).
    pub async fn create_topic_acls(&self, acls: &[TopicAcl]) -> Result<()> {
        if acls.is_empty() {
            return Ok(());
        }
        let request = CreateAclsRequest::default().with_creations(
            acls.iter()
                .map(|a| {
                    AclCreation::default()
                        .with_resource_type(TOPIC)
                        .with_resource_name(StrBytes::from_string(a.topic.clone()))
                        .with_resource_pattern_type(a.pattern_type)
                        .with_principal(StrBytes::from_string(a.principal.clone()))
                        .with_host(StrBytes::from_string(a.host.clone()))
                        .with_operation(a.operation)
                        .with_permission_type(a.permission)
                })
                .collect(),
        );
        let response = self.any_connection().await?.send(&request).await?;
        for result in &response.results {
            Error::check(
                result.error_code,
                || "CreateAcls".into(),
                result.error_message.as_deref(),
            )?;
        }
        Ok(())
    }
}
