use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::security::{SaslConfig, SaslCredentials, SaslMechanism, Security};
use crate::{BrokerConnection, ConnectionConfig};

const HOST: &str = "b-1.mirror.abc123.c2.kafka.eu-west-1.amazonaws.com";

fn options(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn json(payload: &[u8]) -> BTreeMap<String, String> {
    serde_json::from_slice(payload).expect("the payload is a flat JSON object of strings")
}

#[test]
fn the_payload_carries_what_aws_msk_iam_auth_sends() {
    let key = AccessKey {
        id: "ASIAEXAMPLE".into(),
        secret: Secret::new("secret"),
        session_token: Some(Secret::new("session+token/=")),
    };
    let payload = json(&payload(
        &key,
        HOST,
        "eu-west-1",
        &AmzDate::from_unix(1_700_000_000),
        "strait/test",
    ));
    let keys: Vec<&str> = payload.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "action",
            "host",
            "user-agent",
            "version",
            "x-amz-algorithm",
            "x-amz-credential",
            "x-amz-date",
            "x-amz-expires",
            "x-amz-security-token",
            "x-amz-signature",
            "x-amz-signedheaders"
        ]
    );
    assert_eq!(payload["action"], "kafka-cluster:Connect");
    assert_eq!(payload["host"], HOST);
    assert_eq!(payload["version"], "2020_10_22");
    assert_eq!(
        payload["x-amz-credential"],
        "ASIAEXAMPLE/20231114/eu-west-1/kafka-cluster/aws4_request"
    );
    assert_eq!(payload["x-amz-date"], "20231114T221320Z");
    assert_eq!(payload["x-amz-expires"], "900");
    assert_eq!(payload["x-amz-security-token"], "session+token/=");
    assert_eq!(payload["x-amz-signedheaders"], "host");
    // Long-term keys carry no token.
    let key = AccessKey {
        session_token: None,
        ..key
    };
    let payload = json(&super::payload(&key, HOST, "eu-west-1", &AmzDate::from_unix(0), "s"));
    assert!(!payload.contains_key("x-amz-security-token"));
}

