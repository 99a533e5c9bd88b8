//! The status page at `/` of a running `strait run`, looked at in headless Chromium: the flow is
//! shown, its lag reaches 0, its plots fill with samples, the page refreshes itself, and the
//! partition table filters by topic.

use std::ffi::OsStr;
use std::path::PathBuf;

use serde_json::Value;
use strait_testkit::{debian_program, Browser};
use strait_tests::*;

use crate::mirror::write_numbered;

/// What the test reads off the page, as the page's own script sees the DOM.
const LOOK: &str = r#"
const card = document.querySelector('article.flow[data-flow="source->target"]');
const rows = [...document.querySelectorAll('#partitions tbody tr')].map((tr) =>
  [...tr.children].map((td) => td.textContent));
return {
  shown: card !== null,
  state: card && card.dataset.state,
  lag: card && Number(card.dataset.lagRecords),
  samples: card ? [...card.querySelectorAll('svg[data-samples]')].map((s) => Number(s.dataset.samples)) : [],
  points: card ? [...card.querySelectorAll('svg polyline')].map((p) => p.getAttribute('points').split(' ').length) : [],
  refreshes: Number(document.body.dataset.refreshes),
  rows: rows,
  firstRender: window.straitFirstRender === undefined ? null : window.straitFirstRender,
};
"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_status_page_shows_a_flow_catching_up_in_a_real_browser() {
    let clusters = clusters();
    let source = client(&clusters.source).await;
    let topic = unique("page");
    let (partitions, batches, per_batch) = (6, 10, 500);
    create_topic(&source, &topic, partitions).await;
    write_numbered(&source, &topic, partitions, batches, per_batch).await;
    let total = i64::from(partitions) * (batches * per_batch) as i64;

    let port = free_port();
    let config = std::env::temp_dir().join(format!("{topic}.properties"));
    std::fs::write(
        &config,
        mm2_properties(&topic, &format!("strait.http.listener = 127.0.0.1:{port}\n")),
    )
    .unwrap();
    let _mirror = StraitProcess::start(&[OsStr::new("run"), config.as_os_str()]);
    wait_until("the HTTP endpoint answers", || async {
        http_get(port, "/health").await.is_some()
    })
    .await;

    let chromium = debian_program("chromium", &["chromium", "chromium-driver"]).unwrap();
    let chromedriver = debian_program("chromedriver", &["chromium-driver"]).unwrap();
    let browser = Browser::start(&chromium, &chromedriver, 1400, 1100).expect("headless Chromium");
    browser.goto(&format!("http://127.0.0.1:{port}/")).unwrap();
    let look = || browser.execute(LOOK).expect("reading the page");
    wait_until("the page shows the flow", || async { look()["shown"] == true }).await;
    let first = look();
    println!(
        "first render {:.0} ms after navigation",
        first["firstRender"].as_f64().unwrap_or(f64::NAN)
    );

    // The table, filtered to the test's topic, shows every partition caught up.
    browser.type_into("#topic-filter", &topic).unwrap();
    wait_until(
        "the flow's lag reaches 0 and every record shows as mirrored",
        || async {
            let page = look();
            let rows = page["rows"].as_array().cloned().unwrap_or_default();
            let cell = |row: &Value, column: usize| row[column].as_str().unwrap_or_default().to_owned();
            let mirrored: i64 = rows.iter().map(|row| cell(row, 8).parse::<i64>().unwrap_or(0)).sum();
            page["lag"] == 0
                && page["state"] == "running"
                && rows.len() == partitions as usize
                && rows.iter().all(|row| cell(row, 0) == topic && cell(row, 6) == "0")
                && mirrored == total
        },
    )
    .await;

    // Nobody touches the page from here on: it refreshes itself, and its plots fill.
    let refreshes = look()["refreshes"].as_i64().unwrap();
    wait_until("the page refreshed itself and its plots hold samples", || async {
        let page = look();
        let counts =
            |key: &str| -> Vec<i64> { page[key].as_array().unwrap().iter().filter_map(Value::as_i64).collect() };
        let (samples, points) = (counts("samples"), counts("points"));
        page["refreshes"].as_i64().unwrap() >= refreshes + 2
            && samples.len() == 3
            && samples.iter().all(|&n| n >= 3)
            && points == samples
    })
    .await;

    let screenshot = output_folder().join("status-page.png");
    browser.screenshot(&screenshot).unwrap();
    println!("screenshot: {}", screenshot.display());
}

/// Where this test leaves its screenshot.
fn output_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("page")
}
