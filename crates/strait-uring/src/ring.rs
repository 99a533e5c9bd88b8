//! The ring and the thread that drives it.
//!
//! Callers queue a [`Submission`] and wake the thread through an eventfd (only when it sleeps);
//! the thread moves each submission into the ring and keeps it, with its buffers and socket, in
//! a table until its completion (for a zero-copy send: until the kernel's notification), then
//! hands the result to the waiting future.

use std::any::Any;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use bytes::{BufMut, Bytes};
use io_uring::{cqueue, opcode, squeue, types, IoUring, Probe};
use tokio::sync::oneshot;

/// Sends of this many bytes or more go out zero-copy. Below it, pinning the pages and the
/// extra notification cost more than the copy they save (the kernel's authors put the
/// break-even at about 8-16 KiB per send). 8 KiB, so that a produce request carrying one batch
/// of a Java producer's default `batch.size` (16 KiB, often filled to 15 or so) qualifies.
pub const ZEROCOPY_THRESHOLD: usize = 8 * 1024;

/// The environment variable that makes [`Ring::get`] fail as a seccomp filter that blocks
/// `io_uring_setup` would (EPERM), for tests of the fallback: the kernel of a test machine
/// allows io_uring.
pub const UNAVAILABLE_SWITCH: &str = "STRAIT_TEST_IO_URING_UNAVAILABLE";

/// IOV_MAX: the most buffers one sendmsg takes; longer requests go out in several sends.
pub(crate) const MAX_IOVECS: usize = 1024;
/// Submission queue entries: a batch the thread moves into the ring at once. Operations in
/// flight may outnumber it.
const ENTRIES: u32 = 1024;
/// Completion queue entries, so that a burst of completions does not overflow the queue.
const COMPLETIONS: u32 = 8 * ENTRIES;
/// `IORING_SEND_ZC_REPORT_USAGE`: the notification says whether the kernel copied after all.
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// `IORING_NOTIF_USAGE_ZC_COPIED`, in a notification's result.
const NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;
/// The user data of the eventfd read that wakes the thread.
const WAKE: u64 = u64::MAX;

/// Why io_uring cannot be used in this process: the kernel's or the seccomp filter's answer.
#[derive(Debug, Clone)]
pub struct Unavailable(String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// Counts of the ring's zero-copy sends, for `/metrics`.
#[derive(Debug, Default)]
pub struct RingStats {
    /// Sockets on the ring now (split and not yet shut down).
    pub(crate) sockets: std::sync::atomic::AtomicI64,
    zerocopy_sends: AtomicU64,
    zerocopy_bytes: AtomicU64,
    zerocopy_notifications: AtomicU64,
    zerocopy_copied: AtomicU64,
}

impl RingStats {
    /// Connections whose bytes go through the ring now.
    pub fn sockets(&self) -> i64 {
        self.sockets.load(Ordering::Relaxed)
    }

    /// Sends submitted zero-copy (`IORING_OP_SENDMSG_ZC`).
    pub fn zerocopy_sends(&self) -> u64 {
        self.zerocopy_sends.load(Ordering::Relaxed)
    }

    /// Bytes the zero-copy sends carried.
    pub fn zerocopy_bytes(&self) -> u64 {
        self.zerocopy_bytes.load(Ordering::Relaxed)
    }

    /// The kernel's notifications that it was done with a zero-copy send's buffers: only then
    /// are they released.
    pub fn zerocopy_notifications(&self) -> u64 {
        self.zerocopy_notifications.load(Ordering::Relaxed)
    }

    /// Notifications saying that the kernel copied the bytes after all, as it does for a peer
    /// on the same host (loopback) or a device that cannot send from user pages.
    pub fn zerocopy_copied(&self) -> u64 {
        self.zerocopy_copied.load(Ordering::Relaxed)
    }
}

/// The process's io_uring, driven by a thread of its own. Cheap to clone.
#[derive(Clone)]
pub struct Ring {
    driver: Arc<Driver>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("zerocopy", &self.zerocopy()).finish()
    }
}

static RING: OnceLock<Result<Ring, Unavailable>> = OnceLock::new();

impl Ring {
    /// The process's ring, set up on first use; the error says why the kernel refused it
    /// (io_uring disabled by `kernel.io_uring_disabled`, blocked by a seccomp filter such as
    /// Docker's default, or a kernel too old). The answer is the same for the whole process.
    pub fn get() -> Result<Ring, Unavailable> {
        RING.get_or_init(start).clone()
    }

    /// The ring, if [`Ring::get`] has set one up: for metrics, which must not start one.
    pub fn started() -> Option<Ring> {
        RING.get().and_then(|ring| ring.as_ref().ok()).cloned()
    }

