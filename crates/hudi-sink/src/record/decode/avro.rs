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

struct Compiler<'w> {
    names: NamedTypes<'w>,
    skips: Vec<Skip>,
    /// Skip entry of each named writer type compiled so far.
    named: HashMap<String, usize>,
}

impl AvroPlan {
    /// Compiles `writer` against the decoder's columns.
    pub(super) fn compile(writer: &AvroSchema, root: &Column) -> Result<Self, PlanError> {
        let names = writer
            .validate_writer()
            .map_err(|e| plan_error("", format!("the writer schema is invalid: {e}")))?;
        let mut c = Compiler {
            names,
            skips: Vec::new(),
            named: HashMap::new(),
        };
        let (resolved, ns) = c.resolve(writer, None, "")?;
        let AvroSchema::Record(record) = resolved else {
            return Err(plan_error(
                "",
                format!("the writer schema is {}, not a record", resolved.describe()),
            ));
        };
        let Data::Struct(s) = &root.data else {
            return Err(plan_error(
                "",
                "internal error: the root column is not a record",
            ));
        };
        let full = record.name.fullname(ns.as_deref());
        let root = c.record(record, namespace_of(&full), s, "")?;
        Ok(AvroPlan {
            root,
            skips: c.skips,
        })
    }
}

impl<'w> Compiler<'w> {
    fn resolve(
        &self,
        mut schema: &'w AvroSchema,
        mut ns: Option<String>,
        path: &str,
    ) -> Result<(&'w AvroSchema, Option<String>), PlanError> {
        for _ in 0..64 {
            let AvroSchema::Reference(name) = schema else {
                return Ok((schema, ns));
            };
            let Some((full, target)) = self.names.resolve(name, ns.as_deref()) else {
                return Err(plan_error(
                    path,
                    format!("writer type {name} is not defined"),
                ));
            };
            ns = namespace_of(&full).map(str::to_string);
            schema = target;
        }
        Err(plan_error(path, "writer references do not resolve"))
    }

    /// The writer fields of `record` against the table struct `s`.
    fn record(
        &mut self,
        record: &'w crate::schema::avro::RecordSchema,
        ns: Option<&str>,
        s: &StructData,
        path: &str,
    ) -> Result<Vec<FieldRead>, PlanError> {
        let mut reads = Vec::with_capacity(record.fields.len());
        let mut seen = vec![false; s.slots.len()];
        for field in &record.fields {
            let field_path = join(path, &field.name);
            let slot = s.index.get(&field.name).copied().or_else(|| {
                // A table field may name the writer's under an alias.
                s.slots
                    .iter()
                    .position(|slot| slot.aliases.contains(&field.name))
            });
            match slot {
                Some(i) => {
                    let (Some(target), Some(done)) = (s.slots.get(i), seen.get_mut(i)) else {
                        return Err(plan_error(&field_path, "internal error: slot out of range"));
                    };
                    if std::mem::replace(done, true) {
                        return Err(plan_error(
                            &field_path,
                            "two writer fields resolve to this table field",
                        ));
                    }
                    let read = self.value(
                        &field.schema,
                        ns.map(str::to_string),
                        &target.column,
                        &field_path,
                    )?;
                    reads.push(FieldRead::Slot(i, read));
                }
                None => reads.push(FieldRead::Skip(self.skip(
                    &field.schema,
                    ns.map(str::to_string),
                    &field_path,
                )?)),
            }
        }
        for (slot, done) in s.slots.iter().zip(&seen) {
            if !done && matches!(slot.missing, Missing::Required) {
                return Err(plan_error(
                    &join(path, &slot.name),
                    "the writer schema has no such field and the table field has no default and is not nullable",
                ));
            }
        }
        Ok(reads)
    }

