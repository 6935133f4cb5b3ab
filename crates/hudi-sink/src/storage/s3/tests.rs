use super::*;

#[test]
fn parses_s3_uris() {
    let ok = |uri: &str| parse_s3_uri(uri).map_err(|e| e.to_string());
    assert_eq!(ok("s3://b/tables/t1"), Ok(("b".into(), "tables/t1".into())));
    assert_eq!(
        ok("s3a://b/tables/t1/"),
        Ok(("b".into(), "tables/t1".into()))
    );
    assert_eq!(ok("s3://b"), Ok(("b".into(), String::new())));
    assert_eq!(ok("s3://b/"), Ok(("b".into(), String::new())));
    assert_eq!(ok("S3A://b/t"), Ok(("b".into(), "t".into())));
    for bad in [
        "s3://",
        "s3:///x",
        "gs://b/x",
        "b/x",
        "s3://b/../x",
        "s3://b//x",
        "s3://b/a/./c",
    ] {
        assert!(parse_s3_uri(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn content_range_total() {
    assert_eq!(total_from_content_range("bytes 0-9/1000"), Some(1000));
    assert_eq!(total_from_content_range("bytes */77"), Some(77));
    assert_eq!(total_from_content_range("bytes 0-9/*"), None);
}

#[test]
fn conflict_backoff_is_bounded() {
    for retry in 0..40 {
        let d = conflict_backoff(retry);
        assert!(d <= CONFLICT_BACKOFF_MAX, "retry {retry}: {d:?}");
        assert!(
            d <= CONFLICT_BACKOFF_BASE * 2u32.pow(retry.min(10)),
            "retry {retry}: {d:?}"
        );
    }
}

#[test]
fn client_config_applies_timeouts_and_retries() {
    let o = S3Options {
        endpoint_url: Some("http://127.0.0.1:1".into()),
        force_path_style: true,
        ..S3Options::default()
    };
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .build();
    let conf = o.client_config(&sdk);
    let timeouts = conf
        .timeout_config()
        .cloned()
        .unwrap_or_else(TimeoutConfig::disabled);
    assert_eq!(timeouts.operation_timeout(), Some(Duration::from_secs(120)));
    assert_eq!(
        timeouts.operation_attempt_timeout(),
        Some(Duration::from_secs(30))
    );
    assert_eq!(conf.retry_config().map(|r| r.max_attempts()), Some(5));
}
