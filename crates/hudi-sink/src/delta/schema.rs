//! The Delta schema of a Hudi table: the table's Avro schema with the five `_hoodie_*` meta columns first (the
//! columns every base file holds), through the sink's own Avro → Arrow mapping, then delta-kernel's Arrow →
//! Delta conversion (one arrow version across the workspace, so the types are the same).

use deltalake_core::kernel::engine::arrow_conversion::TryIntoKernel as _;
use deltalake_core::kernel::{DataType, PrimitiveType, StructType};

use super::mirror::MirrorError;
use crate::avro::arrow::avro_to_arrow;
use crate::avro::schema::AvroSchema;
use crate::schema::meta::with_meta_fields;

/// The Delta schema of the Avro table schema `text` (with or without the meta fields).
pub(super) fn delta_schema(text: &str) -> Result<StructType, MirrorError> {
    let bad = |e: &dyn std::fmt::Display| MirrorError::Schema(e.to_string());
    let avro = AvroSchema::parse(text).map_err(|e| bad(&e))?;
    let arrow = avro_to_arrow(&with_meta_fields(&avro)).map_err(|e| bad(&e))?;
    let schema: StructType = (&arrow).try_into_kernel().map_err(|e| bad(&e))?;
    Ok(schema)
}

/// Checks that every partition field is a top-level column of a type whose Delta partition-value text is the
/// text the sink writes into the partition path (strings, integers, booleans).
pub(super) fn check_partition_columns(
    schema: &StructType,
    fields: &[String],
) -> Result<(), MirrorError> {
    for field in fields {
        let column = schema.field(field).ok_or_else(|| {
            MirrorError::Unsupported(format!(
                "partition field `{field}` is not a top-level column"
            ))
        })?;
        match column.data_type() {
            DataType::Primitive(
                PrimitiveType::String
                | PrimitiveType::Long
                | PrimitiveType::Integer
                | PrimitiveType::Short
                | PrimitiveType::Byte
                | PrimitiveType::Boolean,
            ) => {}
            other => {
                return Err(MirrorError::Unsupported(format!(
                    "partition field `{field}` has type {other}; the mirror handles string, integer and \
                     boolean partition columns"
                )))
            }
        }
    }
    Ok(())
}
