//! Runs `examples/blocking_orders.rs`: plain threads write through the blocking client, and
//! every month's orders are on its shard.

#[test]
fn plain_threads_write_each_month_on_its_shard() {
    let stdout = crate::support::run_example("blocking_orders", &[]);
    // The examples' map pins 2026-04, 2026-05 and 2026-06 to shard-2, shard-1 and shard-0.
    assert!(stdout.contains("2026-04 on shard-2: 2 order(s), total 30"), "{stdout}");
    assert!(stdout.contains("2026-05 on shard-1: 3 order(s), total 60"), "{stdout}");
    assert!(
        stdout.contains("2026-06 on shard-0: 5 order(s), total 199.5"),
        "{stdout}"
    );
    assert!(stdout.contains("transaction csdbshard:1:shard-0:"), "{stdout}");
    let total: i64 = stdout
        .lines()
        .filter_map(|line| line.strip_suffix(" order(s)"))
        .filter_map(|line| line.split(": ").nth(1))
        .filter_map(|n| n.parse::<i64>().ok())
        .sum();
    assert_eq!(total, 1 + 2 + 3 + 5, "{stdout}");
}