/// Runs `MskIamPayload.java` against AWS's library (fetched from Maven Central on first use):
/// the payload aws-msk-iam-auth signs now for `HOST` and the given credentials.
fn reference_payload(arguments: &[&str]) -> BTreeMap<String, String> {
    let libs = strait_testkit::maven_jars("aws-msk-iam-auth", include_str!("../../java/msk-iam/pom.xml"))
        .unwrap_or_else(|e| panic!("getting aws-msk-iam-auth from Maven Central (mvn must be on PATH): {e}"));
    let classes = strait_testkit::ScratchDir::new("msk-iam").unwrap();
    let classpath = format!("{}:{}/*", classes.path().display(), libs.display());
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/java/msk-iam/MskIamPayload.java");
    let run = |command: &mut std::process::Command, what: &str| {
        let output = command
            .output()
            .unwrap_or_else(|e| panic!("{what} cannot start: {e} (a JDK 17 must be on PATH)"));
        assert!(
            output.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    run(
        std::process::Command::new("javac")
            .args(["-cp", &classpath, "-d"])
            .arg(classes.path())
            .arg(source),
        "javac",
    );
    let stdout = run(
        std::process::Command::new("java")
            .args(["-cp", &classpath, "MskIamPayload", HOST])
            .args(arguments),
        "java MskIamPayload",
    );
    json(String::from_utf8(stdout).unwrap().trim().as_bytes())
}

/// The payload of AWS's own library for fixed credentials, and Strait's for the same
/// credentials, host and moment (the library's, which always signs now): the same, field for
/// field, signature included.
#[test]
fn the_payload_is_the_one_aws_msk_iam_auth_signs() {
    for token in [Some("FwoGZXIvYXdzEJr//////////wEaDM+session=="), None] {
        let mut arguments = vec!["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"];
        arguments.extend(token);
        let theirs = reference_payload(&arguments);
        let unix = unix_of(&theirs["x-amz-date"]);
        let key = AccessKey {
            id: arguments[0].into(),
            secret: Secret::new(arguments[1]),
            session_token: token.map(Secret::new),
        };
        let ours = json(&payload(
            &key,
            HOST,
            "eu-west-1",
            &AmzDate::from_unix(unix),
            "reference",
        ));
        assert_eq!(ours, theirs);
    }
}

#[test]
fn the_region_is_read_from_the_broker_host_name() {
    for (host, region) in [
        (HOST, Some("eu-west-1")),
        ("b-2.c.x.c3.kafka.us-gov-west-1.amazonaws.com", Some("us-gov-west-1")),
        (
            "boot-x.c1.kafka-serverless.ap-southeast-2.amazonaws.com",
            Some("ap-southeast-2"),
        ),
        ("b-1.c.x.kafka.cn-north-1.amazonaws.com.cn", Some("cn-north-1")),
        ("b-1.my-cluster-1.x.c2.kafka.us-east-1.amazonaws.com", Some("us-east-1")),
        ("kafka-1.internal.example.com", None),
        ("127.0.0.1", None),
    ] {
        assert_eq!(region_in_host(host), region, "{host}");
    }
    let iam = msk_iam(&[], Environment::with(&[("AWS_REGION", "sa-east-1")])).unwrap();
    assert_eq!(iam.region_for("kafka.internal").unwrap(), "sa-east-1");
    assert_eq!(iam.region_for(HOST).unwrap(), "eu-west-1");
    let iam = msk_iam(&[], Environment::with(&[("AWS_CONFIG_FILE", "/nonexistent")])).unwrap();
    let error = iam.region_for("kafka.internal").unwrap_err().to_string();
    assert!(
        error.contains("kafka.internal") && error.contains("AWS_REGION"),
        "{error}"
    );
}

#[test]
fn options_are_checked_with_the_key_and_what_to_do() {
    for (pairs, expected) in [
        (vec![("awsMskRegionProvider", "com.example.Provider")], "Java class"),
        (
            vec![("awsAddDefaultProviders", "false")],
            "awsProfileName or awsRoleArn",
        ),
        (vec![("awsDebugCreds", "yes")], "\"true\" or \"false\""),
        (vec![("awsMaxRetries", "-1")], "whole number"),
        (
            vec![("awsRoleArn", "arn:aws:iam::1:role/r"), ("awsRoleAccessKeyId", "AKID")],
            "go together",
        ),
    ] {
        let error = msk_iam(&options(&pairs), Environment::default()).unwrap_err();
        let Error::Config { key, message } = error else {
            panic!("{pairs:?}: {error:?}")
        };
        assert_eq!(key, "sasl.jaas.config");
        assert!(message.contains(expected), "{pairs:?}: {message}");
    }
    let iam = msk_iam(
        &options(&[("awsProfileName", "msk"), ("awsRoleArn", "arn:aws:iam::1:role/mirror")]),
        Environment::default(),
    )
    .unwrap();
    assert_eq!(
        iam.principal(),
        "profile msk, then role arn:aws:iam::1:role/mirror, then the default AWS credential chain"
    );
}

#[test]
fn the_java_client_keys_select_the_mechanism() {
    let props = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let base = [
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "AWS_MSK_IAM"),
        (
            "sasl.jaas.config",
            r#"software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="msk";"#,
        ),
        (
            "sasl.client.callback.handler.class",
            "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
        ),
    ];
    let security = Security::from_properties(&props(&base)).unwrap();
    let sasl = security.sasl.unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::AwsMskIam);
    assert!(matches!(sasl.credentials, SaslCredentials::AwsMskIam(_)));
    let mut other_handler = base;
    other_handler[3].1 = "com.example.Handler";
    let Err(Error::Config { key, message }) = Security::from_properties(&props(&other_handler)) else {
        panic!("a custom handler is refused")
    };
    assert_eq!(key, "sasl.client.callback.handler.class");
    assert!(message.contains("IAMClientCallbackHandler"), "{message}");
    let mut other_module = base;
    other_module[2].1 =
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";"#;
    let Err(Error::Config { key, message }) = Security::from_properties(&props(&other_module)) else {
        panic!("another login module is refused")
    };
    assert_eq!(key, "sasl.jaas.config");
    assert!(
        message.contains("software.amazon.msk.auth.iam.IAMLoginModule"),
        "{message}"
    );
}

