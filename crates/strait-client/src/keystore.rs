//! Java key and trust stores, as Kafka's clients read them: PKCS12 (through the `p12-keystore`
//! crate) and JKS, Java's own format (Kafka's default store type), read here. Both come out as
//! the trusted certificates and the private keys with their chains that rustls takes.
//!
//! JKS, as `sun.security.provider.JavaKeyStore` writes it: the magic `0xFEEDFEED`, a version
//! (1 or 2), a count of entries, each a private key entry (tag 1: the key protected with Sun's
//! `KeyProtector`, then its certificate chain) or a trusted certificate entry (tag 2); then a
//! SHA-1 digest of the password (UTF-16BE), the words "Mighty Aphrodite" and everything before
//! it. `KeyProtector` XORs the PKCS#8 key with a SHA-1 keystream seeded by a random salt, and
//! ends with a SHA-1 of the password and the plain key, which tells a wrong key password.

use ring::digest::{digest, SHA1_FOR_LEGACY_USE_ONLY};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// What a store holds.
#[derive(Debug, Default)]
pub(crate) struct JavaStore {
    /// Trusted certificate entries.
    pub trusted: Vec<CertificateDer<'static>>,
    /// Private key entries: the alias, the certificate chain (the key's own first) and the key.
    pub keys: Vec<(String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
}

/// The Java store types Strait reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreType {
    Jks,
    Pkcs12,
}

impl StoreType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            StoreType::Jks => "JKS",
            StoreType::Pkcs12 => "PKCS12",
        }
    }
}

/// Reads a store of `kind` from `bytes`. `store_password` checks the store's integrity (a JKS
/// trust store may be read without one, as Java reads it); `key_password` opens private keys.
/// The error says what is wrong, without the passwords.
pub(crate) fn read_store(
    kind: StoreType,
    bytes: &[u8],
    store_password: Option<&str>,
    key_password: Option<&str>,
) -> Result<JavaStore, String> {
    match kind {
        StoreType::Jks => read_jks(bytes, store_password, key_password),
        StoreType::Pkcs12 => read_pkcs12(bytes, store_password, key_password),
    }
}

fn read_pkcs12(bytes: &[u8], store_password: Option<&str>, key_password: Option<&str>) -> Result<JavaStore, String> {
    let password = store_password.ok_or("a PKCS12 store is encrypted with its password: set the store's password")?;
    if key_password.is_some_and(|k| k != password) {
        return Err(
            "its keys must be protected with the store's password, as keytool makes PKCS12 stores \
                    (keytool ignores -keypass for them); leave ssl.key.password unset or equal to the store's"
                .into(),
        );
    }
    let store = p12_keystore::KeyStore::from_pkcs12(bytes, password, p12_keystore::Pkcs12ImportPolicy::Relaxed)
        .map_err(|e| match e {
            p12_keystore::error::Error::MacError(_) => "wrong password (the store's integrity check fails)".to_owned(),
            other => format!("not a PKCS12 store Strait can read: {other}"),
        })?;
    let mut read = JavaStore::default();
    for (alias, entry) in store.entries() {
        match entry {
            p12_keystore::KeyStoreEntry::Certificate(certificate) => {
                read.trusted.push(CertificateDer::from(certificate.as_der().to_vec()));
            }
            p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) => {
                let certificates = chain.certs().iter().map(|c| CertificateDer::from(c.as_der().to_vec()));
                read.keys.push((
                    alias.clone(),
                    certificates.collect(),
                    PrivateKeyDer::Pkcs8(chain.key().as_der().to_vec().into()),
                ));
            }
            p12_keystore::KeyStoreEntry::Secret(_) => {
                return Err(format!(
                    "entry `{alias}` is a secret key; a key or trust store for TLS holds private keys and certificates"
                ))
            }
        }
    }
    Ok(read)
}

const JKS_MAGIC: u32 = 0xFEED_FEED;
const JCEKS_MAGIC: u32 = 0xCECE_CECE;
/// The algorithm of Sun's `KeyProtector`, 1.3.6.1.4.1.42.2.17.1.1, as DER.
const KEY_PROTECTOR_OID: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x11, 0x01, 0x01];

/// A reader of the big-endian fields of a JKS file.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or("truncated")?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    /// Java's `writeUTF`: a length and (modified) UTF-8.
    fn utf(&mut self) -> Result<String, String> {
        let n = usize::from(self.u16()?);
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// A certificate: its type (version 2) and its DER.
    fn certificate(&mut self, version: u32) -> Result<CertificateDer<'static>, String> {
        if version == 2 {
            let kind = self.utf()?;
            if kind != "X.509" {
                return Err(format!("holds a {kind} certificate; TLS needs X.509"));
            }
        }
        let n = self.u32()? as usize;
        Ok(CertificateDer::from(self.take(n)?.to_vec()))
    }
}

