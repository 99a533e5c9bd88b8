//! The Markdown report and the SVG chart.

use std::fmt::Write as _;

use crate::bench::{CaseResult, LatencyRow, Run};
use crate::exactly_once::{ExactlyOnceResult, ExactlyOnceRow};
use crate::{Args, Mirror};

/// Everything one benchmark run measured.
#[derive(Debug, Default)]
pub struct Results {
    /// Catch-up cases, in the order run.
    pub cases: Vec<CaseResult>,
    /// Steady-stream latencies.
    pub latency: Vec<LatencyRow>,
    /// The start-up cost of producer ids.
    pub producer_ids: Option<ProducerIdsRow>,
    /// The status page at size.
    pub status_page: Option<crate::page::StatusPageRow>,
    /// At least once against exactly once.
    pub exactly_once: Option<ExactlyOnceResult>,
}

/// InitProducerId at start: one for the target cluster, or one per partition.
#[derive(Debug, Clone)]
pub struct ProducerIdsRow {
    /// Requests of the per-partition variant.
    pub partitions: usize,
    /// Seconds for one request.
    pub one_s: f64,
    /// Seconds for `partitions` requests, all sent at once (as per-partition pipelines did at
    /// start) on the client's connection.
    pub each_s: f64,
}

const GIB: f64 = (1u64 << 30) as f64;

fn per_gib(run: &Run, case: &CaseResult) -> f64 {
    run.cpu_s / (case.source.bytes as f64 / GIB)
}

/// `a` over `b`: `2.10x`.
fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}x", a / b.max(1e-9))
}

/// `4.0x faster` or `1.5x slower`, from the two durations.
fn faster(strait_s: f64, mm2_s: f64) -> String {
    if strait_s <= mm2_s {
        format!("{:.1}x faster", mm2_s / strait_s.max(1e-9))
    } else {
        format!("{:.1}x slower", strait_s / mm2_s.max(1e-9))
    }
}

/// `38x less` or `2.0x more` for a cost (CPU, memory, sockets, time).
fn less_is_better(strait: f64, mm2: f64) -> String {
    if strait <= mm2 {
        format!("{:.1}x less", mm2 / strait.max(1e-9))
    } else {
        format!("{:.1}x more", strait / mm2.max(1e-9))
    }
}

fn find(runs: &[Run], mirror: Mirror) -> Option<&Run> {
    runs.iter().find(|r| r.mirror == mirror)
}

