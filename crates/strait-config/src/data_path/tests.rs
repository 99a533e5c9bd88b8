use super::*;
use crate::{ClientRole, Mm2Config};

fn parse(text: &str) -> Mm2Config {
    Mm2Config::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    Mm2Config::parse(text).unwrap_err().to_string()
}

/// Two clusters and the flow A->B, so that a key written on the next line is on line 5.
const AB: &str = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n";

fn ab(extra: &str) -> Mm2Config {
    parse(&format!("{AB}{extra}"))
}

fn raw(value: &str) -> Raw<'_> {
    Raw {
        key: "k",
        value,
        line: 7,
        written: None,
    }
}

fn file(line: usize, key: &str) -> Origin {
    Origin::File {
        line,
        key: key.to_owned(),
        written: None,
    }
}

#[test]
fn acks_spellings() {
    assert_eq!(parse_acks(raw(" all ")).unwrap(), Acks::All);
    assert_eq!(parse_acks(raw("-1")).unwrap(), Acks::All);
    assert_eq!(parse_acks(raw("1")).unwrap(), Acks::Leader);
    // Java's ValidString is case-sensitive, as Raw::choice is.
    assert!(parse_acks(raw("ALL")).is_err());
    assert_eq!(Acks::All.as_i16(), -1);
    assert_eq!(Acks::Leader.as_i16(), 1);
    assert_eq!(Acks::default(), Acks::All);
}

#[test]
fn ints_are_trimmed_decimal_java_ints() {
    assert_eq!(int_at_least_0(raw(" +10 ")).unwrap(), 10);
    assert_eq!(int_at_least_0(raw("0")).unwrap(), 0);
    assert!(int_at_least_0(raw("0x10")).is_err());
    assert!(int_at_least_0(raw("2147483648")).is_err());
    assert_eq!(
        int_at_least_0(raw("-1")).unwrap_err().to_string(),
        "line 7: invalid value `-1` for `k`: expected an integer from 0 to 2147483647 (Java int)"
    );
}

#[test]
fn defaults_are_java_defaults() {
    let config = ab("");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(
        flow.source_fetch,
        FetchSettings {
            min_bytes: 1,
            max_bytes: 52_428_800,
            partition_max_bytes: 1_048_576,
            max_wait_ms: 500,
            client_rack: None,
        }
    );
    assert_eq!(
        flow.target_produce,
        ProduceSettings {
            acks: Acks::All,
            max_request_size: 1_048_576,
            request_timeout_ms: 30_000,
            delivery_timeout_ms: 120_000,
            max_in_flight: 5,
            transaction_timeout_ms: 60_000,
        }
    );
    assert_eq!(flow.source_fetch, FetchSettings::default());
    assert_eq!(flow.target_produce, ProduceSettings::default());
    // The heartbeats-only flow back has them too.
    assert_eq!(
        config.flow("B", "A").unwrap().target_produce,
        ProduceSettings::default()
    );
    assert!(config.warnings().is_empty());
}

/// Each fetch key, a value for it, and the value it gives.
const FETCH_CASES: &[(&str, &str, &str)] = &[
    ("fetch.min.bytes", " 11 ", "11"),
    ("fetch.max.bytes", "12", "12"),
    ("max.partition.fetch.bytes", "+13", "13"),
    ("fetch.max.wait.ms", "0", "0"),
    ("client.rack", " rack-1\t", "Some(\"rack-1\")"),
];

fn fetch_value(fetch: &FetchSettings, key: &str) -> String {
    match key {
        "fetch.min.bytes" => fetch.min_bytes.to_string(),
        "fetch.max.bytes" => fetch.max_bytes.to_string(),
        "max.partition.fetch.bytes" => fetch.partition_max_bytes.to_string(),
        "fetch.max.wait.ms" => fetch.max_wait_ms.to_string(),
        "client.rack" => format!("{:?}", fetch.client_rack),
        _ => unreachable!("{key}"),
    }
}

