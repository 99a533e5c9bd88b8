//! `strait-perf`: Strait and real MirrorMaker 2 (dedicated mode, from the same Kafka jars) mirror
//! the same data between the same two local clusters, one after the other, and the results are
//! reported side by side as ratios.
//!
//! Catch-up: the source topic is loaded first with Kafka's own producer, then each mirror runs
//! until the target topic holds every record: records/s and MB/s (from the first record on the
//! target to the last, and from process start), CPU seconds of the mirror process per GiB, and
//! its peak RSS. Steady stream: a producer writes at a low rate while one mirror runs, and a
//! consumer on the target measures the latency from the record's timestamp to its arrival.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use strait_client::{ClientConfig, KafkaClient, NewTopic, OffsetSpec};
use strait_testkit::{ClusterOptions, KafkaCluster, KafkaDist};

/// Command-line options.
#[derive(Debug, Parser)]
#[command(about = "Benchmark Strait against MirrorMaker 2 on this machine")]
struct Args {
    /// Records per codec for the catch-up runs.
    #[arg(long, default_value_t = 300_000)]
    records: u64,
    /// Record size in bytes.
    #[arg(long, default_value_t = 1024)]
    record_size: u32,
    /// Partitions of every benchmark topic.
    #[arg(long, default_value_t = 8)]
    partitions: i32,
    /// Codecs to run (comma-separated: none, gzip, snappy, lz4, zstd).
    #[arg(long, default_value = "none,lz4,zstd", value_delimiter = ',')]
    codecs: Vec<String>,
    /// Records per second of the steady-stream latency run (0 skips it).
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    /// Length of the steady-stream run in seconds.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Where the Markdown table and the SVG chart go.
    #[arg(long, default_value = "perf/results")]
    out: PathBuf,
}

/// What one mirror did in one catch-up run.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Seconds from process start to the last record on the target.
    total_s: f64,
    /// Seconds from the first record on the target to the last.
    copy_s: f64,
    /// CPU seconds (user + system) of the mirror process.
    cpu_s: f64,
    /// Peak resident set size in MiB.
    rss_mib: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let strait = build_strait()?;
    let dist = KafkaDist::get()?;
    println!(
        "Kafka {}; starting a source and a target cluster…",
        strait_testkit::kafka_version()
    );
    let options = |name: &str| ClusterOptions {
        heap: "1g".into(),
        ..ClusterOptions::new(name)
    };
    let source = KafkaCluster::start_with(options("perf-source"))?;
    let target = KafkaCluster::start_with(options("perf-target"))?;
    let source_client = KafkaClient::connect(ClientConfig::new(&source.bootstrap_servers())).await?;
    let target_client = KafkaClient::connect(ClientConfig::new(&target.bootstrap_servers())).await?;
    let work = std::env::temp_dir().join(format!("strait-perf-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;

    let mut rows = Vec::new();
    for codec in &args.codecs {
        let topic = format!("bench-{codec}");
        create(&source_client, &topic, args.partitions).await?;
        println!(
            "[{codec}] loading {} records of {} bytes…",
            args.records, args.record_size
        );
        let load = dist
            .java("org.apache.kafka.tools.ProducerPerformance")
            .args([
                "--topic",
                &topic,
                "--num-records",
                &args.records.to_string(),
                "--record-size",
                &args.record_size.to_string(),
            ])
            .args([
                "--throughput",
                "-1",
                "--producer-props",
                &format!("bootstrap.servers={}", source.bootstrap_servers()),
            ])
            .args([
                format!("compression.type={codec}"),
                "linger.ms=10".into(),
                "batch.size=65536".into(),
            ])
            .output()?;
        anyhow::ensure!(
            load.status.success(),
            "loading failed: {}",
            String::from_utf8_lossy(&load.stderr)
        );
        let bytes = end_sum(&source_client, &topic).await?;
        anyhow::ensure!(
            bytes == args.records as i64,
            "the source holds {bytes} records, not {}",
            args.records
        );
        let size = topic_bytes(&source_client, &topic, args.partitions).await?;

        let strait_run = {
            let config = write_config(&work, "strait", &source, &target, &topic, codec)?;
            let child = Command::new(&strait)
                .arg("run")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            measure(child, &target_client, &format!("strait.{topic}"), args.records as i64).await?
        };
        println!("[{codec}] strait: {strait_run:?}");
        let mm2_run = {
            let config = write_config(&work, "mm2", &source, &target, &topic, codec)?;
            let child = dist
                .jvm_command("1g", "org.apache.kafka.connect.mirror.MirrorMaker")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            measure(child, &target_client, &format!("mm2.{topic}"), args.records as i64).await?
        };
        println!("[{codec}] mm2:    {mm2_run:?}");
        rows.push((codec.clone(), size, strait_run, mm2_run));
    }

    let latency = if args.rate > 0 {
        let mut results = Vec::new();
        for mirror in ["strait", "mm2"] {
            let topic = format!("steady-{mirror}");
            create(&source_client, &topic, args.partitions).await?;
            let config = write_config(&work, mirror, &source, &target, &topic, "lz4")?;
            let child = if mirror == "strait" {
                Command::new(&strait)
                    .arg("run")
                    .arg(&config)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?
            } else {
                dist.jvm_command("1g", "org.apache.kafka.connect.mirror.MirrorMaker")
                    .arg(&config)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?
            };
            let remote = format!("{mirror}.{topic}");
            let (p50, p99) = steady(&args, &source, &target_client, &topic, &remote, child).await?;
            println!("[steady] {mirror}: p50 {p50} ms, p99 {p99} ms");
            results.push((mirror, p50, p99));
        }
        results
    } else {
        Vec::new()
    };

    let report = report(&args, &rows, &latency);
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("latest.md"), &report)?;
    std::fs::write(args.out.join("latest.svg"), chart(&rows))?;
    println!("\n{report}");
    println!("Written to {}/latest.md and latest.svg", args.out.display());
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Builds the release `strait` binary with the cargo running this program.
fn build_strait() -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "strait", "--bin", "strait"])
        .status()?;
    anyhow::ensure!(status.success(), "building strait failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    Ok(target.join("release/strait"))
}