    /// Whether the kernel sends zero-copy (`IORING_OP_SENDMSG_ZC`, Linux 6.1 on).
    pub fn zerocopy(&self) -> bool {
        self.driver.zerocopy.load(Ordering::Relaxed)
    }

    /// The ring's counts.
    pub fn stats(&self) -> &RingStats {
        &self.driver.stats
    }

    /// Receives into the spare room of `buf` and advances it by what arrived (0 at the end of
    /// the stream). `buf` stays with the ring until the receive completes, even if this future
    /// is dropped.
    pub(crate) async fn recv<B: BufMut + Default + Send + 'static>(
        &self,
        socket: &Arc<TcpStream>,
        buf: B,
    ) -> (B, io::Result<usize>) {
        let (done, completed) = oneshot::channel();
        self.submit(Submission::Recv {
            socket: socket.clone(),
            buf: Box::new(buf),
            done,
        });
        let Ok((buf, result)) = completed.await else {
            return (B::default(), Err(thread_gone()));
        };
        let mut buf = *buf
            .into_any()
            .downcast::<B>()
            .expect("the buffer comes back as it went");
        if let Ok(received) = result {
            // SAFETY: the kernel wrote `received` bytes into the spare room of `buf`, starting at
            // the pointer `chunk_mut` gave (and `buf` was not touched in between).
            unsafe { buf.advance_mut(received) };
        }
        (buf, result)
    }

    /// Sends `parts` (at most [`MAX_IOVECS`]) with one sendmsg, zero-copy if they are large and
    /// the kernel can; returns how many bytes went out.
    pub(crate) async fn send(&self, socket: &Arc<TcpStream>, parts: Vec<Bytes>) -> io::Result<usize> {
        let (done, completed) = oneshot::channel();
        self.submit(Submission::Send {
            socket: socket.clone(),
            parts,
            done,
        });
        completed.await.unwrap_or_else(|_| Err(thread_gone()))
    }

    fn submit(&self, submission: Submission) {
        self.driver.queue.lock().expect("queue lock").push(submission);
        if self.driver.sleeping.swap(false, Ordering::SeqCst) {
            // A failed wake-up write leaves the thread asleep until the next completion; the
            // eventfd's counter cannot overflow at one per sleep, so there is nothing to handle.
            let _ = (&self.driver.wake).write(&1u64.to_ne_bytes());
        }
    }
}

/// The ring's thread answers every operation for the life of the process; only a bug that
/// ends it makes this error.
fn thread_gone() -> io::Error {
    io::Error::other("the io_uring thread stopped")
}

struct Driver {
    queue: Mutex<Vec<Submission>>,
    /// Set by the thread before it waits in the kernel: submitters then wake it.
    sleeping: AtomicBool,
    wake: File,
    /// Set once by the thread, before [`start`] returns.
    zerocopy: AtomicBool,
    stats: RingStats,
}

