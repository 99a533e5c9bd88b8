//! One TCP connection to one broker: TLS and SASL when configured, framing, pipelining by
//! correlation id, version negotiation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes, VersionRange};

use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::io::{EpollRead, EpollWrite, FrameRead, FrameWrite, IoPath};
use crate::sasl::{client_nonce, plain_message, ScramClient};
use crate::security::{SaslConfig, SaslCredentials, SaslMechanism, Security};
use crate::tls::{tls_error, TlsConfig};
use crate::versions::client_versions;
use crate::{AuthenticationFailure, Error, KafkaCode, Result};

/// The largest response frame we accept; larger sizes mean a broken stream.
const MAX_FRAME: usize = 256 * 1024 * 1024;
/// How much room a frame's buffer takes at a time while it arrives: the size comes from the
/// peer, and a frame announced as 256 MiB may never arrive. A Fetch response within the default
/// `fetch.max.bytes` (50 MiB) gets its room at once, so it is never moved while it grows.
const FRAME_GROWTH: usize = 64 * 1024 * 1024;
/// Frames from this size on get an allocation of their own, exactly their size; smaller ones are
/// copied out of the shared read buffer. Either way a frame holds no memory but its own: record
/// batches are handed on without copying and may live until the target acknowledges them, so
/// they must not keep a larger buffer alive.
const OWN_ALLOCATION: usize = 16 * 1024;
/// How long a closing connection waits to say goodbye (TLS close_notify) before it drops the
/// socket.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);
/// Requests queued for the writer before senders wait.
const QUEUE: usize = 64;

/// Settings of a connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// `client.id` sent in every request header.
    pub client_id: String,
    /// How long a request may wait for its response (`request.timeout.ms`).
    pub request_timeout: Duration,
    /// How long connecting may take (TCP, and the TLS handshake again as long).
    pub connect_timeout: Duration,
    /// TLS and SASL (`security.protocol` and the `ssl.*`/`sasl.*` keys).
    pub security: Security,
    /// Counts the connections open with these settings.
    pub counter: ConnectionCounter,
    /// How the socket moves bytes (`strait.io`); TLS connections always use epoll.
    pub io: IoPath,
}

/// How many connections are open: shared by every connection opened with one
/// [`ConnectionConfig`] (and its clones), for the `strait_connections` metric.
#[derive(Debug, Clone, Default)]
pub struct ConnectionCounter(Arc<AtomicI64>);

impl ConnectionCounter {
    /// A counter of its own, at zero.
    pub fn new() -> Self {
        ConnectionCounter::default()
    }

    /// Connections open now.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            client_id: "strait".into(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            security: Security::default(),
            counter: ConnectionCounter::default(),
            io: IoPath::Epoll,
        }
    }
}

type Reply = oneshot::Sender<Result<Bytes>>;

/// Requests in flight, and whether the connection is still usable. One lock for both, so that no
/// request can register after the connection failed and then wait forever.
struct State {
    pending: HashMap<i32, Reply>,
    closed: Option<Error>,
    /// Whether this connection is counted as open in its [`ConnectionCounter`].
    counted: bool,
}

struct Shared {
    broker: String,
    config: ConnectionConfig,
    state: Mutex<State>,
    next_correlation_id: AtomicI32,
    writer: mpsc::Sender<Vec<Bytes>>,
    /// Tells the writer to close the socket once the connection is poisoned.
    closing: Arc<Notify>,
    /// Set once, right after connecting, from ApiVersions.
    versions: std::sync::OnceLock<HashMap<i16, VersionRange>>,
    /// The cluster's finalized feature levels (`transaction.version`, …), from ApiVersions v3+.
    features: std::sync::OnceLock<HashMap<String, i16>>,
    /// Requests are queued under a shared hold; a re-authentication (KIP-368) takes it alone,
    /// so that no other request comes between its SASL messages.
    gate: tokio::sync::RwLock<()>,
}

/// A pipelined connection to one broker. Cheap to clone; all clones share the socket.
///
/// Requests are written whole by a dedicated task, so dropping a caller's future (cancelling
/// it) never leaves half a frame on the socket: every public async fn here is cancel-safe.
/// After any I/O or framing error the connection is poisoned: requests in flight and all later
/// requests fail with the same error, and the caller reconnects.
#[derive(Clone)]
pub struct BrokerConnection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BrokerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerConnection")
            .field("broker", &self.shared.broker)
            .finish()
    }
}

