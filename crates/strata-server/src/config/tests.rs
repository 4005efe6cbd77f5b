use std::time::Duration;

use strata_storage::StorageSettings;

use super::*;

fn load(file: Option<&str>, env: &[(&str, &str)], o: &Overrides) -> Result<Config, String> {
    Config::load(
        file,
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        o,
    )
}

#[test]
fn external_url_is_read_as_prometheus_reads_it() {
    for (given, used) in [
        ("", ""),
        ("http://strata.example.com", "http://strata.example.com"),
        ("http://strata.example.com/", "http://strata.example.com"),
        (
            "https://example.com:9090/prom/",
            "https://example.com:9090/prom",
        ),
        ("https://example.com/a/b//", "https://example.com/a/b"),
        (
            "https://example.com/prom/?x=1",
            "https://example.com/prom?x=1",
        ),
        ("prom/", "/prom"),
    ] {
        let env = [("STRATA_RULES_EXTERNAL_URL", given)];
        assert_eq!(
            load(None, &env, &Overrides::default())
                .unwrap()
                .rules
                .external_url,
            used,
            "{given}"
        );
    }
}

#[test]
fn listen_takes_host_port_forms() {
    for (given, used) in [
        ("127.0.0.1:9470", "127.0.0.1:9470"),
        ("localhost:9470", "localhost:9470"),
        (":9470", "0.0.0.0:9470"),
        ("[::1]:9470", "[::1]:9470"),
    ] {
        let o = Overrides {
            listen: Some(given.into()),
            ..Overrides::default()
        };
        assert_eq!(load(None, &[], &o).unwrap().server.listen, used);
    }
    for bad in ["9470", "localhost", "local host:1", "h:99999"] {
        let o = Overrides {
            listen: Some(bad.into()),
            ..Overrides::default()
        };
        let e = load(None, &[], &o).unwrap_err();
        assert!(e.contains("server.listen"), "{bad}: {e}");
    }
}

#[test]
fn sources_name_default_file_env_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "[storage]\nretention = \"30d\"\n[object_store.s3]\nsecret_access_key = \"hush\"\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let o = Overrides {
        listen: Some(":1234".into()),
        ..Overrides::default()
    };
    let (c, e) = Config::load_effective(
        Some(path),
        [("STRATA_SERVER_LOG_LEVEL".to_owned(), "debug".to_owned())],
        &o,
    )
    .unwrap();
    assert_eq!(c.server.log_level, "debug");
    assert_eq!(e.source("server.role"), Some("default"));
    assert_eq!(
        e.source("storage.retention"),
        Some(format!("file {path}").as_str())
    );
    assert_eq!(
        e.source("server.log_level"),
        Some("env STRATA_SERVER_LOG_LEVEL")
    );
    assert_eq!(e.source("server.listen"), Some("flag --listen"));
    let text = e.render();
    assert!(text.contains("retention = \"30d\"  # file "), "{text}");
    assert!(text.contains("secret_access_key = \"<secret>\""), "{text}");
    assert!(!text.contains("hush"), "{text}");
    assert_eq!(e.flat()["object_store.s3.secret_access_key"], "<secret>");
}

#[test]
fn defaults_load() {
    let c = load(None, &[], &Overrides::default()).unwrap();
    assert_eq!(c.server.listen, "127.0.0.1:9470");
    assert_eq!(c.storage, StorageSettings::default());
    assert_eq!(c.server.role, Role::All);
}

#[test]
fn experimental_functions_are_on_unless_turned_off() {
    let on = load(None, &[], &Overrides::default()).unwrap();
    assert!(on.query.limits().experimental_functions);
    let env = [("STRATA_QUERY_EXPERIMENTAL_FUNCTIONS", "false")];
    let off = load(None, &env, &Overrides::default()).unwrap();
    assert!(!off.query.limits().experimental_functions);
}

#[test]
fn binop_fill_modifiers_are_on_unless_turned_off() {
    let on = load(None, &[], &Overrides::default()).unwrap();
    assert!(on.query.limits().binop_fill_modifiers);
    let env = [("STRATA_QUERY_BINOP_FILL_MODIFIERS", "false")];
    let off = load(None, &env, &Overrides::default()).unwrap();
    assert!(!off.query.limits().binop_fill_modifiers);
}

#[test]
fn extended_range_selectors_are_on_unless_turned_off() {
    let on = load(None, &[], &Overrides::default()).unwrap();
    assert!(on.query.limits().extended_range_selectors);
    let env = [("STRATA_QUERY_EXTENDED_RANGE_SELECTORS", "false")];
    let off = load(None, &env, &Overrides::default()).unwrap();
    assert!(!off.query.limits().extended_range_selectors);
}

