//! Security of a connection, configured with the Java client's keys: TLS (`SSL`, `SASL_SSL`)
//! with JKS, PKCS12 (`keystore`) or PEM stores, and SASL credentials from `sasl.jaas.config`:
//! a password for `PLAIN`, `SCRAM-SHA-256` and `SCRAM-SHA-512`, tokens for `OAUTHBEARER`
//! (`oauth`), AWS credentials for `AWS_MSK_IAM` (`aws`).
//!
//! Secrets (passwords, private keys) never appear in `Debug` output or in error messages:
//! errors name the key and describe the problem without quoting values.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::aws::{
    msk_iam, Environment, MskIam, CALLBACK_HANDLER as MSK_IAM_CALLBACK_HANDLER, LOGIN_MODULE as MSK_IAM_LOGIN_MODULE,
};
use crate::jaas::parse_jaas_config;
use crate::oauth::{oauth_bearer, OAuthBearer, LOGIN_MODULE as OAUTH_LOGIN_MODULE};
use crate::settings::{config_error, set, Secret};
use crate::tls::{tls_config, TlsConfig};
use crate::Result;

/// A SASL mechanism Strait implements (`sasl.mechanism`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616): username and password in clear, so only over TLS in production.
    Plain,
    /// `SCRAM-SHA-256` (RFC 5802, RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628): an OAuth 2 access token.
    OAuthBearer,
    /// `AWS_MSK_IAM`: a payload signed with AWS credentials (Amazon MSK's IAM access control).
    AwsMskIam,
}

impl SaslMechanism {
    /// The mechanism's name as Kafka spells it.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
            SaslMechanism::AwsMskIam => "AWS_MSK_IAM",
        }
    }
}

/// SASL settings: mechanism and credentials.
#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// What the client proves itself with.
    pub credentials: SaslCredentials,
}

impl SaslConfig {
    /// Who authenticates, for messages: the user name, the OAuth client id, or where the AWS
    /// credentials come from.
    pub fn principal(&self) -> String {
        match &self.credentials {
            SaslCredentials::Password { username, .. } => username.clone(),
            SaslCredentials::OAuthBearer(oauth) => oauth.principal(),
            SaslCredentials::AwsMskIam(iam) => iam.principal(),
        }
    }
}

/// The credentials of a SASL mechanism.
#[derive(Clone)]
pub enum SaslCredentials {
    /// `PLAIN` and SCRAM: a user name and password (`username="…" password="…"`).
    Password {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
        /// SCRAM extensions: the other options of `ScramLoginModule` (e.g. `tokenauth="true"`
        /// for delegation tokens), sent in the client-first message as Kafka's client does.
        extensions: Vec<(String, Secret)>,
    },
    /// `OAUTHBEARER`: tokens shared by every connection made with this configuration.
    OAuthBearer(Arc<OAuthBearer>),
    /// `AWS_MSK_IAM`: AWS credentials shared by every connection made with this configuration.
    AwsMskIam(Arc<MskIam>),
}

impl fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaslCredentials::Password {
                username,
                password,
                extensions,
            } => f
                .debug_struct("Password")
                .field("username", username)
                .field("password", password)
                .field("extensions", &extensions.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .finish(),
            SaslCredentials::OAuthBearer(oauth) => oauth.fmt(f),
            SaslCredentials::AwsMskIam(iam) => iam.fmt(f),
        }
    }
}

/// The security of a connection: TLS or not, SASL or not (`security.protocol`).
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// TLS settings (`SSL`, `SASL_SSL`); `None` for a plain TCP connection.
    pub tls: Option<TlsConfig>,
    /// SASL settings (`SASL_PLAINTEXT`, `SASL_SSL`); `None` without authentication.
    pub sasl: Option<SaslConfig>,
}