impl BrokerConnection {
    /// Connects to `broker` (`host:port`), does the TLS handshake if configured, negotiates API
    /// versions and authenticates with SASL if configured (the order of Kafka's Java client).
    pub async fn connect(broker: &str, config: ConnectionConfig) -> Result<BrokerConnection> {
        let io_error = |source: std::io::Error| Error::Io {
            broker: broker.into(),
            source: Arc::new(source),
        };
        let stream = tokio::time::timeout(config.connect_timeout, TcpStream::connect(broker))
            .await
            .map_err(|_| Error::Timeout {
                what: format!("connecting to {broker}"),
                after_ms: config.connect_timeout.as_millis() as u64,
            })?
            .map_err(io_error)?;
        stream.set_nodelay(true).map_err(io_error)?;
        let tls = config.security.tls.clone();
        let io = config.io.clone();
        let sasl = config.security.sasl.clone();
        let (writer, requests) = mpsc::channel(QUEUE);
        let connection = BrokerConnection {
            shared: Arc::new(Shared {
                broker: broker.into(),
                config,
                state: Mutex::new(State {
                    pending: HashMap::new(),
                    closed: None,
                    counted: true,
                }),
                next_correlation_id: AtomicI32::new(1),
                writer,
                closing: Arc::new(Notify::new()),
                versions: std::sync::OnceLock::new(),
                features: std::sync::OnceLock::new(),
                gate: tokio::sync::RwLock::new(()),
            }),
        };
        connection.shared.config.counter.0.fetch_add(1, Ordering::Relaxed);
        match (tls, io) {
            (None, IoPath::Epoll) => {
                let (read, write) = stream.into_split();
                connection.start_io(EpollRead(read), EpollWrite(write), requests);
            }
            (None, IoPath::IoUring(ring)) => {
                let (read, write) = stream
                    .into_std()
                    .and_then(|stream| strait_uring::split(ring, stream))
                    .map_err(io_error)?;
                connection.start_io(read, write, requests);
            }
            (Some(tls), _) => {
                let stream = connection.tls_handshake(&tls, stream).await?;
                let (read, write) = tokio::io::split(stream);
                connection.start_io(EpollRead(read), EpollWrite(write), requests);
            }
        }
        let (versions, features) = connection.api_versions().await?;
        connection
            .shared
            .versions
            .set(versions)
            .expect("versions are negotiated once");
        let _ = connection.shared.features.set(features);
        if let Some(sasl) = sasl {
            if let Some(lifetime) = connection.authenticate(&sasl).await? {
                tokio::spawn(reauthenticate(Arc::downgrade(&connection.shared), sasl, lifetime));
            }
        }
        Ok(connection)
    }

    /// Spawns the reader and writer tasks on the two halves of the stream.
    fn start_io(
        &self,
        read: impl FrameRead + 'static,
        write: impl FrameWrite + 'static,
        requests: mpsc::Receiver<Vec<Bytes>>,
    ) {
        let reader = tokio::spawn(read_loop(Arc::downgrade(&self.shared), read));
        tokio::spawn(write_loop(
            Arc::downgrade(&self.shared),
            write,
            requests,
            self.shared.closing.clone(),
            reader.abort_handle(),
        ));
    }

    async fn tls_handshake(
        &self,
        tls: &TlsConfig,
        stream: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let broker = &self.shared.broker;
        let timeout = self.shared.config.connect_timeout;
        let connector = tokio_rustls::TlsConnector::from(tls.rustls().clone());
        let server_name = TlsConfig::server_name(broker)?;
        tokio::time::timeout(timeout, connector.connect(server_name, stream))
            .await
            .map_err(|_| Error::Timeout {
                what: format!("the TLS handshake with {broker}"),
                after_ms: timeout.as_millis() as u64,
            })?
            .map_err(|e| tls_error(broker, e))
    }

    /// SaslHandshake v1, then the mechanism's messages in SaslAuthenticate requests (KIP-152).
    /// Returns the session's lifetime if the broker limits it (`connections.max.reauth.ms`, or
    /// an OAUTHBEARER token's expiry; KIP-368): the connection must authenticate again before
    /// it ends, or the broker closes it.
    async fn authenticate(&self, sasl: &SaslConfig) -> Result<Option<Duration>> {
        let broker = &self.shared.broker;
        let mechanism = sasl.mechanism.name();
        let principal = sasl.principal();
        let failed = |code: ResponseError, message: Option<String>, hint: &'static str| {
            Error::Authentication(Box::new(AuthenticationFailure {
                broker: broker.clone(),
                mechanism,
                username: principal.clone(),
                code: KafkaCode(code),
                message,
                hint,
            }))
        };
        // Our own SCRAM checks failing count as the broker refusing the credentials would.
        const SASL_AUTHENTICATION_FAILED: ResponseError = ResponseError::SaslAuthenticationFailed;
        let hint = match sasl.mechanism {
            SaslMechanism::OAuthBearer => {
                "check that the identity provider's tokens suit the broker (issuer, audience, scope, sub) and that \
                 the broker can reach its JWKS endpoint"
            }
            SaslMechanism::AwsMskIam => {
                "check that the IAM identity's policy allows kafka-cluster:Connect on this cluster, that the cluster \
                 has IAM access control on this listener (port 9098 or 9198), and that this host's clock is right"
            }
            _ => "check the username and password in sasl.jaas.config, and that the user exists for sasl.mechanism",
        };

