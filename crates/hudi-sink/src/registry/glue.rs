//! The AWS Glue Schema Registry client: `GetSchemaVersion` by schema version id, signed by the AWS SDK
//! (IAM: `glue:GetSchemaVersion` on `*`, since a version id is not an ARN).

use async_trait::async_trait;
use aws_sdk_glue::error::ProvideErrorMetadata as _;
use aws_sdk_glue::types::SchemaVersionStatus;
use aws_sdk_glue::Client;

use super::{Fetched, SchemaId, SchemaSource};

/// A Glue Schema Registry client (any registry of the account and region: version ids are global).
#[derive(Debug, Clone)]
pub struct GlueRegistry {
    client: Client,
}

impl GlueRegistry {
    /// A client from the sink's SDK configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Self {
            client: Client::new(sdk),
        }
    }
}

#[async_trait]
impl SchemaSource for GlueRegistry {
    async fn fetch(&self, id: SchemaId) -> Result<Option<Fetched>, String> {
        let SchemaId::Glue(version) = id else {
            return Ok(None);
        };
        let answer = self
            .client
            .get_schema_version()
            .schema_version_id(version.to_string())
            .send()
            .await;
        let out = match answer {
            Ok(out) => out,
            Err(e) if e.code() == Some("EntityNotFoundException") => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "GetSchemaVersion {version}: {}",
                    e.message()
                        .map(str::to_string)
                        .or_else(|| e.code().map(str::to_string))
                        .unwrap_or_else(|| e.to_string())
                ))
            }
        };
        match out.status() {
            Some(SchemaVersionStatus::Available) | None => {}
            // Registered but not usable yet: ask again with the redelivery.
            Some(SchemaVersionStatus::Pending) => {
                return Err(format!(
                    "GetSchemaVersion {version}: the version is still PENDING"
                ))
            }
            Some(_) => return Ok(None),
        }
        let Some(text) = out.schema_definition() else {
            return Err(format!(
                "GetSchemaVersion {version}: the answer has no definition"
            ));
        };
        Ok(Some(Fetched {
            text: text.to_string(),
            format: out
                .data_format()
                .map(|f| f.as_str().to_string())
                .unwrap_or_else(|| "AVRO".to_string()),
        }))
    }
}
