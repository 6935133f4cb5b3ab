//! The Avro reader: Avro binary datums straight into the table's columns, with the plan
//! ([`crate::avro::resolve`]) that says what each writer value becomes under the table's schema.
//!
//! ```text
//! writer schema, table schema ─ avro::resolve: AvroPlan::compile (once per schema id) ─┐
//! datum bytes ──────────────────────────────────────────────────────────── read ───────┴→ column buffers
//!                                                                                          (truncated on a refusal)
//! ```
//!
//! The plan's table field indexes are the decoder's slots: the columns are built from the same table schema,
//! field for field. A writer schema that does not resolve fails the plan (the record is dead-lettered naming
//! the field); a union branch that cannot be taken fails only the values that use it.
//!
//! Values are checked as the JSON reader checks them: strings are UTF-8, enum symbols exist in the table's
//! enum, decimals fit their precision, times lie within a day, map keys are unique. Work is bounded by the
//! datum: every block count is checked against the bytes left, nesting against the depth limit, and a
//! datum must be consumed to its last byte (a wrong writer schema rarely ends exactly at the end).

use super::*;
use crate::avro::resolve::{BytesTo, FieldRead, NumTo, Read, Skip};

mod read;

#[cfg(test)]
pub(super) use read::twos_complement;
pub(super) use read::{read, Cursor};
