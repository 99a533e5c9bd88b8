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

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::aws::{
    msk_iam, Environment, MskIam, CALLBACK_HANDLER as MSK_IAM_CALLBACK_HANDLER, LOGIN_MODULE as MSK_IAM_LOGIN_MODULE,
};
use crate::jaas::parse_jaas_config;
use crate::keystore::{read_store, JavaStore, StoreType};
use crate::oauth::{oauth_bearer, OAuthBearer, LOGIN_MODULE as OAUTH_LOGIN_MODULE};
use crate::pem::{parse_pem, PemBlock};
use crate::{Error, Result};

/// A secret value (a password). Its `Debug` output is `[hidden]` and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value, for the code that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

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

/// TLS settings: a rustls client configuration built from the `ssl.*` keys.
#[derive(Clone)]
pub struct TlsConfig {
    config: Arc<rustls::ClientConfig>,
    verify_hostname: bool,
    client_certificate: bool,
    custom_trust: bool,
}

impl fmt::Debug for TlsConfig {
    // rustls' own Debug would print the client's key material handle; say only what matters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("verify_hostname", &self.verify_hostname)
            .field("client_certificate", &self.client_certificate)
            .field("custom_trust", &self.custom_trust)
            .finish()
    }
}

impl TlsConfig {
    /// Whether the broker's certificate must name the host we connect to
    /// (`ssl.endpoint.identification.algorithm=https`, Kafka's default).
    pub fn verify_hostname(&self) -> bool {
        self.verify_hostname
    }

    /// The rustls configuration.
    pub fn rustls(&self) -> &Arc<rustls::ClientConfig> {
        &self.config
    }

    /// The name the broker's certificate is checked against: the host part of `host:port`.
    pub(crate) fn server_name(broker: &str) -> Result<ServerName<'static>> {
        let host = broker.rsplit_once(':').map_or(broker, |(host, _)| host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        ServerName::try_from(host.to_owned()).map_err(|_| Error::Tls {
            broker: broker.into(),
            message: "the host is neither a DNS name nor an IP address".into(),
            hint: "check bootstrap.servers and the brokers' advertised.listeners",
        })
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

pub(crate) fn config_error(key: &str, message: impl Into<String>) -> Error {
    Error::Config {
        key: key.into(),
        message: message.into(),
    }
}

/// A value that is set and not blank (Kafka treats blank store locations as unset).
pub(crate) fn set<'a>(get: &impl Fn(&str) -> Option<&'a str>, key: &str) -> Option<&'a str> {
    get(key).filter(|v| !v.trim().is_empty())
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

/// A store's type, as `ssl.truststore.type` or `ssl.keystore.type` says: Kafka's default is JKS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    Pem,
    Java(StoreType),
}

fn store_kind<'a>(get: &impl Fn(&str) -> Option<&'a str>, key: &str) -> Result<StoreKind> {
    match get(key).map(str::trim).filter(|k| !k.is_empty()).unwrap_or("JKS") {
        k if k.eq_ignore_ascii_case("PEM") => Ok(StoreKind::Pem),
        k if k.eq_ignore_ascii_case("JKS") => Ok(StoreKind::Java(StoreType::Jks)),
        k if k.eq_ignore_ascii_case("PKCS12") => Ok(StoreKind::Java(StoreType::Pkcs12)),
        other => Err(config_error(
            key,
            format!("is {other}; Strait reads JKS (Kafka's default), PKCS12 and PEM stores"),
        )),
    }
}

/// Inline certificates and keys (`ssl.truststore.certificates`, `ssl.keystore.key`) are PEM,
/// and Kafka wants the store type to say so.
fn require_pem<'a>(get: &impl Fn(&str) -> Option<&'a str>, type_key: &str, inline_key: &str) -> Result<()> {
    match store_kind(get, type_key)? {
        StoreKind::Pem => Ok(()),
        StoreKind::Java(kind) => Err(config_error(
            type_key,
            format!(
                "is {}, but {inline_key} holds PEM text: set {type_key}=PEM",
                kind.name()
            ),
        )),
    }
}

