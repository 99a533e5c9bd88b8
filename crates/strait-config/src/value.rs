//! Java-compatible parsing of raw values: a value with the key and line it came from
//! ([`Raw`]), Java's `String.trim`, Kafka's `ConfigDef` LIST, and the wording of choices.

use crate::error::{ConfigError, Result};
use crate::properties::Property;

/// A raw value together with the key and line it came from, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw<'a> {
    pub(crate) key: &'a str,
    pub(crate) value: &'a str,
    pub(crate) line: usize,
    /// The value as written, when config providers resolved it: errors show this instead.
    pub(crate) written: Option<&'a str>,
}

impl<'a> From<&'a Property> for Raw<'a> {
    fn from(p: &'a Property) -> Self {
        Raw {
            key: &p.key,
            value: &p.value,
            line: p.line,
            written: p.written.as_deref(),
        }
    }
}

impl Raw<'_> {
    pub(crate) fn invalid(&self, expected: impl Into<String>) -> ConfigError {
        let value = match self.written {
            Some(written) => format!("{written}` (as its config provider resolved it) `"),
            None => self.value.to_owned(),
        };
        ConfigError::InvalidValue {
            line: self.line,
            key: self.key.to_owned(),
            value,
            expected: expected.into(),
        }
    }

    /// Java `String.trim`: strips every char up to U+0020.
    pub(crate) fn trimmed(&self) -> &str {
        java_trim(self.value)
    }

    pub(crate) fn bool(&self) -> Result<bool> {
        match self.trimmed() {
            t if t.eq_ignore_ascii_case("true") => Ok(true),
            t if t.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(self.invalid("`true` or `false`")),
        }
    }

    pub(crate) fn number<T: std::str::FromStr>(&self, what: &str) -> Result<T> {
        self.trimmed().parse().map_err(|_| self.invalid(what))
    }

    /// Index of the value in `choices` (exact match after trimming).
    pub(crate) fn choice(&self, choices: &[&str]) -> Result<usize> {
        let t = self.trimmed();
        choices
            .iter()
            .position(|c| *c == t)
            .ok_or_else(|| self.invalid(one_of(choices)))
    }

    /// Index of the class in `classes`, by fully-qualified or simple name.
    pub(crate) fn class(&self, classes: &[&str]) -> Result<usize> {
        let t = self.trimmed();
        classes
            .iter()
            .position(|c| *c == t || c.rsplit('.').next() == Some(t))
            .ok_or_else(|| self.invalid(format!("{} (custom Java classes are not supported)", one_of(classes))))
    }
}

/// "`a`, `b` or `c`".
pub(crate) fn one_of(choices: &[&str]) -> String {
    let quoted: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// Java `String.trim`.
pub(crate) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c| c <= ' ')
}

/// A Kafka `ConfigDef` LIST: trimmed, empty → no entries, else split on `\s*,\s*` keeping empty
/// entries (Java `split` with limit -1).
pub(crate) fn java_list(value: &str) -> Vec<&str> {
    let trimmed = java_trim(value);
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed
        .split(',')
        .map(|s| s.trim_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_list_semantics() {
        assert_eq!(java_list(" a , b,c\t"), vec!["a", "b", "c"]);
        assert_eq!(java_list("   "), Vec::<&str>::new());
        assert_eq!(java_list("a,,b,"), vec!["a", "", "b", ""]);
        assert_eq!(java_list("a{1,3}"), vec!["a{1", "3}"]);
    }
}
