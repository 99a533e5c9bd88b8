use std::fmt;
use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;

/// A Kafka error code, displayed by its protocol name (e.g. `NOT_LEADER_OR_FOLLOWER (6)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaCode(pub ResponseError);

impl KafkaCode {
    /// The code from a response field; `None` for 0 (no error).
    pub fn from_code(code: i16) -> Option<KafkaCode> {
        ResponseError::try_from_code(code).map(KafkaCode)
    }

    /// The numeric code.
    pub fn code(&self) -> i16 {
        self.0.code()
    }

    /// Whether the protocol marks this error as retriable. CONCURRENT_TRANSACTIONS is, in
    /// Kafka's own classes (a `RetriableException`): the coordinator is finishing an earlier
    /// transaction of the id.
    pub fn is_retriable(&self) -> bool {
        self.0.is_retriable() || self.0 == ResponseError::ConcurrentTransactions
    }

    /// The protocol name in Kafka's own spelling, e.g. `UNKNOWN_TOPIC_OR_PARTITION`.
    pub fn name(&self) -> String {
        if let ResponseError::Unknown(code) = self.0 {
            return format!("UNKNOWN_CODE_{code}");
        }
        let camel = format!("{:?}", self.0);
        let mut name = String::with_capacity(camel.len() + 8);
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                name.push('_');
            }
            name.push(c.to_ascii_uppercase());
        }
        name
    }
}

impl fmt::Display for KafkaCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

/// What can go wrong talking to a Kafka cluster.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The broker answered with an error code.
    #[error("{context}: {code}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka {
        /// The error code.
        code: KafkaCode,
        /// What was asked, e.g. `CreateTopics orders`.
        context: String,
        /// The broker's error message, if it sent one.
        message: Option<String>,
    },
    /// The connection failed; requests on it are lost and must be retried on a new one.
    #[error("connection to {broker} failed: {source}")]
    Io {
        /// The broker address.
        broker: String,
        /// Why (shared by every request that was in flight).
        source: Arc<std::io::Error>,
    },
    /// The connection was closed earlier and cannot carry requests any more.
    #[error("connection to {broker} is closed: {reason}")]
    ConnectionClosed {
        /// The broker address.
        broker: String,
        /// Why it was closed.
        reason: String,
    },
    /// A response frame announced a size over the limit or below zero.
    #[error("broker {broker} sent a frame of {size} bytes (limit {limit}); closing the connection")]
    FrameSize {
        /// The broker address.
        broker: String,
        /// The announced size.
        size: i64,
        /// The limit.
        limit: usize,
    },
    /// A request could not be encoded or a response could not be decoded.
    #[error("{api:?} v{version}: {message}")]
    Protocol {
        /// The API.
        api: ApiKey,
        /// The version used.
        version: i16,
        /// What was wrong.
        message: String,
    },
    /// The broker supports no version of an API that we support.
    #[error("broker {broker} supports {api:?} versions {theirs}, Strait needs one of {ours}; upgrade the broker")]
    NoCommonVersion {
        /// The broker address.
        broker: String,
        /// The API.
        api: ApiKey,
        /// Versions Strait speaks.
        ours: String,
        /// Versions the broker speaks (`none` if it does not list the API).
        theirs: String,
    },
    /// No answer in time.
    #[error("{what} timed out after {after_ms} ms")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long we waited.
        after_ms: u64,
    },
    /// None of the bootstrap servers could be reached or the cluster has no such broker.
    #[error("{0}")]
    NoBroker(String),
    /// A client setting (`security.protocol`, `ssl.*`, `sasl.*`, `request.timeout.ms`) is invalid or asks for
    /// something Strait does not support. The message never quotes secret values.
    #[error("{key}: {message}")]
    Config {
        /// The Kafka client key, e.g. `sasl.mechanism`.
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The TLS handshake with a broker failed (untrusted or misnamed certificate, refused
    /// client certificate, not a TLS listener).
    #[error("TLS handshake with broker {broker} failed: {message}; {hint}")]
    Tls {
        /// The broker address.
        broker: String,
        /// What rustls reported.
        message: String,
        /// What to check.
        hint: &'static str,
    },
    /// The broker refused SASL authentication (e.g. SASL_AUTHENTICATION_FAILED for a wrong
    /// password, UNSUPPORTED_SASL_MECHANISM), or the server's SCRAM messages were wrong.
    /// Boxed: it is rare and large, and every `Result` of this crate carries `Error`.
    #[error("{0}")]
    Authentication(Box<AuthenticationFailure>),
    /// No OAUTHBEARER access token could be had: the token endpoint refused the client
    /// credentials, could not be reached, or gave an unusable token.
    #[error("OAUTHBEARER token from {endpoint}: {message}; {hint}")]
    TokenEndpoint {
        /// The token endpoint URL (or the token file).
        endpoint: String,
        /// What went wrong; never the secret or the token.
        message: String,
        /// What to check.
        hint: &'static str,
        /// Whether trying again later may succeed (the endpoint was down, not a refusal).
        retriable: bool,
    },
    /// No AWS credentials for `AWS_MSK_IAM` could be had: no provider had any, STS refused a
    /// role, or an endpoint could not be reached.
    #[error("AWS credentials for AWS_MSK_IAM: {message}; {hint}")]
    AwsCredentials {
        /// What went wrong; never a secret key or session token.
        message: String,
        /// What to check.
        hint: String,
        /// Whether trying again later may succeed (an endpoint was down, not a refusal).
        retriable: bool,
    },
}

/// Why SASL authentication with a broker failed: [`Error::Authentication`].
#[derive(Debug, Clone)]
pub struct AuthenticationFailure {
    /// The broker address.
    pub broker: String,
    /// The SASL mechanism, e.g. `SCRAM-SHA-512`.
    pub mechanism: &'static str,
    /// The user name (never the password).
    pub username: String,
    /// The Kafka error code.
    pub code: KafkaCode,
    /// The broker's (or our SCRAM check's) message.
    pub message: Option<String>,
    /// What to check.
    pub hint: &'static str,
}

impl fmt::Display for AuthenticationFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SASL {} authentication of user `{}` at broker {} failed: {}",
            self.mechanism, self.username, self.broker, self.code
        )?;
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        write!(f, "; {}", self.hint)
    }
}

