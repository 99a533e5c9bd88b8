//! The data path supervises its workers: a fetcher or producer task that panics (a fault
//! injected by `STRAIT_TEST_PANIC`, which only debug builds read) is restarted after a backoff,
//! `/health` is 503 while its partitions wait, and nothing is lost or written twice.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strait_tests::*;

use crate::mirror::{check_numbered, write_numbered, write_numbered_from};

#[tokio::test(flavor = "multi_thread")]
async fn workers_that_panic_are_restarted_and_lose_nothing() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("panics");
    let remote = format!("source.{topic}");
    let (partitions, batches, per_batch) = (2, 20, 200);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;

    let port = free_port();
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(
        &config,
        mm2_properties(&topic, &format!("strait.http.listener = 127.0.0.1:{port}\n")),
    )
    .unwrap();
    // The fetcher panics on its first two responses with records of the topic (before it
    // queues them), the producer on its first answer (after the target took the batches,
    // before they count as acknowledged).
    let faults = format!("fetcher:{topic}:2,producer:{topic}:1");
    let mirror = StraitProcess::start_with_env(
        &[OsStr::new("run"), config.as_os_str()],
        &[("STRAIT_TEST_PANIC", faults.as_str())],
    );

    // /health, watched throughout: what it said while workers waited for their restart.
    let watching = Arc::new(AtomicBool::new(true));
    let unhealthy = Arc::new(Mutex::new(Vec::<String>::new()));
    let watcher = tokio::spawn({
        let (watching, unhealthy) = (watching.clone(), unhealthy.clone());
        async move {
            while watching.load(Ordering::Relaxed) {
                if let Some((503, body)) = http_get(port, "/health").await {
                    unhealthy.lock().unwrap().push(body);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });

    let first = (partitions as usize * batches * per_batch) as i64;
    wait_until_complete(&target, &remote, first).await;
    let restarts = |text: &str, worker: &str| {
        metric(text, "strait_worker_restarts_total", &[&format!("worker=\"{worker}\"")]).unwrap_or(0.0)
    };
    wait_until(
        "both fetcher restarts and the producer's counted, and /health 200 again",
        || async {
            let Some((_, text)) = http_get(port, "/metrics").await else {
                return false;
            };
            restarts(&text, "fetcher") == 2.0
                && restarts(&text, "producer") == 1.0
                && http_get(port, "/health").await.is_some_and(|(code, _)| code == 200)
        },
    )
    .await;
    // The restarted workers go on mirroring.
    write_numbered_from(&source, &topic, partitions, batches, batches, per_batch).await;
    wait_until_complete(&target, &remote, 2 * first).await;
    watching.store(false, Ordering::Relaxed);
    watcher.await.unwrap();

    let unhealthy = unhealthy.lock().unwrap().clone();
    for worker in ["fetcher of source broker", "producer of target broker"] {
        assert!(
            unhealthy
                .iter()
                .any(|body| body.contains(worker) && body.contains("restarting")),
            "/health was never 503 for the {worker} waiting for its restart: {unhealthy:?}"
        );
    }
    let (_, status) = http_get(port, "/status").await.expect("/status");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let flow = &status["flows"][0];
    assert_eq!(flow["workers"]["restarts"]["fetcher"], 2, "{flow}");
    assert_eq!(flow["workers"]["restarts"]["producer"], 1, "{flow}");
    assert_eq!(flow["workers"]["restarting"], serde_json::json!({}), "{flow}");
    let errors = flow["recent_errors"].to_string();
    assert!(
        errors.contains("panicked: fault injected by STRAIT_TEST_PANIC"),
        "{errors}"
    );
    assert!(mirror.terminate(), "strait did not stop cleanly");

    let duplicates = check_numbered(&target, &remote, partitions, 2 * batches * per_batch).await;
    println!(
        "2 fetcher and 1 producer panics: {} records, 0 lost, {duplicates} duplicated; /health 503 {} times meanwhile",
        2 * first,
        unhealthy.len()
    );
    assert_eq!(
        duplicates, 0,
        "the batches of the dead producer were deduplicated by the target"
    );
}
