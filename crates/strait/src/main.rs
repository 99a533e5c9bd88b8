//! `strait`: the command-line entry point.

mod demo;

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
    /// Start two local Kafka clusters (fetched with Maven), put data in the source and show the
    /// mirror at work; everything is stopped and removed at the end.
    Demo(demo::DemoArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    match cli.command {
        Command::Demo(args) => runtime.block_on(demo::run(args)),
    }
}
