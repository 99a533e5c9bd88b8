//! The byte budget of the whole process (`strait.buffer.memory`): bytes fetched but not yet
//! acknowledged by the target never exceed it, whatever the number of partitions.
//!
//! A fetcher reserves room before each Fetch and sizes the request to it; the response then holds
//! its frame's bytes as a [`Charge`] until the last batch taken from it is acknowledged (or
//! dropped), because forwarded batches are slices of the response, not copies. Kafka may return
//! one batch over the request's limits (KIP-74: the first batch of a response always comes
//! whole), so the budget can be passed by at most one batch per response.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::metrics::PrometheusText;

/// The process-wide byte budget.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    state: Mutex<State>,
    released: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Bytes reserved or held now.
    used: usize,
    /// The most ever reserved or held at once.
    high_water: usize,
    /// Fetchers sharing the budget, for their fair share.
    fetchers: usize,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            state: Mutex::default(),
            released: Notify::new(),
        })
    }

    /// The limit (`strait.buffer.memory`).
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes reserved or held now.
    pub fn used(&self) -> usize {
        self.state.lock().expect("budget lock").used
    }

    /// The most bytes ever reserved or held at once.
    pub fn high_water(&self) -> usize {
        self.state.lock().expect("budget lock").high_water
    }

    /// Appends the budget's gauges in Prometheus text format.
    pub fn write_prometheus(&self, out: &mut PrometheusText) {
        let state = self.state.lock().expect("budget lock");
        out.gauge(
            "strait_buffer_bytes",
            "Bytes fetched (or reserved for a fetch) and not yet acknowledged by the target, for the whole process.",
            &[],
            state.used as f64,
        );
        out.gauge(
            "strait_buffer_bytes_max",
            "The most bytes ever fetched and not yet acknowledged at once (high-water mark).",
            &[],
            state.high_water as f64,
        );
        out.gauge(
            "strait_buffer_limit_bytes",
            "strait.buffer.memory: the limit of fetched, unacknowledged bytes (passed by at most one batch per response).",
            &[],
            self.limit as f64,
        );
    }

    /// What one fetcher may reserve at once: an equal share of the budget, so that every source
    /// broker gets to fetch.
    pub(crate) fn fair_share(&self) -> usize {
        let fetchers = self.state.lock().expect("budget lock").fetchers.max(1);
        self.limit / fetchers
    }

    /// Counts a fetcher in the fair share until the returned guard is dropped.
    pub(crate) fn register_fetcher(self: &Arc<Self>) -> FetcherShare {
        self.state.lock().expect("budget lock").fetchers += 1;
        FetcherShare(self.clone())
    }

    /// Reserves `want` bytes, or less if less is free but at least `min`; waits while not even
    /// `min` is free.
    pub(crate) async fn reserve(self: &Arc<Self>, min: usize, want: usize) -> Reservation {
        let min = min.min(want);
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            {
                let mut state = self.state.lock().expect("budget lock");
                let free = self.limit.saturating_sub(state.used);
                if free >= min.max(1) {
                    let bytes = want.min(free);
                    state.add(bytes);
                    return Reservation {
                        budget: self.clone(),
                        bytes,
                    };
                }
            }
            released.await;
        }
    }

    /// Charges `bytes` whether or not they fit: memory that exists already (a batch rebuilt on
    /// the slow path) is counted, and the fetchers wait until it is released.
    pub(crate) fn charge(self: &Arc<Self>, bytes: usize) -> Charge {
        self.state.lock().expect("budget lock").add(bytes);
        Charge {
            budget: self.clone(),
            bytes,
        }
    }

    fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut state = self.state.lock().expect("budget lock");
        state.used -= bytes;
        drop(state);
        self.released.notify_waiters();
    }
}

impl State {
    fn add(&mut self, bytes: usize) {
        self.used += bytes;
        self.high_water = self.high_water.max(self.used);
    }
}

/// A fetcher's place in the fair share.
#[derive(Debug)]
pub(crate) struct FetcherShare(Arc<Budget>);

impl Drop for FetcherShare {
    fn drop(&mut self) {
        self.0.state.lock().expect("budget lock").fetchers -= 1;
    }
}

/// Room reserved for a Fetch response not yet received; released when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Reservation {
    /// The bytes reserved.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The response arrived with `actual` bytes: the reservation becomes a charge of exactly that.
    pub(crate) fn settle(mut self, actual: usize) -> Charge {
        let reserved = std::mem::take(&mut self.bytes);
        if actual > reserved {
            self.budget.state.lock().expect("budget lock").add(actual - reserved);
        } else {
            self.budget.release(reserved - actual);
        }
        Charge {
            budget: self.budget.clone(),
            bytes: actual,
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// Bytes held (a Fetch response, a rebuilt batch); released when the last holder drops it.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Charge {
    /// The bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn reservations_settle_to_what_arrived_and_are_released_with_their_last_holder() {
        let budget = Budget::new(1000);
        let reservation = budget.reserve(100, 600).await;
        assert_eq!((reservation.bytes(), budget.used()), (600, 600));
        let charge = Arc::new(reservation.settle(250));
        assert_eq!(budget.used(), 250);
        let holder = charge.clone();
        drop(charge);
        assert_eq!(budget.used(), 250, "a batch of the response still holds it");
        drop(holder);
        assert_eq!((budget.used(), budget.high_water()), (0, 600));
    }

    #[tokio::test]
    async fn a_reservation_takes_what_is_free_and_waits_when_less_than_its_minimum_is() {
        let budget = Budget::new(1000);
        let held = budget.charge(700);
        let partial = budget.reserve(100, 600).await;
        assert_eq!(partial.bytes(), 300, "less than wanted, but at least the minimum");
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(100, 600).await.bytes() }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "nothing is free");
        drop(held);
        let bytes = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(bytes, 600);
        drop(partial);
    }

    #[tokio::test]
    async fn a_response_over_its_reservation_is_charged_in_full() {
        let budget = Budget::new(1000);
        let charge = budget.reserve(100, 1000).await.settle(1200);
        assert_eq!((budget.used(), budget.high_water()), (1200, 1200));
        drop(charge);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn the_gauges_show_use_high_water_and_limit() {
        let budget = Budget::new(1000);
        let charge = budget.charge(300);
        drop(budget.charge(500));
        let mut text = PrometheusText::default();
        budget.write_prometheus(&mut text);
        let text = text.finish();
        assert!(text.contains("strait_buffer_bytes 300\n"), "{text}");
        assert!(text.contains("strait_buffer_bytes_max 800\n"));
        assert!(text.contains("strait_buffer_limit_bytes 1000\n"));
        drop(charge);
    }

    #[test]
    fn fetchers_share_the_budget() {
        let budget = Budget::new(900);
        assert_eq!(budget.fair_share(), 900);
        let shares: Vec<_> = (0..3).map(|_| budget.register_fetcher()).collect();
        assert_eq!(budget.fair_share(), 300);
        drop(shares);
        assert_eq!(budget.fair_share(), 900);
    }
}
