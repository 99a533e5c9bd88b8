//! `strait lag`: per partition, how far the mirror is behind the source, read from the clusters.

use serde_json::{json, Value};
use strait_mirror::PartitionLag;

use super::{load, print_table, OpsArgs};

fn lag_json(lag: &PartitionLag) -> Value {
    json!({
        "topic": lag.topic,
        "remote_topic": lag.remote_topic,
        "partition": lag.partition,
        "position": lag.position,
        "log_end_offset": lag.source_end,
        "lag": lag.records,
        "lag_seconds": lag.seconds,
    })
}

fn offset(value: Option<i64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// `strait lag`: per partition, the source log end offset minus the mirrored position.
pub async fn run_lag(args: OpsArgs) -> anyhow::Result<()> {
    let config = load(&args.config)?;
    let mut flows = Vec::new();
    for flow in config.enabled_flows() {
        flows.push((flow.name(), strait_mirror::read_lag(flow).await?));
    }
    if args.json {
        let flows: Vec<Value> = flows
            .iter()
            .map(|(name, lags)| {
                json!({
                    "flow": name,
                    "lag": lags.iter().map(|l| l.records).sum::<i64>(),
                    "partitions": lags.iter().map(lag_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "flows": flows }))?);
        return Ok(());
    }
    let mut rows = vec![[
        "FLOW",
        "TOPIC",
        "PARTITION",
        "REMOTE-TOPIC",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LAG-SECONDS",
    ]
    .map(String::from)];
    for (name, lags) in &flows {
        for lag in lags {
            rows.push([
                name.clone(),
                lag.topic.clone(),
                lag.partition.to_string(),
                lag.remote_topic.clone(),
                offset(lag.position),
                offset(lag.source_end),
                lag.records.to_string(),
                lag.seconds.map_or_else(|| "-".to_owned(), |s| format!("{s:.1}")),
            ]);
        }
    }
    print_table(&rows);
    Ok(())
}
