//! SASL OAUTHBEARER (RFC 7628) as Kafka's clients do it (KIP-255, KIP-768, KIP-1139): an access
//! token from an OAuth 2 / OIDC token endpoint with the client-credentials grant, from a file,
//! or from Kafka's unsecured development handler; shared by every connection of one client
//! configuration and fetched again once past its refresh time, which Kafka's refresh window
//! (`sasl.login.refresh.*`) places before it expires.
//!
//! A token is fetched when a connection authenticates or re-authenticates (KIP-368) and the one
//! held is past its refresh time, not by a timer: the broker ends a session no later than its
//! token expires, so connections re-authenticate before that and take the fresh token then.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD as BASE64, URL_SAFE_NO_PAD as BASE64URL};
use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Map, Value};

use crate::endpoint::Endpoint;
use crate::settings::{config_error, set, Secret};
use crate::tls::tls_config;
use crate::{Backoff, Error, Result};

/// Kafka's OAUTHBEARER login module, the one `sasl.jaas.config` must name.
pub(crate) const LOGIN_MODULE: &str = "OAuthBearerLoginModule";

/// Kafka's login callback handler that fetches tokens from `sasl.oauthbearer.token.endpoint.url`.
const LOGIN_CALLBACK_HANDLERS: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    // Its name in Kafka 3.1 to 3.9, still accepted by Kafka 4.
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];

/// Where tokens come from.
enum TokenSource {
    /// POST the client credentials to a token endpoint (`sasl.oauthbearer.token.endpoint.url`).
    ClientCredentials(Box<ClientCredentials>),
    /// Read the token from a file (a `file:` token endpoint URL), as Kafka's `FileJwtRetriever`.
    File(PathBuf),
    /// Build an unsigned token (Kafka's `OAuthBearerUnsecuredLoginCallbackHandler`): for
    /// development brokers that use the unsecured validator.
    Unsecured(Unsecured),
}

struct ClientCredentials {
    url: http::Uri,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    /// `sasl.oauthbearer.header.urlencode`: URL-encode the id and secret (RFC 6749 §2.3.1).
    urlencode: bool,
    /// Its TLS (for an `https` endpoint: from the `ssl.*` options of `sasl.jaas.config`) and
    /// timeouts.
    endpoint: Endpoint,
    retry_backoff: Duration,
    retry_backoff_max: Duration,
}

struct Unsecured {
    claims: Map<String, Value>,
    /// `unsecuredLoginPrincipalClaimName`: the claim naming the principal.
    principal_claim: String,
    lifetime: Duration,
}

/// Kafka's refresh window (`sasl.login.refresh.*`).
#[derive(Debug, Clone, Copy)]
struct RefreshWindow {
    factor: f64,
    jitter: f64,
    min_period_ms: i64,
    buffer_ms: i64,
}

/// OAUTHBEARER credentials: where tokens come from, the SASL extensions sent with them, and the
/// token held now. Shared (in an `Arc`) by every connection made with one configuration.
pub struct OAuthBearer {
    source: TokenSource,
    refresh: RefreshWindow,
    sub_claim: String,
    extensions: Vec<(String, Secret)>,
    current: tokio::sync::Mutex<Option<Token>>,
}

