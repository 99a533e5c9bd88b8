//! SASL `AWS_MSK_IAM`, as AWS's `aws-msk-iam-auth` library speaks it to Amazon MSK: the client
//! sends one JSON payload, a SigV4 presign of `GET https://<broker host>/?Action=
//! kafka-cluster:Connect` for the service `kafka-cluster`, and the broker answers with its
//! version and a request id. Each connection and each re-authentication (KIP-368) signs a
//! fresh payload; the credentials (`credentials`) are shared by every connection of one
//! configuration and fetched again before they expire.
//!
//! - `sigv4`: the signature and its time formats, no I/O;
//! - `credentials`: the providers, in the order of `aws-msk-iam-auth`'s `MSKCredentialProvider`.

mod credentials;
mod sigv4;
#[cfg(test)]
mod tests;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::backoff::Backoff;
use crate::settings::{config_error, Secret};
use crate::{Error, Result};
pub(crate) use credentials::Environment;
use credentials::{profile_properties, resolve_chain, AssumeRole, Credentials, Provider, Sts, GLOBAL};
use sigv4::{AccessKey, AmzDate};

/// `aws-msk-iam-auth`'s login module, the one `sasl.jaas.config` must name.
pub(crate) const LOGIN_MODULE: &str = "IAMLoginModule";
/// Its client callback handler, which `sasl.client.callback.handler.class` names.
pub(crate) const CALLBACK_HANDLER: &str = "software.amazon.msk.auth.iam.IAMClientCallbackHandler";

/// The payload format both sides speak.
const VERSION: &str = "2020_10_22";
/// The signing service of MSK.
const SERVICE: &str = "kafka-cluster";
/// What the payload asks to do.
const ACTION: &str = "kafka-cluster:Connect";
/// How long a payload is valid: `aws-msk-iam-auth` signs for 15 minutes.
const EXPIRES_SECONDS: u32 = 900;
/// Temporary credentials are fetched again this long before they expire, as the AWS SDKs'
/// caches do, so that a re-authentication never signs with credentials about to lapse.
const REFRESH_BEFORE_SECONDS: i64 = 300;
/// The first wait of `awsMaxRetries` (the library's base delay).
const RETRY_BASE: Duration = Duration::from_millis(500);

pub(crate) fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `AWS_MSK_IAM` credentials: where they come from and the ones held now. Shared (in an
/// `Arc`) by every connection made with one configuration.
pub struct MskIam {
    chain: Vec<Provider>,
    env: Environment,
    /// `awsMaxRetries` and `awsMaxBackOffTimeMs`: retries of the whole chain on I/O errors.
    max_retries: u32,
    max_backoff: Duration,
    /// `awsDebugCreds`: log the identity the credentials act as.
    debug_creds: Option<Sts>,
    /// What the configuration names, for messages: a profile, a role, or the default chain.
    description: String,
    current: tokio::sync::Mutex<Option<Credentials>>,
}

impl std::fmt::Debug for MskIam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MskIam")
            .field("credentials", &self.description)
            .finish()
    }
}

impl MskIam {
    /// Who authenticates, for messages: the configured profile or role, or the default chain.
    pub(crate) fn principal(&self) -> String {
        self.description.clone()
    }

    /// The credentials to sign with now: the ones held, unless they expire within
    /// [`REFRESH_BEFORE_SECONDS`]; then new ones (and if getting them fails, the old ones while
    /// they still work).
    pub(crate) async fn credentials(&self) -> Result<Credentials> {
        let mut current = self.current.lock().await;
        let now = now_seconds();
        if let Some(held) = current
            .as_ref()
            .filter(|c| c.expires.is_none_or(|e| now < e - REFRESH_BEFORE_SECONDS))
        {
            return Ok(held.clone());
        }
        match self.resolve().await {
            Ok(fresh) => {
                tracing::debug!(source = %fresh.source, access_key_id = %fresh.key.id, expires = ?fresh.expires, "fetched AWS credentials");
                if let Some(sts) = &self.debug_creds {
                    match sts.caller_identity(&fresh.key).await {
                        Ok(arn) => tracing::info!(source = %fresh.source, %arn, "AWS_MSK_IAM authenticates as"),
                        Err(error) => tracing::warn!(%error, "awsDebugCreds: STS GetCallerIdentity failed"),
                    }
                }
                *current = Some(fresh.clone());
                Ok(fresh)
            }
            Err(error) => match current
                .as_ref()
                .filter(|c| c.expires.is_some_and(|e| now_seconds() < e))
            {
                Some(held) => {
                    tracing::warn!(%error, "refreshing the AWS credentials failed; the current ones are used until they expire");
                    Ok(held.clone())
                }
                None => Err(error),
            },
        }
    }

