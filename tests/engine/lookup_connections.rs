//! Connections bound by a shard directory's lookup key: `Shard Directory` and `Lookup Key` in
//! both connection-string forms, the refusals that name the keys, and a connection that opens on
//! the entry's route and, opened again after a move, on the entry's new shard.

use crate::support::migrate::{add_directory, fill, key_request, migration_master};
use crate::support::temp_dir;
use shardlite::client::{Params, ShardedClient};
use shardlite::connect::{ConnectionTarget, connect};
use shardlite::options::ConnectionOptions;
use shardlite::reshard::Resharder;
use shardlite::{Error, ErrorKind};

fn refusal(text: &str) -> String {
    match text.parse::<ConnectionOptions>() {
        Err(err @ Error::ConnectionString { .. }) => {
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            err.to_string()
        }
        other => panic!("{text:?} should be refused, got {other:?}"),
    }
}

#[test]
fn both_forms_read_a_lookup_binding_and_print_it_back() {
    let ado: ConnectionOptions = "Data Source=m.db;Shard Directory= orders_by_id ;Lookup Key=SO-1"
        .parse()
        .unwrap();
    let lookup = ado.lookup().unwrap();
    assert_eq!(
        (lookup.directory_name.as_str(), lookup.lookup_key.as_str()),
        ("orders_by_id", "SO-1")
    );
    assert!(ado.route().is_none() && ado.keyspace().is_none());
    assert_eq!(
        ado.to_string(),
        "Data Source=m.db;Shard Directory=orders_by_id;Lookup Key=SO-1"
    );
    let url: ConnectionOptions = "shardlite:m.db?shard_directory=orders_by_id&lookup_key=SO-1"
        .parse()
        .unwrap();
    assert_eq!(url, ado);
    assert_eq!(url.to_url().parse::<ConnectionOptions>().unwrap(), ado);
}

#[test]
fn half_or_mixed_bindings_are_refused_naming_the_keys() {
    let half = refusal("Data Source=m.db;Shard Directory=orders_by_id");
    assert!(half.contains("'Lookup Key' is missing"), "{half}");
    let half = refusal("Data Source=m.db;Lookup Key=SO-1");
    assert!(half.contains("'Shard Directory' is missing"), "{half}");
    let blank = refusal("Data Source=m.db;Shard Directory=orders_by_id;Lookup Key= ");
    assert!(blank.contains("'Lookup Key' is empty"), "{blank}");
    for mixed in [
        "Data Source=m.db;Shard Directory=d;Lookup Key=SO-1;Shard Keyspace=tenants;Shard Key=a",
        "Data Source=m.db;Shard Directory=d;Lookup Key=SO-1;Shard Keyspace=tenants",
    ] {
        let both = refusal(mixed);
        assert!(
            both.contains("'Shard Keyspace' and 'Shard Key' cannot be given"),
            "{both}"
        );
    }
}

#[tokio::test]
async fn a_connection_opens_on_the_entrys_route_and_follows_it_after_a_move() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    fill(&sharded, "tenant-b", 1, 5).await;
    add_directory(&sharded, &["tenant-b"]).await;
    let text = format!(
        "Data Source={};Shard Directory=orders_by_id;Lookup Key=SO-tenant-b",
        master.display()
    );
    let shard_of = |connected: &shardlite::connect::ConnectedClient| match connected.target() {
        ConnectionTarget::Shard { resolution, .. } => resolution.shard_id.clone(),
        other => panic!("expected a shard target, got {other:?}"),
    };

    let connected = connect(&text.parse().unwrap()).await.unwrap();
    assert_eq!(shard_of(&connected), "s1");
    assert_eq!(connected.route().map(|r| r.key()), Some("tenant-b"));
    let count = "SELECT count(*) FROM items WHERE tenant = 'tenant-b'";
    let rows = connected
        .client()
        .unwrap()
        .execute_sql(count, Params::none())
        .await
        .unwrap();
    assert_eq!(rows.rows[0][0], shardlite::client::Value::Integer(5));

    let moved = Resharder::new(sharded.clone())
        .migrate(key_request("tenant-b", "s0", 10))
        .await
        .unwrap();
    assert!(moved.succeeded(), "{moved:#?}");
    let reopened = connect(&text.parse().unwrap()).await.unwrap();
    assert_eq!(shard_of(&reopened), "s0");
    let rows = reopened
        .client()
        .unwrap()
        .execute_sql(count, Params::none())
        .await
        .unwrap();
    assert_eq!(rows.rows[0][0], shardlite::client::Value::Integer(5));

    let unknown = connect(
        &format!(
            "Data Source={};Shard Directory=orders_by_id;Lookup Key=SO-nobody",
            master.display()
        )
        .parse()
        .unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::NotFound, "{unknown}");
}
