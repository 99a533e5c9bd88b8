//! Which settings hold secrets, so that no rendering, log line or error prints them.

/// Client settings whose values must never be printed.
pub(crate) fn is_secret(name: &str) -> bool {
    name.contains("password") || name == "sasl.jaas.config" || name == "ssl.keystore.key"
}

/// Whether a full key as written (`A.sasl.jaas.config`, `A->B.producer.ssl.key.password`)
/// holds a secret value.
pub(crate) fn is_secret_key(key: &str) -> bool {
    key.contains("password") || key.ends_with("sasl.jaas.config") || key.ends_with("ssl.keystore.key")
}
