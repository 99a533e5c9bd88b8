//! The byte path of a `strait run` process (`strait.io`): io_uring's zero-copy sends counted in
//! `/metrics`, and what happens where the kernel refuses io_uring. The data-path cases that run
//! on both paths are in `mirror.rs` and `faults.rs` (`BYTE_PATHS`).

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use strait_tests::*;

/// Writes `records` uncompressed 1 KiB records to a new 2-partition source topic; returns it.
async fn loaded_topic(prefix: &str, records: u64) -> String {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let topic = unique(prefix);
    create_topic(&source, &topic, 2).await;
    let (bootstrap, name) = (clusters.source.bootstrap_servers(), topic.clone());
    // Batches of up to 64 KiB, as a loaded producer writes them: produce requests well above
    // the zero-copy threshold (8 KiB).
    tokio::task::spawn_blocking(move || {
        java_produce_with(
            &bootstrap,
            &name,
            records,
            1024,
            &["batch.size=65536", "linger.ms=20", "acks=all"],
        )
    })
    .await
    .unwrap();
    topic
}

fn config_file(properties: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{}.properties", unique("io")));
    std::fs::write(&path, properties).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn large_produce_requests_go_out_zero_copy_and_metrics_count_them() {
    let records = 20_000;
    let topic = loaded_topic("zerocopy", records).await;
    let port = free_port();
    let config = config_file(&mm2_properties(
        &topic,
        &format!("strait.io = io_uring\nstrait.http.listener = 127.0.0.1:{port}"),
    ));
    let mirror = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
    let target = client(&clusters().target).await;
    wait_until_complete(&target, &format!("source.{topic}"), records as i64).await;
    // Each send's notification follows its completion: wait until every one has arrived.
    let counts = |text: &str| {
        let count = |name| metric(text, name, &[]).unwrap_or(0.0);
        (
            count("strait_io_zerocopy_sends_total"),
            count("strait_io_zerocopy_bytes_total"),
            count("strait_io_zerocopy_notifications_total"),
            count("strait_io_zerocopy_copied_total"),
        )
    };
    wait_until("a notification for every zero-copy send", || async {
        let (sends, _, notifications, _) = counts(&scrape(port).await);
        sends > 0.0 && notifications == sends
    })
    .await;
    let text = scrape(port).await;
    let (sends, bytes, notifications, copied) = counts(&text);
    // Every broker connection is on the ring: admin, fetch and produce, on both clusters.
    let on_ring = metric(&text, "strait_io_uring_connections", &[]).unwrap_or(0.0);
    let (_, status) = http_get(port, "/status").await.expect("/status answers");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let on_ring_in_status = status["io"]["io_uring_connections"].as_f64().unwrap_or(0.0);
    assert!(
        on_ring >= 4.0 && on_ring_in_status >= 4.0,
        "{on_ring} connections on io_uring in /metrics, {on_ring_in_status} in /status"
    );
    assert!(mirror.terminate(), "strait run stops cleanly");
    let _ = std::fs::remove_file(&config);
    let data = (records * 1024) as f64;
    println!(
        "io_uring: {sends} zero-copy sends carried {bytes} bytes ({:.0} % of the records' bytes), \
         {notifications} notifications, {copied} of them copied (loopback)",
        100.0 * bytes / data
    );
    // The records are 20 MB uncompressed: most of them travel in produce requests of 16 KiB or
    // more, so most of the bytes go zero-copy.
    assert!(bytes >= data / 2.0, "only {bytes} of {data} bytes went zero-copy");
}

#[tokio::test(flavor = "multi_thread")]
async fn where_the_kernel_refuses_io_uring_it_is_an_error_and_auto_falls_back_to_epoll() {
    let topic = loaded_topic("no-uring", 2_000).await;
    // Forced: `strait run` refuses to start, naming the key, the kernel's answer and the ways out.
    let config = config_file(&mm2_properties(&topic, "strait.io = io_uring"));
    for command in ["run", "check-config"] {
        let output = Command::new(strait_binary())
            .arg(command)
            .arg(&config)
            .env(strait_client::IO_URING_UNAVAILABLE_SWITCH, "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{command} started without io_uring: {stderr}");
        for expected in [
            "strait.io",
            "io_uring is not available",
            "Operation not permitted",
            "strait.io = epoll",
        ] {
            assert!(
                stderr.contains(expected),
                "{command}: `{expected}` missing from: {stderr}"
            );
        }
    }
    // auto: one log line says why, and the mirror runs on epoll.
    std::fs::write(&config, mm2_properties(&topic, "strait.io = auto")).unwrap();
    let log = std::env::temp_dir().join(format!("{}.log", unique("no-uring")));
    let child = Command::new(strait_binary())
        .arg("run")
        .arg(&config)
        .env(strait_client::IO_URING_UNAVAILABLE_SWITCH, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mirror = StraitProcess(child);
    let target = client(&clusters().target).await;
    wait_until_complete(&target, &format!("source.{topic}"), 2_000).await;
    assert!(mirror.terminate(), "strait run stops cleanly");
    let text = std::fs::read_to_string(&log).unwrap();
    let fallbacks = text.matches("io_uring is not available; using epoll").count();
    assert_eq!(fallbacks, 1, "one fallback line, with why: {text}");
    assert!(text.contains("Operation not permitted"), "{text}");
    let _ = (std::fs::remove_file(&config), std::fs::remove_file(&log));
}