        self.version(ApiKey::SaslHandshake)?;
        let request = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        let response: SaslHandshakeResponse = self.sasl_exchange(&request, 1).await?;
        if let Some(code) = ResponseError::try_from_code(response.error_code) {
            let enabled: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(failed(
                code,
                Some(format!("the listener enables {enabled:?}")),
                "check sasl.mechanism and security.protocol against the broker's listener",
            ));
        }
        let version = self.version(ApiKey::SaslAuthenticate)?;
        let round = |message: Vec<u8>| self.sasl_round(message, version, &failed, hint);
        let lifetime_ms = match &sasl.credentials {
            SaslCredentials::Password { username, password, .. } if sasl.mechanism == SaslMechanism::Plain => {
                round(plain_message(username, password)).await?.1
            }
            SaslCredentials::Password {
                username,
                password,
                extensions,
            } => {
                let nonce = client_nonce().map_err(|m| failed(SASL_AUTHENTICATION_FAILED, Some(m), hint))?;
                let mut scram = ScramClient::new(sasl.mechanism, username, password, extensions, nonce);
                let (server_first, _) = round(scram.client_first()).await?;
                let client_final = scram
                    .client_final(&server_first)
                    .map_err(|m| failed(SASL_AUTHENTICATION_FAILED, Some(m), hint))?;
                let (server_final, lifetime_ms) = round(client_final).await?;
                scram.verify_server_final(&server_final).map_err(|m| {
                    failed(
                        SASL_AUTHENTICATION_FAILED,
                        Some(m),
                        "the broker is not who it claims to be, or the credentials differ",
                    )
                })?;
                lifetime_ms
            }
            SaslCredentials::OAuthBearer(oauth) => {
                let token = oauth.token().await?;
                let (challenge, lifetime_ms) = round(oauth.initial_response(&token)).await?;
                if !challenge.is_empty() {
                    // RFC 7628 §3.2.2: the broker refused the token with a JSON status; the
                    // client answers ^A and the broker ends the exchange with its error.
                    let status = String::from_utf8_lossy(&challenge).into_owned();
                    let refused = |message: Option<String>| {
                        let message = message.map_or(status.clone(), |m| format!("{m} ({status})"));
                        failed(SASL_AUTHENTICATION_FAILED, Some(message), hint)
                    };
                    return Err(match round(vec![1]).await {
                        Err(Error::Authentication(failure)) => refused(failure.message),
                        Err(other) => other,
                        Ok(_) => refused(None),
                    });
                }
                lifetime_ms
            }
            SaslCredentials::AwsMskIam(iam) => {
                // aws-msk-iam-auth signs for the host the socket connected to, without the port.
                let host = broker.rsplit_once(':').map_or(broker.as_str(), |(host, _)| host);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let (payload, credentials) = iam.initial_response(host).await?;
                let (response, lifetime_ms) = round(payload).await?;
                let request_id = crate::aws::read_server_response(&response)
                    .map_err(|m| failed(SASL_AUTHENTICATION_FAILED, Some(m), hint))?;
                tracing::debug!(%broker, %request_id, source = %credentials.source, "AWS_MSK_IAM accepted");
                lifetime_ms
            }
        };
        tracing::debug!(%broker, mechanism, %principal, lifetime_ms, "authenticated");
        Ok((lifetime_ms > 0).then(|| Duration::from_millis(lifetime_ms as u64)))
    }

    /// One SaslAuthenticate round trip: the server's message and the session lifetime it set
    /// (0: none). The broker's error becomes [`Error::Authentication`].
    async fn sasl_round(
        &self,
        message: Vec<u8>,
        version: i16,
        failed: &impl Fn(ResponseError, Option<String>, &'static str) -> Error,
        hint: &'static str,
    ) -> Result<(Bytes, i64)> {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(message));
        let response: SaslAuthenticateResponse = self.sasl_exchange(&request, version).await?;
        if let Some(code) = ResponseError::try_from_code(response.error_code) {
            return Err(failed(code, response.error_message.map(|m| m.to_string()), hint));
        }
        Ok((response.auth_bytes, response.session_lifetime_ms))
    }

    /// A SASL request, sent past the gate: while the connection is new nothing else is sent,
    /// and while it re-authenticates the gate is held by [`reauthenticate`].
    async fn sasl_exchange<R: Request>(&self, request: &R, version: i16) -> Result<R::Response> {
        let api = api_key(R::KEY);
        let frame = self
            .enqueue(api, version, vec![encode(request, version)?])
            .await?
            .response()
            .await?;
        decode_response::<R::Response>(api, version, frame)
    }

    /// The broker address this connection talks to.
    pub fn broker(&self) -> &str {
        &self.shared.broker
    }

    /// Whether the connection failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.shared.state.lock().expect("state lock").closed.is_some()
    }

    /// The version of `api` to use: the highest both sides speak.
    pub fn version(&self, api: ApiKey) -> Result<i16> {
        let ours = client_versions(api);
        let theirs = self.shared.versions.get().and_then(|v| v.get(&(api as i16)));
        match theirs.map(|theirs| ours.intersect(theirs)) {
            Some(common) if !common.is_empty() => Ok(common.max),
            _ => Err(Error::NoCommonVersion {
                broker: self.shared.broker.clone(),
                api,
                ours: ours.to_string(),
                theirs: theirs.map_or("none".into(), |v| v.to_string()),
            }),
        }
    }

    /// Sends `request` at the negotiated version and decodes the response.
    pub async fn send<R: Request>(&self, request: &R) -> Result<R::Response> {
        let api = api_key(R::KEY);
        let version = self.version(api)?;
        self.send_version(request, version).await
    }

    /// Sends `request` at the negotiated version and decodes the response; also returns the
    /// response frame's size, which the decoded response's byte fields are slices of.
    pub async fn send_measured<R: Request>(&self, request: &R) -> Result<(R::Response, usize)> {
        let version = self.version(api_key(R::KEY))?;
        self.exchange(request, version).await
    }

    /// Sends `request` at the negotiated version and waits at most `timeout` for its answer
    /// (see [`PendingResponse::response_within`]).
    pub async fn send_within<R: Request>(&self, request: &R, timeout: Duration) -> Result<R::Response> {
        let version = self.version(api_key(R::KEY))?;
        Ok(self.exchange_within(request, version, timeout).await?.0)
    }

    /// Sends `request` at a given `version` and decodes the response.
    pub async fn send_version<R: Request>(&self, request: &R, version: i16) -> Result<R::Response> {
        Ok(self.exchange(request, version).await?.0)
    }

    /// Encodes `request` at `version`, sends it, and decodes the answer; with the frame's size.
    async fn exchange<R: Request>(&self, request: &R, version: i16) -> Result<(R::Response, usize)> {
        self.exchange_within(request, version, self.shared.config.request_timeout)
            .await
    }

    /// As [`BrokerConnection::exchange`], waiting at most `timeout` for the answer.
    async fn exchange_within<R: Request>(
        &self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<(R::Response, usize)> {
        let api = api_key(R::KEY);
        let pending = self.submit(api, version, vec![encode(request, version)?]).await?;
        let frame = pending.response_within(timeout).await?;
        let size = frame.len();
        Ok((decode_response::<R::Response>(api, version, frame)?, size))
    }

    /// Sends a request whose body is already encoded as `body` (a list of buffers written with
    /// one vectored write, so large record batches are not copied) and returns the response
    /// frame after its size prefix: the response header and body, for [`decode_response`].
    pub async fn round_trip(&self, api: ApiKey, version: i16, body: Vec<Bytes>) -> Result<Bytes> {
        self.submit(api, version, body).await?.response().await
    }

    /// Queues a request for writing and returns at once with a handle to its response.
    ///
    /// Requests go on the wire in the order of `submit` calls, and Kafka answers them in that
    /// order, so a caller can keep several requests in flight (pipelining) and still know the
    /// broker saw them in sequence.
    pub async fn submit(&self, api: ApiKey, version: i16, body: Vec<Bytes>) -> Result<PendingResponse> {
        // Held until the request is queued: a re-authentication waits for it to be on its way,
        // and later requests wait for the re-authentication.
        let _gate = self.shared.gate.read().await;
        self.enqueue(api, version, body).await
    }

    /// Queues a request for writing, whatever the gate says.
    async fn enqueue(&self, api: ApiKey, version: i16, body: Vec<Bytes>) -> Result<PendingResponse> {
        let correlation_id = self.shared.next_correlation_id.fetch_add(1, Ordering::Relaxed);
        let header = RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.shared.config.client_id.clone())));
        let header_version = api.request_header_version(version);
        let protocol = |message: String| Error::Protocol { api, version, message };
        let header_size = header
            .compute_size(header_version)
            .map_err(|e| protocol(e.to_string()))?;
        let body_size: usize = body.iter().map(Bytes::len).sum();
        let mut prefix = BytesMut::with_capacity(4 + header_size);
        prefix.put_i32((header_size + body_size) as i32);
        header
            .encode(&mut prefix, header_version)
            .map_err(|e| protocol(e.to_string()))?;
        let mut frame = Vec::with_capacity(body.len() + 1);
        frame.push(prefix.freeze());
        frame.extend(body);

        let (reply, response) = oneshot::channel();
        {
            let mut state = self.shared.state.lock().expect("state lock");
            if let Some(error) = &state.closed {
                return Err(error.clone());
            }
            state.pending.insert(correlation_id, reply);
        }
        if self.shared.writer.send(frame).await.is_err() {
            return Err(self.closed_error("the writer stopped"));
        }
        Ok(PendingResponse {
            connection: self.clone(),
            api,
            version,
            response,
        })
    }

    fn closed_error(&self, reason: &str) -> Error {
        let state = self.shared.state.lock().expect("state lock");
        state.closed.clone().unwrap_or_else(|| Error::ConnectionClosed {
            broker: self.shared.broker.clone(),
            reason: reason.into(),
        })
    }

    /// The finalized level of cluster feature `name` (`transaction.version`, KIP-890) as this
    /// broker reported it; 0 when it reports none (a feature not finalized is at level 0).
    pub fn feature_level(&self, name: &str) -> i16 {
        self.shared
            .features
            .get()
            .and_then(|features| features.get(name).copied())
            .unwrap_or(0)
    }

    /// ApiVersions, first at v3; a broker that does not speak v3 answers with its own range
    /// (KIP-511), and we retry at v0. Also the finalized feature levels (v3+).
    async fn api_versions(&self) -> Result<(HashMap<i16, VersionRange>, HashMap<String, i16>)> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("strait"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let mut response: ApiVersionsResponse = self.send_version(&request, 3).await?;
        if response.error_code == ResponseError::UnsupportedVersion.code() {
            response = self.send_version(&request, 0).await?;
        }
        Error::check(
            response.error_code,
            || format!("ApiVersions to {}", self.shared.broker),
            None,
        )?;
        let versions = response
            .api_keys
            .iter()
            .map(|k| {
                (
                    k.api_key,
                    VersionRange {
                        min: k.min_version,
                        max: k.max_version,
                    },
                )
            })
            .collect();
        let features = response
            .finalized_features
            .iter()
            .map(|f| (f.name.to_string(), f.max_version_level))
            .collect();
        Ok((versions, features))
    }
}

