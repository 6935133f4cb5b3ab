//! The Glue table and partitions exactly as Hudi's `AwsGlueCatalogSyncTool` creates them (the `TableInput` /
//! `PartitionInput` documents), built from the table's schema and properties. Plain data, so that the sync
//! can be tested against a fake catalog and the SDK client only translates.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::config::CatalogConfig;
use super::hive_types::{hive_type, spark_field, spark_string_field};
use super::CatalogError;
use crate::schema::meta::META_COLUMNS;
use crate::write::TableSchema;

/// Hudi's input format: Athena and Hive then read only the latest file slice of each file group.
pub const INPUT_FORMAT: &str = "org.apache.hudi.hadoop.HoodieParquetInputFormat";
/// The merge-on-read snapshot (`_rt`) input format.
pub const REALTIME_INPUT_FORMAT: &str =
    "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat";
/// Hive's Parquet output format.
pub const OUTPUT_FORMAT: &str = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat";
/// Hive's Parquet serde.
pub const SERDE: &str = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe";
/// The table parameter holding the last synced instant.
pub const WATERMARK: &str = "last_commit_time_sync";

/// Which view of the Hudi table a Glue table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableView {
    /// A copy-on-write table: one Glue table.
    CopyOnWrite,
    /// A merge-on-read table's read-optimized view (`<table>_ro`): base files only.
    ReadOptimized,
    /// A merge-on-read table's snapshot view (`<table>_rt`): base and log files merged.
    Snapshot,
}

/// One column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    /// The Hive type, lower case.
    pub type_name: String,
}

/// The storage descriptor shared by the table and (with its own location) every partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageDef {
    pub columns: Vec<ColumnDef>,
    pub location: String,
    pub input_format: String,
    pub output_format: String,
    pub serde_library: String,
    pub serde_parameters: BTreeMap<String, String>,
}

/// A Glue table (`TableInput`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    pub name: String,
    pub table_type: String,
    pub parameters: BTreeMap<String, String>,
    pub partition_keys: Vec<ColumnDef>,
    pub storage: StorageDef,
    /// The catalog's version of a table read back (`VersionId`); an update given it applies only if nobody
    /// updated the table since. `None` in a definition built here.
    pub version: Option<String>,
}

/// A Glue partition (`PartitionInput`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDef {
    /// The values, one per partition key.
    pub values: Vec<String>,
    /// The table's storage descriptor with the partition's location.
    pub storage: StorageDef,
}

/// A partition as the catalog holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPartition {
    pub values: Vec<String>,
    pub location: String,
}

/// `s3a://` and `s3n://` become `s3://` (what Athena accepts), and no trailing slash.
pub fn catalog_location(base_path: &str) -> String {
    let trimmed = base_path.trim_end_matches('/');
    for scheme in ["s3a://", "s3n://"] {
        if let Some(rest) = trimmed.strip_prefix(scheme) {
            return format!("s3://{rest}");
        }
    }
    trimmed.to_string()
}

/// The partition fields as plain column names (a custom key generator writes `field:TYPE`).
pub fn partition_columns(fields: &[String]) -> Vec<String> {
    fields
        .iter()
        .map(|f| f.split(':').next().unwrap_or(f).trim().to_string())
        .filter(|f| !f.is_empty())
        .collect()
}

