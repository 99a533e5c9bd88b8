//! MM2 configuration in the shapes other tools keep it, turned into the `mm2.properties` text
//! that says the same:
//!
//! * the JSON configs of MM2's three connectors, one file per connector, as Kafka Connect's REST
//!   API takes them (`PUT /connectors/<name>/config`: a flat object of strings; `POST
//!   /connectors`: `{"name": …, "config": {…}}`) and as MSK Connect keeps them
//!   (`{"connectorName": …, "connectorConfiguration": {…}, …}`, the body of its
//!   `CreateConnector` and the answer of `DescribeConnector`);
//! * a Strimzi `KafkaMirrorMaker2` resource (YAML, `kafka.strimzi.io/v1beta2`), with its
//!   secrets read from the files where Strimzi mounts them in a MirrorMaker 2 pod.
//!
//! The result is text: the properties, each setting preceded by a comment naming the file and
//! the JSON key or YAML path it came from. [`Imported::config`] parses that very text with
//! [`Mm2Config::from_properties`], so every rule of `mm2.properties` (config providers,
//! ignored and refused keys, validation) applies unchanged, `strait import` prints exactly what
//! `strait run` reads, and an error in it is reported with the origin of its line.
//! Placeholders (`${strimzidir:…}`) stay as written: the text never holds what they resolve to.
//!
//! # Connectors
//!
//! A connector config names its flow with `source.cluster.alias` and `target.cluster.alias`
//! (MM2's defaults `source` and `target` when absent) and its kind with `connector.class`. The
//! connectors of one pair make one flow `<source>-><target>`. The connection keys of
//! `source.cluster.*` and `target.cluster.*` (`bootstrap.servers`, `security.protocol`,
//! `ssl.*`, `sasl.*`) become the clusters' own (`source.cluster.bootstrap.servers` →
//! `A.bootstrap.servers`), so connectors naming different clusters for one alias are an error;
//! the other keys become flow keys (`topics` → `A->B.topics`, `source.consumer.fetch.max.bytes`
//! → `A->B.source.consumer.fetch.max.bytes`, `target.producer.acks` →
//! `A->B.target.producer.acks`), which MM2 reads with the same meaning. As in Connect:
//!
//! * each MM2 connector key is read only by the connectors that define it
//!   (`MirrorSourceConfig`, `MirrorCheckpointConfig`, `MirrorHeartbeatConfig`): `groups` and
//!   `emit.checkpoints.*` from the checkpoint connector, `emit.heartbeats.*` from the heartbeat
//!   connector, `refresh.topics.*` and the topic sync keys from the source connector; written
//!   in another connector they are listed as ignored;
//! * a key read by several connectors of a pair (`topics`, client settings, the policy) with
//!   different values is an error naming both files: a Strait flow has one value;
//! * `enabled` defaults to true (MM2's dedicated mode is what makes it false); without a
//!   `MirrorSourceConnector` no data flows for the pair (a warning says so), without a
//!   `MirrorCheckpointConnector` no checkpoints are written, without a
//!   `MirrorHeartbeatConnector` no heartbeats;
//! * Connect runs only the connectors it is given, so no heartbeat-only pair is added
//!   (`emit.heartbeats.enabled = false` at top level, `true` for pairs with a heartbeat
//!   connector).
//!
//! # Strimzi
//!
//! See [`strimzi`] for the resource's fields and where their secrets are mounted.

mod connectors;
mod json;
mod strimzi;
mod yaml;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::error::{ConfigError, Result};
use crate::mm2::{IgnoredKey, Mm2Config};
use crate::properties::Properties;
use crate::secret::is_secret_key;

/// Where Strimzi mounts a MirrorMaker 2 pod's secrets (`/opt/kafka/mm2-password/…`,
/// `/opt/kafka/mm2-certs/…`, `/opt/kafka/mm2-oauth/…`).
pub const STRIMZI_MOUNT_ROOT: &str = "/opt/kafka";

