//! TLS of a connection, configured with the Java client's `ssl.*` keys: JKS, PKCS12
//! (`keystore`) or PEM stores, trust roots, client certificates, protocol versions, host name
//! checks; and TLS failures explained.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::keystore::{read_store, JavaStore, StoreType};
use crate::pem::{parse_pem, PemBlock};
use crate::settings::{config_error, set};
use crate::{Error, Result};

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
