//! `strait status`: per flow, whether a mirror is heartbeating and how far behind it is, and
//! the groups in which `strait run` processes share the work, read from the clusters.

use serde_json::{json, Value};

use super::{load, print_table, OpsArgs};

/// `strait status`: per flow, whether the clusters answer, whether a mirror is heartbeating,
/// and how far behind it is.
pub async fn run_status(args: OpsArgs) -> anyhow::Result<()> {
    let config = load(&args.config)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let mut reports = Vec::new();
    for flow in config.enabled_flows() {
        let report = strait_mirror::read_flow_report(flow).await;
        let interval_ms = flow
            .emit_heartbeats
            .interval()
            .map_or(i64::MAX, |i| i.as_millis() as i64);
        let value = match report {
            Ok(report) => {
                let heartbeat_age_ms = report.last_heartbeat_ms.map(|t| (now - t).max(0));
                // A mirror is running if its last heartbeat is recent (a few intervals, 10 s at least).
                let running = heartbeat_age_ms.is_some_and(|age| age <= interval_ms.saturating_mul(3).max(10_000));
                let lag: i64 = report.lag.iter().map(|l| l.records).sum();
                let started = report.lag.iter().filter(|l| l.position.is_some()).count();
                let topics: std::collections::BTreeSet<&str> = report.lag.iter().map(|l| l.topic.as_str()).collect();
                json!({
                    "flow": flow.name(),
                    "state": if running { "running" } else { "not running" },
                    "heartbeat_age_ms": heartbeat_age_ms,
                    "topics": topics.len(),
                    "partitions": report.lag.len(),
                    "partitions_started": started,
                    "lag": lag,
                    "error": null,
                })
            }
            Err(error) => json!({
                "flow": flow.name(),
                "state": "unreachable",
                "error": error.to_string(),
            }),
        };
        reports.push(value);
    }
    // The groups of every flow a `strait run` of this configuration runs (heartbeat-only ones too).
    let groups = strait_mirror::describe_groups(&config, config.flows()).await;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "flows": reports, "groups": groups }))?
        );
        return Ok(());
    }
    let mut rows = vec![[
        "FLOW",
        "STATE",
        "LAST-HEARTBEAT",
        "TOPICS",
        "PARTITIONS",
        "STARTED",
        "LAG",
    ]
    .map(String::from)];
    let field = |v: &Value| match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    for report in &reports {
        rows.push([
            field(&report["flow"]),
            field(&report["state"]),
            report["heartbeat_age_ms"]
                .as_i64()
                .map_or("-".to_owned(), |ms| format!("{:.1} s ago", ms as f64 / 1000.0)),
            field(&report["topics"]),
            field(&report["partitions"]),
            field(&report["partitions_started"]),
            field(&report["lag"]),
        ]);
    }
    print_table(&rows);
    for report in &reports {
        if let Some(error) = report["error"].as_str() {
            println!("{}: {error}", field(&report["flow"]));
        }
    }
    for group in &groups {
        print_group(group);
    }
    Ok(())
}

/// One group: its state and generation, then who holds what.
fn print_group(group: &Value) {
    let (id, cluster) = (
        group["group_id"].as_str().unwrap_or("?"),
        group["cluster"].as_str().unwrap_or("?"),
    );
    println!();
    if let Some(error) = group["error"].as_str() {
        println!("group {id} on {cluster}: cannot be described: {error}");
        return;
    }
    let members = group["members"].as_array().cloned().unwrap_or_default();
    let generation = group["generation"].as_i64().map_or("-".to_owned(), |g| g.to_string());
    println!(
        "group {id} on {cluster}: {}, generation {generation}, {} member(s)",
        group["state"].as_str().unwrap_or("?"),
        members.len()
    );
    if members.is_empty() {
        return;
    }
    let mut rows = vec![["MEMBER", "INSTANCE", "HOST", "PARTITIONS", "SINGLETONS", "HOLDS"].map(String::from)];
    for member in &members {
        let held = member["held"].as_array().cloned().unwrap_or_default();
        let singletons: Vec<&str> = held
            .iter()
            .filter(|f| f["singleton"] == Value::Bool(true))
            .filter_map(|f| f["flow"].as_str())
            .collect();
        let partitions: Vec<&str> = held
            .iter()
            .flat_map(|f| f["partitions"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        const SHOWN: usize = 6;
        let mut holds = partitions[..partitions.len().min(SHOWN)].join(" ");
        if partitions.len() > SHOWN {
            holds.push_str(&format!(" … (+{})", partitions.len() - SHOWN));
        }
        if let Some(why) = member["refused"].as_str() {
            holds = format!("refused: {why}");
        }
        rows.push([
            member["member_id"].as_str().unwrap_or("?").to_owned(),
            member["group_instance_id"].as_str().unwrap_or("-").to_owned(),
            member["client_host"].as_str().unwrap_or("?").to_owned(),
            partitions.len().to_string(),
            if singletons.is_empty() {
                "-".to_owned()
            } else {
                singletons.join(",")
            },
            holds,
        ]);
    }
    print_table(&rows);
}