impl std::fmt::Debug for OAuthBearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthBearer")
            .field("principal", &self.principal())
            .field(
                "extensions",
                &self.extensions.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// An access token and what the client read from it.
#[derive(Clone)]
pub(crate) struct Token {
    /// The token as the broker gets it.
    pub value: Secret,
    /// Its principal (`sub`, or `sasl.oauthbearer.sub.claim.name`).
    pub principal: String,
    expires_ms: i64,
    refresh_ms: i64,
}

impl OAuthBearer {
    /// Who authenticates, for messages: the client id, the token file, or the unsecured
    /// token's principal.
    pub(crate) fn principal(&self) -> String {
        match &self.source {
            TokenSource::ClientCredentials(c) => c.client_id.clone(),
            TokenSource::File(path) => format!("token file {}", path.display()),
            TokenSource::Unsecured(u) => u
                .claims
                .get(&u.principal_claim)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// The token to authenticate with now: the one held, unless it is past its refresh time;
    /// then a new one (and if getting it fails, the old one while it has not expired, as
    /// Kafka's clients keep theirs).
    pub(crate) async fn token(&self) -> Result<Token> {
        let mut current = self.current.lock().await;
        let now = now_ms();
        if let Some(token) = current.as_ref().filter(|t| now < t.refresh_ms) {
            return Ok(token.clone());
        }
        match self.retrieve(now).await {
            Ok(token) => {
                tracing::debug!(principal = %token.principal, expires_ms = token.expires_ms, "fetched an OAUTHBEARER token");
                *current = Some(token.clone());
                Ok(token)
            }
            Err(error) => match current.as_ref().filter(|t| now_ms() < t.expires_ms) {
                Some(token) => {
                    tracing::warn!(%error, "refreshing the OAUTHBEARER token failed; the current one is used until it expires");
                    Ok(token.clone())
                }
                None => Err(error),
            },
        }
    }

    async fn retrieve(&self, now: i64) -> Result<Token> {
        let (jwt, from) = match &self.source {
            TokenSource::ClientCredentials(c) => (c.retrieve().await?, c.url.to_string()),
            TokenSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    config_error(
                        "sasl.oauthbearer.token.endpoint.url",
                        format!("cannot read the token file {}: {e}", path.display()),
                    )
                })?;
                (text.trim().to_owned(), format!("file {}", path.display()))
            }
            TokenSource::Unsecured(u) => (u.token(now), "the unsecured login handler".into()),
        };
        let claims = read_jwt(&jwt, &self.sub_claim).map_err(|message| Error::TokenEndpoint {
            endpoint: from.clone(),
            message: format!("the access token is unusable: {message}"),
            hint: "check the identity provider's token format (a JWT with exp and sub claims) and sasl.oauthbearer.sub.claim.name",
            retriable: false,
        })?;
        if claims.expires_ms <= now {
            return Err(Error::TokenEndpoint {
                endpoint: from,
                message: "the access token has already expired".into(),
                hint: "check the clocks of this host and of the identity provider",
                retriable: true,
            });
        }
        let refresh_ms = self
            .refresh
            .refresh_time(now, claims.issued_ms, claims.expires_ms, random_fraction());
        Ok(Token {
            value: Secret::new(jwt),
            principal: claims.principal,
            expires_ms: claims.expires_ms,
            refresh_ms,
        })
    }

    /// The client's first and only SASL message (RFC 7628 §3.1, no authorization id):
    /// `n,,^Aauth=Bearer <token>^A<extension>=<value>^A…^A^A`.
    pub(crate) fn initial_response(&self, token: &Token) -> Vec<u8> {
        let mut message = format!("n,,\x01auth=Bearer {}", token.value.expose());
        for (key, value) in &self.extensions {
            message.push('\x01');
            message.push_str(key);
            message.push('=');
            message.push_str(value.expose());
        }
        message.push_str("\x01\x01");
        message.into_bytes()
    }
}

