use super::*;

fn spec(name: &str) -> GroupSpec {
    GroupSpec {
        name: name.into(),
        file: "rules.yml".into(),
        interval: Duration::from_secs(1),
        query_offset: Duration::ZERO,
        limit: 0,
        rules: Vec::new(),
    }
}

fn ruler(store: &Arc<dyn ObjectStore>, id: &str) -> Arc<Sharing> {
    Arc::new(Sharing::new(
        Arc::clone(store),
        &Path::from("db/ruler"),
        id.into(),
        Duration::from_secs(1),
        Arc::new(strata_codec::clock::SystemClock),
    ))
}

#[tokio::test]
async fn one_ruler_at_a_time_and_a_silent_one_is_replaced() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let (a, b) = (ruler(&store, "a"), ruler(&store, "b"));
    a.heartbeat_once("").await.unwrap();
    b.heartbeat_once("").await.unwrap();
    a.heartbeat_once("").await.unwrap();
    let groups: Vec<GroupSpec> = (0..16).map(|i| spec(&format!("g{i}"))).collect();
    let mut held_by_a = 0;
    for ts in [1_000, 2_000, 3_000] {
        for g in &groups {
            let (x, y) = tokio::join!(a.claim("t", g, ts), b.claim("t", g, ts));
            assert!(x ^ y, "{} at {ts}: a {x}, b {y}", g.name);
            if ts == 3_000 && x {
                held_by_a += 1;
            }
        }
    }
    // Shared, not all on one.
    assert!((1..16).contains(&held_by_a), "{held_by_a} of 16 on a");
    // a stops renewing: b takes each of a's groups at the next
    // timestamp.
    for g in &groups {
        assert!(b.claim("t", g, 4_000).await, "{}", g.name);
    }
    // a comes back with what it knew: it never evaluates beside b, and
    // by the next timestamp each group has one ruler again.
    for g in &groups {
        let (x, y) = tokio::join!(a.claim("t", g, 5_000), b.claim("t", g, 5_000));
        assert!(!(x && y), "{} at 5000: both", g.name);
    }
    for g in &groups {
        let (x, y) = tokio::join!(a.claim("t", g, 6_000), b.claim("t", g, 6_000));
        assert!(x ^ y, "{} at 6000: a {x}, b {y}", g.name);
    }
}

#[tokio::test]
async fn a_dead_ruler_still_listed_gets_no_group_back() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let (a, b, c) = (ruler(&store, "a"), ruler(&store, "b"), ruler(&store, "c"));
    for r in [&a, &b, &c, &a, &b] {
        r.heartbeat_once("").await.unwrap();
    }
    let groups: Vec<GroupSpec> = (0..12).map(|i| spec(&format!("g{i}"))).collect();
    for ts in [1_000, 2_000] {
        for g in &groups {
            let (x, y, z) = tokio::join!(
                a.claim("t", g, ts),
                b.claim("t", g, ts),
                c.claim("t", g, ts)
            );
            assert_eq!(u8::from(x) + u8::from(y) + u8::from(z), 1, "{}", g.name);
        }
    }
    // c dies; its heartbeat is still fresh, so a and b still list it:
    // its groups are taken once and stay taken, none handed back to it.
    for ts in [3_000, 4_000, 5_000, 6_000] {
        for g in &groups {
            let (x, y) = tokio::join!(a.claim("t", g, ts), b.claim("t", g, ts));
            assert!(x ^ y, "{} at {ts}: a {x}, b {y}", g.name);
        }
    }
}

#[tokio::test]
async fn a_leaving_ruler_releases_its_groups() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let a = ruler(&store, "a");
    let b = ruler(&store, "b");
    let g = spec("g");
    assert!(a.claim("t", &g, 1_000).await);
    assert!(!b.claim("t", &g, 1_000).await);
    a.leave().await;
    // b is not the preferred ruler by its view (it sees only itself,
    // so it is): it takes the released group at the next timestamp.
    assert!(b.claim("t", &g, 2_000).await);
    assert!(!a.claim("t", &g, 2_000).await);
}
