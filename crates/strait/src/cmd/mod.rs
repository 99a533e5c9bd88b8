//! The commands, one file each; [`load`] reads the configuration as every command does.

pub mod check_config;
pub mod checkpoints;
#[cfg(feature = "demo")]
pub mod demo;
pub mod lag;
pub mod plan;
pub mod run;
pub mod status;
pub mod translate;

use std::path::PathBuf;

use anyhow::Context;
use strait_config::Mm2Config;

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

/// Options of `strait lag` and `strait status`.
#[derive(Debug, clap::Args)]
pub struct OpsArgs {
    /// The MirrorMaker 2 configuration (`mm2.properties`).
    config: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Left-aligned columns, two spaces apart.
pub(crate) fn print_table<const N: usize>(rows: &[[String; N]]) {
    let widths: Vec<usize> = (0..N)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        println!("{}", line.join("  ").trim_end());
    }
}
