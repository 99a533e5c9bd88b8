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
fn a_redirected_log_has_no_colour_codes() {
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