#[test]
fn the_broker_answer_is_checked() {
    assert_eq!(
        read_server_response(br#"{"version":"2020_10_22","request-id":"r-1"}"#).unwrap(),
        "r-1"
    );
    for (answer, expected) in [
        (&b""[..], "empty"),
        (b"nope", "not a JSON object"),
        (br#"{"version":"2099_01_01"}"#, "2099_01_01"),
    ] {
        let error = read_server_response(answer).unwrap_err();
        assert!(error.contains(expected), "{error}");
    }
}

/// A request a fake endpoint received.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
    body: String,
}

type Handler = Arc<dyn Fn(&Received) -> (u16, String) + Send + Sync>;

/// An HTTP endpoint on a free loopback port: answers each request with `handler` and records it.
async fn fake_endpoint(handler: Handler) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (handler, log) = (handler.clone(), log.clone());
            tokio::spawn(async move {
                let mut data = Vec::new();
                let mut buffer = [0u8; 4096];
                let (head, body) = loop {
                    let read = socket.read(&mut buffer).await.unwrap();
                    data.extend_from_slice(&buffer[..read]);
                    let text = String::from_utf8_lossy(&data).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap())
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            break (head.to_owned(), body.to_owned());
                        }
                    }
                    assert!(read > 0, "the client closed mid-request");
                };
                let mut lines = head.lines();
                let mut first = lines.next().unwrap().split(' ');
                let request = Received {
                    method: first.next().unwrap().to_owned(),
                    path: first.next().unwrap().to_owned(),
                    headers: lines
                        .filter_map(|l| l.split_once(':'))
                        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                        .collect(),
                    body,
                };
                let (status, answer) = handler(&request);
                log.lock().unwrap().push(request);
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (url, received)
}

/// `yyyyMMddTHHmmssZ` as ISO 8601 (`yyyy-MM-ddTHH:mm:ssZ`).
fn iso8601_of(d: &str) -> String {
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &d[0..4],
        &d[4..6],
        &d[6..8],
        &d[9..11],
        &d[11..13],
        &d[13..15]
    )
}

fn iso8601(unix: i64) -> String {
    iso8601_of(AmzDate::from_unix(unix).full())
}

/// The moment of a payload's `x-amz-date`.
fn unix_of(amz_date: &str) -> i64 {
    sigv4::parse_iso8601(&iso8601_of(amz_date)).unwrap()
}

/// An instance metadata service that hands out credentials `ASIA<n>` expiring after `lifetime`
/// seconds, numbered per request.
async fn fake_imds(lifetime: i64) -> (String, Arc<Mutex<Vec<Received>>>) {
    let issued = Arc::new(Mutex::new(0));
    fake_endpoint(Arc::new(move |request: &Received| match (request.method.as_str(), request.path.as_str()) {
        ("PUT", "/latest/api/token") => {
            assert_eq!(request.headers["x-aws-ec2-metadata-token-ttl-seconds"], "21600");
            (200, "imds-session".into())
        }
        (_, path) if request.headers.get("x-aws-ec2-metadata-token").map(String::as_str) != Some("imds-session") => {
            (401, format!("no token for {path}"))
        }
        ("GET", "/latest/meta-data/iam/security-credentials/") => (200, "mirror-role\n".into()),
        ("GET", "/latest/meta-data/iam/security-credentials/mirror-role") => {
            let mut issued = issued.lock().unwrap();
            *issued += 1;
            (
                200,
                format!(
                    r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"ASIA{n}","SecretAccessKey":"secret{n}","Token":"token{n}","Expiration":"{}"}}"#,
                    iso8601(now_seconds() + lifetime),
                    n = *issued
                ),
            )
        }
        _ => (404, String::new()),
    }))
    .await
}

/// The only environment providers see in these tests: nothing reaches a real AWS address.
fn isolated(extra: &[(&str, &str)]) -> Environment {
    let mut vars = vec![
        ("HOME", "/nonexistent"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
    ];
    vars.extend_from_slice(extra);
    Environment::with(&vars)
}

#[tokio::test]
async fn instance_metadata_credentials_come_with_an_imdsv2_token() {
    let (url, received) = fake_imds(3600).await;
    let env = Environment::with(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url), ("HOME", "/nonexistent")]);
    let iam = msk_iam(&[], env).unwrap();
    let credentials = iam.credentials().await.unwrap();
    assert_eq!(credentials.key.id, "ASIA1");
    assert_eq!(credentials.key.session_token.unwrap().expose(), "token1");
    assert!(credentials.source.contains("mirror-role"), "{}", credentials.source);
    let expires = credentials.expires.unwrap() - now_seconds();
    assert!((3590..=3600).contains(&expires), "{expires}");
    // Held, not fetched again: they are far from expiring.
    assert_eq!(iam.credentials().await.unwrap().key.id, "ASIA1");
    let paths: Vec<String> = received.lock().unwrap().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/latest/api/token",
            "/latest/meta-data/iam/security-credentials/",
            "/latest/meta-data/iam/security-credentials/mirror-role"
        ]
    );
}