impl Security {
    /// Reads the Java client's keys: `security.protocol` (default `PLAINTEXT`), the `ssl.*`
    /// keys for TLS and `sasl.mechanism`/`sasl.jaas.config` for SASL. Files named by
    /// `ssl.*.location` are read now. Other keys are ignored.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Security> {
        let get = |key: &str| props.get(key).map(String::as_str);
        let protocol = get("security.protocol")
            .unwrap_or("PLAINTEXT")
            .trim()
            .to_ascii_uppercase();
        let (tls, sasl) = match protocol.as_str() {
            "PLAINTEXT" => (false, false),
            "SSL" => (true, false),
            "SASL_PLAINTEXT" => (false, true),
            "SASL_SSL" => (true, true),
            _ => {
                return Err(config_error(
                    "security.protocol",
                    "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                ))
            }
        };
        Ok(Security {
            tls: if tls { Some(tls_config(&get)?) } else { None },
            sasl: if sasl { Some(sasl_config(&get)?) } else { None },
        })
    }
}

fn sasl_config<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<SaslConfig> {
    // Kafka's default mechanism is GSSAPI (Kerberos).
    let mechanism = match get("sasl.mechanism").map(str::trim).unwrap_or("GSSAPI") {
        "PLAIN" => SaslMechanism::Plain,
        "SCRAM-SHA-256" => SaslMechanism::ScramSha256,
        "SCRAM-SHA-512" => SaslMechanism::ScramSha512,
        "OAUTHBEARER" => SaslMechanism::OAuthBearer,
        "AWS_MSK_IAM" => SaslMechanism::AwsMskIam,
        other => {
            return Err(config_error(
                "sasl.mechanism",
                format!(
                    "{} is not supported (Strait speaks PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER and AWS_MSK_IAM){}",
                    if other.is_empty() { "an empty value" } else { other },
                    if get("sasl.mechanism").is_none() {
                        "; it defaults to GSSAPI (Kerberos) when unset, so set it"
                    } else {
                        ""
                    }
                ),
            ))
        }
    };
    // OAUTHBEARER's login callback handler is Kafka's own, read by `oauth`, and AWS_MSK_IAM's
    // client callback handler is aws-msk-iam-auth's, whose work `aws` does; any other class is
    // Java code Strait cannot run.
    let classes: &[&str] = match mechanism {
        SaslMechanism::OAuthBearer => &["sasl.login.class", "sasl.client.callback.handler.class"],
        SaslMechanism::AwsMskIam => {
            let handler = set(get, "sasl.client.callback.handler.class").map(str::trim);
            if handler.is_some_and(|h| h != MSK_IAM_CALLBACK_HANDLER) {
                return Err(config_error(
                    "sasl.client.callback.handler.class",
                    format!("custom Java classes are not supported; for AWS_MSK_IAM use {MSK_IAM_CALLBACK_HANDLER}"),
                ));
            }
            &["sasl.login.class", "sasl.login.callback.handler.class"]
        }
        _ => &[
            "sasl.login.class",
            "sasl.login.callback.handler.class",
            "sasl.client.callback.handler.class",
        ],
    };
    for &key in classes {
        if set(get, key).is_some() {
            return Err(config_error(
                key,
                "custom Java classes are not supported; Strait reads the credentials from sasl.jaas.config",
            ));
        }
    }
    let (example_module, example_options) = match mechanism {
        SaslMechanism::Plain => (
            "org.apache.kafka.common.security.plain.PlainLoginModule",
            " username=\"…\" password=\"…\"",
        ),
        SaslMechanism::OAuthBearer => (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
            " clientId=\"…\" clientSecret=\"…\"",
        ),
        SaslMechanism::AwsMskIam => ("software.amazon.msk.auth.iam.IAMLoginModule", ""),
        _ => (
            "org.apache.kafka.common.security.scram.ScramLoginModule",
            " username=\"…\" password=\"…\"",
        ),
    };
    let jaas = get("sasl.jaas.config")
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| {
            config_error(
                "sasl.jaas.config",
                format!(
                    "is required for SASL {}: e.g. `{example_module} required{example_options};`",
                    mechanism.name(),
                ),
            )
        })?;
    let entry = parse_jaas_config(jaas).map_err(|message| config_error("sasl.jaas.config", message))?;
    let module = entry.module.rsplit('.').next().unwrap_or_default();
    // Kafka's PLAIN and SCRAM clients take the user name and password from either module.
    let fits = match mechanism {
        SaslMechanism::OAuthBearer => module == OAUTH_LOGIN_MODULE,
        SaslMechanism::AwsMskIam => module == MSK_IAM_LOGIN_MODULE,
        _ => matches!(module, "PlainLoginModule" | "ScramLoginModule"),
    };
    if !fits {
        return Err(config_error(
            "sasl.jaas.config",
            format!(
                "login module {} does not serve SASL {}; use {example_module}",
                entry.module,
                mechanism.name()
            ),
        ));
    }
    if mechanism == SaslMechanism::AwsMskIam {
        let iam = msk_iam(&entry.options, Environment::of_process())?;
        return Ok(SaslConfig {
            mechanism,
            credentials: SaslCredentials::AwsMskIam(Arc::new(iam)),
        });
    }
    if mechanism == SaslMechanism::OAuthBearer {
        let oauth = oauth_bearer(get, &entry.options)?;
        return Ok(SaslConfig {
            mechanism,
            credentials: SaslCredentials::OAuthBearer(Arc::new(oauth)),
        });
    }
    let mut username = None;
    let mut password = None;
    let mut extensions = Vec::new();
    for (key, value) in entry.options {
        match key.as_str() {
            "username" => username = Some(value),
            "password" => password = Some(Secret::new(value)),
            // Kafka's ScramLoginModule sends its other options as SCRAM extensions; PLAIN has none.
            _ if module == "ScramLoginModule" => extensions.push((key, Secret::new(value))),
            _ => {}
        }
    }
    let missing = |option| config_error("sasl.jaas.config", format!("has no {option}=\"…\" option"));
    Ok(SaslConfig {
        mechanism,
        credentials: SaslCredentials::Password {
            username: username.ok_or_else(|| missing("username"))?,
            password: password.ok_or_else(|| missing("password"))?,
            extensions,
        },
    })
}

#[cfg(test)]
mod tests {
    use rustls_pki_types::ServerName;

