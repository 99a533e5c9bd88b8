//! `status-page`: how long Strait's status page takes to show a flow of `--topics` ×
//! `--partitions` partitions (2 000 by default) in headless Chromium, from navigation to the
//! first complete render (the page's own `window.straitFirstRender`), while the flow catches
//! up and once it has; and how large and slow its JSON endpoints are at that size.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

use strait_testkit::{debian_program, Browser};

use crate::bench::{Bench, Load};
use crate::kafka;
use crate::Mirror;

/// Page loads measured in each phase.
const LOADS: usize = 5;
/// Records loaded into the source (512 B, lz4).
const RECORDS: u64 = 400_000;

/// What the case measured.
#[derive(Debug, Clone)]
pub struct StatusPageRow {
    /// Partitions of the flow shown.
    pub partitions: i64,
    /// First render times (ms) while the flow caught up, sorted.
    pub catching_up_ms: Vec<f64>,
    /// First render times (ms) once it had caught up, sorted.
    pub caught_up_ms: Vec<f64>,
    /// `/api/overview`: bytes and ms to answer.
    pub overview: (usize, f64),
    /// `/api/partitions` (one page of 50): bytes and ms.
    pub partitions_page: (usize, f64),
    /// `/status` (every partition): bytes and ms.
    pub status: (usize, f64),
}

impl Bench {
    /// Runs the case.
    pub async fn status_page(&mut self) -> anyhow::Result<StatusPageRow> {
        let (topics, partitions) = (self.args.topics, self.args.partitions);
        let total = i64::from(topics) * i64::from(partitions);
        println!("[status-page] a flow of {topics} × {partitions} = {total} partitions, {RECORDS} records of 512 B");
        let load = Load {
            even: true,
            topics: (0..topics)
                .map(|i| format!("page{topics}x{partitions}-{i:03}"))
                .collect(),
            partitions,
            records: RECORDS,
            record_size: 512,
            codec: "lz4".into(),
            batch_size: 65536,
            linger_ms: 10,
        };
        let source = &self.source;
        kafka::create_topics(&source.client, &load.topics, partitions).await?;
        self.load(&source.bootstrap, &load).await?;
        let port = strait_testkit::free_port()?;
        let config = self.write_config(
            "status-page",
            Mirror::Strait,
            &source.bootstrap,
            &crate::bench::regex_for(&load.topics),
            "lz4",
            true,
        )?;
        std::fs::write(
            &config,
            std::fs::read_to_string(&config)? + &format!("strait.http.listener = 127.0.0.1:{port}\n"),
        )?;
        let log = self.scratch.path().join("status-page.log");
        let _mirror = self.spawn(Mirror::Strait, &config, &log)?;

        let deadline = Instant::now() + Duration::from_secs(self.args.timeout);
        let flow = |json: &serde_json::Value| json["flows"][0].clone();
        wait(deadline, "the flow shows every partition", || {
            get(port, "/api/partitions?size=1").is_ok_and(|(json, _, _)| json["total"].as_i64() >= Some(total))
        })?;
        let chromium = debian_program("chromium", &["chromium", "chromium-driver"])?;
        let chromedriver = debian_program("chromedriver", &["chromium-driver"])?;
        let browser = Browser::start(&chromium, &chromedriver, 1400, 1100)?;
        let url = format!("http://127.0.0.1:{port}/");
        let mut catching_up_ms = Vec::new();
        for _ in 0..LOADS {
            catching_up_ms.push(first_render(&browser, &url, deadline)?);
        }
        wait(deadline, "the flow caught up", || {
            get(port, "/api/overview").is_ok_and(|(json, _, _)| {
                let flow = flow(&json);
                flow["summary"]["lag_records"] == 0 && flow["records"].as_u64() >= Some(RECORDS)
            })
        })?;
        let mut caught_up_ms = Vec::new();
        for _ in 0..LOADS {
            caught_up_ms.push(first_render(&browser, &url, deadline)?);
        }
        let measure = |path: &str| get(port, path).map(|(_, bytes, ms)| (bytes, ms));
        let row = StatusPageRow {
            partitions: total,
            catching_up_ms: sorted(catching_up_ms),
            caught_up_ms: sorted(caught_up_ms),
            overview: measure("/api/overview")?,
            partitions_page: measure("/api/partitions?flow=0&page=0&size=50")?,
            status: measure("/status")?,
        };
        println!("[status-page] {row:?}");
        drop(browser);
        crate::bench::clear_topics(&self.target.client).await?;
        crate::bench::clear_topics(&source.client).await?;
        Ok(row)
    }
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

/// Loads the page and returns how long it took, in ms from navigation, to its first complete
/// render.
fn first_render(browser: &Browser, url: &str, deadline: Instant) -> anyhow::Result<f64> {
    browser.goto("about:blank")?;
    browser.goto(url)?;
    loop {
        if let Some(ms) = browser.execute("return window.straitFirstRender ?? null")?.as_f64() {
            return Ok(ms);
        }
        anyhow::ensure!(Instant::now() < deadline, "the page did not render before the timeout");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait(deadline: Instant, what: &str, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    while !done() {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// GETs `path` from Strait's HTTP listener: the JSON, its size in bytes, and the ms it took.
fn get(port: u16, path: &str) -> anyhow::Result<(serde_json::Value, usize, f64)> {
    let started = Instant::now();
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let start = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("not an HTTP response from {path}"))?
        + 4;
    let body = &response[start..];
    Ok((serde_json::from_slice(body)?, body.len(), ms))
}
