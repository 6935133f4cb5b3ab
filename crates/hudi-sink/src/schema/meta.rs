//! Hudi's five meta columns and the naming conventions Spark-Hudi applies to table schemas.
//!
//! Invariants:
//! * Table schemas (`extraMetadata.schema`, `hoodie.table.create.schema`) hold the data columns only; every
//!   Parquet file holds the five meta columns first, in [`META_COLUMNS`] order, each a nullable string, and its
//!   `parquet.avro.schema` footer is [`with_meta_fields`] of the table schema (format notes §6.1, §6.2).
//! * A user schema may not define `_hoodie_*` columns, except `_hoodie_is_deleted` (a boolean data column
//!   that Hudi's payloads read as a delete marker).

use arrow_schema::{DataType, Field};

use super::avro::{AvroSchema, Name, PrimitiveType, RecordField};
use super::{SchemaError, SchemaResult};

/// Instant of the commit that last changed the row.
pub const COMMIT_TIME_COL: &str = "_hoodie_commit_time";
/// `<instant>_<task>_<counter>`, unique per instant.
pub const COMMIT_SEQNO_COL: &str = "_hoodie_commit_seqno";
/// The record key as the key generator renders it.
pub const RECORD_KEY_COL: &str = "_hoodie_record_key";
/// The relative partition path (`""` when non-partitioned).
pub const PARTITION_PATH_COL: &str = "_hoodie_partition_path";
/// Name of the file holding the row.
pub const FILE_NAME_COL: &str = "_hoodie_file_name";

/// The five meta columns, in file order.
pub const META_COLUMNS: [&str; 5] = [
    COMMIT_TIME_COL,
    COMMIT_SEQNO_COL,
    RECORD_KEY_COL,
    PARTITION_PATH_COL,
    FILE_NAME_COL,
];

/// The one `_hoodie_` column a user schema may define: a boolean delete marker.
pub const IS_DELETED_COL: &str = "_hoodie_is_deleted";

/// The Kafka metadata columns HoodieStreamer appends with `hoodie.streamer.source.kafka.append.offsets=true`
/// (offset, partition, timestamp, key): data columns despite their prefix.
pub const KAFKA_SOURCE_COLUMNS: [&str; 4] = [
    "_hoodie_kafka_source_offset",
    "_hoodie_kafka_source_partition",
    "_hoodie_kafka_source_timestamp",
    "_hoodie_kafka_source_key",
];

/// Prefix Hudi reserves for its own columns.
pub const RESERVED_PREFIX: &str = "_hoodie_";

/// Whether `name` is one of the five meta columns.
pub fn is_meta_column(name: &str) -> bool {
    META_COLUMNS.contains(&name)
}

/// One meta field as parquet-avro's footer spells it: `{"name":..,"type":["null","string"],"doc":"","default":null}`.
pub fn meta_field(name: &str) -> RecordField {
    RecordField {
        doc: Some(String::new()),
        ..RecordField::nullable(name, AvroSchema::primitive(PrimitiveType::String))
    }
}

/// The five meta fields, in file order.
pub fn meta_fields() -> Vec<RecordField> {
    META_COLUMNS.iter().map(|name| meta_field(name)).collect()
}

/// The five meta columns as Arrow fields (nullable Utf8), in file order.
pub fn arrow_fields() -> Vec<Field> {
    META_COLUMNS
        .iter()
        .map(|name| Field::new(*name, DataType::Utf8, true))
        .collect()
}

/// The record with the five meta fields first (the `parquet.avro.schema` footer value). Meta fields already
/// present are dropped first, so applying it twice changes nothing. A schema that is not a record has no
/// fields to prepend to and comes back unchanged; table schemas are records ([`check_user_schema`] and
/// [`super::arrow::avro_to_arrow`] refuse anything else).
pub fn with_meta_fields(schema: &AvroSchema) -> AvroSchema {
    let AvroSchema::Record(record) = schema else {
        return schema.clone();
    };
    let mut out = record.clone();
    out.fields = meta_fields();
    out.fields.extend(
        record
            .fields
            .iter()
            .filter(|f| !is_meta_column(&f.name))
            .cloned(),
    );
    AvroSchema::Record(out)
}

