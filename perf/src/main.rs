//! `strait-perf`: Strait and real MirrorMaker 2 (dedicated mode, from the same Kafka jars, with
//! the JVM options of Kafka's own `connect-mirror-maker.sh`) mirror the same data between the
//! same local clusters, one after the other, and the results are reported side by side with
//! Strait/MM2 ratios.
//!
//! Cases (`--cases`): `catch-up` per codec, `wide` (many topics and partitions), `wide-10k`
//! (10 000 partitions), `latency` (steady streams, judged by Kafka's Java consumer), `wan` (a
//! delay proxy between the mirrors and the source), `long` (several GiB) and `small-batches`
//! (16 KiB source batches, CPU per forwarded batch), and `producer-ids` (the start-up cost of a
//! producer id per partition), and `status-page` (the status page's first render in headless
//! Chromium at `--topics` × `--partitions`), and `exactly-once` (Strait at least once and in
//! exactly-once mode against MM2 in its exactly-once mode, throughput and latency at
//! `read_committed`). See `perf/README.md`.
//!
//! `--mirrors strait,strait-uring` is an A/B of Strait's two I/O paths instead: the same binary
//! and properties with `strait.io = epoll` and `strait.io = io_uring`, with io_uring/epoll ratios.

mod bench;
mod exactly_once;
mod kafka;
mod page;
mod procfs;
mod report;

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// A benchmark case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Case {
    /// The topic of each `--codecs` codec (8 partitions, `--records` of `--record-size` B).
    CatchUp,
    /// `--topics` × `--partitions` (lz4, `--wide-records` of 512 B).
    Wide,
    /// 20 topics × 500 partitions, 200 000 records of 512 B, lz4.
    #[value(name = "wide-10k")]
    Wide10k,
    /// Steady streams at `--rates` records/s, latency judged by Kafka's Java consumer.
    Latency,
    /// The source behind a proxy adding `--wan-delay-ms` each way.
    Wan,
    /// `--long-records` of 1 KiB, lz4: several GiB.
    Long,
    /// `--small-records` of 512 B, lz4, in the Java producer's default 16 KiB batches.
    SmallBatches,
    /// The start-up cost of a producer id per partition against one per target cluster:
    /// `--producer-ids` InitProducerId requests against one.
    ProducerIds,
    /// The status page's first render in headless Chromium, for a flow of `--topics` ×
    /// `--partitions` partitions (2 000 by default).
    StatusPage,
    /// `--records` of `--record-size` B (lz4, 8 partitions) and a stream at
    /// `--exactly-once-rate`, mirrored by Strait at least once, Strait in exactly-once mode and
    /// MM2 in exactly-once mode.
    ExactlyOnce,
}

/// A mirror under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mirror {
    /// `strait run mm2.properties` with `strait.io = epoll`.
    Strait,
    /// The same with `strait.io = io_uring`: the other half of the A/B of Strait's I/O paths.
    StraitUring,
    /// MirrorMaker 2 in dedicated mode.
    Mm2,
}

impl Mirror {
    /// The source cluster alias it mirrors as (the prefix of its remote topics).
    pub fn alias(self) -> &'static str {
        match self {
            Mirror::Strait => "strait",
            Mirror::StraitUring => "strait-uring",
            Mirror::Mm2 => "mm2",
        }
    }

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mirror::Strait => "Strait",
            Mirror::StraitUring => "Strait io_uring",
            Mirror::Mm2 => "MM2",
        }
    }

    /// The `strait.io` it runs with; `None` for MM2.
    pub fn io(self) -> Option<&'static str> {
        match self {
            Mirror::Strait => Some("epoll"),
            Mirror::StraitUring => Some("io_uring"),
            Mirror::Mm2 => None,
        }
    }
}

