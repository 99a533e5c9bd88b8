//! `strait demo`: two local clusters and some data, to see Strait work without any set-up.

use std::time::Instant;

use anyhow::Context;
use strait_client::{ClientConfig, KafkaClient, NewTopic, OffsetSpec};
use strait_testkit::{KafkaCluster, KafkaDist};

/// Options of `strait demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Records to write to the source topic.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Size of each record in bytes.
    #[arg(long, default_value_t = 512)]
    record_size: u32,
}

/// Runs the demo.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    println!(
        "Fetching Kafka {} (once; cached afterwards) and starting two local clusters…",
        strait_testkit::kafka_version()
    );
    let started = Instant::now();
    let (source, target) = tokio::task::spawn_blocking(|| -> anyhow::Result<_> {
        let source = std::thread::spawn(|| KafkaCluster::start("source"));
        let target = KafkaCluster::start("target").context("starting the target cluster")?;
        let source = source
            .join()
            .expect("source start thread")
            .context("starting the source cluster")?;
        Ok((source, target))
    })
    .await??;
    println!(
        "  source: bootstrap.servers={}\n  target: bootstrap.servers={}\n  (up in {:.1?})",
        source.bootstrap_servers(),
        target.bootstrap_servers(),
        started.elapsed()
    );

    let topic = "orders";
    let client = KafkaClient::connect(ClientConfig::new(&source.bootstrap_servers())).await?;
    client
        .create_topics(&[NewTopic {
            name: topic.into(),
            partitions: 4,
            replication_factor: 1,
            configs: vec![],
        }])
        .await?;
    client
        .wait_for_leaders(topic, std::time::Duration::from_secs(60))
        .await?;
    println!(
        "Writing {} records of {} bytes (lz4) to `{topic}` with Kafka's own producer…",
        args.records, args.record_size
    );
    let bootstrap = source.bootstrap_servers();
    let (records, record_size) = (args.records, args.record_size);
    let output = tokio::task::spawn_blocking(move || {
        KafkaDist::get()?
            .java("org.apache.kafka.tools.ProducerPerformance")
            .args([
                "--topic",
                topic,
                "--num-records",
                &records.to_string(),
                "--record-size",
                &record_size.to_string(),
            ])
            .args([
                "--throughput",
                "-1",
                "--producer-props",
                &format!("bootstrap.servers={bootstrap}"),
                "compression.type=lz4",
            ])
            .output()
            .map_err(anyhow::Error::from)
    })
    .await??;
    anyhow::ensure!(
        output.status.success(),
        "the producer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ends = client.list_offsets(topic, &[0, 1, 2, 3], OffsetSpec::Latest).await?;
    let total: i64 = ends.values().sum();
    println!("  source `{topic}` now holds {total} records in 4 partitions");

    let properties = format!(
        "clusters = source, target\n\
         source.bootstrap.servers = {}\n\
         target.bootstrap.servers = {}\n\
         source->target.enabled = true\n\
         source->target.topics = orders\n\
         replication.factor = 1\n",
        source.bootstrap_servers(),
        target.bootstrap_servers()
    );
    println!("Mirroring with this mm2.properties:\n\n{}", indent(&properties));
    let config = strait_config::Mm2Config::parse(&properties)?;
    let flow = config.flow("source", "target").context("the demo flow")?.clone();
    let remote = flow.remote_topic(topic);
    let started = Instant::now();
    let handle = strait_mirror::run_flow(
        flow,
        &strait_mirror::Process::new(&config),
        strait_mirror::Seat::alone(),
    );
    let target_client = KafkaClient::connect(ClientConfig::new(&target.bootstrap_servers())).await?;
    let deadline = Instant::now() + std::time::Duration::from_secs(300);
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        if handle.is_finished() {
            return Err(handle
                .stop()
                .await
                .err()
                .map_or_else(|| anyhow::anyhow!("the mirror stopped early"), Into::into));
        }
        let mirrored: i64 = match target_client
            .list_offsets(&remote, &[0, 1, 2, 3], OffsetSpec::Latest)
            .await
        {
            Ok(ends) => ends.values().sum(),
            Err(_) => 0, // The remote topic is not created yet.
        };
        println!("  target `{remote}`: {mirrored}/{total} records");
        if mirrored >= total {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the mirror did not catch up within 5 minutes"
        );
    }
    let elapsed = started.elapsed();
    let stats = handle.stats().clone();
    handle.stop().await?;
    println!(
        "Mirrored {} records ({:.1} MB of record batches, forwarded without decompression) in {:.1?}.",
        stats.records(),
        stats.bytes() as f64 / 1e6,
        elapsed
    );
    println!("Progress is stored in `mm2-offsets.source.internal` on the target, as MirrorMaker 2 stores it.");
    println!("Stopping and removing both clusters.");
    drop((source, target));
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("    {line}\n")).collect()
}