/// The report, as Markdown.
pub fn markdown(args: &Args, results: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Strait against MirrorMaker 2 (Kafka {}, MM2 in dedicated mode with the JVM options of \
         `connect-mirror-maker.sh`: `{}`), on {} cores ({}); {} broker(s) per cluster, both \
         clusters on this machine; the mirrors run one after the other on the same data.\n",
        strait_testkit::kafka_version(),
        strait_testkit::MIRROR_MAKER_JVM_OPTIONS[..9].join(" "),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        machine(),
        args.brokers,
    );
    if !results.cases.is_empty() {
        let _ = writeln!(
            out,
            "| case | mirror | records/s | MB/s (batches) | catch-up from start | records/s from start | CPU s | CPU s per GiB | CPU µs per source batch | peak RSS MiB | peak sockets | batches written |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
        for case in &results.cases {
            let records = case.source.records as f64;
            for run in &case.runs {
                if let Some(reason) = &run.failed {
                    let _ = writeln!(
                        out,
                        "| {} | {} | **failed**: {} | | | | | | | | | |",
                        case.name,
                        run.mirror.name(),
                        short(reason)
                    );
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.0} | {:.1} | {:.1} s | {:.0} | {:.1} | {:.1} | {:.0} | {:.0} | {} ({}) | {} |",
                    case.name,
                    run.mirror.name(),
                    records / run.copy_s,
                    case.source.bytes as f64 / 1e6 / run.copy_s,
                    run.total_s,
                    records / run.total_s,
                    run.cpu_s,
                    per_gib(run, case),
                    run.cpu_s * 1e6 / case.source.batches.max(1) as f64,
                    run.rss_mib,
                    run.sockets.total,
                    run.sockets.summary(),
                    run.target.batches,
                );
            }
            if let (Some(s), Some(m)) = (find(&case.runs, Mirror::Strait), find(&case.runs, Mirror::Mm2)) {
                if s.failed.is_some() || m.failed.is_some() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {} | **Strait/MM2** | **{}** | | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | |",
                    case.name,
                    ratio(m.copy_s, s.copy_s),
                    faster(s.total_s, m.total_s),
                    ratio(m.total_s, s.total_s),
                    less_is_better(s.cpu_s, m.cpu_s),
                    less_is_better(per_gib(s, case), per_gib(m, case)),
                    less_is_better(s.cpu_s, m.cpu_s),
                    less_is_better(s.rss_mib, m.rss_mib),
                    less_is_better(s.sockets.total as f64, m.sockets.total as f64),
                );
            }
        }
        let _ = writeln!(out);
        for case in &results.cases {
            let _ = writeln!(
                out,
                "- **{}**: {}; the source holds {} batches, {:.1} MB ({:.3} GiB, {:.0} B per batch).",
                case.name,
                case.description,
                case.source.batches,
                case.source.bytes as f64 / 1e6,
                case.source.bytes as f64 / GIB,
                case.source.bytes as f64 / case.source.batches.max(1) as f64,
            );
        }
        io_paths(&mut out, &results.cases);
    }
    if let Some(ids) = &results.producer_ids {
        let _ = writeln!(
            out,
            "\nProducer ids at start (InitProducerId on the target): one for the cluster took {:.1} ms; \
             one per partition, {} requests sent at once, took {:.2} s ({:.0}x).\n",
            ids.one_s * 1000.0,
            ids.partitions,
            ids.each_s,
            ids.each_s / ids.one_s.max(1e-9),
        );
    }
    if let Some(page) = &results.status_page {
        let times = |ms: &[f64]| {
            let median = ms.get(ms.len() / 2).copied().unwrap_or(f64::NAN);
            let max = ms.last().copied().unwrap_or(f64::NAN);
            format!("{median:.0} ms (max {max:.0} ms)")
        };
        let endpoint = |(bytes, ms): (usize, f64)| format!("{:.0} KB in {ms:.0} ms", bytes as f64 / 1e3);
        let _ = writeln!(
            out,
            "\nStatus page, a flow of {} partitions, in headless Chromium: first complete render {} \
             after navigation while it caught up, {} once it had ({} loads each). \
             `/api/overview` {}, `/api/partitions` (a page of 50) {}, `/status` (every partition) {}.\n",
            page.partitions,
            times(&page.catching_up_ms),
            times(&page.caught_up_ms),
            page.catching_up_ms.len(),
            endpoint(page.overview),
            endpoint(page.partitions_page),
            endpoint(page.status),
        );
    }
    if let Some(eos) = &results.exactly_once {
        exactly_once(&mut out, args, eos);
    }
    if !results.latency.is_empty() {
        let _ = writeln!(
            out,
            "\nSteady streams (512 B, lz4, 8 partitions; {} s measured after {} s of warm-up), latency \
             from the record's timestamp to its arrival at Kafka's Java consumer on the target:\n",
            args.seconds, args.warmup
        );
        let _ = writeln!(
            out,
            "| records/s | mirror | p50 ms | p99 ms | max ms | measured | CPU s | CPU % of a core | peak sockets |"
        );
        let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|---|");
        for &rate in &args.rates {
            let rows: Vec<&LatencyRow> = results.latency.iter().filter(|r| r.rate == rate).collect();
            for row in &rows {
                if let Some(reason) = &row.failed {
                    let _ = writeln!(
                        out,
                        "| {rate} | {} | **failed**: {} | | | | | | |",
                        row.mirror.name(),
                        short(reason)
                    );
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {rate} | {} | {} | {} | {} | {} | {:.2} | {:.1} | {} ({}) |",
                    row.mirror.name(),
                    row.p50,
                    row.p99,
                    row.max,
                    row.measured,
                    row.cpu_s,
                    row.cpu_s / row.window_s.max(0.001) * 100.0,
                    row.sockets.total,
                    row.sockets.summary(),
                );
            }
            let get = |m: Mirror| rows.iter().find(|r| r.mirror == m);
            if let (Some(s), Some(m)) = (get(Mirror::Strait), get(Mirror::Mm2)) {
                if s.failed.is_some() || m.failed.is_some() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {rate} | **Strait/MM2** | **{}** | **{}** | **{}** | | **{}** | | |",
                    less_is_better(s.p50 as f64, m.p50 as f64),
                    less_is_better(s.p99 as f64, m.p99 as f64),
                    less_is_better(s.max as f64, m.max as f64),
                    less_is_better(s.cpu_s, m.cpu_s),
                );
            }
        }
    }
    out
}

