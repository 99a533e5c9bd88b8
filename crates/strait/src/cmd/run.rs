//! `strait run`: mirror until SIGINT/SIGTERM, with the progress line on a terminal.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use strait_mirror::Stats;

use super::{load, ConfigArgs};

/// Options of `strait run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Only run flows whose target is one of these clusters (MM2's `--clusters`).
    #[arg(long, num_args = 1..)]
    clusters: Vec<String>,
    /// Serve /metrics, /status and /health on this host:port (overrides `strait.http.listener`).
    #[arg(long, value_name = "HOST:PORT")]
    http: Option<String>,
}

/// `strait run`.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let config = load(&args.config)?;
    // Every pair MM2 would run a herder for: enabled flows, and heartbeat-only ones.
    let flows: Vec<_> = config
        .flows()
        .iter()
        .filter(|flow| args.clusters.is_empty() || args.clusters.contains(&flow.target.alias))
        .cloned()
        .collect();
    anyhow::ensure!(
        !flows.is_empty(),
        "no source->target flow to run in {}{}: enable one with e.g. `A->B.enabled = true`",
        args.config.names(),
        if args.clusters.is_empty() {
            String::new()
        } else {
            format!(" whose target is in {:?}", args.clusters)
        }
    );
    // Refused now rather than by each flow as it connects: the kernel's answer is the process's.
    if config.io() == strait_config::IoSetting::IoUring {
        strait_client::IoPath::io_uring(false)?;
    }
    let listener = match args.http.as_deref().or(config.http_listener()) {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("cannot serve HTTP on {address} (strait.http.listener / --http)"))?,
        ),
        None => None,
    };
    let process = strait_mirror::Process::new(&config);
    // Every process of this configuration joins a group on each target cluster, and mirrors
    // the share it is assigned (everything, alone).
    let membership = Arc::new(strait_mirror::Membership::start(&config, &flows));
    let handles: Vec<_> = flows
        .into_iter()
        .map(|flow| {
            let seat = membership.seat(&flow);
            strait_mirror::run_flow(flow, &process, seat)
        })
        .collect();
    let stats: Vec<Arc<Stats>> = handles.iter().map(|h| h.stats().clone()).collect();
    let mut background = Vec::new();
    if let Some(listener) = listener {
        tracing::info!(address = %listener.local_addr()?, "serving /metrics, /status and /health");
        background.push(tokio::spawn(crate::http::serve(
            listener,
            Arc::new(stats.clone()),
            process.budget.clone(),
            membership.clone(),
        )));
    }
    let progress_line = std::io::stderr().is_terminal();
    if progress_line {
        background.push(tokio::spawn(show_progress(stats)));
    }
    let signal = wait_for_signal();
    tokio::pin!(signal);
    // A flow only ends by itself when it cannot go on (e.g. a cluster refuses our credentials,
    // or a partition stopped); an unreachable cluster is waited for.
    while !handles.iter().any(|h| h.is_finished()) {
        tokio::select! {
            result = &mut signal => {
                result?;
                break;
            }
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
    }
    for task in background {
        task.abort();
    }
    if progress_line {
        eprintln!();
    }
    tracing::info!(
        "shutting down: draining batches in flight and storing progress (each within {:?}, \
         task.shutdown.graceful.timeout.ms)",
        config.shutdown_timeout()
    );
    // All flows at once: one stuck on an unreachable cluster must not hold the others up.
    let stops: Vec<_> = handles.into_iter().map(|handle| tokio::spawn(handle.stop())).collect();
    let mut errors = Vec::new();
    for stop in stops {
        let stopped = match stop.await {
            Ok(stopped) => stopped,
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        };
        if let Err(error) = stopped {
            tracing::error!(%error, "flow ended with an error");
            let error = error.to_string();
            // Both flows of a pair fail alike when one cluster refuses us: say it once.
            if !errors.contains(&error) {
                errors.push(error);
            }
        }
    }
    // Once the flows stored their progress: the group's other members start from it.
    membership.stop(config.shutdown_timeout()).await;
    // The errors again, last, so that the exit message alone says which cluster failed and why.
    anyhow::ensure!(
        errors.is_empty(),
        "flows stopped with errors (see the log above): {}",
        errors.join("; ")
    );
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

/// Redraws one line on the terminal every second (see [`Progress`]).
async fn show_progress(flows: Vec<Arc<Stats>>) {
    let mut progress = Progress::default();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        ticker.tick().await;
        let records: u64 = flows.iter().map(|f| f.records()).sum();
        let bytes: u64 = flows.iter().map(|f| f.bytes()).sum();
        let lags: Vec<_> = flows.iter().flat_map(|f| f.lag()).collect();
        // Before a partition has seen its source end, its lag of 0 means nothing yet.
        let lag = lags
            .iter()
            .any(|l| l.source_end.is_some())
            .then(|| lags.iter().map(|l| l.records).sum());
        // Return to the line's start and clear it: the line is redrawn in place.
        eprint!("\r\x1b[2K{}", progress.line(Instant::now(), records, bytes, lag));
    }
}

