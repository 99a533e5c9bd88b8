//! The client side of SASL PLAIN (RFC 4616) and SCRAM (RFC 5802, RFC 7677), sans I/O: each
//! function turns the server's message into ours. Kafka's SCRAM has no channel binding
//! (`n,,`), no SASLprep (passwords are used as UTF-8 bytes, as Kafka's `ScramFormatter` does)
//! and may carry extensions in the client-first message.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};

use crate::security::SaslMechanism;
use crate::settings::Secret;

/// Kafka's clients refuse fewer iterations (`ScramMechanism.minIterations`).
const MIN_ITERATIONS: u32 = 4096;
/// A bound on the work a server may ask of us; Kafka itself stores at most 16384.
const MAX_ITERATIONS: u32 = 1 << 20;

/// The single PLAIN message: authorization id (empty), user name and password.
pub(crate) fn plain_message(username: &str, password: &Secret) -> Vec<u8> {
    let mut message = Vec::with_capacity(username.len() + password.expose().len() + 2);
    message.push(0);
    message.extend_from_slice(username.as_bytes());
    message.push(0);
    message.extend_from_slice(password.expose().as_bytes());
    message
}

/// A fresh client nonce: 24 random bytes in base64 (printable, no `,`).
pub(crate) fn client_nonce() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system random number generator failed".to_string())?;
    Ok(BASE64.encode(bytes))
}

#[derive(Clone, Copy)]
struct Hash {
    pbkdf2: pbkdf2::Algorithm,
    hmac: hmac::Algorithm,
    digest: &'static digest::Algorithm,
    len: usize,
}

impl Hash {
    fn of(mechanism: SaslMechanism) -> Hash {
        match mechanism {
            SaslMechanism::ScramSha512 => Hash {
                pbkdf2: pbkdf2::PBKDF2_HMAC_SHA512,
                hmac: hmac::HMAC_SHA512,
                digest: &digest::SHA512,
                len: 64,
            },
            // Only SCRAM gets here; SHA-256 is the other one.
            _ => Hash {
                pbkdf2: pbkdf2::PBKDF2_HMAC_SHA256,
                hmac: hmac::HMAC_SHA256,
                digest: &digest::SHA256,
                len: 32,
            },
        }
    }

    fn hmac(&self, key: &[u8], data: &[u8]) -> hmac::Tag {
        hmac::sign(&hmac::Key::new(self.hmac, key), data)
    }
}

/// One SCRAM exchange: client-first, then client-final from the server-first message, then
/// the server-final message's signature is verified.
pub(crate) struct ScramClient {
    hash: Hash,
    password: Secret,
    nonce: String,
    client_first_bare: String,
    /// After the client-final message: ServerKey and AuthMessage, to check the server.
    server_check: Option<(hmac::Key, String)>,
}