    /// The chain, tried again on I/O errors (`awsMaxRetries`, full jitter up to
    /// `awsMaxBackOffTimeMs`).
    async fn resolve(&self) -> Result<Credentials> {
        let mut backoff = Backoff::new(RETRY_BASE, self.max_backoff);
        let mut retries = 0;
        loop {
            match resolve_chain(&self.chain, &self.env).await {
                Ok(credentials) => return Ok(credentials),
                Err(error) if error.is_retriable() && retries < self.max_retries => {
                    retries += 1;
                    let delay = backoff.next_delay().mul_f64(crate::oauth::random_fraction());
                    tracing::debug!(%error, ?delay, "retrying the AWS credential providers");
                    tokio::time::sleep(delay).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The region a broker's signature is for: the AWS region named in its host name (MSK's
    /// brokers are `b-1.<cluster>.<id>.c2.kafka.<region>.amazonaws.com`), else `AWS_REGION`,
    /// else the profile's `region`, as `aws-msk-iam-auth` falls back to the SDK's region chain.
    pub(crate) fn region_for(&self, host: &str) -> Result<String> {
        if let Some(region) = region_in_host(host) {
            return Ok(region.to_owned());
        }
        if let Some(region) = self.env.get("AWS_REGION") {
            return Ok(region.to_owned());
        }
        let profile = self.env.get("AWS_PROFILE").unwrap_or("default");
        if let Some(region) = profile_properties(&self.env, profile).and_then(|p| p.get("region").cloned()) {
            return Ok(region);
        }
        Err(Error::AwsCredentials {
            message: format!(
                "the broker host {host} names no AWS region, and neither AWS_REGION nor profile `{profile}` sets one"
            ),
            hint: "set AWS_REGION to the MSK cluster's region, or connect with the brokers' MSK host names".into(),
            retriable: false,
        })
    }

    /// The client's one SASL message for the broker at `host` (without the port), signed now.
    pub(crate) async fn initial_response(&self, host: &str) -> Result<(Vec<u8>, Credentials)> {
        let region = self.region_for(host)?;
        let credentials = self.credentials().await?;
        let payload = payload(
            &credentials.key,
            host,
            &region,
            &AmzDate::from_unix(now_seconds()),
            &user_agent(),
        );
        Ok((payload, credentials))
    }
}

/// Strait's `user-agent` in the payload; MSK logs it.
fn user_agent() -> String {
    format!("strait/{}", env!("CARGO_PKG_VERSION"))
}

/// The first AWS region id among the labels of `host` (`us-east-1`, `eu-central-2`,
/// `us-gov-west-1`, `cn-north-1`, …).
fn region_in_host(host: &str) -> Option<&str> {
    const AREAS: &[&str] = &["us", "eu", "ap", "sa", "ca", "me", "af", "il", "mx", "cn", "eusc"];
    const DIRECTIONS: &[&str] = &[
        "east",
        "west",
        "north",
        "south",
        "central",
        "northeast",
        "northwest",
        "southeast",
        "southwest",
    ];
    host.split('.').find(|label| {
        let parts: Vec<&str> = label.split('-').collect();
        let [area, middle @ .., direction, number] = parts.as_slice() else {
            return false;
        };
        AREAS.contains(area)
            && middle.len() <= 1
            && middle
                .iter()
                .all(|m| matches!(*m, "gov" | "iso" | "isob" | "isof" | "de"))
            && DIRECTIONS.contains(direction)
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The `AWS_MSK_IAM` payload: a flat JSON object of the presigned request's parameters in lower
/// case, the host, the version and the user agent (`AWS4SignedPayloadGenerator`).
pub(crate) fn payload(key: &AccessKey, host: &str, region: &str, date: &AmzDate, user_agent: &str) -> Vec<u8> {
    let query = sigv4::presign_get(key, host, &[("Action", ACTION)], region, SERVICE, date, EXPIRES_SECONDS);
    let mut json = Map::new();
    json.insert("version".into(), VERSION.into());
    json.insert("host".into(), host.into());
    json.insert("user-agent".into(), user_agent.into());
    for (name, value) in query {
        json.insert(name.to_ascii_lowercase(), Value::String(value));
    }
    Value::Object(json).to_string().into_bytes()
}

/// Checks the broker's answer: `{"version":"2020_10_22","request-id":"…"}`. Returns the
/// request id, which AWS support asks for.
pub(crate) fn read_server_response(response: &[u8]) -> std::result::Result<String, String> {
    if response.is_empty() {
        return Err("the broker's answer is empty".into());
    }
    let json: Map<String, Value> =
        serde_json::from_slice(response).map_err(|_| "the broker's answer is not a JSON object".to_string())?;
    match json.get("version").and_then(Value::as_str) {
        Some(VERSION) => Ok(json
            .get("request-id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()),
        other => Err(format!(
            "the broker answered payload version {other:?}; Strait speaks {VERSION}"
        )),
    }
}

/// Reads the options of `sasl.jaas.config`'s `IAMLoginModule` entry, with the environment
/// the providers read.
pub(crate) fn msk_iam(options: &[(String, String)], env: Environment) -> Result<MskIam> {
    let option = |name: &str| {
        options
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.trim())
            .filter(|value| !value.is_empty())
    };
    let jaas = |message: String| config_error("sasl.jaas.config", message);
    let flag = |name: &str, default: bool| match option(name) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => Err(jaas(format!("option {name} must be \"true\" or \"false\""))),
    };
    let number = |name: &str, default: u64| match option(name) {
        None => Ok(default),
        Some(value) => value
            .parse::<u64>()
            .map_err(|_| jaas(format!("option {name} must be a whole number"))),
    };
    const KNOWN: &[&str] = &[
        "awsProfileName",
        "awsRoleArn",
        "awsRoleSessionName",
        "awsRoleExternalId",
        "awsStsRegion",
        "awsRoleAccessKeyId",
        "awsRoleSecretAccessKey",
        "awsRoleSessionToken",
        "awsAddDefaultProviders",
        "awsDebugCreds",
        "awsShouldUseFips",
        "awsMaxRetries",
        "awsMaxBackOffTimeMs",
    ];
    for (key, _) in options {
        if key == "awsMskRegionProvider" {
            return Err(jaas(
                "option awsMskRegionProvider names a Java class, which Strait cannot run; it takes the region from \
                 the broker host name, else AWS_REGION"
                    .into(),
            ));
        }
        if !KNOWN.contains(&key.as_str()) {
            tracing::warn!(option = %key, "sasl.jaas.config: IAMLoginModule has no such option; it is ignored");
        }
    }
    let fips = flag("awsShouldUseFips", false)?;
    let sts_region = option("awsStsRegion").unwrap_or(GLOBAL);
    let mut chain = Vec::new();
    let mut description = Vec::new();
    if let Some(profile) = option("awsProfileName") {
        chain.push(Provider::Profile(Some(profile.to_owned())));
        description.push(format!("profile {profile}"));
    }
    if let Some(role_arn) = option("awsRoleArn") {
        let base = match (option("awsRoleAccessKeyId"), option("awsRoleSecretAccessKey")) {
            (Some(id), Some(secret)) => vec![Provider::Static(AccessKey {
                id: id.to_owned(),
                secret: Secret::new(secret),
                session_token: option("awsRoleSessionToken").map(Secret::new),
            })],
            (None, None) => Provider::default_chain(),
            _ => {
                return Err(jaas(
                    "options awsRoleAccessKeyId and awsRoleSecretAccessKey go together; set both or neither".into(),
                ))
            }
        };
        chain.push(Provider::AssumeRole(Box::new(AssumeRole {
            role_arn: role_arn.to_owned(),
            session_name: option("awsRoleSessionName").unwrap_or("aws-msk-iam-auth").to_owned(),
            external_id: option("awsRoleExternalId").map(str::to_owned),
            sts: Sts::new(&env, sts_region, fips)?,
            base,
        })));
        description.push(format!("role {role_arn}"));
    }
    if flag("awsAddDefaultProviders", true)? {
        chain.extend(Provider::default_chain());
        description.push("the default AWS credential chain".into());
    }
    if chain.is_empty() {
        return Err(jaas(
            "awsAddDefaultProviders=\"false\" leaves no credentials: set awsProfileName or awsRoleArn".into(),
        ));
    }
    let debug_creds = if flag("awsDebugCreds", false)? {
        Some(Sts::new(&env, sts_region, fips)?)
    } else {
        None
    };
    Ok(MskIam {
        chain,
        env,
        max_retries: number("awsMaxRetries", 3)? as u32,
        max_backoff: Duration::from_millis(number("awsMaxBackOffTimeMs", 5000)?),
        debug_creds,
        description: description.join(", then "),
        current: tokio::sync::Mutex::new(None),
    })
}
