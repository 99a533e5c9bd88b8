//! `strait checkpoints` and `strait translate`: what a consumer group failing over should use.

use std::path::PathBuf;

use strait_client::KafkaClient;
use strait_config::ClientRole;
use strait_mirror::{client_config, MirrorError};
use strait_wire::Checkpoint;

use crate::run::load;

/// Options of `strait checkpoints`.
#[derive(Debug, clap::Args)]
pub struct CheckpointsArgs {
    /// The MirrorMaker 2 configuration (`mm2.properties`).
    config: PathBuf,
    /// Only this consumer group.
    #[arg(long)]
    group: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Options of `strait translate`.
#[derive(Debug, clap::Args)]
pub struct TranslateArgs {
    /// The MirrorMaker 2 configuration (`mm2.properties`).
    config: PathBuf,
    /// The consumer group failing over.
    #[arg(long)]
    group: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// The latest checkpoints of every enabled flow, as (source alias, target alias, checkpoint).
async fn checkpoints(config: &PathBuf, group: Option<&str>) -> anyhow::Result<Vec<(String, String, Checkpoint)>> {
    let config = load(config)?;
    let mut all = Vec::new();
    for flow in config.enabled_flows() {
        let on_target = MirrorError::client_at(&flow.target.alias);
        let target = KafkaClient::connect(client_config(&flow.target, ClientRole::Admin)?)
            .await
            .map_err(on_target)?;
        let topic = flow.checkpoints_topic();
        if target
            .metadata(Some(&[&topic]))
            .await
            .map_err(on_target)?
            .topics
            .get(&topic)
            .is_none_or(|t| t.error != 0)
        {
            continue; // No checkpoints written yet for this flow.
        }
        for checkpoint in strait_mirror::read_checkpoints(&target, &flow.target.alias, &topic).await? {
            if group.is_none_or(|g| g == checkpoint.group) {
                all.push((flow.source.alias.clone(), flow.target.alias.clone(), checkpoint));
            }
        }
    }
    Ok(all)
}

/// `strait checkpoints`.
pub async fn run_checkpoints(args: CheckpointsArgs) -> anyhow::Result<()> {
    let all = checkpoints(&args.config, args.group.as_deref()).await?;
    if args.json {
        let records: Vec<_> = all
            .iter()
            .map(|(source, target, c)| {
                serde_json::json!({
                    "source": source, "target": target, "groupId": c.group, "topic": c.topic,
                    "partition": c.partition, "upstreamOffset": c.upstream_offset,
                    "downstreamOffset": c.downstream_offset, "metadata": c.metadata,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&records)?);
    } else {
        println!(
            "{:<10} {:<10} {:<24} {:<32} {:>9} {:>15} {:>17}",
            "SOURCE", "TARGET", "GROUP", "TOPIC", "PARTITION", "UPSTREAM-OFFSET", "DOWNSTREAM-OFFSET"
        );
        for (source, target, c) in &all {
            println!(
                "{:<10} {:<10} {:<24} {:<32} {:>9} {:>15} {:>17}",
                source, target, c.group, c.topic, c.partition, c.upstream_offset, c.downstream_offset
            );
        }
    }
    Ok(())
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