impl Error {
    /// The Kafka error code, if the broker sent one.
    pub fn kafka_code(&self) -> Option<KafkaCode> {
        match self {
            Error::Kafka { code, .. } => Some(*code),
            Error::Authentication(failure) => Some(failure.code),
            _ => None,
        }
    }

    /// Whether retrying (possibly after refreshing metadata or reconnecting) can succeed.
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Kafka { code, .. } => code.is_retriable(),
            Error::Io { .. } | Error::ConnectionClosed { .. } | Error::Timeout { .. } | Error::NoBroker(_) => true,
            Error::TokenEndpoint { retriable, .. } | Error::AwsCredentials { retriable, .. } => *retriable,
            Error::FrameSize { .. }
            | Error::Protocol { .. }
            | Error::NoCommonVersion { .. }
            | Error::Config { .. }
            | Error::Tls { .. }
            | Error::Authentication(_) => false,
        }
    }

    /// An [`Error::Kafka`] for `code`, for an answer that left out what was asked (a partition
    /// missing from Metadata is UNKNOWN_TOPIC_OR_PARTITION, as the broker would say).
    pub fn kafka(code: ResponseError, context: impl Into<String>) -> Error {
        Error::Kafka {
            code: KafkaCode(code),
            context: context.into(),
            message: None,
        }
    }

    /// Whether the broker answered with `code`.
    pub fn is(&self, code: ResponseError) -> bool {
        self.kafka_code().is_some_and(|c| c.0 == code)
    }

    /// Builds [`Error::Kafka`] from a response's code, or `Ok` for 0.
    pub fn check(code: i16, context: impl FnOnce() -> String, message: Option<&str>) -> Result<(), Error> {
        match KafkaCode::from_code(code) {
            None => Ok(()),
            Some(code) => Err(Error::Kafka {
                code,
                context: context(),
                message: message.map(str::to_owned),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_as_kafka_names_them() {
        let code = KafkaCode::from_code(6).unwrap();
        assert_eq!(code.to_string(), "NOT_LEADER_OR_FOLLOWER (6)");
        assert_eq!(KafkaCode::from_code(3).unwrap().name(), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(KafkaCode::from_code(-1).unwrap().name(), "UNKNOWN_SERVER_ERROR");
        assert_eq!(KafkaCode::from_code(9999).unwrap().name(), "UNKNOWN_CODE_9999");
        assert!(KafkaCode::from_code(0).is_none());
    }

    #[test]
    fn kafka_errors_say_what_was_asked() {
        let err = Error::check(
            36,
            || "CreateTopics orders".into(),
            Some("Topic 'orders' already exists."),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CreateTopics orders: TOPIC_ALREADY_EXISTS (36): Topic 'orders' already exists."
        );
        assert!(!err.is_retriable());
    }

    #[test]
    fn authentication_failures_name_broker_user_code_and_what_to_check() {
        let err = Error::Authentication(Box::new(AuthenticationFailure {
            broker: "b1:9093".into(),
            mechanism: "SCRAM-SHA-512",
            username: "mirror".into(),
            code: KafkaCode::from_code(58).unwrap(),
            message: Some("Authentication failed".into()),
            hint: "check sasl.jaas.config",
        }));
        assert_eq!(
            err.to_string(),
            "SASL SCRAM-SHA-512 authentication of user `mirror` at broker b1:9093 failed: \
             SASL_AUTHENTICATION_FAILED (58): Authentication failed; check sasl.jaas.config"
        );
        assert_eq!(err.kafka_code().unwrap().name(), "SASL_AUTHENTICATION_FAILED");
        assert!(!err.is_retriable());
    }
}