/// `=` and `,` in a user name are written `=3D` and `=2C` (RFC 5802 `saslname`).
fn sasl_name(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

impl ScramClient {
    /// An exchange for `username` with a given client `nonce` (see [`client_nonce`]).
    pub(crate) fn new(
        mechanism: SaslMechanism,
        username: &str,
        password: &Secret,
        extensions: &[(String, Secret)],
        nonce: String,
    ) -> Self {
        let mut client_first_bare = format!("n={},r={nonce}", sasl_name(username));
        for (key, value) in extensions {
            client_first_bare.push_str(&format!(",{key}={}", value.expose()));
        }
        ScramClient {
            hash: Hash::of(mechanism),
            password: password.clone(),
            nonce,
            client_first_bare,
            server_check: None,
        }
    }

    /// The client-first message.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message (with the proof) for the server-first message.
    pub(crate) fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let server_first = std::str::from_utf8(server_first).map_err(|_| "the server-first message is not UTF-8")?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for attribute in server_first.split(',') {
            match attribute.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(v),
                Some(("i", v)) => iterations = Some(v),
                Some(("e", v)) => return Err(format!("the server refused: {v}")),
                Some(("m", _)) => return Err("the server requires an unknown SCRAM extension".into()),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err("the server-first message lacks r=, s= or i=".into());
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the server's nonce does not extend ours".into());
        }
        let salt = BASE64
            .decode(salt)
            .map_err(|_| "the server's salt is not base64".to_string())?;
        let iterations: u32 = iterations
            .parse()
            .map_err(|_| "the server's iteration count is not a number".to_string())?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(format!(
                "the server asks for {iterations} iterations, outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            ));
        }
        let hash = self.hash;
        let mut salted_password = vec![0u8; hash.len];
        pbkdf2::derive(
            hash.pbkdf2,
            std::num::NonZeroU32::new(iterations).expect("at least MIN_ITERATIONS"),
            &salt,
            self.password.expose().as_bytes(),
            &mut salted_password,
        );
        let client_key = hash.hmac(&salted_password, b"Client Key");
        let stored_key = digest::digest(hash.digest, client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let client_signature = hash.hmac(stored_key.as_ref(), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(client_signature.as_ref())
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hash.hmac(&salted_password, b"Server Key");
        self.server_check = Some((hmac::Key::new(hash.hmac, server_key.as_ref()), auth_message));
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server's signature in the server-final message: the server knows the
    /// password too, so we are not talking to an impostor.
    pub(crate) fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let Some((server_key, auth_message)) = &self.server_check else {
            return Err("the server-final message came before the client-final message".into());
        };
        let text = std::str::from_utf8(server_final).map_err(|_| "the server-final message is not UTF-8")?;
        let first = text.split(',').next().unwrap_or_default();
        if let Some(error) = first.strip_prefix("e=") {
            return Err(format!("the server refused: {error}"));
        }
        let signature = first
            .strip_prefix("v=")
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or_else(|| "the server-final message has no valid v= signature".to_string())?;
        hmac::verify(server_key, auth_message.as_bytes(), &signature)
            .map_err(|_| "the server's signature is wrong: it does not know the password".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 section 3.
    #[test]
    fn rfc7677_sha256_vector() {
        let mut scram = ScramClient::new(
            SaslMechanism::ScramSha256,
            "user",
            &Secret::new("pencil"),
            &[],
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(scram.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final = scram.client_final(server_first).unwrap();
        assert_eq!(
            String::from_utf8(client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        scram
            .verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        let err = scram
            .verify_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap_err();
        assert!(err.contains("signature is wrong"), "{err}");
        assert!(scram
            .verify_server_final(b"e=invalid-proof")
            .unwrap_err()
            .contains("invalid-proof"));
    }

    #[test]
    fn sha512_round_trip_shape() {
        let mut scram = ScramClient::new(
            SaslMechanism::ScramSha512,
            "a=b,c",
            &Secret::new("pw"),
            &[("tokenauth".into(), Secret::new("true"))],
            "abc".into(),
        );
        assert_eq!(scram.client_first(), b"n,,n=a=3Db=2Cc,r=abc,tokenauth=true");
        let client_final = scram.client_final(b"r=abcdef,s=AAAA,i=4096").unwrap();
        let text = String::from_utf8(client_final).unwrap();
        let proof = text.strip_prefix("c=biws,r=abcdef,p=").unwrap();
        assert_eq!(BASE64.decode(proof).unwrap().len(), 64);
    }

    #[test]
    fn bad_server_first_messages() {
        let client = || ScramClient::new(SaslMechanism::ScramSha256, "u", &Secret::new("p"), &[], "abc".into());
        for (message, expected) in [
            (&b"r=xyz1,s=AAAA,i=4096"[..], "does not extend"),
            (b"r=abc,s=AAAA,i=4096", "does not extend"),
            (b"r=abcd,s=AAAA,i=10", "iterations"),
            (b"r=abcd,s=AAAA,i=99999999999", "not a number"),
            (b"r=abcd,s=!!,i=4096", "not base64"),
            (b"r=abcd,i=4096", "lacks"),
            (b"e=other-error", "refused"),
            (b"\xff", "UTF-8"),
        ] {
            let err = client().client_final(message).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
        assert!(client().verify_server_final(b"v=AAAA").is_err());
    }

    #[test]
    fn plain_and_nonce() {
        assert_eq!(plain_message("u", &Secret::new("p")), b"\0u\0p");
        let (a, b) = (client_nonce().unwrap(), client_nonce().unwrap());
        assert_ne!(a, b);
        assert!(!a.contains(','));
    }
}