#[test]
fn fetch_settings_from_each_consumer_level() {
    for level in ["A.consumer.", "A->B.consumer.", "A->B.source.consumer."] {
        for &(key, value, expected) in FETCH_CASES {
            let config = ab(&format!("{level}{key} = {value}\n"));
            let flow = config.flow("A", "B").unwrap();
            assert_eq!(fetch_value(&flow.source_fetch, key), expected, "{level}{key}");
            let shown = flow.source_fetch_settings.iter().find(|(k, _)| *k == key).unwrap();
            assert_eq!(shown.1.origin, file(5, &format!("{level}{key}")), "{level}{key}");
            // Other keys keep their defaults.
            for &(other, _, _) in FETCH_CASES.iter().filter(|(k, _, _)| *k != key) {
                assert_eq!(
                    fetch_value(&flow.source_fetch, other),
                    fetch_value(&FetchSettings::default(), other),
                    "{level}{key} changed {other}"
                );
            }
        }
    }
}

#[test]
fn fetch_settings_precedence_and_side() {
    // `A->B.source.consumer.k` > `A.consumer.k` > `A->B.consumer.k`, as for every consumer key.
    let config = ab("A->B.consumer.fetch.max.bytes = 1\n\
         A.consumer.fetch.max.bytes = 2\n\
         A->B.source.consumer.fetch.max.bytes = 3\n\
         A->B.consumer.fetch.min.bytes = 4\n\
         A.consumer.fetch.min.bytes = 5\n\
         A->B.consumer.fetch.max.wait.ms = 6\n\
         A->B.target.consumer.max.partition.fetch.bytes = 7\n\
         B.consumer.client.rack = b-rack\n");
    let ab_flow = config.flow("A", "B").unwrap();
    assert_eq!(ab_flow.source_fetch.max_bytes, 3);
    assert_eq!(ab_flow.source_fetch.min_bytes, 5);
    assert_eq!(ab_flow.source_fetch.max_wait_ms, 6);
    // The target's consumers and B's consumer keys are not the source's.
    assert_eq!(ab_flow.source_fetch.partition_max_bytes, 1_048_576);
    assert_eq!(ab_flow.source_fetch.client_rack, None);
    // B->A reads from B: its own consumer keys, and none of A->B's.
    let ba = config.flow("B", "A").unwrap();
    assert_eq!(ba.source_fetch.client_rack.as_deref(), Some("b-rack"));
    assert_eq!(ba.source_fetch.max_bytes, 52_428_800);
    // A blank rack is no rack (Java: trimmed, default "").
    let config = ab("A.consumer.client.rack =  \n");
    assert_eq!(config.flow("A", "B").unwrap().source_fetch.client_rack, None);
}

/// Each producer key, a value for it, and the value it gives.
const PRODUCE_CASES: &[(&str, &str, &str)] = &[
    ("acks", "-1", "All"),
    ("acks", " 1 ", "Leader"),
    ("max.request.size", "21", "21"),
    ("request.timeout.ms", "40000", "40000"),
    ("delivery.timeout.ms", " 200000 ", "200000"),
    ("max.in.flight.requests.per.connection", "1", "1"),
    ("enable.idempotence", "TRUE", "true"),
];

fn produce_value(produce: &ProduceSettings, key: &str) -> String {
    match key {
        "acks" => format!("{:?}", produce.acks),
        "max.request.size" => produce.max_request_size.to_string(),
        "request.timeout.ms" => produce.request_timeout_ms.to_string(),
        "delivery.timeout.ms" => produce.delivery_timeout_ms.to_string(),
        "max.in.flight.requests.per.connection" => produce.max_in_flight.to_string(),
        "enable.idempotence" => "true".to_owned(),
        _ => unreachable!("{key}"),
    }
}