#[tokio::test]
async fn credentials_are_fetched_again_before_they_expire() {
    // Four minutes left: inside the five-minute refresh margin, so every use fetches anew.
    let (url, _) = fake_imds(240).await;
    let env = Environment::with(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url), ("HOME", "/nonexistent")]);
    let iam = msk_iam(&[], env).unwrap();
    assert_eq!(iam.credentials().await.unwrap().key.id, "ASIA1");
    assert_eq!(iam.credentials().await.unwrap().key.id, "ASIA2");
}

#[tokio::test]
async fn environment_variables_come_first() {
    let iam = msk_iam(
        &[],
        isolated(&[
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_SESSION_TOKEN", "t"),
        ]),
    )
    .unwrap();
    let credentials = iam.credentials().await.unwrap();
    assert_eq!((credentials.key.id.as_str(), credentials.expires), ("AKIDENV", None));
    assert_eq!(credentials.source, "environment variables");
}

/// A fake STS: answers AssumeRole and AssumeRoleWithWebIdentity with numbered credentials,
/// AccessDenied for the role `denied`.
async fn fake_sts() -> (String, Arc<Mutex<Vec<Received>>>) {
    let expiration = iso8601(now_seconds() + 3600);
    fake_endpoint(Arc::new(move |request: &Received| {
        let form: BTreeMap<String, String> = form_urlencoded::parse(request.body.as_bytes()).into_owned().collect();
        assert_eq!(form["Version"], "2011-06-15");
        if form["RoleArn"].ends_with("/denied") {
            return (
                403,
                "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not allowed &amp; logged</Message></Error></ErrorResponse>".into(),
            );
        }
        let action = &form["Action"];
        (
            200,
            format!(
                "<{action}Response><{action}Result><Credentials><AccessKeyId>ASIASTS</AccessKeyId>\
                 <SecretAccessKey>sts-secret</SecretAccessKey><SessionToken>sts-token</SessionToken>\
                 <Expiration>{expiration}</Expiration></Credentials></{action}Result></{action}Response>"
            ),
        )
    }))
    .await
}