/// A request on the wire, waiting for its response.
#[derive(Debug)]
pub struct PendingResponse {
    connection: BrokerConnection,
    api: ApiKey,
    version: i16,
    response: oneshot::Receiver<Result<Bytes>>,
}

impl PendingResponse {
    /// Waits (at most `request.timeout.ms`) for the response frame: header and body.
    pub async fn response(self) -> Result<Bytes> {
        let timeout = self.connection.shared.config.request_timeout;
        self.response_within(timeout).await
    }

    /// Waits at most `timeout` for the response frame: for requests that the broker holds on
    /// purpose for longer than `request.timeout.ms` (a JoinGroup waits for the rebalance).
    pub async fn response_within(self, timeout: Duration) -> Result<Bytes> {
        let shared = &self.connection.shared;
        match tokio::time::timeout(timeout, self.response).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self.connection.closed_error("the response was lost")),
            Err(_) => {
                // As Kafka's clients do, close the connection: one that stalled (a half-dead
                // path, a hung broker) would time out every later request on it too, and the
                // caller reconnects on a closed one.
                let error = Error::Timeout {
                    what: format!("{:?} v{} to {}", self.api, self.version, shared.broker),
                    after_ms: timeout.as_millis() as u64,
                };
                shared.poison(error.clone());
                Err(error)
            }
        }
    }
}

