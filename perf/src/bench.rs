//! The clusters, the mirrors and the cases.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use strait_client::{ClientConfig, KafkaClient};
use strait_testkit::{ClusterOptions, FaultProxy, Guarded, KafkaBroker, KafkaCluster, KafkaDist, ScratchDir};

use crate::kafka::{self, Contents, Tally};
use crate::procfs::{self, Ports, SocketPeaks};
use crate::{Args, Mirror};

/// One cluster as the benchmark sees it.
pub struct Side {
    /// The cluster (its first broker, which is also the controller).
    cluster: KafkaCluster,
    /// Brokers added with `--brokers`.
    extra: Vec<KafkaBroker>,
    /// A client of it (through the proxy for the WAN source).
    pub client: KafkaClient,
    /// `bootstrap.servers` for the mirrors and the Java tools.
    pub bootstrap: String,
}

impl Side {
    async fn start(name: &str, brokers: u32) -> anyhow::Result<Side> {
        let options = cluster_options(name);
        let (cluster, extra) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let cluster = KafkaCluster::start_with(options)?;
            let extra = (2..=brokers)
                .map(|id| cluster.add_broker(id))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((cluster, extra))
        })
        .await??;
        let bootstrap = cluster.bootstrap_servers();
        let client = KafkaClient::connect(ClientConfig::new(&bootstrap)).await?;
        // Wait until every broker is registered, so that topics spread over all of them.
        let deadline = Instant::now() + Duration::from_secs(60);
        while client.metadata(Some(&[])).await?.brokers.len() < brokers as usize {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{name}: not all {brokers} brokers registered"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(Side {
            cluster,
            extra,
            client,
            bootstrap,
        })
    }

    /// Names this cluster's broker ports `<role> b<n>` in `ports`.
    fn label_ports(&self, role: &str, ports: &mut Ports) {
        ports.add(&self.cluster.bootstrap_servers(), &format!("{role} b1"));
        for (i, broker) in self.extra.iter().enumerate() {
            ports.add(&broker.address(), &format!("{role} b{}", i + 2));
        }
    }
}

fn cluster_options(name: &str) -> ClusterOptions {
    // Brokers as bin/kafka-server-start.sh runs them: a 1 GiB heap and G1.
    ClusterOptions {
        heap: "1g".into(),
        kafka_jvm: true,
        ..ClusterOptions::new(name)
    }
    // Deleted topics (the benchmark deletes each run's) give their files back soon.
    .property("file.delete.delay.ms", "1000")
}

/// How a case's source topics are filled.
#[derive(Debug, Clone)]
pub(crate) struct Load {
    /// Kafka's `ProducerPerformance` (one topic, sticky partitioning) or `perf/java/Load.java`
    /// (every partition of every topic gets its share).
    pub even: bool,
    pub topics: Vec<String>,
    pub partitions: i32,
    pub records: u64,
    pub record_size: u32,
    pub codec: String,
    pub batch_size: u32,
    pub linger_ms: u32,
}

/// A catch-up case: load the source, then let each mirror copy it.
struct Spec<'a> {
    /// Short name, e.g. `catch-up lz4`.
    name: String,
    /// What was mirrored, for the report.
    description: String,
    load: Load,
    /// The source (the shared one, or the WAN one behind `proxy`).
    source: &'a Side,
    /// Adds the WAN delay while a mirror runs.
    proxy: Option<(&'a FaultProxy, Duration)>,
}

/// What one mirror did in one catch-up run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Which mirror.
    pub mirror: Mirror,
    /// Seconds from process start to the last record on the target.
    pub total_s: f64,
    /// Seconds from the first record on the target to the last.
    pub copy_s: f64,
    /// CPU seconds (user + system) of the mirror process.
    pub cpu_s: f64,
    /// Peak resident set size in MiB.
    pub rss_mib: f64,
    /// Peak TCP sockets held, per broker.
    pub sockets: SocketPeaks,
    /// What the mirror wrote to the target.
    pub target: Contents,
    /// Why the run failed (the other fields are then zero).
    pub failed: Option<String>,
}

impl Run {
    pub(crate) fn failed(mirror: Mirror, reason: String) -> Run {
        Run {
            mirror,
            total_s: 0.0,
            copy_s: 0.0,
            cpu_s: 0.0,
            rss_mib: 0.0,
            sockets: SocketPeaks::default(),
            target: Contents::default(),
            failed: Some(reason),
        }
    }
}

/// One catch-up case: the source's contents and each mirror's run.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// Short name.
    pub name: String,
    /// What was mirrored.
    pub description: String,
    /// The source topics' contents.
    pub source: Contents,
    /// One run per mirror and round, in the order they ran.
    pub runs: Vec<Run>,
}

