use super::*;
use crate::storage::memory::MemoryStorage;

fn faulty() -> (Arc<MemoryStorage>, FaultyStorage) {
    let inner = Arc::new(MemoryStorage::new("mem://t"));
    let f = FaultyStorage::new(inner.clone());
    (inner, f)
}

fn injected_on(err: StorageError, op: &str, p: &str) {
    match err {
        StorageError::Injected { operation, path } => {
            assert_eq!((operation, path.as_str()), (op, p));
        }
        other => panic!("expected an injected fault, got {other}"),
    }
}

#[tokio::test]
async fn passes_through_and_logs_without_rules() {
    let (inner, f) = faulty();
    f.put("a/x", Bytes::from_static(b"1")).await.expect("put");
    assert_eq!(&f.get("a/x").await.expect("get")[..], b"1");
    assert_eq!(
        f.put_if_absent("a/x", Bytes::new()).await.expect("pia"),
        PutOutcome::AlreadyExists
    );
    assert_eq!(f.list("a/").await.expect("list").len(), 1);
    f.delete("a/x").await.expect("delete");
    assert_eq!(inner.head("a/x").await.expect("head"), None);
    assert_eq!(f.base_uri(), "mem://t");
    assert_eq!(
        f.call_paths(),
        vec![
            (Operation::Put, "a/x".to_string()),
            (Operation::Get, "a/x".to_string()),
            (Operation::PutIfAbsent, "a/x".to_string()),
            (Operation::List, "a/".to_string()),
            (Operation::Delete, "a/x".to_string()),
        ]
    );
    assert!(f
        .calls()
        .iter()
        .all(|c| c.failure.is_none() && c.delayed.is_zero()));
}

#[tokio::test]
async fn fails_exactly_the_nth_matching_call_without_effect() {
    let (inner, f) = faulty();
    let id = f.add_rule(
        FaultRule::fail(Operation::Put)
            .on_call(3)
            .path_suffix(".commit"),
    );
    // Calls that do not match do not count.
    f.put("data/1.parquet", Bytes::new())
        .await
        .expect("other suffix");
    f.put_if_absent("t.commit", Bytes::new())
        .await
        .expect("other op");
    f.put("1.commit", Bytes::new()).await.expect("1st");
    f.put("2.commit", Bytes::new()).await.expect("2nd");
    injected_on(
        f.put("3.commit", Bytes::from_static(b"x"))
            .await
            .expect_err("3rd"),
        "put",
        "3.commit",
    );
    f.put("4.commit", Bytes::new())
        .await
        .expect("4th passes again");
    assert_eq!(
        inner.head("3.commit").await.expect("head"),
        None,
        "failed before effect"
    );
    assert_eq!((f.matched(id), f.fired(id)), (4, 1));
    let failures: Vec<_> = f
        .calls()
        .into_iter()
        .filter(|c| c.failure.is_some())
        .collect();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].failure, Some(InjectedFailure::BeforeEffect));
    assert_eq!(failures[0].path, "3.commit");
}

#[tokio::test]
async fn effect_then_fail_applies_the_write() {
    let (inner, f) = faulty();
    f.add_rule(FaultRule::effect_then_fail(Operation::PutIfAbsent).path_prefix(".hoodie/"));
    f.add_rule(FaultRule::effect_then_fail(Operation::Delete));
    let err = f
        .put_if_absent(".hoodie/1.commit", Bytes::from_static(b"c"))
        .await
        .expect_err("answer lost");
    injected_on(err, "put_if_absent", ".hoodie/1.commit");
    assert_eq!(
        &inner.get(".hoodie/1.commit").await.expect("effect")[..],
        b"c"
    );
    // The retry sees the effect of the lost call.
    assert_eq!(
        f.put_if_absent(".hoodie/1.commit", Bytes::from_static(b"c"))
            .await
            .expect("retry"),
        PutOutcome::AlreadyExists
    );
    injected_on(
        f.delete(".hoodie/1.commit").await.expect_err("lost"),
        "delete",
        ".hoodie/1.commit",
    );
    assert_eq!(
        inner.head(".hoodie/1.commit").await.expect("head"),
        None,
        "deleted anyway"
    );
    assert_eq!(f.calls()[0].failure, Some(InjectedFailure::AfterEffect));
}

#[tokio::test]
async fn effect_then_fail_returns_the_inner_error_when_the_effect_fails() {
    let (_, f) = faulty();
    f.add_rule(FaultRule::effect_then_fail(Operation::Get));
    assert!(f.get("missing").await.expect_err("inner").is_not_found());
}