/// Command-line options.
#[derive(Debug, Clone, Parser)]
#[command(about = "Benchmark Strait against MirrorMaker 2 on this machine")]
pub struct Args {
    /// Cases to run, in this order (comma-separated). `long`, `wide-10k`, `producer-ids`,
    /// `status-page` and `exactly-once` only run when named.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "catch-up,wide,latency,wan,small-batches"
    )]
    pub cases: Vec<Case>,
    /// Mirrors to run (comma-separated), in this order. Strait/MM2 ratios need `strait` and
    /// `mm2`; the io_uring/epoll A/B needs `strait` and `strait-uring`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "strait,mm2")]
    pub mirrors: Vec<Mirror>,
    /// Rounds of each case's mirrors, every second one in the reverse order: on this VM the
    /// mirror that runs second tends to be faster, so an A/B needs both orders.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,
    /// Brokers per cluster (source and target alike; the WAN source always has one).
    #[arg(long, default_value_t = 1)]
    pub brokers: u32,
    /// catch-up: records per codec.
    #[arg(long, default_value_t = 300_000)]
    pub records: u64,
    /// catch-up: record size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub record_size: u32,
    /// catch-up: codecs (none, gzip, snappy, lz4, zstd).
    #[arg(long, default_value = "none,lz4,zstd", value_delimiter = ',')]
    pub codecs: Vec<String>,
    /// wide: topics.
    #[arg(long, default_value_t = 10)]
    pub topics: u32,
    /// wide: partitions per topic.
    #[arg(long, default_value_t = 200)]
    pub partitions: i32,
    /// wide: records in all (512 B).
    #[arg(long, default_value_t = 400_000)]
    pub wide_records: u64,
    /// wide: codecs, one run each (none, gzip, snappy, lz4, zstd).
    #[arg(long, default_value = "lz4", value_delimiter = ',')]
    pub wide_codecs: Vec<String>,
    /// latency: records per second of the steady streams (comma-separated).
    #[arg(long, default_value = "200,500,1000", value_delimiter = ',')]
    pub rates: Vec<u64>,
    /// latency: seconds measured per rate.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// latency: seconds of stream before measuring starts (the mirror warms up).
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// wan: delay added each way between the mirrors and the source, in ms.
    #[arg(long, default_value_t = 50)]
    pub wan_delay_ms: u64,
    /// wan: records of 1 KiB, lz4.
    #[arg(long, default_value_t = 300_000)]
    pub wan_records: u64,
    /// long: records of 1 KiB, lz4.
    #[arg(long, default_value_t = 3_000_000)]
    pub long_records: u64,
    /// small-batches: records of 512 B, lz4.
    #[arg(long, default_value_t = 1_000_000)]
    pub small_records: u64,
    /// producer-ids: InitProducerId requests, as many as partitions with a producer id each.
    #[arg(long, default_value_t = 10_000)]
    pub producer_ids: usize,
    /// exactly-once: records per second of the steady stream judged at `read_committed`
    /// (`--seconds` measured after `--warmup`).
    #[arg(long, default_value_t = 1000)]
    pub exactly_once_rate: u64,
    /// Longest wait for one mirror to catch up, in seconds.
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// Create each mirror's remote topics (same partitions) before it starts, in batches the
    /// KRaft controller accepts. MM2 creates all new remote topics in one CreateTopics request,
    /// which the controller refuses above 10 000 partitions.
    #[arg(long)]
    pub create_remote_topics: bool,
    /// A mirror run fails when the target gains no record for this many seconds.
    #[arg(long, default_value_t = 300)]
    pub stall_timeout: u64,
    /// Where the Markdown table and the SVG chart go.
    #[arg(long, default_value = "perf/results")]
    pub out: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    for (device, kb) in procfs::read_ahead_kb() {
        if kb > 1024 {
            eprintln!(
                "warning: /sys/block/{device}/queue/read_ahead_kb is {kb}: brokers read that much \
                 on the first touch of each fresh partition's index, so the wide cases measure the \
                 disk; Linux's default is 128 (as root: echo 128 > /sys/block/{device}/queue/read_ahead_kb)"
            );
        }
    }
    let mut bench = bench::Bench::start(args.clone()).await?;
    let mut results = report::Results::default();
    let mut broken = 0;
    for case in &args.cases {
        let started = std::time::Instant::now();
        let outcome: anyhow::Result<()> = async {
            match case {
                Case::CatchUp => {
                    for codec in &args.codecs {
                        results.cases.push(bench.catch_up(codec).await?);
                    }
                }
                Case::Wide => {
                    let (topics, partitions, records) = (args.topics, args.partitions, args.wide_records);
                    for codec in &args.wide_codecs {
                        results
                            .cases
                            .push(bench.wide(topics, partitions, records, codec).await?);
                    }
                }
                Case::Wide10k => results.cases.push(bench.wide(20, 500, 200_000, "lz4").await?),
                Case::Latency => results.latency = bench.latency().await?,
                Case::Wan => results.cases.push(bench.wan().await?),
                Case::Long => results.cases.push(bench.long().await?),
                Case::SmallBatches => results.cases.push(bench.small_batches().await?),
                Case::ProducerIds => results.producer_ids = Some(bench.producer_ids().await?),
                Case::StatusPage => results.status_page = Some(bench.status_page().await?),
                Case::ExactlyOnce => results.exactly_once = Some(bench.exactly_once().await?),
            }
            Ok(())
        }
        .await;
        match outcome {
            Ok(()) => println!("[{case:?}] done in {:.0?}", started.elapsed()),
            Err(error) => {
                eprintln!("[{case:?}] FAILED after {:.0?}: {error:#}", started.elapsed());
                broken += 1;
            }
        }
    }
    let text = report::markdown(&args, &results);
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("latest.md"), &text)?;
    std::fs::write(args.out.join("latest.svg"), report::chart(&results))?;
    println!("\n{text}");
    println!("Written to {}/latest.md and latest.svg", args.out.display());
    bench.stop();
    let failed = report::failures(&results) + broken;
    anyhow::ensure!(failed == 0, "{failed} run(s) failed: see the report above");
    Ok(())
}
