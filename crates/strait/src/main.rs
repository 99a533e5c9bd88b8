//! `strait`: the command-line entry point.

mod demo;
mod groups;
mod http;
mod ops;
mod plan;
mod run;

use std::io::{IsTerminal, Write};

use clap::{Parser, Subcommand};

/// Strait mirrors Kafka topics between clusters, doing MirrorMaker 2's job without Kafka
/// Connect and without a JVM.
#[derive(Debug, Parser)]
#[command(name = "strait", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Mirror topics as the enabled flows of an MM2 configuration say, until SIGINT/SIGTERM.
    Run(run::RunArgs),
    /// Parse an MM2 configuration and print the effective flows and settings.
    CheckConfig(run::CheckConfigArgs),
    /// Show which topics each flow would replicate, their remote names, and which are skipped
    /// and why, without writing anything.
    Plan(plan::PlanArgs),
    /// Show each flow's state read from the clusters: last heartbeat, partitions, total lag.
    Status(ops::OpsArgs),
    /// Show each mirrored partition's position, source log end offset and lag.
    Lag(ops::OpsArgs),
    /// Print the latest checkpoints (consumer group positions translated for the target).
    Checkpoints(groups::CheckpointsArgs),
    /// Print the target offsets a consumer group failing over should use.
    Translate(groups::TranslateArgs),
    /// Start two local Kafka clusters (fetched with Maven), put data in the source and show the
    /// mirror at work; everything is stopped and removed at the end.
    Demo(demo::DemoArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(LogWriter::new)
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    match cli.command {
        Command::Run(args) => runtime.block_on(run::run(args)),
        Command::CheckConfig(args) => run::check_config(args),
        Command::Plan(args) => runtime.block_on(plan::run(args)),
        Command::Status(args) => runtime.block_on(ops::run_status(args)),
        Command::Lag(args) => runtime.block_on(ops::run_lag(args)),
        Command::Checkpoints(args) => runtime.block_on(groups::run_checkpoints(args)),
        Command::Translate(args) => runtime.block_on(groups::run_translate(args)),
        Command::Demo(args) => runtime.block_on(demo::run(args)),
    }
}

/// Writes one log event to stderr; on a terminal it first clears the line, so that events do
/// not run into `strait run`'s progress line.
struct LogWriter {
    clear_line: bool,
    stderr: std::io::Stderr,
}

impl LogWriter {
    fn new() -> Self {
        let stderr = std::io::stderr();
        LogWriter {
            clear_line: stderr.is_terminal(),
            stderr,
        }
    }
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if std::mem::take(&mut self.clear_line) {
            self.stderr.write_all(b"\r\x1b[2K")?;
        }
        self.stderr.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stderr.flush()
    }
}
