//! `shardlite serve --tls-cert --tls-key` as a process: unusable PEM files refused at start
//! naming the file, SIGHUP reloading the certificate for new connections while open ones stay
//! up, and the CLI and a map's `https://` endpoint shard reaching it.
#![cfg(all(feature = "cli", feature = "server", unix))]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::cli::{binary, json_of, seeded_with, shardlite, stderr, stdout};
use crate::support::temp_dir;
use crate::support::tls::{TestCa, TlsFixture};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

/// How long the daemon may take to print a line we wait for.
const LINE_TIMEOUT: Duration = Duration::from_secs(60);

/// A `shardlite serve` process and its output lines, stopped when dropped.
struct Served {
    child: Child,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

impl Served {
    fn start(master: &Path, tls: &[&std::ffi::OsStr]) -> Self {
        let mut child = Command::new(binary())
            .args(["serve", "--create", "--listen", "127.0.0.1:0", "--master"])
            .arg(master)
            .args(tls)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run shardlite serve");
        let stdout = lines(child.stdout.take().expect("piped stdout"));
        let stderr = lines(child.stderr.take().expect("piped stderr"));
        Self { child, stdout, stderr }
    }

    /// The next stderr line containing `needle`.
    fn wait_for_log(&self, needle: &str) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(LINE_TIMEOUT)
                .unwrap_or_else(|_| panic!("the daemon never logged {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    fn hang_up(&self) {
        let status = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -HUP failed");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each line `reader` yields, sent on the returned channel.
fn lines(reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Writes `text` to `path` through a rename, as deployment tools replace certificates.
fn replace(path: &Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).expect("write the new file");
    std::fs::rename(&next, path).expect("replace the file");
}

#[tokio::test]
async fn sighup_reloads_the_certificate_for_new_connections_and_keeps_open_ones() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let served = Served::start(
        &dir.path().join("plain.db"),
        &[
            "--tls-cert".as_ref(),
            tls.server_cert.as_os_str(),
            "--tls-key".as_ref(),
            tls.server_key.as_os_str(),
        ],
    );
    let first = served
        .stdout
        .recv_timeout(LINE_TIMEOUT)
        .expect("the daemon prints its address");
    let base = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let healthz = format!("{base}/healthz");

    // A client that trusts only the first CA opens a connection (HTTP/2, kept open).
    let before = TlsFixture::https_client(&tls.ca, None);
    assert!(
        before
            .get(&healthz)
            .send()
            .await
            .expect("first CA")
            .status()
            .is_success()
    );

    // The certificate is replaced by one from another CA, and the daemon told to reload.
    let next_ca = TestCa::new("next CA");
    let next = next_ca.server(&["127.0.0.1"]);
    let next_ca_file = dir.path().join("next-ca.pem");
    std::fs::write(&next_ca_file, next_ca.pem()).unwrap();
    replace(&tls.server_cert, &next.certificate);
    replace(&tls.server_key, &next.key);
    served.hang_up();
    served.wait_for_log("TLS certificate and key reloaded");

    // New connections get the new certificate: a client of the new CA is served ...
    let after = TlsFixture::https_client(&next_ca_file, None);
    assert!(after.get(&healthz).send().await.expect("new CA").status().is_success());
    // ... and a new client of the old CA is refused, naming the untrusted issuer.
    let err = TlsFixture::https_client(&tls.ca, None)
        .get(&healthz)
        .send()
        .await
        .unwrap_err();
    assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");
    // The connection opened before the reload is still up: a new handshake would have failed.
    assert!(
        before
            .get(&healthz)
            .send()
            .await
            .expect("open connection kept")
            .status()
            .is_success()
    );

    // A reload that fails keeps the certificate in use and says why, without the key.
    std::fs::write(&tls.server_key, "not a key").unwrap();
    served.hang_up();
    let warning = served.wait_for_log("TLS files not reloaded");
    assert!(
        warning.contains("--tls-key") && warning.contains("server.key"),
        "{warning}"
    );
    let fresh = TlsFixture::https_client(&next_ca_file, None);
    assert!(
        fresh
            .get(&healthz)
            .send()
            .await
            .expect("still the new certificate")
            .status()
            .is_success()
    );
}

/// At the default log level a refused handshake is logged at `warn` with rustls' reason and
/// what to check: here a client certificate from a CA the daemon does not trust.
#[tokio::test]
async fn a_refused_client_certificate_is_logged_at_the_default_level_with_its_reason() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let served = Served::start(
        &dir.path().join("plain.db"),
        &[
            "--tls-cert".as_ref(),
            tls.server_cert.as_os_str(),
            "--tls-key".as_ref(),
            tls.server_key.as_os_str(),
            "--tls-client-ca".as_ref(),
            tls.ca.as_os_str(),
        ],
    );
    let first = served
        .stdout
        .recv_timeout(LINE_TIMEOUT)
        .expect("the daemon prints its address");
    let base = first.strip_prefix("listening on ").expect("its address").to_owned();
    let rogue = TlsFixture::https_client(&tls.ca, Some((&tls.rogue_client_cert, &tls.rogue_client_key)));
    let _ = rogue.get(format!("{base}/healthz")).send().await;
    let line = served.wait_for_log("TLS handshake failed");
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("UnknownIssuer"), "{line}");
    assert!(line.contains("--tls-client-ca"), "{line}");
}

#[test]
fn serve_refuses_unusable_tls_files_naming_them() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let master = dir.path().join("plain.db");
    let garbage = dir.path().join("garbage.key");
    std::fs::write(
        &garbage,
        "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ!!\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.pem");
    let cases: [(&[&Path], &str, &Path); 3] = [
        (&[&missing, &tls.server_key], "--tls-cert", &missing),
        (&[&tls.server_cert, &garbage], "--tls-key", &garbage),
        (
            &[&tls.server_cert, &tls.server_key, &garbage],
            "--tls-client-ca",
            &garbage,
        ),
    ];
    for (files, flag, named) in cases {
        let mut command = Command::new(binary());
        command
            .args(["serve", "--create", "--listen", "127.0.0.1:0", "--master"])
            .arg(&master);
        for (flag, file) in ["--tls-cert", "--tls-key", "--tls-client-ca"].iter().zip(files) {
            command.arg(flag).arg(file);
        }
        let out = command.output().expect("run shardlite serve");
        let text = stderr(&out);
        assert!(!out.status.success(), "{flag}: {text}");
        assert!(
            text.contains(flag) && text.contains(&named.display().to_string()),
            "{text}"
        );
        assert!(!text.contains("c2VjcmV0"), "the key's content is never shown: {text}");
        assert!(out.stdout.is_empty(), "nothing listened: {text}");
    }
    // A certificate without its key is a usage error.
    let out = Command::new(binary())
        .args(["serve", "--create", "--master"])
        .arg(&master)
        .arg("--tls-cert")
        .arg(&tls.server_cert)
        .output()
        .expect("run shardlite serve");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--tls-key"), "{}", stderr(&out));
}