    /// The plan for one writer value landing in `column`.
    fn value(
        &mut self,
        schema: &'w AvroSchema,
        ns: Option<String>,
        column: &Column,
        path: &str,
    ) -> Result<Read, PlanError> {
        let (schema, ns) = self.resolve(schema, ns, path)?;
        let nullable = column.nulls.is_some();
        let wrong = || {
            plan_error(
                path,
                format!(
                    "writer type {} cannot be read as the table's {}",
                    schema.describe(),
                    column.expected
                ),
            )
        };
        Ok(match schema {
            AvroSchema::Union(branches) => {
                let mut reads = Vec::with_capacity(branches.len());
                for branch in branches {
                    reads.push(
                        self.value(branch, ns.clone(), column, path)
                            .map_err(|e| e.reason),
                    );
                }
                if reads.iter().all(Result::is_err) {
                    return Err(wrong());
                }
                Read::Union(reads)
            }
            AvroSchema::Primitive(p) => {
                let logical = p.logical_type;
                match (p.primitive, &column.data) {
                    (PrimitiveType::Null, _) if nullable => Read::Null,
                    (PrimitiveType::Null, _) => {
                        return Err(plan_error(
                            path,
                            format!(
                                "writer type null cannot be read as the table's non-nullable {}",
                                column.expected
                            ),
                        ))
                    }
                    (PrimitiveType::Boolean, Data::Boolean(_)) => Read::Boolean,
                    (PrimitiveType::Int, Data::Int32(_, kind)) => {
                        let fits = matches!(
                            (logical, kind),
                            (None, _)
                                | (Some(LogicalType::Date), IntKind::Date | IntKind::Int)
                                | (
                                    Some(LogicalType::TimeMillis),
                                    IntKind::TimeMillis | IntKind::Int
                                )
                        );
                        if !fits {
                            return Err(wrong());
                        }
                        Read::Int(NumTo::I32)
                    }
                    (PrimitiveType::Int, Data::Int64(_, LongKind::Long)) if logical.is_none() => {
                        Read::Int(NumTo::I64)
                    }
                    (PrimitiveType::Int, Data::Float32(_)) if logical.is_none() => {
                        Read::Int(NumTo::F32)
                    }
                    (PrimitiveType::Int, Data::Float64(_)) if logical.is_none() => {
                        Read::Int(NumTo::F64)
                    }
                    (PrimitiveType::Long, Data::Int64(_, kind)) => {
                        let scale = match (logical, kind) {
                            (None, _) => 1,
                            (
                                Some(LogicalType::TimeMicros),
                                LongKind::TimeMicros | LongKind::Long,
                            ) => 1,
                            (Some(w), LongKind::Long) if is_timestamp(w) => 1,
                            (Some(w), LongKind::Timestamp { unit, timezone })
                                if is_timestamp(w) =>
                            {
                                let w_local = matches!(
                                    w,
                                    LogicalType::LocalTimestampMillis
                                        | LogicalType::LocalTimestampMicros
                                );
                                if w_local != timezone.is_none() {
                                    return Err(wrong());
                                }
                                let w_millis = matches!(
                                    w,
                                    LogicalType::TimestampMillis
                                        | LogicalType::LocalTimestampMillis
                                );
                                match (w_millis, unit) {
                                    (true, TimeUnit::Millisecond) => 1,
                                    (true, _) => 1000,
                                    (false, TimeUnit::Microsecond) => 1,
                                    // Micros into a millis column would lose precision.
                                    (false, _) => return Err(wrong()),
                                }
                            }
                            _ => return Err(wrong()),
                        };
                        Read::Long(NumTo::I64, scale)
                    }
                    (PrimitiveType::Long, Data::Float32(_)) if logical.is_none() => {
                        Read::Long(NumTo::F32, 1)
                    }
                    (PrimitiveType::Long, Data::Float64(_)) if logical.is_none() => {
                        Read::Long(NumTo::F64, 1)
                    }
                    (PrimitiveType::Float, Data::Float32(_)) => Read::Float(NumTo::F32),
                    (PrimitiveType::Float, Data::Float64(_)) => Read::Float(NumTo::F64),
                    (PrimitiveType::Double, Data::Float64(_)) => Read::Double,
                    (PrimitiveType::String, Data::Utf8(_, None)) => Read::Bytes(BytesTo::Utf8),
                    (PrimitiveType::String, Data::Binary(_)) => Read::Bytes(BytesTo::Binary),
                    (PrimitiveType::Bytes, Data::Binary(_)) if logical.is_none() => {
                        Read::Bytes(BytesTo::Binary)
                    }
                    (PrimitiveType::Bytes, Data::Utf8(_, None)) if logical.is_none() => {
                        Read::Bytes(BytesTo::Utf8)
                    }
                    (PrimitiveType::Bytes, Data::Decimal(_, precision, scale)) => {
                        decimal_fits(logical, *precision, *scale).map_err(|_| wrong())?;
                        Read::Bytes(BytesTo::Decimal)
                    }
                    _ => return Err(wrong()),
                }
            }
            AvroSchema::Enum(e) => match &column.data {
                Data::Utf8(_, symbols) => Read::Enum(
                    e.symbols
                        .iter()
                        .map(|s| {
                            let known = symbols.as_ref().is_none_or(|set| set.contains(s));
                            (s.clone(), known)
                        })
                        .collect(),
                ),
                _ => return Err(wrong()),
            },
            AvroSchema::Fixed(f) => match &column.data {
                Data::Fixed(_, size) if *size == f.size && f.logical_type.is_none() => {
                    Read::Fixed(f.size, BytesTo::Fixed)
                }
                Data::Decimal(_, precision, scale) => {
                    decimal_fits(f.logical_type, *precision, *scale).map_err(|_| wrong())?;
                    Read::Fixed(f.size, BytesTo::Decimal)
                }
                _ => return Err(wrong()),
            },
            AvroSchema::Record(r) => match &column.data {
                Data::Struct(s) => {
                    let full = r.name.fullname(ns.as_deref());
                    Read::Record(self.record(r, namespace_of(&full), s, path)?)
                }
                _ => return Err(wrong()),
            },
            AvroSchema::Array(a) => match &column.data {
                Data::List { item, .. } => Read::Array(Box::new(self.value(
                    &a.items,
                    ns,
                    item,
                    &format!("{path}[]"),
                )?)),
                _ => return Err(wrong()),
            },
            AvroSchema::Map(m) => match &column.data {
                Data::Map { values, .. } => Read::Map(Box::new(self.value(
                    &m.values,
                    ns,
                    values,
                    &format!("{path}{{}}"),
                )?)),
                _ => return Err(wrong()),
            },
            AvroSchema::Reference(_) => return Err(wrong()),
        })
    }

