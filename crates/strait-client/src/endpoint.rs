//! One HTTP/1.1 request to an identity endpoint (an OAuth token endpoint, AWS STS, the EC2
//! instance metadata service, a container credentials endpoint), over TLS for `https` URLs,
//! bounded in time and in the size of the answer.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// The largest answer read: token and credential answers are a few kilobytes.
const MAX_RESPONSE: usize = 1024 * 1024;

/// Why a request got no answer.
#[derive(Debug)]
pub(crate) struct Failure {
    /// What went wrong; never a header or body value.
    pub message: String,
    /// Whether trying again later may succeed (the endpoint was down or slow).
    pub retriable: bool,
}

fn failure(message: String, retriable: bool) -> Failure {
    Failure { message, retriable }
}

/// Limits and TLS of requests to one endpoint.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// For `https` URLs.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
}

impl Endpoint {
    /// Sends `request` to `url` (its scheme, host and port; the request carries the path) and
    /// returns the status and the body.
    pub async fn send(&self, url: &http::Uri, request: http::Request<Full<Bytes>>) -> Result<(u16, Bytes), Failure> {
        let host = url
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let https = url.scheme_str() == Some("https");
        let port = url.port_u16().unwrap_or(if https { 443 } else { 80 });
        let stream = tokio::time::timeout(self.connect_timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| failure(format!("connecting timed out after {:?}", self.connect_timeout), true))?
            .map_err(|e| failure(format!("cannot connect: {e}"), true))?;
        let exchange = async {
            if !https {
                return exchange(stream, request).await;
            }
            let tls = match &self.tls {
                Some(tls) => tls.clone(),
                None => crate::tls::tls_config(&|_| None)
                    .map_err(|e| failure(e.to_string(), false))?
                    .rustls()
                    .clone(),
            };
            let name = rustls_pki_types::ServerName::try_from(host.to_owned())
                .map_err(|_| failure("the host is neither a DNS name nor an IP address".into(), false))?;
            let stream = tokio_rustls::TlsConnector::from(tls)
                .connect(name, stream)
                .await
                .map_err(|e| failure(format!("the TLS handshake failed: {e}"), true))?;
            exchange(stream, request).await
        };
        tokio::time::timeout(self.read_timeout, exchange)
            .await
            .map_err(|_| failure(format!("no answer within {:?}", self.read_timeout), true))?
    }
}

async fn exchange<S>(stream: S, request: http::Request<Full<Bytes>>) -> Result<(u16, Bytes), Failure>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = |e: hyper::Error| failure(format!("HTTP exchange failed: {e}"), true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(io)?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await.map_err(io)?;
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| failure(format!("reading the answer failed: {e}"), true))?
        .to_bytes();
    driver.abort();
    Ok((status, body))
}
