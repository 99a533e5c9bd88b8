//! `mm2.properties` text: `Properties::parse` (Java properties comments, separators, escapes,
//! `\uXXXX` and surrogate pairs, line continuations) and `Mm2Config::parse` (scopes, inheritance,
//! value validation, regex filters). Bytes that are not UTF-8 are read as ISO-8859-1, as
//! `Mm2Config::from_path` does. On success the config is rendered (`Display`, `to_json`) and every
//! flow's naming and filter questions are asked about topic names taken from the file's own keys
//! and values (so that regexes meet names they may backtrack on) and a few fixed ones.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait_config::properties::Properties;
use strait_config::{ClientRole, Mm2Config};

const TOPICS: [&str; 6] = [
    "orders",
    "A.orders",
    "heartbeats",
    "B.A.heartbeats",
    "mm2-offset-syncs.B.internal",
    "",
];

fuzz_target!(|data: &[u8]| {
    let text = match std::str::from_utf8(data) {
        Ok(text) => text.to_owned(),
        Err(_) => data.iter().map(|&b| char::from(b)).collect(),
    };
    let names: Vec<String> = match Properties::parse(&text) {
        Ok(props) => props
            .iter()
            .flat_map(|p| [p.key.clone(), p.value.clone()])
            .take(16)
            .collect(),
        Err(e) => {
            let _ = e.to_string();
            Vec::new()
        }
    };
    let config = match Mm2Config::parse(&text) {
        Ok(config) => config,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = config.to_string();
    let _ = serde_json::to_string(&config.to_json()).expect("JSON renders");
    for ignored in config.ignored() {
        let _ = ignored.to_string();
    }
    for alias in config.clusters() {
        let cluster = config.cluster(alias).expect("every listed cluster has a config");
        for role in ClientRole::ALL {
            let _ = cluster.client_props(role);
        }
    }
    for flow in config.flows() {
        let _ = (flow.name(), flow.offset_syncs_topic(), flow.checkpoints_topic());
        for topic in TOPICS.iter().copied().chain(names.iter().map(String::as_str)) {
            let reason = flow.skip_reason(topic);
            assert_eq!(flow.should_replicate_topic(topic), reason.is_none());
            let _ = reason.map(|r| r.to_string());
            let _ = flow.remote_topic(topic);
            let _ = flow.policy.original_topic(topic);
            let _ = flow.group_filter.should_replicate_group(topic);
            let _ = flow.config_property_filter.should_replicate_config_property(topic);
        }
    }
});
