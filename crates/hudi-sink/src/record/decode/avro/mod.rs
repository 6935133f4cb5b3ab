//! The Avro reader: Avro binary datums straight into the table's columns, resolved from the writer's schema.
//!
//! ```text
//! writer schema ─ AvroPlan::compile (once per schema id) ─┐
//! datum bytes ──────────────────────────── read ──────────┴→ column buffers (truncated on a refusal)
//! ```
//!
//! A plan pairs every writer type with the table column it lands in, under Avro's resolution rules: writer
//! fields the table lacks are skipped, table fields the writer lacks take their default (or null), writer
//! unions pick their branch per value, and the promotions Avro and Hudi both allow widen a value on the way
//! (`int` → `long`/`float`/`double`, `long` → `float`/`double`, `float` → `double`, `string` ↔ `bytes`,
//! decimal precision at an equal scale, `timestamp-millis` → `-micros`). A writer type the column cannot take
//! fails the plan (the record is dead-lettered naming the field); a union branch that cannot be taken fails
//! only the values that use it, as Avro's resolving reader does.
//!
//! Values are checked as the JSON reader checks them: strings are UTF-8, enum symbols exist in the table's
//! enum, decimals fit their precision, times lie within a day, map keys are unique. Work is bounded by the
//! datum: every block count is checked against the bytes left, nesting against the depth limit, and a
//! datum must be consumed to its last byte (a wrong writer schema rarely ends exactly at the end).

use super::*;

mod compile;
mod read;

#[cfg(test)]
pub(super) use read::twos_complement;
pub(super) use read::Cursor;

/// What one writer value becomes in a table column.
#[derive(Debug, Clone)]
pub(super) enum Read {
    /// Writer `null` (also a union's null branch): the column's null.
    Null,
    Boolean,
    /// Writer `int` (also `date`, `time-millis`).
    Int(NumTo),
    /// Writer `long` (also `time-micros`, timestamps); `scale` multiplies the value (millis → micros).
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

/// Where a numeric writer value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NumTo {
    I32,
    I64,
    F32,
    F64,
}

/// Where a writer `bytes`, `string` or `fixed` value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BytesTo {
    /// A string column: the bytes must be UTF-8.
    Utf8,
    Binary,
    Fixed,
    /// A decimal column: the bytes are the big-endian two's-complement unscaled value.
    Decimal,
}

/// One writer field: read into the table's field at `slot`, or skipped.
#[derive(Debug, Clone)]
pub(super) enum FieldRead {
    Slot(usize, Read),
    Skip(usize),
}

/// How to step over a writer value the table does not keep. Named writer types are entries of the plan's
/// skip list, so a recursive writer schema compiles to a finite plan.
#[derive(Debug, Clone)]
pub(super) enum Skip {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    Fixed(usize),
    Record(Vec<usize>),
    Array(usize),
    Map(usize),
    Union(Vec<usize>),
    /// Not known yet (a named type being compiled): replaced before the plan is used.
    Pending,
}

/// A writer schema compiled against a table's columns: see the module doc.
#[derive(Debug, Clone)]
pub struct AvroPlan {
    root: Vec<FieldRead>,
    skips: Vec<Skip>,
    skipped: Vec<String>,
}

impl AvroPlan {
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
