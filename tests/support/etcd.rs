//! A real etcd cluster on loopback ports (Debian's `etcd-server`, which `.ci/run` installs):
//! members started as processes in a temp dir, stopped and started again by the tests, killed
//! when dropped.
//!
//! Without an `etcd` binary on the PATH the tests that need one say so and pass, unless
//! `SHARDLITE_REQUIRE_ETCD=1` (set by `.ci/run`) makes that a failure.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// One member: its ports and process.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// A running etcd cluster. Dropping it kills every member.
pub struct EtcdCluster {
    dir: TempDir,
    members: Vec<Member>,
}

/// `count` distinct free loopback ports. Every listener is held until all are chosen: a port
/// released at once can be handed out again by the next bind, and two members given the same
/// peer port make etcd refuse the cluster ("has duplicate url").
fn free_ports(count: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..count).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    held.iter()
        .map(|listener| listener.local_addr().unwrap().port())
        .collect()
}

fn etcd_binary() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("etcd"))
            .find(|candidate| candidate.is_file())
    })
}

impl EtcdCluster {
    /// Starts a cluster of `size` members and waits until it serves. `None` (after saying why)
    /// when no `etcd` binary is installed and `SHARDLITE_REQUIRE_ETCD` is not set.
    pub fn start(size: usize) -> Option<Self> {
        if etcd_binary().is_none() {
            assert!(
                std::env::var("SHARDLITE_REQUIRE_ETCD").is_err(),
                "SHARDLITE_REQUIRE_ETCD is set, but no `etcd` binary is on the PATH (apt-get install etcd-server)"
            );
            eprintln!("skipped: no `etcd` binary on the PATH (apt-get install etcd-server)");
            return None;
        }
        let ports = free_ports(2 * size);
        let members: Vec<Member> = (0..size)
            .map(|index| Member {
                name: format!("n{index}"),
                client_port: ports[2 * index],
                peer_port: ports[2 * index + 1],
                child: None,
            })
            .collect();
        let mut cluster = Self {
            dir: super::temp_dir(),
            members,
        };
        for index in 0..size {
            cluster.start_member(index);
        }
        cluster.wait_ready();
        Some(cluster)
    }

    fn start_member(&mut self, index: usize) {
        let initial: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect();
        let member = &self.members[index];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{}.log", member.name)))
            .unwrap();
        let client = format!("http://127.0.0.1:{}", member.client_port);
        let peer = format!("http://127.0.0.1:{}", member.peer_port);
        let child = Command::new("etcd")
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(self.dir.path().join(&member.name))
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &initial.join(",")])
            .args([
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "shardlite-test",
            ])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start etcd");
        self.members[index].child = Some(child);
    }

    /// Waits until a key can be written through every running member.
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for member in self.members.iter().filter(|m| m.child.is_some()) {
            loop {
                let ok = Command::new("curl")
                    .args(["-sf", "-m", "2", "-X", "POST"])
                    .arg(format!("http://127.0.0.1:{}/v3/kv/put", member.client_port))
                    .args(["-d", r#"{"key":"cmVhZHk=","value":"MQ=="}"#])
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    break;
                }
                assert!(Instant::now() < deadline, "etcd did not become ready:\n{}", self.logs());
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Every member's log, for failure messages.
    pub fn logs(&self) -> String {
        self.members
            .iter()
            .map(|m| {
                let log = std::fs::read_to_string(self.dir.path().join(format!("{}.log", m.name))).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                format!(
                    "--- {} ---\n{}",
                    m.name,
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `etcd://` URL of a catalog under `prefix`, naming every member.
    pub fn url(&self, prefix: &str) -> String {
        let endpoints: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect();
        format!("etcd://{}/{prefix}", endpoints.join(","))
    }

    /// The client URL of member `index` (`http://127.0.0.1:PORT`), for raw v3 JSON calls.
    pub fn endpoint(&self, index: usize) -> String {
        format!("http://127.0.0.1:{}", self.members[index].client_port)
    }

    /// Kills member `index` (as a crash would).
    pub fn kill_member(&mut self, index: usize) {
        if let Some(mut child) = self.members[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills every member: the cluster is down.
    pub fn stop(&mut self) {
        for index in 0..self.members.len() {
            self.kill_member(index);
        }
    }

    /// Starts every stopped member again (with its data) and waits until the cluster serves.
    pub fn restart(&mut self) {
        for index in 0..self.members.len() {
            if self.members[index].child.is_none() {
                self.start_member(index);
            }
        }
        self.wait_ready();
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.stop();
    }
}