#[tokio::test]
async fn web_identity_tokens_are_exchanged_at_sts() {
    let (sts, received) = fake_sts().await;
    let folder = std::env::temp_dir().join(format!("strait-irsa-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let token_file = folder.join("token");
    std::fs::write(&token_file, "eyJ.web.identity\n").unwrap();
    let iam = msk_iam(
        &[],
        isolated(&[
            ("AWS_ENDPOINT_URL_STS", &sts),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/irsa"),
            ("AWS_ROLE_SESSION_NAME", "pod-1"),
        ]),
    )
    .unwrap();
    let credentials = iam.credentials().await.unwrap();
    assert_eq!(credentials.key.id, "ASIASTS");
    assert_eq!(credentials.key.session_token.unwrap().expose(), "sts-token");
    assert!(credentials.source.contains("AssumeRoleWithWebIdentity"));
    let request = received.lock().unwrap()[0].clone();
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/"));
    assert!(
        !request.headers.contains_key("authorization"),
        "the web identity call is not signed"
    );
    let form: BTreeMap<String, String> = form_urlencoded::parse(request.body.as_bytes()).into_owned().collect();
    assert_eq!(form["Action"], "AssumeRoleWithWebIdentity");
    assert_eq!(form["RoleArn"], "arn:aws:iam::123456789012:role/irsa");
    assert_eq!(form["RoleSessionName"], "pod-1");
    assert_eq!(form["WebIdentityToken"], "eyJ.web.identity");
    std::fs::remove_dir_all(&folder).unwrap();
}

#[tokio::test]
async fn aws_role_arn_assumes_the_role_with_signed_base_credentials() {
    let (sts, received) = fake_sts().await;
    let iam = msk_iam(
        &options(&[
            ("awsRoleArn", "arn:aws:iam::123456789012:role/mirror"),
            ("awsRoleSessionName", "strait-mirror"),
            ("awsRoleExternalId", "ext-1"),
            ("awsStsRegion", "eu-west-1"),
            ("awsRoleAccessKeyId", "AKIDBASE"),
            ("awsRoleSecretAccessKey", "base-secret"),
        ]),
        isolated(&[("AWS_ENDPOINT_URL_STS", &sts)]),
    )
    .unwrap();
    let credentials = iam.credentials().await.unwrap();
    assert_eq!(credentials.key.id, "ASIASTS");
    let request = received.lock().unwrap()[0].clone();
    let authorization = &request.headers["authorization"];
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDBASE/")
            && authorization.contains("/eu-west-1/sts/aws4_request, SignedHeaders=content-type;host;x-amz-date, "),
        "{authorization}"
    );
    let form: BTreeMap<String, String> = form_urlencoded::parse(request.body.as_bytes()).into_owned().collect();
    assert_eq!(form["Action"], "AssumeRole");
    assert_eq!(form["RoleSessionName"], "strait-mirror");
    assert_eq!(form["ExternalId"], "ext-1");

    // A refusal names the role, STS's code and message, and what to check; nothing falls
    // through to providers the user did not ask for.
    let iam = msk_iam(
        &options(&[
            ("awsRoleArn", "arn:aws:iam::123456789012:role/denied"),
            ("awsRoleAccessKeyId", "AKIDBASE"),
            ("awsRoleSecretAccessKey", "base-secret"),
            ("awsAddDefaultProviders", "false"),
        ]),
        isolated(&[("AWS_ENDPOINT_URL_STS", &sts)]),
    )
    .unwrap();
    let error = iam.credentials().await.err().unwrap().to_string();
    assert!(
        error.contains("awsRoleArn arn:aws:iam::123456789012:role/denied")
            && error.contains("AccessDenied: not allowed & logged")
            && error.contains("trust policy"),
        "{error}"
    );
    assert!(!error.contains("base-secret"), "{error}");
}

#[tokio::test]
async fn profiles_are_read_from_the_shared_files() {
    let (sts, received) = fake_sts().await;
    let folder = std::env::temp_dir().join(format!("strait-profiles-{}", std::process::id()));
    std::fs::create_dir_all(folder.join(".aws")).unwrap();
    std::fs::write(
        folder.join(".aws/credentials"),
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = d\n\n[base]\naws_access_key_id=AKIDBASE\naws_secret_access_key=b\n",
    )
    .unwrap();
    std::fs::write(
        folder.join(".aws/config"),
        "[profile msk]\nrole_arn = arn:aws:iam::1:role/msk\nsource_profile = base\nregion = ap-south-1\n\n\
         [profile sso]\nsso_session = corp\n\n[profile mine]\nregion = eu-north-1\n",
    )
    .unwrap();
    let home = folder.to_str().unwrap();
    let env = |extra: &[(&str, &str)]| {
        let mut vars = vec![
            ("HOME", home),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_ENDPOINT_URL_STS", sts.as_str()),
        ];
        vars.extend_from_slice(extra);
        Environment::with(&vars)
    };
    // The default profile, from ~/.aws/credentials.
    let credentials = msk_iam(&[], env(&[])).unwrap().credentials().await.unwrap();
    assert_eq!(
        (credentials.key.id.as_str(), credentials.source.as_str()),
        ("AKIDDEFAULT", "profile `default`")
    );
    // awsProfileName with a role assumed from its source profile's keys.
    let credentials = msk_iam(&options(&[("awsProfileName", "msk")]), env(&[]))
        .unwrap()
        .credentials()
        .await
        .unwrap();
    assert_eq!(credentials.key.id, "ASIASTS");
    let authorization = received.lock().unwrap()[0].headers["authorization"].clone();
    assert!(
        authorization.contains("Credential=AKIDBASE/") && authorization.contains("/ap-south-1/sts/"),
        "{authorization}"
    );
    // AWS_PROFILE selects a profile of the default chain, and its region serves hosts without one.
    let iam = msk_iam(&[], env(&[("AWS_PROFILE", "mine")])).unwrap();
    assert_eq!(iam.region_for("kafka.internal").unwrap(), "eu-north-1");
    let error = iam.credentials().await.err().unwrap().to_string();
    assert!(error.contains("profile `mine` has no aws_access_key_id"), "{error}");
    // What Strait cannot do is named.
    let error = msk_iam(
        &options(&[("awsProfileName", "sso"), ("awsAddDefaultProviders", "false")]),
        env(&[]),
    )
    .unwrap()
    .credentials()
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(error.contains("IAM Identity Center"), "{error}");
    std::fs::remove_dir_all(&folder).unwrap();
}

#[tokio::test]
async fn container_credentials_carry_the_authorization_token() {
    let (url, received) = fake_endpoint(Arc::new(|request: &Received| {
        assert_eq!(
            request.headers.get("authorization").map(String::as_str),
            Some("pod-token")
        );
        (
            200,
            r#"{"AccessKeyId":"ASIAPOD","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"}"#.into(),
        )
    }))
    .await;
    let iam = msk_iam(
        &[],
        isolated(&[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &format!("{url}/v1/credentials")),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-token"),
        ]),
    )
    .unwrap();
    assert_eq!(iam.credentials().await.unwrap().key.id, "ASIAPOD");
    assert_eq!(received.lock().unwrap()[0].path, "/v1/credentials");
}

