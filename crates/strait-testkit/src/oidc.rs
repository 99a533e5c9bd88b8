//! A small OAuth 2 / OIDC identity provider on loopback, for brokers whose OAUTHBEARER
//! listener validates tokens with Kafka's own validator: a token endpoint that grants
//! client-credentials requests with JWTs signed by a real key (ES256, made at start), and the
//! JWKS endpoint that publishes that key. Real HTTP/1.1 over TCP, one thread per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD as BASE64, URL_SAFE_NO_PAD as BASE64URL};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

use crate::{Error, Result};

/// The `kid` of the signing key, in the tokens' header and in the JWKS.
const KEY_ID: &str = "strait-test-key";

/// A running identity provider. Stops serving when dropped.
#[derive(Debug)]
pub struct OidcServer {
    port: u16,
    state: Arc<State>,
}

#[derive(Debug)]
struct State {
    issuer: String,
    client_id: String,
    client_secret: String,
    lifetime: Duration,
    key: EcdsaKeyPair,
    tokens_issued: AtomicU64,
    stopped: AtomicBool,
}

impl OidcServer {
    /// Starts a provider that knows one client, `client_id` with `client_secret`, and grants it
    /// tokens valid for `lifetime`.
    pub fn start(client_id: &str, client_secret: &str, lifetime: Duration) -> Result<OidcServer> {
        let failed = |what: &str| Error::Io {
            what: "starting the test identity provider:",
            path: what.into(),
            source: std::io::Error::other(what.to_owned()),
        };
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| failed("generating a P-256 key"))?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| failed("reading the P-256 key"))?;
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| Error::Io {
            what: "binding",
            path: "127.0.0.1:0".into(),
            source,
        })?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let state = Arc::new(State {
            issuer: format!("http://127.0.0.1:{port}"),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            lifetime,
            key,
            tokens_issued: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let serving = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if serving.stopped.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(stream) = stream {
                    let state = serving.clone();
                    std::thread::spawn(move || {
                        let _ = serve(&state, stream);
                    });
                }
            }
        });
        Ok(OidcServer { port, state })
    }

    /// The token endpoint: `http://127.0.0.1:<port>/oauth2/token`.
    pub fn token_url(&self) -> String {
        format!("http://127.0.0.1:{}/oauth2/token", self.port)
    }

    /// The JWKS endpoint: `http://127.0.0.1:<port>/oauth2/jwks`.
    pub fn jwks_url(&self) -> String {
        format!("http://127.0.0.1:{}/oauth2/jwks", self.port)
    }

    /// The tokens' `iss` claim.
    pub fn issuer(&self) -> &str {
        &self.state.issuer
    }

    /// The tokens' `aud` claim.
    pub fn audience(&self) -> &'static str {
        "kafka"
    }

    /// The client the provider knows.
    pub fn client_id(&self) -> &str {
        &self.state.client_id
    }

    /// Its secret.
    pub fn client_secret(&self) -> &str {
        &self.state.client_secret
    }

    /// How long a token is valid.
    pub fn token_lifetime(&self) -> Duration {
        self.state.lifetime
    }

    /// How many tokens were granted so far.
    pub fn tokens_issued(&self) -> u64 {
        self.state.tokens_issued.load(Ordering::Relaxed)
    }
}

impl Drop for OidcServer {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answers the requests of one connection.
fn serve(state: &State, stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        let length: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; length.min(64 * 1024)];
        reader.read_exact(&mut body)?;
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let (status, json) = match (method, target.split('?').next().unwrap_or_default()) {
            ("GET", "/oauth2/jwks") => (200, state.jwks()),
            ("POST", "/oauth2/token") => state.grant(header("authorization"), &String::from_utf8_lossy(&body)),
            _ => (404, r#"{"error":"not_found"}"#.to_owned()),
        };
        let close = header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        write!(
            writer,
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\ncache-control: no-store\r\n{}\r\n{json}",
            if status == 200 { "OK" } else { "Error" },
            json.len(),
            if close { "connection: close\r\n" } else { "" }
        )?;
        writer.flush()?;
        if close {
            return Ok(());
        }
    }
}

impl State {
    /// RFC 6749 §4.4: the client authenticates with HTTP Basic; the grant must be
    /// `client_credentials`.
    fn grant(&self, authorization: Option<&str>, form: &str) -> (u16, String) {
        let credentials = authorization
            .and_then(|a| a.strip_prefix("Basic "))
            .and_then(|b| BASE64.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok());
        let expected = format!("{}:{}", self.client_id, self.client_secret);
        if credentials.as_deref() != Some(expected.as_str()) {
            return (
                401,
                r#"{"error":"invalid_client","error_description":"client authentication failed"}"#.into(),
            );
        }
        let fields: Vec<(&str, &str)> = form.split('&').filter_map(|p| p.split_once('=')).collect();
        if !fields.contains(&("grant_type", "client_credentials")) {
            return (400, r#"{"error":"unsupported_grant_type"}"#.into());
        }
        let scope = fields
            .iter()
            .find(|(k, _)| *k == "scope")
            .map_or(String::new(), |(_, v)| v.replace('+', " "));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let number = self.tokens_issued.fetch_add(1, Ordering::Relaxed) + 1;
        let claims = serde_json::json!({
            "iss": self.issuer,
            "aud": "kafka",
            "sub": self.client_id,
            "scope": scope,
            "iat": now,
            "exp": now + self.lifetime.as_secs(),
            "jti": format!("token-{number}"),
        });
        let token = self.sign(&claims);
        (
            200,
            serde_json::json!({
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.lifetime.as_secs(),
            })
            .to_string(),
        )
    }

    /// A compact JWS (RFC 7515) with ES256 (RFC 7518 §3.4: r and s, 32 bytes each).
    fn sign(&self, claims: &serde_json::Value) -> String {
        let header = serde_json::json!({"alg": "ES256", "typ": "JWT", "kid": KEY_ID});
        let input = format!(
            "{}.{}",
            BASE64URL.encode(header.to_string()),
            BASE64URL.encode(claims.to_string())
        );
        let signature = self
            .key
            .sign(&SystemRandom::new(), input.as_bytes())
            .expect("ECDSA signing with the system RNG");
        format!("{input}.{}", BASE64URL.encode(signature.as_ref()))
    }

    /// RFC 7517: the public key as an EC JWK (the uncompressed point is 0x04 ‖ x ‖ y).
    fn jwks(&self) -> String {
        let point = self.key.public_key().as_ref();
        serde_json::json!({"keys": [{
            "kty": "EC",
            "crv": "P-256",
            "x": BASE64URL.encode(&point[1..33]),
            "y": BASE64URL.encode(&point[33..65]),
            "kid": KEY_ID,
            "use": "sig",
            "alg": "ES256",
        }]})
        .to_string()
    }
}
