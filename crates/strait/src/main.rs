//! `strait`: the command-line entry point.

mod cmd;
mod http;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

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
    Run(cmd::run::RunArgs),
    /// Parse an MM2 configuration and print the effective flows and settings.
    CheckConfig(cmd::check_config::CheckConfigArgs),
    /// Print the mm2.properties equivalent to MM2's connector configs (JSON) or a Strimzi
    /// KafkaMirrorMaker2 resource (YAML), each setting after a comment naming its origin.
    Import(cmd::import::ImportArgs),
    /// Show which topics each flow would replicate, their remote names, and which are skipped
    /// and why, without writing anything.
    Plan(cmd::plan::PlanArgs),
    /// Show each flow's state read from the clusters: last heartbeat, partitions, total lag.
    Status(cmd::OpsArgs),
    /// Show each mirrored partition's position, source log end offset and lag.
    Lag(cmd::OpsArgs),
    /// Print the latest checkpoints (consumer group positions translated for the target).
    Checkpoints(cmd::checkpoints::CheckpointsArgs),
    /// Print the target offsets a consumer group failing over should use.
    Translate(cmd::translate::TranslateArgs),
    /// Move consumer groups from the source to the target: report readiness, wait for the
    /// mirror to catch up, commit the exact translated offsets on the target.
    Cutover(cmd::cutover::MoveArgs),
    /// Move consumer groups back from the target to the source: remote topics through the
    /// inverse of the offset map, topics written on the target through the reverse flow's.
    Failback(cmd::cutover::MoveArgs),
    /// Start two local Kafka clusters (fetched with Maven), put data in the source and show the
    /// mirror at work; everything is stopped and removed at the end.
    #[cfg(feature = "demo")]
    Demo(cmd::demo::DemoArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(LogWriter::new)
        // Colours only for a person reading a terminal: in a file they are escape codes.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    // Returning the error from main would print its Debug form, with a stack backtrace when
    // RUST_BACKTRACE is set: noise under an expected error such as a bad config line. Panics
    // still print theirs.
    match execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprint!("{}", report(&error));
            ExitCode::FAILURE
        }
    }
}

fn execute(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    match cli.command {
        Command::Run(args) => runtime.block_on(cmd::run::run(args)),
        Command::CheckConfig(args) => cmd::check_config::check_config(args),
        Command::Import(args) => cmd::import::import(args),
        Command::Plan(args) => runtime.block_on(cmd::plan::run(args)),
        Command::Status(args) => runtime.block_on(cmd::status::run_status(args)),
        Command::Lag(args) => runtime.block_on(cmd::lag::run_lag(args)),
        Command::Checkpoints(args) => runtime.block_on(cmd::checkpoints::run_checkpoints(args)),
        Command::Translate(args) => runtime.block_on(cmd::translate::run_translate(args)),
        Command::Cutover(args) => runtime.block_on(cmd::cutover::run_move(args, cmd::cutover::Move::Cutover)),
        Command::Failback(args) => runtime.block_on(cmd::cutover::run_move(args, cmd::cutover::Move::Failback)),
        #[cfg(feature = "demo")]
        Command::Demo(args) => runtime.block_on(cmd::demo::run(args)),
    }
}

/// `error: …`, then a `caused by: …` line for each source in the chain whose text is not
/// already printed (most of our errors quote their source in their own message).
fn report(error: &anyhow::Error) -> String {
    let mut text = format!("error: {error}\n");
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(&format!("caused by: {cause}\n"));
        }
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_gives_each_cause_once() {
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let error = anyhow::Error::new(missing).context("reading a.properties");
        assert_eq!(report(&error), "error: reading a.properties\ncaused by: No such file\n");

        // MirrorError quotes the client error it wraps, which is also its source.
        let unreachable = strait_client::Error::NoBroker("none of bootstrap.servers answered".into());
        let error = anyhow::Error::new(strait_mirror::MirrorError::client("target", unreachable));
        assert_eq!(
            report(&error),
            "error: target cluster: none of bootstrap.servers answered\n"
        );
    }
}
