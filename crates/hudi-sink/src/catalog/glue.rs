//! [`CatalogClient`] over the AWS SDK's Glue client (the `glue` cargo feature). Endpoints come from the
//! standard AWS settings (`AWS_ENDPOINT_URL_GLUE`, `AWS_ENDPOINT_URL`) or `hoodie.aws.glue.endpoint`, so that
//! tests and VPC endpoints work unchanged.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use aws_sdk_glue::error::DisplayErrorContext;
use aws_sdk_glue::types::{
    BatchUpdatePartitionRequestEntry, Column, DatabaseInput, PartitionInput, PartitionValueList,
    SerDeInfo, StorageDescriptor, TableInput,
};
use aws_sdk_glue::Client;

use super::definition::{ColumnDef, PartitionDef, StorageDef, StoredPartition, TableDef};
use super::sync::CatalogClient;
use super::{CatalogConfig, CatalogError};
use crate::aws_clients::{sdk_config, RemoteTimeouts};

/// The Glue catalog of one account and region.
#[derive(Debug, Clone)]
pub struct GlueCatalog {
    client: Client,
}

fn glue_err(operation: &str, e: impl std::error::Error) -> CatalogError {
    CatalogError::Glue {
        operation: operation.to_string(),
        message: DisplayErrorContext(e).to_string(),
    }
}

fn build_err(operation: &str, e: aws_sdk_glue::error::BuildError) -> CatalogError {
    CatalogError::Glue {
        operation: operation.to_string(),
        message: format!("invalid request: {e}"),
    }
}

impl GlueCatalog {
    /// A client from the default AWS configuration with the Glue deadlines and the configured endpoint or
    /// region, if any.
    pub async fn from_config(config: &CatalogConfig, timeouts: &RemoteTimeouts) -> Self {
        let sdk = sdk_config(
            timeouts,
            config.region.as_deref(),
            config.endpoint.as_deref(),
        )
        .await;
        Self {
            client: Client::new(&sdk),
        }
    }