#[tokio::test]
async fn without_credentials_every_provider_says_why() {
    let iam = msk_iam(&options(&[("awsMaxRetries", "0")]), isolated(&[])).unwrap();
    let error = iam.credentials().await.err().unwrap().to_string();
    for expected in [
        "environment variables: AWS_ACCESS_KEY_ID is not set",
        "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set",
        "no profile `default`",
        "container credentials endpoint: neither",
        "instance metadata service: AWS_EC2_METADATA_DISABLED is true",
        "give this host AWS credentials",
    ] {
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

/// What the fake broker saw of one SASL exchange.
#[derive(Debug)]
struct Exchange {
    mechanism: String,
    payload: BTreeMap<String, String>,
}

fn respond<R: Encodable>(correlation_id: i32, api: ApiKey, version: i16, response: &R) -> Vec<u8> {
    let mut body = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut body, api.response_header_version(version))
        .unwrap();
    response.encode(&mut body, version).unwrap();
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.extend_from_slice(&body);
    frame
}

/// A broker that speaks ApiVersions, SaslHandshake and SaslAuthenticate on one connection: it
/// accepts every AWS_MSK_IAM payload for a session of `session_ms`, or refuses them all.
async fn fake_broker(session_ms: i64, refuse: bool) -> (String, tokio::sync::mpsc::UnboundedReceiver<Exchange>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (sender, exchanges) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut mechanism = String::new();
        let mut authentications = 0;
        loop {
            let Ok(size) = socket.read_i32().await else { return };
            let mut frame = vec![0u8; size as usize];
            socket.read_exact(&mut frame).await.unwrap();
            let mut frame = bytes::Bytes::from(frame);
            let api = ApiKey::try_from((&frame[..2]).get_i16()).unwrap();
            let version = (&frame[2..4]).get_i16();
            let header = RequestHeader::decode(&mut frame, api.request_header_version(version)).unwrap();
            let id = header.correlation_id;
            let answer = match api {
                ApiKey::ApiVersions => {
                    ApiVersionsRequest::decode(&mut frame, version).unwrap();
                    let keys = [
                        (ApiKey::ApiVersions, 3),
                        (ApiKey::SaslHandshake, 1),
                        (ApiKey::SaslAuthenticate, 2),
                    ];
                    let response = ApiVersionsResponse::default().with_api_keys(
                        keys.iter()
                            .map(|(key, max)| ApiVersion::default().with_api_key(*key as i16).with_max_version(*max))
                            .collect(),
                    );
                    respond(id, api, version, &response)
                }
                ApiKey::SaslHandshake => {
                    mechanism = SaslHandshakeRequest::decode(&mut frame, version)
                        .unwrap()
                        .mechanism
                        .to_string();
                    let response = SaslHandshakeResponse::default()
                        .with_mechanisms(vec![StrBytes::from_static_str("AWS_MSK_IAM")]);
                    respond(id, api, version, &response)
                }
                ApiKey::SaslAuthenticate => {
                    let request = SaslAuthenticateRequest::decode(&mut frame, version).unwrap();
                    authentications += 1;
                    let _ = sender.send(Exchange {
                        mechanism: mechanism.clone(),
                        payload: json(&request.auth_bytes),
                    });
                    let response = if refuse {
                        SaslAuthenticateResponse::default()
                            .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                            .with_error_message(Some(StrBytes::from_static_str("[abc-123]: Access denied")))
                    } else {
                        SaslAuthenticateResponse::default()
                            .with_auth_bytes(
                                format!(r#"{{"version":"2020_10_22","request-id":"req-{authentications}"}}"#).into(),
                            )
                            .with_session_lifetime_ms(session_ms)
                    };
                    respond(id, api, version, &response)
                }
                other => panic!("the fake broker got {other:?}"),
            };
            socket.write_all(&answer).await.unwrap();
        }
    });
    (address, exchanges)
}

