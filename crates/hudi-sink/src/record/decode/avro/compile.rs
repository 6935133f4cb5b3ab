//! Compiling a writer schema against the table's columns: what each writer type becomes, under Avro's
//! resolution rules and the promotions Avro and Hudi share.

use super::*;

pub(super) struct Compiler<'w> {
    pub(super) names: NamedTypes<'w>,
    pub(super) skips: Vec<Skip>,
    /// Paths of the writer fields the table lacks.
    pub(super) skipped: Vec<String>,
    /// Skip entry of each named writer type compiled so far.
    pub(super) named: HashMap<String, usize>,
}

impl AvroPlan {
    /// Compiles `writer` against the decoder's columns.
    pub(in crate::record::decode) fn compile(
        writer: &AvroSchema,
        root: &Column,
    ) -> Result<Self, PlanError> {
        let names = writer
            .validate_writer()
            .map_err(|e| plan_error("", format!("the writer schema is invalid: {e}")))?;
        let mut c = Compiler {
            names,
            skips: Vec::new(),
            skipped: Vec::new(),
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
            skipped: c.skipped,
        })
    }
}

impl<'w> Compiler<'w> {
    pub(super) fn resolve(
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
    pub(super) fn record(
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
    pub(super) fn value(
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
    pub(super) fn skip(
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

pub(super) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

pub(super) fn is_timestamp(t: LogicalType) -> bool {
    matches!(
        t,
        LogicalType::TimestampMillis
            | LogicalType::TimestampMicros
            | LogicalType::LocalTimestampMillis
            | LogicalType::LocalTimestampMicros
    )
}

/// A writer decimal fits a table decimal at the same scale and at most its precision (Hudi's widening).
pub(super) fn decimal_fits(
    writer: Option<LogicalType>,
    precision: u8,
    scale: i8,
) -> Result<(), ()> {
    match writer {
        Some(LogicalType::Decimal {
            precision: wp,
            scale: ws,
        }) if i64::from(ws) == i64::from(scale) && wp <= u32::from(precision) => Ok(()),
        _ => Err(()),
    }
}
