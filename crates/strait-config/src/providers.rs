//! Kafka's config providers: `config.providers = file, env` binds aliases to provider classes
//! (`config.providers.<alias>.class`), and every value may hold `${alias:path:key}` or
//! `${alias:key}` placeholders that are replaced by what the provider returns, as MM2 and the
//! Connect worker replace them. Kafka's three providers are built in:
//!
//! - `FileConfigProvider`: `${file:/etc/mm2/secrets.properties:password}`, a key of a
//!   properties file;
//! - `DirectoryConfigProvider`: `${dir:/opt/kafka/mm2-password/A/secret:password}`, the contents
//!   of a file in a folder (how Strimzi mounts Kubernetes secrets);
//! - `EnvVarConfigProvider`: `${env:SASL_PASSWORD}`, an environment variable.
//!
//! Their parameters are Kafka's: `config.providers.<alias>.param.allowed.paths` (KIP-993) limits
//! the file and directory providers to some folders, and the environment provider's
//! `config.providers.<alias>.param.allowlist.pattern` (KIP-887) to some variables. A placeholder
//! of a configured provider that finds nothing is an error naming the key and the placeholder;
//! one whose alias is not configured stays as written, as in Kafka (with a warning). A provider
//! class Strait cannot run (Strimzi's `KubernetesSecretConfigProvider`, a custom class) is an
//! error only where a value uses it; declared and unused, it is a warning.
//!
//! The properties keep the text as written beside the resolved value
//! ([`Property::written`]), so that renderings and errors show the placeholder, never what it
//! resolved to.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::error::{ConfigError, Result};
use crate::properties::{Properties, Property};
use crate::value::{java_list, java_trim};

/// The key naming the providers.
pub(crate) const CONFIG_PROVIDERS: &str = "config.providers";

const FILE_PROVIDER: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
const DIRECTORY_PROVIDER: &str = "org.apache.kafka.common.config.provider.DirectoryConfigProvider";
const ENV_PROVIDER: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";

/// Provider classes Strait cannot run, with the reason.
const REFUSED: &[(&str, &str)] = &[
    (
        "io.strimzi.kafka.KubernetesSecretConfigProvider",
        "it reads secrets through the Kubernetes API, which Strait does not call; mount the secret as files and use \
         org.apache.kafka.common.config.provider.DirectoryConfigProvider (as Strimzi's own MirrorMaker 2 pods do)",
    ),
    (
        "io.strimzi.kafka.KubernetesConfigMapConfigProvider",
        "it reads config maps through the Kubernetes API, which Strait does not call; mount the config map as files \
         and use org.apache.kafka.common.config.provider.DirectoryConfigProvider",
    ),
];

/// One configured provider.
#[derive(Debug)]
enum Provider {
    File {
        allowed: Option<Vec<PathBuf>>,
    },
    Directory {
        allowed: Option<Vec<PathBuf>>,
    },
    Env {
        allowlist: Option<fancy_regex::Regex>,
    },
    /// A class Strait cannot run: why, and the line of its `class` key.
    Unavailable {
        reason: String,
        line: usize,
    },
}

/// Whether `key` configures the providers (`config.providers`, `config.providers.<alias>.*`):
/// these are read here and never resolved themselves.
pub(crate) fn is_provider_key(key: &str) -> bool {
    key == CONFIG_PROVIDERS || key.starts_with("config.providers.")
}

/// The properties with every placeholder of a configured provider resolved, and a warning for
/// each value holding a placeholder of an alias that is not configured.
///
/// # Errors
///
/// [`ConfigError::Refused`] for a missing class or an unknown provider key;
/// [`ConfigError::Provider`] for a placeholder that resolves to nothing or whose provider class
/// Strait does not run.
pub(crate) fn resolve(props: Properties) -> Result<(Properties, Vec<String>)> {
    let (providers, mut warnings) = providers(&props)?;
    let mut resolved = Properties::default();
    let mut used = std::collections::BTreeSet::new();
    for prop in props.iter() {
        if is_provider_key(&prop.key) || !prop.value.contains("${") {
            resolved.insert(prop.clone());
            continue;
        }
        used.extend(
            placeholders(&prop.value)
                .into_iter()
                .map(|(_, _, p)| p.alias.to_owned()),
        );
        let (value, unknown) = substitute(prop, &providers)?;
        for alias in unknown {
            warnings.push(format!(
                "line {}: `{}` holds a `${{{alias}:…}}` placeholder, but `{alias}` is not in `config.providers`; \
                 the text is used as written, as Kafka does",
                prop.line, prop.key
            ));
        }
        let written = (value != prop.value).then(|| prop.value.clone());
        resolved.insert(Property {
            value,
            written,
            ..prop.clone()
        });
    }
    for (alias, provider) in &providers {
        if let Provider::Unavailable { reason, line } = provider {
            if !used.contains(alias) {
                warnings.push(format!(
                    "line {line}: config provider `{alias}` is declared but no value uses it, so it is not run: {reason}"
                ));
            }
        }
    }
    Ok((resolved, warnings))
}