/// The A/B of Strait's I/O paths, only when `strait` and `strait-uring` both ran: per case, the
/// epoll run, the io_uring run and io_uring's values over epoll's.
fn io_paths(out: &mut String, cases: &[CaseResult]) {
    // The k-th epoll run pairs with the k-th io_uring run: one round each.
    let rounds: Vec<(&CaseResult, Vec<(&Run, &Run)>)> = cases
        .iter()
        .map(|case| {
            let of = |mirror| case.runs.iter().filter(move |r: &&Run| r.mirror == mirror);
            (
                case,
                of(Mirror::Strait).zip(of(Mirror::StraitUring)).collect::<Vec<_>>(),
            )
        })
        .filter(|(_, pairs)| !pairs.is_empty())
        .collect();
    if rounds.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nStrait's I/O paths: the same binary and properties with `strait.io = epoll` and \
         `strait.io = io_uring`, one after the other on the same data (with `--rounds`, every second \
         round in the reverse order). **io_uring/epoll** is io_uring's value over epoll's: above 1 is \
         faster for records/s, below 1 is cheaper for CPU and memory; with several rounds, the last \
         row of a case is the geometric mean of its rounds' ratios.\n"
    );
    let _ = writeln!(out, "| case | strait.io | records/s | CPU s per GiB | peak RSS MiB |");
    let _ = writeln!(out, "|---|---|---:|---:|---:|");
    for (case, pairs) in rounds {
        // Records/s over the same records: the inverse of the copy times.
        let ratios = |epoll: &Run, uring: &Run| {
            [
                epoll.copy_s / uring.copy_s.max(1e-9),
                per_gib(uring, case) / per_gib(epoll, case).max(1e-9),
                uring.rss_mib / epoll.rss_mib.max(1e-9),
            ]
        };
        let mut product = [1.0; 3];
        let mut measured = 0;
        for (k, &(epoll, uring)) in pairs.iter().enumerate() {
            let name = if pairs.len() == 1 {
                case.name.clone()
            } else {
                let epoll_first = case.runs.iter().position(|r| std::ptr::eq(r, epoll))
                    < case.runs.iter().position(|r| std::ptr::eq(r, uring));
                let first = if epoll_first { "epoll" } else { "io_uring" };
                format!("{} (round {}, {first} first)", case.name, k + 1)
            };
            for run in [epoll, uring] {
                let io = run.mirror.io().unwrap_or_default();
                match &run.failed {
                    Some(reason) => {
                        let _ = writeln!(out, "| {name} | {io} | **failed**: {} | | |", short(reason));
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "| {name} | {io} | {:.0} | {:.1} | {:.0} |",
                            case.source.records as f64 / run.copy_s,
                            per_gib(run, case),
                            run.rss_mib,
                        );
                    }
                }
            }
            if epoll.failed.is_none() && uring.failed.is_none() {
                let r = ratios(epoll, uring);
                let _ = writeln!(
                    out,
                    "| {name} | **io_uring/epoll** | **{:.2}x** | **{:.2}x** | **{:.2}x** |",
                    r[0], r[1], r[2]
                );
                for (p, x) in product.iter_mut().zip(r) {
                    *p *= x;
                }
                measured += 1;
            }
        }
        if pairs.len() > 1 && measured == pairs.len() {
            let mean = product.map(|p| p.powf(1.0 / measured as f64));
            let _ = writeln!(
                out,
                "| {} | **io_uring/epoll, geometric mean of {measured} rounds** | **{:.2}x** | **{:.2}x** | **{:.2}x** |",
                case.name, mean[0], mean[1], mean[2]
            );
        }
    }
}

