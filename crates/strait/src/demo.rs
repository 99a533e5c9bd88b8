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
    println!(
        "  source `{topic}` now holds {} records in 4 partitions",
        ends.values().sum::<i64>()
    );
    println!("The mirror itself is not built yet, so the demo stops here; the clusters are stopped and removed.");
    drop((source, target));
    Ok(())
}
