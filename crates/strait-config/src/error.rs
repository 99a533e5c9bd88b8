//! The crate's single error type.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// Everything that can be wrong with an `mm2.properties` file (or with the connector configs or
/// Strimzi resource it is imported from).
///
/// Every variant that comes from a line of the file carries that line number and the full key as
/// written, and its message says what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The path given to `from_path`.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// A `\uXXXX` escape without four hex digits, or one that leaves an unpaired UTF-16 surrogate.
    #[error("line {line}: malformed \\uXXXX escape in `{text}`; write exactly four hex digits after \\u (a surrogate pair needs two escapes)")]
    MalformedEscape {
        /// Line where the key/value pair starts.
        line: usize,
        /// The raw key or value containing the escape.
        text: String,
    },

    /// The required `clusters` key is absent.
    #[error("missing required key `clusters`; add a line such as `clusters = A, B`")]
    MissingClusters,

    /// An entry of `clusters` cannot be used as a cluster alias.
    #[error("line {line}: invalid cluster alias `{alias}` in `clusters`: {reason}")]
    InvalidAlias {
        /// Line of the `clusters` key.
        line: usize,
        /// The offending alias.
        alias: String,
        /// Why it cannot be used.
        reason: &'static str,
    },

    /// A key that is neither an MM2 setting, a client setting nor a known Connect setting.
    #[error("line {line}: unknown key `{key}` ({})", suggestion_text(.suggestion))]
    UnknownKey {
        /// Line of the key.
        line: usize,
        /// The key as written.
        key: String,
        /// The closest known key, spelled with the same cluster or flow prefix.
        suggestion: Option<String>,
    },

    /// A cluster or flow key names an alias that is not listed in `clusters`.
    #[error("line {line}: `{key}` names cluster `{alias}`, which is not in `clusters` ({}); add it to `clusters` or fix the alias", known.join(", "))]
    UnknownAlias {
        /// Line of the key.
        line: usize,
        /// The key as written.
        key: String,
        /// The unknown alias.
        alias: String,
        /// The aliases listed in `clusters`.
        known: Vec<String>,
    },

    /// A flow key whose source and target are the same cluster.
    #[error("line {line}: `{key}` describes a flow from `{alias}` to itself; a flow needs two different clusters")]
    SelfFlow {
        /// Line of the key.
        line: usize,
        /// The key as written.
        key: String,
        /// The alias used on both sides of `->`.
        alias: String,
    },

    /// A value that does not parse as the key's type or is not one of its accepted values.
    #[error("line {line}: invalid value `{value}` for `{key}`: expected {expected}")]
    InvalidValue {
        /// Line of the key.
        line: usize,
        /// The key as written.
        key: String,
        /// The value as written.
        value: String,
        /// What the key accepts.
        expected: String,
    },

    /// A placeholder of a configured config provider that finds nothing: a missing file, folder
    /// entry or variable, or one outside the provider's allowed paths or variables.
    #[error("line {line}: `{key}`: the config provider placeholder `{placeholder}` resolves to nothing: {reason}")]
    Provider {
        /// 1-based line number.
        line: usize,
        /// The key whose value holds the placeholder.
        key: String,
        /// The placeholder as written.
        placeholder: String,
        /// Why it resolves to nothing.
        reason: String,
    },
    /// A value Kafka or MM2 would accept but Strait refuses, because Strait cannot mirror safely
    /// with it, or a key written where it cannot apply.
    #[error("line {line}: `{key}` refused: {reason}")]
    Refused {
        /// Line of the key.
        line: usize,
        /// The key as written.
        key: String,
        /// Why, and what to write instead.
        reason: String,
    },

    /// A filter list whose combined regular expression does not compile.
    #[error("line {line}: invalid regular expression in `{key}` (`{pattern}`): {reason}; fix the pattern (note that commas always separate list entries)")]
    InvalidRegex {
        /// Line of the key.
        line: usize,
        /// The key as written.
        key: String,
        /// The combined pattern that failed to compile.
        pattern: String,
        /// The regex engine's message.
        reason: String,
    },

    /// A cluster that a flow needs has no `bootstrap.servers`.
    #[error("line {line}: cluster `{alias}` has no bootstrap servers, but {} `{flow}` needs them; set `{alias}.bootstrap.servers`{}",
        if *heartbeats_only { "the heartbeats of flow" } else { "flow" },
        if *heartbeats_only { format!(", remove `{alias}` from `clusters`, or set `{flow}.emit.heartbeats.enabled = false`") } else { String::new() })]
    MissingBootstrapServers {
        /// Line of the `clusters` key.
        line: usize,
        /// The cluster without servers.
        alias: String,
        /// The flow (`source->target`) that needs it.
        flow: String,
        /// True when the flow is disabled and only writes heartbeats into its target.
        heartbeats_only: bool,
    },

    /// A connector config or Strimzi resource that cannot be read as MM2 configuration: an
    /// unknown shape, a value of the wrong type, two connectors disagreeing, an unsupported
    /// setting. `origin` names the file and the JSON key or YAML path.
    #[error("{origin}: {reason}")]
    Import {
        /// The file, and the key or path in it (`source.json: "topics"`,
        /// `mm2.yaml: spec.clusters[0].authentication.type`).
        origin: String,
        /// What is wrong and what to do.
        reason: String,
    },

    /// An error in the `mm2.properties` built from connector configs or a Strimzi resource,
    /// with where the offending line came from.
    #[error("{source} [line {line} of what `strait import` prints for these files; it comes from {origin}]")]
    Imported {
        /// The line of the imported properties.
        line: usize,
        /// The file and key or path the line was made from.
        origin: String,
        /// The error, as `check-config` reports it for the imported properties.
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    /// The line of the `mm2.properties` text the error is about, if it is about one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::MalformedEscape { line, .. }
            | ConfigError::InvalidAlias { line, .. }
            | ConfigError::UnknownKey { line, .. }
            | ConfigError::UnknownAlias { line, .. }
            | ConfigError::SelfFlow { line, .. }
            | ConfigError::InvalidValue { line, .. }
            | ConfigError::Provider { line, .. }
            | ConfigError::Refused { line, .. }
            | ConfigError::InvalidRegex { line, .. }
            | ConfigError::MissingBootstrapServers { line, .. }
            | ConfigError::Imported { line, .. } => Some(*line),
            ConfigError::Io { .. } | ConfigError::MissingClusters | ConfigError::Import { .. } => None,
        }
    }
}

fn suggestion_text(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("did you mean `{s}`?"),
        None => "not an MM2, Kafka client or Connect setting; remove it or fix the spelling".to_owned(),
    }
}
