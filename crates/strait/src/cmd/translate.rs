//! `strait translate`: the target offsets a consumer group failing over should use.

use super::checkpoints::checkpoints;
use super::ConfigArgs;

/// Options of `strait translate`.
#[derive(Debug, clap::Args)]
pub struct TranslateArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The consumer group failing over.
    #[arg(long)]
    group: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `strait translate`: the target offsets a failing-over consumer should use (what
/// `RemoteClusterUtils.translateOffsets` returns).
pub async fn run_translate(args: TranslateArgs) -> anyhow::Result<()> {
    let all = checkpoints(&args.config, Some(&args.group)).await?;
    anyhow::ensure!(!all.is_empty(), "no checkpoints for group `{}` yet (is it consuming a mirrored topic, and has emit.checkpoints.interval.seconds passed?)", args.group);
    if args.json {
        let records: Vec<_> = all
            .iter()
            .map(|(_, target, c)| serde_json::json!({"cluster": target, "topic": c.topic, "partition": c.partition, "offset": c.downstream_offset}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&records)?);
    } else {
        println!("{:<10} {:<40} {:>9} {:>12}", "CLUSTER", "TOPIC", "PARTITION", "OFFSET");
        for (_, target, c) in &all {
            println!(
                "{:<10} {:<40} {:>9} {:>12}",
                target, c.topic, c.partition, c.downstream_offset
            );
        }
    }
    Ok(())
}