/// The Glue table of `view` for a Hudi table at `base_path` with `schema`, partitioned by `partition_fields`.
pub fn table_def(
    config: &CatalogConfig,
    name: &str,
    view: TableView,
    schema: &TableSchema,
    partition_fields: &[String],
    base_path: &str,
) -> Result<TableDef, CatalogError> {
    let root = schema.parquet.root_schema();
    let fields: Vec<&parquet::schema::types::Type> = root
        .get_fields()
        .iter()
        .map(|f| f.as_ref())
        .filter(|f| !(config.omit_metadata_fields && META_COLUMNS.contains(&f.name())))
        .collect();
    let mut columns = Vec::new();
    let mut types: BTreeMap<&str, String> = BTreeMap::new();
    for f in &fields {
        let t = hive_type(f, config.support_timestamp)?;
        types.insert(f.name(), t.clone());
        if !partition_fields.iter().any(|p| p == f.name()) {
            columns.push(ColumnDef {
                name: f.name().to_string(),
                type_name: t,
            });
        }
    }
    let partition_keys = partition_fields
        .iter()
        .map(|p| ColumnDef {
            name: p.clone(),
            type_name: types
                .get(p.as_str())
                .cloned()
                .unwrap_or_else(|| "string".into()),
        })
        .collect();
    let mut parameters = BTreeMap::new();
    if !config.create_managed_table {
        parameters.insert("EXTERNAL".to_string(), "TRUE".to_string());
    }
    parameters.insert("hudi.metadata-listing-enabled".into(), "FALSE".into());
    let read_optimized = view == TableView::ReadOptimized;
    let mut serde_parameters = BTreeMap::new();
    serde_parameters.insert("serialization.format".to_string(), "1".to_string());
    if config.sync_as_datasource {
        parameters.extend(spark_parameters(config, &fields, partition_fields)?);
        serde_parameters.insert("path".into(), base_path.trim_end_matches('/').to_string());
        serde_parameters.insert(
            "hoodie.query.as.ro.table".into(),
            read_optimized.to_string(),
        );
    }
    parameters.extend(config.table_properties.clone());
    serde_parameters.extend(config.serde_properties.clone());
    Ok(TableDef {
        name: name.to_string(),
        table_type: "EXTERNAL_TABLE".into(),
        parameters,
        partition_keys,
        storage: StorageDef {
            columns,
            location: catalog_location(base_path),
            input_format: if view == TableView::Snapshot {
                REALTIME_INPUT_FORMAT
            } else {
                INPUT_FORMAT
            }
            .into(),
            output_format: OUTPUT_FORMAT.into(),
            serde_library: SERDE.into(),
            serde_parameters,
        },
        version: None,
    })
}

/// The `spark.sql.sources.*` parameters: Spark's schema JSON with the partition columns last (a partition
/// column missing from the schema as a required string), split in parts of `schema_part_length`.
fn spark_parameters(
    config: &CatalogConfig,
    fields: &[&parquet::schema::types::Type],
    partition_fields: &[String],
) -> Result<BTreeMap<String, String>, CatalogError> {
    let mut json_fields = Vec::new();
    for f in fields
        .iter()
        .filter(|f| !partition_fields.iter().any(|p| p == f.name()))
    {
        json_fields.push(spark_field(f)?);
    }
    for p in partition_fields {
        match fields.iter().find(|f| f.name() == p) {
            Some(f) => json_fields.push(spark_field(f)?),
            None => json_fields.push(spark_string_field(p)),
        }
    }
    let schema =
        serde_json::to_string(&json!({"type": "struct", "fields": json_fields})).map_err(|e| {
            CatalogError::Schema {
                reason: e.to_string(),
            }
        })?;
    let mut out = BTreeMap::new();
    out.insert("spark.sql.sources.provider".to_string(), "hudi".to_string());
    let chars: Vec<char> = schema.chars().collect();
    let parts: Vec<String> = chars
        .chunks(config.schema_part_length)
        .map(|c| c.iter().collect())
        .collect();
    out.insert(
        "spark.sql.sources.schema.numParts".into(),
        parts.len().to_string(),
    );
    for (i, part) in parts.into_iter().enumerate() {
        out.insert(format!("spark.sql.sources.schema.part.{i}"), part);
    }
    if !partition_fields.is_empty() {
        out.insert(
            "spark.sql.sources.schema.numPartCols".into(),
            partition_fields.len().to_string(),
        );
        for (i, p) in partition_fields.iter().enumerate() {
            out.insert(format!("spark.sql.sources.schema.partCol.{i}"), p.clone());
        }
    }
    Ok(out)
}

/// The partition at `relative_path` with `values`: the table's storage descriptor at the partition's location.
pub fn partition_def(table: &TableDef, relative_path: &str, values: Vec<String>) -> PartitionDef {
    let mut storage = table.storage.clone();
    storage.location = partition_location(&table.storage.location, relative_path);
    PartitionDef { values, storage }
}

/// `<table location>/<partition path as stored>`.
pub fn partition_location(table_location: &str, relative_path: &str) -> String {
    format!("{}/{}", table_location.trim_end_matches('/'), relative_path)
}

impl ColumnDef {
    fn to_json(&self) -> Value {
        json!({"Name": self.name, "Type": self.type_name, "Comment": ""})
    }
}

impl StorageDef {
    /// The `StorageDescriptor` document, as Glue's API spells it.
    pub fn to_json(&self) -> Value {
        json!({
            "Columns": self.columns.iter().map(ColumnDef::to_json).collect::<Vec<_>>(),
            "Location": self.location,
            "InputFormat": self.input_format,
            "OutputFormat": self.output_format,
            "SerdeInfo": {
                "SerializationLibrary": self.serde_library,
                "Parameters": self.serde_parameters,
            },
        })
    }
}