    /// The skip entry for a writer value (named types once each, so recursion ends).
    fn skip(
        &mut self,
        schema: &'w AvroSchema,
        ns: Option<String>,
        path: &str,
    ) -> Result<usize, PlanError> {
        let (schema, ns, named) = match schema {
            AvroSchema::Reference(name) => {
                let Some((full, target)) = self.names.resolve(name, ns.as_deref()) else {
                    return Err(plan_error(
                        path,
                        format!("writer type {name} is not defined"),
                    ));
                };
                (target, namespace_of(&full).map(str::to_string), Some(full))
            }
            AvroSchema::Record(r) => {
                let full = r.name.fullname(ns.as_deref());
                (schema, namespace_of(&full).map(str::to_string), Some(full))
            }
            other => (other, ns, None),
        };
        if let Some(full) = &named {
            if let Some(&id) = self.named.get(full) {
                return Ok(id);
            }
        }
        let id = self.skips.len();
        self.skips.push(Skip::Pending);
        if let Some(full) = named {
            self.named.insert(full, id);
        }
        let skip = match schema {
            AvroSchema::Primitive(p) => match p.primitive {
                PrimitiveType::Null => Skip::Null,
                PrimitiveType::Boolean => Skip::Boolean,
                PrimitiveType::Int => Skip::Int,
                PrimitiveType::Long => Skip::Long,
                PrimitiveType::Float => Skip::Float,
                PrimitiveType::Double => Skip::Double,
                PrimitiveType::Bytes | PrimitiveType::String => Skip::Bytes,
            },
            AvroSchema::Enum(_) => Skip::Int,
            AvroSchema::Fixed(f) => Skip::Fixed(f.size),
            AvroSchema::Record(r) => {
                let mut fields = Vec::with_capacity(r.fields.len());
                for field in &r.fields {
                    fields.push(self.skip(&field.schema, ns.clone(), &join(path, &field.name))?);
                }
                Skip::Record(fields)
            }
            AvroSchema::Array(a) => Skip::Array(self.skip(&a.items, ns, path)?),
            AvroSchema::Map(m) => Skip::Map(self.skip(&m.values, ns, path)?),
            AvroSchema::Union(branches) => {
                let mut ids = Vec::with_capacity(branches.len());
                for branch in branches {
                    ids.push(self.skip(branch, ns.clone(), path)?);
                }
                Skip::Union(ids)
            }
            AvroSchema::Reference(_) => {
                return Err(plan_error(path, "writer references do not resolve"))
            }
        };
        if let Some(entry) = self.skips.get_mut(id) {
            *entry = skip;
        }
        Ok(id)
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn is_timestamp(t: LogicalType) -> bool {
    matches!(
        t,
        LogicalType::TimestampMillis
            | LogicalType::TimestampMicros
            | LogicalType::LocalTimestampMillis
            | LogicalType::LocalTimestampMicros
    )
}

/// A writer decimal fits a table decimal at the same scale and at most its precision (Hudi's widening).
fn decimal_fits(writer: Option<LogicalType>, precision: u8, scale: i8) -> Result<(), ()> {
    match writer {
        Some(LogicalType::Decimal {
            precision: wp,
            scale: ws,
        }) if i64::from(ws) == i64::from(scale) && wp <= u32::from(precision) => Ok(()),
        _ => Err(()),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading.

/// A cursor over one datum.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    max_depth: usize,
    /// Array and map items left to read in this datum: bounds zero-byte items (nulls, empty records).
    items_left: usize,
}

/// Items a datum may hold beyond one per byte (zero-byte items such as nulls).
const EXTRA_ITEMS: usize = 65_536;

fn malformed(pos: usize, message: impl Into<String>) -> Fail {
    Fail::new(RecordDecodeReason::NotAvro {
        byte_offset: pos,
        message: message.into(),
    })
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8], max_depth: usize) -> Self {
        Cursor {
            bytes,
            pos: 0,
            depth: 0,
            max_depth,
            items_left: bytes.len().saturating_add(EXTRA_ITEMS),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                malformed(
                    self.pos,
                    format!(
                        "needs {n} more bytes, {} are left",
                        self.bytes.len() - self.pos
                    ),
                )
            })?;
        let out = self.bytes.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    /// A zig-zag varint of at most 10 bytes.
    fn long(&mut self) -> Result<i64, Fail> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(malformed(start, "the datum ends inside a number"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                if i == 9 && b > 1 {
                    break;
                }
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(malformed(start, "a number is longer than 64 bits"))
    }

    fn int(&mut self) -> Result<i32, Fail> {
        let start = self.pos;
        let v = self.long()?;
        i32::try_from(v).map_err(|_| malformed(start, format!("int {v} is out of range")))
    }

    fn length(&mut self) -> Result<usize, Fail> {
        let start = self.pos;
        let n = self.long()?;
        usize::try_from(n).map_err(|_| malformed(start, format!("negative length {n}")))
    }

    fn bytes(&mut self) -> Result<&'a [u8], Fail> {
        let n = self.length()?;
        self.take(n)
    }

    /// The item count of the next array or map block (0 at the end), its byte size skipped.
    fn block(&mut self) -> Result<usize, Fail> {
        let start = self.pos;
        let count = self.long()?;
        let count = if count < 0 {
            self.long()?;
            count.unsigned_abs()
        } else {
            count as u64
        };
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        if count > self.items_left {
            return Err(malformed(
                start,
                format!("a block of {count} items is more than the datum can hold"),
            ));
        }
        self.items_left -= count;
        Ok(count)
    }

    fn enter(&mut self) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Fail::new(RecordDecodeReason::TooDeep {
                max_depth: self.max_depth,
            }));
        }
        Ok(())
    }
}

