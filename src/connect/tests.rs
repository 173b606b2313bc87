//! Unit tests of opening connection strings.
use std::time::Duration;

use super::*;

#[test]
fn engine_config_takes_only_the_keys_given() {
    let base = EngineConfig {
        busy_timeout: Duration::from_secs(9),
        transaction_idle_timeout: Some(Duration::from_secs(9)),
        statement_timeout: Some(Duration::from_secs(9)),
        ..EngineConfig::default()
    };
    let plain = ConnectionOptions::parse("Data Source=a.db").unwrap();
    let config = engine_config_for(&plain, base.clone());
    assert_eq!(config.busy_timeout, Duration::from_secs(9));
    assert_eq!(config.transaction_idle_timeout, Some(Duration::from_secs(9)));

    assert_eq!(config.statement_timeout, Some(Duration::from_secs(9)));

    let tuned =
        ConnectionOptions::parse("Data Source=a.db;Busy Timeout=0;Command Timeout=2;Transaction Timeout=30").unwrap();
    let config = engine_config_for(&tuned, base.clone());
    assert_eq!(config.busy_timeout, Duration::ZERO);
    assert_eq!(config.statement_timeout, Some(Duration::from_secs(2)));
    assert_eq!(config.transaction_idle_timeout, Some(Duration::from_secs(30)));

    let unlimited = ConnectionOptions::parse("Data Source=a.db;Command Timeout=0").unwrap();
    assert_eq!(engine_config_for(&unlimited, base).statement_timeout, None);
}

#[test]
fn targets_describe_themselves() {
    let local = ConnectionTarget::Local {
        data_source: "app.db".into(),
    };
    assert_eq!(local.to_string(), "plain database 'app.db'");
    let sharded = ConnectionTarget::Sharded {
        master: "m.db".into(),
        keyspace: "k".into(),
        map_version: 3,
    };
    assert!(sharded.to_string().contains("no route"), "{sharded}");
}
