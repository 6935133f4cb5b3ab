//! Avro schema resolution: what each value written with a writer schema becomes under the reader's schema (the
//! table's), compiled once per writer schema into an [`AvroPlan`].
//!
//! ```text
//! writer schema ─┐
//! table schema ──┴─ AvroPlan::compile ─→ plan: per writer field a Read into a table field, or a Skip
//! ```
//!
//! A plan pairs every writer type with the table field it lands in, under Avro's resolution rules: writer
//! fields the table lacks are skipped, table fields the writer lacks take their default (or null), writer
//! unions pick their branch per value, and the promotions Avro and Hudi both allow widen a value on the way
//! (`int` → `long`/`float`/`double`, `long` → `float`/`double`, `float` → `double`, `string` ↔ `bytes`,
//! decimal precision at an equal scale, `timestamp-millis` → `-micros`). A writer type the table's type cannot
//! take fails the plan ([`PlanError`], naming the field); a union branch that cannot be taken fails only the
//! values that use it, as Avro's resolving reader does.
//!
//! The table schema is one a record decoder has columns for: it has passed [`AvroSchema::validate`], its
//! unions are `["null", T]`, and its types are the ones the Arrow mapping gives a column (a table type
//! outside that fails the plan). A plan only says what each value becomes; reading the datum bytes into
//! columns (and checking each value against its column) is the user's. Table fields are named by their
//! index in their record, so a user's columns follow the table schema's field order.
//!
//! Invariant: compiling is bounded by the schemas, not by the data: named writer types are entries of the
//! plan's skip list (compiled once each), so a recursive writer schema compiles to a finite plan, and a
//! table record nested in itself (a schema no column form has) is refused where it recurs.

use std::collections::{HashMap, HashSet};

use thiserror::Error;

use super::schema::{
    namespace_of, AvroSchema, LogicalType, NamedTypes, PrimitiveType, RecordSchema,
};

mod compile;
#[cfg(test)]
mod tests;

/// What one writer value becomes in a table field.
#[derive(Debug, Clone)]
pub enum Read {
    /// Writer `null` (also a union's null branch): the table field's null.
    Null,
    Boolean,
    /// Writer `int` (also `date`, `time-millis`).
    Int(NumTo),
    /// Writer `long` (also `time-micros`, timestamps); the second value multiplies it (millis → micros).
    Long(NumTo, i64),
    Float(NumTo),
    Double,
    /// Writer `bytes` or `string`.
    Bytes(BytesTo),
    /// Writer `fixed` of this size.
    Fixed(usize, BytesTo),
    /// Writer `enum` with its symbols; `false` where the table's enum lacks the symbol.
    Enum(Vec<(String, bool)>),
    /// Writer `record`, in writer field order.
    Record(Vec<FieldRead>),
    Array(Box<Read>),
    Map(Box<Read>),
    /// Writer union: one plan per branch, or why the branch cannot be read.
    Union(Vec<Result<Read, String>>),
}

/// Where a numeric writer value goes: the table's `int`, `long` (also its `date`, times and timestamps),
/// `float` or `double`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumTo {
    I32,
    I64,
    F32,
    F64,
}

/// Where a writer `bytes`, `string` or `fixed` value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesTo {
    /// A table string (also `uuid`): the bytes must be UTF-8.
    Utf8,
    Binary,
    Fixed,
    /// A table decimal: the bytes are the big-endian two's-complement unscaled value.
    Decimal,
}

/// One writer field: read into the table record's field at this index, or skipped with this skip entry.
#[derive(Debug, Clone)]
pub enum FieldRead {
    Slot(usize, Read),
    Skip(usize),
}

/// How to step over a writer value the table does not keep. Named writer types are entries of the plan's
/// skip list, so a recursive writer schema compiles to a finite plan.
#[derive(Debug, Clone)]
pub enum Skip {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    /// A `fixed` of this size.
    Fixed(usize),
    /// A record: the skip entries of its fields, in order.
    Record(Vec<usize>),
    /// An array: the skip entry of its items.
    Array(usize),
    /// A map: the skip entry of its values.
    Map(usize),
    /// A union: the skip entry of each branch.
    Union(Vec<usize>),
    /// Not known yet (a named type being compiled): replaced before the plan is used.
    Pending,
}

/// A writer schema compiled against a table schema: see the module doc.
#[derive(Debug, Clone)]
pub struct AvroPlan {
    root: Vec<FieldRead>,
    skips: Vec<Skip>,
    skipped: Vec<String>,
}

impl AvroPlan {
    /// The writer record's fields, in writer order: what a datum holds, one after the other.
    pub fn fields(&self) -> &[FieldRead] {
        &self.root
    }

    /// The skip entry `id` ([`FieldRead::Skip`] and the entries inside [`Skip`] name them).
    pub fn skip(&self, id: usize) -> Option<&Skip> {
        self.skips.get(id)
    }

    /// Paths of the writer fields the table lacks: their values are stepped over and dropped (logged once
    /// per writer schema, counted per record in `RecordDecoder::ignored_fields`).
    pub fn skipped_fields(&self) -> &[String] {
        &self.skipped
    }
}

/// Why a writer schema cannot be read into the table (the record is dead-lettered with it).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("field `{path}`: {reason}")]
pub struct PlanError {
    /// Field path in the table.
    pub path: String,
    /// What does not resolve.
    pub reason: String,
}

fn plan_error(path: &str, reason: impl Into<String>) -> PlanError {
    PlanError {
        path: if path.is_empty() {
            "$".to_string()
        } else {
            path.to_string()
        },
        reason: reason.into(),
    }
}

/// How a table type is named in messages (`long`, `decimal(10,2)`, `timestamp-micros`, `enum color`,
/// `fixed(16)`, `record trips_record`, `array`, `map`): the type without its nullability.
pub fn type_label(schema: &AvroSchema) -> String {
    match schema {
        AvroSchema::Primitive(p) => match p.logical_type {
            Some(LogicalType::Decimal { precision, scale }) => {
                format!("decimal({precision},{scale})")
            }
            Some(LogicalType::Uuid) | None => p.primitive.name().to_string(),
            Some(lt) => lt.name().to_string(),
        },
        AvroSchema::Enum(e) => format!("enum {}", e.name.name),
        AvroSchema::Fixed(f) => match f.logical_type {
            Some(LogicalType::Decimal { precision, scale }) => {
                format!("decimal({precision},{scale})")
            }
            _ => format!("fixed({})", f.size),
        },
        AvroSchema::Record(r) => format!("record {}", r.name.name),
        AvroSchema::Array(_) => "array".to_string(),
        AvroSchema::Map(_) => "map".to_string(),
        AvroSchema::Union(_) | AvroSchema::Reference(_) => schema.describe(),
    }
}
