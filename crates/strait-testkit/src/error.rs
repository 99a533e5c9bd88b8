use std::path::PathBuf;

/// What can go wrong while fetching Kafka or running a cluster.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program the kit needs (java, mvn, bash) could not be started.
    #[error("could not run `{program}`: {source} (is it installed and on PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// Maven did not deliver the jars (Kafka's, or a reference library's).
    #[error("fetching {what} with Maven failed (exit {status}; Maven and Maven Central must be reachable); its output:\n{output}")]
    Fetch {
        /// What was fetched, e.g. `Kafka 4.1.1`.
        what: String,
        /// Maven's exit status.
        status: String,
        /// What Maven printed.
        output: String,
    },
    /// A file or folder operation failed.
    #[error("{what} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Formatting the KRaft storage failed.
    #[error("formatting the storage of cluster `{cluster}` failed: {output}")]
    Format {
        /// The cluster's name.
        cluster: String,
        /// What the storage tool printed.
        output: String,
    },
    /// The broker did not answer in time or died while starting.
    #[error("Kafka cluster `{cluster}` did not start: {reason}; last lines of {}:\n{log_tail}", log.display())]
    Start {
        /// The cluster's name.
        cluster: String,
        /// Why we gave up.
        reason: String,
        /// The broker's log file.
        log: PathBuf,
        /// Its last lines.
        log_tail: String,
    },
    /// ChromeDriver or the browser it drives failed.
    #[error("the browser: {what} failed: {reason}")]
    Browser {
        /// What was asked of it.
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// A program from a Debian package is missing and could not be installed.
    #[error("`{program}` is not installed and could not be installed; install it with `sudo apt-get install {packages}`. The attempt: {attempt}")]
    Missing {
        /// The program.
        program: String,
        /// The Debian packages that provide it, space-separated.
        packages: String,
        /// What the `apt-get install` attempt printed.
        attempt: String,
    },
}
