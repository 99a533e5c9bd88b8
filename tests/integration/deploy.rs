//! The deployment recipes of `deploy/`: the systemd unit as systemd itself reads it.

use std::path::Path;
use std::process::Command;

use strait_testkit::{debian_program, ScratchDir};
use strait_tests::*;

#[test]
fn systemd_unit_passes_systemd_analyze_verify() {
    let unit = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/strait.service"))
        .expect("deploy/strait.service");
    // verify checks that ExecStart's program exists: point it at the binary just built.
    const EXEC_START: &str = "ExecStart=/usr/local/bin/strait run ";
    assert_eq!(
        unit.matches(EXEC_START).count(),
        1,
        "one ExecStart running /usr/local/bin/strait"
    );
    let unit = unit.replace(EXEC_START, &format!("ExecStart={} run ", strait_binary().display()));
    let dir = ScratchDir::new("systemd").expect("a folder for the unit");
    let path = dir.path().join("strait.service");
    std::fs::write(&path, unit).unwrap();
    let analyze = debian_program("systemd-analyze", &["systemd"]).unwrap_or_else(|e| panic!("{e}"));
    let output = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .output()
        .expect("running systemd-analyze");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // verify exits 0 on some warnings (an unknown key is ignored): any output is a failure.
    assert!(
        output.status.success() && printed.trim().is_empty(),
        "systemd-analyze verify deploy/strait.service ({}):\n{printed}",
        output.status
    );
}
