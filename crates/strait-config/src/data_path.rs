//! The Kafka client keys that shape the mirror's data path: how it fetches from a source
//! (consumer keys, [`FetchSettings`]) and how it produces to a target (producer keys,
//! [`ProduceSettings`]), typed with Java's defaults and ranges (`ConsumerConfig`,
//! `ProducerConfig`).
//!
//! Each value is checked where it is written (any consumer or producer key of any scope), so that
//! a bad value is refused with its own line; the effective values of a flow are then read from
//! the source's consumer view and the target's producer view.

use std::collections::BTreeMap;

use crate::client::{Origin, Setting};
use crate::error::{ConfigError, Result};
use crate::value::Raw;

/// How the mirror fetches from a flow's source: the source cluster's consumer keys.
///
/// Read from the source's consumer view ([`crate::ClusterClientConfig::consumer`] of
/// [`crate::FlowConfig::source`]), so `<source>-><target>.source.consumer.k` >
/// `<source>.consumer.k` > `<source>-><target>.consumer.k`, as for every consumer key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchSettings {
    /// `fetch.min.bytes` (default 1): the least data a broker returns before
    /// `fetch.max.wait.ms` has passed.
    pub min_bytes: i32,
    /// `fetch.max.bytes` (default 52428800): the most data one Fetch response may carry (a
    /// broker still returns a first batch larger than this).
    pub max_bytes: i32,
    /// `max.partition.fetch.bytes` (default 1048576): the most data per partition in one Fetch.
    pub partition_max_bytes: i32,
    /// `fetch.max.wait.ms` (default 500): how long a broker may hold a Fetch to reach
    /// `fetch.min.bytes`.
    pub max_wait_ms: i32,
    /// `client.rack` (default empty, meaning none): the rack sent in Fetch requests so that
    /// brokers with a replica selector can serve the fetch from a follower in the same rack.
    pub client_rack: Option<String>,
}

impl Default for FetchSettings {
    fn default() -> Self {
        FetchSettings {
            min_bytes: 1,
            max_bytes: 52_428_800,
            partition_max_bytes: 1_048_576,
            max_wait_ms: 500,
            client_rack: None,
        }
    }
}

/// Producer `acks`: which acknowledgement a Produce waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Acks {
    /// `all` or `-1` (Kafka and Strait default): every in-sync replica has the records.
    #[default]
    All,
    /// `1`: only the partition leader has them; a leader failover can lose acknowledged records.
    Leader,
}

impl Acks {
    /// The `acks` field of a Produce request: -1 or 1.
    pub fn as_i16(self) -> i16 {
        match self {
            Acks::All => -1,
            Acks::Leader => 1,
        }
    }

    /// The Kafka spelling: `all` or `1`.
    pub fn as_str(self) -> &'static str {
        match self {
            Acks::All => "all",
            Acks::Leader => "1",
        }
    }
}

/// How the mirror produces to a flow's target: the target cluster's producer keys.
///
/// Read from the target's producer view ([`crate::ClusterClientConfig::producer`] of
/// [`crate::FlowConfig::target`]), so `<source>-><target>.target.producer.k` >
/// `<target>.producer.k` > `<source>-><target>.producer.k`, as for every producer key.
/// Strait's producer is always idempotent: `enable.idempotence = false` is refused, and so is
/// more than 5 requests in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceSettings {
    /// `acks` (default all).
    pub acks: Acks,
    /// `max.request.size` (default 1048576): the most bytes of one Produce request.
    pub max_request_size: i32,
    /// `request.timeout.ms` (default 30000, at least 1): how long a Produce may wait for its
    /// answer, and the timeout the request carries.
    pub request_timeout_ms: i32,
    /// `delivery.timeout.ms` (default 120000): how long a batch may take, retries included,
    /// before it is given up. Never below `request_timeout_ms`: set below it explicitly is
    /// refused; the default below it is raised to it, as Kafka's producer does.
    pub delivery_timeout_ms: i32,
    /// `max.in.flight.requests.per.connection` (default 5, 1 to 5).
    pub max_in_flight: i32,
    /// `transaction.timeout.ms` (default 60000, at least 1): in exactly-once mode, how long the
    /// target's transaction coordinator lets a transaction stay open before it aborts it.
    pub transaction_timeout_ms: i32,
}

