//! AWS Signature Version 4, the parts Strait needs: a presigned `GET` (the `AWS_MSK_IAM`
//! payload) and a signed form `POST` (STS), plus the UTC time formats they use. No I/O.

use ring::{digest, hmac};

use crate::settings::Secret;

/// The algorithm's name in every signature.
pub(crate) const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// An access key: what signs.
#[derive(Clone)]
pub(crate) struct AccessKey {
    pub id: String,
    pub secret: Secret,
    /// For temporary credentials (STS, instance roles): sent as `X-Amz-Security-Token`.
    pub session_token: Option<Secret>,
}

/// A moment as SigV4 writes it: `yyyyMMddTHHmmssZ` and its date `yyyyMMdd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AmzDate(String);

impl AmzDate {
    /// The moment `unix_seconds` after the epoch, in UTC.
    pub fn from_unix(unix_seconds: i64) -> AmzDate {
        let (days, seconds) = (unix_seconds.div_euclid(86_400), unix_seconds.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        AmzDate(format!(
            "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
            seconds / 3600,
            seconds % 3600 / 60,
            seconds % 60
        ))
    }

    /// `yyyyMMddTHHmmssZ`.
    pub fn full(&self) -> &str {
        &self.0
    }

    /// `yyyyMMdd`.
    pub fn date(&self) -> &str {
        &self.0[..8]
    }
}

/// Days since 1970-01-01 to a (year, month, day) of the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the epoch of an ISO 8601 UTC time as AWS writes expirations:
/// `2024-05-01T12:00:00Z`, with or without fractional seconds.
pub(crate) fn parse_iso8601(text: &str) -> Option<i64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let fraction = &text[19..text.len() - 1];
    if !(fraction.is_empty() || fraction.starts_with('.') && fraction[1..].bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_from_civil(year, month as u32, day as u32) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// RFC 3986 encoding as SigV4 wants it: everything but `A-Za-z0-9-_.~` as upper-case `%XX`.
pub(crate) fn uri_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

/// The request's scope: `<date>/<region>/<service>/aws4_request`.
pub(crate) fn scope(date: &AmzDate, region: &str, service: &str) -> String {
    format!("{}/{region}/{service}/aws4_request", date.date())
}

/// The hex signature of `canonical_request` (SigV4 tasks 2 and 3).
fn sign(key: &AccessKey, date: &AmzDate, region: &str, service: &str, canonical_request: &str) -> String {
    let string_to_sign = format!(
        "{ALGORITHM}\n{}\n{}\n{}",
        date.full(),
        scope(date, region, service),
        sha256_hex(canonical_request.as_bytes())
    );
    let hmac = |key: &[u8], data: &str| hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes());
    let signing_key = [region, service, "aws4_request"].iter().fold(
        hmac(format!("AWS4{}", key.secret.expose()).as_bytes(), date.date()),
        |key, part| hmac(key.as_ref(), part),
    );
    hex(hmac(signing_key.as_ref(), &string_to_sign).as_ref())
}

/// A query string in canonical form: names and values encoded, sorted by name.
fn canonical_query(parameters: &[(String, String)]) -> String {
    let mut encoded: Vec<(String, String)> = parameters
        .iter()
        .map(|(name, value)| (uri_encode(name), uri_encode(value)))
        .collect();
    encoded.sort();
    encoded
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Presigns `GET https://<host>/?<parameters>` for `service` in `region`, valid for
/// `expires_seconds` from `date`, signing the `host` header only. Returns every query
/// parameter of the presigned URL, `X-Amz-Signature` last.
pub(crate) fn presign_get(
    key: &AccessKey,
    host: &str,
    parameters: &[(&str, &str)],
    region: &str,
    service: &str,
    date: &AmzDate,
    expires_seconds: u32,
) -> Vec<(String, String)> {
    let mut query: Vec<(String, String)> = parameters
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    query.push(("X-Amz-Algorithm".into(), ALGORITHM.into()));
    query.push((
        "X-Amz-Credential".into(),
        format!("{}/{}", key.id, scope(date, region, service)),
    ));
    query.push(("X-Amz-Date".into(), date.full().into()));
    query.push(("X-Amz-Expires".into(), expires_seconds.to_string()));
    if let Some(token) = &key.session_token {
        query.push(("X-Amz-Security-Token".into(), token.expose().into()));
    }
    query.push(("X-Amz-SignedHeaders".into(), "host".into()));
    let canonical_request = format!(
        "GET\n/\n{}\nhost:{host}\n\nhost\n{}",
        canonical_query(&query),
        sha256_hex(b"")
    );
    let signature = sign(key, date, region, service, &canonical_request);
    query.push(("X-Amz-Signature".into(), signature));
    query
}

/// Signs `POST https://<host>/` with a form `body` for `service` in `region`: the headers to
/// send, `Authorization` among them.
pub(crate) fn sign_form_post(
    key: &AccessKey,
    host: &str,
    body: &str,
    region: &str,
    service: &str,
    date: &AmzDate,
) -> Vec<(&'static str, String)> {
    let mut headers: Vec<(&'static str, String)> = vec![
        ("content-type", FORM_CONTENT_TYPE.into()),
        ("host", host.into()),
        ("x-amz-date", date.full().into()),
    ];
    if let Some(token) = &key.session_token {
        headers.push(("x-amz-security-token", token.expose().into()));
    }
    let signed_headers = headers.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(";");
    let canonical_headers: String = headers
        .iter()
        .map(|(name, value)| format!("{name}:{}\n", value.trim()))
        .collect();
    let canonical_request = format!(
        "POST\n/\n\n{canonical_headers}\n{signed_headers}\n{}",
        sha256_hex(body.as_bytes())
    );
    let signature = sign(key, date, region, service, &canonical_request);
    headers.push((
        "authorization",
        format!(
            "{ALGORITHM} Credential={}/{}, SignedHeaders={signed_headers}, Signature={signature}",
            key.id,
            scope(date, region, service)
        ),
    ));
    headers
}

/// The content type of a form body, as the AWS SDKs send it to query APIs such as STS.
pub(crate) const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    fn example_key() -> AccessKey {
        // The example key of AWS's SigV4 documentation and test suite.
        AccessKey {
            id: "AKIDEXAMPLE".into(),
            secret: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: None,
        }
    }

    #[test]
    fn dates_are_written_and_read_in_utc() {
        let date = AmzDate::from_unix(1_440_938_160);
        assert_eq!(date.full(), "20150830T123600Z");
        assert_eq!(date.date(), "20150830");
        assert_eq!(AmzDate::from_unix(951_782_400).full(), "20000229T000000Z");
        assert_eq!(AmzDate::from_unix(0).full(), "19700101T000000Z");
        assert_eq!(parse_iso8601("2015-08-30T12:36:00Z"), Some(1_440_938_160));
        assert_eq!(parse_iso8601("2015-08-30T12:36:00.359Z"), Some(1_440_938_160));
        assert_eq!(parse_iso8601("2000-02-29T00:00:00Z"), Some(951_782_400));
        for bad in [
            "2015-08-30 12:36:00Z",
            "2015-08-30T12:36:00",
            "2015-13-30T12:36:00Z",
            "soon",
            "",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn encoding_follows_rfc3986() {
        assert_eq!(uri_encode("kafka-cluster:Connect"), "kafka-cluster%3AConnect");
        assert_eq!(uri_encode("a/b c+d=e~f_g.h"), "a%2Fb%20c%2Bd%3De~f_g.h");
    }

    #[test]
    fn a_form_post_signs_its_content_type_host_date_and_token() {
        let mut key = example_key();
        key.session_token = Some(Secret::new("session"));
        let headers = sign_form_post(
            &key,
            "sts.amazonaws.com",
            "Action=AssumeRole",
            "us-east-1",
            "sts",
            &AmzDate::from_unix(1_440_938_160),
        );
        let names: Vec<&str> = headers.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "host",
                "x-amz-date",
                "x-amz-security-token",
                "authorization"
            ]
        );
        let authorization = &headers[4].1;
        assert!(
            authorization.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/sts/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
            ),
            "{authorization}"
        );
    }