#[test]
fn produce_settings_from_each_producer_level() {
    for level in ["B.producer.", "A->B.producer.", "A->B.target.producer."] {
        for &(key, value, expected) in PRODUCE_CASES {
            let config = ab(&format!("{level}{key} = {value}\n"));
            let flow = config.flow("A", "B").unwrap();
            assert_eq!(produce_value(&flow.target_produce, key), expected, "{level}{key}");
            let shown = flow.target_produce_settings.iter().find(|(k, _)| *k == key).unwrap();
            assert_eq!(shown.1.origin, file(5, &format!("{level}{key}")), "{level}{key}");
        }
    }
    // `A->B.target.producer.k` > `B.producer.k` > `A->B.producer.k`; the source's producer is
    // not the target's.
    let config = ab("A->B.producer.max.request.size = 1\n\
         B.producer.max.request.size = 2\n\
         A->B.target.producer.max.request.size = 3\n\
         A->B.producer.max.in.flight.requests.per.connection = 4\n\
         B.producer.max.in.flight.requests.per.connection = 3\n\
         A->B.source.producer.request.timeout.ms = 5\n\
         A.producer.acks = 1\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.target_produce.max_request_size, 3);
    assert_eq!(flow.target_produce.max_in_flight, 3);
    assert_eq!(flow.target_produce.request_timeout_ms, 30_000);
    assert_eq!(flow.target_produce.acks, Acks::All);
    // B->A writes into A.
    assert_eq!(config.flow("B", "A").unwrap().target_produce.acks, Acks::Leader);
}

#[test]
fn delivery_timeout_follows_the_request_timeout() {
    // Equal is allowed.
    let config = ab("B.producer.request.timeout.ms = 5000\nB.producer.delivery.timeout.ms = 5000\n");
    assert_eq!(config.flow("A", "B").unwrap().target_produce.delivery_timeout_ms, 5000);
    // Unset, the default is raised to the request timeout, as Kafka's producer does, and comes
    // from the request timeout's line.
    let config = ab("B.producer.request.timeout.ms = 200000\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.target_produce.delivery_timeout_ms, 200_000);
    let shown = flow
        .target_produce_settings
        .iter()
        .find(|(k, _)| *k == "delivery.timeout.ms")
        .unwrap();
    assert_eq!(shown.1.value, "200000");
    assert_eq!(shown.1.origin, file(5, "B.producer.request.timeout.ms"));
    // Set below it, refused with the line of delivery.timeout.ms.
    assert_eq!(
        error(&format!(
            "{AB}B.producer.request.timeout.ms = 60000\nA->B.target.producer.delivery.timeout.ms = 59999\n"
        )),
        "line 6: `A->B.target.producer.delivery.timeout.ms` refused: 59999 ms is below request.timeout.ms \
         (60000, line 5: B.producer.request.timeout.ms): a batch must be allowed at least one whole request; \
         Kafka's producer refuses it too (\"delivery.timeout.ms should be equal to or larger than linger.ms + \
         request.timeout.ms\"; Strait does not linger)"
    );
    assert_eq!(
        error(&format!("{AB}B.producer.delivery.timeout.ms = 1000\n")),
        "line 5: `B.producer.delivery.timeout.ms` refused: 1000 ms is below request.timeout.ms (30000, the \
         default): a batch must be allowed at least one whole request; Kafka's producer refuses it too \
         (\"delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms\"; Strait does \
         not linger)"
    );
}

#[test]
fn acks_1_is_a_warning() {
    let config = ab("B.producer.acks = 1\n");
    assert_eq!(config.flow("A", "B").unwrap().target_produce.acks, Acks::Leader);
    assert_eq!(
        config.warnings(),
        [
            "line 5: `B.producer.acks` is `1`: a write then waits only for the partition leader's acknowledgement, \
          a weaker durability than `all` (the default): a leader failover can lose acknowledged records, which \
          Strait has already counted as mirrored"
        ]
    );
    assert!(ab("B.producer.acks = all\n").warnings().is_empty());
}

#[test]
fn bad_fetch_values_are_refused() {
    let int = |key: &str, value: &str| {
        format!("line 5: invalid value `{value}` for `{key}`: expected an integer from 0 to 2147483647 (Java int)")
    };
    for (key, value) in [
        ("A.consumer.fetch.max.bytes", "-1"),
        ("A->B.consumer.fetch.min.bytes", "-5"),
        ("A->B.source.consumer.max.partition.fetch.bytes", "1MB"),
        ("A.consumer.fetch.max.wait.ms", "2147483648"),
        // Checked wherever a consumer key is written, as isolation.level is.
        ("A->B.target.consumer.fetch.max.bytes", "0x100"),
    ] {
        assert_eq!(error(&format!("{AB}{key} = {value}\n")), int(key, value), "{key}");
    }
}

#[test]
fn bad_produce_values_are_refused() {
    let refused = |text: &str| error(&format!("{AB}{text}\n"));
    assert_eq!(
        refused("B.producer.acks = 0"),
        "line 5: `B.producer.acks` refused: `acks = 0` asks the target for no acknowledgement, and a mirror that \
         gets none cannot know what it may record as mirrored without risking loss; use `all` (the default) or `1`"
    );
    let acks = |key: &str, value: &str| {
        format!(
            "line 5: invalid value `{value}` for `{key}`: expected `all`, `-1`, `0` or `1` as Kafka lists them, of \
             which Strait refuses `0`: `all` or `-1` (the default: every in-sync replica), or `1` (the leader only)"
        )
    };
    assert_eq!(refused("A->B.producer.acks = 2"), acks("A->B.producer.acks", "2"));
    assert_eq!(refused("B.producer.acks = ALL"), acks("B.producer.acks", "ALL"));
    assert_eq!(
        refused("A->B.target.producer.max.in.flight.requests.per.connection = 6"),
        "line 5: `A->B.target.producer.max.in.flight.requests.per.connection` refused: Strait's producer is always \
         idempotent, and Kafka's idempotent producer allows at most 5 requests in flight per connection (Java: \
         \"Must set max.in.flight.requests.per.connection to at most 5 when using the idempotent producer\"); use 1 \
         to 5 (default 5)"
    );
    assert_eq!(
        refused("B.producer.max.in.flight.requests.per.connection = 0"),
        "line 5: invalid value `0` for `B.producer.max.in.flight.requests.per.connection`: expected an integer \
         from 1 to 5 (Java int, at least 1; at most 5 for an idempotent producer)"
    );
    assert_eq!(
        refused("B.producer.enable.idempotence = false"),
        "line 5: `B.producer.enable.idempotence` refused: Strait's producer is always idempotent: without \
         idempotence, retried batches could be written twice or out of order; remove the key or set it to `true`"
    );
    assert_eq!(
        refused("B.producer.enable.idempotence = no"),
        "line 5: invalid value `no` for `B.producer.enable.idempotence`: expected `true` or `false`"
    );
    assert_eq!(
        refused("A->B.producer.request.timeout.ms = 0"),
        "line 5: `A->B.producer.request.timeout.ms` refused: a timeout of 0 ms cannot work: every request would \
         time out at once; use a number of milliseconds from 1 to 2147483647 (default 30000)"
    );
    assert_eq!(
        refused("B.producer.request.timeout.ms = -1"),
        "line 5: invalid value `-1` for `B.producer.request.timeout.ms`: expected an integer from 0 to 2147483647 \
         (Java int)"
    );
    assert_eq!(
        refused("B.producer.max.request.size = -1"),
        "line 5: invalid value `-1` for `B.producer.max.request.size`: expected an integer from 0 to 2147483647 \
         (Java int)"
    );
    assert_eq!(
        refused("B.producer.delivery.timeout.ms = x"),
        "line 5: invalid value `x` for `B.producer.delivery.timeout.ms`: expected an integer from 0 to 2147483647 \
         (Java int)"
    );
    // Checked wherever a producer key is written: the source's producer is Strait's too.
    assert!(refused("A->B.source.producer.acks = 0").starts_with("line 5: `A->B.source.producer.acks` refused:"));
    // Producer keys mean nothing to a consumer: not checked, listed as ignored.
    let config = ab("A.consumer.acks = 0\n");
    assert_eq!(
        config.flow("A", "B").unwrap().source.get(ClientRole::Consumer, "acks"),
        None
    );
    assert_eq!(config.ignored()[0].key, "A.consumer.acks");
}

#[test]
fn check_config_text_shows_the_data_path() {
    let config = ab("A.consumer.fetch.max.bytes = 10485760\n\
         A->B.target.producer.acks = -1\n\
         B.producer.max.in.flight.requests.per.connection = 2\n");
    let text = config.to_string();
    let block = "\n  source.consumer.fetch.min.bytes = 1  (default)\n\
         \x20 source.consumer.fetch.max.bytes = 10485760  (line 5: A.consumer.fetch.max.bytes)\n\
         \x20 source.consumer.max.partition.fetch.bytes = 1048576  (default)\n\
         \x20 source.consumer.fetch.max.wait.ms = 500  (default)\n\
         \x20 source.consumer.client.rack =   (default)\n\
         \x20 target.producer.acks = all  (line 6: A->B.target.producer.acks)\n\
         \x20 target.producer.max.request.size = 1048576  (default)\n\
         \x20 target.producer.request.timeout.ms = 30000  (default)\n\
         \x20 target.producer.delivery.timeout.ms = 120000  (default)\n\
         \x20 target.producer.max.in.flight.requests.per.connection = 2  (line 7: \
         B.producer.max.in.flight.requests.per.connection)\n\
         \x20 target.producer.enable.idempotence = true  (default)\n\
         \x20 target.producer.transaction.timeout.ms = 60000  (default)\n\
         \x20 source.consumer.auto.offset.reset = earliest  (default)\n";
    assert!(text.contains(block), "{text}");
    // Once per flow (A->B and B->A): not again among the client settings.
    assert_eq!(
        text.matches("\n  source.consumer.fetch.max.bytes = ").count(),
        2,
        "{text}"
    );
    assert_eq!(text.matches("\n  target.producer.acks = ").count(), 2, "{text}");
    assert_eq!(
        text.matches("\n  target.producer.max.in.flight.requests.per.connection = ")
            .count(),
        2,
        "{text}"
    );
    // B->A's source is B, its target A.
    assert!(
        text.contains("\nflow B->A (disabled, only emits heartbeats into the target)\n"),
        "{text}"
    );
}

#[test]
fn check_config_json_shows_the_data_path() {
    let config = ab("A->B.source.consumer.client.rack = r1\nB.producer.request.timeout.ms = 150000\n");
    let json = config.to_json();
    let flow = &json["flows"][0];
    assert_eq!(flow["name"], "A->B");
    assert_eq!(
        flow["source_fetch"],
        serde_json::json!({
            "fetch.min.bytes": { "value": "1", "origin": "default" },
            "fetch.max.bytes": { "value": "52428800", "origin": "default" },
            "max.partition.fetch.bytes": { "value": "1048576", "origin": "default" },
            "fetch.max.wait.ms": { "value": "500", "origin": "default" },
            "client.rack": { "value": "r1", "origin": { "line": 5, "key": "A->B.source.consumer.client.rack" } },
        })
    );
    let request = serde_json::json!({ "line": 6, "key": "B.producer.request.timeout.ms" });
    assert_eq!(
        flow["target_produce"],
        serde_json::json!({
            "acks": { "value": "all", "origin": "default" },
            "max.request.size": { "value": "1048576", "origin": "default" },
            "request.timeout.ms": { "value": "150000", "origin": request },
            "delivery.timeout.ms": { "value": "150000", "origin": request },
            "max.in.flight.requests.per.connection": { "value": "5", "origin": "default" },
            "enable.idempotence": { "value": "true", "origin": "default" },
            "transaction.timeout.ms": { "value": "60000", "origin": "default" },
        })
    );
    // The role views as given to the clients are unchanged.
    assert_eq!(flow["clients"]["source.consumer.client.rack"]["value"], "r1");
    assert_eq!(json["flows"][1]["source_fetch"]["client.rack"]["value"], "");
}

#[test]
fn batch_shaping_producer_keys_are_listed_as_ignored() {
    let rebatch = "record batches are forwarded as the source producer built them; Strait does not re-batch";
    let codec = "batches are forwarded compressed as the source wrote them, without decompressing; the target gets \
                 the source's codec";
    let memory = "Strait bounds memory for the whole process with `strait.buffer.memory`";
    let config = ab("B.producer.batch.size = 262144\n\
         A->B.target.producer.linger.ms = 10\n\
         A->B.producer.compression.type = zstd\n\
         A.producer.buffer.memory = 134217728\n\
         A->B.source.producer.linger.ms = 5\n\
         linger.ms = 5\n\
         B.compression.type = lz4\n\
         A->B.batch.size = 1\n\
         producer.linger.ms = 5\n");
    let lines: Vec<String> = config.ignored().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            format!("line 5: `B.producer.batch.size` ignored: {rebatch}"),
            format!("line 6: `A->B.target.producer.linger.ms` ignored: {rebatch}"),
            format!("line 7: `A->B.producer.compression.type` ignored: {codec}"),
            format!("line 8: `A.producer.buffer.memory` ignored: {memory}"),
            format!("line 9: `A->B.source.producer.linger.ms` ignored: {rebatch}"),
            format!("line 10: `linger.ms` ignored: {rebatch}"),
            format!("line 11: `B.compression.type` ignored: {codec}"),
            format!("line 12: `A->B.batch.size` ignored: {rebatch}"),
            // Top-level role keys were already ignored, for MM2's reason.
            "line 13: `producer.linger.ms` ignored: MM2 dedicated mode does not use top-level `consumer.*`, \
             `producer.*` or `admin.*` keys; use `<alias>.consumer.<key>` (all flows of a cluster) or \
             `<source>-><target>.consumer.<key>`"
                .to_owned(),
        ]
    );
    // Not in any producer view, so no client is given them.
    let flow = config.flow("A", "B").unwrap();
    for key in ["batch.size", "linger.ms", "compression.type", "buffer.memory"] {
        assert_eq!(flow.target.get(ClientRole::Producer, key), None, "{key}");
        assert_eq!(flow.source.get(ClientRole::Producer, key), None, "{key}");
    }
    // check-config prints them, in text and JSON.
    assert!(
        config.to_string().contains(&format!(
            "\n  line 6: `A->B.target.producer.linger.ms` ignored: {rebatch}\n"
        )),
        "{config}"
    );
    assert_eq!(
        config.to_json()["ignored"][2],
        serde_json::json!({ "line": 7, "key": "A->B.producer.compression.type", "reason": codec })
    );
    // A consumer key of the same name is not the producer's: ignored for its own reason.
    let config = ab("A.consumer.linger.ms = 5\n");
    assert!(
        config.ignored()[0].reason.starts_with("Strait's consumer reads only"),
        "{:?}",
        config.ignored()
    );
}

