//! `strait check-config`: the effective flows and settings, and what is ignored.

use super::{load, ConfigArgs};

/// Options of `strait check-config`.
#[derive(Debug, clap::Args)]
pub struct CheckConfigArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
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