impl Default for ProduceSettings {
    fn default() -> Self {
        ProduceSettings {
            acks: Acks::All,
            max_request_size: 1_048_576,
            request_timeout_ms: 30_000,
            delivery_timeout_ms: 120_000,
            max_in_flight: 5,
            transaction_timeout_ms: 60_000,
        }
    }
}

/// The consumer keys of [`FetchSettings`], in the order `check-config` prints them.
pub(crate) const FETCH_KEYS: &[&str] = &[
    "fetch.min.bytes",
    "fetch.max.bytes",
    "max.partition.fetch.bytes",
    "fetch.max.wait.ms",
    "client.rack",
];

/// The producer keys of [`ProduceSettings`] and `enable.idempotence`, in the order
/// `check-config` prints them.
pub(crate) const PRODUCE_KEYS: &[&str] = &[
    "acks",
    "max.request.size",
    "request.timeout.ms",
    "delivery.timeout.ms",
    "max.in.flight.requests.per.connection",
    "enable.idempotence",
    "transaction.timeout.ms",
];

const JAVA_INT_AT_LEAST_0: &str = "an integer from 0 to 2147483647 (Java int)";
const ACKS_WARNING: &str = "is `1`: a write then waits only for the partition leader's acknowledgement, a weaker \
     durability than `all` (the default): a leader failover can lose acknowledged records, which Strait has already \
     counted as mirrored";

fn int_at_least_0(raw: Raw<'_>) -> Result<i32> {
    let n: i32 = raw.number(JAVA_INT_AT_LEAST_0)?;
    if n < 0 {
        return Err(raw.invalid(JAVA_INT_AT_LEAST_0));
    }
    Ok(n)
}

fn refused(raw: Raw<'_>, reason: impl Into<String>) -> ConfigError {
    ConfigError::Refused {
        line: raw.line,
        key: raw.key.to_owned(),
        reason: reason.into(),
    }
}

