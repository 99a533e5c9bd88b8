//! `strait translate`: the target offsets a consumer group failing over should use, exact
//! through the flows' offset maps.

use strait_client::KafkaClient;
use strait_config::{ClientRole, FlowConfig};
use strait_mirror::{client_config, read_group, GroupReadiness, MirrorError};

use super::{load, print_table, ConfigArgs};

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

/// One enabled flow's clients, both sides.
pub(crate) struct FlowClients {
    pub(crate) flow: FlowConfig,
    pub(crate) source: KafkaClient,
    pub(crate) target: KafkaClient,
}

/// Connects to both clusters of every enabled flow.
pub(crate) async fn connect_flows(config: &ConfigArgs) -> anyhow::Result<Vec<FlowClients>> {
    let config = load(config)?;
    let mut flows = Vec::new();
    for flow in config.enabled_flows() {
        let source = KafkaClient::connect(client_config(&flow.source, ClientRole::Admin)?)
            .await
            .map_err(MirrorError::client_at(&flow.source.alias))?;
        let target = KafkaClient::connect(client_config(&flow.target, ClientRole::Admin)?)
            .await
            .map_err(MirrorError::client_at(&flow.target.alias))?;
        flows.push(FlowClients {
            flow: flow.clone(),
            source,
            target,
        });
    }
    Ok(flows)
}

/// The group as every enabled flow sees it; flows that mirror none of its partitions are left
/// out.
pub(crate) async fn read_on_flows(flows: &[FlowClients], group: &str) -> anyhow::Result<Vec<(usize, GroupReadiness)>> {
    let mut read = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        let readiness = read_group(&f.flow, (&f.source, &f.target), group).await?;
        if !readiness.partitions.is_empty() {
            read.push((i, readiness));
        }
    }
    anyhow::ensure!(
        !read.is_empty(),
        "group `{group}` has no committed offsets on a topic any enabled flow mirrors (is the name right, and has it committed on the source?)"
    );
    Ok(read)
}

/// `strait translate`: the target offsets a failing-over consumer should use (what
/// `RemoteClusterUtils.translateOffsets` returns from the checkpoints, computed here from the
/// offset map, so no checkpoint interval has to pass).
pub async fn run_translate(args: TranslateArgs) -> anyhow::Result<()> {
    let flows = connect_flows(&args.config).await?;
    let read = read_on_flows(&flows, &args.group).await?;
    if args.json {
        let mut records = Vec::new();
        for (i, readiness) in &read {
            for p in &readiness.partitions {
                let (offset, rereads) = p.translation.offset_and_rereads().unzip();
                records.push(serde_json::json!({
                    "flow": flows[*i].flow.name(), "cluster": flows[*i].flow.target.alias,
                    "sourceTopic": p.topic, "topic": p.to_topic, "partition": p.partition,
                    "sourceOffset": p.committed.offset, "offset": offset, "rereads": rereads,
                    "exact": rereads == Some(0), "translation": p.translation.to_string(),
                }));
            }
        }
        println!("{}", serde_json::to_string_pretty(&records)?);
        return Ok(());
    }
    let mut rows = vec![[
        "FLOW",
        "TOPIC",
        "PARTITION",
        "SOURCE-OFFSET",
        "TARGET-TOPIC",
        "TARGET-OFFSET",
        "REREADS",
        "TRANSLATION",
    ]
    .map(String::from)];
    for (i, readiness) in &read {
        for p in &readiness.partitions {
            let (offset, rereads) = p.translation.offset_and_rereads().unzip();
            let or_dash = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
            rows.push([
                flows[*i].flow.name(),
                p.topic.clone(),
                p.partition.to_string(),
                p.committed.offset.to_string(),
                p.to_topic.clone(),
                or_dash(offset),
                or_dash(rereads),
                p.translation.to_string(),
            ]);
        }
    }
    print_table(&rows);
    Ok(())
}