fn read_jks(bytes: &[u8], store_password: Option<&str>, key_password: Option<&str>) -> Result<JavaStore, String> {
    let truncated = |e: String| format!("not a JKS store ({e})");
    let mut cursor = Cursor { bytes, at: 0 };
    match cursor.u32().map_err(truncated)? {
        JKS_MAGIC => {}
        JCEKS_MAGIC => return Err("is a JCEKS store; convert it to PKCS12 with keytool -importkeystore".into()),
        _ if bytes.first() == Some(&0x30) => {
            return Err("is not a JKS store but looks like PKCS12: set the store type to PKCS12".into())
        }
        _ => return Err("is not a JKS store (no 0xFEEDFEED at its start)".into()),
    }
    let version = cursor.u32().map_err(truncated)?;
    if version != 1 && version != 2 {
        return Err(format!(
            "is a JKS store of version {version}; Java writes versions 1 and 2"
        ));
    }
    let entries = cursor.u32().map_err(truncated)?;
    let mut protected = Vec::new();
    let mut read = JavaStore::default();
    for _ in 0..entries {
        let tag = cursor.u32().map_err(truncated)?;
        let alias = cursor.utf().map_err(truncated)?;
        cursor.take(8).map_err(truncated)?; // The entry's creation time.
        match tag {
            1 => {
                let n = cursor.u32().map_err(truncated)? as usize;
                let key = cursor.take(n).map_err(truncated)?;
                let chain = cursor.u32().map_err(truncated)?;
                let certificates = (0..chain)
                    .map(|_| cursor.certificate(version))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("entry `{alias}`: {e}"))?;
                protected.push((alias, certificates, key));
            }
            2 => read.trusted.push(
                cursor
                    .certificate(version)
                    .map_err(|e| format!("entry `{alias}`: {e}"))?,
            ),
            3 => return Err(format!("entry `{alias}` is a secret key, which JKS stores cannot hold")),
            other => return Err(format!("entry `{alias}` has the unknown tag {other}")),
        }
    }
    let signed = cursor.at;
    let expected = cursor.take(20).map_err(truncated)?;
    if let Some(password) = store_password {
        let mut input = utf16be(password);
        input.extend_from_slice(b"Mighty Aphrodite");
        input.extend_from_slice(&bytes[..signed]);
        if digest(&SHA1_FOR_LEGACY_USE_ONLY, &input).as_ref() != expected {
            return Err("wrong password (the store's integrity check fails)".into());
        }
    }
    for (alias, certificates, key) in protected {
        // Kafka opens keys with ssl.key.password, else with the store's password.
        let password = key_password
            .or(store_password)
            .ok_or_else(|| format!("entry `{alias}` is a private key: set the key store's password"))?;
        let key = unprotect(key, password).map_err(|e| format!("entry `{alias}`: {e}"))?;
        read.keys.push((alias, certificates, PrivateKeyDer::Pkcs8(key.into())));
    }
    Ok(read)
}

