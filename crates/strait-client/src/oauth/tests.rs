use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::security::{SaslCredentials, Security};

const HANDLER: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler";

fn security(pairs: &[(&str, &str)]) -> Result<Security> {
    let mut props: BTreeMap<String, String> = [
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "OAUTHBEARER"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    props.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Security::from_properties(&props)
}

fn oauth(pairs: &[(&str, &str)]) -> Arc<OAuthBearer> {
    match security(pairs).unwrap().sasl.unwrap().credentials {
        SaslCredentials::OAuthBearer(oauth) => oauth,
        other => panic!("{other:?}"),
    }
}

fn config_error_of(pairs: &[(&str, &str)]) -> (String, String) {
    match security(pairs) {
        Err(Error::Config { key, message }) => (key, message),
        other => panic!("expected a config error, got {other:?}"),
    }
}

fn jaas(options: &str) -> String {
    format!("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {options};")
}

fn jwt(claims: &str) -> String {
    format!(
        "{}.{}.c2ln",
        BASE64URL.encode(br#"{"alg":"ES256"}"#),
        BASE64URL.encode(claims)
    )
}

#[test]
fn the_refresh_window_follows_kafkas_rules() {
    let window = RefreshWindow {
        factor: 0.8,
        jitter: 0.05,
        min_period_ms: 60_000,
        buffer_ms: 300_000,
    };
    let hour = 3_600_000;
    // An hour-long token issued now: at 80 % to 85 % of its life.
    assert_eq!(window.refresh_time(0, Some(0), hour, 0.0), 2_880_000);
    assert_eq!(window.refresh_time(0, Some(0), hour, 1.0), 3_060_000);
    // Never inside the last 5 minutes.
    let late = RefreshWindow { factor: 1.0, ..window };
    assert_eq!(late.refresh_time(0, Some(0), hour, 0.0), hour - 300_000);
    // Never sooner than a minute from now (the token was issued long ago).
    assert_eq!(window.refresh_time(2_900_000, Some(0), 4 * hour, 0.0), 11_520_000);
    assert_eq!(window.refresh_time(3_000_000, Some(0), 3_400_000, 0.0), 3_060_000);
    // Too short-lived for the bounds: at the share of what is left.
    assert_eq!(window.refresh_time(0, Some(0), 10_000, 0.0), 8_000);
    assert_eq!(window.refresh_time(5_000, None, 15_000, 0.0), 13_000);
}

#[test]
fn tokens_are_read_for_their_principal_and_lifetime() {
    let claims = read_jwt(&jwt(r#"{"sub":"mirror","exp":1700000100.5,"iat":1700000000}"#), "sub").unwrap();
    assert_eq!(claims.principal, "mirror");
    assert_eq!(claims.expires_ms, 1_700_000_100_500);
    assert_eq!(claims.issued_ms, Some(1_700_000_000_000));
    let custom = read_jwt(&jwt(r#"{"client":"m2","exp":1}"#), "client").unwrap();
    assert_eq!((custom.principal.as_str(), custom.issued_ms), ("m2", None));
    for (token, expected) in [
        ("abc".to_owned(), "3 parts"),
        ("a.!!.c".to_owned(), "not base64url"),
        (jwt("[1]"), "not a JSON object"),
        (jwt(r#"{"sub":"m"}"#), "no `exp`"),
        (jwt(r#"{"sub":"m","exp":"soon"}"#), "not a number"),
        (jwt(r#"{"exp":1}"#), "no `sub`"),
        (jwt(r#"{"sub":" ","exp":1}"#), "non-empty string"),
    ] {
        let error = read_jwt(&token, "sub").err().unwrap();
        assert!(error.contains(expected), "{token}: {error}");
    }
}

#[test]
fn the_initial_response_carries_the_token_and_the_extensions() {
    let oauth = oauth(&[(
        "sasl.jaas.config",
        &jaas(
            r#"unsecuredLoginStringClaim_sub="dev" unsecuredLoginExtension_traceId="t1" unsecuredLoginExtension_logicalCluster="lkc-1""#,
        ),
    )]);
    let token = Token {
        value: Secret::new("eyJ.x.y"),
        principal: "dev".into(),
        expires_ms: 0,
        refresh_ms: 0,
    };
    assert_eq!(
        oauth.initial_response(&token),
        b"n,,\x01auth=Bearer eyJ.x.y\x01traceId=t1\x01logicalCluster=lkc-1\x01\x01"
    );
}

#[tokio::test]
async fn the_unsecured_handler_makes_an_unsigned_token() {
    let oauth = oauth(&[(
        "sasl.jaas.config",
        &jaas(
            r#"unsecuredLoginStringClaim_sub="dev" unsecuredLoginListClaim_scope=",read,write" unsecuredLoginNumberClaim_level="3" unsecuredLoginLifetimeSeconds="120""#,
        ),
    )]);
    assert_eq!(oauth.principal(), "dev");
    let before = now_ms();
    let token = oauth.token().await.unwrap();
    let parts: Vec<&str> = token.value.expose().split('.').collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(BASE64URL.decode(parts[0]).unwrap(), br#"{"alg":"none"}"#);
    assert!(parts[2].is_empty());
    let claims: Value = serde_json::from_slice(&BASE64URL.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["scope"], serde_json::json!(["read", "write"]));
    assert_eq!(claims["level"], 3.0);
    assert_eq!(token.principal, "dev");
    let lifetime = token.expires_ms - before;
    assert!((119_000..=121_000).contains(&lifetime), "{lifetime}");
    // A second connection gets the same token: it is not yet time to refresh it.
    assert_eq!(oauth.token().await.unwrap().value, token.value);
}

#[test]
fn settings_are_checked_with_the_key_and_what_to_do() {
    let client = jaas(r#"clientId="mirror" clientSecret="s3cret-value""#);
    let no_secret = jaas(r#"clientId="mirror""#);
    let auth_extension = jaas(r#"unsecuredLoginStringClaim_sub="dev" unsecuredLoginExtension_auth="x""#);
    // (settings, the key the error names, what its message says)
    type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec![("sasl.jaas.config", &client)],
            "sasl.jaas.config",
            "unsecuredLoginStringClaim_sub",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
            ],
            "sasl.oauthbearer.token.endpoint.url",
            "sasl.login.callback.handler.class",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.login.callback.handler.class", HANDLER),
            ],
            "sasl.oauthbearer.token.endpoint.url",
            "is required",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.login.callback.handler.class", "com.example.MyHandler"),
            ],
            "sasl.login.callback.handler.class",
            "custom Java classes",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.login.callback.handler.class", HANDLER),
                ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
                (
                    "sasl.oauthbearer.jwt.retriever.class",
                    "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever",
                ),
            ],
            "sasl.oauthbearer.jwt.retriever.class",
            "client-credentials",
        ),
        (
            vec![
                ("sasl.jaas.config", &no_secret),
                ("sasl.login.callback.handler.class", HANDLER),
                ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
            ],
            "sasl.oauthbearer.client.credentials.client.secret",
            "`clientSecret` option",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.login.callback.handler.class", HANDLER),
                ("sasl.oauthbearer.token.endpoint.url", "ftp://idp/token"),
            ],
            "sasl.oauthbearer.token.endpoint.url",
            "https:, http: or file:",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.login.callback.handler.class", HANDLER),
                ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
                ("sasl.login.refresh.window.factor", "0.3"),
            ],
            "sasl.login.refresh.window.factor",
            "from 0.5 to 1",
        ),
        (
            vec![("sasl.jaas.config", &auth_extension)],
            "sasl.jaas.config",
            "not `auth`",
        ),
        (
            vec![(
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";"#,
            )],
            "sasl.jaas.config",
            "OAuthBearerLoginModule",
        ),
        (
            vec![
                ("sasl.jaas.config", &client),
                ("sasl.login.callback.handler.class", HANDLER),
                ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
                ("sasl.login.class", "com.example.Login"),
            ],
            "sasl.login.class",
            "custom Java classes",
        ),
    ];
    for (pairs, key, expected) in cases {
        let (found, message) = config_error_of(&pairs);
        assert_eq!(found, key, "{pairs:?}: {message}");
        assert!(message.contains(expected), "{pairs:?}: {message}");
        assert!(!message.contains("s3cret-value"), "{message}");
    }
}

#[test]
fn client_credentials_come_from_keys_or_the_login_module() {
    let oauth = oauth(&[
        ("sasl.jaas.config", &jaas(r#"clientId="from-jaas" clientSecret="x""#)),
        (
            "sasl.login.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
        ),
        ("sasl.oauthbearer.token.endpoint.url", "http://127.0.0.1:1/token"),
        ("sasl.oauthbearer.client.credentials.client.id", "from-key"),
    ]);
    assert_eq!(oauth.principal(), "from-key");
    let debug = format!("{oauth:?}");
    assert!(debug.contains("from-key") && !debug.contains("\"x\""), "{debug}");
}

/// A token endpoint for one request: answers `status` with `body` and returns what it got.
async fn endpoint_once(status: u16, body: &'static str) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/oauth2/token?tenant=t", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let read = socket.read(&mut buffer).await.unwrap();
            request.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&request).to_string();
            if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if rest.len() >= length || read == 0 {
                    break;
                }
            }
        }
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        String::from_utf8(request).unwrap()
    });
    (url, server)
}

fn client_credentials(url: &str, extra: &[(&str, &str)]) -> Arc<OAuthBearer> {
    let mut pairs = vec![
        (
            "sasl.jaas.config",
            jaas(r#"clientId="mirror app" clientSecret="s3cret:&" scope="kafka mirror""#),
        ),
        ("sasl.login.callback.handler.class", HANDLER.to_owned()),
        ("sasl.oauthbearer.token.endpoint.url", url.to_owned()),
        ("sasl.login.retry.backoff.max.ms", "0".to_owned()),
    ];
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    oauth(&pairs)
}

#[tokio::test]
async fn the_client_credentials_grant_posts_as_kafka_does() {
    const TOKEN: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJtaXJyb3IgYXBwIiwiZXhwIjo0MTAyNDQ0ODAwfQ.c2ln";
    let (url, server) = endpoint_once(200, r#"{"access_token":"eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJtaXJyb3IgYXBwIiwiZXhwIjo0MTAyNDQ0ODAwfQ.c2ln","token_type":"Bearer"}"#).await;
    let oauth = client_credentials(&url, &[("sasl.oauthbearer.header.urlencode", "true")]);
    let token = oauth.token().await.unwrap();
    assert_eq!(token.value.expose(), TOKEN);
    assert_eq!(token.principal, "mirror app");
    let request = server.await.unwrap();
    assert!(
        request.starts_with("POST /oauth2/token?tenant=t HTTP/1.1\r\n"),
        "{request}"
    );
    let basic = BASE64.encode("mirror+app:s3cret%3A%26");
    assert!(
        request.contains(&format!("authorization: Basic {basic}\r\n")),
        "{request}"
    );
    assert!(
        request.contains("content-type: application/x-www-form-urlencoded\r\n"),
        "{request}"
    );
    assert!(
        request.ends_with("\r\n\r\ngrant_type=client_credentials&scope=kafka+mirror"),
        "{request}"
    );
}

#[tokio::test]
async fn a_refused_secret_is_a_clear_error_that_is_not_retried() {
    let (url, server) = endpoint_once(
        401,
        r#"{"error":"invalid_client","error_description":"bad secret s3cret:&"}"#,
    )
    .await;
    let error = client_credentials(&url, &[("sasl.login.retry.backoff.max.ms", "60000")])
        .token()
        .await
        .err()
        .unwrap();
    server.await.unwrap();
    assert!(!error.is_retriable(), "{error}");
    let text = error.to_string();
    assert!(
        text.contains(&url) && text.contains("HTTP 401: invalid_client"),
        "{text}"
    );
    assert!(text.contains("clientSecret"), "{text}");

    let (url, _server) = endpoint_once(200, r#"{"token_type":"Bearer"}"#).await;
    let text = client_credentials(&url, &[]).token().await.err().unwrap().to_string();
    assert!(text.contains("without an access_token"), "{text}");

    // Nothing listens: retriable, and retried no longer than sasl.login.retry.backoff.max.ms.
    let (url, server) = endpoint_once(500, "{}").await;
    server.abort();
    let _ = server.await;
    let error = client_credentials(&url, &[]).token().await.err().unwrap();
    assert!(error.is_retriable(), "{error}");
    assert!(error.to_string().contains("cannot connect"), "{error}");
}

#[tokio::test]
async fn a_token_file_is_read_when_the_url_says_file() {
    let path = std::env::temp_dir().join(format!("strait-token-{}", std::process::id()));
    std::fs::write(&path, format!("{}\n", jwt(r#"{"sub":"filed","exp":4102444800}"#))).unwrap();
    let oauth = oauth(&[
        ("sasl.jaas.config", &jaas("")),
        ("sasl.login.callback.handler.class", HANDLER),
        (
            "sasl.oauthbearer.token.endpoint.url",
            &format!("file://{}", path.display()),
        ),
    ]);
    assert_eq!(oauth.token().await.unwrap().principal, "filed");
    std::fs::remove_file(&path).unwrap();
}
