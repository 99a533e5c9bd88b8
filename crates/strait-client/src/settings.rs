//! What every part of the security configuration shares: a secret value that never shows, and
//! the reading of a client setting by its key.

use std::fmt;

use crate::Error;

/// A secret value (a password). Its `Debug` output is `[hidden]` and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value, for the code that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

/// A configuration error naming `key`.
pub(crate) fn config_error(key: &str, message: impl Into<String>) -> Error {
    Error::Config {
        key: key.into(),
        message: message.into(),
    }
}

/// A value that is set and not blank (Kafka treats blank store locations as unset).
pub(crate) fn set<'a>(get: &impl Fn(&str) -> Option<&'a str>, key: &str) -> Option<&'a str> {
    get(key).filter(|v| !v.trim().is_empty())
}
