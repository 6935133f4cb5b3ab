//! Coordinator Lambda: begins and commits instants for the writers under the table lock, and runs table
//! services when invoked by the schedule (any event without an `op` field).

use std::sync::Arc;

use hudi_sink::bootstrap::{build_coordinator, load_properties};
use hudi_sink::clock::SystemClock;
use hudi_sink::protocol::CoordinatorRequest;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hudi_sink::telemetry::init_json_logs();
    let config = std::env::var("HUDI_SINK_CONFIG")
        .map_err(|_| "HUDI_SINK_CONFIG must name the table properties file (s3://… or a path)")?;
    let props = load_properties(&config).await?;
    let coordinator = Arc::new(build_coordinator(&props, Arc::new(SystemClock)).await?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let coordinator = coordinator.clone();
        async move {
            let request = if event.payload.get("op").is_some() {
                serde_json::from_value::<CoordinatorRequest>(event.payload)?
            } else {
                CoordinatorRequest::Services
            };
            let response = coordinator.handle(request).await?;
            Ok::<Value, Error>(serde_json::to_value(response)?)
        }
    }))
    .await
}