/// The record without the five meta fields (the table schema inside a file's footer schema); a schema that
/// is not a record comes back unchanged.
pub fn without_meta_fields(schema: &AvroSchema) -> AvroSchema {
    let AvroSchema::Record(record) = schema else {
        return schema.clone();
    };
    let mut out = record.clone();
    out.fields.retain(|f| !is_meta_column(&f.name));
    AvroSchema::Record(out)
}

/// Refuses a user schema that is not a record, defines a reserved `_hoodie_*` top-level column, or has a
/// `_hoodie_is_deleted` that is not a (nullable) boolean.
pub fn check_user_schema(schema: &AvroSchema) -> SchemaResult<()> {
    let AvroSchema::Record(record) = schema else {
        return Err(SchemaError::NotARecord {
            context: "user schema",
            found: schema.describe(),
        });
    };
    for field in &record.fields {
        if field.name == IS_DELETED_COL {
            let boolean = matches!(field.schema.non_null(), AvroSchema::Primitive(p)
                if p.primitive == PrimitiveType::Boolean && p.logical_type.is_none());
            if !boolean {
                return Err(SchemaError::IsDeletedNotBoolean {
                    field: IS_DELETED_COL,
                    found: field.schema.to_json_string(),
                });
            }
        } else if field.name.starts_with(RESERVED_PREFIX)
            && !KAFKA_SOURCE_COLUMNS.contains(&field.name.as_str())
        {
            return Err(SchemaError::ReservedField {
                field: field.name.clone(),
                allowed: IS_DELETED_COL,
            });
        }
    }
    Ok(())
}

/// Spark-Hudi's record name for table `table`: `<table>_record`.
pub fn spark_record_name(table: &str) -> String {
    format!("{table}_record")
}

/// Spark-Hudi's record namespace for table `table`: `hoodie.<table>`.
pub fn spark_namespace(table: &str) -> String {
    format!("hoodie.{table}")
}

