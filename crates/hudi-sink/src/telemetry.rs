//! Logging: structured JSON lines on stderr/stdout for CloudWatch, level from `RUST_LOG` (default `info`).

/// Installs the JSON log subscriber once; later calls do nothing.
pub fn init_json_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .without_time()
        .try_init();
}
