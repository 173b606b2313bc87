//! Connection strings in both forms: every key, the quoting rules, the errors, redaction, and random
//! options round-tripping through the ADO.NET form, the URL form and from one to the other.

use std::time::Duration;

use crate::support::route_in as route;
use proptest::option;
use proptest::prelude::*;
use shardlite::map::Transport;
use shardlite::options::ConnectionOptions;
use shardlite::routing::RouteContext;
use shardlite::{Error, ErrorKind};

const LOCAL: &str = "Data Source=master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06";

fn parse(text: &str) -> ConnectionOptions {
    match text.parse() {
        Ok(options) => options,
        Err(err) => panic!("{text:?} should parse: {err}"),
    }
}

/// The reason of the connection-string error `text` must produce.
fn reason(text: &str) -> String {
    match text.parse::<ConnectionOptions>() {
        Err(err @ Error::ConnectionString { .. }) => {
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            let Error::ConnectionString { reason } = err else {
                unreachable!()
            };
            reason
        }
        other => panic!("{text:?} should be refused as a connection string, got {other:?}"),
    }
}

/// Asserts that `text` is refused with a reason naming each of `needles`.
fn refused_naming(text: &str, needles: &[&str]) {
    let reason = reason(text);
    for needle in needles {
        assert!(
            reason.contains(needle),
            "reason for {text:?} should name {needle:?}: {reason}"
        );
    }
}

// ---- every key -------------------------------------------------------------------------------------------

#[test]
fn a_local_connection_reads_every_key_that_applies_to_it() {
    let options = parse(
        "Data Source=/srv/master.db;Transport=Direct;Shard Keyspace=orders_by_month;Shard Key=2026-06;\
         Connect Timeout=5;Command Timeout=30;Busy Timeout=2500;Transaction Timeout=60;Max Pool Size=8",
    );
    assert_eq!(options.data_source(), Some("/srv/master.db"));
    assert_eq!(options.endpoint(), None);
    assert_eq!(options.transport(), Some(Transport::Direct));
    assert_eq!(options.route(), Some(&route("orders_by_month", "2026-06")));
    assert!(options.api_key().is_none());
    assert_eq!(options.connect_timeout(), Some(Duration::from_secs(5)));
    assert_eq!(options.command_timeout(), Some(Duration::from_secs(30)));
    assert_eq!(options.busy_timeout(), Some(Duration::from_millis(2500)));
    assert_eq!(options.idle_transaction_timeout(), Some(Duration::from_secs(60)));
    assert_eq!(options.max_pool_size(), Some(8));
}

#[test]
fn a_remote_connection_reads_every_key_that_applies_to_it() {
    let options = parse(
        "Endpoint=https://db.internal:61818;Transport=grpc;Shard Keyspace=orders_by_month;Shard Key=2026-06;\
         Api Key=c2VjcmV0==;Api Key Header=X-Shard-Key;Connect Timeout=0;Command Timeout=1;Busy Timeout=0;\
         Transaction Timeout=120;Max Pool Size=1",
    );
    assert_eq!(options.data_source(), None);
    assert_eq!(options.endpoint(), Some("https://db.internal:61818"));
    assert_eq!(options.transport(), Some(Transport::Grpc));
    assert_eq!(options.route(), Some(&route("orders_by_month", "2026-06")));
    assert_eq!(options.api_key().map(|k| k.expose()), Some("c2VjcmV0=="));
    assert_eq!(options.api_key_header(), Some("X-Shard-Key"));
    assert_eq!(options.connect_timeout(), Some(Duration::ZERO));
    assert_eq!(options.command_timeout(), Some(Duration::from_secs(1)));
    assert_eq!(options.busy_timeout(), Some(Duration::ZERO));
    assert_eq!(options.idle_transaction_timeout(), Some(Duration::from_secs(120)));
    assert_eq!(options.max_pool_size(), Some(1));
}

