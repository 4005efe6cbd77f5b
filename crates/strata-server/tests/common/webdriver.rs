//! A minimal WebDriver client: the W3C protocol's JSON over HTTP, spoken to
//! chromedriver driving headless Chromium, for tests of the web UI. The
//! driver is a child process on a free port, stopped on drop with its
//! browser.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use super::{free_port, require_binary, wait_until};

pub const CHROMIUM_BIN: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER_BIN: &str = "/usr/bin/chromedriver";
/// The key of an element reference in WebDriver's JSON.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long [`Browser::wait_for`] polls by default.
pub const WAIT: Duration = Duration::from_secs(20);

/// A headless Chromium session.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    /// Where a failed wait saves what the page looked like.
    pub failure_shot: PathBuf,
    _logs: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a `width`×`height`
    /// window, the browser's console log kept for [`Browser::console`].
    pub fn start(width: u32, height: u32, failure_shot: &Path) -> Self {
        require_binary(CHROMIUM_BIN, "chromium");
        require_binary(CHROMEDRIVER_BIN, "chromium-driver");
        let logs = tempfile::tempdir().unwrap();
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER_BIN)
            .arg(format!("--port={port}"))
            .arg(format!(
                "--log-path={}",
                logs.path().join("chromedriver.log").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let mut b = Self {
            driver,
            port,
            session: String::new(),
            failure_shot: failure_shot.to_owned(),
            _logs: logs,
        };
        wait_until(Duration::from_secs(20), "chromedriver is ready", || {
            request(port, "GET", "/status", &[])
                .is_ok_and(|(status, v)| status == 200 && v["value"]["ready"] == true)
        });
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM_BIN,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", format!("--window-size={width},{height}")],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let v = b.raw("POST", "/session", &caps);
        b.session = v["sessionId"].as_str().expect("a session id").to_owned();
        b
    }

    /// One protocol call; answers its `value`, panics with the driver's
    /// error.
    fn raw(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = if method == "GET" || method == "DELETE" {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let (status, v) = request(self.port, method, path, &body)
            .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}"));
        assert_eq!(status, 200, "chromedriver {method} {path}: {v}");
        v["value"].clone()
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        self.raw(method, &format!("/session/{}{path}", self.session), &body)
    }

    /// Runs a Chrome DevTools Protocol command through chromedriver.
    pub fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.call(
            "POST",
            "/goog/cdp/execute",
            json!({"cmd": cmd, "params": params}),
        )
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url }));
    }

    /// The element `css` selects, once there is one.
    pub fn find(&self, css: &str) -> String {
        let script = format!("return !!document.querySelector({})", json!(css));
        self.wait_for(&format!("{css} exists"), &script);
        let v = self.call(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT].as_str().unwrap().to_owned()
    }

    pub fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), json!({}));
    }

    /// Types `text` into `css` as key presses (`\u{E004}` is Tab).
    pub fn type_text(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({ "text": text }),
        );
    }

    pub fn clear(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/clear"), json!({}));
    }

    /// Runs `script` (a function body; `return` answers) in the page.
    pub fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Polls `script` until it answers something other than null, false,
    /// 0 or ""; answers that. On timeout saves a screenshot and panics
    /// naming `what` and the page's text.
    pub fn wait_for(&self, what: &str, script: &str) -> Value {
        self.wait_for_within(WAIT, what, script)
    }

    pub fn wait_for_within(&self, timeout: Duration, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.eval(script);
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
            if truthy {
                return v;
            }
            if Instant::now() >= deadline {
                self.screenshot(&self.failure_shot);
                let text = self.eval("return document.body.innerText.slice(0, 2000)");
                panic!(
                    "timed out after {timeout:?} waiting until {what}; screenshot {}; page text: {}",
                    self.failure_shot.display(),
                    text.as_str().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Moves the mouse over `css`, `at` pixels from the element's centre.
    pub fn hover(&self, css: &str, at: (i64, i64)) {
        let id = self.find(css);
        self.call(
            "POST",
            "/actions",
            json!({"actions": [{
                "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": [{"type": "pointerMove", "duration": 100, "origin": { ELEMENT: id },
                             "x": at.0, "y": at.1}],
            }]}),
        );
    }

    /// Drags the mouse over `css` from `from` to `to`, offsets in pixels
    /// from the element's centre.
    pub fn drag(&self, css: &str, from: (i64, i64), to: (i64, i64)) {
        let id = self.find(css);
        let origin = json!({ ELEMENT: id });
        self.call(
            "POST",
            "/actions",
            json!({"actions": [{
                "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": [
                    {"type": "pointerMove", "duration": 0, "origin": origin, "x": from.0, "y": from.1},
                    {"type": "pointerDown", "button": 0},
                    {"type": "pointerMove", "duration": 300, "origin": origin, "x": to.0, "y": to.1},
                    {"type": "pointerUp", "button": 0},
                ],
            }]}),
        );
        self.call("DELETE", "/actions", json!({}));
    }

    /// Saves the window as a PNG at `path`.
    pub fn screenshot(&self, path: &Path) {
        let v = self.call("GET", "/screenshot", json!({}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }

    /// The browser console's entries since the last call (level, source,
    /// message), as chromedriver's log endpoint hands them over once.
    pub fn console(&self) -> Vec<Value> {
        let v = self.call("POST", "/se/log", json!({"type": "browser"}));
        v.as_array().cloned().expect("the browser log is a list")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            // Closes the browser; the driver then exits when killed.
            let path = format!("/session/{}", self.session);
            let _ = request(self.port, "DELETE", &path, &[]);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One request to chromedriver, its JSON answer read to its
/// `Content-Length`: the driver may keep the connection open after it.
fn request(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Value)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim();
        if l.is_empty() {
            break;
        }
        if let Some((name, value)) = l.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut answer = vec![0; length];
    reader.read_exact(&mut answer)?;
    let v = serde_json::from_slice(&answer)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((status, v))
}