/// Decodes a response frame (header and body) of `api` at `version`, checking that the whole
/// frame was consumed.
pub fn decode_response<T: Decodable + HeaderVersion>(api: ApiKey, version: i16, mut frame: Bytes) -> Result<T> {
    let protocol = |message: String| Error::Protocol { api, version, message };
    ResponseHeader::decode(&mut frame, T::header_version(version)).map_err(|e| protocol(e.to_string()))?;
    let response = T::decode(&mut frame, version).map_err(|e| protocol(e.to_string()))?;
    if frame.has_remaining() {
        return Err(protocol(format!(
            "{} bytes left over after the response",
            frame.remaining()
        )));
    }
    Ok(response)
}

/// The body of `request` encoded at `version`.
fn encode<R: Request>(request: &R, version: i16) -> Result<Bytes> {
    let protocol = |message: String| Error::Protocol {
        api: api_key(R::KEY),
        version,
        message,
    };
    let mut body = BytesMut::with_capacity(request.compute_size(version).map_err(|e| protocol(e.to_string()))?);
    request
        .encode(&mut body, version)
        .map_err(|e| protocol(e.to_string()))?;
    Ok(body.freeze())
}

/// Authenticates the connection again before each session ends (KIP-368), as Kafka's clients
/// do: at a random point between 85 % and 95 % of the session, so that connections opened
/// together do not all re-authenticate at once. Requests wait while it runs; a failure closes
/// the connection (its callers reconnect, and authenticate afresh). Ends with the connection.
async fn reauthenticate(shared: std::sync::Weak<Shared>, sasl: SaslConfig, mut lifetime: Duration) {
    loop {
        tokio::time::sleep(lifetime.mul_f64(0.85 + 0.1 * crate::oauth::random_fraction())).await;
        let Some(shared) = shared.upgrade() else { return };
        let connection = BrokerConnection { shared };
        if connection.is_closed() {
            return;
        }
        // Fetching new AWS credentials may take a round trip to STS: done before requests are
        // held back. Its error, if any, comes again from `authenticate`.
        if let SaslCredentials::AwsMskIam(iam) = &sasl.credentials {
            let _ = iam.credentials().await;
        }
        let _alone = connection.shared.gate.write().await;
        match connection.authenticate(&sasl).await {
            Ok(Some(next)) => {
                tracing::debug!(broker = %connection.broker(), session_ms = next.as_millis() as u64, "re-authenticated");
                lifetime = next;
            }
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(broker = %connection.broker(), %error, "re-authentication failed; closing the connection");
                connection.shared.poison(error);
                return;
            }
        }
    }
}