#[test]
fn the_url_form_reads_every_key() {
    let options = parse(
        "shardlite+grpcs://db.internal:61818?shard_keyspace=orders_by_month&shard_key=2026%2D06&\
         api_key=c2VjcmV0%3D%3D&api_key_header=X-Shard-Key&connect_timeout=5&command_timeout=30&\
         busy_timeout=2500&transaction_timeout=60&max_pool_size=8",
    );
    assert_eq!(
        options,
        parse(
            "Endpoint=https://db.internal:61818;Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-06;\
             Api Key=c2VjcmV0==;Api Key Header=X-Shard-Key;Connect Timeout=5;Command Timeout=30;\
             Busy Timeout=2500;Transaction Timeout=60;Max Pool Size=8"
        )
    );
}

#[test]
fn data_source_has_a_synonym_and_transport_ignores_case() {
    assert_eq!(parse("DataSource=a.db"), parse("Data Source=a.db"));
    assert_eq!(parse("datasource=a.db"), parse("Data Source=a.db"));
    for spelling in ["http", "HTTP", "Http", " hTtP "] {
        let options = parse(&format!("Endpoint=http://h;Transport={spelling}"));
        assert_eq!(options.transport(), Some(Transport::Http), "{spelling}");
    }
}

#[test]
fn a_route_is_optional() {
    let options = parse("Data Source=plain.db");
    assert_eq!(options.route(), None);
    assert_eq!(options.data_source(), Some("plain.db"));
}

// ---- syntax ----------------------------------------------------------------------------------------------

#[test]
fn keys_ignore_case_and_surrounding_white_space() {
    let expected = parse(LOCAL);
    for text in [
        "data source=master.db;shard keyspace=orders_by_month;shard key=2026-06",
        "DATA SOURCE=master.db;SHARD KEYSPACE=orders_by_month;SHARD KEY=2026-06",
        "  Data Source =master.db; Shard Keyspace\t= orders_by_month ;\n Shard Key = 2026-06 ",
        "Data  Source=master.db;Shard   Keyspace=orders_by_month;Shard\tKey=2026-06",
    ] {
        assert_eq!(parse(text), expected, "{text:?}");
    }
}

#[test]
fn empty_pairs_are_ignored() {
    let expected = parse(LOCAL);
    for text in [
        ";Data Source=master.db;;Shard Keyspace=orders_by_month; ;Shard Key=2026-06;",
        "Data Source=master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06;;;",
    ] {
        assert_eq!(parse(text), expected, "{text:?}");
    }
}

