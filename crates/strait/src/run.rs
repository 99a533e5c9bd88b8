//! `strait run` and `strait check-config`.

use std::path::PathBuf;

use anyhow::Context;
use strait_config::Mm2Config;

/// Options of `strait run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The MirrorMaker 2 configuration (`mm2.properties`).
    config: PathBuf,
    /// Only run flows whose target is one of these clusters (MM2's `--clusters`).
    #[arg(long, num_args = 1..)]
    clusters: Vec<String>,
}

/// Options of `strait check-config`.
#[derive(Debug, clap::Args)]
pub struct CheckConfigArgs {
    /// The MirrorMaker 2 configuration (`mm2.properties`).
    config: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Loads and validates the configuration, logging what it ignores.
pub fn load(path: &PathBuf) -> anyhow::Result<Mm2Config> {
    let config = Mm2Config::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    for ignored in config.ignored() {
        tracing::info!(line = ignored.line, key = %ignored.key, "ignored: {}", ignored.reason);
    }
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
    Ok(config)
}

/// `strait check-config`.
pub fn check_config(args: CheckConfigArgs) -> anyhow::Result<()> {
    let config = load(&args.config)?;
    // Security settings are read as `run` reads them (stores and key files too), so that an
    // unsupported mechanism or a JKS store shows up here rather than at start.
    for flow in config.flows() {
        strait_mirror::client_config(&flow.source, strait_config::ClientRole::Consumer)?;
        strait_mirror::client_config(&flow.target, strait_config::ClientRole::Producer)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&config.to_json())?);
    } else {
        print!("{config}");
    }
    Ok(())
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
        args.config.display(),
        if args.clusters.is_empty() {
            String::new()
        } else {
            format!(" whose target is in {:?}", args.clusters)
        }
    );
    let handles: Vec<_> = flows.into_iter().map(strait_mirror::run_flow).collect();
    let signal = wait_for_signal();
    tokio::pin!(signal);
    // A flow only ends by itself when it cannot go on (e.g. a cluster is unreachable at start).
    while !handles.iter().any(|h| h.is_finished()) {
        tokio::select! {
            result = &mut signal => {
                result?;
                break;
            }
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
    }
    tracing::info!("shutting down: draining batches in flight and storing progress");
    let mut errors = Vec::new();
    for handle in handles {
        if let Err(error) = handle.stop().await {
            tracing::error!(%error, "flow ended with an error");
            let error = error.to_string();
            // Both flows of a pair fail alike when one cluster refuses us: say it once.
            if !errors.contains(&error) {
                errors.push(error);
            }
        }
    }
    // The errors again, last, so that the exit message alone says which cluster failed and why.
    anyhow::ensure!(
        errors.is_empty(),
        "some partitions stopped with errors (see the log above): {}",
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