fn api_key(key: i16) -> ApiKey {
    ApiKey::try_from(key).expect("kafka-protocol request types have known API keys")
}

impl Shared {
    /// Fails every request in flight and every later one with `error`.
    fn poison(&self, error: Error) {
        let pending = {
            let mut state = self.state.lock().expect("state lock");
            if state.closed.is_none() {
                state.closed = Some(error.clone());
            }
            self.uncount(&mut state);
            std::mem::take(&mut state.pending)
        };
        for (_, reply) in pending {
            let _ = reply.send(Err(error.clone()));
        }
        // The socket goes now, not when the last handle is dropped.
        self.closing.notify_one();
    }

    fn uncount(&self, state: &mut State) {
        if std::mem::take(&mut state.counted) {
            self.config.counter.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if std::mem::take(&mut state.counted) {
            self.config.counter.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

async fn write_loop(
    shared: std::sync::Weak<Shared>,
    mut socket: impl FrameWrite,
    mut requests: mpsc::Receiver<Vec<Bytes>>,
    closing: Arc<Notify>,
    reader: tokio::task::AbortHandle,
) {
    loop {
        let frame = tokio::select! {
            frame = requests.recv() => match frame {
                Some(frame) => frame,
                None => break,
            },
            // Poisoned: nothing more goes out on this socket, and nothing it says is awaited.
            _ = closing.notified() => break,
        };
        let written = tokio::select! {
            written = socket.write_all(frame) => written,
            // Poisoned while writing (a peer that stopped reading leaves no room): stop waiting.
            // The ring keeps the bytes of an unfinished send until the shutdown below fails it.
            _ = closing.notified() => break,
        };
        if let Err(source) = written {
            if let Some(shared) = shared.upgrade() {
                let broker = shared.broker.clone();
                shared.poison(Error::Io {
                    broker,
                    source: Arc::new(source),
                });
            }
            break;
        }
    }
    // Every handle is gone, or the connection failed: nobody waits for responses any more.
    reader.abort();
    // TLS says goodbye (close_notify), which waits for room on a stalled socket: bounded, as
    // the socket closes anyway once this task ends.
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, socket.shutdown()).await;
}

async fn read_loop(shared: std::sync::Weak<Shared>, mut socket: impl FrameRead) {
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    let error = loop {
        match read_frame(&mut socket, &mut buffer).await {
            Ok(frame) => {
                let Some(shared) = shared.upgrade() else { return };
                if frame.len() < 4 {
                    break frame_error(&shared, frame.len() as i64);
                }
                let correlation_id = i32::from_be_bytes(frame[..4].try_into().expect("4 bytes"));
                let reply = shared.state.lock().expect("state lock").pending.remove(&correlation_id);
                if let Some(reply) = reply {
                    let _ = reply.send(Ok(frame));
                }
            }
            Err(FrameError::Io(source)) => {
                let Some(shared) = shared.upgrade() else { return };
                break Error::Io {
                    broker: shared.broker.clone(),
                    source: Arc::new(source),
                };
            }
            Err(FrameError::Size(size)) => {
                let Some(shared) = shared.upgrade() else { return };
                break frame_error(&shared, size);
            }
        }
    };
    if let Some(shared) = shared.upgrade() {
        shared.poison(error);
    }
}

fn frame_error(shared: &Shared, size: i64) -> Error {
    Error::FrameSize {
        broker: shared.broker.clone(),
        size,
        limit: MAX_FRAME,
    }
}

enum FrameError {
    Io(std::io::Error),
    Size(i64),
}

/// Reads one size-prefixed frame. Bytes past the frame stay in `buffer` for the next call. The
/// frame holds exactly its own bytes (see [`OWN_ALLOCATION`]).
async fn read_frame(socket: &mut impl FrameRead, buffer: &mut BytesMut) -> std::result::Result<Bytes, FrameError> {
    fill(socket, buffer, 4).await?;
    let size = i32::from_be_bytes(buffer[..4].try_into().expect("4 bytes"));
    if size < 0 || size as usize > MAX_FRAME {
        return Err(FrameError::Size(i64::from(size)));
    }
    let size = size as usize;
    if size < OWN_ALLOCATION {
        fill(socket, buffer, 4 + size).await?;
        let frame = Bytes::copy_from_slice(&buffer[4..4 + size]);
        buffer.advance(4 + size);
        return Ok(frame);
    }
    buffer.advance(4);
    let mut frame: Vec<u8> = Vec::new();
    let buffered = buffer.len().min(size);
    frame.reserve_exact(size.min(buffered + FRAME_GROWTH));
    frame.extend_from_slice(&buffer[..buffered]);
    buffer.advance(buffered);
    while frame.len() < size {
        if frame.len() == frame.capacity() {
            frame.reserve_exact((size - frame.len()).min(FRAME_GROWTH));
        }
        // The capacity never passes `size`, so nothing of the next frame is read into this one.
        let (grown, read) = socket.read_buf(frame).await;
        frame = grown;
        let read = read.map_err(FrameError::Io)?;
        if read == 0 {
            return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
    }
    Ok(Bytes::from(frame))
}

async fn fill(
    socket: &mut impl FrameRead,
    buffer: &mut BytesMut,
    wanted: usize,
) -> std::result::Result<(), FrameError> {
    while buffer.len() < wanted {
        buffer.reserve((wanted - buffer.len()).max(64 * 1024));
        let (filled, read) = socket.read_buf(std::mem::take(buffer)).await;
        *buffer = filled;
        if read.map_err(FrameError::Io)? == 0 {
            return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncRead;

    use super::*;

    /// A reader that remembers the most room a read was offered: what the caller reserved.
    struct Offered<'a> {
        bytes: &'a [u8],
        most: usize,
    }

    impl AsyncRead for Offered<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            self.most = self.most.max(buf.remaining());
            let n = buf.remaining().min(self.bytes.len()).min(4096);
            buf.put_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_frame_announced_but_not_sent_does_not_reserve_its_size() {
        let mut stream: Vec<u8> = (200 * 1024 * 1024i32).to_be_bytes().to_vec();
        stream.extend_from_slice(&[0; 100_000]);
        let mut reader = Offered {
            bytes: &stream,
            most: 0,
        };
        let result = read_frame(&mut EpollRead(&mut reader), &mut BytesMut::new()).await;
        assert!(matches!(result, Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof));
        assert!(reader.most <= 2 * FRAME_GROWTH, "{} bytes reserved", reader.most);
    }

    #[tokio::test]
    async fn large_frames_are_read_into_their_own_exact_room() {
        let mut stream = Vec::new();
        for body in [&[1u8; 20_000][..], &[2u8; 5][..], &[3u8; 17 * 1024 * 1024][..]] {
            stream.extend_from_slice(&(body.len() as i32).to_be_bytes());
            stream.extend_from_slice(body);
        }
        let mut reader = Offered {
            bytes: &stream,
            most: 0,
        };
        let mut buffer = BytesMut::new();
        let first = read_frame(&mut EpollRead(&mut reader), &mut buffer).await.ok().unwrap();
        assert_eq!(first.len(), 20_000);
        assert!(first.iter().all(|&b| b == 1));
        assert_eq!(
            &read_frame(&mut EpollRead(&mut reader), &mut buffer).await.ok().unwrap()[..],
            &[2u8; 5]
        );
        let third = read_frame(&mut EpollRead(&mut reader), &mut buffer).await.ok().unwrap();
        assert_eq!(third.len(), 17 * 1024 * 1024);
        assert!(third.iter().all(|&b| b == 3));
        // The large frame grew in steps, never offering room past its end.
        assert!(reader.most <= FRAME_GROWTH + 64 * 1024, "{} bytes offered", reader.most);
    }

    #[tokio::test]
    async fn frames_split_off_whole_and_leave_the_rest() {
        let mut stream = Vec::new();
        for body in [&b"first"[..], &[7u8; 3 * 1024 * 1024][..], b""] {
            stream.extend_from_slice(&(body.len() as i32).to_be_bytes());
            stream.extend_from_slice(body);
        }
        let (mut reader, mut buffer) = (stream.as_slice(), BytesMut::new());
        assert_eq!(
            &read_frame(&mut EpollRead(&mut reader), &mut buffer).await.ok().unwrap()[..],
            b"first"
        );
        assert_eq!(
            read_frame(&mut EpollRead(&mut reader), &mut buffer)
                .await
                .ok()
                .unwrap()
                .len(),
            3 * 1024 * 1024
        );
        assert!(read_frame(&mut EpollRead(&mut reader), &mut buffer)
            .await
            .ok()
            .unwrap()
            .is_empty());
        let oversize = (MAX_FRAME as i32 + 1).to_be_bytes();
        let result = read_frame(&mut EpollRead(&oversize[..]), &mut BytesMut::new()).await;
        assert!(matches!(result, Err(FrameError::Size(size)) if size == MAX_FRAME as i64 + 1));
    }

    /// A broker that answers ApiVersions, then stops reading until told; then it reads to the
    /// end of the stream and says how many bytes it got.
    fn stalling_broker() -> (String, std::sync::mpsc::Sender<()>, std::thread::JoinHandle<usize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let (resume, resumed) = std::sync::mpsc::channel();
        let broker = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut size = [0; 4];
            socket.read_exact(&mut size).unwrap();
            let mut request = vec![0; i32::from_be_bytes(size) as usize];
            socket.read_exact(&mut request).unwrap();
            let mut body = BytesMut::new();
            ApiVersionsResponse::default().encode(&mut body, 3).unwrap();
            let frame_size = (4 + body.len()) as i32;
            socket.write_all(&frame_size.to_be_bytes()).unwrap();
            socket.write_all(&request[4..8]).unwrap(); // The correlation id.
            socket.write_all(&body).unwrap();
            resumed.recv().unwrap();
            let mut received = Vec::new();
            let _ = socket.read_to_end(&mut received);
            received.len()
        });
        (address, resume, broker)
    }

    /// A connection poisoned while its writer waits for room (the broker stopped reading) stops
    /// writing and closes: the broker sees the end without the rest of the request.
    async fn a_writer_waiting_for_room_stops_when_the_connection_fails(io: IoPath) {
        let (address, resume, broker) = stalling_broker();
        let config = ConnectionConfig {
            request_timeout: Duration::from_millis(300),
            io,
            ..ConnectionConfig::default()
        };
        let connection = BrokerConnection::connect(&address, config).await.unwrap();
        const REQUEST: usize = 64 * 1024 * 1024;
        let request = connection.round_trip(ApiKey::Produce, 3, vec![Bytes::from(vec![0; REQUEST])]);
        assert!(matches!(request.await, Err(Error::Timeout { .. })));
        resume.send(()).unwrap();
        let received = tokio::task::spawn_blocking(move || broker.join().unwrap())
            .await
            .unwrap();
        assert!(
            received < REQUEST,
            "the broker got the whole request ({received} bytes) after the connection failed"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_writer_waiting_for_room_stops_when_the_connection_fails_on_epoll() {
        a_writer_waiting_for_room_stops_when_the_connection_fails(IoPath::Epoll).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_writer_waiting_for_room_stops_when_the_connection_fails_on_io_uring() {
        let ring = strait_uring::Ring::get().expect("this machine kind allows io_uring");
        a_writer_waiting_for_room_stops_when_the_connection_fails(IoPath::IoUring(ring)).await;
    }
}