fn refused(prop: &Property, reason: impl Into<String>) -> ConfigError {
    ConfigError::Refused {
        line: prop.line,
        key: prop.key.clone(),
        reason: reason.into(),
    }
}

/// The providers `config.providers` names, with their parameters, and a warning for each
/// parameter the provider does not take.
fn providers(props: &Properties) -> Result<(BTreeMap<String, Provider>, Vec<String>)> {
    let aliases: Vec<String> = props
        .get(CONFIG_PROVIDERS)
        .map(|p| java_list(&p.value).into_iter().map(str::to_owned).collect())
        .unwrap_or_default();
    for prop in props.iter().filter(|p| p.key.starts_with("config.providers.")) {
        let rest = &prop.key["config.providers.".len()..];
        let known = aliases.iter().any(|alias| {
            rest.strip_prefix(alias.as_str())
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|r| r == "class" || r.starts_with("param."))
        });
        if !known {
            return Err(refused(
                prop,
                format!(
                    "not a provider setting: write `config.providers.<alias>.class` or `config.providers.<alias>.param.<name>` \
                     for an alias listed in `config.providers` ({})",
                    if aliases.is_empty() { "empty".to_owned() } else { aliases.join(", ") }
                ),
            ));
        }
    }
    let mut providers = BTreeMap::new();
    let mut warnings = Vec::new();
    for alias in aliases {
        let class_key = format!("config.providers.{alias}.class");
        let Some(class) = props.get(&class_key) else {
            let line = props.get(CONFIG_PROVIDERS).map_or(0, |p| p.line);
            return Err(ConfigError::Refused {
                line,
                key: CONFIG_PROVIDERS.to_owned(),
                reason: format!(
                    "provider `{alias}` has no class; add `{class_key} = {FILE_PROVIDER}` (or DirectoryConfigProvider, \
                     EnvVarConfigProvider)"
                ),
            });
        };
        let param = |name: &str| props.get(&format!("config.providers.{alias}.param.{name}"));
        let allowed = param("allowed.paths").map(|p| java_list(&p.value).into_iter().map(normalize).collect());
        let (provider, takes) = match java_trim(&class.value) {
            FILE_PROVIDER => (Provider::File { allowed }, "allowed.paths"),
            DIRECTORY_PROVIDER => (Provider::Directory { allowed }, "allowed.paths"),
            ENV_PROVIDER | "io.strimzi.kafka.EnvVarConfigProvider" => {
                let allowlist = match param("allowlist.pattern") {
                    None => None,
                    Some(p) => Some(fancy_regex::Regex::new(&format!("^(?:{})$", p.value)).map_err(|e| {
                        ConfigError::InvalidRegex {
                            line: p.line,
                            key: p.key.clone(),
                            pattern: p.value.clone(),
                            reason: e.to_string(),
                        }
                    })?),
                };
                (Provider::Env { allowlist }, "allowlist.pattern")
            }
            other => {
                let reason = REFUSED.iter().find(|(c, _)| *c == other).map_or_else(
                    || {
                        format!(
                            "Strait runs Kafka's three config providers ({FILE_PROVIDER}, {DIRECTORY_PROVIDER}, \
                             {ENV_PROVIDER}), not `{other}`"
                        )
                    },
                    |(_, why)| format!("`{other}` cannot run in Strait: {why}"),
                );
                // Its parameters are the class's own business: not checked.
                providers.insert(
                    alias,
                    Provider::Unavailable {
                        reason,
                        line: class.line,
                    },
                );
                continue;
            }
        };
        let prefix = format!("config.providers.{alias}.param.");
        for prop in props.iter() {
            if prop.key.strip_prefix(&prefix).is_some_and(|name| name != takes) {
                warnings.push(format!(
                    "line {}: `{}` is ignored: this provider takes only `{prefix}{takes}`",
                    prop.line, prop.key
                ));
            }
        }
        providers.insert(alias, provider);
    }
    Ok((providers, warnings))
}

/// A placeholder: `${alias:path:key}` or `${alias:key}`, as Kafka's `ConfigTransformer` reads
/// it (`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`): the alias ends at the first colon, the path at
/// the second, and the key may hold further colons.
#[derive(Debug, PartialEq)]
struct Placeholder<'a> {
    alias: &'a str,
    path: Option<&'a str>,
    key: &'a str,
}