/// How files other than `mm2.properties` are read.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The folder that stands for Strimzi's `/opt/kafka`: secrets of a `KafkaMirrorMaker2` are
    /// read from `<root>/mm2-password/<alias>/<secret>/<key>`, `<root>/mm2-certs/…` and
    /// `<root>/mm2-oauth/…`. [`STRIMZI_MOUNT_ROOT`] by default.
    pub strimzi_mount_root: PathBuf,
}

// Beside the import it uses: `mm2` parses one configuration and knows nothing of imports.
impl Mm2Config {
    /// Reads the configuration files as every `strait` command does: one `mm2.properties`, or
    /// the JSON configs of MM2's connectors, or a Strimzi `KafkaMirrorMaker2` resource (see
    /// [`Imported`]).
    ///
    /// # Errors
    ///
    /// As [`Imported::from_paths`] and [`Imported::config`].
    pub fn from_paths(paths: &[impl AsRef<Path>], options: &ImportOptions) -> Result<Self> {
        Imported::from_paths(paths, options)?.config()
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            strimzi_mount_root: PathBuf::from(STRIMZI_MOUNT_ROOT),
        }
    }
}

/// The shape of a configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Properties,
    Json,
    Yaml,
}

/// Chosen by extension, then by content: JSON starts with `{`, a Kubernetes resource names its
/// `apiVersion` and `kind`; anything else is read as `mm2.properties`, as before.
fn shape(name: &str, text: &str) -> Shape {
    let extension = Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("json") => Shape::Json,
        Some("yaml" | "yml") => Shape::Yaml,
        Some("properties") => Shape::Properties,
        _ if text.trim_start().starts_with('{') => Shape::Json,
        _ if text.lines().any(|l| l.starts_with("kind:")) && text.lines().any(|l| l.starts_with("apiVersion:")) => {
            Shape::Yaml
        }
        _ => Shape::Properties,
    }
}

/// A configuration as `strait run` reads it: `mm2.properties` text, either read from a file or
/// imported from connector configs or a Strimzi resource, with the origin of every line.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The files, as named.
    files: Vec<String>,
    /// The properties text.
    text: String,
    /// The text as `strait import` prints it: secrets written literally in the input hidden.
    shown: String,
    /// True when `text` was made here (false: an `mm2.properties` read as it is).
    made: bool,
    /// For each line of `text` holding a setting, where it came from.
    origins: BTreeMap<usize, String>,
    /// Settings of the input that the import itself set aside, with the reason.
    ignored: Vec<IgnoredKey>,
    /// Things worth knowing about the input (a pair without a source connector, …).
    warnings: Vec<String>,
}

