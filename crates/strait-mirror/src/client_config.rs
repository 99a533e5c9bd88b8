//! Kafka clients of a cluster, configured from its `mm2.properties` settings.

use std::time::Duration;

use strait_client::{ClientConfig, IoPath, KafkaClient, Security};
use strait_config::{ClientRole, ClusterClientConfig, IoSetting};

use crate::MirrorError;

/// The client configuration of `cluster` for `role`, as MM2 would give its Kafka client:
/// `bootstrap.servers`, `security.protocol` and the `ssl.*`/`sasl.*` keys of that role's view
/// (`<alias>.<role>.k` > `<alias>.k` > top-level `k`), and the role's `client.id` (default
/// `strait-<alias>`), `request.timeout.ms` and `socket.connection.setup.timeout.ms`; and the
/// byte path `strait.io` gives its connections.
///
/// The mirror shares one client per cluster across roles, so it asks for the role the client
/// mostly plays: [`ClientRole::Consumer`] on a source, [`ClientRole::Producer`] on a target.
/// Files named by `ssl.*.location` are read here; a bad or unsupported setting is an error
/// naming the cluster and the key (never a secret value).
pub fn client_config(cluster: &ClusterClientConfig, role: ClientRole) -> Result<ClientConfig, MirrorError> {
    let props = cluster.client_props(role);
    let mut config = match props.get("bootstrap.servers") {
        Some(servers) => ClientConfig::new(servers),
        None => ClientConfig::new(&cluster.bootstrap_servers.join(",")),
    };
    let fail = MirrorError::client_at(&cluster.alias);
    config.connection.client_id = match props.get("client.id").map(|id| id.trim()) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("strait-{}", cluster.alias),
    };
    config.connection.security = Security::from_properties(&props).map_err(fail)?;
    let millis = |key: &str| -> Result<Option<Duration>, MirrorError> {
        let Some(value) = props.get(key) else {
            return Ok(None);
        };
        let ms = value
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|ms| (1..=i32::MAX as u32).contains(ms));
        let ms = ms.ok_or_else(|| {
            fail(strait_client::Error::Config {
                key: key.into(),
                message: format!("`{value}` is not a number of milliseconds between 1 and {}", i32::MAX),
            })
        })?;
        Ok(Some(Duration::from_millis(ms.into())))
    };
    if let Some(timeout) = millis("request.timeout.ms")? {
        config.connection.request_timeout = timeout;
    }
    if let Some(timeout) = millis("socket.connection.setup.timeout.ms")? {
        config.connection.connect_timeout = timeout;
    }
    let tls = config.connection.security.tls.is_some();
    config.connection.io = match cluster.io {
        IoSetting::Epoll => IoPath::Epoll,
        IoSetting::IoUring => IoPath::io_uring(tls).map_err(fail)?,
        IoSetting::Auto => IoPath::auto(tls),
    };
    Ok(config)
}

/// A client of `cluster` for `role`, connected.
pub(crate) async fn connect(cluster: &ClusterClientConfig, role: ClientRole) -> Result<KafkaClient, MirrorError> {
    KafkaClient::connect(client_config(cluster, role)?)
        .await
        .map_err(MirrorError::client_at(&cluster.alias))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_comes_from_the_role_view() {
        let config = strait_config::Mm2Config::parse(
            "clusters = A, B\n\
             A.bootstrap.servers = a:9092\n\
             B.bootstrap.servers = b:9093\n\
             A->B.enabled = true\n\
             A.security.protocol = SASL_PLAINTEXT\n\
             A.sasl.mechanism = SCRAM-SHA-256\n\
             A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"hunter2\";\n\
             A.consumer.sasl.mechanism = SCRAM-SHA-512\n",
        )
        .unwrap();
        let flow = config.flow("A", "B").unwrap();
        let source = client_config(&flow.source, ClientRole::Consumer).unwrap();
        assert_eq!(source.bootstrap_servers, vec!["a:9092"]);
        assert_eq!(source.connection.client_id, "strait-A");
        let sasl = source.connection.security.sasl.as_ref().unwrap();
        assert_eq!(sasl.mechanism, strait_client::SaslMechanism::ScramSha512);
        assert!(!format!("{source:?}").contains("hunter2"));
        let admin = client_config(&flow.source, ClientRole::Admin).unwrap();
        assert_eq!(
            admin.connection.security.sasl.unwrap().mechanism,
            strait_client::SaslMechanism::ScramSha256
        );
        let target = client_config(&flow.target, ClientRole::Producer).unwrap();
        assert!(target.connection.security.sasl.is_none() && target.connection.security.tls.is_none());
    }

    #[test]
    fn the_request_timeout_comes_from_the_role_view() {
        let config = strait_config::Mm2Config::parse(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n\
             B.producer.request.timeout.ms = 5000\nA.consumer.request.timeout.ms = 0\n",
        )
        .unwrap();
        let flow = config.flow("A", "B").unwrap();
        let target = client_config(&flow.target, ClientRole::Producer).unwrap();
        assert_eq!(target.connection.request_timeout, Duration::from_secs(5));
        let admin = client_config(&flow.target, ClientRole::Admin).unwrap();
        assert_eq!(admin.connection.request_timeout, Duration::from_secs(30));
        let err = client_config(&flow.source, ClientRole::Consumer)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "A cluster: request.timeout.ms: `0` is not a number of milliseconds between 1 and 2147483647"
        );
    }

    #[test]
    fn client_id_and_connect_timeout_come_from_the_role_view() {
        let config = strait_config::Mm2Config::parse(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n\
             A.consumer.client.id = mirror-dc1\nA.consumer.socket.connection.setup.timeout.ms = 2500\n",
        )
        .unwrap();
        let flow = config.flow("A", "B").unwrap();
        let source = client_config(&flow.source, ClientRole::Consumer).unwrap();
        assert_eq!(source.connection.client_id, "mirror-dc1");
        assert_eq!(source.connection.connect_timeout, Duration::from_millis(2500));
        let admin = client_config(&flow.source, ClientRole::Admin).unwrap();
        assert_eq!(admin.connection.client_id, "strait-A");
        assert_eq!(admin.connection.connect_timeout, Duration::from_secs(10));
    }

    #[test]
    fn errors_name_the_cluster_and_key() {
        let config = strait_config::Mm2Config::parse(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n\
             B.security.protocol = SASL_SSL\nB.sasl.mechanism = GSSAPI\n",
        )
        .unwrap();
        let flow = config.flow("A", "B").unwrap();
        let err = client_config(&flow.target, ClientRole::Producer)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("B cluster: sasl.mechanism: GSSAPI is not supported"),
            "{err}"
        );
    }
}
