//! Headless Chromium, driven through ChromeDriver's W3C WebDriver HTTP API, for tests that look
//! at Strait's status page as a person would: load it, read the DOM with a script, type, and
//! take a screenshot.
//!
//! ChromeDriver runs under a guard (it dies with us); dropping the [`Browser`] ends its session
//! first, which closes Chromium.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::cluster::free_port;
use crate::{Error, Guarded, Result, ScratchDir};

/// How long ChromeDriver and Chromium may take to start, and one command to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A headless Chromium session.
#[derive(Debug)]
pub struct Browser {
    port: u16,
    session: String,
    _driver: Guarded,
    _profile: ScratchDir,
}

impl Browser {
    /// Starts ChromeDriver on a free port and opens a headless Chromium session with a window
    /// of `width` × `height` pixels. `chromium` and `chromedriver` are the two programs'
    /// paths.
    pub fn start(chromium: &Path, chromedriver: &Path, width: u32, height: u32) -> Result<Browser> {
        let port = free_port()?;
        let profile = ScratchDir::new("chromium")?;
        let mut command = Command::new(chromedriver);
        command.arg(format!("--port={port}"));
        let driver = Guarded::spawn(&command, &profile.path().join("chromedriver.log"))?;
        let deadline = Instant::now() + START_TIMEOUT;
        while request(port, "GET", "/status", None)
            .ok()
            .and_then(|status| status["value"]["ready"].as_bool())
            != Some(true)
        {
            if Instant::now() > deadline {
                return Err(browser_error(
                    "starting chromedriver",
                    format!("not ready within {START_TIMEOUT:?}; see {}", profile.path().display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().join("profile").display()),
                ],
            },
        }}});
        let answer = request(port, "POST", "/session", Some(&capabilities))?;
        let session = answer["value"]["sessionId"]
            .as_str()
            .ok_or_else(|| browser_error("opening a session", answer.to_string()))?
            .to_owned();
        Ok(Browser {
            port,
            session,
            _driver: driver,
            _profile: profile,
        })
    }

    fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let answer = request(self.port, method, &format!("/session/{}{path}", self.session), body)?;
        if let Some(error) = answer["value"]["error"].as_str() {
            let message = answer["value"]["message"].as_str().unwrap_or_default();
            return Err(browser_error(
                &format!("{method} {path}"),
                format!("{error}: {message}"),
            ));
        }
        Ok(answer["value"].clone())
    }

    /// Loads `url` and waits until its document has loaded.
    pub fn goto(&self, url: &str) -> Result<()> {
        self.command("POST", "/url", Some(&json!({ "url": url }))).map(drop)
    }

    /// Runs `script` (the body of a function) in the page and returns what it returns.
    pub fn execute(&self, script: &str) -> Result<Value> {
        self.command("POST", "/execute/sync", Some(&json!({ "script": script, "args": [] })))
    }

    /// Types `text` into the element that the CSS `selector` finds.
    pub fn type_into(&self, selector: &str, text: &str) -> Result<()> {
        let element = self.command(
            "POST",
            "/element",
            Some(&json!({ "using": "css selector", "value": selector })),
        )?;
        let id = element
            .as_object()
            .and_then(|e| e.values().next())
            .and_then(Value::as_str)
            .ok_or_else(|| browser_error(&format!("finding `{selector}`"), element.to_string()))?;
        self.command("POST", &format!("/element/{id}/value"), Some(&json!({ "text": text })))
            .map(drop)
    }

    /// Saves a PNG screenshot of the window to `path`.
    pub fn screenshot(&self, path: &Path) -> Result<PathBuf> {
        let png = self.command("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .map_err(|e| browser_error("decoding the screenshot", e.to_string()))?;
        let io = |source| Error::Io {
            what: "writing the screenshot",
            path: path.to_owned(),
            source,
        };
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(io)?;
        }
        std::fs::write(path, png).map_err(io)?;
        Ok(path.to_owned())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ends the session, which closes Chromium; the guard then stops ChromeDriver.
        let _ = request(self.port, "DELETE", &format!("/session/{}", self.session), None);
    }
}

fn browser_error(what: &str, reason: String) -> Error {
    Error::Browser {
        what: what.to_owned(),
        reason,
    }
}

/// One HTTP/1.1 request to ChromeDriver on loopback, answered with JSON.
fn request(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    let what = format!("{method} {path}");
    let fail = |reason: String| browser_error(&what, reason);
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).map_err(|e| fail(e.to_string()))?;
    stream
        .set_read_timeout(Some(COMMAND_TIMEOUT))
        .map_err(|e| fail(e.to_string()))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    // ChromeDriver keeps the connection open whatever we ask: read the head, then as many
    // bytes as it says.
    let mut response = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    let (head_end, length) = loop {
        let n = stream.read(&mut buffer).map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            return Err(fail("the connection closed before the response's head ended".into()));
        }
        response.extend_from_slice(&buffer[..n]);
        if let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .ok_or_else(|| fail(format!("no Content-Length in {head}")))?;
            break (end + 4, length);
        }
    };
    while response.len() < head_end + length {
        let n = stream.read(&mut buffer).map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            return Err(fail("the connection closed before the response's body ended".into()));
        }
        response.extend_from_slice(&buffer[..n]);
    }
    let body = &response[head_end..head_end + length];
    serde_json::from_slice(body).map_err(|e| fail(format!("{e} in {}", String::from_utf8_lossy(body))))
}