impl AvroPlan {
    /// Reads one datum into the root struct. On error the columns may hold part of it: the caller truncates.
    pub(super) fn read(&self, root: &mut Column, cur: &mut Cursor<'_>) -> Result<(), Fail> {
        let Data::Struct(s) = &mut root.data else {
            return Err(malformed(
                0,
                "internal error: the root column is not a record",
            ));
        };
        cur.enter()?;
        self.record(&self.root, s, cur)?;
        root.mark_valid();
        if cur.pos != cur.bytes.len() {
            return Err(malformed(
                cur.pos,
                format!(
                    "{} bytes are left after the record (is the writer schema right?)",
                    cur.bytes.len() - cur.pos
                ),
            ));
        }
        Ok(())
    }

    fn record(
        &self,
        fields: &[FieldRead],
        s: &mut StructData,
        cur: &mut Cursor<'_>,
    ) -> Result<(), Fail> {
        for slot in &mut s.slots {
            slot.seen = false;
        }
        for field in fields {
            match field {
                FieldRead::Slot(i, read) => {
                    let Some(slot) = s.slots.get_mut(*i) else {
                        return Err(malformed(cur.pos, "internal error: slot out of range"));
                    };
                    slot.seen = true;
                    self.value(read, &mut slot.column, cur)
                        .map_err(|f| f.at(Segment::Field(slot.name.clone())))?;
                }
                FieldRead::Skip(id) => self.skip(*id, cur)?,
            }
        }
        for slot in &mut s.slots {
            if slot.seen {
                continue;
            }
            let result = match &slot.missing {
                Missing::Default(value) => slot.column.append_default(value),
                Missing::Null => slot.column.append_empty(),
                Missing::Required => Err(Fail::new(RecordDecodeReason::MissingField)),
            };
            result.map_err(|f| f.at(Segment::Field(slot.name.clone())))?;
        }
        Ok(())
    }