#[tokio::test]
async fn windows_always_and_removal() {
    let (_, f) = faulty();
    let id = f.add_rule(FaultRule::fail(Operation::Head).on_call(2).times(2));
    let results: Vec<bool> = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(f.head("x").await.is_err());
        }
        v
    };
    assert_eq!(results, vec![false, true, true, false, false]);
    assert_eq!(f.fired(id), 2);

    let crash = f.add_rule(FaultRule::any_operation(FaultAction::Fail).always());
    for op_result in [
        f.get("a").await.map(|_| ()),
        f.list("").await.map(|_| ()),
        f.put("a", Bytes::new()).await,
        f.delete("a").await,
    ] {
        assert!(matches!(op_result, Err(StorageError::Injected { .. })));
    }
    f.remove_rule(crash);
    f.put("a", Bytes::new()).await.expect("rule removed");
    assert_eq!(f.fired(crash), 4);
    f.clear_log();
    assert!(f.calls().is_empty());
    f.clear_rules();
    assert_eq!(f.fired(id), 2, "counters survive clearing");
}

#[tokio::test]
async fn delays_add_up_and_the_first_failing_rule_decides() {
    let (inner, f) = faulty();
    f.add_rule(FaultRule::delay(Operation::Put, Duration::from_millis(50)));
    f.add_rule(FaultRule::delay(Operation::Put, Duration::from_millis(70)));
    let fail = f.add_rule(FaultRule::fail(Operation::Put));
    let effect = f.add_rule(FaultRule::effect_then_fail(Operation::Put));
    let start = std::time::Instant::now();
    let err = f
        .put("p", Bytes::from_static(b"1"))
        .await
        .expect_err("fails");
    assert!(matches!(err, StorageError::Injected { .. }));
    assert!(
        start.elapsed() >= Duration::from_millis(120),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        inner.head("p").await.expect("head"),
        None,
        "Fail came first: no effect"
    );
    assert_eq!((f.fired(fail), f.fired(effect)), (1, 0));
    assert_eq!((f.matched(fail), f.matched(effect)), (1, 1));
    let call = &f.calls()[0];
    assert_eq!(
        (call.delayed, call.failure),
        (
            Duration::from_millis(120),
            Some(InjectedFailure::BeforeEffect)
        )
    );
    // Every rule's window is over: the next put passes untouched.
    f.put("p", Bytes::from_static(b"2")).await.expect("passes");
    assert_eq!(f.calls()[1].delayed, Duration::ZERO);
    assert_eq!(&inner.get("p").await.expect("get")[..], b"2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_get_distinct_call_numbers() {
    let (_, f) = faulty();
    let f = Arc::new(f);
    let id = f.add_rule(FaultRule::fail(Operation::Put).on_call(10).times(5));
    let mut tasks = Vec::new();
    for i in 0..32 {
        let f = f.clone();
        tasks.push(tokio::spawn(async move {
            f.put(&format!("k/{i}"), Bytes::new()).await.is_err()
        }));
    }
    let mut failed = 0;
    for t in tasks {
        if t.await.expect("join") {
            failed += 1;
        }
    }
    assert_eq!(failed, 5);
    assert_eq!((f.matched(id), f.fired(id)), (32, 5));
    assert_eq!(f.count(Operation::Put), 32);
}

#[test]
fn filters_and_names() {
    assert!(PathFilter::Prefix(".hoodie/".into()).matches(".hoodie/x"));
    assert!(!PathFilter::Prefix(".hoodie/".into()).matches("a/.hoodie/x"));
    assert!(PathFilter::Suffix(".commit".into()).matches(".hoodie/1.commit"));
    assert!(!PathFilter::Exact("a".into()).matches("ab"));
    let names: Vec<_> = Operation::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(
        names,
        [
            "get",
            "get_range",
            "head",
            "put",
            "put_if_absent",
            "list",
            "delete",
            "delete_many",
            "write_part",
            "complete_upload",
            "abort_upload"
        ]
    );
    assert!(Operation::Delete.is_write() && !Operation::List.is_write());
}

#[tokio::test]
async fn multipart_uploads_obey_the_rules() {
    let (inner, f) = faulty();
    f.add_rule(FaultRule::fail(Operation::CompleteUpload).path_exact("p/a"));
    f.add_rule(FaultRule::effect_then_fail(Operation::CompleteUpload).path_exact("p/b"));
    f.add_rule(
        FaultRule::fail(Operation::WritePart)
            .on_call(2)
            .path_exact("p/c"),
    );
    for path in ["p/a", "p/b"] {
        let mut upload = f.put_multipart(path).await.expect("start");
        upload
            .write(Bytes::from_static(b"xy"))
            .await
            .expect("write");
        let err = upload.complete().await.expect_err("injected");
        injected_on(err, "complete_upload", path);
    }
    // Failed before its effect: nothing stored; after: stored, answer lost.
    assert_eq!(inner.head("p/a").await.expect("head"), None);
    assert_eq!(&inner.get("p/b").await.expect("get")[..], b"xy");
    let mut upload = f.put_multipart("p/c").await.expect("start");
    upload
        .write(Bytes::from_static(b"1"))
        .await
        .expect("first write");
    let err = upload
        .write(Bytes::from_static(b"2"))
        .await
        .expect_err("second");
    injected_on(err, "write_part", "p/c");
    upload.abort().await.expect("abort");
    assert_eq!(inner.head("p/c").await.expect("head"), None);
    assert_eq!(f.count(Operation::WritePart), 4);
    assert_eq!(f.count(Operation::AbortUpload), 1);
}