impl TableDef {
    /// The `TableInput` document, as Glue's API spells it (what the tests compare the catalog against).
    pub fn to_json(&self) -> Value {
        json!({
            "Name": self.name,
            "TableType": self.table_type,
            "Parameters": self.parameters,
            "PartitionKeys": self.partition_keys.iter().map(ColumnDef::to_json).collect::<Vec<_>>(),
            "StorageDescriptor": self.storage.to_json(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::avro::AvroSchema;

    fn config() -> CatalogConfig {
        let props: BTreeMap<String, String> = [
            ("hoodie.table.name", "trips"),
            ("hoodie.meta.sync.enable", "true"),
            (
                "hoodie.meta.sync.classes",
                super::super::config::GLUE_SYNC_TOOL,
            ),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        CatalogConfig::from_properties(&props).unwrap().unwrap()
    }

    fn schema() -> TableSchema {
        TableSchema::try_new(
            AvroSchema::parse(
                r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
                {"name":"uuid","type":"string"},{"name":"fare","type":["null","double"],"default":null},
                {"name":"city","type":"string"}]}"#,
            )
            .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn partition_columns_move_to_the_keys_and_to_the_end_of_the_spark_schema() {
        let def = table_def(
            &config(),
            "trips",
            TableView::CopyOnWrite,
            &schema(),
            &["city".into(), "region".into()],
            "s3a://bucket/tables/trips/",
        )
        .unwrap();
        assert_eq!(def.storage.location, "s3://bucket/tables/trips");
        assert_eq!(
            def.storage.serde_parameters["path"],
            "s3a://bucket/tables/trips"
        );
        assert_eq!(
            def.storage.serde_parameters["hoodie.query.as.ro.table"],
            "false"
        );
        let cols: Vec<&str> = def
            .storage
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(cols[5..], ["uuid", "fare"]);
        let keys: Vec<(&str, &str)> = def
            .partition_keys
            .iter()
            .map(|c| (c.name.as_str(), c.type_name.as_str()))
            .collect();
        assert_eq!(keys, [("city", "string"), ("region", "string")]);
        let spark: Value =
            serde_json::from_str(&def.parameters["spark.sql.sources.schema.part.0"]).unwrap();
        let names: Vec<&str> = spark["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(names[5..], ["uuid", "fare", "city", "region"]);
        assert_eq!(spark["fields"][8]["nullable"], json!(false));
        assert_eq!(def.parameters["spark.sql.sources.schema.numPartCols"], "2");
        assert_eq!(
            def.parameters["spark.sql.sources.schema.partCol.1"],
            "region"
        );
        assert_eq!(def.parameters["EXTERNAL"], "TRUE");
    }

    #[test]
    fn the_spark_schema_is_split_at_the_threshold() {
        let mut c = config();
        c.schema_part_length = 50;
        let def = table_def(&c, "t", TableView::CopyOnWrite, &schema(), &[], "/tmp/t").unwrap();
        let n: usize = def.parameters["spark.sql.sources.schema.numParts"]
            .parse()
            .unwrap();
        assert!(n > 2);
        let joined: String = (0..n)
            .map(|i| def.parameters[&format!("spark.sql.sources.schema.part.{i}")].clone())
            .collect();
        assert!(serde_json::from_str::<Value>(&joined).is_ok());
        assert!(!def
            .parameters
            .contains_key("spark.sql.sources.schema.numPartCols"));
    }

    #[test]
    fn merge_on_read_views_differ_in_input_format_and_ro_flag() {
        let ro = table_def(
            &config(),
            "t_ro",
            TableView::ReadOptimized,
            &schema(),
            &[],
            "/t",
        )
        .unwrap();
        let rt = table_def(&config(), "t_rt", TableView::Snapshot, &schema(), &[], "/t").unwrap();
        assert_eq!(ro.storage.input_format, INPUT_FORMAT);
        assert_eq!(rt.storage.input_format, REALTIME_INPUT_FORMAT);
        assert_eq!(
            ro.storage.serde_parameters["hoodie.query.as.ro.table"],
            "true"
        );
        assert_eq!(
            rt.storage.serde_parameters["hoodie.query.as.ro.table"],
            "false"
        );
    }

    #[test]
    fn partitions_copy_the_table_descriptor_at_their_location() {
        let def = table_def(
            &config(),
            "t",
            TableView::CopyOnWrite,
            &schema(),
            &["city".into()],
            "s3://b/t",
        )
        .unwrap();
        let p = partition_def(&def, "city=S%2FF", vec!["S%2FF".into()]);
        assert_eq!(p.storage.location, "s3://b/t/city=S%2FF");
        assert_eq!(p.storage.columns, def.storage.columns);
        assert_eq!(p.storage.serde_parameters, def.storage.serde_parameters);
    }
}