#[test]
fn quoted_values_keep_separators_and_white_space() {
    let options = parse(r#"Data Source=" my dir/a;b=c.db ";Shard Keyspace='k;s';Shard Key="x=y""#);
    assert_eq!(options.data_source(), Some(" my dir/a;b=c.db "));
    assert_eq!(options.route(), Some(&route("k;s", "x=y")));
}

#[test]
fn a_doubled_quote_stands_for_itself_in_both_quote_styles() {
    let options = parse(r#"Data Source="say ""hi"".db";Shard Keyspace='it''s';Shard Key='"'"#);
    assert_eq!(options.data_source(), Some(r#"say "hi".db"#));
    assert_eq!(options.route(), Some(&route("it's", "\"")));
}

#[test]
fn unquoted_values_may_contain_equals_signs_and_are_trimmed() {
    let options = parse("Endpoint=http://h;Transport=Http;Api Key=  c2VjcmV0==  ;Shard Keyspace= a=b ;Shard Key=k");
    assert_eq!(options.api_key().map(|k| k.expose()), Some("c2VjcmV0=="));
    assert_eq!(options.route(), Some(&route("a=b", "k")));
}

#[test]
fn route_parts_are_trimmed_even_when_quoted() {
    let options = parse(r#"Data Source=a.db;Shard Keyspace=" orders ";Shard Key='  7  '"#);
    assert_eq!(options.route(), Some(&route("orders", "7")));
}

#[test]
fn endpoints_are_stored_in_normal_form() {
    let options = parse("Endpoint=HTTP://Example.COM:80/;Transport=Http");
    assert_eq!(options.endpoint(), Some("http://example.com"));
    let options = parse("Endpoint=https://h:61818/base/;Transport=Http");
    assert_eq!(options.endpoint(), Some("https://h:61818/base/"));
}

// ---- syntax errors ---------------------------------------------------------------------------------------

#[test]
fn an_unknown_key_is_named() {
    refused_naming("Data Source=a.db;Shard Keyspace=o;Shard Kye=1", &["'Shard Kye'"]);
    refused_naming("Data Source=a.db;Pooling=true", &["'Pooling'"]);
}

#[test]
fn a_pair_without_equals_is_named() {
    refused_naming("Data Source=a.db;Shard Key 2026-06", &["'Shard Key 2026-06'", "'='"]);
}

#[test]
fn an_unterminated_quote_names_the_key() {
    refused_naming(r#"Data Source=a.db;Shard Key="2026-06"#, &["'Shard Key'"]);
    refused_naming("Data Source='a.db;Shard Key=1", &["'Data Source'"]);
}

#[test]
fn text_after_a_closing_quote_names_the_key() {
    refused_naming(
        r#"Data Source="a.db"x;Shard Keyspace=o;Shard Key=1"#,
        &["'Data Source'"],
    );
}

#[test]
fn a_repeated_key_is_an_error_not_last_wins() {
    refused_naming(
        "Data Source=a.db;Data Source=b.db",
        &["'Data Source'", "more than once"],
    );
    refused_naming("Data Source=a.db;datasource=b.db", &["'Data Source'", "more than once"]);
    refused_naming(
        "Data Source=a.db;Shard Keyspace=o;Shard Key=1;shard key=2",
        &["'Shard Key'"],
    );
}

#[test]
fn bad_values_name_the_key_and_the_value() {
    let remote = "Endpoint=http://h;Transport=Http";
    for (setting, key, value) in [
        ("Connect Timeout=soon", "'Connect Timeout'", "'soon'"),
        ("Connect Timeout=-1", "'Connect Timeout'", "'-1'"),
        ("Command Timeout=1.5", "'Command Timeout'", "'1.5'"),
        ("Busy Timeout=1s", "'Busy Timeout'", "'1s'"),
        (
            "Transaction Timeout=99999999999999999999",
            "'Transaction Timeout'",
            "'99999999999999999999'",
        ),
        ("Max Pool Size=0", "'Max Pool Size'", "'0'"),
        ("Max Pool Size=4294967296", "'Max Pool Size'", "'4294967296'"),
        ("Max Pool Size=many", "'Max Pool Size'", "'many'"),
        ("Api Key Header=X Api Key", "'Api Key Header'", "'X Api Key'"),
    ] {
        refused_naming(&format!("{remote};{setting}"), &[key, value]);
    }
    refused_naming("Endpoint=http://h;Transport=Pipes", &["'Transport'", "'Pipes'"]);
    refused_naming("Endpoint=ftp://h;Transport=Http", &["'Endpoint'", "'ftp://h'"]);
    refused_naming(
        "Endpoint=localhost:61818;Transport=Grpc",
        &["'Endpoint'", "'localhost:61818'"],
    );
    refused_naming("Endpoint=http://h/?a=1;Transport=Grpc", &["'Endpoint'"]);
}

#[test]
fn timeouts_beyond_what_the_engine_takes_are_refused_in_both_forms() {
    const YEAR: u64 = 365 * 24 * 60 * 60;
    let busy_max = u64::try_from(i32::MAX).unwrap();
    for (key, url_key, max) in [
        ("Busy Timeout", "busy_timeout", busy_max),
        ("Connect Timeout", "connect_timeout", YEAR),
        ("Command Timeout", "command_timeout", YEAR),
        ("Transaction Timeout", "transaction_timeout", YEAR),
    ] {
        let limit = max.to_string();
        for too_long in [max + 1, u64::MAX] {
            let value = too_long.to_string();
            refused_naming(
                &format!("Data Source=m.db;{key}={value}"),
                &[&format!("'{key}'"), &format!("'{value}'"), &limit],
            );
            refused_naming(
                &format!("shardlite:///m.db?{url_key}={value}"),
                &[&format!("'{url_key}'"), &format!("'{value}'"), &limit],
            );
        }
        // The limit itself is accepted, and prints to text that parses back to it.
        let at_limit = parse(&format!("Data Source=m.db;{key}={max}"));
        assert_eq!(parse(&at_limit.to_url()), at_limit, "{key}");
        assert_eq!(parse(&at_limit.to_string()), at_limit, "{key}");
    }
    let options = parse("Data Source=m.db;Busy Timeout=2147483647;Transaction Timeout=31536000");
    assert_eq!(options.busy_timeout(), Some(Duration::from_millis(busy_max)));
    assert_eq!(options.busy_timeout(), Some(shardlite::options::MAX_BUSY_TIMEOUT));
    assert_eq!(options.idle_transaction_timeout(), Some(Duration::from_secs(YEAR)));
    assert_eq!(
        options.idle_transaction_timeout(),
        Some(shardlite::options::MAX_TIMEOUT)
    );
}

#[test]
fn builders_cap_timeouts_so_their_text_still_parses() {
    let built = ConnectionOptions::new()
        .with_data_source("m.db")
        .with_connect_timeout(Duration::MAX)
        .with_command_timeout(Duration::from_secs(u64::MAX))
        .with_busy_timeout(Duration::from_millis(u64::MAX))
        .with_idle_transaction_timeout(Duration::MAX);
    assert_eq!(
        built.to_string(),
        "Data Source=m.db;Connect Timeout=31536000;Command Timeout=31536000;Busy Timeout=2147483647;\
         Transaction Timeout=31536000"
    );
    assert_eq!(parse(&built.to_string()), built);
    assert_eq!(parse(&built.to_url()), built);
}

// ---- validation ------------------------------------------------------------------------------------------

#[test]
fn a_key_needs_a_keyspace_but_a_keyspace_stands_alone() {
    let alone = parse("Data Source=a.db;Shard Keyspace= orders_by_month ");
    assert!(alone.route().is_none());
    assert!(alone.is_keyspace_without_key());
    assert_eq!(alone.keyspace(), Some("orders_by_month"));
    assert_eq!(alone.to_string(), "Data Source=a.db;Shard Keyspace=orders_by_month");
    assert_eq!(alone.to_url(), "shardlite:a.db?shard_keyspace=orders_by_month");
    assert_eq!(parse(&alone.to_url()), alone);
    refused_naming("Data Source=a.db;Shard Keyspace=' '", &["'Shard Keyspace'", "empty"]);
    refused_naming("Data Source=a.db;Shard Key=2026-06", &["'Shard Keyspace' is missing"]);
    refused_naming(
        "Endpoint=http://h;Transport=Http;Shard Key=2026-06",
        &["'Shard Keyspace' is missing"],
    );
}

#[test]
fn blank_route_parts_are_refused() {
    refused_naming(
        "Data Source=a.db;Shard Keyspace=;Shard Key=1",
        &["'Shard Keyspace'", "empty"],
    );
    refused_naming(
        "Data Source=a.db;Shard Keyspace=o;Shard Key='  '",
        &["'Shard Key'", "empty"],
    );
}

#[test]
fn a_connection_needs_exactly_one_target() {
    refused_naming("Shard Keyspace=o;Shard Key=1", &["'Data Source'", "'Endpoint'"]);
    refused_naming("", &["'Data Source'", "'Endpoint'"]);
    refused_naming(
        "Data Source=a.db;Endpoint=http://h;Transport=Http",
        &["'Data Source'", "'Endpoint'"],
    );
    refused_naming("Data Source=", &["'Data Source'", "empty"]);
}

#[test]
fn endpoint_and_transport_must_agree() {
    refused_naming("Endpoint=http://h", &["'Transport'"]);
    refused_naming(
        "Endpoint=http://h;Transport=Direct",
        &["'Transport=Direct'", "'Data Source'"],
    );
    refused_naming("Transport=Grpc", &["'Endpoint'", "Grpc"]);
    refused_naming("Transport=Http;Data Source=a.db", &["'Endpoint'", "Http"]);
    refused_naming("Transport=Direct", &["'Data Source'"]);
}

#[test]
fn api_key_settings_are_for_remote_connections_only() {
    refused_naming("Data Source=a.db;Api Key=k", &["'Api Key'", "remote"]);
    refused_naming("Data Source=a.db;Api Key Header=X-Key", &["'Api Key Header'", "remote"]);
    refused_naming("Endpoint=http://h;Transport=Http;Api Key=''", &["'Api Key'", "empty"]);
}

// ---- the URL form ----------------------------------------------------------------------------------------

#[test]
fn the_url_form_reads_local_paths() {
    let absolute = parse("shardlite:///srv/data/master.db?shard_keyspace=orders_by_month&shard_key=2026-06");
    assert_eq!(
        absolute,
        parse("Data Source=/srv/data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06")
    );
    let relative = parse("shardlite:data/master.db?shard_keyspace=orders_by_month&shard_key=2026-06");
    assert_eq!(relative.data_source(), Some("data/master.db"));
    assert_eq!(relative.transport(), Some(Transport::Direct));
    let plain = parse("SHARDLITE:plain.db");
    assert_eq!(plain, parse("Data Source=plain.db"));
}

#[test]
fn the_url_form_percent_decodes_paths_and_values() {
    let options = parse("shardlite:///my%20dir/caf%C3%A9.db?shard_keyspace=a+b&shard_key=x%26y%3Dz%2B");
    assert_eq!(options.data_source(), Some("/my dir/café.db"));
    assert_eq!(options.route(), Some(&route("a b", "x&y=z+")));
}

#[test]
fn the_url_schemes_choose_the_transport_and_tls() {
    for (url, endpoint, transport) in [
        ("shardlite+http://h:61818", "http://h:61818", Transport::Http),
        ("shardlite+https://h:61818/api", "https://h:61818/api", Transport::Http),
        ("shardlite+grpc://h:61818", "http://h:61818", Transport::Grpc),
        ("shardlite+grpcs://h:61818/", "https://h:61818", Transport::Grpc),
    ] {
        let options = parse(url);
        assert_eq!(options.endpoint(), Some(endpoint), "{url}");
        assert_eq!(options.transport(), Some(transport), "{url}");
    }
}

#[test]
fn the_url_form_names_unknown_and_misplaced_query_keys() {
    refused_naming("shardlite:///m.db?shard_keyspace=o&shard_kye=1", &["'shard_kye'"]);
    refused_naming("shardlite:///m.db?data_source=x", &["'data_source'"]);
    refused_naming("shardlite+http://h?transport=grpc", &["'transport'"]);
    refused_naming("shardlite:///m.db?shard_key=1", &["'Shard Keyspace' is missing"]);
    refused_naming(
        "shardlite:///m.db?connect_timeout=soon",
        &["'connect_timeout'", "'soon'"],
    );
    refused_naming(
        "shardlite:///m.db?shard_key=1&shard_key=2",
        &["'shard_key'", "more than once"],
    );
    refused_naming("shardlite+ftp://h", &["'shardlite+ftp'"]);
    refused_naming("shardlite://host/m.db", &["'host'"]);
}

// ---- printing and secrets --------------------------------------------------------------------------------

#[test]
fn display_prints_canonical_keys_in_a_fixed_order() {
    let options =
        parse("shard key=2026-06;max pool size=4;DATA SOURCE='my;db';shard keyspace=orders_by_month;busy timeout=250");
    assert_eq!(
        options.to_string(),
        r#"Data Source="my;db";Shard Keyspace=orders_by_month;Shard Key=2026-06;Busy Timeout=250;Max Pool Size=4"#
    );
    assert_eq!(
        options.to_url(),
        "shardlite:my%3Bdb?shard_keyspace=orders_by_month&shard_key=2026-06&busy_timeout=250&max_pool_size=4"
    );
}

#[test]
fn display_and_debug_never_show_the_api_key() {
    let secret = "c2VjcmV0LWtleQ==";
    let options = parse(&format!("Endpoint=http://h:1;Transport=Http;Api Key={secret}"));
    let shown = options.to_string();
    assert_eq!(shown, "Endpoint=http://h:1;Transport=Http;Api Key=***");
    let debug = format!("{options:?} {options:#?}");
    assert!(!debug.contains(secret) && !debug.contains("c2VjcmV0"), "{debug}");
    assert!(options.to_connection_string_unredacted().contains(secret));
    assert!(
        options.to_url().contains("api_key=c2VjcmV0LWtleQ%3D%3D"),
        "{}",
        options.to_url()
    );
}

#[test]
fn errors_never_show_the_api_key() {
    let secret = "hunter2hunter2";
    for text in [
        format!("Data Source=a.db;Api Key={secret}"),
        format!("Endpoint=http://h;Transport=Http;Api Key=\"{secret}\"{secret}"),
        format!("Endpoint=http://h;Transport=Http;Api Key {secret}"),
        format!("Endpoint=http://h;Transport=Http;Api Key={secret};Api Key={secret}"),
        format!("Endpoint=http://h;Transport=Http;Api Key=\"{secret}"),
        format!("shardlite+http://h?api_key={secret}&api_key={secret}"),
        format!("shardlite+http://h?api_key{secret}"),
        format!("shardlite:///a.db?api_key={secret}"),
        format!("Endpoint=http://user:{secret}@h;Transport=Http"),
    ] {
        let reason = reason(&text);
        assert!(!reason.contains(secret), "{text:?} -> {reason}");
    }
}

#[test]
fn builders_make_the_same_options_as_parsing() {
    let built = ConnectionOptions::new()
        .with_endpoint("HTTPS://DB.internal:61818/", Transport::Grpc)
        .with_route(route("orders_by_month", "2026-06"))
        .with_api_key("c2VjcmV0==")
        .with_api_key_header("X-Key")
        .with_connect_timeout(Duration::from_millis(4500))
        .with_command_timeout(Duration::from_secs(30))
        .with_busy_timeout(Duration::from_millis(250))
        .with_idle_transaction_timeout(Duration::from_secs(60))
        .with_max_pool_size(16);
    assert!(built.validate().is_ok());
    assert_eq!(
        built.to_connection_string_unredacted(),
        "Endpoint=https://db.internal:61818;Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-06;\
         Api Key=c2VjcmV0==;Api Key Header=X-Key;Connect Timeout=5;Command Timeout=30;Busy Timeout=250;\
         Transaction Timeout=60;Max Pool Size=16"
    );
    assert_eq!(parse(&built.to_connection_string_unredacted()), built);
    assert_eq!(parse(&built.to_url()), built);
    assert_eq!(ConnectionOptions::parse(&built.to_url()).ok(), Some(built));
}

#[test]
fn a_path_with_dot_segments_survives_the_url_form() {
    let options = ConnectionOptions::new().with_data_source("/srv/app/../data/./master.db");
    assert_eq!(options.to_url(), "shardlite:///srv/app/../data/./master.db");
    assert_eq!(parse(&options.to_url()), options);
}

// ---- round trips -----------------------------------------------------------------------------------------

/// Text that stresses the quoting and encoding rules: separators, quotes, `%`, `+`, white space, non-ASCII.
fn tricky_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9_-]{1,12}",
        "[ a-zA-Z0-9=;\"'%+&?#/\\\\.]{1,16}",
        "\\PC{1,12}",
    ]
}

fn route_part() -> impl Strategy<Value = String> {
    tricky_text().prop_filter("route parts are stored trimmed", |s| !s.is_empty() && s.trim() == s)
}

fn data_source() -> impl Strategy<Value = String> {
    prop_oneof![
        "(/[a-zA-Z0-9 ._-]{1,8}){1,4}\\.db",
        "(\\.\\./)?[a-z]{1,8}(/[a-z0-9.]{1,8}){0,2}\\.db",
        "//[a-z]{1,6}/[a-z]{1,6}/m\\.db",
        Just(":memory:".to_owned()),
        tricky_text(),
    ]
    .prop_filter("a data source is not blank", |s| !s.trim().is_empty())
}

fn endpoint() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        "[a-z][a-z0-9]{0,8}(\\.[a-z]{2,4}){0,2}",
        Just("127.0.0.1".to_owned()),
        Just("[::1]".to_owned()),
    ];
    let port = option::of(any::<u16>());
    let path = "(/[a-zA-Z0-9._~-]{1,6}){0,3}/?";
    (prop_oneof![Just("http"), Just("https")], host, port, path).prop_map(|(scheme, host, port, path)| {
        let port = port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("{scheme}://{host}{port}{path}")
    })
}

fn api_key() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Za-z0-9+/]{4,24}={0,2}", tricky_text()]
        .prop_filter("an api key is not blank", |s| !s.trim().is_empty())
}