/// The progress line: records and bytes mirrored, the rates over the last five seconds, the
/// lag left and when it will be gone at that rate.
#[derive(Debug, Default)]
struct Progress {
    /// (when, records, bytes) of the last six lines.
    history: VecDeque<(Instant, u64, u64)>,
}

impl Progress {
    /// The line at `now` for these totals; `lag` is `None` while no partition knows its end.
    fn line(&mut self, now: Instant, records: u64, bytes: u64, lag: Option<i64>) -> String {
        self.history.push_back((now, records, bytes));
        if self.history.len() > 6 {
            self.history.pop_front();
        }
        let (then, records_then, bytes_then) = self.history[0];
        let seconds = now.duration_since(then).as_secs_f64().max(1.0);
        let record_rate = records.saturating_sub(records_then) as f64 / seconds;
        let byte_rate = bytes.saturating_sub(bytes_then) as f64 / seconds;
        let lag = match lag {
            None => "lag not known yet, starting".to_owned(),
            Some(0) => "lag 0 records, caught up".to_owned(),
            Some(lag) if record_rate >= 1.0 => {
                format!(
                    "lag {} records, ETA {:.0} s",
                    count(lag as f64),
                    lag as f64 / record_rate
                )
            }
            Some(lag) => format!("lag {} records, ETA unknown", count(lag as f64)),
        };
        format!(
            "{} records, {} mirrored | {}/s, {}/s | {lag}",
            count(records as f64),
            size(bytes as f64),
            count(record_rate),
            size(byte_rate),
        )
    }
}

/// `1234567` → `1.23 M`.
fn count(value: f64) -> String {
    match value {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 1e4 => format!("{:.1} k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// Bytes in binary units.
fn size(bytes: f64) -> String {
    match bytes {
        b if b >= (1u64 << 30) as f64 => format!("{:.2} GiB", b / (1u64 << 30) as f64),
        b if b >= (1u64 << 20) as f64 => format!("{:.1} MiB", b / (1u64 << 20) as f64),
        b if b >= 1024.0 => format!("{:.1} KiB", b / 1024.0),
        b => format!("{b:.0} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_shows_totals_rates_lag_and_eta() {
        let mut progress = Progress::default();
        let start = Instant::now();
        assert_eq!(
            progress.line(start, 0, 0, None),
            "0 records, 0 B mirrored | 0/s, 0 B/s | lag not known yet, starting"
        );
        assert_eq!(
            progress.line(start, 0, 0, Some(1_000)),
            "0 records, 0 B mirrored | 0/s, 0 B/s | lag 1000 records, ETA unknown"
        );
        // 50 000 records and 5 MiB in 5 s: 10 000 records/s, so 500 000 behind is 50 s away.
        let later = start + Duration::from_secs(5);
        assert_eq!(
            progress.line(later, 50_000, 5 << 20, Some(500_000)),
            "50.0 k records, 5.0 MiB mirrored | 10.0 k/s, 1.0 MiB/s | lag 500.0 k records, ETA 50 s"
        );
        let line = progress.line(later + Duration::from_secs(1), 2_500_000, 3 << 30, Some(0));
        assert!(line.starts_with("2.50 M records, 3.00 GiB mirrored | "), "{line}");
        assert!(line.ends_with("| lag 0 records, caught up"), "{line}");
    }

    #[test]
    fn rates_cover_the_last_five_seconds() {
        let mut progress = Progress::default();
        let start = Instant::now();
        for second in 0..10u64 {
            // 1 000 records a second for the first five, none after.
            let records = 1_000 * second.min(5);
            progress.line(start + Duration::from_secs(second), records, 0, Some(1));
        }
        let line = progress.line(start + Duration::from_secs(10), 5_000, 0, Some(1));
        assert!(line.contains("| 0/s, 0 B/s |"), "{line}");
    }
}
