//! `strait cutover`: moves consumer groups from the source to the target in one command —
//! readiness, waiting for the mirror, the exact offsets committed, what to do next.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use strait_mirror::GroupReadiness;

use super::translate::{connect_flows, read_on_flows, FlowClients};
use super::{print_table, ConfigArgs};

/// How often the readiness is read again while waiting.
const POLL: Duration = Duration::from_secs(1);

/// Options of `strait cutover`.
#[derive(Debug, clap::Args)]
pub struct CutoverArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The consumer groups to move (repeat the flag for several).
    #[arg(long = "group", required = true, value_name = "GROUP")]
    groups: Vec<String>,
    /// Show the readiness and the offsets that would be committed; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// How long to wait for the mirror to catch up to the source end, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,
}

/// A group as read on every flow that mirrors it.
type Read = Vec<(usize, GroupReadiness)>;

/// `strait cutover`.
pub async fn run_cutover(args: CutoverArgs) -> anyhow::Result<()> {
    let flows = connect_flows(&args.config).await?;
    // Two samples a poll apart tell whether the source topics are still being written.
    let mut before = BTreeMap::new();
    for group in &args.groups {
        before.insert(group.clone(), read_on_flows(&flows, group).await?);
    }
    tokio::time::sleep(POLL).await;
    let mut now = read_all(&flows, &args.groups).await?;
    for group in &args.groups {
        println!("group {group}:");
        report(&flows, &before[group], &now[group]);
        println!();
    }
    let refused = refusals(&flows, &now);
    if args.dry_run {
        anyhow::ensure!(
            refused.is_empty(),
            "dry run: the cutover would be refused now: {}",
            refused.join("; ")
        );
        print_offsets(&flows, &now, "dry run: would commit");
        if !now.values().flatten().all(|(_, r)| r.caught_up()) {
            println!(
                "dry run: the mirror has not caught up yet; the cutover would wait up to {}s for it",
                args.timeout
            );
        }
        println!("dry run: nothing was written");
        return Ok(());
    }
    anyhow::ensure!(refused.is_empty(), "cutover refused: {}", refused.join("; "));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    while !now.values().flatten().all(|(_, r)| r.caught_up()) {
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "the mirror did not catch up to the source end within {}s (--timeout): {}; if producers still \
                 write these topics on the source, stop them (or move them to the target) first",
                args.timeout,
                lagging(&flows, &now)
            );
        }
        tokio::time::sleep(POLL).await;
        now = read_all(&flows, &args.groups).await?;
    }
    // Read once more after the wait: a member may have joined, a translation changed.
    let refused = refusals(&flows, &now);
    anyhow::ensure!(refused.is_empty(), "cutover refused: {}", refused.join("; "));
    for (group, read) in &now {
        for (i, readiness) in read {
            let f = &flows[*i];
            f.target
                .commit_offsets(group, &readiness.target_offsets())
                .await
                .with_context(|| format!("committing group {group}'s offsets on {}", f.flow.target.alias))?;
        }
    }
    print_offsets(&flows, &now, "committed");
    println!();
    println!("next:");
    for (group, read) in &now {
        for (i, readiness) in read {
            let f = &flows[*i];
            let topics: std::collections::BTreeSet<&str> =
                readiness.partitions.iter().map(|p| p.target_topic.as_str()).collect();
            println!(
                "  - start group {group}'s consumers against {} ({}), subscribed to {}; they resume at the offsets above \
                 (auto.offset.reset does not apply)",
                f.flow.target.alias,
                f.flow.target.bootstrap_servers.join(","),
                topics.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
    }
    println!("  - keep the mirror running until the source's producers have moved too; do not start the consumers on the source again");
    Ok(())
}

async fn read_all(flows: &[FlowClients], groups: &[String]) -> anyhow::Result<BTreeMap<String, Read>> {
    let mut all = BTreeMap::new();
    for group in groups {
        all.insert(group.clone(), read_on_flows(flows, group).await?);
    }
    Ok(all)
}

/// Per partition: the group's position, the mirror's, the source end and whether it moves.
fn report(flows: &[FlowClients], before: &Read, now: &Read) {
    let ends_before: BTreeMap<(usize, &str, i32), Option<i64>> = before
        .iter()
        .flat_map(|(i, r)| {
            r.partitions
                .iter()
                .map(move |p| ((*i, p.topic.as_str(), p.partition), p.source_end))
        })
        .collect();
    let mut rows = vec![[
        "FLOW",
        "TOPIC",
        "PARTITION",
        "COMMITTED",
        "MIRRORED",
        "SOURCE-END",
        "LAG",
        "WRITES",
        "TRANSLATION",
    ]
    .map(String::from)];
    for (i, readiness) in now {
        for p in &readiness.partitions {
            let moving = ends_before
                .get(&(*i, p.topic.as_str(), p.partition))
                .is_some_and(|&end| end != p.source_end);
            let or_dash = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
            rows.push([
                flows[*i].flow.name(),
                p.topic.clone(),
                p.partition.to_string(),
                p.committed.offset.to_string(),
                or_dash(p.position),
                or_dash(p.source_end),
                p.lag().to_string(),
                if moving { "still written" } else { "quiet" }.to_string(),
                p.translation.to_string(),
            ]);
        }
    }
    print_table(&rows);
    for (i, readiness) in now {
        for (side, members) in [
            (&flows[*i].flow.source.alias, &readiness.source_members),
            (&flows[*i].flow.target.alias, &readiness.target_members),
        ] {
            if !members.is_empty() {
                let names: Vec<String> = members.iter().map(ToString::to_string).collect();
                println!("active members on {side}: {}", names.join(", "));
            }
        }
    }
}

/// Why each group cannot be committed, if it cannot.
fn refusals(flows: &[FlowClients], all: &BTreeMap<String, Read>) -> Vec<String> {
    all.iter()
        .flat_map(|(group, read)| read.iter().filter_map(|(i, r)| r.refusal(&flows[*i].flow, group)))
        .collect()
}

/// The partitions the mirror has not caught up on.
fn lagging(flows: &[FlowClients], all: &BTreeMap<String, Read>) -> String {
    let mut lagging: Vec<String> = all
        .values()
        .flatten()
        .flat_map(|(i, r)| {
            r.partitions
                .iter()
                .filter(|p| p.lag() > 0)
                .map(|p| format!("{} {}-{} lags {}", flows[*i].flow.name(), p.topic, p.partition, p.lag()))
        })
        .collect();
    lagging.dedup();
    lagging.join(", ")
}

fn print_offsets(flows: &[FlowClients], all: &BTreeMap<String, Read>, what: &str) {
    let mut rows = vec![["GROUP", "CLUSTER", "TOPIC", "PARTITION", "OFFSET"].map(String::from)];
    for (group, read) in all {
        for (i, readiness) in read {
            for ((topic, partition), committed) in readiness.target_offsets() {
                rows.push([
                    group.clone(),
                    flows[*i].flow.target.alias.clone(),
                    topic,
                    partition.to_string(),
                    committed.offset.to_string(),
                ]);
            }
        }
    }
    println!("{what}:");
    print_table(&rows);
}