/// The user's record renamed as Spark-Hudi names it (`<table>_record` in `hoodie.<table>`), for users who ask
/// for Spark's names; everything else is kept. Nested named types without an explicit namespace move with the
/// record, so short references keep resolving; a full-name reference to a type that moved is reported.
pub fn with_spark_naming(schema: &AvroSchema, table: &str) -> SchemaResult<AvroSchema> {
    let AvroSchema::Record(record) = schema else {
        return Err(SchemaError::NotARecord {
            context: "with_spark_naming",
            found: schema.describe(),
        });
    };
    let mut out = record.clone();
    out.name = Name::with_namespace(spark_record_name(table), spark_namespace(table));
    let out = AvroSchema::Record(out);
    out.validate()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[{"name":"uuid","type":["null","string"],"default":null},{"name":"ts","type":["null","long"],"default":null}]}"#;

    #[test]
    fn with_meta_fields_prepends_the_footer_fields_exactly() {
        let user = AvroSchema::parse(USER).expect("parses");
        let with = with_meta_fields(&user);
        assert_eq!(
            with.to_json_string(),
            concat!(
                r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":["#,
                r#"{"name":"_hoodie_commit_time","type":["null","string"],"doc":"","default":null},"#,
                r#"{"name":"_hoodie_commit_seqno","type":["null","string"],"doc":"","default":null},"#,
                r#"{"name":"_hoodie_record_key","type":["null","string"],"doc":"","default":null},"#,
                r#"{"name":"_hoodie_partition_path","type":["null","string"],"doc":"","default":null},"#,
                r#"{"name":"_hoodie_file_name","type":["null","string"],"doc":"","default":null},"#,
                r#"{"name":"uuid","type":["null","string"],"default":null},"#,
                r#"{"name":"ts","type":["null","long"],"default":null}]}"#
            )
        );
        assert_eq!(with_meta_fields(&with), with, "idempotent");
        assert_eq!(without_meta_fields(&with), user);
        assert_eq!(without_meta_fields(&user), user);
        with.validate().expect("still a valid schema");
        // Not a record: nothing to prepend to.
        let int = AvroSchema::primitive(PrimitiveType::Int);
        assert_eq!(with_meta_fields(&int), int);
    }

    #[test]
    fn meta_columns_in_file_order() {
        assert_eq!(
            META_COLUMNS,
            [
                "_hoodie_commit_time",
                "_hoodie_commit_seqno",
                "_hoodie_record_key",
                "_hoodie_partition_path",
                "_hoodie_file_name"
            ]
        );
        let fields = arrow_fields();
        assert_eq!(
            fields.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
            META_COLUMNS
        );
        assert!(fields
            .iter()
            .all(|f| f.is_nullable() && f.data_type() == &DataType::Utf8));
        assert!(is_meta_column(RECORD_KEY_COL));
        assert!(!is_meta_column(IS_DELETED_COL));
    }

    fn user_with(field: &str) -> AvroSchema {
        AvroSchema::parse(&format!(
            r#"{{"type":"record","name":"r","fields":[{{"name":"id","type":"int"}},{field}]}}"#
        ))
        .expect("parses")
    }

    #[test]
    fn user_schemas_may_not_use_reserved_columns() {
        check_user_schema(&user_with(r#"{"name":"x","type":"int"}"#)).expect("plain schema");
        check_user_schema(&user_with(
            r#"{"name":"_hoodie_is_deleted","type":"boolean"}"#,
        ))
        .expect("boolean");
        check_user_schema(&user_with(
            r#"{"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}"#,
        ))
        .expect("nullable boolean");
        for name in META_COLUMNS
            .iter()
            .chain(&["_hoodie_operation", "_hoodie_anything"])
        {
            let err = check_user_schema(&user_with(&format!(
                r#"{{"name":"{name}","type":["null","string"]}}"#
            )));
            assert!(
                matches!(&err, Err(SchemaError::ReservedField { field, .. }) if field == name),
                "{name}: {err:?}"
            );
        }
        let err = check_user_schema(&user_with(
            r#"{"name":"_hoodie_is_deleted","type":"string"}"#,
        ));
        assert!(matches!(err, Err(SchemaError::IsDeletedNotBoolean { .. })));
        // Nested `_hoodie_` names do not collide with meta columns.
        check_user_schema(&user_with(
            r#"{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"_hoodie_x","type":"int"}]}}"#,
        ))
        .expect("nested names are free");
        assert!(matches!(
            check_user_schema(&AvroSchema::primitive(PrimitiveType::String)),
            Err(SchemaError::NotARecord { .. })
        ));
    }

    #[test]
    fn spark_naming_renames_only_the_top_record() {
        let user = AvroSchema::parse(
            r#"{"type":"record","name":"Event","namespace":"com.acme","doc":"d","fields":[
                {"name":"s","type":{"type":"record","name":"Inner","fields":[{"name":"x","type":"int"}]}},
                {"name":"t","type":["null","Inner"],"default":null}]}"#,
        )
        .expect("parses");
        let renamed = with_spark_naming(&user, "trips").expect("renames");
        let record = renamed.as_record().expect("record");
        assert_eq!(
            record.name,
            Name::with_namespace("trips_record", "hoodie.trips")
        );
        assert_eq!(record.doc.as_deref(), Some("d"));
        assert_eq!(record.fields, user.as_record().expect("record").fields);
        assert!(renamed
            .validate()
            .expect("valid")
            .get("hoodie.trips.Inner")
            .is_some());
        // A full-name reference to a type that moved is reported, not written broken.
        let pinned = AvroSchema::parse(
            r#"{"type":"record","name":"Event","namespace":"com.acme","fields":[
                {"name":"s","type":{"type":"record","name":"Inner","fields":[{"name":"x","type":"int"}]}},
                {"name":"t","type":"com.acme.Inner"}]}"#,
        )
        .expect("parses");
        assert!(matches!(
            with_spark_naming(&pinned, "trips"),
            Err(SchemaError::UndefinedName { .. })
        ));
        assert!(matches!(
            with_spark_naming(&user, "bad-name"),
            Err(SchemaError::InvalidName { .. })
        ));
        assert_eq!(spark_record_name("x"), "x_record");
        assert_eq!(spark_namespace("x"), "hoodie.x");
    }
}