use kafka_protocol::error::ResponseError;

async fn connect(address: &str, imds: &str) -> Result<BrokerConnection> {
    let iam = msk_iam(
        &[],
        Environment::with(&[
            ("HOME", "/nonexistent"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds),
            ("AWS_REGION", "eu-central-1"),
        ]),
    )
    .unwrap();
    let config = ConnectionConfig {
        security: Security {
            tls: None,
            sasl: Some(SaslConfig {
                mechanism: SaslMechanism::AwsMskIam,
                credentials: SaslCredentials::AwsMskIam(Arc::new(iam)),
            }),
        },
        ..ConnectionConfig::default()
    };
    BrokerConnection::connect(address, config).await
}

/// The payload's signature, recomputed from its own fields with the secret of `ASIA<n>`
/// (`secret<n>`, with `token<n>`).
fn check_signature(payload: &BTreeMap<String, String>) {
    let credential: Vec<&str> = payload["x-amz-credential"].split('/').collect();
    let n = credential[0].strip_prefix("ASIA").unwrap();
    assert_eq!(payload["x-amz-security-token"], format!("token{n}"));
    let secret = format!("secret{n}");
    let key = AccessKey {
        id: credential[0].to_owned(),
        secret: Secret::new(secret),
        session_token: payload.get("x-amz-security-token").map(Secret::new),
    };
    let unix = unix_of(&payload["x-amz-date"]);
    let expected = json(&super::payload(
        &key,
        &payload["host"],
        credential[2],
        &AmzDate::from_unix(unix),
        &payload["user-agent"],
    ));
    assert_eq!(&expected, payload);
}

#[tokio::test]
async fn a_connection_authenticates_and_reauthenticates_with_fresh_credentials() {
    // Credentials with four minutes left are fetched again at each use: the re-authentication
    // must sign with the second set.
    let (imds, _) = fake_imds(240).await;
    let (address, mut exchanges) = fake_broker(1500, false).await;
    let started = tokio::time::Instant::now();
    let connection = connect(&address, &imds).await.unwrap();
    let wait = std::time::Duration::from_secs(10);
    let first = tokio::time::timeout(wait, exchanges.recv()).await.unwrap().unwrap();
    assert_eq!(first.mechanism, "AWS_MSK_IAM");
    assert_eq!(first.payload["host"], "127.0.0.1");
    assert_eq!(first.payload["action"], "kafka-cluster:Connect");
    assert!(first.payload["x-amz-credential"].starts_with("ASIA1/"));
    assert!(first.payload["x-amz-credential"].ends_with("/eu-central-1/kafka-cluster/aws4_request"));
    check_signature(&first.payload);
    let second = tokio::time::timeout(wait, exchanges.recv()).await.unwrap().unwrap();
    let after = started.elapsed();
    // KIP-368: at 85 % to 95 % of the 1.5 s session.
    assert!(
        after >= std::time::Duration::from_millis(1275),
        "re-authenticated after {after:?}"
    );
    assert_eq!(second.mechanism, "AWS_MSK_IAM");
    assert_ne!(second.payload["x-amz-credential"], first.payload["x-amz-credential"]);
    assert_ne!(second.payload["x-amz-date"], first.payload["x-amz-date"]);
    check_signature(&second.payload);
    assert!(!connection.is_closed());
}

#[tokio::test]
async fn a_refused_payload_names_the_broker_and_what_to_check() {
    let (imds, _) = fake_imds(3600).await;
    let (address, _exchanges) = fake_broker(0, true).await;
    let error = connect(&address, &imds).await.err().unwrap().to_string();
    assert!(
        error.contains("SASL AWS_MSK_IAM authentication")
            && error.contains(&address)
            && error.contains("SASL_AUTHENTICATION_FAILED")
            && error.contains("[abc-123]: Access denied")
            && error.contains("kafka-cluster:Connect"),
        "{error}"
    );
}