/// One mirror at one steady rate.
#[derive(Debug, Clone)]
pub struct LatencyRow {
    /// Records per second written to the source.
    pub rate: u64,
    /// Which mirror.
    pub mirror: Mirror,
    /// Records measured (after the warm-up).
    pub measured: u64,
    /// Median latency in ms.
    pub p50: i64,
    /// 99th percentile in ms.
    pub p99: i64,
    /// Highest in ms.
    pub max: i64,
    /// CPU seconds of the mirror while this rate ran.
    pub cpu_s: f64,
    /// Seconds this rate ran.
    pub window_s: f64,
    /// Peak sockets during this rate.
    pub sockets: SocketPeaks,
    /// Why it failed (the other fields are then zero).
    pub failed: Option<String>,
}

impl LatencyRow {
    pub(crate) fn failed(rate: u64, mirror: Mirror, reason: String) -> LatencyRow {
        LatencyRow {
            rate,
            mirror,
            measured: 0,
            p50: 0,
            p99: 0,
            max: 0,
            cpu_s: 0.0,
            window_s: 0.0,
            sockets: SocketPeaks::default(),
            failed: Some(reason),
        }
    }
}

/// The clusters, the built `strait`, compiled Java helpers and a scratch folder.
pub struct Bench {
    pub(crate) args: Args,
    strait: PathBuf,
    dist: &'static KafkaDist,
    pub(crate) scratch: ScratchDir,
    classes: PathBuf,
    pub(crate) source: Side,
    pub(crate) target: Side,
}

impl Bench {
    /// Builds `strait`, raises the open-file limit, starts the clusters and compiles the Java
    /// helpers.
    pub async fn start(args: Args) -> anyhow::Result<Bench> {
        let strait = build_strait()?;
        raise_open_file_limit();
        let dist = KafkaDist::get()?;
        println!(
            "Kafka {}; starting a source and a target cluster of {} broker(s) each…",
            strait_testkit::kafka_version(),
            args.brokers
        );
        let (source, target) = tokio::join!(
            Side::start("perf-source", args.brokers),
            Side::start("perf-target", args.brokers)
        );
        let (source, target) = (source?, target?);
        let scratch = ScratchDir::new("perf")?;
        let classes = scratch.path().join("classes");
        let java = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
        dist.javac(&[java.join("Load.java"), java.join("LatencyConsumer.java")], &classes)?;
        Ok(Bench {
            args,
            strait,
            dist,
            scratch,
            classes,
            source,
            target,
        })
    }

    /// Stops everything (dropping does the same).
    pub fn stop(self) {}

    /// `catch-up`: the existing per-codec case, 8 partitions.
    pub async fn catch_up(&mut self, codec: &str) -> anyhow::Result<CaseResult> {
        let (records, size) = (self.args.records, self.args.record_size);
        let spec = Spec {
            name: format!("catch-up {codec}"),
            description: format!("{records} records of {size} B, {codec}, 8 partitions"),
            load: Load {
                even: false,
                topics: vec![format!("bench-{codec}")],
                partitions: 8,
                records,
                record_size: size,
                codec: codec.into(),
                batch_size: 65536,
                linger_ms: 10,
            },
            source: &self.source,
            proxy: None,
        };
        self.mirror_case(spec).await
    }

    /// `wide` and `wide-10k`: `topics` × `partitions`, 512 B records spread evenly. The case is
    /// named after its codec unless that is lz4, the default.
    pub async fn wide(
        &mut self,
        topics: u32,
        partitions: i32,
        records: u64,
        codec: &str,
    ) -> anyhow::Result<CaseResult> {
        let named = if codec == "lz4" {
            String::new()
        } else {
            format!(" {codec}")
        };
        let prefix = format!("wide{topics}x{partitions}{}", named.replace(' ', "-"));
        let spec = Spec {
            name: format!("wide {topics}×{partitions}{named}"),
            description: format!(
                "{records} records of 512 B, {codec}, {topics} topics × {partitions} partitions = {} partitions",
                i64::from(topics) * i64::from(partitions)
            ),
            load: Load {
                even: true,
                topics: (0..topics).map(|i| format!("{prefix}-{i:03}")).collect(),
                partitions,
                records,
                record_size: 512,
                codec: codec.into(),
                batch_size: 65536,
                linger_ms: 10,
            },
            source: &self.source,
            proxy: None,
        };
        self.mirror_case(spec).await
    }