impl Imported {
    /// Reads the configuration files: one `mm2.properties`, or one or more connector configs
    /// (JSON), or one Strimzi `KafkaMirrorMaker2` resource (YAML).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] if a file cannot be read, otherwise as [`Imported::from_files`].
    pub fn from_paths(paths: &[impl AsRef<Path>], options: &ImportOptions) -> Result<Self> {
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let path = path.as_ref();
            let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
                path: path.to_owned(),
                source,
            })?;
            files.push((path.display().to_string(), bytes));
        }
        Self::from_files(&files, options)
    }

    /// As [`Imported::from_paths`], from the files' names and contents. The only I/O is the
    /// listing of a Strimzi secret's folder for a `trustedCertificates` entry with a `pattern`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Import`] for a file of unknown shape, a properties file given with
    /// others, a connector config or resource that cannot be read or whose connectors disagree.
    pub fn from_files(files: &[(String, Vec<u8>)], options: &ImportOptions) -> Result<Self> {
        let Some((first, _)) = files.first() else {
            return Err(ConfigError::Import {
                origin: "command line".into(),
                reason: "no configuration file given".into(),
            });
        };
        let mut texts = Vec::with_capacity(files.len());
        for (name, bytes) in files {
            texts.push((name.as_str(), shape(name, &String::from_utf8_lossy(bytes)), bytes));
        }
        if let [(name, Shape::Properties, bytes)] = texts[..] {
            // As MM2, which loads the file as ISO-8859-1, bytes that are not UTF-8 are read so.
            let text = String::from_utf8(bytes.clone())
                .unwrap_or_else(|e| e.into_bytes().iter().map(|&b| char::from(b)).collect());
            return Ok(Imported {
                files: vec![name.to_owned()],
                shown: text.clone(),
                text,
                made: false,
                origins: BTreeMap::new(),
                ignored: Vec::new(),
                warnings: Vec::new(),
            });
        }
        let utf8 = |name: &str, bytes: &[u8]| {
            String::from_utf8(bytes.to_vec()).map_err(|e| ConfigError::Import {
                origin: name.to_owned(),
                reason: format!("not UTF-8 text ({e}); JSON and YAML files must be UTF-8"),
            })
        };
        let mut builder = Builder::new(files.iter().map(|(n, _)| n.clone()).collect());
        if let Some((name, _, _)) = texts.iter().find(|(_, shape, _)| *shape == Shape::Properties) {
            return Err(ConfigError::Import {
                origin: (*name).to_owned(),
                reason: format!(
                    "read as an mm2.properties file, which must be given alone: it cannot be merged with connector \
                     configs or a Strimzi resource (a JSON file is named `.json`, a Strimzi resource `.yaml`; {first} \
                     and the others are read together)"
                ),
            });
        }
        let yaml: Vec<_> = texts.iter().filter(|(_, shape, _)| *shape == Shape::Yaml).collect();
        match yaml[..] {
            [] => {
                let mut connectors = Vec::new();
                for (name, _, bytes) in &texts {
                    connectors.push(json::connector(name, &utf8(name, bytes)?)?);
                }
                connectors::merge(&mut builder, connectors, &BTreeMap::new())?;
            }
            [(name, _, bytes)] if texts.len() == 1 => {
                strimzi::import(&mut builder, name, &utf8(name, bytes)?, options)?;
            }
            _ => {
                return Err(ConfigError::Import {
                    origin: yaml[0].0.to_owned(),
                    reason: "a Strimzi KafkaMirrorMaker2 resource must be given alone: it describes every cluster \
                             and connector itself"
                        .into(),
                });
            }
        }
        Ok(builder.render())
    }

    /// The `mm2.properties` text: the file as it is, or the one made from connector configs or
    /// a Strimzi resource, with comments naming where each setting came from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text as `strait import` prints it: [`Imported::text`] with every secret that the
    /// input writes as it is (not as a config provider placeholder) replaced by `[hidden]`, and
    /// a warning comment naming it.
    pub fn shown_text(&self) -> &str {
        &self.shown
    }

    /// Whether the text was made from connector configs or a Strimzi resource (false for an
    /// `mm2.properties` read as it is).
    pub fn is_made(&self) -> bool {
        self.made
    }

    /// The files read, as named.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Parses and validates the text as [`Mm2Config::parse`] does. An error about a line of
    /// made text names the file and key or path the line came from
    /// ([`ConfigError::Imported`]); what the import set aside is listed with the config's
    /// ignored keys and warnings.
    ///
    /// # Errors
    ///
    /// As [`Mm2Config::parse`].
    pub fn config(&self) -> Result<Mm2Config> {
        let parsed = Properties::parse(&self.text).and_then(|props| Mm2Config::from_properties(&props));
        let mut config = parsed.map_err(|error| self.with_origin(error))?;
        if self.made {
            config.imported_from = Some(self.files.clone());
            let mut ignored = self.ignored.clone();
            ignored.append(&mut config.ignored);
            config.ignored = ignored;
            let mut warnings = self.warnings.clone();
            warnings.append(&mut config.warnings);
            config.warnings = warnings;
        }
        Ok(config)
    }

    fn with_origin(&self, error: ConfigError) -> ConfigError {
        match error.line().and_then(|line| Some((line, self.origins.get(&line)?))) {
            Some((line, origin)) if self.made => ConfigError::Imported {
                line,
                origin: origin.clone(),
                source: Box::new(error),
            },
            _ => error,
        }
    }
}