/// A receive buffer of any type, erased for the table; it comes back whole.
trait RecvBuf: Send {
    /// The spare room the kernel may write into.
    fn spare(&mut self) -> (*mut u8, usize);
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl<B: BufMut + Send + 'static> RecvBuf for B {
    fn spare(&mut self) -> (*mut u8, usize) {
        let chunk = self.chunk_mut();
        (chunk.as_mut_ptr(), chunk.len())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

type RecvDone = oneshot::Sender<(Box<dyn RecvBuf>, io::Result<usize>)>;

enum Submission {
    Recv {
        socket: Arc<TcpStream>,
        buf: Box<dyn RecvBuf>,
        done: RecvDone,
    },
    Send {
        socket: Arc<TcpStream>,
        parts: Vec<Bytes>,
        done: oneshot::Sender<io::Result<usize>>,
    },
}

/// An operation in the ring: it owns everything the kernel may still touch.
enum InFlight {
    Recv {
        _socket: Arc<TcpStream>,
        buf: Box<dyn RecvBuf>,
        done: RecvDone,
    },
    Send {
        _socket: Arc<TcpStream>,
        _parts: Vec<Bytes>,
        _message: Box<Message>,
        /// Taken when the send's result arrives; a zero-copy send stays until its notification.
        done: Option<oneshot::Sender<io::Result<usize>>>,
    },
}

/// A sendmsg's header and its buffers, at a fixed address while the kernel reads them.
struct Message {
    header: libc::msghdr,
    _iovecs: Vec<libc::iovec>,
}

fn start() -> Result<Ring, Unavailable> {
    if std::env::var_os(UNAVAILABLE_SWITCH).is_some() {
        return Err(Unavailable(format!(
            "io_uring_setup failed: {} ({UNAVAILABLE_SWITCH} is set, as a seccomp filter would)",
            io::Error::from_raw_os_error(libc::EPERM)
        )));
    }
    // SAFETY: eventfd takes no pointers; a non-negative result is a new descriptor we own.
    let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if wake < 0 {
        return Err(Unavailable(format!("eventfd failed: {}", io::Error::last_os_error())));
    }
    // SAFETY: `wake` is a fresh descriptor owned by nobody else.
    let wake = File::from(unsafe { OwnedFd::from_raw_fd(wake) });
    let driver = Arc::new(Driver {
        queue: Mutex::new(Vec::new()),
        sleeping: AtomicBool::new(false),
        wake,
        zerocopy: AtomicBool::new(false),
        stats: RingStats::default(),
    });
    // The ring is created on its thread: with IORING_SETUP_SINGLE_ISSUER only its creator may
    // submit, and with DEFER_TASKRUN the kernel's completion work runs when that thread asks.
    let (ready, setup) = mpsc::channel();
    let thread_driver = driver.clone();
    let thread = std::thread::Builder::new()
        .name("strait-io-uring".into())
        .spawn(move || match build() {
            Ok(ring) => {
                let _ = ready.send(Ok(()));
                Thread::new(ring, thread_driver).run();
            }
            Err(error) => {
                let _ = ready.send(Err(error));
            }
        });
    if let Err(error) = thread {
        return Err(Unavailable(format!("cannot start the io_uring thread: {error}")));
    }
    match setup.recv() {
        Ok(Ok(())) => Ok(Ring { driver }),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(Unavailable("the io_uring thread ended during set-up".into())),
    }
}

/// Sets up the ring and checks that the kernel has the operations we use; zero-copy sends are
/// used when it has them.
fn build() -> Result<(IoUring, bool), Unavailable> {
    let setup = |error: io::Error| {
        let why = match error.raw_os_error() {
            Some(libc::EPERM) => " (io_uring is disabled by kernel.io_uring_disabled or blocked by a seccomp filter)",
            Some(libc::ENOSYS) => " (the kernel has no io_uring)",
            _ => "",
        };
        Unavailable(format!("io_uring_setup failed: {error}{why}"))
    };
    let ring = IoUring::builder()
        .setup_cqsize(COMPLETIONS)
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(ENTRIES)
        .or_else(|_| IoUring::builder().setup_cqsize(COMPLETIONS).build(ENTRIES))
        .map_err(setup)?;
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| Unavailable(format!("io_uring probe failed: {e}")))?;
    let needed = [
        (opcode::Recv::CODE, "IORING_OP_RECV"),
        (opcode::SendMsg::CODE, "IORING_OP_SENDMSG"),
        (opcode::Read::CODE, "IORING_OP_READ"),
    ];
    if let Some((_, name)) = needed.iter().find(|(code, _)| !probe.is_supported(*code)) {
        return Err(Unavailable(format!("the kernel's io_uring lacks {name}")));
    }
    Ok((ring, probe.is_supported(opcode::SendMsgZc::CODE)))
}

/// The ring's thread: the only one that touches the ring.
struct Thread {
    ring: IoUring,
    driver: Arc<Driver>,
    in_flight: HashMap<u64, InFlight>,
    next: u64,
    /// Where the eventfd read puts the counter; read by nobody.
    wake_counter: Box<[u8; 8]>,
    wake_armed: bool,
}

impl Thread {
    fn new((ring, zerocopy): (IoUring, bool), driver: Arc<Driver>) -> Thread {
        driver.zerocopy.store(zerocopy, Ordering::Relaxed);
        Thread {
            ring,
            driver,
            in_flight: HashMap::new(),
            next: 0,
            wake_counter: Box::new([0; 8]),
            wake_armed: false,
        }
    }

    /// Runs for the life of the process: nothing ends it, so that every operation is answered.
    fn run(mut self) {
        loop {
            if !self.wake_armed {
                let read = opcode::Read::new(
                    types::Fd(self.driver.wake.as_raw_fd()),
                    self.wake_counter.as_mut_ptr(),
                    8,
                )
                .build()
                .user_data(WAKE);
                self.push(read);
                self.wake_armed = true;
            }
            let submissions = std::mem::take(&mut *self.driver.queue.lock().expect("queue lock"));
            for submission in submissions {
                self.prepare(submission);
            }
            self.driver.sleeping.store(true, Ordering::SeqCst);
            // A submission queued after the take above finds `sleeping` set and wakes us; one
            // queued before it was set is seen here.
            let wait = usize::from(self.driver.queue.lock().expect("queue lock").is_empty());
            if let Err(error) = self.ring.submit_and_wait(wait) {
                if !matches!(error.raw_os_error(), Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)) {
                    tracing::error!(%error, "io_uring_enter failed");
                }
            }
            self.driver.sleeping.store(false, Ordering::SeqCst);
            self.reap();
        }
    }

