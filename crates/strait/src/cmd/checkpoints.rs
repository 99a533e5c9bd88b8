//! `strait checkpoints`: the latest checkpoints (consumer group positions translated for the
//! target).

use strait_client::KafkaClient;
use strait_config::ClientRole;
use strait_mirror::{client_config, MirrorError};
use strait_wire::Checkpoint;

use super::{load, ConfigArgs};
/// Options of `strait checkpoints`.
#[derive(Debug, clap::Args)]
pub struct CheckpointsArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Only this consumer group.
    #[arg(long)]
    group: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// The latest checkpoints of every enabled flow, as (source alias, target alias, checkpoint).
pub(crate) async fn checkpoints(
    config: &ConfigArgs,
    group: Option<&str>,
) -> anyhow::Result<Vec<(String, String, Checkpoint)>> {
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