/// Reads the Java store of `kind` at `path` (named by `key`), with its passwords.
fn read_java_store(
    key: &str,
    path: &str,
    kind: StoreType,
    store_password: Option<&str>,
    key_password: Option<&str>,
) -> Result<JavaStore> {
    let path = path.trim();
    let bytes = std::fs::read(path).map_err(|e| config_error(key, format!("cannot read `{path}`: {e}")))?;
    read_store(kind, &bytes, store_password, key_password)
        .map_err(|message| config_error(key, format!("`{path}` ({} store): {message}", kind.name())))
}

fn read_text(key: &str, path: &str) -> Result<String> {
    std::fs::read_to_string(path.trim()).map_err(|e| config_error(key, format!("cannot read `{}`: {e}", path.trim())))
}

fn certificates(key: &str, blocks: &[PemBlock]) -> Result<Vec<CertificateDer<'static>>> {
    let certificates: Vec<_> = blocks
        .iter()
        .filter(|b| b.label == "CERTIFICATE")
        .map(|b| CertificateDer::from(b.der.clone()))
        .collect();
    if certificates.is_empty() {
        return Err(config_error(
            key,
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(certificates)
}

/// The one private key of a PEM key store.
fn private_key(key: &str, blocks: &[PemBlock]) -> Result<PrivateKeyDer<'static>> {
    let mut keys = Vec::new();
    for block in blocks {
        let der = block.der.clone();
        match block.label.as_str() {
            "PRIVATE KEY" if !block.encrypted => keys.push(PrivateKeyDer::Pkcs8(der.into())),
            "RSA PRIVATE KEY" if !block.encrypted => keys.push(PrivateKeyDer::Pkcs1(der.into())),
            "EC PRIVATE KEY" if !block.encrypted => keys.push(PrivateKeyDer::Sec1(der.into())),
            "ENCRYPTED PRIVATE KEY" | "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => {
                return Err(config_error(key, encrypted_key_message()))
            }
            _ => {}
        }
    }
    match keys.len() {
        1 => Ok(keys.remove(0)),
        0 => Err(config_error(
            key,
            "holds no PEM private key (-----BEGIN PRIVATE KEY-----)",
        )),
        n => Err(config_error(key, format!("holds {n} private keys; expected one"))),
    }
}

fn encrypted_key_message() -> String {
    "encrypted private keys are not supported; decrypt the key, e.g. \
     `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-plain.pem`, and leave ssl.key.password unset"
        .into()
}

fn trust_roots<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<(RootCertStore, bool)> {
    let location = set(get, "ssl.truststore.location");
    let inline = set(get, "ssl.truststore.certificates");
    let password = set(get, "ssl.truststore.password");
    let (key, pem) = match (location, inline) {
        (Some(_), Some(_)) => {
            return Err(config_error(
                "ssl.truststore.certificates",
                "is set together with ssl.truststore.location; set one of them",
            ))
        }
        (None, None) => {
            if password.is_some() {
                return Err(config_error(
                    "ssl.truststore.password",
                    "is set but no trust store is (ssl.truststore.location)",
                ));
            }
            // Like Java's default trust store: the well-known public CAs.
            let roots = RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            return Ok((roots, false));
        }
        (Some(path), None) => match store_kind(get, "ssl.truststore.type")? {
            StoreKind::Pem => ("ssl.truststore.location", read_text("ssl.truststore.location", path)?),
            StoreKind::Java(kind) => {
                let store = read_java_store("ssl.truststore.location", path, kind, password, None)?;
                if store.trusted.is_empty() {
                    return Err(config_error(
                        "ssl.truststore.location",
                        format!(
                            "`{}` holds no trusted certificate entry (import the CA with keytool -importcert)",
                            path.trim()
                        ),
                    ));
                }
                return add_roots("ssl.truststore.location", store.trusted);
            }
        },
        (None, Some(pem)) => {
            require_pem(get, "ssl.truststore.type", "ssl.truststore.certificates")?;
            ("ssl.truststore.certificates", pem.to_owned())
        }
    };
    if password.is_some() {
        return Err(config_error(
            "ssl.truststore.password",
            "must not be set for a PEM trust store (Kafka refuses it too)",
        ));
    }
    let blocks = parse_pem(&pem).map_err(|message| config_error(key, message))?;
    add_roots(key, certificates(key, &blocks)?)
}

