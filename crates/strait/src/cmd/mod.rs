//! The commands, one file each; [`load`] reads the configuration as every command does.

pub mod check_config;
pub mod checkpoints;
pub mod cutover;
#[cfg(feature = "demo")]
pub mod demo;
pub mod import;
pub mod lag;
pub mod plan;
pub mod run;
pub mod status;
pub mod translate;

use std::path::PathBuf;

use anyhow::Context;
use strait_config::{ImportOptions, Mm2Config, STRIMZI_MOUNT_ROOT};

/// The configuration every command reads, and how to read it.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// The MirrorMaker 2 configuration: an `mm2.properties`, or the JSON configs of MM2's
    /// connectors (one file each: Connect REST bodies or MSK Connect's), or a Strimzi
    /// KafkaMirrorMaker2 resource (YAML).
    #[arg(required = true, value_name = "CONFIG")]
    config: Vec<PathBuf>,
    /// The folder that stands for Strimzi's /opt/kafka: a KafkaMirrorMaker2's secrets are read
    /// from its mm2-password/, mm2-certs/ and mm2-oauth/ folders, as Strimzi mounts them.
    #[arg(long, value_name = "DIR", default_value = STRIMZI_MOUNT_ROOT)]
    strimzi_mount_root: PathBuf,
}

impl ConfigArgs {
    /// How files other than `mm2.properties` are read.
    fn options(&self) -> ImportOptions {
        ImportOptions {
            strimzi_mount_root: self.strimzi_mount_root.clone(),
        }
    }

    /// The files, as named on the command line.
    fn names(&self) -> String {
        let names: Vec<String> = self.config.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    }
}

/// Loads and validates the configuration, logging what it ignores.
pub fn load(args: &ConfigArgs) -> anyhow::Result<Mm2Config> {
    let config =
        Mm2Config::from_paths(&args.config, &args.options()).with_context(|| format!("reading {}", args.names()))?;
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
    #[command(flatten)]
    config: ConfigArgs,
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
