//! `BrokerConnection::connect` against a loopback "broker" that answers with the fuzz input:
//! the response framing of `connection.rs`'s read loop (4-byte size prefix, frame-size limit,
//! correlation-id matching) and ApiVersions v3 decoding, with the v0 retry, through the real
//! code path. The fake broker reads the client's first request, writes the input, closes its
//! write side and waits for the client to hang up, so an input that is not a whole answer
//! ends in EOF (an error) rather than in the request timeout.
#![no_main]

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use strait_client::{BrokerConnection, ConnectionConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

struct Broker {
    runtime: Runtime,
    listener: TcpListener,
    address: SocketAddr,
}

fn broker() -> &'static Broker {
    static BROKER: OnceLock<Broker> = OnceLock::new();
    BROKER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port");
        let address = listener.local_addr().expect("a bound address");
        Broker {
            runtime,
            listener,
            address,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let broker = broker();
    let config = ConnectionConfig {
        client_id: "fuzz".into(),
        // Only reached if the input leaves the client waiting with the socket open, which the
        // fake broker never does; short so that a bug there shows as slowness, not a hang.
        request_timeout: Duration::from_millis(200),
        connect_timeout: Duration::from_secs(1),
        ..ConnectionConfig::default()
    };
    let address = broker.address.to_string();
    broker.runtime.block_on(async {
        let serve = async {
            let (mut socket, _) = broker.listener.accept().await.expect("accept");
            // The ApiVersions request: size prefix, then that many bytes.
            let mut size = [0u8; 4];
            if socket.read_exact(&mut size).await.is_err() {
                return;
            }
            let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
            if socket.read_exact(&mut request).await.is_err() {
                return;
            }
            let _ = socket.write_all(data).await;
            let _ = socket.shutdown().await;
            // Drain until the client closes (a v0 retry may arrive meanwhile).
            let mut sink = [0u8; 4096];
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
            })
            .await;
        };
        let client = async {
            if let Ok(connection) = BrokerConnection::connect(&address, config).await {
                // Negotiated: every lookup must answer without panicking.
                for api in [
                    strait_client::kafka_protocol::messages::ApiKey::Fetch,
                    strait_client::kafka_protocol::messages::ApiKey::Produce,
                    strait_client::kafka_protocol::messages::ApiKey::Metadata,
                ] {
                    let _ = connection.version(api);
                }
            }
        };
        tokio::join!(serve, client);
    });
});
