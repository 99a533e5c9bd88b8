//! A lenient PEM reader, as lenient as Kafka's own (`DefaultSslEngineFactory.PemParser`).
//!
//! Inline PEM values in a properties file are often written with `\` line continuations, which
//! the properties format joins into one line: `-----BEGIN CERTIFICATE----- MIIB… -----END
//! CERTIFICATE-----`. Kafka accepts that, so whitespace anywhere inside a block is ignored here
//! too (strict PEM readers want line breaks after the header). Error messages never quote the
//! text: it may be a private key.

use base64::Engine;

/// One `-----BEGIN <label>-----` … `-----END <label>-----` block.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PemBlock {
    /// E.g. `CERTIFICATE`, `PRIVATE KEY`.
    pub label: String,
    /// The decoded contents.
    pub der: Vec<u8>,
    /// Whether the block has RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`): a legacy encrypted key.
    pub encrypted: bool,
}

impl std::fmt::Debug for PemBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PemBlock({}, {} bytes)", self.label, self.der.len())
    }
}

const BEGIN: &str = "-----BEGIN ";
const DASHES: &str = "-----";

/// Every block of `text`, in order; text between blocks is ignored (as Kafka does).
pub(crate) fn parse_pem(text: &str) -> Result<Vec<PemBlock>, String> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after_begin = &rest[start + BEGIN.len()..];
        let label_end = after_begin
            .find(DASHES)
            .ok_or_else(|| format!("PEM block #{} has an unterminated BEGIN line", blocks.len() + 1))?;
        let label = after_begin[..label_end].trim().to_owned();
        let body_and_rest = &after_begin[label_end + DASHES.len()..];
        let end_marker = format!("-----END {label}-----");
        let body_end = body_and_rest
            .find(&end_marker)
            .ok_or_else(|| format!("PEM block #{} ({label}) has no `{end_marker}` line", blocks.len() + 1))?;
        let body = &body_and_rest[..body_end];
        // RFC 1421 headers ("Proc-Type: 4,ENCRYPTED", "DEK-Info: …") sit before the base64 text.
        let encrypted = body.contains("Proc-Type:") || body.contains("DEK-Info:");
        let der = if encrypted {
            Vec::new()
        } else {
            let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|_| format!("PEM block #{} ({label}) is not valid base64", blocks.len() + 1))?
        };
        blocks.push(PemBlock { label, der, encrypted });
        rest = &body_and_rest[body_end + end_marker.len()..];
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_with_and_without_line_breaks() {
        let text = "subject=CN=x\n-----BEGIN CERTIFICATE-----\nAAEC\nAw==\n-----END CERTIFICATE-----\n\
                    -----BEGIN PRIVATE KEY----- BAUG -----END PRIVATE KEY-----";
        let blocks = parse_pem(text).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].label, "CERTIFICATE");
        assert_eq!(blocks[0].der, vec![0, 1, 2, 3]);
        assert_eq!(blocks[1].label, "PRIVATE KEY");
        assert_eq!(blocks[1].der, vec![4, 5, 6]);
        assert!(parse_pem("no pem here").unwrap().is_empty());
    }

    #[test]
    fn broken_blocks_are_errors_without_their_text() {
        let err = parse_pem("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n").unwrap_err();
        assert!(err.contains("no `-----END PRIVATE KEY-----` line"), "{err}");
        assert!(!err.contains("c2VjcmV0"));
        let err = parse_pem("-----BEGIN PRIVATE KEY-----\nsecret!!\n-----END PRIVATE KEY-----").unwrap_err();
        assert_eq!(err, "PEM block #1 (PRIVATE KEY) is not valid base64");
        let legacy = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n\
                      -----END RSA PRIVATE KEY-----";
        assert!(parse_pem(legacy).unwrap()[0].encrypted);
    }
}