#[test]
fn data_path_keys_outside_a_client_role_are_listed_as_ignored() {
    // MM2 gives its clients only the connection keys of `<alias>.k` and top-level `k`
    // (MirrorSourceConfig.sourceConsumerConfig keeps CLIENT_CONFIG_DEF's names of
    // `source.cluster.*`); so do Strait's views, and it says so.
    let config = ab("fetch.max.bytes = 1\n\
         A.fetch.min.bytes = 2\n\
         A->B.max.partition.fetch.bytes = 3\n\
         B.acks = 1\n\
         acks = 0\n\
         B.enable.idempotence = false\n\
         A->B.max.in.flight.requests.per.connection = 9\n\
         A.client.rack = r\n\
         B.request.timeout.ms = 0\n\
         A->B.target.cluster.delivery.timeout.ms = 1\n");
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(flow.source_fetch, FetchSettings::default());
    assert_eq!(flow.target_produce, ProduceSettings::default());
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
    let generic = "MM2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from cluster-level and \
                   top-level keys to its clients; use `<alias>.consumer.<key>`, `<alias>.producer.<key>` or \
                   `<alias>.admin.<key>`";
    let lines: Vec<String> = config.ignored().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            format!("line 5: `fetch.max.bytes` ignored: {generic}"),
            format!("line 6: `A.fetch.min.bytes` ignored: {generic}"),
            format!("line 7: `A->B.max.partition.fetch.bytes` ignored: {generic}"),
            format!("line 8: `B.acks` ignored: {generic}"),
            format!("line 9: `acks` ignored: {generic}"),
            format!("line 10: `B.enable.idempotence` ignored: {generic}"),
            format!("line 11: `A->B.max.in.flight.requests.per.connection` ignored: {generic}"),
            format!("line 12: `A.client.rack` ignored: {generic}"),
            format!("line 13: `B.request.timeout.ms` ignored: {generic}"),
            "line 14: `A->B.target.cluster.delivery.timeout.ms` ignored: only bootstrap.servers, security.protocol, \
             ssl.* and sasl.* are read from `source.cluster.*` and `target.cluster.*`"
                .to_owned(),
        ]
    );
    // A misspelt one gets a suggestion.
    assert_eq!(
        error(&format!("{AB}A.fetch.max.byte = 1\n")),
        "line 5: unknown key `A.fetch.max.byte` (did you mean `A.fetch.max.bytes`?)"
    );
}
