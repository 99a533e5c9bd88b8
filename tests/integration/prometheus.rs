//! The Prometheus rules and the Grafana dashboard of `deploy/` against a real Prometheus server
//! (Debian's `prometheus` package) that scrapes a running `strait run`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use strait_testkit::{debian_program, Guarded, ScratchDir};
use strait_tests::*;

use crate::mirror::{write_numbered, write_numbered_from};

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_rules_and_grafana_dashboard_evaluate_against_a_running_mirror() {
    let started = std::time::Instant::now();
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let rules = deploy.join("prometheus/strait.rules.yml");
    let promtool = debian_program("promtool", &["prometheus"]).unwrap_or_else(|e| panic!("{e}"));
    let _ = run_ok({
        let mut check = Command::new(promtool);
        check.arg("check").arg("rules").arg(&rules);
        check
    });

    // A mirror of one partition, with heartbeats and checkpoints every second.
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let target = client(&clusters.target).await;
    let topic = unique("prometheus");
    let remote = format!("source.{topic}");
    create_topic(&source, &topic, 1).await;
    write_numbered(&source, &topic, 1, 10, 100).await;
    let port = free_port();
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    let extra = format!(
        "strait.http.listener = 127.0.0.1:{port}\n\
         emit.heartbeats.interval.seconds = 1\n\
         emit.checkpoints.interval.seconds = 1\n"
    );
    std::fs::write(&config, mm2_properties(&topic, &extra)).unwrap();
    let run = [OsStr::new("run"), config.as_os_str()];
    let mirror = StraitProcess::start(&run);

    let prometheus = PrometheusServer::start(&rules, port);
    wait_until("Prometheus scrapes Strait and holds strait_flow_up", || async {
        let targets = prometheus.api("/api/v1/targets").await;
        let up = targets.as_ref().is_some_and(|t| {
            t["data"]["activeTargets"]
                .as_array()
                .is_some_and(|a| a.iter().any(|t| t["health"] == "up"))
        });
        up && !prometheus.query("strait_flow_up").await["data"]["result"]
            .as_array()
            .is_none_or(Vec::is_empty)
    })
    .await;
    wait_until_complete(&target, &remote, 1000).await;
    wait_until("a heartbeat taken", || async {
        http_get(port, "/metrics")
            .await
            .is_some_and(|(_, text)| text.contains("strait_heartbeat_last_timestamp_seconds{"))
    })
    .await;

    // A gap, provoked as in the faults test: while the mirror is down, records it has not
    // mirrored are deleted at the source. Prometheus saw the partition's gap counter at 0
    // before; the restarted mirror reports 500 (and the fetch's OFFSET_OUT_OF_RANGE error).
    assert!(mirror.terminate(), "strait did not stop cleanly");
    write_numbered_from(&source, &topic, 1, 10, 10, 100).await;
    delete_records_below(&clusters.source.bootstrap_servers(), &topic, 1500).await;
    let _mirror = StraitProcess::start(&run);
    wait_until_complete(&target, &remote, 1500).await;
    wait_until("the StraitGapSeen alert firing for the topic", || async {
        let alerts = prometheus
            .query(r#"ALERTS{alertname="StraitGapSeen",alertstate="firing"}"#)
            .await;
        alerts["data"]["result"]
            .as_array()
            .is_some_and(|r| r.iter().any(|a| a["metric"]["topic"] == remote.as_str()))
    })
    .await;
    wait_until("Strait's heartbeat and error metrics after the restart", || async {
        http_get(port, "/metrics").await.is_some_and(|(_, text)| {
            text.contains("strait_heartbeat_last_timestamp_seconds{") && text.contains("strait_errors_total{")
        })
    })
    .await;

    // Every rule of the file is loaded, in good health; the rule expressions as Prometheus
    // parsed them, and every query of the dashboard.
    let loaded = prometheus.api("/api/v1/rules").await.expect("the rules");
    let mut expressions = Vec::new();
    let mut names = BTreeSet::new();
    for group in loaded["data"]["groups"].as_array().expect("rule groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = rule["name"].as_str().expect("a rule name");
            assert_eq!(rule["health"], "ok", "rule {name} of group {}: {rule}", group["name"]);
            let _ = names.insert(name.to_owned());
            expressions.push((
                format!("rule {name}"),
                rule["query"].as_str().expect("a query").to_owned(),
            ));
        }
    }
    assert_eq!(names, rule_names(&rules), "the rules Prometheus loaded");
    expressions.extend(dashboard_queries(&deploy.join("grafana/strait.json")));

    let (_, metrics) = http_get(port, "/metrics").await.expect("Strait's /metrics");
    let exposed = exposed_metrics(&metrics);
    let mut failures = Vec::new();
    for (what, expression) in &expressions {
        let answer = prometheus.query(expression).await;
        if answer["status"] != "success" {
            failures.push(format!("{what}: `{expression}` failed: {answer}"));
        }
        for name in metric_names(expression) {
            if !exposed.contains(&name) {
                failures.push(format!(
                    "{what}: `{expression}` uses {name}, which Strait does not expose"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nStrait's /metrics:\n{metrics}",
        failures.join("\n")
    );
    println!(
        "{} rule and dashboard expressions evaluated by Prometheus, StraitGapSeen fired; {:?}",
        expressions.len(),
        started.elapsed()
    );
}

/// A Prometheus server on a free loopback port, scraping Strait's `/metrics` every second and
/// evaluating `rules` every second, with its storage in a folder of its own. It is killed (and
/// the folder removed) when dropped or when the test process ends.
struct PrometheusServer {
    port: u16,
    _process: Guarded,
    _dir: ScratchDir,
}

impl PrometheusServer {
    fn start(rules: &Path, strait_port: u16) -> PrometheusServer {
        let program = debian_program("prometheus", &["prometheus"]).unwrap_or_else(|e| panic!("{e}"));
        let dir = ScratchDir::new("prometheus").expect("a folder for Prometheus");
        let config = dir.path().join("prometheus.yml");
        let rules = rules.canonicalize().expect("the rules file");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {}\n\
                 scrape_configs:\n  - job_name: strait\n    static_configs:\n      - targets: ['127.0.0.1:{strait_port}']\n",
                rules.display()
            ),
        )
        .unwrap();
        let port = free_port();
        let mut command = Command::new(program);
        let _ = command
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"));
        let process = Guarded::spawn(&command, &dir.path().join("prometheus.log"))
            .unwrap_or_else(|e| panic!("starting Prometheus: {e}"));
        PrometheusServer {
            port,
            _process: process,
            _dir: dir,
        }
    }

    /// The JSON answer of `GET path`, or `None` while Prometheus does not answer.
    async fn api(&self, path: &str) -> Option<serde_json::Value> {
        let (_, body) = http_get(self.port, path).await?;
        serde_json::from_str(&body).ok()
    }

    /// The answer of an instant query (`status` is `success` or `error`).
    async fn query(&self, expression: &str) -> serde_json::Value {
        let path = format!("/api/v1/query?query={}", percent_encode(expression));
        self.api(&path)
            .await
            .unwrap_or_else(|| panic!("Prometheus did not answer the query `{expression}`"))
    }
}

/// `text` for a URL's query string: everything but RFC 3986's unreserved characters as `%XX`.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The names of the `record:` and `alert:` rules of a rules file.
fn rule_names(rules: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(rules)
        .expect("the rules file")
        .lines()
        .filter_map(|line| {
            let line = line.trim_start().trim_start_matches("- ");
            line.strip_prefix("record:")
                .or_else(|| line.strip_prefix("alert:"))
                .map(|name| name.trim().to_owned())
        })
        .collect()
}

/// Every query of the dashboard (`targets[].expr` of every panel, rows' panels included, and
/// the template variables' queries), with Grafana's variables replaced by values Prometheus
/// takes: `$source` and `$target` by `.*` (they sit under `=~`), intervals by `1m`, the range
/// by `5m`.
fn dashboard_queries(dashboard: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dashboard).expect("the dashboard");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let substitute = |expr: &str| {
        let expr = expr
            .replace("${source}", ".*")
            .replace("${target}", ".*")
            .replace("$source", ".*")
            .replace("$target", ".*")
            .replace("$__rate_interval", "1m")
            .replace("$__interval", "1m")
            .replace("$__range", "5m");
        assert!(
            !expr.contains('$'),
            "a Grafana variable the test does not know in `{expr}`"
        );
        expr
    };
    fn panels(list: &serde_json::Value, into: &mut Vec<serde_json::Value>) {
        for panel in list.as_array().into_iter().flatten() {
            into.push(panel.clone());
            panels(&panel["panels"], into);
        }
    }
    let mut all = Vec::new();
    panels(&dashboard["panels"], &mut all);
    let mut queries = Vec::new();
    for panel in &all {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("a Prometheus query");
            queries.push((
                format!("panel \"{}\"", panel["title"].as_str().unwrap_or("")),
                substitute(expr),
            ));
        }
    }
    assert!(queries.len() >= 20, "only {} queries in the dashboard", queries.len());
    for variable in dashboard["templating"]["list"].as_array().expect("template variables") {
        if variable["type"] == "query" {
            // label_values(metric, label): the metric must exist.
            let definition = variable["definition"].as_str().expect("a variable query");
            let metric = definition
                .strip_prefix("label_values(")
                .and_then(|rest| rest.split(',').next())
                .unwrap_or_else(|| panic!("a label_values query: {definition}"));
            queries.push((
                format!("variable ${}", variable["name"].as_str().unwrap_or("")),
                metric.trim().to_owned(),
            ));
        }
    }
    queries
}