/// Checks a consumer value where it is written. Keys other than [`FETCH_KEYS`] pass.
pub(crate) fn check_consumer_value(name: &str, raw: Raw<'_>) -> Result<()> {
    match name {
        "fetch.min.bytes" | "fetch.max.bytes" | "max.partition.fetch.bytes" | "fetch.max.wait.ms" => {
            int_at_least_0(raw).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// Checks a producer value where it is written; the warning to record, if any (after
/// `` `<key>` ``). Keys other than [`PRODUCE_KEYS`] pass.
pub(crate) fn check_producer_value(name: &str, raw: Raw<'_>) -> Result<Option<&'static str>> {
    match name {
        "acks" => Ok((parse_acks(raw)? == Acks::Leader).then_some(ACKS_WARNING)),
        "max.request.size" | "delivery.timeout.ms" => int_at_least_0(raw).map(|_| None),
        "request.timeout.ms" | "transaction.timeout.ms" => parse_request_timeout(raw).map(|_| None),
        "max.in.flight.requests.per.connection" => parse_max_in_flight(raw).map(|_| None),
        "enable.idempotence" => check_idempotence(raw).map(|_| None),
        _ => Ok(None),
    }
}

/// Java: `Type.STRING` (trimmed) with `ValidString.in("all", "-1", "0", "1")`, case-sensitive.
fn parse_acks(raw: Raw<'_>) -> Result<Acks> {
    match raw.trimmed() {
        "all" | "-1" => Ok(Acks::All),
        "1" => Ok(Acks::Leader),
        "0" => Err(refused(
            raw,
            "`acks = 0` asks the target for no acknowledgement, and a mirror that gets none cannot know what it may \
             record as mirrored without risking loss; use `all` (the default) or `1`",
        )),
        _ => Err(raw.invalid(
            "`all`, `-1`, `0` or `1` as Kafka lists them, of which Strait refuses `0`: `all` or `-1` (the default: \
             every in-sync replica), or `1` (the leader only)",
        )),
    }
}

/// Java: `atLeast(0)`; 0 is refused as well, since every request would time out at once.
fn parse_request_timeout(raw: Raw<'_>) -> Result<i32> {
    match int_at_least_0(raw)? {
        0 => Err(refused(
            raw,
            "a timeout of 0 ms cannot work: every request would time out at once; use a number of milliseconds \
             from 1 to 2147483647 (default 30000)",
        )),
        ms => Ok(ms),
    }
}

/// Java: `atLeast(1)`, and at most 5 for the idempotent producer, which Strait's always is.
fn parse_max_in_flight(raw: Raw<'_>) -> Result<i32> {
    const EXPECTED: &str = "an integer from 1 to 5 (Java int, at least 1; at most 5 for an idempotent producer)";
    let n: i32 = raw.number(EXPECTED)?;
    if n < 1 {
        return Err(raw.invalid(EXPECTED));
    }
    if n > 5 {
        return Err(refused(
            raw,
            "Strait's producer is always idempotent, and Kafka's idempotent producer allows at most 5 requests in \
             flight per connection (Java: \"Must set max.in.flight.requests.per.connection to at most 5 when using \
             the idempotent producer\"); use 1 to 5 (default 5)",
        ));
    }
    Ok(n)
}

fn check_idempotence(raw: Raw<'_>) -> Result<()> {
    if raw.bool()? {
        Ok(())
    } else {
        Err(refused(
            raw,
            "Strait's producer is always idempotent: without idempotence, retried batches could be written twice or \
             out of order; remove the key or set it to `true`",
        ))
    }
}

/// An effective setting as a [`Raw`] value, for parsing and error messages.
pub(crate) fn setting_raw<'a>(key: &'a str, setting: &'a Setting) -> Raw<'a> {
    match &setting.origin {
        Origin::File { line, key, written } => Raw {
            key,
            value: &setting.value,
            line: *line,
            written: written.as_deref(),
        },
        Origin::Default => Raw {
            key,
            value: &setting.value,
            line: 0,
            written: None,
        },
    }
}

/// A client role view: effective settings by key.
type View = BTreeMap<String, Setting>;

/// The effective value of `key` in `view`, typed, with `default` and its origin when unset.
fn typed<'v, T>(
    view: &'v View,
    key: &'static str,
    default: T,
    parse: impl Fn(Raw<'_>) -> Result<T>,
) -> Result<(T, Option<&'v Setting>)> {
    match view.get(key) {
        Some(setting) => Ok((parse(setting_raw(key, setting))?, Some(setting))),
        None => Ok((default, None)),
    }
}

/// The effective value as `check-config` shows it: `value` with the origin of the setting it
/// came from, or the default.
fn shown(key: &'static str, value: String, from: Option<&Setting>) -> (&'static str, Setting) {
    let origin = from.map_or(Origin::Default, |s| s.origin.clone());
    (key, Setting { value, origin })
}

impl FetchSettings {
    /// The settings of a consumer view, and each effective value with its origin (by key, in
    /// [`FETCH_KEYS`] order).
    pub(crate) fn from_view(view: &View) -> Result<(Self, Vec<(&'static str, Setting)>)> {
        let d = FetchSettings::default();
        let (min_bytes, min_from) = typed(view, "fetch.min.bytes", d.min_bytes, int_at_least_0)?;
        let (max_bytes, max_from) = typed(view, "fetch.max.bytes", d.max_bytes, int_at_least_0)?;
        let (partition_max_bytes, partition_from) =
            typed(view, "max.partition.fetch.bytes", d.partition_max_bytes, int_at_least_0)?;
        let (max_wait_ms, wait_from) = typed(view, "fetch.max.wait.ms", d.max_wait_ms, int_at_least_0)?;
        // Java `Type.STRING`, default "" meaning no rack; views hold values trimmed as Java does.
        let rack_from = view.get("client.rack");
        let client_rack = rack_from.map(|s| s.value.clone()).filter(|rack| !rack.is_empty());
        let shown = vec![
            shown("fetch.min.bytes", min_bytes.to_string(), min_from),
            shown("fetch.max.bytes", max_bytes.to_string(), max_from),
            shown(
                "max.partition.fetch.bytes",
                partition_max_bytes.to_string(),
                partition_from,
            ),
            shown("fetch.max.wait.ms", max_wait_ms.to_string(), wait_from),
            shown("client.rack", client_rack.clone().unwrap_or_default(), rack_from),
        ];
        let settings = FetchSettings {
            min_bytes,
            max_bytes,
            partition_max_bytes,
            max_wait_ms,
            client_rack,
        };
        Ok((settings, shown))
    }
}

impl ProduceSettings {
    /// The settings of a producer view, and each effective value with its origin (by key, in
    /// [`PRODUCE_KEYS`] order).
    ///
    /// # Errors
    ///
    /// An explicit `delivery.timeout.ms` below the effective `request.timeout.ms` (Kafka's
    /// producer refuses it too); the values themselves were checked where they are written.
    pub(crate) fn from_view(view: &View) -> Result<(Self, Vec<(&'static str, Setting)>)> {
        let d = ProduceSettings::default();
        let (acks, acks_from) = typed(view, "acks", d.acks, parse_acks)?;
        let (max_request_size, size_from) = typed(view, "max.request.size", d.max_request_size, int_at_least_0)?;
        let (request_timeout_ms, request_from) =
            typed(view, "request.timeout.ms", d.request_timeout_ms, parse_request_timeout)?;
        let (mut delivery_timeout_ms, mut delivery_from) =
            typed(view, "delivery.timeout.ms", d.delivery_timeout_ms, int_at_least_0)?;
        let (max_in_flight, in_flight_from) = typed(
            view,
            "max.in.flight.requests.per.connection",
            d.max_in_flight,
            parse_max_in_flight,
        )?;
        let (_, idempotence_from) = typed(view, "enable.idempotence", (), check_idempotence)?;
        let (transaction_timeout_ms, transaction_from) = typed(
            view,
            "transaction.timeout.ms",
            d.transaction_timeout_ms,
            parse_request_timeout,
        )?;

        // KafkaProducer.configureDeliveryTimeout, with linger.ms = 0 (Strait does not linger).
        if delivery_timeout_ms < request_timeout_ms {
            if let Some(setting) = delivery_from {
                let request = match request_from {
                    Some(s) => format!("{request_timeout_ms}, {}", s.origin),
                    None => format!("{request_timeout_ms}, the default"),
                };
                return Err(refused(
                    setting_raw("delivery.timeout.ms", setting),
                    format!(
                        "{delivery_timeout_ms} ms is below request.timeout.ms ({request}): a batch must be allowed at \
                         least one whole request; Kafka's producer refuses it too (\"delivery.timeout.ms should be \
                         equal to or larger than linger.ms + request.timeout.ms\"; Strait does not linger)"
                    ),
                ));
            }
            // The default is raised to request.timeout.ms, which it then comes from.
            delivery_timeout_ms = request_timeout_ms;
            delivery_from = request_from;
        }

        let shown = vec![
            shown("acks", acks.as_str().to_owned(), acks_from),
            shown("max.request.size", max_request_size.to_string(), size_from),
            shown("request.timeout.ms", request_timeout_ms.to_string(), request_from),
            shown("delivery.timeout.ms", delivery_timeout_ms.to_string(), delivery_from),
            shown(
                "max.in.flight.requests.per.connection",
                max_in_flight.to_string(),
                in_flight_from,
            ),
            shown("enable.idempotence", "true".to_owned(), idempotence_from),
            shown(
                "transaction.timeout.ms",
                transaction_timeout_ms.to_string(),
                transaction_from,
            ),
        ];
        let settings = ProduceSettings {
            acks,
            max_request_size,
            request_timeout_ms,
            delivery_timeout_ms,
            max_in_flight,
            transaction_timeout_ms,
        };
        Ok((settings, shown))
    }
}

#[cfg(test)]
mod tests;
