//! A fault-injection TCP proxy on loopback: forwards bytes between clients and one upstream,
//! and can add latency in each direction, cut every connection it carries, stall them (a
//! half-dead path: open, but nothing gets through), damage bytes of the responses, cut
//! responses short (part delivered, then the connection closes), or lose chosen requests on the
//! way (the connection stays open, the broker never sees them).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// A running proxy. Dropping it stops accepting; connections end with the runtime or a cut.
pub struct FaultProxy {
    port: u16,
    upstream: Arc<Mutex<Option<SocketAddr>>>,
    latency_ms: Arc<AtomicU64>,
    cut: watch::Sender<u64>,
    stall: watch::Sender<u64>,
    faults: Arc<Faults>,
    accept: tokio::task::JoinHandle<()>,
}

/// What the proxy does to the bytes of its connections, shared with all of them.
#[derive(Debug, Default)]
struct Faults {
    corruption: Mutex<Vec<Corruption>>,
    losses: Mutex<Vec<RequestLoss>>,
    /// Requests lost so far.
    lost: AtomicU64,
    /// Responses still to cut short.
    truncations: AtomicU32,
}

/// Requests to lose: the next `times` request frames of API `api_key` that contain `marker`.
#[derive(Debug, Clone)]
struct RequestLoss {
    api_key: i16,
    marker: Vec<u8>,
    times: u32,
}

/// Bytes to damage in the responses: the next `times` occurrences of `find` (within one chunk
/// read from the upstream) are overwritten with `replace`, of the same length.
#[derive(Debug, Clone)]
struct Corruption {
    find: Vec<u8>,
    replace: Vec<u8>,
    times: u32,
}

impl FaultProxy {
    /// Listens on a free loopback port; connections are refused until an upstream is set.
    pub async fn start() -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binding the proxy");
        let port = listener.local_addr().expect("bound").port();
        let upstream: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let latency_ms = Arc::new(AtomicU64::new(0));
        let (cut, cuts) = watch::channel(0u64);
        let (stall, stalls) = watch::channel(0u64);
        let faults: Arc<Faults> = Arc::default();
        let accept = tokio::spawn({
            let (upstream, latency_ms, faults) = (upstream.clone(), latency_ms.clone(), faults.clone());
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Some(address) = *upstream.lock().expect("proxy lock") else {
                        continue;
                    };
                    let (latency_ms, cuts) = (latency_ms.clone(), cuts.clone());
                    let faults = faults.clone();
                    let mut stalls = stalls.clone();
                    stalls.mark_unchanged();
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect(address).await {
                            carry(client, server, latency_ms, cuts, stalls, faults).await;
                        }
                    });
                }
            }
        });
        FaultProxy {
            port,
            upstream,
            latency_ms,
            cut,
            stall,
            faults,
            accept,
        }
    }

    /// Cuts the next `times` responses short: of the next chunk a broker sends on a connection,
    /// half is delivered and then that connection is closed, so the client sees a response
    /// frame end early (the broker did the work; only its answer is lost).
    pub fn truncate_responses(&self, times: u32) {
        self.faults.truncations.fetch_add(times, Ordering::Relaxed);
    }

    /// Loses requests on the way: the next `times` request frames of API `api_key` (0 is
    /// Produce) whose bytes contain `marker` (a topic name, say) are not forwarded. The
    /// connection stays open and carries the requests behind them, so the client sees no
    /// answer to those only. Adds to the losses asked for before.
    pub fn lose_requests(&self, api_key: i16, marker: &[u8], times: u32) {
        self.faults.losses.lock().expect("proxy lock").push(RequestLoss {
            api_key,
            marker: marker.to_vec(),
            times,
        });
    }

    /// How many requests [`lose_requests`](Self::lose_requests) has lost so far: a test checks
    /// that its fault fired.
    pub fn requests_lost(&self) -> u64 {
        self.faults.lost.load(Ordering::Relaxed)
    }

    /// Stalls every connection open now: it stays open but carries nothing more, either way,
    /// until it is cut. Connections opened later are not affected.
    pub fn stall_connections(&self) {
        self.stall.send_modify(|generation| *generation += 1);
    }

    /// Damages the responses: the next `times` occurrences of `find` become `replace` (same
    /// length, so framing and batch lengths stay intact and only checksums can tell). Adds to
    /// the damages asked for before.
    pub fn corrupt_responses(&self, find: &[u8], replace: &[u8], times: u32) {
        assert_eq!(find.len(), replace.len(), "a corruption keeps the length");
        self.faults.corruption.lock().expect("proxy lock").push(Corruption {
            find: find.to_vec(),
            replace: replace.to_vec(),
            times,
        });
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where connections go.
    pub fn set_upstream(&self, address: SocketAddr) {
        *self.upstream.lock().expect("proxy lock") = Some(address);
    }

    /// Delay added to every chunk of bytes, in each direction.
    pub fn set_latency(&self, latency: Duration) {
        self.latency_ms.store(latency.as_millis() as u64, Ordering::Relaxed);
    }

    /// Closes every connection open now (mid-request or mid-response alike).
    pub fn cut_connections(&self) {
        self.cut.send_modify(|generation| *generation += 1);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut_connections();
    }
}