async fn create(client: &KafkaClient, topic: &str, partitions: i32) -> anyhow::Result<()> {
    client
        .create_topics(&[NewTopic {
            name: topic.into(),
            partitions,
            replication_factor: 1,
            configs: vec![],
        }])
        .await?;
    client.wait_for_leaders(topic, Duration::from_secs(60)).await?;
    Ok(())
}

async fn end_sum(client: &KafkaClient, topic: &str) -> anyhow::Result<i64> {
    let Some(t) = client
        .metadata(Some(&[topic]))
        .await?
        .topics
        .remove(topic)
        .filter(|t| t.error == 0)
    else {
        return Ok(0);
    };
    let partitions: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
    Ok(client
        .list_offsets(topic, &partitions, OffsetSpec::Latest)
        .await
        .map(|e| e.values().sum())
        .unwrap_or(0))
}

/// Bytes of record batches in the topic (what a mirror moves), by fetching it once.
async fn topic_bytes(client: &KafkaClient, topic: &str, partitions: i32) -> anyhow::Result<u64> {
    let mut total = 0u64;
    for partition in 0..partitions {
        let end = client.list_offsets(topic, &[partition], OffsetSpec::Latest).await?[&partition];
        let mut position = 0;
        while position < end {
            let fetched = client.fetch(topic, partition, position, 8 << 20, false).await?;
            for batch in strait_wire::RecordBatches::new(fetched.records) {
                let batch = batch?;
                position = batch.next_offset();
                total += batch.size() as u64;
            }
        }
    }
    Ok(total)
}

