//! The HTTP endpoint of `strait run`, served with axum:
//!
//! - `/`: the status page (`page`), drawn in the browser from `/api/overview` and
//!   `/api/partitions`, with the plots' samples kept in memory by `history`;
//! - `/metrics`: Prometheus text;
//! - `/status`: JSON, every flow and partition;
//! - `/health`: `200 ok`, or `503` with the reasons.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, Method, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use strait_mirror::{Budget, Membership, PrometheusText, Stats};
use tokio::net::TcpListener;

mod history;
mod page;

use history::History;

/// What every handler reads: the flows' live state, the process's buffer, and the samples.
#[derive(Clone)]
struct Site {
    flows: Arc<Vec<Arc<Stats>>>,
    budget: Arc<Budget>,
    groups: Arc<Membership>,
    history: Arc<History>,
}

/// Serves the endpoint on `listener`, and keeps the status page's samples, for as long as the
/// task runs.
pub async fn serve(listener: TcpListener, flows: Arc<Vec<Arc<Stats>>>, budget: Arc<Budget>, groups: Arc<Membership>) {
    let history = Arc::new(History::new(flows.len()));
    let site = Site {
        flows: flows.clone(),
        budget,
        groups,
        history: history.clone(),
    };
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/health", get(health))
        .merge(page::routes())
        .fallback(not_found)
        .with_state(site);
    tokio::select! {
        () = history::keep(history, flows) => {}
        result = axum::serve(listener, app) => {
            if let Err(error) = result {
                tracing::warn!(%error, "the HTTP endpoint stopped");
            }
        }
    }
}

async fn metrics(State(site): State<Site>) -> impl IntoResponse {
    let mut text = PrometheusText::default();
    site.budget.write_prometheus(&mut text);
    strait_mirror::write_io_prometheus(&mut text);
    site.groups.write_prometheus(&mut text);
    for flow in site.flows.iter() {
        flow.write_prometheus(&mut text);
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text.finish(),
    )
}

async fn status(State(site): State<Site>) -> impl IntoResponse {
    let flows: Vec<_> = site.flows.iter().map(|f| f.status()).collect();
    let buffer = serde_json::json!({
        "bytes": site.budget.used(),
        "max_bytes": site.budget.high_water(),
        "limit_bytes": site.budget.limit(),
    });
    // Which byte path the connections take (`strait.io`): how many are on io_uring now.
    let io = serde_json::json!({
        "io_uring_connections": strait_client::Ring::started().map_or(0, |ring| ring.stats().sockets()),
    });
    let body = serde_json::json!({ "flows": flows, "buffer": buffer, "io": io, "groups": site.groups.status() });
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string_pretty(&body).unwrap_or_default(),
    )
}

async fn health(State(site): State<Site>) -> impl IntoResponse {
    let mut unhealthy: Vec<String> = site
        .flows
        .iter()
        .filter(|f| !f.is_healthy())
        .map(|f| {
            let mut tasks: String = f
                .failing_tasks()
                .iter()
                .map(|(task, why)| format!(", {task} failing: {why}"))
                .chain(
                    f.waiting_topics()
                        .iter()
                        .map(|(topic, refused)| format!(", topic {topic} waiting: {}", refused.message)),
                )
                .collect();
            for (worker, why) in f.workers_down() {
                tasks.push_str(&format!(", {worker} restarting: {why}"));
            }
            format!("{} {}{tasks}", f.flow(), f.state().0.as_str())
        })
        .collect();
    unhealthy.extend(site.groups.problems());
    if unhealthy.is_empty() {
        (StatusCode::OK, "ok\n".to_owned())
    } else {
        let body = format!("unhealthy (see /status): {}\n", unhealthy.join(", "));
        (StatusCode::SERVICE_UNAVAILABLE, body)
    }
}

async fn not_found(method: Method) -> impl IntoResponse {
    if method == Method::GET {
        (
            StatusCode::NOT_FOUND,
            "not found: try /, /metrics, /status or /health\n",
        )
    } else {
        (StatusCode::METHOD_NOT_ALLOWED, "only GET is served\n")
    }
}