#[test]
fn the_cli_and_an_endpoint_shard_reach_a_tls_daemon() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let served = Served::start(
        &dir.path().join("plain.db"),
        &[
            "--tls-cert".as_ref(),
            tls.server_cert.as_os_str(),
            "--tls-key".as_ref(),
            tls.server_key.as_os_str(),
        ],
    );
    let first = served
        .stdout
        .recv_timeout(LINE_TIMEOUT)
        .expect("the daemon prints its address");
    let base = first.strip_prefix("listening on ").expect("address line").to_owned();

    // `--connection` with the CA, in both transports.
    for transport in ["Http", "Grpc"] {
        let connection = format!("Endpoint={base};Transport={transport};Server CA={}", tls.ca.display());
        let out = shardlite(&["sql", "-c", &connection, "--json", "SELECT 6 * 7 AS answer"]);
        assert!(out.status.success(), "{transport}: {}", stderr(&out));
        assert!(stdout(&out).contains("42"), "{transport}: {}", stdout(&out));
    }

    // A map whose shard is the daemon's `https://` endpoint: the handshake checks the daemon's
    // certificate against the system's roots, which this process is pointed at.
    let mut shard = ShardDefinition::local("s0", "");
    shard.data_source = None;
    shard.endpoint = Some(base.clone());
    shard.transport = Some("grpc".to_owned());
    let map = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 1,
        shards: vec![shard],
        bucket_ranges: vec![BucketRange::new(0, 1, "s0")],
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let master = seeded_with(dir.path(), &map);
    let status = |system_roots: &Path| {
        let out = Command::new(binary())
            .args(["status", "--json", "-c", &master])
            .env_remove("SHARDLITE_CONNECTION")
            .env_remove("SSL_CERT_DIR")
            .env("SSL_CERT_FILE", system_roots)
            .output()
            .expect("run shardlite status");
        (out.status.success(), json_of(&out)[0].clone())
    };
    let (succeeded, trusted) = status(&tls.ca);
    assert_eq!(trusted["healthy"], true, "{trusted}");
    assert!(succeeded, "every shard is healthy");
    // An unhealthy shard makes `status` exit non-zero, after the report.
    let (succeeded, untrusted) = status(&tls.rogue_ca);
    assert_eq!(untrusted["healthy"], false, "{untrusted}");
    assert!(!succeeded, "an unhealthy shard exits non-zero");
    let error = untrusted["error"].as_str().unwrap_or_default();
    assert!(error.contains("not signed by a trusted CA"), "{untrusted}");
}

/// The CLI names a refused handshake every time, over both transports: a daemon that requires a
/// client certificate, reached without one (its TLS 1.3 alert may come after the request).
#[test]
fn the_cli_names_a_missing_client_certificate_every_time() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let served = Served::start(
        &dir.path().join("plain.db"),
        &[
            "--tls-cert".as_ref(),
            tls.server_cert.as_os_str(),
            "--tls-key".as_ref(),
            tls.server_key.as_os_str(),
            "--tls-client-ca".as_ref(),
            tls.ca.as_os_str(),
        ],
    );
    let first = served
        .stdout
        .recv_timeout(LINE_TIMEOUT)
        .expect("the daemon prints its address");
    let base = first.strip_prefix("listening on ").expect("address line").to_owned();
    for round in 0..20 {
        for transport in ["Http", "Grpc"] {
            let connection = format!("Endpoint={base};Transport={transport};Server CA={}", tls.ca.display());
            let out = shardlite(&["sql", "-c", &connection, "SELECT 1"]);
            assert!(!out.status.success(), "{transport}: {}", stdout(&out));
            let said = stderr(&out);
            assert!(
                said.contains("the daemon requires a client certificate: set 'Client Certificate' and 'Client Key'"),
                "{transport}, round {round}: {said}"
            );
        }
    }
}