    use super::*;
    use crate::Error;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn config_key(result: Result<Security>) -> (String, String) {
        match result {
            Err(Error::Config { key, message }) => (key, message),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    const JAAS: &str =
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pa ss\"word";"#;

    #[test]
    fn plaintext_by_default() {
        let security = Security::from_properties(&props(&[])).unwrap();
        assert!(security.tls.is_none() && security.sasl.is_none());
        let (key, _) = config_key(Security::from_properties(&props(&[("security.protocol", "TLS")])));
        assert_eq!(key, "security.protocol");
    }

    #[test]
    fn sasl_scram_from_jaas() {
        let security = Security::from_properties(&props(&[
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", JAAS),
        ]))
        .unwrap();
        let sasl = security.sasl.unwrap();
        assert_eq!(sasl.mechanism, SaslMechanism::ScramSha512);
        let SaslCredentials::Password { username, password, .. } = &sasl.credentials else {
            panic!("SCRAM has a password");
        };
        assert_eq!(username, "alice");
        assert_eq!(password.expose(), "pa ss\"word");
        let debug = format!("{sasl:?}");
        assert!(!debug.contains("pa ss"), "{debug}");
        assert!(debug.contains("[hidden]"), "{debug}");
    }

    #[test]
    fn unsupported_mechanisms_name_the_key() {
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.jaas.config", JAAS),
        ])));
        assert_eq!(key, "sasl.mechanism");
        assert!(message.contains("GSSAPI"), "{message}");
        for mechanism in ["GSSAPI", "AWS_MSK_IAM_V2"] {
            let (key, message) = config_key(Security::from_properties(&props(&[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", mechanism),
                ("sasl.jaas.config", JAAS),
            ])));
            assert_eq!(key, "sasl.mechanism");
            assert!(message.contains("not supported"), "{message}");
        }
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;",
            ),
        ])));
        assert_eq!(key, "sasl.jaas.config");
        assert!(message.contains("Krb5LoginModule"), "{message}");
    }

    #[test]
    fn missing_password_is_named_without_values() {
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"bob\";",
            ),
        ])));
        assert_eq!(key, "sasl.jaas.config");
        assert!(message.contains("password"), "{message}");
    }

    #[test]
    fn java_stores_are_read_as_kafka_reads_them_and_other_types_refused() {
        // JKS is Kafka's default type: an untyped trust store is read as one.
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", "/nonexistent/truststore.jks"),
            ("ssl.truststore.password", "changeit"),
        ])));
        assert_eq!(key, "ssl.truststore.location");
        assert!(
            message.contains("cannot read `/nonexistent/truststore.jks`"),
            "{message}"
        );
        assert!(!message.contains("changeit"));
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", "/etc/kafka/keystore.p12"),
        ])));
        assert_eq!(key, "ssl.keystore.password");
        assert!(message.contains("required to read the PKCS12 key store"), "{message}");
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "JCEKS"),
            ("ssl.truststore.location", "/etc/kafka/truststore.jceks"),
        ])));
        assert_eq!(key, "ssl.truststore.type");
        assert!(message.contains("JKS (Kafka's default), PKCS12 and PEM"), "{message}");
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----"),
        ])));
        assert_eq!(key, "ssl.truststore.type");
        assert!(message.contains("set ssl.truststore.type=PEM"), "{message}");
    }

    #[test]
    fn pem_store_errors() {
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/nonexistent/ca.pem"),
        ])));
        assert_eq!(key, "ssl.truststore.location");
        assert!(message.contains("cannot read `/nonexistent/ca.pem`"), "{message}");
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", "not a certificate"),
        ])));
        assert_eq!(key, "ssl.truststore.certificates");
        assert!(message.contains("no PEM certificate"), "{message}");
        let (key, _) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", "x"),
            ("ssl.truststore.location", "y"),
        ])));
        assert_eq!(key, "ssl.truststore.certificates");
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.type", "PEM"),
            (
                "ssl.keystore.key",
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
            ),
            (
                "ssl.keystore.certificate.chain",
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
            ),
        ])));
        assert_eq!(key, "ssl.keystore.key");
        assert!(
            message.contains("encrypted") && message.contains("openssl pkcs8"),
            "{message}"
        );
        let (key, message) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/nonexistent/key.pem"),
            ("ssl.key.password", "hunter2"),
        ])));
        assert_eq!(key, "ssl.keystore.location");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn hostname_check_can_be_turned_off() {
        let on = Security::from_properties(&props(&[("security.protocol", "SSL")])).unwrap();
        assert!(on.tls.unwrap().verify_hostname());
        let off = Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.endpoint.identification.algorithm", ""),
        ]))
        .unwrap();
        assert!(!off.tls.unwrap().verify_hostname());
        let (key, _) = config_key(Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.endpoint.identification.algorithm", "ldap"),
        ])));
        assert_eq!(key, "ssl.endpoint.identification.algorithm");
    }

    #[test]
    fn server_names() {
        assert!(matches!(
            TlsConfig::server_name("localhost:9093").unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            TlsConfig::server_name("127.0.0.1:9093").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            TlsConfig::server_name("[::1]:9093").unwrap(),
            ServerName::IpAddress(_)
        ));
    }
}
