//! What a user sees of the built `strait` when something expected goes wrong, and in its logs.
//! No Kafka needed: `check-config` only reads the file.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Writes `text` to a fresh file named after `name` in the temporary directory.
fn config_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("strait-{name}-{}.properties", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// `strait check-config <config>` with stderr redirected to a pipe (not a terminal).
fn check_config(config: &PathBuf) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strait"))
        .arg("check-config")
        .arg(config)
        // As a user who debugs Rust programs might have it set.
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn a_bad_config_line_prints_its_message_chain_and_no_backtrace() {
    let config = config_file(
        "bad-line",
        "clusters = A, B\nA.bootstrap.servers = localhost:9092\nB.bootstrap.servers = localhost:9093\nA->B.enabled = yes\n",
    );
    let output = check_config(&config);
    let _ = std::fs::remove_file(&config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: reading "), "{stderr}");
    assert!(
        stderr.contains("caused by: line 4: invalid value `yes` for `A->B.enabled`"),
        "{stderr}"
    );
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
    // Only the chain: no Debug dump of the error either.
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}

#[test]
fn a_redirected_check_config_log_has_no_colour_codes() {
    // `tasks.max` is a Connect setting Strait ignores, and says so in the log.
    let config = config_file(
        "ignored-key",
        "clusters = A, B\nA.bootstrap.servers = localhost:9092\nB.bootstrap.servers = localhost:9093\nA->B.enabled = true\ntasks.max = 4\n",
    );
    let output = check_config(&config);
    let _ = std::fs::remove_file(&config);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("ignored: ") && stderr.contains("tasks.max"),
        "{stderr:?}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}

#[test]
fn a_redirected_run_log_has_no_colour_codes() {
    // Nothing listens on port 1: the flow waits for its clusters and says so in the log.
    let config = config_file(
        "unreachable",
        "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n",
    );
    let log = std::env::temp_dir().join(format!("strait-unreachable-{}.log", std::process::id()));
    let mut strait = Command::new(env!("CARGO_BIN_EXE_strait"))
        .arg("run")
        .arg(&config)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut text = String::new();
    while std::time::Instant::now() < deadline && !text.contains("flow cannot start yet") {
        std::thread::sleep(std::time::Duration::from_millis(100));
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    strait.kill().unwrap();
    strait.wait().unwrap();
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&log);
    assert!(text.contains("flow cannot start yet"), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
}
