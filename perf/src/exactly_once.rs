//! `exactly-once`: what exactly-once mode costs. The same catch-up load is mirrored by Strait at
//! least once (its default), by Strait in exactly-once mode and by MirrorMaker 2 in its
//! exactly-once mode (KIP-618), one after the other; then each of them, in a process of its own,
//! copies a steady stream at `--exactly-once-rate` while Kafka's Java consumer at
//! `read_committed` measures the latency.
//!
//! Both exactly-once mirrors read the same keys: `target.exactly.once.source.support = enabled`,
//! the source consumer at `read_committed`, and a transaction committed every second
//! (`<alias>->target.transaction.boundary = interval`,
//! `<alias>->target.transaction.boundary.interval.ms = 1000`, Strait's default interval). MM2's
//! dedicated mode also needs its internal REST server for exactly-once
//! (`dedicated.mode.enable.internal.rest`, `listeners`), which Strait ignores.
//!
//! A target written in transactions holds a marker per partition per transaction, and may hold
//! aborted copies: every run of this case, the at-least-once one too, is judged by the committed
//! data records a `read_committed` reader sees (`kafka::CommittedCount`), not by end offsets.

use std::path::PathBuf;

use crate::bench::{clear_topics, regex_for, Bench, LatencyRow, Load, Run};
use crate::kafka::{CommittedCount, Contents, Tally};
use crate::Mirror;

/// One of the case's runs: a mirror and its delivery guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Which mirror.
    pub mirror: Mirror,
    /// In exactly-once mode (else at least once).
    pub exactly_once: bool,
}

impl Variant {
    /// The name in reports, e.g. `Strait exactly-once`.
    pub fn name(self) -> String {
        let mode = if self.exactly_once {
            "exactly-once"
        } else {
            "at-least-once"
        };
        format!("{} {mode}", self.mirror.name())
    }

    /// A short tag for file and topic names.
    fn tag(self) -> String {
        let mode = if self.exactly_once { "eos" } else { "alos" };
        format!("{}-{mode}", self.mirror.alias())
    }
}

/// The runs, in order: the cost of exactly-once for Strait, then against MM2's.
const VARIANTS: [Variant; 3] = [
    Variant {
        mirror: Mirror::Strait,
        exactly_once: false,
    },
    Variant {
        mirror: Mirror::Strait,
        exactly_once: true,
    },
    Variant {
        mirror: Mirror::Mm2,
        exactly_once: true,
    },
];

/// What one variant did.
#[derive(Debug, Clone)]
pub struct ExactlyOnceRow {
    /// Which mirror in which mode.
    pub variant: Variant,
    /// The catch-up run; `target` counts committed data only.
    pub run: Run,
    /// Transaction markers (control batches) in the remote topic after the catch-up.
    pub markers: u64,
    /// Batches of aborted transactions in the remote topic after the catch-up.
    pub aborted: u64,
    /// The steady stream, judged at `read_committed`.
    pub latency: LatencyRow,
}

/// What the case measured.
#[derive(Debug, Clone)]
pub struct ExactlyOnceResult {
    /// What was mirrored in the catch-up.
    pub description: String,
    /// The source topic's contents.
    pub source: Contents,
    /// One row per variant run.
    pub rows: Vec<ExactlyOnceRow>,
}

