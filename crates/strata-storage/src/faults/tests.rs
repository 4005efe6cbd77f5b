use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::*;

fn store() -> (Faults, Arc<dyn ObjectStore>) {
    let faults = Faults::new();
    let store = faults.wrap(Arc::new(InMemory::new()));
    (faults, store)
}

fn path() -> Path {
    Path::from("a/b")
}

#[tokio::test]
async fn status_and_reset_errors_look_like_a_client_s() {
    let (faults, store) = store();
    faults.set(Op::Put, Fault::Status(503));
    let e = store.put(&path(), "x".into()).await.unwrap_err();
    assert!(matches!(e, object_store::Error::Generic { .. }), "{e:?}");
    assert!(e.to_string().contains("503"), "{e}");

    faults.set(Op::Put, Fault::Reset);
    let e = store.put(&path(), "x".into()).await.unwrap_err();
    let object_store::Error::Generic { source, .. } = &e else {
        panic!("{e:?}");
    };
    let io = source.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
    assert_eq!(faults.injected(Op::Put), 2);
    assert_eq!(faults.calls(Op::Put), 2);
    // Nothing reached the store.
    assert!(store.get(&path()).await.is_err());

    faults.heal();
    store.put(&path(), "x".into()).await.unwrap();
    assert_eq!(faults.injected(Op::Put), 2);
    assert_eq!(faults.calls(Op::Put), 3);
}

#[tokio::test]
async fn faults_apply_by_operation() {
    let (faults, store) = store();
    store.put(&path(), "x".into()).await.unwrap();
    faults.set(Op::Get, Fault::Status(500));
    assert!(store.get(&path()).await.is_err());
    assert!(store.get_range(&path(), 0..1).await.is_err());
    store.head(&path()).await.unwrap();
    store.put(&path(), "y".into()).await.unwrap();
    faults.set(Op::List, Fault::Reset);
    assert!(store.list(None).next().await.unwrap().is_err());
    assert_eq!(faults.injected(Op::Get), 2);
    assert_eq!(faults.injected(Op::List), 1);
    assert_eq!(faults.injected(Op::Put), 0);
}

#[tokio::test]
async fn next_n_calls_then_clear() {
    let (faults, store) = store();
    faults.set_when(Op::Put, Fault::Status(500), When::Next(2));
    assert!(store.put(&path(), "x".into()).await.is_err());
    assert!(store.put(&path(), "x".into()).await.is_err());
    store.put(&path(), "x".into()).await.unwrap();
    assert_eq!(faults.injected(Op::Put), 2);
}

#[tokio::test]
async fn probability_is_deterministic_and_roughly_right() {
    let run = || async {
        let (faults, store) = store();
        faults.set_when(Op::Head, Fault::Status(503), When::Probability(0.3));
        store.put(&path(), "x".into()).await.unwrap();
        let mut failed = Vec::new();
        for _ in 0..200 {
            failed.push(store.head(&path()).await.is_err());
        }
        failed
    };
    let a = run().await;
    assert_eq!(a, run().await);
    let n = a.iter().filter(|f| **f).count();
    assert!((40..=80).contains(&n), "{n} of 200 failed at p = 0.3");
}

#[tokio::test]
async fn answer_lost_does_the_work() {
    let (faults, store) = store();
    faults.set(Op::Put, Fault::AnswerLost);
    assert!(store.put(&path(), "x".into()).await.is_err());
    faults.clear(Op::Put);
    let got = store.get(&path()).await.unwrap().bytes().await.unwrap();
    assert_eq!(&got[..], b"x");
}

#[tokio::test]
async fn stall_waits_until_cleared_black_hole_forever_latency_delays() {
    let (faults, store) = store();
    faults.set(Op::Put, Fault::Stall);
    let stalled = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.put(&path(), "x".into()).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!stalled.is_finished());
    // Another kind's fault changing does not release it.
    faults.set(Op::Get, Fault::Status(500));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!stalled.is_finished());
    faults.heal();
    stalled.await.unwrap().unwrap();

    faults.set(Op::Put, Fault::BlackHole);
    let lost = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.put(&Path::from("lost"), "x".into()).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    faults.heal();
    // Healed, new calls are answered; the black-holed one never is.
    store.put(&path(), "y".into()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!lost.is_finished());
    lost.abort();
    assert!(store.head(&Path::from("lost")).await.is_err());

    faults.set(Op::Head, Fault::Latency(Duration::from_millis(100)));
    let started = std::time::Instant::now();
    store.head(&path()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
}
