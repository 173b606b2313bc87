//! Runs `examples/sqlx_remote.rs`: the sqlx driver through a daemon over gRPC and over REST.
#![cfg(all(feature = "sqlx", feature = "server", feature = "http", feature = "grpc"))]

#[test]
fn sqlx_over_both_transports_lands_rows_only_on_the_resolved_shard() {
    let stdout = crate::support::run_example("sqlx_remote", &[]);
    for expected in [
        "Endpoint=http://127.0.0.1:PORT;Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-05",
        "Endpoint=http://127.0.0.1:PORT;Transport=Http;Shard Keyspace=orders_by_month;Shard Key=2026-05",
        "2 rows over Grpc, total 42.50",
        "2 rows over Http, total 42.50",
        "shard-0: 0",
        "shard-1: 4",
        "shard-2: 0",
        "shard-3: 0",
    ] {
        assert!(stdout.contains(expected), "missing '{expected}' in:\n{stdout}");
    }
}