fn add_roots(key: &str, certificates: Vec<CertificateDer<'static>>) -> Result<(RootCertStore, bool)> {
    let mut roots = RootCertStore::empty();
    for (i, certificate) in certificates.into_iter().enumerate() {
        roots
            .add(certificate)
            .map_err(|e| config_error(key, format!("certificate #{}: {e}", i + 1)))?;
    }
    Ok((roots, true))
}

type ClientCertificate = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn client_certificate<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<Option<ClientCertificate>> {
    let location = set(get, "ssl.keystore.location");
    let key = set(get, "ssl.keystore.key");
    let chain = set(get, "ssl.keystore.certificate.chain");
    let store_password = set(get, "ssl.keystore.password");
    let key_password = set(get, "ssl.key.password");
    let (key_name, key_pem, chain_name, chain_pem) = match (location, key, chain) {
        (None, None, None) => {
            if store_password.is_some() {
                return Err(config_error(
                    "ssl.keystore.password",
                    "is set but no key store is (ssl.keystore.location)",
                ));
            }
            return Ok(None);
        }
        (Some(_), Some(_), _) => {
            return Err(config_error(
                "ssl.keystore.key",
                "is set together with ssl.keystore.location; set one of them",
            ))
        }
        (_, Some(_), None) => {
            return Err(config_error(
                "ssl.keystore.certificate.chain",
                "is required with ssl.keystore.key",
            ))
        }
        (_, None, Some(_)) => {
            return Err(config_error(
                "ssl.keystore.key",
                "is required with ssl.keystore.certificate.chain",
            ))
        }
        (Some(path), None, None) => match store_kind(get, "ssl.keystore.type")? {
            StoreKind::Pem => {
                let pem = read_text("ssl.keystore.location", path)?;
                ("ssl.keystore.location", pem.clone(), "ssl.keystore.location", pem)
            }
            StoreKind::Java(kind) => {
                if store_password.is_none() {
                    return Err(config_error(
                        "ssl.keystore.password",
                        format!(
                            "is required to read the {} key store at ssl.keystore.location",
                            kind.name()
                        ),
                    ));
                }
                let mut store = read_java_store("ssl.keystore.location", path, kind, store_password, key_password)?;
                return match store.keys.len() {
                    1 => {
                        let (_, chain, key) = store.keys.remove(0);
                        Ok(Some((chain, key)))
                    }
                    0 => Err(config_error(
                        "ssl.keystore.location",
                        format!("`{}` holds no private key entry", path.trim()),
                    )),
                    _ => {
                        let aliases: Vec<&str> = store.keys.iter().map(|(alias, _, _)| alias.as_str()).collect();
                        Err(config_error(
                            "ssl.keystore.location",
                            format!(
                                "`{}` holds {} private keys ({}); Strait needs exactly one",
                                path.trim(),
                                aliases.len(),
                                aliases.join(", ")
                            ),
                        ))
                    }
                };
            }
        },
        (None, Some(key), Some(chain)) => {
            require_pem(get, "ssl.keystore.type", "ssl.keystore.key")?;
            (
                "ssl.keystore.key",
                key.to_owned(),
                "ssl.keystore.certificate.chain",
                chain.to_owned(),
            )
        }
    };
    if store_password.is_some() {
        return Err(config_error(
            "ssl.keystore.password",
            "must not be set for a PEM key store (Kafka refuses it too)",
        ));
    }
    if key_password.is_some() {
        return Err(config_error("ssl.key.password", encrypted_key_message()));
    }
    let key_blocks = parse_pem(&key_pem).map_err(|message| config_error(key_name, message))?;
    let chain_blocks = parse_pem(&chain_pem).map_err(|message| config_error(chain_name, message))?;
    Ok(Some((
        certificates(chain_name, &chain_blocks)?,
        private_key(key_name, &key_blocks)?,
    )))
}

