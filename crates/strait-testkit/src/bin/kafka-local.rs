//! `kafka-local [NAME…]`: starts one single-node KRaft cluster per name (default `source` and
//! `target`), prints their `bootstrap.servers`, and keeps them running until Ctrl-C.

use std::io::Write;

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.iter().any(|n| n == "-h" || n == "--help") {
        println!("usage: kafka-local [NAME...]   (default: source target)");
        return;
    }
    if names.is_empty() {
        names = vec!["source".into(), "target".into()];
    }
    let mut clusters = Vec::new();
    for name in &names {
        match strait_testkit::KafkaCluster::start(name) {
            Ok(cluster) => {
                println!("{}.bootstrap.servers = {}", cluster.name(), cluster.bootstrap_servers());
                clusters.push(cluster);
            }
            Err(error) => {
                eprintln!("error: {error}");
                std::process::exit(1);
            }
        }
    }
    println!(
        "Kafka {} running; press Ctrl-C to stop (the clusters and their data go with this process).",
        strait_testkit::kafka_version()
    );
    let _ = std::io::stdout().flush();
    // Block until a signal ends the process; the guards then stop the JVMs.
    loop {
        std::thread::park();
    }
}