    /// InitProducerId once, then `--producer-ids` times at once: the start-up cost of one
    /// producer id per target cluster against one per partition.
    pub async fn producer_ids(&mut self) -> anyhow::Result<crate::report::ProducerIdsRow> {
        let client = self.target.client.clone();
        // Warms the connection up, and waits out a coordinator still loading.
        init_producer_id(&client).await?;
        let started = std::time::Instant::now();
        init_producer_id(&client).await?;
        let one_s = started.elapsed().as_secs_f64();
        let partitions = self.args.producer_ids;
        let started = std::time::Instant::now();
        let requests: Vec<_> = (0..partitions)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move { init_producer_id(&client).await })
            })
            .collect();
        for request in requests {
            request.await??;
        }
        let each_s = started.elapsed().as_secs_f64();
        println!(
            "[producer-ids] one: {:.1} ms; {partitions} at once: {each_s:.2} s",
            one_s * 1000.0
        );
        Ok(crate::report::ProducerIdsRow {
            partitions,
            one_s,
            each_s,
        })
    }

    /// `long`: several GiB, so that start-up does not dominate CPU per GiB.
    pub async fn long(&mut self) -> anyhow::Result<CaseResult> {
        let records = self.args.long_records;
        let spec = Spec {
            name: "long".into(),
            description: format!("{records} records of 1024 B, lz4, 8 partitions"),
            load: Load {
                even: false,
                topics: vec!["long-lz4".into()],
                partitions: 8,
                records,
                record_size: 1024,
                codec: "lz4".into(),
                batch_size: 65536,
                linger_ms: 10,
            },
            source: &self.source,
            proxy: None,
        };
        self.mirror_case(spec).await
    }

    /// `small-batches`: the Java producer's default `batch.size` on the source.
    pub async fn small_batches(&mut self) -> anyhow::Result<CaseResult> {
        let records = self.args.small_records;
        let spec = Spec {
            name: "small batches".into(),
            description: format!("{records} records of 512 B, lz4, 8 partitions, source batch.size=16384 linger.ms=5"),
            load: Load {
                even: false,
                topics: vec!["small-lz4".into()],
                partitions: 8,
                records,
                record_size: 512,
                codec: "lz4".into(),
                batch_size: 16384,
                linger_ms: 5,
            },
            source: &self.source,
            proxy: None,
        };
        self.mirror_case(spec).await
    }

    /// `wan`: a source cluster reached only through a delay proxy (it advertises the proxy's
    /// port); the mirrors run next to the target and fetch across the delay.
    pub async fn wan(&mut self) -> anyhow::Result<CaseResult> {
        let proxy = FaultProxy::start().await;
        let advertised = format!("PLAINTEXT://127.0.0.1:{}", proxy.port());
        let options = cluster_options("perf-wan-source").property("advertised.listeners", &advertised);
        let cluster = tokio::task::spawn_blocking(move || KafkaCluster::start_with(options)).await??;
        proxy.set_upstream(cluster.bootstrap_servers().parse()?);
        let bootstrap = format!("127.0.0.1:{}", proxy.port());
        let source = Side {
            client: KafkaClient::connect(ClientConfig::new(&bootstrap)).await?,
            cluster,
            extra: Vec::new(),
            bootstrap,
        };
        let (records, delay) = (self.args.wan_records, Duration::from_millis(self.args.wan_delay_ms));
        let spec = Spec {
            name: format!("wan {}+{} ms", delay.as_millis(), delay.as_millis()),
            description: format!(
                "{records} records of 1024 B, lz4, 8 partitions; the source behind a proxy adding {} ms each way",
                delay.as_millis()
            ),
            load: Load {
                even: false,
                topics: vec!["wan-lz4".into()],
                partitions: 8,
                records,
                record_size: 1024,
                codec: "lz4".into(),
                batch_size: 65536,
                linger_ms: 10,
            },
            source: &source,
            proxy: Some((&proxy, delay)),
        };
        self.mirror_case(spec).await
    }

    /// Labels of the broker ports the mirrors connect to, for counting sockets.
    pub(crate) fn ports(&self, source: &Side, proxy: Option<&FaultProxy>) -> Ports {
        let mut ports = Ports::default();
        match proxy {
            Some(proxy) => ports.add(&proxy.port().to_string(), "source b1"),
            None => source.label_ports("source", &mut ports),
        }
        self.target.label_ports("target", &mut ports);
        ports
    }

    async fn mirror_case(&self, spec: Spec<'_>) -> anyhow::Result<CaseResult> {
        let Spec {
            name,
            description,
            load,
            source,
            proxy,
        } = spec;
        let description = if self.args.create_remote_topics {
            format!("{description}; remote topics created by the benchmark before each mirror starts")
        } else {
            description
        };
        println!("[{name}] {description}");
        let contents = self.fill(&name, source, &load).await?;
        let expected = load.records as i64;
        let ports = self.ports(source, proxy.map(|(p, _)| p));
        let regex = regex_for(&load.topics);
        let mut runs = Vec::new();
        let mut order = Vec::new();
        for round in 0..self.args.rounds {
            if round % 2 == 0 {
                order.extend(self.args.mirrors.iter().map(|&m| (round, m)));
            } else {
                order.extend(self.args.mirrors.iter().rev().map(|&m| (round, m)));
            }
        }
        for (round, mirror) in order {
            if let Some((proxy, delay)) = proxy {
                proxy.set_latency(delay);
            }
            let remotes: Vec<String> = load.topics.iter().map(|t| format!("{}.{t}", mirror.alias())).collect();
            let tag = format!(
                "{}-{}{}",
                name.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
                mirror.alias(),
                if round == 0 {
                    String::new()
                } else {
                    format!("-{}", round + 1)
                }
            );
            let config = self.write_config(&tag, mirror, &source.bootstrap, &regex, &load.codec, true)?;
            let log = self.scratch.path().join(format!("{tag}.log"));
            let run = self
                .checked_run(
                    mirror,
                    &config,
                    &log,
                    &load,
                    &remotes,
                    source,
                    proxy,
                    &ports,
                    &mut Tally::EndOffsets,
                )
                .await;
            let run = match run {
                Ok(run) => {
                    println!(
                        "[{name}] {}: {:.0} records/s, caught up {:.1} s after start, {:.1} CPU s, {:.0} MiB peak RSS, sockets {}",
                        mirror.name(),
                        expected as f64 / run.copy_s,
                        run.total_s,
                        run.cpu_s,
                        run.rss_mib,
                        run.sockets.summary()
                    );
                    run
                }
                Err(error) => {
                    let error = format!("{error:#}");
                    eprintln!("[{name}] {} FAILED: {error}", mirror.name());
                    Run::failed(mirror, error)
                }
            };
            runs.push(run);
            self.clear_run(source).await?;
        }
        clear_topics(&source.client).await?;
        Ok(CaseResult {
            name,
            description,
            source: contents,
            runs,
        })
    }

    /// Creates the source topics of `load`, fills them and checks that they hold its records.
    pub(crate) async fn fill(&self, name: &str, source: &Side, load: &Load) -> anyhow::Result<Contents> {
        kafka::create_topics(&source.client, &load.topics, load.partitions).await?;
        let loading = Instant::now();
        self.load(&source.bootstrap, load).await?;
        let expected = load.records as i64;
        let contents = kafka::scan(&source.client, &load.topics).await?;
        anyhow::ensure!(
            contents.records == expected,
            "[{name}] the source holds {} records, not {expected}",
            contents.records
        );
        println!(
            "[{name}] loaded in {:.0?}: {} batches, {:.1} MB",
            loading.elapsed(),
            contents.batches,
            contents.bytes as f64 / 1e6
        );
        Ok(contents)
    }

    /// Runs one mirror until it has caught up (as `tally` counts), then checks that the target
    /// holds exactly the source's records, partition by partition, and scans what it wrote.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn checked_run(
        &self,
        mirror: Mirror,
        config: &Path,
        log: &Path,
        load: &Load,
        remotes: &[String],
        source: &Side,
        proxy: Option<(&FaultProxy, Duration)>,
        ports: &Ports,
        tally: &mut Tally,
    ) -> anyhow::Result<Run> {
        let expected = load.records as i64;
        if self.args.create_remote_topics {
            kafka::create_topics(&self.target.client, remotes, load.partitions).await?;
        }
        let process = self.spawn(mirror, config, log)?;
        let run = self
            .catch_up_run(mirror, process, log, remotes, expected, ports, tally)
            .await;
        if let Some((proxy, _)) = proxy {
            proxy.set_latency(Duration::ZERO);
        }
        let mut run = run?;
        if let Tally::Committed(count) = tally {
            // Anything committed between the last poll and the kill.
            count.update(&self.target.client, remotes).await?;
        }
        for (topic, remote) in load.topics.iter().zip(remotes) {
            let at_source = kafka::end_offsets(&source.client, topic).await?;
            // With transactions, committed records per partition against the source's offsets.
            let at_target = match tally {
                Tally::EndOffsets => kafka::end_offsets(&self.target.client, remote).await?,
                Tally::Committed(count) => count.per_partition(remote),
            };
            if at_source != at_target {
                let differ: Vec<String> = at_source
                    .iter()
                    .filter(|(p, o)| at_target.get(p) != Some(o))
                    .take(5)
                    .map(|(p, o)| format!("partition {p}: source {o}, target {:?}", at_target.get(p)))
                    .collect();
                anyhow::bail!("{remote} differs from {topic}: {}", differ.join("; "));
            }
        }
        run.target = match tally {
            Tally::EndOffsets => kafka::scan(&self.target.client, remotes).await?,
            Tally::Committed(count) => count.contents(),
        };
        anyhow::ensure!(
            run.target.records == expected,
            "the target holds {} records, not {expected}",
            run.target.records
        );
        Ok(run)
    }

    /// Fills the source topics.
    pub(crate) async fn load(&self, bootstrap: &str, load: &Load) -> anyhow::Result<()> {
        let props = [
            format!("compression.type={}", load.codec),
            format!("linger.ms={}", load.linger_ms),
            format!("batch.size={}", load.batch_size),
        ];
        let mut command = if load.even {
            let mut command = self.dist.java_program(&self.classes, "Load");
            command
                .arg(bootstrap)
                .arg(load.topics.join(","))
                .arg(load.partitions.to_string())
                .arg(load.records.to_string())
                .arg(load.record_size.to_string());
            command
        } else {
            let mut command = self.dist.java("org.apache.kafka.tools.ProducerPerformance");
            command
                .args(["--topic", &load.topics[0]])
                .args(["--num-records", &load.records.to_string()])
                .args(["--record-size", &load.record_size.to_string()])
                .args(["--throughput", "-1", "--producer-props"])
                .arg(format!("bootstrap.servers={bootstrap}"));
            command
        };
        command.args(props);
        let output = tokio::task::spawn_blocking(move || command.output()).await??;
        if !output.status.success() {
            let text = String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            anyhow::bail!(
                "loading failed ({} lines of output, the last ones):\n{}",
                lines.len(),
                lines[lines.len().saturating_sub(15)..].join("\n")
            );
        }
        Ok(())
    }

    /// The same `mm2.properties` for every mirror (source alias = the mirror's alias), with MM2's
    /// usual throughput settings for its Connect producer and consumer, and for Strait its
    /// `strait.io`.
    pub(crate) fn write_config(
        &self,
        tag: &str,
        mirror: Mirror,
        source: &str,
        topics: &str,
        codec: &str,
        batching: bool,
    ) -> anyhow::Result<PathBuf> {
        let alias = mirror.alias();
        // Throughput batching for the copies; the latency case keeps the producer's defaults
        // (batch.size 16 KiB, linger.ms 5 since Kafka 4.0), as a user after latency would.
        let batching = if batching {
            "target.producer.linger.ms = 10\n\
             target.producer.batch.size = 262144\n"
        } else {
            ""
        };
        // Written for epoll too, so that the A/B compares the two paths whatever the default.
        let io = mirror.io().map(|io| format!("strait.io = {io}\n")).unwrap_or_default();
        let path = self.scratch.path().join(format!("{tag}.properties"));
        let text = format!(
            "clusters = {alias}, target\n\
             {alias}.bootstrap.servers = {source}\n\
             target.bootstrap.servers = {target}\n\
             {alias}->target.enabled = true\n\
             {alias}->target.topics = {topics}\n\
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
             {batching}\
             {alias}.consumer.max.partition.fetch.bytes = 8388608\n\
             {alias}.consumer.fetch.max.bytes = 52428800\n\
             {alias}.consumer.max.poll.records = 10000\n\
             offset.flush.interval.ms = 10000\n\
             {io}",
            target = self.target.bootstrap,
        );
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// Makes the next mirror run a fresh deployment: deletes every topic on the target except
    /// Kafka's own, and the mirrors' internal topics (`….internal`) on `source`. The offset-syncs
    /// topic lives there, named after the target alias, which every mirror shares: a Strait
    /// reads it whole at start, so the next run would begin with the previous run's syncs.
    pub(crate) async fn clear_run(&self, source: &Side) -> anyhow::Result<()> {
        clear_topics(&self.target.client).await?;
        delete_topics_where(&source.client, |t| t.ends_with(".internal")).await
    }

    /// Starts a mirror under a guard (it dies with us), its output in `log`.
    pub(crate) fn spawn(&self, mirror: Mirror, config: &Path, log: &Path) -> anyhow::Result<Guarded> {
        let mut command = match mirror {
            Mirror::Strait | Mirror::StraitUring => {
                let mut command = Command::new(&self.strait);
                command.arg("run");
                command
            }
            Mirror::Mm2 => self.dist.mirror_maker(),
        };
        command.arg(config);
        Ok(Guarded::spawn(&command, log)?)
    }

    /// Waits until the remote topics hold `expected` records (as `tally` counts), sampling the
    /// process meanwhile, then stops it.
    #[allow(clippy::too_many_arguments)]
    async fn catch_up_run(
        &self,
        mirror: Mirror,
        process: Guarded,
        log: &Path,
        remotes: &[String],
        expected: i64,
        ports: &Ports,
        tally: &mut Tally,
    ) -> anyhow::Result<Run> {
        let pid = process.pid();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(self.args.timeout);
        let mut first = None;
        let mut sockets = SocketPeaks::default();
        let mut sampled = started - Duration::from_secs(1);
        let mut reported = started;
        let mut progress = (0, started);
        let limits = |sockets: &SocketPeaks| match procfs::open_file_limit(pid) {
            Some(limit) => format!(
                "; peak sockets {} ({}), open files {} of its limit {limit}",
                sockets.total,
                sockets.summary(),
                sockets.open_files
            ),
            None => format!("; peak sockets {} ({})", sockets.total, sockets.summary()),
        };
        loop {
            // Once a second: sockets, and the log for a fatal error.
            let look = sampled.elapsed() >= Duration::from_secs(1);
            if look {
                if let Ok(sample) = procfs::sample(pid, ports) {
                    sockets.add(&sample);
                }
                sampled = Instant::now();
            }
            let mirrored = tally.records(&self.target.client, remotes).await?;
            if mirrored > 0 && first.is_none() {
                first = Some(started.elapsed());
            }
            anyhow::ensure!(
                mirrored <= expected,
                "{mirrored} records on the target, {expected} at the source: duplicates"
            );
            if mirrored == expected {
                break;
            }
            if let Some((pattern, line)) = look.then(|| fatal_line(log)).flatten() {
                anyhow::bail!(
                    "its log says {pattern} ({mirrored} of {expected} records{}): {line}; last lines of {}:\n{}",
                    limits(&sockets),
                    log.display(),
                    tail(log, 30)
                );
            }
            if mirrored > progress.0 {
                progress = (mirrored, Instant::now());
            } else if progress.1.elapsed() > Duration::from_secs(self.args.stall_timeout) {
                anyhow::bail!(
                    "no progress for {} s ({mirrored} of {expected}){}; last lines of {}:\n{}",
                    self.args.stall_timeout,
                    limits(&sockets),
                    log.display(),
                    tail(log, 30)
                );
            }
            if !process.is_running() {
                anyhow::bail!(
                    "the mirror exited before catching up ({mirrored} of {expected}){}; last lines of {}:\n{}",
                    limits(&sockets),
                    log.display(),
                    tail(log, 30)
                );
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "the mirror did not catch up ({mirrored} of {expected}) in {} s{}; last lines of {}:\n{}",
                    self.args.timeout,
                    limits(&sockets),
                    log.display(),
                    tail(log, 30)
                );
            }
            if reported.elapsed() >= Duration::from_secs(15) {
                println!(
                    "  {}: {mirrored} of {expected} after {:.0?}, sockets {}",
                    mirror.name(),
                    started.elapsed(),
                    sockets.summary()
                );
                reported = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let total = started.elapsed();
        if let Ok(sample) = procfs::sample(pid, ports) {
            sockets.add(&sample);
        }
        let (cpu_s, rss_mib) = procfs::cpu_and_rss(pid).with_context(|| format!("reading /proc/{pid}"))?;
        drop(process);
        let first = first.unwrap_or(total);
        Ok(Run {
            mirror,
            total_s: total.as_secs_f64(),
            copy_s: (total - first).as_secs_f64().max(0.1),
            cpu_s,
            rss_mib,
            sockets,
            target: Contents::default(),
            failed: None,
        })
    }

    /// `latency`: for each mirror, one process mirrors a topic per rate; each rate in turn is
    /// written at that rate by Kafka's `ProducerPerformance` while `perf/java/LatencyConsumer`
    /// (Kafka's Java consumer) on the target measures arrival time minus record timestamp.
    pub async fn latency(&mut self) -> anyhow::Result<Vec<LatencyRow>> {
        let topics: Vec<String> = self.args.rates.iter().map(|r| format!("latency-{r}")).collect();
        println!(
            "[latency] {} records/s of 512 B, lz4, 8 partitions, {} s each after {} s of warm-up",
            self.args
                .rates
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            self.args.seconds,
            self.args.warmup
        );
        kafka::create_topics(&self.source.client, &topics, 8).await?;
        let ports = self.ports(&self.source, None);
        let mut rows = Vec::new();
        for &mirror in &self.args.mirrors {
            let mut done = Vec::new();
            if let Err(error) = self.latency_of(mirror, &topics, &ports, &mut done).await {
                let error = format!("{error:#}");
                eprintln!("[latency] {} FAILED: {error}", mirror.name());
                let measured: Vec<u64> = done.iter().map(|r: &LatencyRow| r.rate).collect();
                for &rate in self.args.rates.iter().filter(|r| !measured.contains(r)) {
                    done.push(LatencyRow::failed(rate, mirror, error.clone()));
                }
            }
            rows.extend(done);
            self.clear_run(&self.source).await?;
        }
        clear_topics(&self.source.client).await?;
        Ok(rows)
    }

    /// One mirror process through every rate; rows go to `rows` as they are measured.
    async fn latency_of(
        &self,
        mirror: Mirror,
        topics: &[String],
        ports: &Ports,
        rows: &mut Vec<LatencyRow>,
    ) -> anyhow::Result<()> {
        let tag = format!("latency-{}", mirror.alias());
        let config = self.write_config(&tag, mirror, &self.source.bootstrap, "latency-[0-9]+", "lz4", false)?;
        let log = self.scratch.path().join(format!("{tag}.log"));
        let process = self.spawn(mirror, &config, &log)?;
        self.prime(mirror, &process, &log, topics, &mut Tally::EndOffsets)
            .await?;
        for (&rate, topic) in self.args.rates.iter().zip(topics) {
            let remote = format!("{}.{topic}", mirror.alias());
            let row = self
                .steady(mirror, &process, rate, topic, &remote, ports, "read_uncommitted")
                .await
                .with_context(|| format!("at {rate}/s; mirror log tail:\n{}", tail(&log, 20)))?;
            println!(
                "[latency] {} at {rate}/s: p50 {} ms, p99 {} ms, max {} ms ({} measured), {:.2} CPU s in {:.1} s",
                mirror.name(),
                row.p50,
                row.p99,
                row.max,
                row.measured,
                row.cpu_s,
                row.window_s
            );
            rows.push(row);
        }
        Ok(())
    }

    /// Writes 100 records to each of `topics` and waits until the mirror has copied them (as
    /// `tally` counts): the mirror is flowing once records written now arrive (MM2 creates its
    /// remote topics well before its tasks start copying). The latency consumer starts at the
    /// end of the remote topics afterwards, so these records are not measured.
    pub(crate) async fn prime(
        &self,
        mirror: Mirror,
        process: &Guarded,
        log: &Path,
        topics: &[String],
        tally: &mut Tally,
    ) -> anyhow::Result<()> {
        const PRIME: i64 = 100;
        let remotes: Vec<String> = topics.iter().map(|t| format!("{}.{t}", mirror.alias())).collect();
        for topic in topics {
            self.load(
                &self.source.bootstrap,
                &Load {
                    even: false,
                    topics: vec![topic.clone()],
                    partitions: 8,
                    records: PRIME as u64,
                    record_size: 512,
                    codec: "lz4".into(),
                    batch_size: 16384,
                    linger_ms: 5,
                },
            )
            .await?;
        }
        let deadline = Instant::now() + Duration::from_secs(180);
        while tally.records(&self.target.client, &remotes).await? < PRIME * topics.len() as i64 {
            anyhow::ensure!(process.is_running(), "the mirror exited:\n{}", tail(log, 30));
            anyhow::ensure!(
                Instant::now() < deadline,
                "{} did not start mirroring within 180 s:\n{}",
                mirror.name(),
                tail(log, 30)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    /// Writes `topic` at `rate` for `--warmup` + `--seconds` while the latency consumer, at
    /// `isolation` (Kafka's `isolation.level`), measures `remote`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn steady(
        &self,
        mirror: Mirror,
        process: &Guarded,
        rate: u64,
        topic: &str,
        remote: &str,
        ports: &Ports,
        isolation: &str,
    ) -> anyhow::Result<LatencyRow> {
        let seconds = self.args.warmup + self.args.seconds;
        let records = rate * seconds;
        let consumer_log = self.scratch.path().join(format!("consumer-{remote}.log"));
        let mut consumer = self.dist.java_program(&self.classes, "LatencyConsumer");
        consumer
            .arg(&self.target.bootstrap)
            .arg(remote)
            .arg(records.to_string())
            .arg((self.args.warmup * 1000).to_string())
            .arg((seconds + 120).to_string())
            .arg(isolation);
        let consumer = Guarded::spawn(&consumer, &consumer_log)?;
        let ready = Instant::now() + Duration::from_secs(90);
        while !std::fs::read_to_string(&consumer_log)
            .unwrap_or_default()
            .lines()
            .any(|l| l == "ready")
        {
            anyhow::ensure!(
                consumer.is_running() && Instant::now() < ready,
                "the latency consumer did not start:\n{}",
                tail(&consumer_log, 20)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let pid = process.pid();
        let (cpu_before, _) = procfs::cpu_and_rss(pid)?;
        let started = Instant::now();
        let producer_log = self.scratch.path().join(format!("producer-{remote}.log"));
        let mut producer = self.dist.java("org.apache.kafka.tools.ProducerPerformance");
        producer
            .args(["--topic", topic])
            .args(["--num-records", &records.to_string()])
            .args(["--record-size", "512"])
            .args(["--throughput", &rate.to_string(), "--producer-props"])
            .arg(format!("bootstrap.servers={}", self.source.bootstrap))
            .args(["compression.type=lz4", "linger.ms=5"]);
        let producer = Guarded::spawn(&producer, &producer_log)?;
        let mut sockets = SocketPeaks::default();
        while consumer.is_running() {
            if let Ok(sample) = procfs::sample(pid, ports) {
                sockets.add(&sample);
            }
            anyhow::ensure!(process.is_running(), "the mirror exited");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // CPU from the producer's start to the consumer's last record.
        let (cpu_after, _) = procfs::cpu_and_rss(pid)?;
        let window = started.elapsed();
        drop(producer);
        let text = std::fs::read_to_string(&consumer_log)?;
        let line = text
            .lines()
            .rfind(|l| l.starts_with("received="))
            .with_context(|| format!("no result from the latency consumer:\n{}", tail(&consumer_log, 20)))?;
        let field = |name: &str| -> anyhow::Result<i64> {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                .with_context(|| format!("`{name}` in `{line}`"))?
                .parse()
                .with_context(|| format!("`{name}` in `{line}`"))
        };
        let received = field("received")? as u64;
        anyhow::ensure!(
            received == records,
            "the consumer received {received} of {records} records on {remote}; producer:\n{}",
            tail(&producer_log, 10)
        );
        Ok(LatencyRow {
            rate,
            mirror,
            measured: field("measured")? as u64,
            p50: field("p50")?,
            p99: field("p99")?,
            max: field("max")?,
            cpu_s: cpu_after - cpu_before,
            window_s: window.as_secs_f64(),
            sockets,
            failed: None,
        })
    }
}

/// A `topics =` list that matches exactly `topics` (names of letters, digits, `-` and `_`, which
/// are regexes of themselves).
pub(crate) fn regex_for(topics: &[String]) -> String {
    topics.join(", ")
}

/// Deletes every topic except Kafka's own (`__…`): the remote topics and the mirrors' internal
/// topics, so that each run starts as a fresh deployment and the broker carries no partitions of
/// earlier runs.
pub(crate) async fn clear_topics(client: &KafkaClient) -> anyhow::Result<()> {
    delete_topics_where(client, |t| !t.starts_with("__")).await
}

/// Deletes the topics of `client`'s cluster that `doomed` picks, and waits until the metadata
/// no longer lists them.
async fn delete_topics_where(client: &KafkaClient, doomed: impl Fn(&str) -> bool) -> anyhow::Result<()> {
    let topics: Vec<String> = client
        .metadata(None)
        .await?
        .topics
        .into_keys()
        .filter(|t| doomed(t))
        .collect();
    kafka::delete_topics(client, &topics).await?;
    // Until the metadata no longer lists them (deletion is asynchronous on the brokers).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let left = client
            .metadata(None)
            .await?
            .topics
            .into_keys()
            .filter(|t| topics.contains(t))
            .count();
        if left == 0 || Instant::now() > deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Builds the release `strait` binary with the cargo running this program.
fn build_strait() -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--release", "-p", "strait", "--bin", "strait"]);
    // What `cargo run` sets for this program, not for a build: build scripts that watch such
    // variables would otherwise rebuild (ring, for one) whenever the environment alternates.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_", "CARGO_CRATE_"]
            .iter()
            .any(|prefix| key.starts_with(prefix))
            || key == "CARGO_PRIMARY_PACKAGE"
        {
            command.env_remove(key.as_ref());
        }
    }
    let status = command.status()?;
    anyhow::ensure!(status.success(), "building strait failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    Ok(target.join("release/strait"))
}

/// Raises this process's open-file limit (and so that of every broker and mirror it starts) to
/// the kernel's maximum: 10 000 partitions take more files and sockets than the usual 20 000.
/// Needs root (CAP_SYS_RESOURCE) to pass the hard limit; without it the limits stay as they are.
fn raise_open_file_limit() {
    let max = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    let raised = Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg(format!("--nofile={max}:{max}"))
        .status()
        .is_ok_and(|s| s.success());
    let limit = std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .map(|l| l.split_whitespace().nth(3).unwrap_or("?").to_owned())
        .unwrap_or_default();
    if raised {
        println!("Open files per process: {limit}");
    } else {
        println!("Open files per process: {limit} (could not raise it: wide cases may run out)");
    }
}

/// `text` without terminal colour sequences (`ESC [ … m`), which logs written to a file may hold.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip to the sequence's final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The first line of a mirror's log that says it cannot go on as it should: the JVM out of
/// memory (MM2 then kills the task and waits for a manual restart), or no file descriptors left.
fn fatal_line(log: &Path) -> Option<(&'static str, String)> {
    let text = strip_ansi(&std::fs::read_to_string(log).ok()?);
    ["OutOfMemoryError", "Too many open files"].iter().find_map(|pattern| {
        let line = text.lines().find(|l| l.contains(pattern))?;
        // The words around the match: log lines can be long.
        let at = line.find(pattern)?;
        let mut start = at.saturating_sub(160);
        while !line.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + pattern.len() + 40).min(line.len());
        while !line.is_char_boundary(end) {
            end += 1;
        }
        Some((*pattern, format!("…{}…", &line[start..end])))
    })
}

pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let text = strip_ansi(&std::fs::read_to_string(path).unwrap_or_default());
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// InitProducerId with the Java producer's retry: a broker hands producer ids out in blocks of
/// 1 000 and answers COORDINATOR_LOAD_IN_PROGRESS while it fetches the next block, so many
/// requests at once meet it; retried every 100 ms (`retry.backoff.ms`) for up to a minute.
async fn init_producer_id(client: &KafkaClient) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match client.init_producer_id().await {
            Ok(_) => return Ok(()),
            Err(error) if error.is_retriable() && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(error) => anyhow::bail!("InitProducerId: {error}"),
        }
    }
}