fn protocol_versions<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>> {
    let Some(value) = set(get, "ssl.enabled.protocols") else {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    };
    let mut versions = Vec::new();
    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "TLSv1.3" => versions.push(&rustls::version::TLS13),
            "TLSv1.2" => versions.push(&rustls::version::TLS12),
            other => {
                return Err(config_error(
                    "ssl.enabled.protocols",
                    format!("{other} is not supported; Strait speaks TLSv1.2 and TLSv1.3"),
                ))
            }
        }
    }
    if versions.is_empty() {
        return Err(config_error("ssl.enabled.protocols", "names no protocol"));
    }
    Ok(versions)
}

pub(crate) fn tls_config<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<TlsConfig> {
    let verify_hostname = match get("ssl.endpoint.identification.algorithm").map(str::trim) {
        None => true,
        Some("") => false,
        Some(v) if v.eq_ignore_ascii_case("https") => true,
        Some(other) => {
            return Err(config_error(
                "ssl.endpoint.identification.algorithm",
                format!("{other} is not supported; use https (check the host name) or an empty value (don't)"),
            ))
        }
    };
    if set(get, "ssl.engine.factory.class").is_some() {
        return Err(config_error(
            "ssl.engine.factory.class",
            "custom Java classes are not supported",
        ));
    }
    if set(get, "ssl.cipher.suites").is_some() {
        tracing::warn!("ssl.cipher.suites is ignored: Strait uses rustls' safe default cipher suites");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (roots, custom_trust) = trust_roots(get)?;
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| config_error("ssl.truststore.location", e.to_string()))?;
    let verifier: Arc<dyn ServerCertVerifier> = if verify_hostname {
        verifier
    } else {
        Arc::new(AnyHostname(verifier))
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&protocol_versions(get)?)
        .map_err(|e| config_error("ssl.enabled.protocols", e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let client = client_certificate(get)?;
    let client_certificate = client.is_some();
    let config = match client {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| config_error("ssl.keystore.location", format!("unusable key and certificate: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    Ok(TlsConfig {
        config: Arc::new(config),
        verify_hostname,
        client_certificate,
        custom_trust,
    })
}

/// Checks the chain as usual but accepts a certificate that does not name the host:
/// `ssl.endpoint.identification.algorithm=` (empty). webpki checks the chain before the name,
/// so a name error means the chain itself was trusted.
#[derive(Debug)]
struct AnyHostname(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Turns a TLS handshake failure into an error that says what to check.
pub(crate) fn tls_error(broker: &str, error: std::io::Error) -> Error {
    let Some(tls) = error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) else {
        return Error::Io {
            broker: broker.into(),
            source: Arc::new(error),
        };
    };
    use rustls::AlertDescription as Alert;
    let hint = match tls {
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName)
        | rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            "the broker's certificate does not name the host connected to; use a host name the certificate \
             lists (bootstrap.servers, the brokers' advertised.listeners), or set \
             ssl.endpoint.identification.algorithm= (empty) to skip the host name check"
        }
        rustls::Error::InvalidCertificate(_) => {
            "the broker's certificate is not trusted; ssl.truststore.location or ssl.truststore.certificates \
             must hold the CA that signed it"
        }
        rustls::Error::AlertReceived(Alert::CertificateRequired | Alert::BadCertificate | Alert::UnknownCA) => {
            "the broker refused our client certificate or wants one (ssl.client.auth=required); check \
             ssl.keystore.location or ssl.keystore.key and ssl.keystore.certificate.chain"
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the broker did not answer with TLS; check that security.protocol matches the listener"
        }
        _ => "check the ssl.* settings and the listener's security protocol",
    };
    Error::Tls {
        broker: broker.into(),
        message: tls.to_string(),
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