#[test]
fn duration_expr_is_on_unless_turned_off() {
    let on = load(None, &[], &Overrides::default()).unwrap();
    assert!(on.query.limits().duration_expr);
    let env = [("STRATA_QUERY_DURATION_EXPR", "false")];
    let off = load(None, &env, &Overrides::default()).unwrap();
    assert!(!off.query.limits().duration_expr);
}

#[test]
fn unquoted_utf8_names_are_on_unless_turned_off() {
    let on = load(None, &[], &Overrides::default()).unwrap();
    assert!(on.query.limits().unquoted_utf8_names);
    let env = [("STRATA_QUERY_UNQUOTED_UTF8_NAMES", "false")];
    let off = load(None, &env, &Overrides::default()).unwrap();
    assert!(!off.query.limits().unquoted_utf8_names);
}

#[test]
fn precedence_file_env_flags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:1\"\nlog_level = \"debug\"\n[storage]\nretention = \"30d\"\n",
    )
    .unwrap();
    let env = [
        ("STRATA_SERVER_LOG_LEVEL", "warn"),
        ("STRATA_STORAGE_FLUSH_INTERVAL", "250ms"),
        ("STRATA_OBJECT_STORE_S3_ALLOW_HTTP", "true"),
        ("UNRELATED", "x"),
    ];
    let o = Overrides {
        listen: Some("127.0.0.1:2".into()),
        ..Overrides::default()
    };
    let c = load(path.to_str(), &env, &o).unwrap();
    assert_eq!(c.server.listen, "127.0.0.1:2");
    assert_eq!(c.server.log_level, "warn");
    assert_eq!(c.storage.retention, Duration::from_secs(30 * 86400));
    assert_eq!(c.storage.flush_interval, Duration::from_millis(250));
    assert!(c.object_store.s3.allow_http);
}

#[test]
fn bad_values_name_the_key() {
    let e = load(
        None,
        &[("STRATA_STORAGE_FLUSH_INTERVAL", "soon")],
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(e.contains("flush_interval"), "{e}");
    let e = load(
        None,
        &[("STRATA_STORAGE_BOGUS", "1")],
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(e.contains("bogus"), "{e}");
    let e = load(
        None,
        &[("STRATA_SERVER_LISTEN", "nowhere")],
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(e.contains("server.listen"), "{e}");
    let e = load(
        None,
        &[("STRATA_STORAGE_FLUSH_INTERVAL", "0s")],
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(e.contains("storage.flush_interval"), "{e}");
}

#[test]
fn shards_from_env_and_flags() {
    let env = [
        ("STRATA_SHARDS_COUNT", "3"),
        ("STRATA_SHARDS_ID", "2"),
        (
            "STRATA_SHARDS_EXTRA_READ_URLS",
            "file:///old/a, file:///old/b/",
        ),
    ];
    let o = Overrides {
        object_store: Some("s3://bucket/prefix".into()),
        ..Overrides::default()
    };
    let c = load(None, &env, &o).unwrap();
    assert_eq!(c.shard_id(), Some(2));
    assert_eq!(c.write_url().unwrap(), "s3://bucket/prefix/shard-2");
    assert_eq!(
        c.read_urls().unwrap(),
        [
            "s3://bucket/prefix/shard-0",
            "s3://bucket/prefix/shard-1",
            "s3://bucket/prefix/shard-2",
            "file:///old/a",
            "file:///old/b"
        ]
    );
    let e = load(
        None,
        &[("STRATA_SHARDS_ID", "3"), ("STRATA_SHARDS_COUNT", "3")],
        &o,
    )
    .unwrap_err();
    assert!(e.contains("shards.id"), "{e}");
    let o = Overrides {
        role: Some(Role::Distributor),
        writers: Some(vec!["http://a:9470/".into(), "http://b:9470".into()]),
        ..Overrides::default()
    };
    let c = load(None, &[], &o).unwrap();
    assert_eq!(c.shards.writers, ["http://a:9470", "http://b:9470"]);
    let o = Overrides {
        role: Some(Role::Distributor),
        ..Overrides::default()
    };
    assert!(load(None, &[], &o).unwrap_err().contains("shards.writers"));
}

#[test]
fn shard_id_from_hostname() {
    assert_eq!(shard_from_hostname("strata-writer-12"), Some(12));
    assert_eq!(shard_from_hostname("strata-writer-0\n"), Some(0));
    assert_eq!(shard_from_hostname("strata-writer"), None);
    assert_eq!(shard_from_hostname("node7"), None);
    assert_eq!("auto".parse::<ShardId>(), Ok(ShardId::FromHostname));
    assert_eq!("4".parse::<ShardId>(), Ok(ShardId::Index(4)));
    assert!("x".parse::<ShardId>().is_err());
}
