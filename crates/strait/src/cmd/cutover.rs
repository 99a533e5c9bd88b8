//! `strait cutover` and `strait failback`: move consumer groups from one cluster to the other
//! in one command — readiness, waiting for the mirror, the exact offsets committed, what to do
//! next. Both are the same move, into a cluster: through the offset maps of the flows into it,
//! and back through the maps of the flows out of it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Context;
use strait_mirror::{read_group, read_group_back, GroupReadiness};

use super::translate::{connect_flows, FlowClients};
use super::{print_table, ConfigArgs};

/// How often the readiness is read again while waiting.
const POLL: Duration = Duration::from_secs(1);

/// Options of `strait cutover` and `strait failback`.
#[derive(Debug, clap::Args)]
pub struct MoveArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The consumer groups to move (repeat the flag for several).
    #[arg(long = "group", required = true, value_name = "GROUP")]
    groups: Vec<String>,
    /// The cluster the groups move to (by alias). Needed only when the enabled flows have
    /// several targets (cutover) or sources (failback), as in an active-active setup.
    #[arg(long, value_name = "CLUSTER")]
    to: Option<String>,
    /// Show the readiness and the offsets that would be committed; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// How long to wait for the mirror to catch up to the source end, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,
}

/// Which way the groups move, when `--to` does not say.
#[derive(Debug, Clone, Copy)]
pub enum Move {
    /// From the flows' source to their target.
    Cutover,
    /// From the flows' target back to their source.
    Failback,
}

/// A group as read on every flow that translates it, by index into the flows.
type Read = Vec<(usize, GroupReadiness)>;

