//! The byte path under a connection: tokio's sockets (epoll) or the process's io_uring
//! ([`strait_uring::Ring`]). The connection frames and pipelines the same way on either; only
//! how bytes reach the socket differs.

use std::future::Future;
use std::io::{self, IoSlice};
use std::sync::Once;

use bytes::{Buf, BufMut, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How a connection's socket moves bytes (`strait.io`).
#[derive(Debug, Clone, Default)]
pub enum IoPath {
    /// tokio's sockets on epoll: readiness, then a read or write system call.
    #[default]
    Epoll,
    /// The process's io_uring: receives into a frame's own room, zero-copy sends for large
    /// requests. Plaintext connections only: TLS encrypts in user space, so a TLS connection
    /// stays on epoll whatever the setting.
    IoUring(strait_uring::Ring),
}

/// Whether `auto` picks io_uring for plaintext connections: the choice of the epoll against
/// io_uring benchmark in `perf/` (see the README's "I/O paths"). TLS connections stay on epoll.
pub const AUTO_USES_IO_URING: bool = false;

impl IoPath {
    /// `strait.io = io_uring`: the ring for plaintext connections, refused where the kernel
    /// does not allow it, with the key and why. TLS connections stay on epoll (said once).
    pub fn io_uring(tls: bool) -> crate::Result<IoPath> {
        if tls {
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                tracing::info!(
                    "strait.io = io_uring: TLS connections stay on epoll (TLS encrypts in user space, so the \
                     ring could not send the forwarded bytes without copying them)"
                )
            });
            return Ok(IoPath::Epoll);
        }
        strait_uring::Ring::get()
            .map(IoPath::IoUring)
            .map_err(|why| crate::Error::Config {
                key: "strait.io".into(),
                message: format!(
                    "io_uring is not available: {why}; set strait.io = epoll, or auto to fall back to epoll by itself"
                ),
            })
    }

    /// `strait.io = auto`: io_uring where the benchmark chose it ([`AUTO_USES_IO_URING`]:
    /// plaintext only) and the kernel allows it, else epoll. The kernel is asked either way, and
    /// the choice is said once per process, with why io_uring is not used.
    pub fn auto(tls: bool) -> IoPath {
        static SAID: Once = Once::new();
        let ring = strait_uring::Ring::get();
        match ring {
            Ok(ring) if AUTO_USES_IO_URING && !tls => {
                SAID.call_once(|| tracing::info!("strait.io = auto: plaintext connections use io_uring"));
                IoPath::IoUring(ring)
            }
            Ok(_) => {
                SAID.call_once(|| {
                    tracing::info!(
                        "strait.io = auto: using epoll, the benchmark's choice (io_uring is available; \
                         strait.io = io_uring selects it)"
                    )
                });
                IoPath::Epoll
            }
            Err(why) => {
                // A warning only where io_uring would have been used.
                SAID.call_once(|| {
                    if AUTO_USES_IO_URING && !tls {
                        tracing::warn!(%why, "strait.io = auto: io_uring is not available; using epoll")
                    } else {
                        tracing::info!(%why, "strait.io = auto: io_uring is not available; using epoll")
                    }
                });
                IoPath::Epoll
            }
        }
    }
}

/// The receiving half of a connection's socket. Buffers go in and come back, so that the ring
/// may keep one while the kernel writes into it.
pub(crate) trait FrameRead: Send {
    /// Reads into the spare room of `buf`; `Ok(0)` is the end of the stream.
    fn read_buf<B: BufMut + Default + Send + 'static>(
        &mut self,
        buf: B,
    ) -> impl Future<Output = (B, io::Result<usize>)> + Send;
}

/// The sending half of a connection's socket.
pub(crate) trait FrameWrite: Send {
    /// Writes every byte of `parts`, in order, and flushes.
    fn write_all(&mut self, parts: Vec<Bytes>) -> impl Future<Output = io::Result<()>> + Send;
    /// Ends the connection: the broker sees the end, and a read still waiting ends.
    fn shutdown(&mut self) -> impl Future<Output = ()> + Send;
}

/// A tokio read half (plain TCP, or TLS).
pub(crate) struct EpollRead<R>(pub R);

/// A tokio write half (plain TCP, or TLS).
pub(crate) struct EpollWrite<W>(pub W);

impl<R: AsyncRead + Unpin + Send> FrameRead for EpollRead<R> {
    async fn read_buf<B: BufMut + Default + Send + 'static>(&mut self, mut buf: B) -> (B, io::Result<usize>) {
        let result = self.0.read_buf(&mut buf).await;
        (buf, result)
    }
}

impl<W: AsyncWrite + Unpin + Send> FrameWrite for EpollWrite<W> {
    async fn write_all(&mut self, mut parts: Vec<Bytes>) -> io::Result<()> {
        write_all_vectored(&mut self.0, &mut parts).await?;
        // TLS buffers what it encrypts: flush so that every request reaches the broker now.
        self.0.flush().await
    }

    async fn shutdown(&mut self) {
        let _ = AsyncWriteExt::shutdown(&mut self.0).await;
    }
}

impl FrameRead for strait_uring::RingReader {
    fn read_buf<B: BufMut + Default + Send + 'static>(
        &mut self,
        buf: B,
    ) -> impl Future<Output = (B, io::Result<usize>)> + Send {
        strait_uring::RingReader::read_buf(self, buf)
    }
}

impl FrameWrite for strait_uring::RingWriter {
    fn write_all(&mut self, parts: Vec<Bytes>) -> impl Future<Output = io::Result<()>> + Send {
        strait_uring::RingWriter::write_all(self, parts)
    }

    async fn shutdown(&mut self) {
        strait_uring::RingWriter::shutdown(self);
    }
}

/// Writes all of `parts` with vectored writes, going on where a short write stopped.
async fn write_all_vectored<W: AsyncWrite + Unpin>(socket: &mut W, parts: &mut [Bytes]) -> std::io::Result<()> {
    let mut first = 0;
    while first < parts.len() {
        let slices: Vec<IoSlice<'_>> = parts[first..].iter().map(|p| IoSlice::new(p)).collect();
        let mut written = socket.write_vectored(&slices).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let part = &mut parts[first];
            let step = written.min(part.len());
            part.advance(step);
            written -= step;
            if part.is_empty() {
                first += 1;
            }
        }
        while first < parts.len() && parts[first].is_empty() {
            first += 1;
        }
    }
    Ok(())
}
