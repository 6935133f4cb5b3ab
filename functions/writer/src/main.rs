//! Writer Lambda: one event-source-mapping batch (MSK or self-managed Kafka) → one committed Hudi instant.
//! Returns only after the commit is durable, so the ESM commits the Kafka offsets only then; any error
//! makes the ESM redeliver the batch, which the sink handles exactly once.

use std::sync::Arc;

use hudi_sink::bootstrap::{build_sink, load_properties};
use hudi_sink::source::event::KafkaBatch;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hudi_sink::telemetry::init_json_logs();
    let config = std::env::var("HUDI_SINK_CONFIG")
        .map_err(|_| "HUDI_SINK_CONFIG must name the table properties file (s3://… or a path)")?;
    let props = load_properties(&config).await?;
    let sink = Arc::new(build_sink(&props, "writer").await?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let sink = sink.clone();
        async move {
            let batch = KafkaBatch::from_value(event.payload)?;
            let report = sink.process(batch).await?;
            hudi_sink::metrics::emit(&report, &event.context.request_id);
            Ok::<Value, Error>(serde_json::to_value(report)?)
        }
    }))
    .await
}
