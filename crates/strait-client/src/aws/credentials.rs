//! AWS credentials, found where the AWS SDKs look for them: environment variables, the shared
//! profile files, a web identity token (EKS IRSA), STS AssumeRole, a container credentials
//! endpoint (ECS, EKS Pod Identity) and the EC2 instance metadata service (IMDSv2). Endpoints
//! can be moved the way the SDKs allow (`AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`,
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT`), which is how the tests point them at local fakes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::Value;

use super::sigv4::{self, AccessKey, AmzDate};
use crate::endpoint::Endpoint;
use crate::settings::Secret;
use crate::{Error, Result};

/// The STS API version of every request.
const STS_VERSION: &str = "2011-06-15";
/// The container credentials endpoint that `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` is under.
const CONTAINER_HOST: &str = "http://169.254.170.2";
/// The instance metadata service, unless `AWS_EC2_METADATA_SERVICE_ENDPOINT` says otherwise.
const IMDS_ENDPOINT: &str = "http://169.254.169.254";
const IMDS_IPV6_ENDPOINT: &str = "http://[fd00:ec2::254]";
/// How long an IMDSv2 session token lives (the SDKs' value).
const IMDS_TOKEN_TTL_SECONDS: &str = "21600";

/// A provider's answer: credentials, or why it has none here (not set up), as opposed to an
/// error (set up, and failing).
type Found = std::result::Result<Credentials, String>;

/// A boxed future, for the providers that resolve others (a role's base credentials, a
/// profile's `source_profile`).
type Boxed<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T>> + Send + 'a>>;

/// Credentials and where they came from.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub key: AccessKey,
    /// Seconds since the epoch when they stop working; `None` for long-term keys.
    pub expires: Option<i64>,
    /// Which provider gave them, for logs and errors.
    pub source: String,
}

/// The variables the providers read: the process's own, or a test's.
#[derive(Clone, Default)]
pub(crate) struct Environment {
    vars: HashMap<String, String>,
}

impl Environment {
    /// This process's `AWS_*` variables and `HOME`, read once.
    pub fn of_process() -> Environment {
        Environment {
            vars: std::env::vars()
                .filter(|(name, _)| name.starts_with("AWS_") || name == "HOME")
                .collect(),
        }
    }

    /// An environment with exactly `vars`.
    #[cfg(test)]
    pub fn with(vars: &[(&str, &str)]) -> Environment {
        Environment {
            vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    /// A variable that is set and not blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// `~/…` expanded with `HOME`.
    fn path(&self, path: &str) -> PathBuf {
        match (path.strip_prefix("~/"), self.get("HOME")) {
            (Some(rest), Some(home)) => Path::new(home).join(rest),
            _ => PathBuf::from(path),
        }
    }

    fn home_file(&self, variable: &str, default: &str) -> PathBuf {
        match self.get(variable) {
            Some(path) => self.path(path),
            None => self.path(default),
        }
    }
}

/// A credentials failure; `retriable` when the endpoint was down rather than refusing.
fn failed(message: impl Into<String>, hint: impl Into<String>, retriable: bool) -> Error {
    Error::AwsCredentials {
        message: message.into(),
        hint: hint.into(),
        retriable,
    }
}

/// One place credentials may come from.
pub(crate) enum Provider {
    /// Keys given in the configuration (`awsRoleAccessKeyId` …).
    Static(AccessKey),
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    Environment,
    /// `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` (EKS IRSA): STS
    /// AssumeRoleWithWebIdentity.
    WebIdentity,
    /// A profile of the shared files: `awsProfileName`, else `AWS_PROFILE`, else `default`.
    Profile(Option<String>),
    /// `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` or `…_FULL_URI` (ECS, EKS Pod Identity).
    Container,
    /// The EC2 instance metadata service, IMDSv2.
    InstanceMetadata,
    /// STS AssumeRole with credentials from `base` (`awsRoleArn`).
    AssumeRole(Box<AssumeRole>),
}

pub(crate) struct AssumeRole {
    pub role_arn: String,
    pub session_name: String,
    pub external_id: Option<String>,
    pub sts: Sts,
    pub base: Vec<Provider>,
}

impl Provider {
    /// The SDKs' default chain, in their order (Java's system properties have no
    /// counterpart here).
    pub fn default_chain() -> Vec<Provider> {
        vec![
            Provider::Environment,
            Provider::WebIdentity,
            Provider::Profile(None),
            Provider::Container,
            Provider::InstanceMetadata,
        ]
    }

    fn name(&self) -> String {
        match self {
            Provider::Static(_) => "awsRoleAccessKeyId".into(),
            Provider::Environment => "environment variables".into(),
            Provider::WebIdentity => "web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)".into(),
            Provider::Profile(Some(name)) => format!("profile `{name}`"),
            Provider::Profile(None) => "profile (AWS_PROFILE)".into(),
            Provider::Container => "container credentials endpoint".into(),
            Provider::InstanceMetadata => "instance metadata service".into(),
            Provider::AssumeRole(role) => format!("awsRoleArn {}", role.role_arn),
        }
    }

    /// The credentials of this provider; `Ok(None)` with a reason when it is not set up here.
    async fn resolve(&self, env: &Environment) -> Result<Found> {
        match self {
            Provider::Static(key) => Ok(Ok(Credentials {
                key: key.clone(),
                expires: None,
                source: self.name(),
            })),
            Provider::Environment => Ok(environment(env)),
            Provider::WebIdentity => {
                let (Some(token_file), Some(role_arn)) =
                    (env.get("AWS_WEB_IDENTITY_TOKEN_FILE"), env.get("AWS_ROLE_ARN"))
                else {
                    return Ok(Err(
                        "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set".into()
                    ));
                };
                let session_name = env
                    .get("AWS_ROLE_SESSION_NAME")
                    .map_or_else(default_session_name, str::to_owned);
                let sts = Sts::new(env, env.get("AWS_REGION").unwrap_or(GLOBAL), false)?;
                let token_file = env.path(token_file);
                sts.assume_role_with_web_identity(&token_file, role_arn, &session_name)
                    .await
                    .map(Ok)
            }
            Provider::Profile(name) => {
                let name = name.as_deref().or_else(|| env.get("AWS_PROFILE")).unwrap_or("default");
                profile(env, name, 0).await
            }
            Provider::Container => container(env).await,
            Provider::InstanceMetadata => instance_metadata(env).await,
            Provider::AssumeRole(role) => {
                let base = resolve_chain(&role.base, env).await?;
                role.sts
                    .assume_role(
                        &base.key,
                        &role.role_arn,
                        &role.session_name,
                        role.external_id.as_deref(),
                    )
                    .await
                    .map(Ok)
            }
        }
    }
}

/// A session name for a role assumed without one: the SDKs use a time stamp.
fn default_session_name() -> String {
    format!("strait-{}", super::now_seconds())
}

/// The first provider of `chain` that has credentials. When none has, the error says what each
/// one lacked or why it failed.
pub(crate) fn resolve_chain<'a>(chain: &'a [Provider], env: &'a Environment) -> Boxed<'a, Credentials> {
    // Boxed: AssumeRole resolves its base chain through here.
    Box::pin(async move {
        let mut reasons = Vec::new();
        let mut retriable = false;
        for provider in chain {
            match provider.resolve(env).await {
                Ok(Ok(credentials)) => return Ok(credentials),
                Ok(Err(reason)) => reasons.push(format!("{}: {reason}", provider.name())),
                Err(error) => {
                    retriable |= error.is_retriable();
                    reasons.push(format!("{}: {error}", provider.name()));
                }
            }
        }
        Err(failed(
            format!("no provider had credentials ({})", reasons.join("; ")),
            "give this host AWS credentials: an IAM role (EC2 instance profile, EKS IRSA or Pod Identity), \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile (awsProfileName in sasl.jaas.config, \
             AWS_PROFILE)",
            retriable,
        ))
    })
}

fn environment(env: &Environment) -> Found {
    match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Ok(Credentials {
            key: AccessKey {
                id: id.to_owned(),
                secret: Secret::new(secret),
                session_token: env.get("AWS_SESSION_TOKEN").map(Secret::new),
            },
            expires: None,
            source: "environment variables".into(),
        }),
        (Some(_), None) => Err("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into()),
        _ => Err("AWS_ACCESS_KEY_ID is not set".into()),
    }
}

/// Reads the INI sections of a shared file: `(section, key) -> value`. `config` names its
/// profiles `[profile name]` (and `[default]`); `credentials` names them `[name]`.
fn read_profiles(path: &Path, config: bool, into: &mut HashMap<String, HashMap<String, String>>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut section: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim();
            section = if !config {
                Some(name.to_owned())
            } else if name == "default" {
                Some("default".into())
            } else {
                name.strip_prefix("profile ").map(|n| n.trim().to_owned())
            };
            continue;
        }
        // Indented lines continue a nested property (`s3 =`), which credentials never use.
        if let (Some(section), Some((key, value))) = (&section, line.split_once('=')) {
            into.entry(section.clone())
                .or_default()
                .insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
}

/// The properties of profile `name`: the config file's, overridden by the credentials file's.
pub(crate) fn profile_properties(env: &Environment, name: &str) -> Option<HashMap<String, String>> {
    let mut config = HashMap::new();
    read_profiles(&env.home_file("AWS_CONFIG_FILE", "~/.aws/config"), true, &mut config);
    let mut credentials = HashMap::new();
    read_profiles(
        &env.home_file("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"),
        false,
        &mut credentials,
    );
    let mut merged = config.remove(name);
    if let Some(overrides) = credentials.remove(name) {
        merged.get_or_insert_with(HashMap::new).extend(overrides);
    }
    merged
}

/// How deep `source_profile` may chain (the SDKs refuse loops; a bound does the same).
const MAX_PROFILE_DEPTH: usize = 4;

fn profile<'a>(env: &'a Environment, name: &'a str, depth: usize) -> Boxed<'a, Found> {
    Box::pin(async move {
        let files = format!(
            "{} and {}",
            env.home_file("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
                .display(),
            env.home_file("AWS_CONFIG_FILE", "~/.aws/config").display()
        );
        let Some(properties) = profile_properties(env, name) else {
            return Ok(Err(format!("no profile `{name}` in {files}")));
        };
        let get = |key: &str| properties.get(key).map(String::as_str).filter(|v| !v.is_empty());
        let unsupported = |what: &str| {
            failed(
                format!("profile `{name}` uses {what}, which Strait does not support"),
                "give the profile aws_access_key_id and aws_secret_access_key, role_arn with source_profile, \
                 web_identity_token_file or credential_source, or use another provider",
                false,
            )
        };
        if let Some(role_arn) = get("role_arn") {
            let session_name = get("role_session_name").map_or_else(default_session_name, str::to_owned);
            let region = get("region").or_else(|| env.get("AWS_REGION")).unwrap_or(GLOBAL);
            let sts = Sts::new(env, region, false)?;
            if let Some(token_file) = get("web_identity_token_file") {
                let token_file = env.path(token_file);
                return sts
                    .assume_role_with_web_identity(&token_file, role_arn, &session_name)
                    .await
                    .map(Ok);
            }
            let base = match (get("source_profile"), get("credential_source")) {
                (Some(source), None) if depth < MAX_PROFILE_DEPTH => {
                    // A profile that names itself holds the keys for its own role.
                    let base = if source == name {
                        static_keys(name, &get)?
                    } else {
                        profile(env, source, depth + 1).await?
                    };
                    base.map_err(|reason| format!("its source_profile `{source}`: {reason}"))
                }
                (Some(_), None) => return Err(unsupported("source_profile chained too deeply or in a loop")),
                (None, Some("Environment")) => environment(env),
                (None, Some("Ec2InstanceMetadata")) => instance_metadata(env).await?,
                (None, Some("EcsContainer")) => container(env).await?,
                (None, Some(other)) => return Err(unsupported(&format!("credential_source {other}"))),
                _ => {
                    return Err(failed(
                        format!("profile `{name}` has role_arn without source_profile or credential_source"),
                        "add source_profile or credential_source to the profile",
                        false,
                    ))
                }
            };
            let base = match base {
                Ok(base) => base,
                Err(reason) => return Ok(Err(reason)),
            };
            return sts
                .assume_role(&base.key, role_arn, &session_name, get("external_id"))
                .await
                .map(Ok);
        }
        if get("credential_process").is_some() {
            return Err(unsupported("credential_process (an external program)"));
        }
        if get("sso_session").is_some() || get("sso_start_url").is_some() {
            return Err(unsupported(
                "IAM Identity Center (sso_*), whose tokens need a browser login",
            ));
        }
        static_keys(name, &get)
    })
}

fn static_keys<'a>(name: &str, get: &impl Fn(&str) -> Option<&'a str>) -> Result<Found> {
    match (get("aws_access_key_id"), get("aws_secret_access_key")) {
        (Some(id), Some(secret)) => Ok(Ok(Credentials {
            key: AccessKey {
                id: id.to_owned(),
                secret: Secret::new(secret),
                session_token: get("aws_session_token").map(Secret::new),
            },
            expires: None,
            source: format!("profile `{name}`"),
        })),
        _ => Ok(Err(format!(
            "profile `{name}` has no aws_access_key_id and aws_secret_access_key"
        ))),
    }
}

/// Credentials in the JSON of the instance metadata service and of container endpoints.
fn json_credentials(body: &[u8], source: &str) -> Result<Credentials> {
    let json: Value = serde_json::from_slice(body).map_err(|_| {
        failed(
            format!("{source} answered with something other than JSON"),
            "check that the endpoint is the credentials endpoint",
            false,
        )
    })?;
    let field = |name: &str| json.get(name).and_then(Value::as_str).filter(|v| !v.is_empty());
    if let Some(code) = field("Code").filter(|c| *c != "Success") {
        return Err(failed(
            format!(
                "{source} answered Code {code}: {}",
                field("Message").unwrap_or_default()
            ),
            "check the instance profile or task role",
            true,
        ));
    }
    let (Some(id), Some(secret)) = (field("AccessKeyId"), field("SecretAccessKey")) else {
        return Err(failed(
            format!("{source} answered without AccessKeyId and SecretAccessKey"),
            "check that the endpoint is the credentials endpoint",
            false,
        ));
    };
    let expires = match field("Expiration") {
        None => None,
        Some(text) => Some(sigv4::parse_iso8601(text).ok_or_else(|| {
            failed(
                format!("{source} answered an Expiration that is not an ISO 8601 UTC time"),
                "check that the endpoint is the credentials endpoint",
                false,
            )
        })?),
    };
    Ok(Credentials {
        key: AccessKey {
            id: id.to_owned(),
            secret: Secret::new(secret),
            session_token: field("Token").map(Secret::new),
        },
        expires,
        source: source.to_owned(),
    })
}

/// Small local endpoints answer fast or not at all (the SDKs wait one second).
fn local_endpoint() -> Endpoint {
    Endpoint {
        tls: None,
        connect_timeout: Duration::from_secs(1),
        read_timeout: Duration::from_secs(2),
    }
}

fn parse_url(text: &str, variable: &str) -> Result<http::Uri> {
    let url: http::Uri = text.parse().map_err(|_| {
        failed(
            format!("{variable} is not a URL"),
            format!("set {variable} to http(s)://host[:port]"),
            false,
        )
    })?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(failed(
            format!("{variable} must be an http or https URL with a host"),
            format!("set {variable} to http(s)://host[:port]"),
            false,
        ));
    }
    Ok(url)
}

async fn get_text(endpoint: &Endpoint, url: &http::Uri, headers: &[(&str, &str)], what: &str) -> Result<(u16, Bytes)> {
    let mut request = http::Request::get(url.path_and_query().map_or("/", |p| p.as_str()))
        .header(http::header::HOST, url.authority().map_or("", |a| a.as_str()));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::new()))
        .map_err(|e| failed(format!("{what}: cannot build the request: {e}"), "report this", false))?;
    endpoint.send(url, request).await.map_err(|f| {
        failed(
            format!("{what} at {url}: {}", f.message),
            "check that it is reachable from this host",
            f.retriable,
        )
    })
}

async fn container(env: &Environment) -> Result<Found> {
    let (url, variable) = match (
        env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
    ) {
        (Some(relative), _) => (
            format!("{CONTAINER_HOST}{relative}"),
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        ),
        (None, Some(full)) => (full.to_owned(), "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        (None, None) => {
            return Ok(Err(
                "neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set".into(),
            ))
        }
    };
    let url = parse_url(&url, variable)?;
    // EKS Pod Identity mounts a token file that it rotates: read it at every request.
    let token = match (
        env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
        env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    ) {
        (Some(file), _) => Some(
            std::fs::read_to_string(env.path(file))
                .map(|t| t.trim().to_owned())
                .map_err(|e| {
                    failed(
                        format!("cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {file}: {e}"),
                        "check the pod's service account token mount",
                        true,
                    )
                })?,
        ),
        (None, Some(token)) => Some(token.to_owned()),
        (None, None) => None,
    };
    let headers: Vec<(&str, &str)> = token.iter().map(|t| ("authorization", t.as_str())).collect();
    let (status, body) = get_text(&local_endpoint(), &url, &headers, "the container credentials endpoint").await?;
    if status != 200 {
        return Err(failed(
            format!("the container credentials endpoint {url} answered HTTP {status}"),
            "check the task role (ECS) or the pod identity association (EKS)",
            status >= 500 || status == 429,
        ));
    }
    json_credentials(&body, "container credentials endpoint").map(Ok)
}

async fn instance_metadata(env: &Environment) -> Result<Found> {
    if env
        .get("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Ok(Err("AWS_EC2_METADATA_DISABLED is true".into()));
    }
    let base = match env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        Some(endpoint) => endpoint.trim_end_matches('/').to_owned(),
        None if env
            .get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE")
            .is_some_and(|m| m.eq_ignore_ascii_case("IPv6")) =>
        {
            IMDS_IPV6_ENDPOINT.into()
        }
        None => IMDS_ENDPOINT.into(),
    };
    let endpoint = local_endpoint();
    let url = |path: &str| parse_url(&format!("{base}{path}"), "AWS_EC2_METADATA_SERVICE_ENDPOINT");
    // IMDSv2: a session token first (PUT), then the role's credentials with it.
    let token_url = url("/latest/api/token")?;
    let request = http::Request::put(token_url.path())
        .header(http::header::HOST, token_url.authority().map_or("", |a| a.as_str()))
        .header("x-aws-ec2-metadata-token-ttl-seconds", IMDS_TOKEN_TTL_SECONDS)
        .body(Full::new(Bytes::new()))
        .map_err(|e| failed(format!("cannot build the IMDS request: {e}"), "report this", false))?;
    let (status, token) = endpoint.send(&token_url, request).await.map_err(|f| {
        failed(
            format!("no IMDSv2 session token from {token_url}: {}", f.message),
            "outside EC2, set AWS_EC2_METADATA_DISABLED=true or give credentials another way",
            f.retriable,
        )
    })?;
    if status != 200 {
        return Err(failed(
            format!("the instance metadata service {base} answered HTTP {status} to the IMDSv2 token request"),
            "check the instance's metadata options (http-tokens, http-put-response-hop-limit ≥ 2 in containers)",
            status >= 500,
        ));
    }
    let token = String::from_utf8_lossy(&token).trim().to_owned();
    let headers = [("x-aws-ec2-metadata-token", token.as_str())];
    let roles_url = url("/latest/meta-data/iam/security-credentials/")?;
    let (status, roles) = get_text(&endpoint, &roles_url, &headers, "the instance metadata service").await?;
    let role = String::from_utf8_lossy(&roles)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    if status == 404 || (status == 200 && role.is_empty()) {
        return Err(failed(
            "the instance has no IAM role (instance profile)",
            "attach an instance profile with kafka-cluster permissions to the instance",
            false,
        ));
    }
    if status != 200 {
        return Err(failed(
            format!("the instance metadata service {base} answered HTTP {status} for the role name"),
            "try again later",
            status >= 500,
        ));
    }
    let role_url = url(&format!("/latest/meta-data/iam/security-credentials/{role}"))?;
    let (status, body) = get_text(&endpoint, &role_url, &headers, "the instance metadata service").await?;
    if status != 200 {
        return Err(failed(
            format!("the instance metadata service {base} answered HTTP {status} for role {role}"),
            "try again later",
            status >= 500,
        ));
    }
    json_credentials(&body, &format!("instance metadata service (role {role})")).map(Ok)
}

/// `aws-global`: the STS endpoint without a region, signed for `us-east-1`.
pub(crate) const GLOBAL: &str = "aws-global";

/// An STS endpoint.
pub(crate) struct Sts {
    url: http::Uri,
    /// The region requests are signed for.
    region: String,
    endpoint: Endpoint,
}

impl Sts {
    /// STS for `region` (`aws-global` for the global endpoint), FIPS if asked, unless
    /// `AWS_ENDPOINT_URL_STS` or `AWS_ENDPOINT_URL` names another endpoint.
    pub fn new(env: &Environment, region: &str, fips: bool) -> Result<Sts> {
        let signing_region = if region == GLOBAL { "us-east-1" } else { region };
        let (url, variable) = match (env.get("AWS_ENDPOINT_URL_STS"), env.get("AWS_ENDPOINT_URL")) {
            (Some(url), _) => (url.to_owned(), "AWS_ENDPOINT_URL_STS"),
            (None, Some(url)) => (url.to_owned(), "AWS_ENDPOINT_URL"),
            (None, None) => {
                let suffix = if region.starts_with("cn-") {
                    "amazonaws.com.cn"
                } else {
                    "amazonaws.com"
                };
                let url = match (fips, region == GLOBAL) {
                    (true, _) => format!("https://sts-fips.{signing_region}.{suffix}"),
                    (false, true) => format!("https://sts.{suffix}"),
                    (false, false) => format!("https://sts.{region}.{suffix}"),
                };
                (url, "awsStsRegion")
            }
        };
        Ok(Sts {
            url: parse_url(&url, variable)?,
            region: signing_region.to_owned(),
            endpoint: Endpoint {
                tls: None,
                connect_timeout: Duration::from_secs(5),
                read_timeout: Duration::from_secs(10),
            },
        })
    }

    /// One STS query-API call: the form `parameters`, signed with `key` unless `None` (the
    /// web identity call carries its own proof). Returns the answer's XML.
    async fn call(&self, parameters: &[(&str, &str)], key: Option<&AccessKey>) -> Result<String> {
        let action = parameters[0].1;
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(parameters.iter().copied().chain([("Version", STS_VERSION)]))
            .finish();
        let authority = self.url.authority().map_or("", |a| a.as_str());
        let mut request = http::Request::post(self.url.path_and_query().map_or("/", |p| p.as_str()));
        match key {
            Some(key) => {
                let date = AmzDate::from_unix(super::now_seconds());
                for (name, value) in sigv4::sign_form_post(key, authority, &body, &self.region, "sts", &date) {
                    request = request.header(name, value);
                }
            }
            None => {
                request = request
                    .header(http::header::HOST, authority)
                    .header(http::header::CONTENT_TYPE, sigv4::FORM_CONTENT_TYPE);
            }
        }
        let request = request.body(Full::new(Bytes::from(body))).map_err(|e| {
            failed(
                format!("STS {action}: cannot build the request: {e}"),
                "report this",
                false,
            )
        })?;
        let (status, answer) = self.endpoint.send(&self.url, request).await.map_err(|f| {
            failed(
                format!("STS {action} at {}: {}", self.url, f.message),
                "check that STS is reachable from this host (awsStsRegion, AWS_ENDPOINT_URL_STS)",
                f.retriable,
            )
        })?;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        if status != 200 {
            let code = xml_text(&answer, "Code").unwrap_or_default();
            let message = xml_text(&answer, "Message").unwrap_or_default();
            let retriable = status >= 500 || matches!(code.as_str(), "Throttling" | "IDPCommunicationError");
            return Err(failed(
                format!("STS {action} at {} answered HTTP {status} {code}: {message}", self.url),
                match code.as_str() {
                    "AccessDenied" => "check the role's trust policy: it must let this identity assume it",
                    "InvalidIdentityToken" | "ExpiredTokenException" => {
                        "check the web identity token and the role's OIDC provider"
                    }
                    _ => "check the role ARN and the identity's permissions",
                },
                retriable,
            ));
        }
        Ok(answer)
    }

    fn credentials_of(&self, answer: &str, source: String) -> Result<Credentials> {
        let field = |name: &str| xml_text(answer, name).filter(|v| !v.is_empty());
        let (Some(id), Some(secret), Some(token), Some(expiration)) = (
            field("AccessKeyId"),
            field("SecretAccessKey"),
            field("SessionToken"),
            field("Expiration"),
        ) else {
            return Err(failed(
                format!("STS at {} answered without complete Credentials", self.url),
                "check that the endpoint is STS",
                false,
            ));
        };
        let expires = sigv4::parse_iso8601(&expiration).ok_or_else(|| {
            failed(
                format!(
                    "STS at {} answered an Expiration that is not an ISO 8601 UTC time",
                    self.url
                ),
                "check that the endpoint is STS",
                false,
            )
        })?;
        Ok(Credentials {
            key: AccessKey {
                id,
                secret: Secret::new(secret),
                session_token: Some(Secret::new(token)),
            },
            expires: Some(expires),
            source,
        })
    }

    pub async fn assume_role(
        &self,
        base: &AccessKey,
        role_arn: &str,
        session_name: &str,
        external_id: Option<&str>,
    ) -> Result<Credentials> {
        let mut parameters = vec![
            ("Action", "AssumeRole"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session_name),
        ];
        if let Some(external_id) = external_id {
            parameters.push(("ExternalId", external_id));
        }
        let answer = self.call(&parameters, Some(base)).await?;
        self.credentials_of(&answer, format!("role {role_arn} (STS AssumeRole)"))
    }

    pub async fn assume_role_with_web_identity(
        &self,
        token_file: &Path,
        role_arn: &str,
        session_name: &str,
    ) -> Result<Credentials> {
        // EKS rotates the token in place: read it at every call.
        let token = std::fs::read_to_string(token_file).map_err(|e| {
            failed(
                format!("cannot read the web identity token file {}: {e}", token_file.display()),
                "check the pod's service account token mount (AWS_WEB_IDENTITY_TOKEN_FILE)",
                true,
            )
        })?;
        let answer = self
            .call(
                &[
                    ("Action", "AssumeRoleWithWebIdentity"),
                    ("RoleArn", role_arn),
                    ("RoleSessionName", session_name),
                    ("WebIdentityToken", token.trim()),
                ],
                None,
            )
            .await?;
        self.credentials_of(&answer, format!("role {role_arn} (STS AssumeRoleWithWebIdentity)"))
    }

    /// The ARN the credentials act as (`awsDebugCreds`).
    pub async fn caller_identity(&self, key: &AccessKey) -> Result<String> {
        let answer = self.call(&[("Action", "GetCallerIdentity")], Some(key)).await?;
        Ok(xml_text(&answer, "Arn").unwrap_or_default())
    }
}

/// The text of the first `<tag>…</tag>` in `xml`, entities decoded. STS answers are flat
/// enough that this is all the XML reading needed.
fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&format!("</{tag}>"))?;
    Some(
        xml[start..end]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}