/// The metric names of a Prometheus text: samples' names and families' (`# TYPE`) names, so
/// that a histogram counts as itself and as its `_bucket`, `_sum` and `_count`.
fn exposed_metrics(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| match line.strip_prefix("# TYPE ") {
            Some(family) => family.split_whitespace().next(),
            None if line.starts_with('#') => None,
            None => line.split(['{', ' ']).next(),
        })
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The names in a PromQL expression that look like Strait's metrics (`strait_…`, MM2's
/// `kafka_connect_mirror_…`); string literals are left out.
fn metric_names(expression: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut chars = expression.chars().peekable();
    let mut word = String::new();
    let mut flush = |word: &mut String| {
        if word.starts_with("strait_") || word.starts_with("kafka_connect_mirror_") {
            let _ = names.insert(word.clone());
        }
        word.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                flush(&mut word);
                // Skip the string, escapes included.
                while let Some(s) = chars.next() {
                    if s == '\\' {
                        let _ = chars.next();
                    } else if s == c {
                        break;
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || c == '_' || c == ':' => word.push(c),
            _ => flush(&mut word),
        }
    }
    flush(&mut word);
    names
}

#[test]
fn metric_names_are_found_outside_strings() {
    let names = metric_names(
        r#"sum by (le) (rate(strait_batch_latency_seconds_bucket{source=~"strait_x"}[1m])) / strait:buffer_use:ratio"#,
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["strait_batch_latency_seconds_bucket".to_owned()]
    );
}
