//! The HTTP endpoint of `strait run`: `/metrics` (Prometheus text), `/status` (JSON) and
//! `/health`. A few lines of HTTP/1.1 on tokio: every response closes its connection, which is
//! all a Prometheus scraper or a liveness probe needs.

use std::sync::Arc;
use std::time::Duration;

use strait_mirror::{Budget, PrometheusText, Stats};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request head we read.
const MAX_REQUEST: usize = 8 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves the endpoint on `listener` for as long as the task runs.
pub async fn serve(listener: TcpListener, flows: Arc<Vec<Arc<Stats>>>, budget: Arc<Budget>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let (flows, budget) = (flows.clone(), budget.clone());
                tokio::spawn(async move {
                    if let Err(error) = respond(stream, &flows, &budget).await {
                        tracing::debug!(%error, "HTTP request failed");
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "accepting an HTTP connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn respond(mut stream: TcpStream, flows: &[Arc<Stats>], budget: &Budget) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let read = async {
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
            let n = stream.read(&mut buffer).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buffer[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(READ_TIMEOUT, read)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "request head not received in time"))??;
    let head = String::from_utf8_lossy(&head);
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET", "/metrics") => {
            let mut text = PrometheusText::default();
            budget.write_prometheus(&mut text);
            for flow in flows {
                flow.write_prometheus(&mut text);
            }
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", text.finish())
        }
        ("GET", "/status") => {
            let status: Vec<_> = flows.iter().map(|f| f.status()).collect();
            let buffer = serde_json::json!({
                "bytes": budget.used(),
                "max_bytes": budget.high_water(),
                "limit_bytes": budget.limit(),
            });
            let body = serde_json::to_string_pretty(&serde_json::json!({ "flows": status, "buffer": buffer }))?;
            ("200 OK", "application/json", body)
        }
        ("GET", "/health") => {
            let unhealthy: Vec<String> = flows
                .iter()
                .filter(|f| !f.is_healthy())
                .map(|f| {
                    let tasks: String = f
                        .failing_tasks()
                        .iter()
                        .map(|(task, why)| format!(", {task} failing: {why}"))
                        .collect();
                    format!("{} {}{tasks}", f.flow(), f.state().0.as_str())
                })
                .collect();
            if unhealthy.is_empty() {
                ("200 OK", "text/plain", "ok\n".to_owned())
            } else {
                let body = format!("unhealthy (see /status): {}\n", unhealthy.join(", "));
                ("503 Service Unavailable", "text/plain", body)
            }
        }
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "not found: try /metrics, /status or /health\n".to_owned(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET is served\n".to_owned(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