impl Bench {
    /// Runs the case.
    pub async fn exactly_once(&mut self) -> anyhow::Result<ExactlyOnceResult> {
        let (records, size) = (self.args.records, self.args.record_size);
        let description = format!("{records} records of {size} B, lz4, 8 partitions");
        let load = Load {
            even: false,
            topics: vec!["eos-lz4".into()],
            partitions: 8,
            records,
            record_size: size,
            codec: "lz4".into(),
            batch_size: 65536,
            linger_ms: 10,
        };
        println!(
            "[exactly-once] {description}; then a stream of {} records/s",
            self.args.exactly_once_rate
        );
        let source = &self.source;
        let contents = self.fill("exactly-once", source, &load).await?;
        let variants: Vec<Variant> = VARIANTS
            .into_iter()
            .filter(|v| self.args.mirrors.contains(&v.mirror))
            .collect();
        // A stream topic per variant, so that no mirror starts behind another's stream.
        let streams: Vec<String> = variants.iter().map(|v| format!("eos-stream-{}", v.tag())).collect();
        crate::kafka::create_topics(&source.client, &streams, 8).await?;
        let ports = self.ports(source, None);
        let mut rows = Vec::new();
        for (variant, stream) in variants.into_iter().zip(&streams) {
            let (name, mirror) = (variant.name(), variant.mirror);
            let tag = format!("exactly-once-{}", variant.tag());
            let remotes: Vec<String> = load.topics.iter().map(|t| format!("{}.{t}", mirror.alias())).collect();
            let config = self.exactly_once_config(&tag, variant, &regex_for(&load.topics), true)?;
            let log = self.scratch.path().join(format!("{tag}.log"));
            let mut tally = Tally::Committed(CommittedCount::default());
            let run = self
                .checked_run(mirror, &config, &log, &load, &remotes, source, None, &ports, &mut tally)
                .await;
            self.clear_run(source).await?;
            let (markers, aborted) = tally.passed_over();
            let run = match run {
                Ok(run) => {
                    println!(
                        "[exactly-once] {name}: {:.0} records/s, caught up {:.1} s after start, {:.1} CPU s, \
                         {:.0} MiB peak RSS; {} markers, {} aborted batches",
                        records as f64 / run.copy_s,
                        run.total_s,
                        run.cpu_s,
                        run.rss_mib,
                        markers,
                        aborted
                    );
                    run
                }
                Err(error) => {
                    let error = format!("{error:#}");
                    eprintln!("[exactly-once] {name} FAILED: {error}");
                    Run::failed(mirror, error)
                }
            };
            let rate = self.args.exactly_once_rate;
            let latency = match self.exactly_once_stream(variant, stream, &ports).await {
                Ok(row) => {
                    println!(
                        "[exactly-once] {name} at {rate}/s: p50 {} ms, p99 {} ms, max {} ms ({} measured), \
                         {:.2} CPU s in {:.1} s",
                        row.p50, row.p99, row.max, row.measured, row.cpu_s, row.window_s
                    );
                    row
                }
                Err(error) => {
                    let error = format!("{error:#}");
                    eprintln!("[exactly-once] {name} at {rate}/s FAILED: {error}");
                    LatencyRow::failed(rate, mirror, error)
                }
            };
            self.clear_run(source).await?;
            rows.push(ExactlyOnceRow {
                variant,
                run,
                markers,
                aborted,
                latency,
            });
        }
        clear_topics(&source.client).await?;
        Ok(ExactlyOnceResult {
            description,
            source: contents,
            rows,
        })
    }

    /// One mirror process of `variant` copying `stream`, written at `--exactly-once-rate`
    /// and judged by the latency consumer at `read_committed`.
    async fn exactly_once_stream(
        &self,
        variant: Variant,
        stream: &str,
        ports: &crate::procfs::Ports,
    ) -> anyhow::Result<LatencyRow> {
        let mirror = variant.mirror;
        let tag = format!("exactly-once-stream-{}", variant.tag());
        let config = self.exactly_once_config(&tag, variant, stream, false)?;
        let log = self.scratch.path().join(format!("{tag}.log"));
        let process = self.spawn(mirror, &config, &log)?;
        let topics = [stream.to_owned()];
        let mut tally = Tally::Committed(CommittedCount::default());
        self.prime(mirror, &process, &log, &topics, &mut tally).await?;
        let remote = format!("{}.{stream}", mirror.alias());
        let rate = self.args.exactly_once_rate;
        self.steady(mirror, &process, rate, stream, &remote, ports, "read_committed")
            .await
            .map_err(|error| anyhow::anyhow!("{error:#}; mirror log tail:\n{}", crate::bench::tail(&log, 20)))
    }

    /// The shared `mm2.properties` (`batching` as for the catch-up or the latency cases), with
    /// the exactly-once keys when `variant` asks for them.
    fn exactly_once_config(
        &self,
        tag: &str,
        variant: Variant,
        topics: &str,
        batching: bool,
    ) -> anyhow::Result<PathBuf> {
        let alias = variant.mirror.alias();
        let path = self.write_config(tag, variant.mirror, &self.source.bootstrap, topics, "lz4", batching)?;
        if variant.exactly_once {
            // The transaction keys per flow: MM2's dedicated mode passes only its own
            // connectors' keys from the top level to them (`transaction.boundary` is Connect's),
            // but every key of the flow's scope.
            let port = strait_testkit::free_port()?;
            let mut text = std::fs::read_to_string(&path)?;
            text.push_str(&format!(
                "target.exactly.once.source.support = enabled\n\
                 {alias}.consumer.isolation.level = read_committed\n\
                 {alias}->target.transaction.boundary = interval\n\
                 {alias}->target.transaction.boundary.interval.ms = 1000\n\
                 dedicated.mode.enable.internal.rest = true\n\
                 listeners = http://127.0.0.1:{port}\n"
            ));
            std::fs::write(&path, text)?;
        }
        Ok(path)
    }
}