    /// A client from an SDK configuration.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

fn column(c: &ColumnDef) -> Result<Column, CatalogError> {
    Column::builder()
        .name(&c.name)
        .r#type(&c.type_name)
        .comment("")
        .build()
        .map_err(|e| build_err("Column", e))
}

fn storage_descriptor(s: &StorageDef) -> Result<StorageDescriptor, CatalogError> {
    let columns = s
        .columns
        .iter()
        .map(column)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(StorageDescriptor::builder()
        .set_columns(Some(columns))
        .location(&s.location)
        .input_format(&s.input_format)
        .output_format(&s.output_format)
        .serde_info(
            SerDeInfo::builder()
                .serialization_library(&s.serde_library)
                .set_parameters(Some(hash(&s.serde_parameters)))
                .build(),
        )
        .build())
}

fn hash(m: &BTreeMap<String, String>) -> HashMap<String, String> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn tree(m: Option<&HashMap<String, String>>) -> BTreeMap<String, String> {
    m.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn table_input(t: &TableDef) -> Result<TableInput, CatalogError> {
    let keys = t
        .partition_keys
        .iter()
        .map(column)
        .collect::<Result<Vec<_>, _>>()?;
    TableInput::builder()
        .name(&t.name)
        .table_type(&t.table_type)
        .set_parameters(Some(hash(&t.parameters)))
        .set_partition_keys(Some(keys))
        .storage_descriptor(storage_descriptor(&t.storage)?)
        .build()
        .map_err(|e| build_err("TableInput", e))
}

fn columns_of(cols: &[Column]) -> Vec<ColumnDef> {
    cols.iter()
        .map(|c| ColumnDef {
            name: c.name().to_string(),
            type_name: c.r#type().unwrap_or_default().to_string(),
        })
        .collect()
}

fn storage_of(sd: Option<&StorageDescriptor>) -> StorageDef {
    let serde = sd.and_then(|s| s.serde_info());
    StorageDef {
        columns: sd.map(|s| columns_of(s.columns())).unwrap_or_default(),
        location: sd
            .and_then(|s| s.location())
            .unwrap_or_default()
            .to_string(),
        input_format: sd
            .and_then(|s| s.input_format())
            .unwrap_or_default()
            .to_string(),
        output_format: sd
            .and_then(|s| s.output_format())
            .unwrap_or_default()
            .to_string(),
        serde_library: serde
            .and_then(|s| s.serialization_library())
            .unwrap_or_default()
            .to_string(),
        serde_parameters: tree(serde.and_then(|s| s.parameters())),
    }
}

fn stored_partition(p: &aws_sdk_glue::types::Partition) -> StoredPartition {
    StoredPartition {
        values: p.values().to_vec(),
        location: p
            .storage_descriptor()
            .and_then(|s| s.location())
            .unwrap_or_default()
            .to_string(),
    }
}

fn value_list(values: &[String]) -> Result<PartitionValueList, CatalogError> {
    PartitionValueList::builder()
        .set_values(Some(values.to_vec()))
        .build()
        .map_err(|e| build_err("PartitionValueList", e))
}

fn partition_input(p: &PartitionDef) -> Result<PartitionInput, CatalogError> {
    Ok(PartitionInput::builder()
        .set_values(Some(p.values.clone()))
        .storage_descriptor(storage_descriptor(&p.storage)?)
        .build())
}

/// The first per-partition error a batch call returned, unless it is one of `tolerated` codes.
fn batch_errors(
    operation: &str,
    errors: &[aws_sdk_glue::types::PartitionError],
    tolerated: &str,
) -> Result<(), CatalogError> {
    for e in errors {
        let code = e
            .error_detail()
            .and_then(|d| d.error_code())
            .unwrap_or_default();
        if code == tolerated {
            continue;
        }
        let message = e
            .error_detail()
            .and_then(|d| d.error_message())
            .unwrap_or_default();
        return Err(CatalogError::Glue {
            operation: operation.to_string(),
            message: format!("partition {:?}: {code}: {message}", e.partition_values()),
        });
    }
    Ok(())
}

#[async_trait]
impl CatalogClient for GlueCatalog {
    async fn database_exists(&self, database: &str) -> Result<bool, CatalogError> {
        match self.client.get_database().name(database).send().await {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_entity_not_found_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(glue_err("GetDatabase", e)),
        }
    }

    async fn create_database(&self, database: &str) -> Result<(), CatalogError> {
        let input = DatabaseInput::builder()
            .name(database)
            .description("Automatically created by msk-hudi-sink")
            .build()
            .map_err(|e| build_err("DatabaseInput", e))?;
        match self
            .client
            .create_database()
            .database_input(input)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_already_exists_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(glue_err("CreateDatabase", e)),
        }
    }

    async fn get_table(
        &self,
        database: &str,
        name: &str,
    ) -> Result<Option<TableDef>, CatalogError> {
        let out = match self
            .client
            .get_table()
            .database_name(database)
            .name(name)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_entity_not_found_exception()) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(glue_err("GetTable", e)),
        };
        let Some(t) = out.table() else {
            return Ok(None);
        };
        Ok(Some(TableDef {
            name: t.name().to_string(),
            table_type: t.table_type().unwrap_or_default().to_string(),
            parameters: tree(t.parameters()),
            partition_keys: columns_of(t.partition_keys()),
            storage: storage_of(t.storage_descriptor()),
            version: t.version_id().map(String::from),
        }))
    }

    async fn create_table(&self, database: &str, table: &TableDef) -> Result<(), CatalogError> {
        self.client
            .create_table()
            .database_name(database)
            .table_input(table_input(table)?)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| glue_err("CreateTable", e))
    }

    async fn update_table(
        &self,
        database: &str,
        table: &TableDef,
        skip_archive: bool,
    ) -> Result<bool, CatalogError> {
        match self
            .client
            .update_table()
            .database_name(database)
            .table_input(table_input(table)?)
            .skip_archive(skip_archive)
            .set_version_id(table.version.clone())
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_concurrent_modification_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(glue_err("UpdateTable", e)),
        }
    }

    async fn get_partitions(
        &self,
        database: &str,
        table: &str,
        values: &[Vec<String>],
    ) -> Result<Vec<StoredPartition>, CatalogError> {
        let keys = values
            .iter()
            .map(|v| value_list(v))
            .collect::<Result<Vec<_>, _>>()?;
        let out = self
            .client
            .batch_get_partition()
            .database_name(database)
            .table_name(table)
            .set_partitions_to_get(Some(keys))
            .send()
            .await
            .map_err(|e| glue_err("BatchGetPartition", e))?;
        if !out.unprocessed_keys().is_empty() {
            return Err(CatalogError::Glue {
                operation: "BatchGetPartition".into(),
                message: format!(
                    "{} keys unprocessed (throttled)",
                    out.unprocessed_keys().len()
                ),
            });
        }
        Ok(out.partitions().iter().map(stored_partition).collect())
    }

    async fn all_partitions(
        &self,
        database: &str,
        table: &str,
    ) -> Result<Vec<StoredPartition>, CatalogError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .client
                .get_partitions()
                .database_name(database)
                .table_name(table)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| glue_err("GetPartitions", e))?;
            out.extend(page.partitions().iter().map(stored_partition));
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(out),
            }
        }
    }

    async fn create_partitions(
        &self,
        database: &str,
        table: &str,
        partitions: &[PartitionDef],
    ) -> Result<(), CatalogError> {
        let inputs = partitions
            .iter()
            .map(partition_input)
            .collect::<Result<Vec<_>, _>>()?;
        let out = self
            .client
            .batch_create_partition()
            .database_name(database)
            .table_name(table)
            .set_partition_input_list(Some(inputs))
            .send()
            .await
            .map_err(|e| glue_err("BatchCreatePartition", e))?;
        batch_errors(
            "BatchCreatePartition",
            out.errors(),
            "AlreadyExistsException",
        )
    }

    async fn update_partitions(
        &self,
        database: &str,
        table: &str,
        partitions: &[PartitionDef],
    ) -> Result<(), CatalogError> {
        let mut entries = Vec::new();
        for p in partitions {
            entries.push(
                BatchUpdatePartitionRequestEntry::builder()
                    .set_partition_value_list(Some(p.values.clone()))
                    .partition_input(partition_input(p)?)
                    .build()
                    .map_err(|e| build_err("BatchUpdatePartitionRequestEntry", e))?,
            );
        }
        let out = self
            .client
            .batch_update_partition()
            .database_name(database)
            .table_name(table)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| glue_err("BatchUpdatePartition", e))?;
        if let Some(e) = out.errors().first() {
            let detail = e.error_detail();
            return Err(CatalogError::Glue {
                operation: "BatchUpdatePartition".into(),
                message: format!(
                    "partition {:?}: {}: {}",
                    e.partition_value_list(),
                    detail.and_then(|d| d.error_code()).unwrap_or_default(),
                    detail.and_then(|d| d.error_message()).unwrap_or_default()
                ),
            });
        }
        Ok(())
    }

    async fn delete_partitions(
        &self,
        database: &str,
        table: &str,
        values: &[Vec<String>],
    ) -> Result<(), CatalogError> {
        let keys = values
            .iter()
            .map(|v| value_list(v))
            .collect::<Result<Vec<_>, _>>()?;
        let out = self
            .client
            .batch_delete_partition()
            .database_name(database)
            .table_name(table)
            .set_partitions_to_delete(Some(keys))
            .send()
            .await
            .map_err(|e| glue_err("BatchDeletePartition", e))?;
        batch_errors(
            "BatchDeletePartition",
            out.errors(),
            "EntityNotFoundException",
        )
    }
}