    /// AWS's SigV4 test suite, `get-vanilla-query-order-key-case`: its canonical request and
    /// signature, recomputed through [`sign`].
    #[test]
    fn the_signing_key_and_string_to_sign_match_the_aws_test_suite() {
        let canonical =
            "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n\
                         host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(
            sign(
                &example_key(),
                &AmzDate::from_unix(1_440_938_160),
                "us-east-1",
                "service",
                canonical
            ),
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        );
    }

    #[test]
    fn a_presigned_get_lists_its_parameters_and_signs_them_sorted() {
        let mut key = example_key();
        key.session_token = Some(Secret::new("token/with+specials="));
        let query = presign_get(
            &key,
            "b-1.example.kafka.us-east-1.amazonaws.com",
            &[("Action", "kafka-cluster:Connect")],
            "us-east-1",
            "kafka-cluster",
            &AmzDate::from_unix(1_440_938_160),
            900,
        );
        let names: Vec<&str> = query.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Action",
                "X-Amz-Algorithm",
                "X-Amz-Credential",
                "X-Amz-Date",
                "X-Amz-Expires",
                "X-Amz-Security-Token",
                "X-Amz-SignedHeaders",
                "X-Amz-Signature"
            ]
        );
        assert_eq!(query[2].1, "AKIDEXAMPLE/20150830/us-east-1/kafka-cluster/aws4_request");
        assert_eq!(query[7].1.len(), 64);
    }
}