impl ClientCredentials {
    /// Kafka's `ClientCredentialsJwtRetriever`: POST `grant_type=client_credentials` with the
    /// id and secret in a Basic authorization header; retry I/O errors and 5xx answers with an
    /// exponential backoff for at most `sasl.login.retry.backoff.max.ms`, not 4xx answers.
    async fn retrieve(&self) -> Result<String> {
        let deadline = tokio::time::Instant::now() + self.retry_backoff_max;
        let mut backoff = Backoff::new(self.retry_backoff, self.retry_backoff_max);
        loop {
            match self.request().await {
                Ok(token) => return Ok(token),
                Err(error @ Error::TokenEndpoint { retriable: false, .. }) => return Err(error),
                Err(error) => {
                    let delay = backoff.next_delay();
                    if tokio::time::Instant::now() + delay > deadline {
                        return Err(error);
                    }
                    tracing::debug!(%error, ?delay, "retrying the token endpoint");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    fn failed(&self, message: String, retriable: bool) -> Error {
        Error::TokenEndpoint {
            endpoint: self.url.to_string(),
            message,
            hint: if retriable {
                "check that the token endpoint is up and reachable from this host"
            } else {
                "check clientId, clientSecret and scope in sasl.jaas.config (or sasl.oauthbearer.client.credentials.*) against the identity provider"
            },
            retriable,
        }
    }

    async fn request(&self) -> Result<String> {
        let (id, secret, scope) = if self.urlencode {
            let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            (
                encode(&self.client_id),
                encode(self.client_secret.expose()),
                self.scope.as_deref().map(encode),
            )
        } else {
            (
                self.client_id.clone(),
                self.client_secret.expose().to_owned(),
                self.scope.clone(),
            )
        };
        let mut body = "grant_type=client_credentials".to_owned();
        if let Some(scope) = scope {
            body.push_str("&scope=");
            body.push_str(&scope);
        }
        let path = self.url.path_and_query().map_or("/", |p| p.as_str());
        let request = http::Request::post(path)
            .header(http::header::HOST, self.url.authority().map_or("", |a| a.as_str()))
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::AUTHORIZATION,
                format!("Basic {}", BASE64.encode(format!("{id}:{secret}"))),
            )
            .header(http::header::CACHE_CONTROL, "no-cache")
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| self.failed(format!("cannot build the request: {e}"), false))?;
        let (status, body) = self
            .endpoint
            .send(&self.url, request)
            .await
            .map_err(|f| self.failed(f.message, f.retriable))?;
        let json: Option<Map<String, Value>> = serde_json::from_slice(&body).ok();
        let field = |name: &str| json.as_ref().and_then(|j| j.get(name)).and_then(Value::as_str);
        if !(200..300).contains(&status) {
            // RFC 6749 §5.2: `error` and `error_description` say why; the body is not quoted
            // otherwise, as it might echo a credential.
            let why = match (field("error"), field("error_description")) {
                (Some(error), Some(description)) => format!(": {error} ({description})"),
                (Some(error), None) => format!(": {error}"),
                _ => String::new(),
            };
            return Err(self.failed(format!("answered HTTP {status}{why}"), status >= 500 || status == 429));
        }
        match field("access_token").map(str::trim).filter(|t| !t.is_empty()) {
            Some(token) => Ok(token.to_owned()),
            None => Err(self.failed("answered without an access_token in a JSON object".into(), false)),
        }
    }
}

impl Unsecured {
    /// An unsigned JWT (`alg: none`) with the configured claims, `iat` now and `exp` after
    /// the configured lifetime, as Kafka's unsecured login handler makes it.
    fn token(&self, now: i64) -> String {
        let mut claims = self.claims.clone();
        let seconds = |ms: i64| Value::from(ms as f64 / 1000.0);
        claims.insert("iat".into(), seconds(now));
        claims.insert("exp".into(), seconds(now + self.lifetime.as_millis() as i64));
        format!(
            "{}.{}.",
            BASE64URL.encode(br#"{"alg":"none"}"#),
            BASE64URL.encode(Value::Object(claims).to_string())
        )
    }
}

impl RefreshWindow {
    /// When a token valid from `issued` (or now) to `expires` is replaced: Kafka's
    /// `ExpiringCredentialRefreshingLogin`, at `factor + jitter * random` of its lifetime, but
    /// not inside the last `buffer` before it expires nor sooner than `min_period` from now;
    /// both bounds are dropped for a token too short-lived for them.
    fn refresh_time(&self, now: i64, issued: Option<i64>, expires: i64, random: f64) -> i64 {
        let share = self.factor + self.jitter * random;
        if now + self.min_period_ms + self.buffer_ms > expires {
            return now + ((expires - now) as f64 * share) as i64;
        }
        let start = issued.unwrap_or(now);
        let proposed = start + ((expires - start) as f64 * share) as i64;
        if proposed > expires - self.buffer_ms {
            expires - self.buffer_ms
        } else {
            proposed.max(now + self.min_period_ms)
        }
    }
}

/// What the client reads from a JWT: no signature check (that is the broker's job), the claims
/// Kafka's client validator requires.
struct Claims {
    principal: String,
    issued_ms: Option<i64>,
    expires_ms: i64,
}

fn read_jwt(jwt: &str, sub_claim: &str) -> std::result::Result<Claims, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    if parts.len() != 3 {
        return Err(format!(
            "a JWT has 3 parts separated by `.`, this one has {}",
            parts.len()
        ));
    }
    let payload = BASE64URL
        .decode(parts[1].trim_end_matches('='))
        .map_err(|_| "its payload is not base64url".to_string())?;
    let claims: Map<String, Value> =
        serde_json::from_slice(&payload).map_err(|_| "its payload is not a JSON object".to_string())?;
    let seconds = |name: &str| -> std::result::Result<Option<i64>, String> {
        match claims.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .map(|s| Some((s * 1000.0) as i64))
                .ok_or_else(|| format!("its `{name}` claim is not a number")),
        }
    };
    let expires_ms = seconds("exp")?.ok_or("it has no `exp` claim")?;
    let issued_ms = seconds("iat")?;
    let principal = match claims.get(sub_claim) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(_) => return Err(format!("its `{sub_claim}` claim is not a non-empty string")),
        None => return Err(format!("it has no `{sub_claim}` claim")),
    };
    Ok(Claims {
        principal,
        issued_ms,
        expires_ms,
    })
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A random number in `[0, 1)`, for jitter.
pub(crate) fn random_fraction() -> f64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    // A failing system RNG only takes the jitter away.
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Reads the OAUTHBEARER settings: the client keys through `get` and the options of
/// `sasl.jaas.config`'s `OAuthBearerLoginModule` entry.
pub(crate) fn oauth_bearer<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    options: &[(String, String)],
) -> Result<OAuthBearer> {
    let handler = set(get, "sasl.login.callback.handler.class").map(str::trim);
    let url = set(get, "sasl.oauthbearer.token.endpoint.url").map(str::trim);
    let source = match (handler, url) {
        (Some(handler), Some(url)) if LOGIN_CALLBACK_HANDLERS.contains(&handler) => token_source(get, url, options)?,
        (Some(handler), None) if LOGIN_CALLBACK_HANDLERS.contains(&handler) => {
            return Err(config_error(
                "sasl.oauthbearer.token.endpoint.url",
                "is required with OAuthBearerLoginCallbackHandler: the identity provider's token endpoint \
                 (https://…), or file:/path/to/token",
            ))
        }
        (Some(_), _) => {
            return Err(config_error(
                "sasl.login.callback.handler.class",
                format!(
                    "custom Java classes are not supported; for OAUTHBEARER use {}",
                    LOGIN_CALLBACK_HANDLERS[0]
                ),
            ))
        }
        (None, Some(_)) => {
            return Err(config_error(
                "sasl.oauthbearer.token.endpoint.url",
                format!(
                    "is set, but sasl.login.callback.handler.class is not: Kafka's clients would then use the \
                     unsecured development handler and never call the endpoint; set \
                     sasl.login.callback.handler.class = {}",
                    LOGIN_CALLBACK_HANDLERS[0]
                ),
            ))
        }
        (None, None) => TokenSource::Unsecured(unsecured(options)?),
    };
    let mut extensions = Vec::new();
    let prefix = match &source {
        TokenSource::Unsecured(_) => "unsecuredLoginExtension_",
        _ => "extension_",
    };
    for (key, value) in options {
        if let Some(name) = key.strip_prefix(prefix) {
            // RFC 7628 §3.1: key = 1*ALPHA, value = 1*(VCHAR / SP / HTAB / CR / LF); `auth` is the token.
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphabetic()) || name == "auth" {
                return Err(config_error(
                    "sasl.jaas.config",
                    format!("the SASL extension name in option {key} must be letters only, and not `auth`"),
                ));
            }
            if value.is_empty()
                || !value
                    .bytes()
                    .all(|b| matches!(b, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n'))
            {
                return Err(config_error(
                    "sasl.jaas.config",
                    format!("the value of option {key} must be printable ASCII"),
                ));
            }
            extensions.push((name.to_owned(), Secret::new(value.clone())));
        }
    }
    let refresh = RefreshWindow {
        factor: number(get, "sasl.login.refresh.window.factor", 0.8, 0.5, 1.0)?,
        jitter: number(get, "sasl.login.refresh.window.jitter", 0.05, 0.0, 0.25)?,
        min_period_ms: 1000 * number(get, "sasl.login.refresh.min.period.seconds", 60, 0, 900)?,
        buffer_ms: 1000 * number(get, "sasl.login.refresh.buffer.seconds", 300, 0, 3600)?,
    };
    let sub_claim = match &source {
        TokenSource::Unsecured(u) => u.principal_claim.clone(),
        _ => set(get, "sasl.oauthbearer.sub.claim.name")
            .map_or("sub", str::trim)
            .to_owned(),
    };
    Ok(OAuthBearer {
        source,
        refresh,
        sub_claim,
        extensions,
        current: tokio::sync::Mutex::new(None),
    })
}

fn token_source<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    url: &str,
    options: &[(String, String)],
) -> Result<TokenSource> {
    const KEY: &str = "sasl.oauthbearer.token.endpoint.url";
    let get_option = |key: &str| options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let option = |key: &str| get_option(key).filter(|v| !v.trim().is_empty());
    let retriever = set(get, "sasl.oauthbearer.jwt.retriever.class")
        .map(|class| class.trim().rsplit('.').next().unwrap_or_default());
    if let Some(path) = url.strip_prefix("file:") {
        if !matches!(retriever, None | Some("DefaultJwtRetriever" | "FileJwtRetriever")) {
            return Err(config_error(
                "sasl.oauthbearer.jwt.retriever.class",
                "must be DefaultJwtRetriever or FileJwtRetriever for a file: token endpoint URL",
            ));
        }
        // file:/p, file:///p and file://localhost/p name the same file.
        let path = path
            .strip_prefix("//localhost")
            .or_else(|| path.strip_prefix("//"))
            .unwrap_or(path);
        return Ok(TokenSource::File(PathBuf::from(path)));
    }
    match retriever {
        None | Some("DefaultJwtRetriever" | "ClientCredentialsJwtRetriever") => {}
        Some("JwtBearerJwtRetriever") => {
            return Err(config_error(
                "sasl.oauthbearer.jwt.retriever.class",
                "the JWT bearer grant (RFC 7523) is not supported; Strait uses the client-credentials grant \
                 (ClientCredentialsJwtRetriever)",
            ))
        }
        Some(_) => {
            return Err(config_error(
                "sasl.oauthbearer.jwt.retriever.class",
                "custom Java classes are not supported; use DefaultJwtRetriever or ClientCredentialsJwtRetriever",
            ))
        }
    }
    let parsed: http::Uri = url
        .parse()
        .map_err(|_| config_error(KEY, "is not a URL (https://host/path or file:/path)"))?;
    let https = match parsed.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(config_error(KEY, "must be an https:, http: or file: URL")),
    };
    if parsed.host().is_none_or(str::is_empty) {
        return Err(config_error(KEY, "has no host"));
    }
    if !https && !is_loopback(parsed.host().unwrap_or_default()) {
        tracing::warn!(
            "sasl.oauthbearer.token.endpoint.url is plain http on another host: the client secret crosses the network unencrypted"
        );
    }
    let credential = |key: &str, jaas: &str| {
        set(get, key)
            .or_else(|| option(jaas))
            .map(|v| v.trim().to_owned())
            .ok_or_else(|| {
                config_error(
                    key,
                    format!("is required for the client-credentials grant: set it, or the `{jaas}` option of sasl.jaas.config"),
                )
            })
    };
    let client_id = credential("sasl.oauthbearer.client.credentials.client.id", "clientId")?;
    let client_secret = Secret::new(credential(
        "sasl.oauthbearer.client.credentials.client.secret",
        "clientSecret",
    )?);
    let scope = set(get, "sasl.oauthbearer.scope")
        .or_else(|| option("scope"))
        .map(|s| s.trim().to_owned());
    let tls = if https {
        // Kafka reads the token endpoint's TLS settings from the login module's options.
        let config = tls_config(&get_option).map_err(|error| match error {
            Error::Config { key, message } => config_error("sasl.jaas.config", format!("option {key}: {message}")),
            other => other,
        })?;
        Some(config.rustls().clone())
    } else {
        None
    };
    let millis = |key: &str, default: u64| -> Result<Duration> {
        Ok(Duration::from_millis(number(get, key, default, 0, i32::MAX as u64)?))
    };
    Ok(TokenSource::ClientCredentials(Box::new(ClientCredentials {
        url: parsed,
        client_id,
        client_secret,
        scope,
        urlencode: match set(get, "sasl.oauthbearer.header.urlencode").map(|v| v.trim().to_ascii_lowercase()) {
            None => false,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(_) => {
                return Err(config_error(
                    "sasl.oauthbearer.header.urlencode",
                    "must be true or false",
                ))
            }
        },
        endpoint: Endpoint {
            tls,
            // Kafka leaves these to the JDK's HTTP client (no limit) when unset; a mirror waits a bounded time.
            connect_timeout: millis("sasl.login.connect.timeout.ms", 10_000)?,
            read_timeout: millis("sasl.login.read.timeout.ms", 30_000)?,
        },
        retry_backoff: millis("sasl.login.retry.backoff.ms", 100)?,
        retry_backoff_max: millis("sasl.login.retry.backoff.max.ms", 10_000)?,
    })))
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Kafka's `OAuthBearerUnsecuredLoginCallbackHandler` options: `unsecuredLoginStringClaim_<name>`,
/// `unsecuredLoginNumberClaim_<name>`, `unsecuredLoginListClaim_<name>` (its first character
/// separates the items), `unsecuredLoginPrincipalClaimName` (default `sub`) and
/// `unsecuredLoginLifetimeSeconds` (default 3600).
fn unsecured(options: &[(String, String)]) -> Result<Unsecured> {
    let mut claims = Map::new();
    let mut principal_claim = "sub".to_owned();
    let mut lifetime = Duration::from_secs(3600);
    for (key, value) in options {
        let bad = |what: &str| config_error("sasl.jaas.config", format!("option {key} {what}"));
        if let Some(name) = key.strip_prefix("unsecuredLoginStringClaim_") {
            claims.insert(name.to_owned(), Value::from(value.clone()));
        } else if let Some(name) = key.strip_prefix("unsecuredLoginNumberClaim_") {
            let number: f64 = value.trim().parse().map_err(|_| bad("is not a number"))?;
            claims.insert(name.to_owned(), Value::from(number));
        } else if let Some(name) = key.strip_prefix("unsecuredLoginListClaim_") {
            let mut chars = value.chars();
            let separator = chars
                .next()
                .ok_or_else(|| bad("is empty; its first character separates the items"))?;
            let items: Vec<Value> = chars
                .as_str()
                .split(separator)
                .filter(|s| !s.is_empty())
                .map(Value::from)
                .collect();
            claims.insert(name.to_owned(), Value::Array(items));
        } else if key == "unsecuredLoginPrincipalClaimName" {
            principal_claim = value.trim().to_owned();
        } else if key == "unsecuredLoginLifetimeSeconds" {
            let seconds: u64 = value
                .trim()
                .parse()
                .map_err(|_| bad("is not a whole number of seconds"))?;
            lifetime = Duration::from_secs(seconds);
        }
    }
    for reserved in ["iat", "exp"] {
        if claims.contains_key(reserved) {
            return Err(config_error(
                "sasl.jaas.config",
                format!(
                    "the unsecured token's `{reserved}` claim is set from unsecuredLoginLifetimeSeconds; do not set it"
                ),
            ));
        }
    }
    if !claims.get(&principal_claim).is_some_and(Value::is_string) {
        return Err(config_error(
            "sasl.jaas.config",
            format!(
                "OAUTHBEARER without sasl.login.callback.handler.class uses Kafka's unsecured development handler, \
                 which needs unsecuredLoginStringClaim_{principal_claim}=\"<principal>\"; for a real identity provider set \
                 sasl.login.callback.handler.class = {} and sasl.oauthbearer.token.endpoint.url",
                LOGIN_CALLBACK_HANDLERS[0]
            ),
        ));
    }
    Ok(Unsecured {
        claims,
        principal_claim,
        lifetime,
    })
}

/// A number setting in Java's syntax, within Kafka's range for it.
fn number<'a, T>(get: &impl Fn(&str) -> Option<&'a str>, key: &str, default: T, min: T, max: T) -> Result<T>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    match set(get, key) {
        None => Ok(default),
        Some(raw) => match raw.trim().parse::<T>() {
            Ok(value) if value >= min && value <= max => Ok(value),
            _ => Err(config_error(key, format!("must be a number from {min} to {max}"))),
        },
    }
}

#[cfg(test)]
mod tests;
