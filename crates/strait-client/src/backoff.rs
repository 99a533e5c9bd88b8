//! Exponential backoff with jitter, the one used for every retry of Strait.
//!
//! Thousands of partitions that fail together (a broker restarts) must not retry together: each
//! wait is drawn at random from the upper half of its exponential step, so retries spread out
//! instead of arriving at the broker in lockstep.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Exponential backoff from `initial` to `max`, doubling per attempt, each wait drawn uniformly
/// from `[step / 2, step]`.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    attempts: u32,
    rng: SplitMix64,
}

impl Backoff {
    /// A backoff starting at `initial` and capped at `max`, seeded apart from every other one.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self::with_seed(initial, max, fresh_seed())
    }

    /// As [`Backoff::new`] with a fixed seed: the same waits every time (for tests).
    pub fn with_seed(initial: Duration, max: Duration, seed: u64) -> Self {
        Backoff {
            initial,
            max: max.max(initial),
            attempts: 0,
            rng: SplitMix64(seed),
        }
    }

    /// The next wait, and one more attempt counted.
    pub fn next_delay(&mut self) -> Duration {
        let doublings = self.attempts.min(20);
        self.attempts = self.attempts.saturating_add(1);
        let step = self.initial.saturating_mul(1 << doublings).min(self.max);
        let half = step / 2;
        // Uniform in [half, step]: never shorter than half the step, so a retry loop still backs off.
        let span = (step - half).as_nanos() as u64;
        let jitter = if span == 0 { 0 } else { self.rng.next() % (span + 1) };
        half + Duration::from_nanos(jitter)
    }

    /// Sleeps for the next wait.
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next_delay()).await;
    }

    /// How many waits were drawn since the last success.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Back to the first step, after a success.
    pub fn reset(&mut self) {
        self.attempts = 0;
    }
}

/// A small, fast pseudo-random generator (SplitMix64): jitter needs spread, not secrecy.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A seed no other backoff of this process has: a counter mixed with the clock.
fn fresh_seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    SplitMix64(clock ^ count.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn waits_double_within_the_upper_half_of_each_step_up_to_the_cap() {
        let mut backoff = Backoff::with_seed(100 * MS, 5000 * MS, 7);
        for step in [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000] {
            let wait = backoff.next_delay();
            assert!(
                wait >= step * MS / 2 && wait <= step * MS,
                "step {step} ms gave {wait:?}"
            );
        }
        backoff.reset();
        assert!(backoff.next_delay() <= 100 * MS);
    }

    #[test]
    fn backoffs_that_start_together_spread_out() {
        let waits: Vec<Duration> = (0..1000)
            .map(|seed| {
                let mut backoff = Backoff::with_seed(100 * MS, 5000 * MS, seed);
                backoff.next_delay();
                backoff.next_delay()
            })
            .collect();
        let (min, max) = (waits.iter().min().unwrap(), waits.iter().max().unwrap());
        assert!(*min < 110 * MS && *max > 190 * MS, "{min:?}..{max:?}");
        let mut distinct = waits.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 900, "only {} distinct waits", distinct.len());
    }

    #[test]
    fn fresh_backoffs_are_seeded_apart() {
        let first: Vec<Duration> = (0..5).map(|_| Backoff::new(MS * 100, MS * 5000).next_delay()).collect();
        let mut distinct = first.clone();
        distinct.dedup();
        assert!(distinct.len() > 1, "{first:?}");
    }
}
