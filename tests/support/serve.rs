//! `shardlite serve` as a real process: its address, its log, signals, and stopping it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `shardlite serve`. Dropping it kills the process.
pub struct ServeProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`, from the first line the daemon prints.
    pub base_url: String,
    log: Arc<Mutex<String>>,
    stdout: Arc<Mutex<Vec<String>>>,
}

impl ServeProcess {
    /// Starts `shardlite serve ARGS` (add `--listen 127.0.0.1:0`) and waits for its address.
    /// Panics with the daemon's log when it exits instead.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[])
    }

    /// [`start`](Self::start) with `env` set for the daemon.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(super::cli::binary())
            .arg("serve")
            .args(args)
            .envs(env.iter().copied())
            .env_remove("SHARDLITE_API_KEY")
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run shardlite serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        let (sender, receiver) = mpsc::channel();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let later = Arc::clone(&lines);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = sender.send(line);
            // Keep reading, so the daemon never blocks on a full pipe.
            for line in reader.lines().map_while(Result::ok) {
                later.lock().unwrap().push(line);
            }
        });
        let line = receiver.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let Some(address) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the daemon did not start: {line:?}\n{}", log.lock().unwrap());
        };
        Self {
            base_url: address.to_owned(),
            child,
            log,
            stdout: lines,
        }
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends the process `signal` (`HUP`, `TERM`) with `kill`.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits until a line of stdout after the first starts with `prefix` (at most 30 s) and
    /// returns the rest of it.
    pub fn wait_for_stdout(&self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found = self
                .stdout
                .lock()
                .unwrap()
                .iter()
                .find_map(|line| line.strip_prefix(prefix).map(str::to_owned));
            if let Some(rest) = found {
                return rest;
            }
            assert!(Instant::now() < deadline, "stdout never had a line starting {prefix:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the daemon logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the log holds `needle` (at most 30 s), and returns the log.
    pub fn wait_for_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            assert!(Instant::now() < deadline, "the log never said {needle:?}:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the daemon with SIGTERM and returns its whole log.
    pub fn stop(mut self) -> String {
        self.signal("TERM");
        let _ = self.child.wait();
        self.log()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
