//! A real headless Chromium, driven over WebDriver (chromedriver) with fantoccini.
//!
//! Chromium and chromedriver come from the distribution's packages (`chromium`,
//! `chromium-driver`). Without them [`Browser::start`] returns `None` and the caller skips, unless
//! `SHARDLITE_REQUIRE_BROWSER=1` (CI sets it), which turns their absence into a failure.
//! `SHARDLITE_CHROMEDRIVER` and `SHARDLITE_CHROMIUM` override where they are found.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// How long any wait for the page may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A headless Chromium session. Dropping it ends chromedriver and the browser it started.
pub struct Browser {
    /// The WebDriver session, for what the helpers below do not cover.
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

fn located(variable: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path));
    }
    candidates.iter().find_map(|candidate| {
        let path = Path::new(candidate);
        if path.is_absolute() {
            path.is_file().then(|| path.to_path_buf())
        } else {
            find_on_path(candidate)
        }
    })
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a fresh headless Chromium session
    /// with its own profile directory. `None` when Chromium is not installed (see the module docs).
    pub async fn start() -> Option<Self> {
        let required = std::env::var("SHARDLITE_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
        let driver_binary = located("SHARDLITE_CHROMEDRIVER", &["chromedriver"]);
        let chromium = located(
            "SHARDLITE_CHROMIUM",
            &["/usr/lib/chromium/chromium", "chromium", "chromium-browser"],
        );
        let (Some(driver_binary), Some(chromium)) = (driver_binary, chromium) else {
            assert!(
                !required,
                "SHARDLITE_REQUIRE_BROWSER=1 but chromium or chromedriver is missing: \
                 apt-get install -y chromium chromium-driver"
            );
            eprintln!("skipping the browser checks: chromium and chromedriver are not installed");
            return None;
        };

        let mut driver = Command::new(&driver_binary)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", driver_binary.display()));
        let stdout = driver.stdout.take().expect("chromedriver stdout");
        let port = tokio::task::spawn_blocking(move || {
            let mut lines = BufReader::new(stdout).lines();
            let port = lines.by_ref().map_while(Result::ok).find_map(|line| {
                line.split("started successfully on port ")
                    .nth(1)
                    .and_then(|rest| rest.trim_end_matches('.').trim().parse::<u16>().ok())
            });
            // Keep draining so chromedriver never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            port
        })
        .await
        .expect("read chromedriver's port")
        .expect("chromedriver did not report its port");

        let profile = tempfile::Builder::new()
            .prefix("shardlite-chromium")
            .tempdir()
            .expect("a profile dir");
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({ "binary": chromium, "args": args }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("open a Chromium session");
        Some(Self {
            client,
            driver,
            _profile: profile,
        })
    }

    /// Ends the session (the browser quits), then chromedriver.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }

    /// Navigates to `url`.
    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|err| panic!("open {url}: {err}"));
    }

    /// The first element matching `css`, waiting for it to appear.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .every(Duration::from_millis(50))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("'{css}' never appeared: {err}"))
    }

    /// Every element matching `css` now.
    pub async fn all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("find '{css}': {err}"))
    }

    /// Clicks the element matching `css` (waiting for it).
    pub async fn click(&self, css: &str) {
        self.wait_for(css)
            .await
            .click()
            .await
            .unwrap_or_else(|err| panic!("click '{css}': {err}"));
    }

    /// Types `text` into the (cleared) input matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let input = self.wait_for(css).await;
        input.clear().await.unwrap_or_else(|err| panic!("clear '{css}': {err}"));
        input
            .send_keys(text)
            .await
            .unwrap_or_else(|err| panic!("type into '{css}': {err}"));
    }

    /// Runs `script` in the page (`arguments` are its arguments) and returns its value.
    pub async fn run(&self, script: &str, arguments: Vec<Value>) -> Value {
        self.client
            .execute(script, arguments)
            .await
            .unwrap_or_else(|err| panic!("script failed: {err}\n{script}"))
    }

    /// Waits until `script` returns `true`; `what` names the condition in the failure.
    pub async fn wait_until(&self, what: &str, script: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.run(script, vec![]).await == Value::Bool(true) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The text of the element matching `css`, waiting for it.
    pub async fn text(&self, css: &str) -> String {
        self.wait_for(css)
            .await
            .text()
            .await
            .unwrap_or_else(|err| panic!("text of '{css}': {err}"))
    }

    /// Saves a PNG of the viewport as `dir/name.png`.
    pub async fn screenshot(&self, dir: &Path, name: &str) {
        let png = self.client.screenshot().await.expect("take a screenshot");
        std::fs::create_dir_all(dir).expect("the screenshot folder");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // chromedriver leads its own process group, and the browser it started is in it; the
        // `--` keeps procps' kill from reading the negative group id as an option.
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