    fn value(&self, read: &Read, col: &mut Column, cur: &mut Cursor<'_>) -> Result<(), Fail> {
        let expected = col.expected.as_str();
        let internal =
            |pos: usize| malformed(pos, format!("internal error: plan does not fit {expected}"));
        match (read, &mut col.data) {
            (Read::Union(branches), _) => {
                let at = cur.pos;
                let index = cur.long()?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| {
                        malformed(
                            at,
                            format!(
                                "union branch {index} does not exist ({} branches)",
                                branches.len()
                            ),
                        )
                    })?;
                return match branch {
                    Ok(read) => self.value(read, col, cur),
                    Err(reason) => Err(invalid(
                        format!("union branch {index}"),
                        expected,
                        reason.clone(),
                    )),
                };
            }
            (Read::Null, _) => {
                if col.nulls.is_none() {
                    return Err(Fail::new(RecordDecodeReason::NullNotAllowed {
                        expected: expected.to_string(),
                    }));
                }
                return col.append_empty();
            }
            (Read::Boolean, Data::Boolean(b)) => {
                let at = cur.pos;
                match cur.take(1)? {
                    [0] => b.append(false),
                    [1] => b.append(true),
                    other => {
                        return Err(malformed(
                            at,
                            format!("boolean byte {other:?} is not 0 or 1"),
                        ))
                    }
                }
            }
            (Read::Int(NumTo::I32), Data::Int32(v, kind)) => {
                let x = cur.int()?;
                if *kind == IntKind::TimeMillis && !(0..DAY_MILLIS).contains(&i64::from(x)) {
                    return Err(invalid(
                        x.to_string(),
                        expected,
                        "must be at least 0 and less than 86400000 (24 h)",
                    ));
                }
                v.push(x);
            }
            (Read::Int(NumTo::I64), Data::Int64(v, _)) => v.push(i64::from(cur.int()?)),
            (Read::Int(NumTo::F32), Data::Float32(v)) => v.push(cur.int()? as f32),
            (Read::Int(NumTo::F64), Data::Float64(v)) => v.push(f64::from(cur.int()?)),
            (Read::Long(NumTo::I64, scale), Data::Int64(v, kind)) => {
                let x = cur.long()?;
                if *kind == LongKind::TimeMicros && !(0..DAY_MICROS).contains(&x) {
                    return Err(invalid(
                        x.to_string(),
                        expected,
                        "must be at least 0 and less than 86400000000 (24 h)",
                    ));
                }
                let scaled = x.checked_mul(*scale).ok_or_else(|| {
                    invalid(x.to_string(), expected, "out of range in the column's unit")
                })?;
                v.push(scaled);
            }
            (Read::Long(NumTo::F32, _), Data::Float32(v)) => v.push(cur.long()? as f32),
            (Read::Long(NumTo::F64, _), Data::Float64(v)) => v.push(cur.long()? as f64),
            (Read::Float(to), data) => {
                let raw = cur.take(4)?;
                let x = f32::from_le_bytes(raw.try_into().map_err(|_| internal(0))?);
                match (to, data) {
                    (NumTo::F32, Data::Float32(v)) => v.push(x),
                    (NumTo::F64, Data::Float64(v)) => v.push(f64::from(x)),
                    _ => return Err(internal(cur.pos)),
                }
            }
            (Read::Double, Data::Float64(v)) => {
                let raw = cur.take(8)?;
                v.push(f64::from_le_bytes(raw.try_into().map_err(|_| internal(0))?));
            }
            (Read::Bytes(to), data) => {
                let at = cur.pos;
                let bytes = cur.bytes()?;
                store_bytes(*to, bytes, data, expected, at)?;
            }
            (Read::Fixed(size, to), data) => {
                let at = cur.pos;
                let bytes = cur.take(*size)?;
                store_bytes(*to, bytes, data, expected, at)?;
            }
            (Read::Enum(symbols), Data::Utf8(v, _)) => {
                let at = cur.pos;
                let index = cur.int()?;
                let Some((symbol, known)) =
                    usize::try_from(index).ok().and_then(|i| symbols.get(i))
                else {
                    return Err(malformed(
                        at,
                        format!(
                            "enum index {index} does not exist ({} symbols)",
                            symbols.len()
                        ),
                    ));
                };
                if !known {
                    return Err(invalid(
                        quoted(symbol),
                        expected,
                        "not one of the table enum's symbols",
                    ));
                }
                v.push(symbol.as_bytes())?;
            }
            (Read::Record(fields), Data::Struct(s)) => {
                cur.enter()?;
                self.record(fields, s, cur)?;
                cur.depth -= 1;
            }
            (Read::Array(item_read), Data::List { offsets, item, .. }) => {
                cur.enter()?;
                let mut index = 0;
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        self.value(item_read, item, cur)
                            .map_err(|f| f.at(Segment::Index(index)))?;
                        index += 1;
                    }
                }
                cur.depth -= 1;
                offsets.push(
                    i32::try_from(item.len)
                        .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                );
            }
            (
                Read::Map(value_read),
                Data::Map {
                    offsets,
                    keys,
                    values,
                    ..
                },
            ) => {
                cur.enter()?;
                let mut seen: HashSet<&[u8]> = HashSet::new();
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        let at = cur.pos;
                        let key = cur.bytes()?;
                        let key_text = std::str::from_utf8(key)
                            .map_err(|_| malformed(at, "a map key is not UTF-8"))?;
                        if !seen.insert(key) {
                            return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                                key: key_text.to_string(),
                            }));
                        }
                        keys.push(key)?;
                        self.value(value_read, values, cur)
                            .map_err(|f| f.at(Segment::Key(key_text.to_string())))?;
                    }
                }
                cur.depth -= 1;
                offsets.push(
                    i32::try_from(values.len)
                        .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                );
            }
            _ => return Err(internal(cur.pos)),
        }
        col.mark_valid();
        Ok(())
    }

    fn skip(&self, id: usize, cur: &mut Cursor<'_>) -> Result<(), Fail> {
        match self.skips.get(id) {
            None | Some(Skip::Pending) => Err(malformed(cur.pos, "internal error: no skip plan")),
            Some(Skip::Null) => Ok(()),
            Some(Skip::Boolean) => cur.take(1).map(drop),
            Some(Skip::Int | Skip::Long) => cur.long().map(drop),
            Some(Skip::Float) => cur.take(4).map(drop),
            Some(Skip::Double) => cur.take(8).map(drop),
            Some(Skip::Bytes) => cur.bytes().map(drop),
            Some(Skip::Fixed(n)) => cur.take(*n).map(drop),
            Some(Skip::Record(fields)) => {
                cur.enter()?;
                for &f in fields {
                    self.skip(f, cur)?;
                }
                cur.depth -= 1;
                Ok(())
            }
            Some(Skip::Array(item)) => {
                cur.enter()?;
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        self.skip(*item, cur)?;
                    }
                }
                cur.depth -= 1;
                Ok(())
            }
            Some(Skip::Map(value)) => {
                cur.enter()?;
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        cur.bytes()?;
                        self.skip(*value, cur)?;
                    }
                }
                cur.depth -= 1;
                Ok(())
            }
            Some(Skip::Union(branches)) => {
                let at = cur.pos;
                let index = cur.long()?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| malformed(at, format!("union branch {index} does not exist")))?;
                self.skip(*branch, cur)
            }
        }
    }
}

