//! Compiling a writer schema against the table's: what each writer type becomes, under Avro's resolution rules
//! and the promotions Avro and Hudi share.

use super::*;

struct Compiler<'w, 't> {
    /// Named types of the writer schema.
    names: NamedTypes<'w>,
    /// Named types of the table schema.
    table_names: NamedTypes<'t>,
    skips: Vec<Skip>,
    /// Paths of the writer fields the table lacks.
    skipped: Vec<String>,
    /// Skip entry of each named writer type compiled so far.
    named: HashMap<String, usize>,
    /// Full names of the table records being compiled, outermost first.
    open: Vec<String>,
}

/// A table `int`: plain, `date` or `time-millis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntKind {
    Int,
    Date,
    TimeMillis,
}

/// A table `long`: plain, `time-micros` or a timestamp (`local` ones have no time zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LongKind {
    Long,
    TimeMicros,
    Timestamp { millis: bool, local: bool },
}

/// A table type, as a column holds it.
enum Kind<'t> {
    Boolean,
    Int(IntKind),
    Long(LongKind),
    Float,
    Double,
    /// Precision and scale, on `bytes` or `fixed`.
    Decimal(u32, u32),
    /// A string, or an enum with its symbols.
    Utf8(Option<HashSet<&'t str>>),
    Binary,
    Fixed(usize),
    Record(&'t RecordSchema),
    Array(&'t AvroSchema),
    Map(&'t AvroSchema),
}

/// The table type a writer value lands in: references followed, nullability taken off.
struct Target<'t> {
    kind: Kind<'t>,
    /// The namespace the type's members live in.
    ns: Option<String>,
    nullable: bool,
    /// The type in messages ([`type_label`]).
    label: String,
}

impl AvroPlan {
    /// Compiles `writer`, the schema a datum was written with, against `table`, the schema it is read as.
    pub fn compile(writer: &AvroSchema, table: &AvroSchema) -> Result<Self, PlanError> {
        let names = writer
            .validate_writer()
            .map_err(|e| plan_error("", format!("the writer schema is invalid: {e}")))?;
        let table_names = table
            .validate()
            .map_err(|e| plan_error("", format!("the table schema is invalid: {e}")))?;
        let mut c = Compiler {
            names,
            table_names,
            skips: Vec::new(),
            skipped: Vec::new(),
            named: HashMap::new(),
            open: Vec::new(),
        };
        let (resolved, ns) = c.resolve(writer, None, "")?;
        let AvroSchema::Record(record) = resolved else {
            return Err(plan_error(
                "",
                format!("the writer schema is {}, not a record", resolved.describe()),
            ));
        };
        let AvroSchema::Record(table_record) = table else {
            return Err(plan_error(
                "",
                format!("the table schema is {}, not a record", table.describe()),
            ));
        };
        let full = record.name.fullname(ns.as_deref());
        let table_full = table_record.name.fullname(None);
        c.open.push(table_full.clone());
        let root = c.record(
            record,
            namespace_of(&full),
            table_record,
            namespace_of(&table_full),
            "",
        )?;
        Ok(AvroPlan {
            root,
            skips: c.skips,
            skipped: c.skipped,
        })
    }
}

impl<'w, 't> Compiler<'w, 't> {
    /// Follows writer references to the definition and the namespace its members live in.
    fn resolve(
        &self,
        schema: &'w AvroSchema,
        ns: Option<String>,
        path: &str,
    ) -> Result<(&'w AvroSchema, Option<String>), PlanError> {
        follow(&self.names, "writer", schema, ns, path)
    }

    /// The table type `table` (a field's, an array's items, a map's values) as a column holds it.
    fn target(
        &self,
        table: &'t AvroSchema,
        ns: Option<String>,
        path: &str,
    ) -> Result<Target<'t>, PlanError> {
        let (inner, nullable) = match table {
            AvroSchema::Union(branches) => {
                let mut non_null = branches.iter().filter(|b| !b.is_null());
                match (non_null.next(), non_null.next()) {
                    (Some(inner), None) => (inner, branches.len() > 1),
                    _ => {
                        return Err(plan_error(
                            path,
                            "the table's union is not a column type (only [\"null\", T] is)",
                        ))
                    }
                }
            }
            other => (other, false),
        };
        let (inner, ns) = follow(&self.table_names, "table", inner, ns, path)?;
        let label = type_label(inner);
        let Some(kind) = kind(inner) else {
            return Err(plan_error(
                path,
                format!("the table's {label} is not a column type"),
            ));
        };
        Ok(Target {
            kind,
            ns,
            nullable,
            label,
        })
    }

    /// The writer fields of `record` against the table record `table`.
    fn record(
        &mut self,
        record: &'w RecordSchema,
        ns: Option<&str>,
        table: &'t RecordSchema,
        table_ns: Option<&str>,
        path: &str,
    ) -> Result<Vec<FieldRead>, PlanError> {
        let mut reads = Vec::with_capacity(record.fields.len());
        let mut seen = vec![false; table.fields.len()];
        for field in &record.fields {
            let field_path = join(path, &field.name);
            let slot = table
                .fields
                .iter()
                .position(|f| f.name == field.name)
                .or_else(|| {
                    // A table field may name the writer's under an alias.
                    table
                        .fields
                        .iter()
                        .position(|f| f.aliases.contains(&field.name))
                });
            match slot {
                Some(i) => {
                    let (Some(target), Some(done)) = (table.fields.get(i), seen.get_mut(i)) else {
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
                        &target.schema,
                        table_ns.map(str::to_string),
                        &field_path,
                    )?;
                    reads.push(FieldRead::Slot(i, read));
                }
                None => {
                    if !self.skipped.contains(&field_path) {
                        self.skipped.push(field_path.clone());
                    }
                    reads.push(FieldRead::Skip(self.skip(
                        &field.schema,
                        ns.map(str::to_string),
                        &field_path,
                    )?))
                }
            }
        }
        for (field, done) in table.fields.iter().zip(&seen) {
            let nullable = matches!(&field.schema, AvroSchema::Union(b) if b.len() > 1);
            if !done && field.default.is_none() && !nullable {
                return Err(plan_error(
                    &join(path, &field.name),
                    "the writer schema has no such field and the table field has no default and is not nullable",
                ));
            }
        }
        Ok(reads)
    }

    /// The plan for one writer value landing in the table type `table`.
    fn value(
        &mut self,
        schema: &'w AvroSchema,
        ns: Option<String>,
        table: &'t AvroSchema,
        table_ns: Option<String>,
        path: &str,
    ) -> Result<Read, PlanError> {
        let target = self.target(table, table_ns, path)?;
        self.read(schema, ns, &target, path)
    }

    /// The plan for one writer value landing in `target`.
    fn read(
        &mut self,
        schema: &'w AvroSchema,
        ns: Option<String>,
        target: &Target<'t>,
        path: &str,
    ) -> Result<Read, PlanError> {
        let (schema, ns) = self.resolve(schema, ns, path)?;
        let wrong = || {
            plan_error(
                path,
                format!(
                    "writer type {} cannot be read as the table's {}",
                    schema.describe(),
                    target.label
                ),
            )
        };
        Ok(match schema {
            AvroSchema::Union(branches) => {
                let mut reads = Vec::with_capacity(branches.len());
                for branch in branches {
                    reads.push(
                        self.read(branch, ns.clone(), target, path)
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
                match (p.primitive, &target.kind) {
                    (PrimitiveType::Null, _) if target.nullable => Read::Null,
                    (PrimitiveType::Null, _) => {
                        return Err(plan_error(
                            path,
                            format!(
                                "writer type null cannot be read as the table's non-nullable {}",
                                target.label
                            ),
                        ))
                    }
                    (PrimitiveType::Boolean, Kind::Boolean) => Read::Boolean,
                    (PrimitiveType::Int, Kind::Int(kind)) => {
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
                    (PrimitiveType::Int, Kind::Long(LongKind::Long)) if logical.is_none() => {
                        Read::Int(NumTo::I64)
                    }
                    (PrimitiveType::Int, Kind::Float) if logical.is_none() => Read::Int(NumTo::F32),
                    (PrimitiveType::Int, Kind::Double) if logical.is_none() => {
                        Read::Int(NumTo::F64)
                    }
                    (PrimitiveType::Long, Kind::Long(kind)) => {
                        let scale = match (logical, kind) {
                            (None, _) => 1,
                            (
                                Some(LogicalType::TimeMicros),
                                LongKind::TimeMicros | LongKind::Long,
                            ) => 1,
                            (Some(w), LongKind::Long) if is_timestamp(w) => 1,
                            (Some(w), LongKind::Timestamp { millis, local }) if is_timestamp(w) => {
                                let w_local = matches!(
                                    w,
                                    LogicalType::LocalTimestampMillis
                                        | LogicalType::LocalTimestampMicros
                                );
                                if w_local != *local {
                                    return Err(wrong());
                                }
                                let w_millis = matches!(
                                    w,
                                    LogicalType::TimestampMillis
                                        | LogicalType::LocalTimestampMillis
                                );
                                match (w_millis, millis) {
                                    (true, true) => 1,
                                    (true, false) => 1000,
                                    (false, false) => 1,
                                    // Micros into a millis column would lose precision.
                                    (false, true) => return Err(wrong()),
                                }
                            }
                            _ => return Err(wrong()),
                        };
                        Read::Long(NumTo::I64, scale)
                    }
                    (PrimitiveType::Long, Kind::Float) if logical.is_none() => {
                        Read::Long(NumTo::F32, 1)
                    }
                    (PrimitiveType::Long, Kind::Double) if logical.is_none() => {
                        Read::Long(NumTo::F64, 1)
                    }
                    (PrimitiveType::Float, Kind::Float) => Read::Float(NumTo::F32),
                    (PrimitiveType::Float, Kind::Double) => Read::Float(NumTo::F64),
                    (PrimitiveType::Double, Kind::Double) => Read::Double,
                    (PrimitiveType::String, Kind::Utf8(None)) => Read::Bytes(BytesTo::Utf8),
                    (PrimitiveType::String, Kind::Binary) => Read::Bytes(BytesTo::Binary),
                    (PrimitiveType::Bytes, Kind::Binary) if logical.is_none() => {
                        Read::Bytes(BytesTo::Binary)
                    }
                    (PrimitiveType::Bytes, Kind::Utf8(None)) if logical.is_none() => {
                        Read::Bytes(BytesTo::Utf8)
                    }
                    (PrimitiveType::Bytes, Kind::Decimal(precision, scale)) => {
                        decimal_fits(logical, *precision, *scale).map_err(|_| wrong())?;
                        Read::Bytes(BytesTo::Decimal)
                    }
                    _ => return Err(wrong()),
                }
            }
            AvroSchema::Enum(e) => match &target.kind {
                Kind::Utf8(symbols) => Read::Enum(
                    e.symbols
                        .iter()
                        .map(|s| {
                            let known = symbols.as_ref().is_none_or(|set| set.contains(s.as_str()));
                            (s.clone(), known)
                        })
                        .collect(),
                ),
                _ => return Err(wrong()),
            },
            AvroSchema::Fixed(f) => match &target.kind {
                Kind::Fixed(size) if *size == f.size && f.logical_type.is_none() => {
                    Read::Fixed(f.size, BytesTo::Fixed)
                }
                Kind::Decimal(precision, scale) => {
                    decimal_fits(f.logical_type, *precision, *scale).map_err(|_| wrong())?;
                    Read::Fixed(f.size, BytesTo::Decimal)
                }
                _ => return Err(wrong()),
            },
            AvroSchema::Record(r) => match &target.kind {
                Kind::Record(table) => {
                    let full = r.name.fullname(ns.as_deref());
                    let table_full = table.name.fullname(target.ns.as_deref());
                    if self.open.contains(&table_full) {
                        return Err(plan_error(
                            path,
                            format!("the table's record {table_full} contains itself"),
                        ));
                    }
                    self.open.push(table_full.clone());
                    let fields = self.record(
                        r,
                        namespace_of(&full),
                        table,
                        namespace_of(&table_full),
                        path,
                    );
                    self.open.pop();
                    Read::Record(fields?)
                }
                _ => return Err(wrong()),
            },
            AvroSchema::Array(a) => match &target.kind {
                Kind::Array(items) => Read::Array(Box::new(self.value(
                    &a.items,
                    ns,
                    items,
                    target.ns.clone(),
                    &format!("{path}[]"),
                )?)),
                _ => return Err(wrong()),
            },
            AvroSchema::Map(m) => match &target.kind {
                Kind::Map(values) => Read::Map(Box::new(self.value(
                    &m.values,
                    ns,
                    values,
                    target.ns.clone(),
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

/// Follows `side`'s references (`writer` or `table`) to the definition and the namespace its members live in.
fn follow<'s>(
    names: &NamedTypes<'s>,
    side: &str,
    mut schema: &'s AvroSchema,
    mut ns: Option<String>,
    path: &str,
) -> Result<(&'s AvroSchema, Option<String>), PlanError> {
    for _ in 0..64 {
        let AvroSchema::Reference(name) = schema else {
            return Ok((schema, ns));
        };
        let Some((full, target)) = names.resolve(name, ns.as_deref()) else {
            return Err(plan_error(
                path,
                format!("{side} type {name} is not defined"),
            ));
        };
        ns = namespace_of(&full).map(str::to_string);
        schema = target;
    }
    Err(plan_error(
        path,
        format!("{side} references do not resolve"),
    ))
}

/// The column kind of a table type (references followed), if it has a column: the types the Arrow mapping
/// gives a column.
fn kind(table: &AvroSchema) -> Option<Kind<'_>> {
    Some(match table {
        AvroSchema::Primitive(p) => match (p.primitive, p.logical_type) {
            (PrimitiveType::Boolean, None) => Kind::Boolean,
            (PrimitiveType::Int, None) => Kind::Int(IntKind::Int),
            (PrimitiveType::Int, Some(LogicalType::Date)) => Kind::Int(IntKind::Date),
            (PrimitiveType::Int, Some(LogicalType::TimeMillis)) => Kind::Int(IntKind::TimeMillis),
            (PrimitiveType::Long, None) => Kind::Long(LongKind::Long),
            (PrimitiveType::Long, Some(LogicalType::TimeMicros)) => {
                Kind::Long(LongKind::TimeMicros)
            }
            (PrimitiveType::Long, Some(t)) if is_timestamp(t) => Kind::Long(LongKind::Timestamp {
                millis: matches!(
                    t,
                    LogicalType::TimestampMillis | LogicalType::LocalTimestampMillis
                ),
                local: matches!(
                    t,
                    LogicalType::LocalTimestampMillis | LogicalType::LocalTimestampMicros
                ),
            }),
            (PrimitiveType::Float, None) => Kind::Float,
            (PrimitiveType::Double, None) => Kind::Double,
            (PrimitiveType::String, None | Some(LogicalType::Uuid)) => Kind::Utf8(None),
            (PrimitiveType::Bytes, None) => Kind::Binary,
            (PrimitiveType::Bytes, Some(LogicalType::Decimal { precision, scale })) => {
                Kind::Decimal(precision, scale)
            }
            _ => return None,
        },
        AvroSchema::Enum(e) => Kind::Utf8(Some(e.symbols.iter().map(String::as_str).collect())),
        AvroSchema::Fixed(f) => match f.logical_type {
            None => Kind::Fixed(f.size),
            Some(LogicalType::Decimal { precision, scale }) => Kind::Decimal(precision, scale),
            Some(_) => return None,
        },
        AvroSchema::Record(r) => Kind::Record(r),
        AvroSchema::Array(a) => Kind::Array(&a.items),
        AvroSchema::Map(m) => Kind::Map(&m.values),
        AvroSchema::Union(_) | AvroSchema::Reference(_) => return None,
    })
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
fn decimal_fits(writer: Option<LogicalType>, precision: u32, scale: u32) -> Result<(), ()> {
    match writer {
        Some(LogicalType::Decimal {
            precision: wp,
            scale: ws,
        }) if ws == scale && wp <= precision => Ok(()),
        _ => Err(()),
    }
}
