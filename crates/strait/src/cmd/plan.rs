//! `strait plan`: what each flow would replicate, without writing anything.

use strait_client::KafkaClient;
use strait_config::ClientRole;
use strait_mirror::{client_config, MirrorError};

use super::{load, ConfigArgs};

/// Options of `strait plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `strait plan`: reads both clusters of every enabled flow and prints, per source topic, its
/// remote name and what would happen to it, or why it is skipped.
pub async fn run(args: PlanArgs) -> anyhow::Result<()> {
    let config = load(&args.config)?;
    let mut rows = Vec::new();
    for flow in config.enabled_flows() {
        // Errors name the cluster: both may fail the same way.
        let (on_source, on_target) = (
            MirrorError::client_at(&flow.source.alias),
            MirrorError::client_at(&flow.target.alias),
        );
        let source = KafkaClient::connect(client_config(&flow.source, ClientRole::Admin)?)
            .await
            .map_err(on_source)?;
        let target = KafkaClient::connect(client_config(&flow.target, ClientRole::Admin)?)
            .await
            .map_err(on_target)?;
        let source_topics = source.metadata(None).await.map_err(on_source)?.topics;
        let target_topics = target.metadata(None).await.map_err(on_target)?.topics;
        for (topic, metadata) in &source_topics {
            let partitions = metadata.partitions.len();
            let (remote, action) = if metadata.is_internal {
                (String::new(), "skip: internal topic (Kafka)".to_owned())
            } else if let Some(reason) = flow.skip_reason(topic) {
                (String::new(), format!("skip: {reason}"))
            } else {
                let remote = flow.remote_topic(topic);
                let action = match target_topics.get(&remote) {
                    None => format!("create with {partitions} partitions, then replicate"),
                    Some(t) if t.partitions.len() < partitions => {
                        format!(
                            "grow from {} to {partitions} partitions, then replicate",
                            t.partitions.len()
                        )
                    }
                    Some(_) => "replicate".to_owned(),
                };
                (remote, action)
            };
            rows.push((flow.name(), topic.clone(), partitions, remote, action));
        }
    }
    if args.json {
        let json: Vec<_> = rows
            .iter()
            .map(|(flow, topic, partitions, remote, action)| {
                serde_json::json!({"flow": flow, "topic": topic, "partitions": partitions, "remoteTopic": remote, "action": action})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!(
            "{:<20} {:<40} {:>10} {:<44} ACTION",
            "FLOW", "TOPIC", "PARTITIONS", "REMOTE TOPIC"
        );
        for (flow, topic, partitions, remote, action) in &rows {
            println!("{flow:<20} {topic:<40} {partitions:>10} {remote:<44} {action}");
        }
    }
    Ok(())
}
