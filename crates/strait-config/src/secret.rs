//! Which settings hold secrets, so that no rendering, log line or error prints them.

/// Client settings whose whole value is a secret, besides any `*password*` or `*passphrase*`.
const SECRET_NAMES: &[&str] = &[
    "sasl.jaas.config",
    "ssl.keystore.key",
    "sasl.oauthbearer.client.credentials.client.secret",
];

/// Client settings whose values must never be printed.
pub(crate) fn is_secret(name: &str) -> bool {
    name.contains("password") || name.contains("passphrase") || SECRET_NAMES.contains(&name)
}

/// Whether a full key as written (`A.sasl.jaas.config`, `A->B.producer.ssl.key.password`)
/// holds a secret value.
pub(crate) fn is_secret_key(key: &str) -> bool {
    key.contains("password") || key.contains("passphrase") || SECRET_NAMES.iter().any(|name| key.ends_with(name))
}