prop_compose! {
    fn connection_options()(
        target in prop_oneof![
            data_source().prop_map(|path| ConnectionOptions::new().with_data_source(path)),
            (endpoint(), prop_oneof![Just(Transport::Http), Just(Transport::Grpc)])
                .prop_map(|(endpoint, transport)| ConnectionOptions::new().with_endpoint(endpoint, transport)),
        ],
        route in option::of((route_part(), route_part())),
        api_key in option::of(api_key()),
        api_key_header in option::of("[A-Za-z][A-Za-z0-9-]{0,15}"),
        timeouts in (option::of(any::<u64>()), option::of(any::<u64>()), option::of(any::<u64>()), option::of(any::<u64>())),
        max_pool_size in option::of(1..=u32::MAX),
        shard_id in option::of("[A-Za-z0-9_-][A-Za-z0-9_.-]{0,12}"),
    ) -> ConnectionOptions {
        let mut options = target;
        if let Some((keyspace, key)) = route {
            options = options.with_route(RouteContext::new(keyspace, key).expect("route parts are not blank"));
        }
        if options.endpoint().is_some() {
            if let Some(api_key) = api_key {
                options = options.with_api_key(api_key);
            }
            if let Some(header) = api_key_header {
                options = options.with_api_key_header(header);
            }
            if let Some(shard_id) = shard_id {
                options = options.with_shard_id(shard_id);
            }
        }
        let (connect, command, busy, idle) = timeouts;
        if let Some(seconds) = connect {
            options = options.with_connect_timeout(Duration::from_secs(seconds));
        }
        if let Some(seconds) = command {
            options = options.with_command_timeout(Duration::from_secs(seconds));
        }
        if let Some(millis) = busy {
            options = options.with_busy_timeout(Duration::from_millis(millis));
        }
        if let Some(seconds) = idle {
            options = options.with_idle_transaction_timeout(Duration::from_secs(seconds));
        }
        if let Some(size) = max_pool_size {
            options = options.with_max_pool_size(size);
        }
        options
    }
}

