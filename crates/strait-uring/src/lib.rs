//! An io_uring byte path for TCP sockets, beside tokio.
//!
//! # Layout
//!
//! - `ring`: [`Ring`], the process's one ring, probed once ([`Ring::get`]) and driven by a
//!   thread of its own. Operations own their buffers (and a handle on their socket) until the
//!   kernel is done with them, so dropping the future that waits for one is always safe. Sends of
//!   [`ZEROCOPY_THRESHOLD`] bytes or more go out with `IORING_OP_SENDMSG_ZC` and keep their bytes
//!   until the kernel's notification; [`RingStats`] counts them.
//! - `stream`: [`split`] turns a connected socket into a [`RingReader`] and a [`RingWriter`]
//!   whose reads and writes go through the ring.
//!
//! Why a thread of its own rather than a completion runtime: the rest of Strait (its HTTP
//! listener, timers, TLS connections, the test kit) runs on tokio, and one ring serves every
//! connection of every runtime in the process, so tests and tools that start runtimes of their
//! own share it too. Waiting futures are woken through tokio's oneshot channels.

mod ring;
mod stream;

pub use ring::{Ring, RingStats, Unavailable, UNAVAILABLE_SWITCH, ZEROCOPY_THRESHOLD};
pub use stream::{split, RingReader, RingWriter};