/// Stores the bytes of a writer `bytes`, `string` or `fixed` value.
fn store_bytes(
    to: BytesTo,
    bytes: &[u8],
    data: &mut Data,
    expected: &str,
    at: usize,
) -> Result<(), Fail> {
    match (to, data) {
        (BytesTo::Utf8, Data::Utf8(v, _)) => {
            if simdutf8::basic::from_utf8(bytes).is_err() {
                return Err(malformed(at, "a string is not UTF-8"));
            }
            v.push(bytes)
        }
        (BytesTo::Binary, Data::Binary(v)) => v.push(bytes),
        (BytesTo::Fixed, Data::Fixed(v, _)) => {
            v.extend_from_slice(bytes);
            Ok(())
        }
        (BytesTo::Decimal, Data::Decimal(v, precision, _)) => {
            let unscaled = twos_complement(bytes).ok_or_else(|| {
                invalid(
                    format!("{} bytes", bytes.len()),
                    expected,
                    "the unscaled value does not fit 128 bits",
                )
            })?;
            let limit = 10i128
                .checked_pow(u32::from(*precision))
                .unwrap_or(i128::MAX);
            if unscaled.unsigned_abs() >= limit.unsigned_abs() {
                return Err(invalid(
                    unscaled.to_string(),
                    expected,
                    format!("the unscaled value has more than {precision} digits"),
                ));
            }
            v.push(unscaled);
            Ok(())
        }
        _ => Err(malformed(
            at,
            format!("internal error: plan does not fit {expected}"),
        )),
    }
}

/// A big-endian two's-complement integer of any length, if it fits `i128`.
pub(super) fn twos_complement(bytes: &[u8]) -> Option<i128> {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let fill = if negative { 0xFF } else { 0x00 };
    let cut = bytes.len().saturating_sub(16);
    let (head, tail) = bytes.split_at(cut);
    // Bytes beyond 16 must be sign extension, and the sign must survive the cut.
    if head.iter().any(|&b| b != fill) {
        return None;
    }
    if cut > 0 && tail.first().is_some_and(|&b| (b & 0x80 != 0) != negative) {
        return None;
    }
    let mut buf = [fill; 16];
    buf[16 - tail.len()..].copy_from_slice(tail);
    Some(i128::from_be_bytes(buf))
}