/// The `exactly-once` table: a row per variant, then the cost of exactly-once for Strait and
/// Strait against MM2, both in exactly-once mode.
fn exactly_once(out: &mut String, args: &Args, eos: &ExactlyOnceResult) {
    let source = &eos.source;
    let _ = writeln!(
        out,
        "\nExactly-once: {}, the source holds {} batches, {:.1} MB ({:.3} GiB); then a stream of {} records/s \
         of 512 B, lz4, {} s measured after {} s of warm-up, latency judged by Kafka's Java consumer at \
         `read_committed`. Exactly-once mode: `target.exactly.once.source.support = enabled`, the source \
         consumer at `read_committed`, a transaction every 1 s (per flow: \
         `transaction.boundary = interval`, `transaction.boundary.interval.ms = 1000`). Every run is judged by the committed data records a \
         `read_committed` reader sees.\n",
        eos.description,
        source.batches,
        source.bytes as f64 / 1e6,
        source.bytes as f64 / GIB,
        args.exactly_once_rate,
        args.seconds,
        args.warmup,
    );
    let _ = writeln!(
        out,
        "| mirror | records/s | MB/s (batches) | catch-up from start | records/s from start | CPU s | CPU s per GiB | peak RSS MiB | batches written | transaction markers | aborted batches | p50 ms | p99 ms | max ms | stream CPU % of a core |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let records = source.records as f64;
    let gib = source.bytes as f64 / GIB;
    for row in &eos.rows {
        let (run, name) = (&row.run, row.variant.name());
        let catch_up = match &run.failed {
            Some(reason) => format!("**failed**: {} | | | | | | | | | |", short(reason)),
            None => format!(
                "{:.0} | {:.1} | {:.1} s | {:.0} | {:.1} | {:.1} | {:.0} | {} | {} | {}",
                records / run.copy_s,
                source.bytes as f64 / 1e6 / run.copy_s,
                run.total_s,
                records / run.total_s,
                run.cpu_s,
                run.cpu_s / gib,
                run.rss_mib,
                run.target.batches,
                row.markers,
                row.aborted,
            ),
        };
        let latency = &row.latency;
        let stream = match &latency.failed {
            Some(reason) => format!("**failed**: {} | | |", short(reason)),
            None => format!(
                "{} | {} | {} | {:.1}",
                latency.p50,
                latency.p99,
                latency.max,
                latency.cpu_s / latency.window_s.max(0.001) * 100.0
            ),
        };
        let _ = writeln!(out, "| {name} | {catch_up} | {stream} |");
    }
    let find = |mirror: Mirror, exactly_once: bool| {
        eos.rows
            .iter()
            .find(|r| r.variant.mirror == mirror && r.variant.exactly_once == exactly_once)
    };
    let strait = find(Mirror::Strait, true);
    let pairs = [
        (
            "Strait exactly-once / at-least-once",
            strait,
            find(Mirror::Strait, false),
        ),
        ("Strait/MM2, both exactly-once", strait, find(Mirror::Mm2, true)),
    ];
    for (label, a, b) in pairs {
        if let (Some(a), Some(b)) = (a, b) {
            compare(out, label, a, b, gib);
        }
    }
}

/// A ratio row of the `exactly-once` table: `a` against `b`.
fn compare(out: &mut String, label: &str, a: &ExactlyOnceRow, b: &ExactlyOnceRow, gib: f64) {
    let catch_up = if a.run.failed.is_none() && b.run.failed.is_none() {
        let (a, b) = (&a.run, &b.run);
        format!(
            "**{}** | | **{}** | **{}** | **{}** | **{}** | **{}** | | |",
            ratio(b.copy_s, a.copy_s),
            faster(a.total_s, b.total_s),
            ratio(b.total_s, a.total_s),
            less_is_better(a.cpu_s, b.cpu_s),
            less_is_better(a.cpu_s / gib, b.cpu_s / gib),
            less_is_better(a.rss_mib, b.rss_mib),
        )
    } else {
        [""; 10].join(" | ")
    };
    let stream = if a.latency.failed.is_none() && b.latency.failed.is_none() {
        let (a, b) = (&a.latency, &b.latency);
        format!(
            "**{}** | **{}** | **{}** | **{}**",
            less_is_better(a.p50 as f64, b.p50 as f64),
            less_is_better(a.p99 as f64, b.p99 as f64),
            less_is_better(a.max as f64, b.max as f64),
            less_is_better(a.cpu_s, b.cpu_s),
        )
    } else {
        [""; 4].join(" | ")
    };
    let _ = writeln!(out, "| **{label}** | {catch_up} | {stream} |");
}

/// The first line of a failure, short enough for a table cell, without `|`.
fn short(reason: &str) -> String {
    let line = reason.lines().next().unwrap_or_default().replace('|', "/");
    match line.char_indices().nth(240) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// How many runs failed.
pub fn failures(results: &Results) -> usize {
    results
        .cases
        .iter()
        .flat_map(|c| &c.runs)
        .filter(|r| r.failed.is_some())
        .count()
        + results.latency.iter().filter(|r| r.failed.is_some()).count()
        + results.exactly_once.iter().flat_map(|e| &e.rows).fold(0, |n, r| {
            n + usize::from(r.run.failed.is_some()) + usize::from(r.latency.failed.is_some())
        })
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let read_ahead: Vec<String> = crate::procfs::read_ahead_kb()
        .iter()
        .map(|(device, kb)| format!("{device} {kb} KiB"))
        .collect();
    format!(
        "{cpu}, {}, read-ahead {}",
        std::env::consts::ARCH,
        if read_ahead.is_empty() {
            "unknown".into()
        } else {
            read_ahead.join(", ")
        }
    )
}

/// A bar chart of CPU seconds per GiB per case, Strait next to MM2.
pub fn chart(results: &Results) -> String {
    let cases: Vec<&CaseResult> = results.cases.iter().filter(|c| !c.runs.is_empty()).collect();
    let max = cases
        .iter()
        .flat_map(|c| c.runs.iter().filter(|r| r.failed.is_none()).map(move |r| per_gib(r, c)))
        .fold(1.0, f64::max);
    let (width, height) = (130 * cases.len().max(1) + 80, 300);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"10\" y=\"18\">CPU seconds per GiB mirrored (lower is better): Strait (blue) vs MirrorMaker 2 (grey)</text>\n"
    );
    for (i, case) in cases.iter().enumerate() {
        let x = 60 + i * 130;
        for (j, mirror) in [Mirror::Strait, Mirror::Mm2].into_iter().enumerate() {
            let Some(run) = find(&case.runs, mirror).filter(|r| r.failed.is_none()) else {
                continue;
            };
            let value = per_gib(run, case);
            let color = if mirror == Mirror::Strait { "#1f77b4" } else { "#888888" };
            let h = (value / max * 220.0).max(1.0);
            let bx = x + j * 40;
            let _ = writeln!(
                svg,
                "<rect x=\"{bx}\" y=\"{:.0}\" width=\"36\" height=\"{h:.0}\" fill=\"{color}\"/>",
                260.0 - h
            );
            let _ = writeln!(svg, "<text x=\"{bx}\" y=\"{:.0}\">{value:.1}</text>", 255.0 - h);
        }
        let _ = writeln!(svg, "<text x=\"{x}\" y=\"280\">{}</text>", case.name);
    }
    svg.push_str("</svg>\n");
    svg
}
