//! `shardlite stats heat|suggest` against a daemon: after a skewed workload the heat table ranks
//! the skew first, and the suggested map validates, applies, activates and, for the same
//! workload, lowers the hottest shard's share.
//! Needs the daemon (feature `server`).

use std::process::Output;

use crate::support::cli::{json_of, shardlite, stderr, stdout};

/// Runs `shardlite` off the runtime the daemon serves on.
async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        shardlite(&args)
    })
    .await
    .unwrap()
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

/// The hottest shard's share in `stats heat --json`.
fn hottest_share(heat: &serde_json::Value) -> (String, f64) {
    let hottest = &heat["shards"][0];
    (
        hottest["shardId"].as_str().unwrap().to_owned(),
        hottest["share"].as_f64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suggested_map_validates_activates_and_evens_the_load() {
    use crate::support::heat::{SkewedWorkload, skewed_master, skewed_options};
    use shardlite::map::ShardMap;

    let dir = crate::support::temp_dir();
    let master = skewed_master(dir.path()).await;
    let daemon = crate::support::daemon::start_daemon_on(&master, shardlite::server::ServerConfig::default()).await;
    let workload = SkewedWorkload::new(&ShardMap::new(skewed_options(dir.path())).unwrap());
    workload.run(&daemon).await;
    let conn = format!("Endpoint={};Transport=Grpc", daemon.base_url);
    let over_http = format!("Endpoint={};Transport=Http", daemon.base_url);

    let out = run(args(&["stats", "heat", "-c", &over_http])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains("heat of 'tenants' (map version 1)"), "{table}");
    let (whale_line, _) = table
        .lines()
        .enumerate()
        .find(|(_, line)| line.contains("whale-"))
        .unwrap_or_else(|| panic!("{table}"));
    let first_key_line = table
        .lines()
        .enumerate()
        .skip_while(|(_, line)| !line.contains("route key"))
        .find(|(_, line)| line.contains("│ ") && !line.contains("route key"))
        .map(|(at, _)| at);
    assert_eq!(
        Some(whale_line),
        first_key_line,
        "the hot key is listed first:\n{table}"
    );

    let out = run(args(&["stats", "heat", "-c", &conn, "--json"])).await;
    let before = json_of(&out);
    assert_eq!(before["keys"][0]["key"], workload.whale.as_str());
    let (hottest, share_before) = hottest_share(&before);
    assert_eq!(hottest, "s0");

    // The next map, on stdout, as `catalog validate` and `catalog apply` read it.
    let out = run(args(&["stats", "suggest", "-c", &conn])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let explained = stderr(&out);
    eprintln!("{table}{explained}");
    assert!(explained.contains("suggested map version 2"), "{explained}");
    assert!(
        explained.contains("from s0 to") || explained.contains("(from s0)"),
        "{explained}"
    );
    let next_map = dir.path().join("next-map.json");
    std::fs::write(&next_map, stdout(&out)).unwrap();
    let next_map = next_map.to_str().unwrap();

    // The next steps run as printed (with the connection string and the map file put in).
    assert!(explained.contains("a data move is needed"), "{explained}");
    let printed: Vec<Vec<String>> = explained
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|command| {
            command
                .split_whitespace()
                .map(|word| match word {
                    "CONN" => conn.clone(),
                    "next-map.json" => next_map.to_owned(),
                    word => word.to_owned(),
                })
                .collect()
        })
        .collect();
    let steps: Vec<String> = printed.iter().map(|command| command[1..3].join(" ")).collect();
    assert_eq!(steps.len(), 4, "{explained}");
    assert_eq!(
        (steps[0].as_str(), steps[2].as_str(), steps[3].as_str()),
        ("catalog validate", "catalog apply", "catalog activate"),
        "{explained}"
    );
    assert!(steps[1].starts_with("migrate "), "{explained}");
    // Without the acknowledgement validation asks for a data move: the map moves ownership.
    let out = run(args(&["catalog", "validate", "-c", &conn, "--map", next_map])).await;
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("ownership-change-requires-migration"),
        "{}",
        stdout(&out)
    );
    for command in printed.iter().filter(|command| command[1] == "catalog") {
        assert_eq!(command[0], "shardlite");
        let out = run(command[1..].to_vec()).await;
        assert!(out.status.success(), "{command:?}: {}{}", stdout(&out), stderr(&out));
    }
    // The same workload again, routed by the new map.
    workload.run(&daemon).await;
    let after = json_of(&run(args(&["stats", "heat", "-c", &conn, "--json"])).await);
    assert_eq!(after["mapVersion"], 2);
    let (_, share_after) = hottest_share(&after);
    assert!(
        share_after < share_before - 0.2,
        "the hottest share went from {share_before} to {share_after}"
    );
    eprintln!("hottest shard's share: {share_before:.3} before, {share_after:.3} after the suggested map");
}

#[test]
fn suggest_explains_why_a_local_master_has_nothing_to_go_on() {
    let dir = crate::support::temp_dir();
    let conn = crate::support::cli::seeded(dir.path());
    let out = shardlite(&["stats", "suggest", "-c", &conn]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("connect to the daemon"), "{}", stderr(&out));
    let out = shardlite(&["stats", "heat", "-c", &conn, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["totalRequests"], 0.0);
}
