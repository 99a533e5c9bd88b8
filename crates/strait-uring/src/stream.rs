//! A connected TCP socket whose bytes go through the ring, as a reader and a writer.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes};

use crate::ring::{Ring, MAX_IOVECS};

/// Splits a connected socket into a reader and a writer on `ring`. The socket is shut down when
/// both are gone, which ends any operation of theirs still in the ring; it is closed when the
/// ring has answered the last one.
pub fn split(ring: Ring, socket: TcpStream) -> io::Result<(RingReader, RingWriter)> {
    // The ring waits for readiness itself; a non-blocking socket would only add failed tries.
    socket.set_nonblocking(false)?;
    let socket = Arc::new(socket);
    ring.stats().sockets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let guard = Arc::new(ShutdownOnDrop(socket.clone(), ring.clone()));
    let reader = RingReader {
        ring: ring.clone(),
        socket: socket.clone(),
        _guard: guard.clone(),
    };
    let writer = RingWriter {
        ring,
        socket,
        _guard: guard,
    };
    Ok((reader, writer))
}

/// Shuts the socket down once its reader and writer are gone, and stops counting it.
struct ShutdownOnDrop(Arc<TcpStream>, Ring);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        let _ = self.0.shutdown(Shutdown::Both);
        self.1
            .stats()
            .sockets
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The receiving half of a socket on the ring.
pub struct RingReader {
    ring: Ring,
    socket: Arc<TcpStream>,
    _guard: Arc<ShutdownOnDrop>,
}

impl RingReader {
    /// Receives into the spare room of `buf` (which must have some) and advances it; `Ok(0)` is
    /// the end of the stream. The buffer is handed back whatever happens; if this future is
    /// dropped, the ring keeps it until the kernel is done with it.
    pub async fn read_buf<B: BufMut + Default + Send + 'static>(&mut self, buf: B) -> (B, io::Result<usize>) {
        self.ring.recv(&self.socket, buf).await
    }
}

/// The sending half of a socket on the ring.
pub struct RingWriter {
    ring: Ring,
    socket: Arc<TcpStream>,
    _guard: Arc<ShutdownOnDrop>,
}

impl RingWriter {
    /// Sends every byte of `parts`, in order. Parts stay alive in the ring until the kernel is
    /// done with them (for a zero-copy send, until its notification).
    pub async fn write_all(&mut self, mut parts: Vec<Bytes>) -> io::Result<()> {
        parts.retain(|part| !part.is_empty());
        let mut first = 0;
        while first < parts.len() {
            let last = parts.len().min(first + MAX_IOVECS);
            // Clones share the bytes: the ring's copy of each part pins them, not ours.
            let mut sent = self.ring.send(&self.socket, parts[first..last].to_vec()).await?;
            if sent == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            while sent > 0 {
                let part = &mut parts[first];
                let step = sent.min(part.len());
                part.advance(step);
                sent -= step;
                if part.is_empty() {
                    first += 1;
                }
            }
        }
        Ok(())
    }

    /// Shuts the socket down both ways: the broker sees the end, and the reader's receive ends.
    pub fn shutdown(&self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    use bytes::BytesMut;

    use super::*;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    #[tokio::test]
    async fn bytes_go_out_and_come_back_in_order_and_large_sends_are_zero_copy() {
        let ring = Ring::get().expect("this machine kind allows io_uring");
        let (client, server) = pair();
        let (mut reader, mut writer) = split(ring.clone(), client).unwrap();
        // An echo peer on a plain thread.
        let echo = std::thread::spawn(move || {
            let mut server = server;
            let mut buffer = vec![0; 64 * 1024];
            loop {
                match server.read(&mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => server.write_all(&buffer[..n]).unwrap(),
                }
            }
        });
        let sends_before = ring.stats().zerocopy_sends();
        assert!(ring.stats().sockets() >= 1, "the socket is counted");
        // Many small parts (more than one sendmsg takes) and a large one.
        let mut parts: Vec<Bytes> = (0..3000u32).map(|i| Bytes::from(i.to_be_bytes().to_vec())).collect();
        parts.push(Bytes::from(
            (0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect::<Vec<u8>>(),
        ));
        let expected: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let sending = tokio::spawn(async move {
            writer.write_all(parts).await.unwrap();
            writer
        });
        let mut received = BytesMut::with_capacity(expected.len());
        while received.len() < expected.len() {
            let (buffer, result) = reader.read_buf(received).await;
            received = buffer;
            assert!(result.unwrap() > 0, "the stream ended early");
        }
        assert!(received[..] == expected[..], "the bytes came back changed");
        let writer = sending.await.unwrap();
        assert!(
            ring.stats().zerocopy_sends() > sends_before,
            "the large send was not zero-copy"
        );
        // Every zero-copy send is followed by the kernel's notification.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while ring.stats().zerocopy_notifications() < ring.stats().zerocopy_sends() {
            assert!(std::time::Instant::now() < deadline, "notifications missing");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop((reader, writer));
        echo.join().unwrap();
    }

    #[tokio::test]
    async fn a_dropped_receive_keeps_its_buffer_and_a_shutdown_ends_the_stream() {
        let ring = Ring::get().unwrap();
        let (client, mut server) = pair();
        let (mut reader, writer) = split(ring, client).unwrap();
        // A receive that waits, abandoned: the ring holds its buffer until it completes.
        let waiting = tokio::time::timeout(Duration::from_millis(50), reader.read_buf(Vec::<u8>::with_capacity(16)));
        assert!(waiting.await.is_err(), "nothing was sent, so the receive must wait");
        server.write_all(b"late").unwrap();
        // The abandoned receive took "late"; a peer that closes ends the next one.
        drop(server);
        let (buffer, result) = reader.read_buf(Vec::<u8>::with_capacity(16)).await;
        assert_eq!((buffer.len(), result.unwrap()), (0, 0));
        // Shutting down our side ends a receive still waiting, too.
        let (client, _server) = pair();
        let (mut reader, writer2) = split(Ring::get().unwrap(), client).unwrap();
        let receive = tokio::spawn(async move { reader.read_buf(Vec::<u8>::with_capacity(16)).await.1 });
        tokio::time::sleep(Duration::from_millis(20)).await;
        writer2.shutdown();
        let ended = tokio::time::timeout(Duration::from_secs(5), receive).await;
        assert_eq!(ended.expect("the shutdown ended the receive").unwrap().unwrap(), 0);
        drop(writer);
    }

    #[test]
    fn the_test_switch_reports_unavailability_as_seccomp_would() {
        // `Ring::get` answers once per process, so the switch is checked in a child process.
        if std::env::var_os(crate::UNAVAILABLE_SWITCH).is_some() {
            let error = Ring::get().unwrap_err().to_string();
            assert!(error.contains("Operation not permitted"), "{error}");
            return;
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "stream::tests::the_test_switch_reports_unavailability_as_seccomp_would",
            ])
            .env(crate::UNAVAILABLE_SWITCH, "1")
            .status()
            .unwrap();
        assert!(status.success());
    }
}