fn utf16be(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// The PKCS#8 key inside a `KeyProtector` EncryptedPrivateKeyInfo.
fn unprotect(encrypted_info: &[u8], password: &str) -> Result<Vec<u8>, String> {
    let malformed = || "its protected key is malformed".to_owned();
    // EncryptedPrivateKeyInfo ::= SEQUENCE { SEQUENCE { OID, NULL }, OCTET STRING }
    let (info, _) = der(encrypted_info, 0x30).ok_or_else(malformed)?;
    let (algorithm, rest) = der(info, 0x30).ok_or_else(malformed)?;
    let (oid, _) = der(algorithm, 0x06).ok_or_else(malformed)?;
    if oid != KEY_PROTECTOR_OID {
        return Err("its key is protected with an algorithm other than Sun's JKS KeyProtector".into());
    }
    let (data, _) = der(rest, 0x04).ok_or_else(malformed)?;
    if data.len() < 40 {
        return Err(malformed());
    }
    let (salt, rest) = data.split_at(20);
    let (encrypted, check) = rest.split_at(rest.len() - 20);
    let password = utf16be(password);
    let mut block = salt.to_vec();
    let mut key = Vec::with_capacity(encrypted.len());
    for chunk in encrypted.chunks(20) {
        block = digest(&SHA1_FOR_LEGACY_USE_ONLY, &[password.as_slice(), &block].concat())
            .as_ref()
            .to_vec();
        key.extend(chunk.iter().zip(&block).map(|(byte, pad)| byte ^ pad));
    }
    if digest(&SHA1_FOR_LEGACY_USE_ONLY, &[password.as_slice(), &key].concat()).as_ref() != check {
        return Err("wrong key password (ssl.key.password, or the store's password when it is unset)".into());
    }
    Ok(key)
}

/// The contents of the DER element with `tag` at the start of `input`, and what follows it.
fn der(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = input.split_first()?;
    if first != tag {
        return None;
    }
    let (&length, rest) = rest.split_first()?;
    let (length, rest) = if length < 0x80 {
        (usize::from(length), rest)
    } else {
        let octets = usize::from(length & 0x7F);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return None;
        }
        let length = rest[..octets].iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
        (length, &rest[octets..])
    };
    (rest.len() >= length).then(|| rest.split_at(length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_elements_with_short_and_long_lengths() {
        assert_eq!(der(&[0x04, 0x02, 7, 8, 9], 0x04), Some((&[7u8, 8][..], &[9u8][..])));
        let long: Vec<u8> = [0x04, 0x81, 0x80]
            .into_iter()
            .chain(std::iter::repeat_n(1, 0x80))
            .collect();
        assert_eq!(
            der(&long, 0x04).map(|(content, rest)| (content.len(), rest.len())),
            Some((0x80, 0))
        );
        assert_eq!(der(&[0x04, 0x05, 1], 0x04), None, "shorter than it says");
        assert_eq!(der(&[0x30, 0x00], 0x04), None, "another tag");
    }

    #[test]
    fn what_is_not_a_jks_store_says_what_it_is() {
        let read = |bytes: &[u8]| read_jks(bytes, Some("pw"), None).unwrap_err();
        assert!(read(&[0x30, 0x82, 0x01, 0x00]).contains("looks like PKCS12"));
        assert!(read(&[0xCE, 0xCE, 0xCE, 0xCE]).contains("JCEKS"));
        assert!(read(b"-----BEGIN CERTIFICATE-----").contains("no 0xFEEDFEED"));
        assert!(read(&[0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2, 0, 0, 0, 1]).contains("truncated"));
        assert!(read(&[0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 9]).contains("version 9"));
    }

    #[test]
    fn an_empty_jks_store_checks_its_password() {
        let mut store = vec![0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2, 0, 0, 0, 0];
        let mut signed = utf16be("right");
        signed.extend_from_slice(b"Mighty Aphrodite");
        signed.extend_from_slice(&store);
        store.extend_from_slice(digest(&SHA1_FOR_LEGACY_USE_ONLY, &signed).as_ref());
        assert!(read_jks(&store, Some("right"), None).is_ok());
        assert!(
            read_jks(&store, None, None).is_ok(),
            "Java reads a store without its password, unchecked"
        );
        assert!(read_jks(&store, Some("wrong"), None)
            .unwrap_err()
            .contains("wrong password"));
    }

    #[test]
    fn a_protected_key_opens_with_its_password_only() {
        // KeyProtector's scheme, run forwards: salt, keystream XOR, then the check digest.
        let (password, key) = (utf16be("key-pw"), b"a PKCS#8 private key, for the test".to_vec());
        let salt = [7u8; 20];
        let mut block = salt.to_vec();
        let mut data = salt.to_vec();
        for chunk in key.chunks(20) {
            block = digest(&SHA1_FOR_LEGACY_USE_ONLY, &[password.as_slice(), &block].concat())
                .as_ref()
                .to_vec();
            data.extend(chunk.iter().zip(&block).map(|(byte, pad)| byte ^ pad));
        }
        data.extend_from_slice(digest(&SHA1_FOR_LEGACY_USE_ONLY, &[password.as_slice(), &key].concat()).as_ref());
        let algorithm = [
            &[0x06, KEY_PROTECTOR_OID.len() as u8][..],
            KEY_PROTECTOR_OID,
            &[0x05, 0x00],
        ]
        .concat();
        let octets = [&[0x04, data.len() as u8][..], &data].concat();
        let body = [&[0x30, algorithm.len() as u8][..], &algorithm, &octets].concat();
        let info = [&[0x30, body.len() as u8][..], &body].concat();
        assert_eq!(unprotect(&info, "key-pw").unwrap(), key);
        assert!(unprotect(&info, "other").unwrap_err().contains("wrong key password"));
    }

    #[test]
    fn a_pkcs12_store_needs_its_password() {
        assert!(read_pkcs12(&[0x30], None, None)
            .unwrap_err()
            .contains("set the store's password"));
        assert!(read_pkcs12(&[0x30], Some("a"), Some("b"))
            .unwrap_err()
            .contains("ssl.key.password"));
        assert!(read_pkcs12(b"not der", Some("a"), None)
            .unwrap_err()
            .contains("not a PKCS12 store"));
    }
}