async fn carry(
    client: TcpStream,
    server: TcpStream,
    latency_ms: Arc<AtomicU64>,
    mut cuts: watch::Receiver<u64>,
    stalls: watch::Receiver<u64>,
    faults: Arc<Faults>,
) {
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pipe(
        client_read,
        server_write,
        latency_ms.clone(),
        stalls.clone(),
        Tamper::Requests(faults.clone(), Vec::new()),
    );
    let down = pipe(server_read, client_write, latency_ms, stalls, Tamper::Responses(faults));
    cuts.mark_unchanged();
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = cuts.changed() => {} // Dropping both halves closes both sockets.
    }
}

/// What a direction does to the bytes it carries.
enum Tamper {
    /// Client to broker: loses requests, cut into whole frames (the bytes of an incomplete
    /// frame wait for the rest).
    Requests(Arc<Faults>, Vec<u8>),
    /// Broker to client: damages bytes, and cuts responses short.
    Responses(Arc<Faults>),
}

impl Tamper {
    /// The bytes to forward for a chunk read, and whether to close the connection after them.
    fn apply(&mut self, chunk: &[u8]) -> (Vec<u8>, bool) {
        match self {
            Tamper::Responses(faults) => {
                let mut chunk = chunk.to_vec();
                damage(&mut chunk, &mut faults.corruption.lock().expect("proxy lock"));
                let truncate = faults
                    .truncations
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok();
                if truncate {
                    chunk.truncate(chunk.len() / 2);
                }
                (chunk, truncate)
            }
            Tamper::Requests(faults, partial) => {
                partial.extend_from_slice(chunk);
                let mut forward = Vec::with_capacity(partial.len());
                let mut at = 0;
                while partial.len() - at >= 6 {
                    let size = i32::from_be_bytes(partial[at..at + 4].try_into().expect("4 bytes")).max(0) as usize;
                    let Some(frame) = partial.get(at..at + 4 + size) else {
                        break;
                    };
                    if lose(frame, &mut faults.losses.lock().expect("proxy lock")) {
                        faults.lost.fetch_add(1, Ordering::Relaxed);
                    } else {
                        forward.extend_from_slice(frame);
                    }
                    at += 4 + size;
                }
                partial.drain(..at);
                (forward, false)
            }
        }
    }
}

/// Whether to lose this request frame (size, API key, ...): counts the loss if so.
fn lose(frame: &[u8], losses: &mut [RequestLoss]) -> bool {
    let api_key = i16::from_be_bytes([frame[4], frame[5]]);
    let loss = losses.iter_mut().find(|l| {
        l.times > 0 && l.api_key == api_key && frame.windows(l.marker.len()).any(|w| w == l.marker.as_slice())
    });
    loss.map(|l| l.times -= 1).is_some()
}

/// Copies one direction; each chunk is delivered `latency` after it was read, without holding
/// back the chunks behind it (a link's delay, not its bandwidth).
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    latency_ms: Arc<AtomicU64>,
    stalls: watch::Receiver<u64>,
    mut tamper: Tamper,
) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            let at = Instant::now() + Duration::from_millis(latency_ms.load(Ordering::Relaxed));
            let (chunk, close) = tamper.apply(&buffer[..n]);
            // Closing: the writer delivers what it has, then shuts its side.
            if chunks.send((at, chunk)).is_err() || close {
                break;
            }
        }
    };
    let writer = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if stalls.has_changed().unwrap_or(false) {
                // Stalled: hold the bytes and the socket until the connection is cut.
                std::future::pending::<()>().await;
            }
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

fn damage(chunk: &mut [u8], corruptions: &mut [Corruption]) {
    for c in corruptions {
        damage_one(chunk, c);
    }
}

fn damage_one(chunk: &mut [u8], c: &mut Corruption) {
    let mut at = 0;
    while c.times > 0 && at + c.find.len() <= chunk.len() {
        match chunk[at..].windows(c.find.len()).position(|w| w == c.find.as_slice()) {
            Some(found) => {
                let start = at + found;
                chunk[start..start + c.find.len()].copy_from_slice(&c.replace);
                c.times -= 1;
                at = start + c.find.len();
            }
            None => break,
        }
    }
}