/// The same `mm2.properties` for both mirrors (source alias `alias`), with MM2's usual
/// throughput settings for its Connect producer and consumer.
fn write_config(
    dir: &Path,
    alias: &str,
    source: &KafkaCluster,
    target: &KafkaCluster,
    topic: &str,
    codec: &str,
) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{alias}-{topic}.properties"));
    let text = format!(
        "clusters = {alias}, target\n\
         {alias}.bootstrap.servers = {}\n\
         target.bootstrap.servers = {}\n\
         {alias}->target.enabled = true\n\
         {alias}->target.topics = {topic}\n\
         target->{alias}.emit.heartbeats.enabled = false\n\
         tasks.max = 8\n\
         replication.factor = 1\n\
         offset-syncs.topic.replication.factor = 1\n\
         checkpoints.topic.replication.factor = 1\n\
         heartbeats.topic.replication.factor = 1\n\
         offset.storage.replication.factor = 1\n\
         status.storage.replication.factor = 1\n\
         config.storage.replication.factor = 1\n\
         target.producer.compression.type = {codec}\n\
         target.producer.linger.ms = 10\n\
         target.producer.batch.size = 262144\n\
         target.producer.buffer.memory = 134217728\n\
         {alias}.consumer.max.partition.fetch.bytes = 8388608\n\
         {alias}.consumer.fetch.max.bytes = 52428800\n\
         {alias}.consumer.max.poll.records = 10000\n\
         offset.flush.interval.ms = 10000\n",
        source.bootstrap_servers(),
        target.bootstrap_servers()
    );
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Waits until `remote` holds `records` records, then samples the process and stops it.
async fn measure(mut child: Child, target: &KafkaClient, remote: &str, records: i64) -> anyhow::Result<Run> {
    let pid = child.id();
    let started = Instant::now();
    let mut first = None;
    let deadline = started + Duration::from_secs(900);
    loop {
        let mirrored = end_sum(target, remote).await?;
        if mirrored > 0 && first.is_none() {
            first = Some(started.elapsed());
        }
        if mirrored >= records {
            break;
        }
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            let _ = child.kill();
            anyhow::bail!("{remote}: the mirror did not catch up ({mirrored} of {records})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let total = started.elapsed();
    let (cpu_s, rss_mib) = sample(pid).with_context(|| format!("reading /proc/{pid}"))?;
    let _ = child.kill();
    let _ = child.wait();
    let first = first.unwrap_or(total);
    Ok(Run {
        total_s: total.as_secs_f64(),
        copy_s: (total - first).as_secs_f64().max(0.1),
        cpu_s,
        rss_mib,
    })
}

/// CPU seconds (user + system, clock ticks of 100 Hz) and peak RSS of a process.
fn sample(pid: u32) -> anyhow::Result<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("stat format")?
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let hwm_kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .context("VmHWM")?
        .parse()?;
    Ok((ticks / 100.0, hwm_kb / 1024.0))
}

/// Produces at `args.rate` for `args.seconds` while the mirror runs; a consumer on the target
/// measures, per record, arrival time minus the record's timestamp. Returns p50 and p99 in ms.
async fn steady(
    args: &Args,
    source: &KafkaCluster,
    target: &KafkaClient,
    topic: &str,
    remote: &str,
    mut mirror: Child,
) -> anyhow::Result<(i64, i64)> {
    // Let the mirror start and create the remote topic before the stream begins.
    let ready = Instant::now() + Duration::from_secs(120);
    while target
        .metadata(Some(&[remote]))
        .await?
        .topics
        .get(remote)
        .is_none_or(|t| t.error != 0)
    {
        anyhow::ensure!(Instant::now() < ready, "{remote} was not created");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let records = args.rate * args.seconds;
    let mut producer = KafkaDist::get()?
        .java("org.apache.kafka.tools.ProducerPerformance")
        .args([
            "--topic",
            topic,
            "--num-records",
            &records.to_string(),
            "--record-size",
            "512",
        ])
        .args([
            "--throughput",
            &args.rate.to_string(),
            "--producer-props",
            &format!("bootstrap.servers={}", source.bootstrap_servers()),
        ])
        .args(["compression.type=lz4", "linger.ms=5"])
        .stdout(Stdio::null())
        .spawn()?;
    // One consumer task per partition, so that a quiet partition's long poll delays no other.
    let deadline = Instant::now() + Duration::from_secs(args.seconds + 120);
    let arrived = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for partition in 0..args.partitions {
        let (target, remote, arrived) = (target.clone(), remote.to_owned(), arrived.clone());
        tasks.push(tokio::spawn(async move {
            let (mut position, mut latencies) = (0i64, Vec::new());
            while arrived.load(std::sync::atomic::Ordering::Relaxed) < records && Instant::now() < deadline {
                let fetched = target.fetch(&remote, partition, position, 8 << 20, false).await?;
                let now = now_ms();
                for batch in strait_wire::RecordBatches::new(fetched.records) {
                    let batch = batch?;
                    for record in strait_wire::decode_records(&batch)? {
                        if batch.base_offset() + i64::from(record.offset_delta) >= position {
                            latencies.push(now - (batch.base_timestamp() + record.timestamp_delta));
                            arrived.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    position = position.max(batch.next_offset());
                }
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    let _ = producer.wait();
    let _ = mirror.kill();
    let _ = mirror.wait();
    anyhow::ensure!(!latencies.is_empty(), "no record arrived on {remote}");
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Ok((at(0.50), at(0.99)))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn report(args: &Args, rows: &[(String, u64, Run, Run)], latency: &[(&str, i64, i64)]) -> String {
    let gib = |bytes: u64| bytes as f64 / f64::from(1u32 << 30);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Catch-up of {} records of {} B in {} partitions per codec (Kafka {}, `{}` cores, {}).\n",
        args.records,
        args.record_size,
        args.partitions,
        strait_testkit::kafka_version(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        machine()
    );
    let _ = writeln!(out, "| codec | mirror | records/s | MB/s (batches) | to catch-up from start | CPU s | CPU s per GiB | peak RSS MiB |");
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    for (codec, bytes, strait, mm2) in rows {
        for (name, run) in [("Strait", strait), ("MM2", mm2)] {
            let _ = writeln!(
                out,
                "| {codec} | {name} | {:.0} | {:.1} | {:.1} s | {:.1} | {:.1} | {:.0} |",
                args.records as f64 / run.copy_s,
                *bytes as f64 / 1e6 / run.copy_s,
                run.total_s,
                run.cpu_s,
                run.cpu_s / gib(*bytes),
                run.rss_mib
            );
        }
        let _ = writeln!(
            out,
            "| {codec} | **Strait/MM2** | **{:.1}x** | | **{:.1}x faster** | | **{:.1}x less** | **{:.1}x less** |",
            mm2.copy_s / strait.copy_s,
            mm2.total_s / strait.total_s,
            mm2.cpu_s / strait.cpu_s.max(0.01),
            mm2.rss_mib / strait.rss_mib
        );
    }
    if !latency.is_empty() {
        let _ = writeln!(out, "\nSteady stream of {} records/s (512 B, lz4) for {} s, latency from record timestamp to arrival at a target consumer:\n", args.rate, args.seconds);
        let _ = writeln!(out, "| mirror | p50 ms | p99 ms |");
        let _ = writeln!(out, "|---|---:|---:|");
        for (mirror, p50, p99) in latency {
            let _ = writeln!(
                out,
                "| {} | {p50} | {p99} |",
                if *mirror == "strait" { "Strait" } else { "MM2" }
            );
        }
    }
    out
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
    format!("{cpu}, {}", std::env::consts::ARCH)
}

/// A bar chart of CPU seconds per GiB, Strait next to MM2 for each codec.
fn chart(rows: &[(String, u64, Run, Run)]) -> String {
    let per_gib = |run: &Run, bytes: u64| run.cpu_s / (bytes as f64 / f64::from(1u32 << 30));
    let max = rows
        .iter()
        .map(|(_, b, s, m)| per_gib(s, *b).max(per_gib(m, *b)))
        .fold(1.0, f64::max);
    let (width, height) = (120 * rows.len().max(1) + 80, 300);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"10\" y=\"18\">CPU seconds per GiB mirrored (lower is better): Strait (blue) vs MirrorMaker 2 (grey)</text>\n"
    );
    for (i, (codec, bytes, strait, mm2)) in rows.iter().enumerate() {
        let x = 60 + i * 120;
        for (j, (value, color)) in [(per_gib(strait, *bytes), "#1f77b4"), (per_gib(mm2, *bytes), "#888888")]
            .iter()
            .enumerate()
        {
            let h = (value / max * 220.0).max(1.0);
            let bx = x + j * 40;
            let _ = writeln!(
                svg,
                "<rect x=\"{bx}\" y=\"{:.0}\" width=\"36\" height=\"{h:.0}\" fill=\"{color}\"/>",
                260.0 - h
            );
            let _ = writeln!(svg, "<text x=\"{bx}\" y=\"{:.0}\">{value:.1}</text>", 255.0 - h);
        }
        let _ = writeln!(svg, "<text x=\"{x}\" y=\"280\">{codec}</text>");
    }
    svg.push_str("</svg>\n");
    svg
}
