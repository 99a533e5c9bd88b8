//! The status page: a static page (HTML, CSS and script compiled into the binary, so that it
//! works where there is no internet) that draws itself from two JSON endpoints and refreshes
//! itself every two seconds:
//!
//! - `/api/overview`: every flow with its state, counters, tasks, last errors and its samples
//!   of the last 15 minutes;
//! - `/api/partitions`: one page of one flow's partitions, sorted by lag and filtered by topic
//!   here, so that the page stays quick with 10 000 partitions.

use std::cmp::Ordering;

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::history::{now_ms, KEPT_FOR, SAMPLE_INTERVAL};
use super::Site;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/page.js");
const STYLE: &str = include_str!("page/page.css");

/// Partitions per page unless asked otherwise, and at most.
const PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 1000;

/// The page's routes.
pub(super) fn routes() -> Router<Site> {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX) }))
        .route(
            "/page.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route("/page.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .route("/api/overview", get(overview))
        .route("/api/partitions", get(partitions))
}

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, content_type)], body)
}

async fn overview(State(site): State<Site>) -> Json<Value> {
    let flows: Vec<Value> = site
        .flows
        .iter()
        .enumerate()
        .map(|(index, stats)| {
            let (state, error) = stats.state();
            json!({
                "index": index,
                "flow": stats.flow(),
                "state": state.as_str(),
                "last_error": error,
                "records": stats.records(),
                "bytes": stats.bytes(),
                "gap_records": stats.gap_records(),
                "unreadable_records": stats.unreadable_records(),
                "resume_found_records": stats.resume_found_records(),
                "resume_fallbacks": stats.resume_fallbacks(),
                "source_recreations": stats.source_recreations(),
                "last_heartbeat_ms": stats.last_heartbeat_ms(),
                "summary": stats.summary(),
                "tasks": stats.tasks_status(),
                "workers": stats.workers_status(),
                "waiting_topics": stats.waiting_topics_status(),
                "recent_errors": stats.recent_errors(),
                "samples": site.history.samples(index),
            })
        })
        .collect();
    Json(json!({
        "now_ms": now_ms(),
        "sample_interval_ms": SAMPLE_INTERVAL.as_millis() as u64,
        "window_ms": KEPT_FOR.as_millis() as u64,
        "buffer": {
            "bytes": site.budget.used(),
            "limit_bytes": site.budget.limit(),
        },
        "flows": flows,
    }))
}

/// What `/api/partitions` takes: the flow's index, a topic filter, and which page.
#[derive(Debug, serde::Deserialize)]
struct PartitionsQuery {
    #[serde(default)]
    flow: usize,
    #[serde(default)]
    topic: String,
    #[serde(default)]
    page: usize,
    size: Option<usize>,
}

impl PartitionsQuery {
    fn size(&self) -> usize {
        self.size.unwrap_or(PAGE_SIZE).clamp(1, MAX_PAGE_SIZE)
    }
}

async fn partitions(State(site): State<Site>, Query(query): Query<PartitionsQuery>) -> Json<Value> {
    let Some(stats) = site.flows.get(query.flow) else {
        return Json(json!({ "error": format!("no flow {}: there are {}", query.flow, site.flows.len()) }));
    };
    let mut status = stats.status();
    let Value::Array(all) = status["partitions"].take() else {
        return Json(json!({ "error": "no partitions" }));
    };
    let (rows, total, matched) = one_page(all, &query);
    Json(json!({
        "flow": stats.flow(),
        "total": total,
        "matched": matched,
        "page": query.page,
        "size": query.size(),
        "partitions": rows,
    }))
}

/// The page `query` asks for of `partitions` (`/status` objects): those whose topic or remote
/// topic holds the filter (ignoring case), most records behind first, then longest behind.
/// Returns it with the number of partitions and of those matching the filter.
fn one_page(partitions: Vec<Value>, query: &PartitionsQuery) -> (Vec<Value>, usize, usize) {
    let total = partitions.len();
    let filter = query.topic.trim().to_lowercase();
    let mut matching: Vec<Value> = partitions
        .into_iter()
        .filter(|p| {
            filter.is_empty()
                || ["topic", "remote_topic"]
                    .iter()
                    .any(|key| p[key].as_str().is_some_and(|t| t.to_lowercase().contains(&filter)))
        })
        .collect();
    let lag = |p: &Value| {
        (
            p["lag_records"].as_i64().unwrap_or(0),
            p["lag_seconds"].as_f64().unwrap_or(0.0),
        )
    };
    matching.sort_by(|a, b| {
        let ((records_a, seconds_a), (records_b, seconds_b)) = (lag(a), lag(b));
        records_b
            .cmp(&records_a)
            .then(seconds_b.partial_cmp(&seconds_a).unwrap_or(Ordering::Equal))
            .then_with(|| a["topic"].as_str().cmp(&b["topic"].as_str()))
            .then_with(|| a["partition"].as_i64().cmp(&b["partition"].as_i64()))
    });
    let matched = matching.len();
    let size = query.size();
    let rows = matching
        .into_iter()
        .skip(query.page.saturating_mul(size))
        .take(size)
        .collect();
    (rows, total, matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(topic: &str, partition: i32, lag_records: i64, lag_seconds: f64) -> Value {
        json!({
            "topic": topic,
            "remote_topic": format!("src.{topic}"),
            "partition": partition,
            "lag_records": lag_records,
            "lag_seconds": lag_seconds,
        })
    }

    fn query(topic: &str, page: usize, size: usize) -> PartitionsQuery {
        PartitionsQuery {
            flow: 0,
            topic: topic.to_owned(),
            page,
            size: Some(size),
        }
    }

    fn names(rows: &[Value]) -> Vec<String> {
        rows.iter()
            .map(|p| format!("{}-{}", p["topic"].as_str().unwrap(), p["partition"]))
            .collect()
    }

    #[test]
    fn partitions_are_sorted_by_lag_then_by_name() {
        let all = vec![
            partition("b", 0, 0, 0.0),
            partition("a", 1, 5, 1.0),
            partition("a", 0, 0, 0.0),
            partition("c", 0, 5, 9.0),
            partition("a", 2, 100, 0.5),
        ];
        let (rows, total, matched) = one_page(all, &query("", 0, 10));
        assert_eq!((total, matched), (5, 5));
        assert_eq!(names(&rows), ["a-2", "c-0", "a-1", "a-0", "b-0"]);
    }

    #[test]
    fn the_filter_matches_the_topic_or_remote_topic_and_pages_count_what_matched() {
        let all: Vec<Value> = (0..120)
            .map(|i| partition(if i % 2 == 0 { "Orders" } else { "payments" }, i, i64::from(i), 0.0))
            .collect();
        let (rows, total, matched) = one_page(all.clone(), &query("orders", 1, 50));
        assert_eq!((total, matched, rows.len()), (120, 60, 10));
        assert!(rows.iter().all(|p| p["topic"] == "Orders"));
        assert_eq!(rows[0]["partition"], 18, "the 51st most lagging of the even partitions");
        let (rows, _, matched) = one_page(all.clone(), &query("SRC.PAY", 0, 50));
        assert_eq!((matched, rows.len()), (60, 50));
        let (rows, _, _) = one_page(all, &query("", 9, 50));
        assert!(rows.is_empty(), "past the last page");
    }
}