    /// Moves an entry into the submission queue, making room by submitting when it is full.
    fn push(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: every entry's buffers belong to an `InFlight` in `self.in_flight` (or to
            // `self.wake_counter`), which is kept until the entry's last completion.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            if let Err(error) = self.ring.submit() {
                if error.raw_os_error() == Some(libc::EBUSY) {
                    self.reap();
                }
            }
        }
    }

    fn prepare(&mut self, submission: Submission) {
        let id = self.next;
        self.next += 1;
        let (entry, operation) = match submission {
            Submission::Recv { socket, mut buf, done } => {
                let (pointer, room) = buf.spare();
                let entry = opcode::Recv::new(
                    types::Fd(socket.as_raw_fd()),
                    pointer,
                    room.min(u32::MAX as usize) as u32,
                )
                .build();
                let operation = InFlight::Recv {
                    _socket: socket,
                    buf,
                    done,
                };
                (entry, operation)
            }
            Submission::Send { socket, parts, done } => {
                let mut iovecs: Vec<libc::iovec> = parts
                    .iter()
                    .map(|part| libc::iovec {
                        iov_base: part.as_ptr() as *mut libc::c_void,
                        iov_len: part.len(),
                    })
                    .collect();
                // SAFETY: msghdr is plain data; all zeroes is an empty header.
                let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
                header.msg_iov = iovecs.as_mut_ptr();
                header.msg_iovlen = iovecs.len() as _;
                let message = Box::new(Message {
                    header,
                    _iovecs: iovecs,
                });
                let bytes: usize = parts.iter().map(Bytes::len).sum();
                let fd = types::Fd(socket.as_raw_fd());
                // MSG_WAITALL: the kernel retries a short send itself; MSG_NOSIGNAL: a closed
                // peer is an error, not SIGPIPE.
                let flags = (libc::MSG_WAITALL | libc::MSG_NOSIGNAL) as u32;
                let entry = if bytes >= ZEROCOPY_THRESHOLD && self.driver.zerocopy.load(Ordering::Relaxed) {
                    self.driver.stats.zerocopy_sends.fetch_add(1, Ordering::Relaxed);
                    self.driver
                        .stats
                        .zerocopy_bytes
                        .fetch_add(bytes as u64, Ordering::Relaxed);
                    opcode::SendMsgZc::new(fd, &message.header)
                        .flags(flags)
                        .ioprio(SEND_ZC_REPORT_USAGE)
                        .build()
                } else {
                    opcode::SendMsg::new(fd, &message.header).flags(flags).build()
                };
                let operation = InFlight::Send {
                    _socket: socket,
                    _parts: parts,
                    _message: message,
                    done: Some(done),
                };
                (entry, operation)
            }
        };
        self.in_flight.insert(id, operation);
        self.push(entry.user_data(id));
    }

    /// Answers every completion waiting in the queue.
    fn reap(&mut self) {
        let completions: Vec<cqueue::Entry> = self.ring.completion().collect();
        for completion in completions {
            self.complete(completion);
        }
    }

    fn complete(&mut self, completion: cqueue::Entry) {
        let id = completion.user_data();
        if id == WAKE {
            self.wake_armed = false;
            return;
        }
        // A notification's result is a bit set, not a count: see `NOTIF_USAGE_ZC_COPIED`.
        let result = match completion.result() {
            n if n >= 0 => Ok(n as usize),
            n => Err(io::Error::from_raw_os_error(n.wrapping_neg())),
        };
        let flags = completion.flags();
        let Some(operation) = self.in_flight.get_mut(&id) else {
            tracing::error!(id, "an io_uring completion for no operation");
            return;
        };
        match operation {
            InFlight::Recv { .. } => {
                if let Some(InFlight::Recv { buf, done, .. }) = self.in_flight.remove(&id) {
                    // The receiver is gone if its future was dropped: the buffer goes now.
                    let _ = done.send((buf, result));
                }
            }
            InFlight::Send { done, .. } => {
                if cqueue::notif(flags) {
                    // The kernel is done with the pages: only now may the bytes go.
                    let stats = &self.driver.stats;
                    stats.zerocopy_notifications.fetch_add(1, Ordering::Relaxed);
                    if completion.result() as u32 & NOTIF_USAGE_ZC_COPIED != 0 {
                        stats.zerocopy_copied.fetch_add(1, Ordering::Relaxed);
                    }
                    self.in_flight.remove(&id);
                    return;
                }
                if let Some(done) = done.take() {
                    let _ = done.send(result);
                }
                if !cqueue::more(flags) {
                    self.in_flight.remove(&id);
                }
            }
        }
    }
}
