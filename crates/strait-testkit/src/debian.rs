//! Programs from Debian packages that tests drive (Prometheus, Chromium), installed on first use.
//!
//! A test that needs such a program never skips for want of it: [`debian_program`] finds it,
//! installs its packages with `apt-get` when it is missing (as root, or through `sudo -n`), and
//! otherwise fails with the command that would install it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::{Error, Result};

/// Where programs are looked for besides `PATH`: Debian installs daemons and tools there, and
/// `PATH` of a non-root user often leaves `/usr/sbin` out.
const SYSTEM_DIRS: [&str; 2] = ["/usr/bin", "/usr/sbin"];

/// The path of `program`, installing the Debian `packages` that provide it when it is missing.
///
/// `program` is searched on `PATH`, then in `/usr/bin` and `/usr/sbin`. When it is not found,
/// `apt-get install -y --no-install-recommends <packages>` runs, as root or through `sudo -n`.
/// Callers in this process take turns (a lock); other processes wait for dpkg's lock (up to
/// 5 minutes) rather than fail.
///
/// # Errors
///
/// [`Error::Missing`] when the program is still not there, with `apt-get`'s output and the
/// command that installs it.
pub fn debian_program(program: &str, packages: &[&str]) -> Result<PathBuf> {
    // Two tests asking for the same program install it once: the second one finds it.
    static INSTALLING: Mutex<()> = Mutex::new(());
    if let Some(path) = find(program) {
        return Ok(path);
    }
    let _turn = INSTALLING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = find(program) {
        return Ok(path);
    }
    let attempt = install(packages);
    find(program).ok_or_else(|| Error::Missing {
        program: program.to_owned(),
        packages: packages.join(" "),
        attempt,
    })
}

/// The first executable file named `program` on `PATH` or in [`SYSTEM_DIRS`].
fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `apt-get install` for `packages` and describes what happened (for the error, if the
/// program is still missing afterwards).
fn install(packages: &[&str]) -> String {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let mut command = if root {
        Command::new("apt-get")
    } else {
        // -n: never prompt for a password, fail instead.
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", "apt-get"]);
        sudo
    };
    command
        .args([
            "-o",
            "DPkg::Lock::Timeout=300",
            "install",
            "-y",
            "--no-install-recommends",
        ])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive");
    match command.output() {
        Ok(output) => format!(
            "{command:?} exited with {}:\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => format!("{command:?} could not start: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_program_that_is_there() {
        let sh = debian_program("sh", &["dash"]).unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
    }

    #[test]
    fn says_how_to_install_a_program_that_cannot_be_installed() {
        let error = debian_program("strait-no-such-program", &["strait-no-such-package"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("sudo apt-get install strait-no-such-package"), "{error}");
        assert!(error.contains("strait-no-such-program"), "{error}");
    }
}