/// `strait cutover` and `strait failback`.
pub async fn run_move(args: MoveArgs, kind: Move) -> anyhow::Result<()> {
    let flows = connect_flows(&args.config).await?;
    let to = destination(&flows, args.to.as_deref(), kind)?;
    // Two samples a poll apart tell whether the topics being left are still written.
    let before = read_all(&flows, &to, &args.groups).await?;
    tokio::time::sleep(POLL).await;
    let mut now = read_all(&flows, &to, &args.groups).await?;
    for group in &args.groups {
        println!("group {group}, moving to {to}:");
        report(&flows, &before[group], &now[group]);
        println!();
    }
    let refused = refusals(&now);
    if args.dry_run {
        anyhow::ensure!(
            refused.is_empty(),
            "dry run: the move would be refused now: {}",
            refused.join("; ")
        );
        print_offsets(&now, "dry run: would commit");
        if !caught_up(&now) {
            println!(
                "dry run: the mirror has not caught up yet; the move would wait up to {}s for it",
                args.timeout
            );
        }
        println!("dry run: nothing was written");
        return Ok(());
    }
    anyhow::ensure!(refused.is_empty(), "refused: {}", refused.join("; "));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    while !caught_up(&now) {
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "the mirror did not catch up within {}s (--timeout): {}; if producers still write these topics, \
                 stop them (or move them) first",
                args.timeout,
                lagging(&flows, &now)
            );
        }
        tokio::time::sleep(POLL).await;
        now = read_all(&flows, &to, &args.groups).await?;
    }
    // Read once more after the wait: a member may have joined, a translation changed.
    let refused = refusals(&now);
    anyhow::ensure!(refused.is_empty(), "refused: {}", refused.join("; "));
    for (group, read) in &now {
        for (i, readiness) in read {
            let f = &flows[*i];
            let client = if readiness.to == f.flow.target.alias {
                &f.target
            } else {
                &f.source
            };
            client
                .commit_offsets(group, &readiness.target_offsets())
                .await
                .with_context(|| format!("committing group {group}'s offsets on {to}"))?;
        }
    }
    print_offsets(&now, "committed");
    println!();
    println!("next:");
    let bootstrap = flows
        .iter()
        .flat_map(|f| [&f.flow.source, &f.flow.target])
        .find(|c| c.alias == to)
        .map(|c| c.bootstrap_servers.join(","))
        .unwrap_or_default();
    for (group, read) in &now {
        let topics: BTreeSet<&str> = read
            .iter()
            .flat_map(|(_, r)| r.partitions.iter().map(|p| p.to_topic.as_str()))
            .collect();
        println!(
            "  - start group {group}'s consumers against {to} ({bootstrap}), subscribed to {}; they resume at the \
             offsets above (auto.offset.reset does not apply)",
            topics.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    let from: BTreeSet<&str> = now.values().flatten().map(|(_, r)| r.from.as_str()).collect();
    println!(
        "  - do not start them on {} again; keep the mirror running until the producers have moved too",
        from.into_iter().collect::<Vec<_>>().join(", ")
    );
    Ok(())
}

/// The cluster the groups move to: `--to`, else the one target (cutover) or source (failback)
/// of the enabled flows.
fn destination(flows: &[FlowClients], to: Option<&str>, kind: Move) -> anyhow::Result<String> {
    if let Some(to) = to {
        anyhow::ensure!(
            flows
                .iter()
                .any(|f| f.flow.source.alias == to || f.flow.target.alias == to),
            "--to {to}: no enabled flow goes into or out of a cluster of that alias"
        );
        return Ok(to.to_owned());
    }
    let sides: BTreeSet<&str> = flows
        .iter()
        .map(|f| match kind {
            Move::Cutover => f.flow.target.alias.as_str(),
            Move::Failback => f.flow.source.alias.as_str(),
        })
        .collect();
    match sides.len() {
        0 => anyhow::bail!("no flow is enabled (set <source>-><target>.enabled = true)"),
        1 => Ok(sides.into_iter().next().unwrap_or_default().to_owned()),
        _ => anyhow::bail!(
            "the enabled flows go both ways ({}): say with --to which cluster the groups move to",
            sides.into_iter().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Each group as it moves to `to`: through the offset maps of the flows into `to`, and back
/// through those of the flows out of it.
async fn read_all(flows: &[FlowClients], to: &str, groups: &[String]) -> anyhow::Result<BTreeMap<String, Read>> {
    let mut all = BTreeMap::new();
    for group in groups {
        let mut read = Vec::new();
        for (i, f) in flows.iter().enumerate() {
            let clients = (&f.source, &f.target);
            let readiness = if f.flow.target.alias == to {
                read_group(&f.flow, clients, group).await?
            } else if f.flow.source.alias == to {
                read_group_back(&f.flow, clients, group).await?
            } else {
                continue;
            };
            if !readiness.partitions.is_empty() {
                read.push((i, readiness));
            }
        }
        anyhow::ensure!(
            !read.is_empty(),
            "group `{group}` has no committed offsets that a flow into or out of {to} translates (is the name right, \
             and has it committed on the cluster it leaves?)"
        );
        all.insert(group.clone(), read);
    }
    Ok(all)
}

fn caught_up(all: &BTreeMap<String, Read>) -> bool {
    all.values().flatten().all(|(_, r)| r.caught_up())
}

/// Per partition: the group's position, the mirror's, the end and whether it moves.
fn report(flows: &[FlowClients], before: &Read, now: &Read) {
    let ends_before: BTreeMap<(usize, &str, i32), Option<i64>> = before
        .iter()
        .flat_map(|(i, r)| {
            r.partitions
                .iter()
                .map(move |p| ((*i, p.topic.as_str(), p.partition), p.end))
        })
        .collect();
    let mut rows = vec![[
        "FLOW",
        "FROM",
        "TOPIC",
        "PARTITION",
        "COMMITTED",
        "MIRRORED",
        "END",
        "LAG",
        "WRITES",
        "TO",
        "TO-TOPIC",
        "OFFSET",
        "TRANSLATION",
    ]
    .map(String::from)];
    let or_dash = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    for (i, readiness) in now {
        for p in &readiness.partitions {
            let writes = match (p.end, ends_before.get(&(*i, p.topic.as_str(), p.partition))) {
                (None, _) => "-",
                (end, Some(&before)) if before != end => "still written",
                _ => "quiet",
            };
            rows.push([
                flows[*i].flow.name(),
                readiness.from.clone(),
                p.topic.clone(),
                p.partition.to_string(),
                p.committed.offset.to_string(),
                or_dash(p.position),
                or_dash(p.end),
                p.end.map_or("-".to_string(), |_| p.lag().to_string()),
                writes.to_string(),
                readiness.to.clone(),
                p.to_topic.clone(),
                or_dash(p.translation.offset_and_rereads().map(|(offset, _)| offset)),
                p.translation.to_string(),
            ]);
        }
    }
    print_table(&rows);
    for (_, readiness) in now {
        for (side, members) in [
            (&readiness.from, &readiness.from_members),
            (&readiness.to, &readiness.to_members),
        ] {
            if !members.is_empty() {
                let names: Vec<String> = members.iter().map(ToString::to_string).collect();
                println!("active members on {side}: {}", names.join(", "));
            }
        }
    }
}

/// Why each group cannot be committed, if it cannot.
fn refusals(all: &BTreeMap<String, Read>) -> Vec<String> {
    let refused: BTreeSet<String> = all
        .iter()
        .flat_map(|(group, read)| read.iter().filter_map(|(_, r)| r.refusal(group)))
        .collect();
    refused.into_iter().collect()
}

/// The partitions the mirror has not caught up on.
fn lagging(flows: &[FlowClients], all: &BTreeMap<String, Read>) -> String {
    let lagging: BTreeSet<String> = all
        .values()
        .flatten()
        .flat_map(|(i, r)| {
            r.partitions
                .iter()
                .filter(|p| p.lag() > 0)
                .map(|p| format!("{} {}-{} lags {}", flows[*i].flow.name(), p.topic, p.partition, p.lag()))
        })
        .collect();
    lagging.into_iter().collect::<Vec<_>>().join(", ")
}

fn print_offsets(all: &BTreeMap<String, Read>, what: &str) {
    let mut rows = vec![["GROUP", "CLUSTER", "TOPIC", "PARTITION", "OFFSET"].map(String::from)];
    for (group, read) in all {
        for (_, readiness) in read {
            for ((topic, partition), committed) in readiness.target_offsets() {
                rows.push([
                    group.clone(),
                    readiness.to.clone(),
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