/// Splits `text` at its placeholders: the text between them and each placeholder with the
/// text it was written as.
fn placeholders(text: &str) -> Vec<(usize, usize, Placeholder<'_>)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(start) = text[from..].find("${").map(|i| from + i) {
        let inner_start = start + 2;
        let Some(end) = text[inner_start..].find('}').map(|i| inner_start + i) else {
            break;
        };
        let inner = &text[inner_start..end];
        match inner.split_once(':') {
            Some((alias, rest)) => {
                let (path, key) = match rest.split_once(':') {
                    Some((path, key)) => (Some(path), key),
                    None => (None, rest),
                };
                found.push((start, end + 1, Placeholder { alias, path, key }));
                from = end + 1;
            }
            None => from = inner_start,
        }
    }
    found
}

/// The value of `prop` with the placeholders of configured providers resolved, and the aliases
/// of the placeholders left as written.
fn substitute(prop: &Property, providers: &BTreeMap<String, Provider>) -> Result<(String, Vec<String>)> {
    let text = &prop.value;
    let mut value = String::with_capacity(text.len());
    let mut unknown = Vec::new();
    let mut copied = 0;
    for (start, end, placeholder) in placeholders(text) {
        let Some(provider) = providers.get(placeholder.alias) else {
            unknown.push(placeholder.alias.to_owned());
            continue;
        };
        let written = &text[start..end];
        let fail = |reason: String| ConfigError::Provider {
            line: prop.line,
            key: prop.key.clone(),
            placeholder: written.to_owned(),
            reason,
        };
        value.push_str(&text[copied..start]);
        value.push_str(&provider.get(placeholder.path, placeholder.key).map_err(fail)?);
        copied = end;
    }
    value.push_str(&text[copied..]);
    Ok((value, unknown))
}

impl Provider {
    /// What the provider returns for `key` under `path`, or why it returns nothing.
    fn get(&self, path: Option<&str>, key: &str) -> std::result::Result<String, String> {
        match self {
            Provider::Unavailable { reason, .. } => Err(reason.clone()),
            Provider::File { allowed } => {
                let path = allowed_path(path, allowed.as_deref(), "a properties file")?;
                let bytes = std::fs::read(&path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
                let text = String::from_utf8(bytes)
                    .unwrap_or_else(|e| e.into_bytes().iter().map(|&b| char::from(b)).collect());
                let file = Properties::parse(&text).map_err(|e| format!("`{}`: {e}", path.display()))?;
                file.get(key)
                    .map(|p| p.value.clone())
                    .ok_or_else(|| format!("`{}` has no key `{key}`", path.display()))
            }
            Provider::Directory { allowed } => {
                let folder = allowed_path(path, allowed.as_deref(), "a folder")?;
                let file = folder.join(key);
                if key.contains('/') || !file.is_file() {
                    return Err(format!("`{}` holds no file `{key}`", folder.display()));
                }
                let bytes = std::fs::read(&file).map_err(|e| format!("cannot read `{}`: {e}", file.display()))?;
                String::from_utf8(bytes).map_err(|_| format!("`{}` is not UTF-8 text", file.display()))
            }
            Provider::Env { allowlist } => {
                if path.is_some_and(|p| !p.is_empty()) {
                    return Err("the environment provider takes no path: write `${<alias>:<VARIABLE>}`".into());
                }
                if let Some(pattern) = allowlist {
                    if !pattern.is_match(key).unwrap_or(false) {
                        return Err(format!(
                            "variable `{key}` is not allowed by the provider's `param.allowlist.pattern` (`{}`)",
                            pattern.as_str()
                        ));
                    }
                }
                std::env::var(key).map_err(|e| match e {
                    std::env::VarError::NotPresent => format!("environment variable `{key}` is not set"),
                    std::env::VarError::NotUnicode(_) => format!("environment variable `{key}` is not UTF-8"),
                })
            }
        }
    }
}

/// The path of a file or directory placeholder, if `allowed.paths` (when set) allows it.
fn allowed_path(path: Option<&str>, allowed: Option<&[PathBuf]>, what: &str) -> std::result::Result<PathBuf, String> {
    let path = path
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("no path: write `${{<alias>:<path of {what}>:<key>}}`"))?;
    let normalized = normalize(path);
    if let Some(allowed) = allowed {
        if !allowed.iter().any(|a| normalized.starts_with(a)) {
            let list: Vec<String> = allowed.iter().map(|a| a.display().to_string()).collect();
            return Err(format!(
                "`{path}` is outside the provider's `param.allowed.paths` ({})",
                list.join(", ")
            ));
        }
    }
    Ok(normalized)
}

/// `path` without `.` and with `..` applied, as Kafka's `AllowedPaths` normalizes before
/// comparing.
fn normalize(path: &str) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in Path::new(java_trim(path)).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normalized.pop();
            }
            other => normalized.push(other),
        }
    }
    normalized
}

#[cfg(test)]
mod tests;