fn reparse(text: &str) -> Result<ConnectionOptions, TestCaseError> {
    text.parse::<ConnectionOptions>()
        .map_err(|err| TestCaseError::fail(format!("{text:?} does not parse: {err}")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_options_round_trip_through_both_forms(options in connection_options()) {
        prop_assert!(options.validate().is_ok(), "{:?}", options.validate());

        let ado = options.to_connection_string_unredacted();
        prop_assert_eq!(&reparse(&ado)?, &options, "ADO.NET form {:?}", ado);

        let url = options.to_url();
        prop_assert_eq!(&reparse(&url)?, &options, "URL form {:?}", url);

        // ADO.NET -> URL -> ADO.NET: the same options and the same text.
        let via_url = reparse(&reparse(&ado)?.to_url())?;
        prop_assert_eq!(&via_url, &options);
        prop_assert_eq!(via_url.to_connection_string_unredacted(), ado);
    }

    #[test]
    fn random_api_keys_are_never_displayed(
        options in connection_options().prop_filter("remote", |o| o.endpoint().is_some()),
        secret in "[A-Za-z0-9]{14,24}",
    ) {
        let options = options.with_api_key(format!("{secret}=;\"'"));
        let displayed = options.to_string();
        prop_assert!(!displayed.contains(&secret), "{}", displayed);
        prop_assert!(displayed.contains("Api Key=***"), "{}", displayed);
        let debug = format!("{options:?}");
        prop_assert!(!debug.contains(&secret), "{}", debug);
        let reparsed = reparse(&options.to_connection_string_unredacted())?;
        prop_assert_eq!(reparsed.api_key(), options.api_key());
    }
}

/// The connection strings the guide shows (`docs/clients.md`) parse, and its URL form means the same
/// as the ADO.NET form.
#[test]
fn readme_connection_strings_parse() {
    for text in [
        "Data Source=data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06",
        "Data Source=app.db",
        "Endpoint=http://127.0.0.1:61818;Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-06;Api Key=abc==",
        "shardlite:///srv/data/master.db?shard_keyspace=orders_by_month&shard_key=2026-06",
        "shardlite+http://127.0.0.1:61818/?shard_keyspace=orders_by_month&shard_key=2026-06",
    ] {
        ConnectionOptions::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    let url =
        ConnectionOptions::parse("shardlite+http://127.0.0.1:61818/?shard_keyspace=orders_by_month&shard_key=2026-06")
            .unwrap();
    let ado = ConnectionOptions::parse(
        "Endpoint=http://127.0.0.1:61818;Transport=Http;Shard Keyspace=orders_by_month;Shard Key=2026-06",
    )
    .unwrap();
    assert_eq!(url, ado);
}
