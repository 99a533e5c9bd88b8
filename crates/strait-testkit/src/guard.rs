//! Child processes that cannot outlive us.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// Runs the program in the background, prints its pid, then waits for standard input to close.
/// Standard input is a pipe whose only writer is our process, so it closes when we drop the
/// handle or when our process ends in any way; the program is then killed. The guard ignores
/// INT, TERM and HUP (a Ctrl-C reaches the whole process group): only our end decides; the
/// program itself keeps TERM so that it can be stopped cleanly.
const GUARD: &str = r#"log=$1; shift
( trap - TERM HUP; exec "$@" ) >"$log" 2>&1 </dev/null &
pid=$!
trap '' INT TERM HUP
echo "$pid"
cat >/dev/null
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0"#;

/// Waits for standard input to close, then removes a folder.
const JANITOR: &str = r#"trap '' INT TERM HUP; cat >/dev/null; rm -rf -- "$1""#;

/// A program running under a guard that kills it when this handle is dropped or our process ends
/// (normal exit, panic, Ctrl-C or SIGKILL alike).
#[derive(Debug)]
pub struct Guarded {
    guard: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
}

impl Guarded {
    /// Starts `command` (its program, arguments and environment) with its output in `log`.
    pub fn spawn(command: &Command, log: &Path) -> Result<Guarded> {
        let mut args: Vec<OsString> = vec!["-c".into(), GUARD.into(), "strait-guard".into(), log.into()];
        args.push(command.get_program().into());
        args.extend(command.get_args().map(OsString::from));
        let mut bash = Command::new("bash");
        bash.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => bash.env(key, value),
                None => bash.env_remove(key),
            };
        }
        let mut guard = bash.spawn().map_err(|source| Error::Spawn {
            program: "bash".into(),
            source,
        })?;
        let mut line = String::new();
        let stdout = guard.stdout.take().expect("stdout is piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|source| Error::Spawn {
                program: "bash".into(),
                source,
            })?;
        let pid = line.trim().parse().map_err(|_| Error::Spawn {
            program: command.get_program().to_string_lossy().into_owned(),
            source: std::io::Error::other(format!("the guard printed `{}` instead of a pid", line.trim())),
        })?;
        let stdin = guard.stdin.take();
        Ok(Guarded { guard, stdin, pid })
    }

    /// Starts the janitor that removes `dir` when our process ends (or the handle is dropped).
    pub(crate) fn janitor(dir: &Path) -> Result<Guarded> {
        let mut guard = Command::new("bash")
            .args(["-c", JANITOR, "strait-janitor"])
            .arg(dir)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Spawn {
                program: "bash".into(),
                source,
            })?;
        let stdin = guard.stdin.take();
        let pid = guard.id();
        Ok(Guarded { guard, stdin, pid })
    }

    /// The program's process id (the program itself, not its guard).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the guarded program is still alive (not exited, not a zombie).
    pub fn is_running(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            // The state letter follows the command name, which is in parentheses.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => false,
        }
    }

    /// Asks the program to stop with SIGTERM and waits up to `grace` for it, then kills it.
    pub fn terminate(mut self, grace: Duration) {
        let _ = Command::new("kill").args(["-TERM", &self.pid.to_string()]).status();
        let deadline = Instant::now() + grace;
        while self.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.stop();
    }

    /// Kills the program at once and waits until it is gone.
    pub fn stop(&mut self) {
        self.stdin.take();
        let _ = self.guard.wait();
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A folder of our own under the temp dir, removed when it is dropped or when our process ends
/// in any way (a janitor process waits for us), so that nothing is left behind.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    _janitor: Guarded,
}

impl ScratchDir {
    /// Creates `<temp dir>/strait-<name>-<random>`.
    pub fn new(name: &str) -> Result<ScratchDir> {
        let path = std::env::temp_dir().join(format!("strait-{name}-{}", uuid::Uuid::new_v4().simple()));
        crate::dist::create_dir(&path)?;
        let janitor = Guarded::janitor(&path)?;
        Ok(ScratchDir {
            path,
            _janitor: janitor,
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
