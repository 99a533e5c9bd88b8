//! What fetchers, producers and the flow tell a flow's data path router.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::route::Route;
use crate::sink::queue::PartitionQueue;
use crate::source::cursor::Cursor;
use crate::MirrorError;

/// What fetchers, producers and the flow tell the router.
#[derive(Debug)]
pub(crate) enum Event {
    /// Partitions to mirror (discovery found them).
    Add(Vec<Route>),
    /// Partitions to stop mirroring (revoked): their queues are retired, and handed back to
    /// be waited for.
    Remove {
        partitions: Vec<(String, i32)>,
        reply: oneshot::Sender<Vec<Arc<PartitionQueue>>>,
    },
    /// Cursors to place again after `after`: their leader moved or their broker is gone.
    Cursors { cursors: Vec<Cursor>, after: Duration },
    /// Queues to place again after `after`.
    Rehome {
        queues: Vec<Arc<PartitionQueue>>,
        after: Duration,
    },
    /// A partition stopped with an error that needs a person.
    Stopped { route: Route, error: MirrorError },
}