/// One line of the text being made.
#[derive(Debug)]
enum Item {
    /// A setting, with every origin that gave it this value.
    Set {
        key: String,
        value: String,
        origins: Vec<String>,
    },
    /// A setting of the input that has no effect, as a comment.
    Ignored {
        key: String,
        origin: String,
        reason: String,
    },
}

/// The settings made from the input, in order, before they are written out.
#[derive(Debug)]
pub(crate) struct Builder {
    files: Vec<String>,
    /// Comment lines after the header: what each file was read as.
    notes: Vec<String>,
    clusters: Vec<String>,
    clusters_origin: String,
    items: Vec<Item>,
    index: HashMap<String, usize>,
    warnings: Vec<String>,
}

impl Builder {
    fn new(files: Vec<String>) -> Self {
        Builder {
            files,
            notes: Vec::new(),
            clusters: Vec::new(),
            clusters_origin: String::new(),
            items: Vec::new(),
            index: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Notes in the header what a file (or part of one) was read as.
    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// Sets `clusters`.
    pub(crate) fn clusters(&mut self, clusters: Vec<String>, origin: impl Into<String>) {
        self.clusters = clusters;
        self.clusters_origin = origin.into();
    }

    /// Whether `key` is set.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Sets `key`; the same value again adds its origin, another value is an error naming
    /// both origins.
    pub(crate) fn set(&mut self, key: &str, value: &str, origin: &str) -> Result<()> {
        if let Some(&i) = self.index.get(key) {
            if let Item::Set {
                value: first, origins, ..
            } = &mut self.items[i]
            {
                if first == value {
                    if !origins.iter().any(|o| o == origin) {
                        origins.push(origin.to_owned());
                    }
                    return Ok(());
                }
                let shown = |v: &str| {
                    if is_secret_key(key) {
                        "[hidden]".to_owned()
                    } else {
                        format!("`{v}`")
                    }
                };
                if let Some(alias) = key.strip_suffix(".bootstrap.servers").filter(|a| !a.contains("->")) {
                    return Err(ConfigError::Import {
                        origin: origin.to_owned(),
                        reason: format!(
                            "names cluster `{alias}` {}, but {} names it {}: an alias is one cluster; give every \
                             connector the same bootstrap servers for `{alias}`, or different clusters different \
                             aliases (`source.cluster.alias`, `target.cluster.alias`)",
                            shown(value),
                            origins.join(" and "),
                            shown(first)
                        ),
                    });
                }
                return Err(ConfigError::Import {
                    origin: origin.to_owned(),
                    reason: format!(
                        "sets `{key}` to {}, but {} sets it to {}; Strait runs one flow per source and target with one \
                         value for it: give both the same value",
                        shown(value),
                        origins.join(" and "),
                        shown(first)
                    ),
                });
            }
        }
        let _ = self.index.insert(key.to_owned(), self.items.len());
        self.items.push(Item::Set {
            key: key.to_owned(),
            value: value.to_owned(),
            origins: vec![origin.to_owned()],
        });
        Ok(())
    }

    /// Puts `value` ahead of the list `key` holds (set earlier), as in `config.providers =
    /// <user's>, <Strimzi's>`.
    pub(crate) fn prepend(&mut self, key: &str, value: &str, origin: &str) -> Result<()> {
        let Some(&i) = self.index.get(key) else {
            return self.set(key, value, origin);
        };
        if let Item::Set {
            value: list, origins, ..
        } = &mut self.items[i]
        {
            *list = format!("{value}, {list}");
            origins.insert(0, origin.to_owned());
        }
        Ok(())
    }

    /// Lists `key` of the input as having no effect.
    pub(crate) fn ignore(&mut self, key: &str, origin: &str, reason: impl Into<String>) {
        self.items.push(Item::Ignored {
            key: key.to_owned(),
            origin: origin.to_owned(),
            reason: reason.into(),
        });
    }

    /// Records a warning about the input.
    pub(crate) fn warn(&mut self, warning: impl Into<String>) {
        self.warnings.push(warning.into());
    }

    /// Writes the text out, numbering its lines.
    fn render(self) -> Imported {
        let mut lines: Vec<String> = Vec::new();
        let mut origins = BTreeMap::new();
        let mut ignored = Vec::new();
        // Lines of `shown` that differ from `lines`: secrets written literally in the input.
        let mut hidden = BTreeMap::new();
        lines.push(format!(
            "# mm2.properties made by `strait import` from {}.",
            self.files.join(", ")
        ));
        lines.push(
            "# Each setting follows a comment naming where it came from; placeholders (${…}) are kept as written."
                .into(),
        );
        for note in &self.notes {
            lines.push(format!("# {}", one_line(note)));
        }
        for warning in &self.warnings {
            lines.push(format!("# warning: {}", one_line(warning)));
        }
        for item in &self.items {
            if let Item::Set { key, value, origins } = item {
                if is_secret_key(key) && !value.contains("${") {
                    lines.push(format!(
                        "# warning: `{key}` is written as it is in {}; it is shown as [hidden]: put the value in a \
                         file and write a config provider placeholder (`${{file:<path>:<key>}}` with `config.providers \
                         = file`), as in Connect",
                        one_line(&origins.join(", "))
                    ));
                }
            }
        }
        lines.push(String::new());
        lines.push(format!("# {}", one_line(&self.clusters_origin)));
        lines.push(format!("clusters = {}", self.clusters.join(", ")));
        let _ = origins.insert(lines.len(), self.clusters_origin.clone());
        for item in self.items {
            match item {
                Item::Set {
                    key,
                    value,
                    origins: from,
                } => {
                    let from = from.join(", ");
                    lines.push(format!("# {}", one_line(&from)));
                    let key = escape(&key, true);
                    if is_secret_key(&key) && !value.contains("${") {
                        let _ = hidden.insert(lines.len(), format!("{key} = [hidden]"));
                    }
                    lines.push(format!("{key} = {}", escape(&value, false)));
                    let _ = origins.insert(lines.len(), from);
                }
                Item::Ignored { key, origin, reason } => {
                    lines.push(format!(
                        "# ignored: {}: `{}`: {}",
                        one_line(&origin),
                        one_line(&key),
                        one_line(&reason)
                    ));
                    ignored.push(IgnoredKey {
                        line: lines.len(),
                        key,
                        reason: format!("{reason} ({origin})"),
                    });
                }
            }
        }
        let join = |lines: &[String]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let text = join(&lines);
        for (i, line) in hidden {
            lines[i] = line;
        }
        Imported {
            files: self.files,
            shown: join(&lines),
            text,
            made: true,
            origins,
            ignored,
            warnings: self.warnings,
        }
    }
}

/// Text for a comment line: line breaks and other control characters shown as escapes.
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '\n' => vec!['\\', 'n'],
            '\r' => vec!['\\', 'r'],
            c if c.is_control() => c.escape_unicode().collect(),
            c => vec![c],
        })
        .collect()
}

/// A key or value written so that [`Properties::parse`] reads it back unchanged.
fn escape(text: &str, key: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0c' => out.push_str("\\f"),
            ' ' if key || i == 0 => out.push_str("\\ "),
            '=' | ':' if key => {
                out.push('\\');
                out.push(c);
            }
            '#' | '!' if key && i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
