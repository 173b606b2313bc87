//! Runs `examples/sqlx_many_routes.rs`: one `ShardedPool` for twelve months, then `AnyPool`.
#![cfg(feature = "sqlx")]

#[test]
fn one_pool_serves_every_month_and_any_pool_reads_one_back() {
    let stdout = crate::support::run_example("sqlx_many_routes", &[]);
    for month in 1..=12 {
        assert!(stdout.contains(&format!("2026-{month:02}: order ")), "{stdout}");
    }
    // 2026-05 and 2026-06 are pinned to shard-1 and shard-0 in the examples' map; each order's id
    // is its shard's own rowid, one more than the months before it on that shard.
    assert!(stdout.contains("2026-05: order 2 on shard-1"), "{stdout}");
    assert!(stdout.contains("2026-06: order 3 on shard-0"), "{stdout}");
    assert!(
        stdout.contains("shard-1: 2026-02, 2026-05, 2026-08, 2026-09"),
        "{stdout}"
    );
    let most_open: usize = stdout
        .lines()
        .find_map(|line| line.strip_prefix("most connections open on one shard: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no connection count in:\n{stdout}"));
    assert!((1..=2).contains(&most_open), "Max Pool Size=2 per shard: {stdout}");
    assert!(
        stdout.contains("AnyPool on 2026-06's shard: 1 order(s) for 2026-06"),
        "{stdout}"
    );
}
