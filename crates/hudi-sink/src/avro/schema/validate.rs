//! Semantic checks over an Avro model, parsed or built in code (see the invariants of `avro`).

use std::collections::HashSet;

use serde_json::Value;

use super::*;

#[derive(Default)]
pub(super) struct Validator<'a> {
    types: HashMap<String, &'a AvroSchema>,
    /// Unions of several non-null types are allowed (a writer schema read by the sink, never written).
    pub(super) general_unions: bool,
    /// A container's writer schema: a default is checked when a datum needs it, and logical types do not
    /// change the encoding, so neither is checked here.
    pub(super) container: bool,
}

impl<'a> Validator<'a> {
    pub(super) fn into_named_types(self) -> NamedTypes<'a> {
        NamedTypes { types: self.types }
    }

    pub(super) fn schema(
        &mut self,
        s: &'a AvroSchema,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<()> {
        match s {
            AvroSchema::Primitive(p) => {
                if let Some(lt) = p.logical_type.as_ref().filter(|_| !self.container) {
                    check_logical(lt, Base::Primitive(p.primitive), path)?;
                }
                Ok(())
            }
            AvroSchema::Record(r) => {
                let full = self.define(&r.name, &r.aliases, s, ns, path)?;
                let child_ns = namespace_of(&full).map(str::to_string);
                let mut seen = HashSet::new();
                for f in &r.fields {
                    let fpath = format!("{path}.fields[{}]", f.name);
                    check_name(&f.name, "field name", &fpath)?;
                    if !seen.insert(f.name.as_str()) {
                        return Err(SchemaError::DuplicateField {
                            path: path.to_string(),
                            name: f.name.clone(),
                        });
                    }
                    for alias in &f.aliases {
                        check_name(alias, "field alias", &fpath)?;
                    }
                    self.schema(&f.schema, child_ns.as_deref(), &format!("{fpath}.type"))?;
                    if let Some(default) = f.default.as_ref().filter(|_| !self.container) {
                        self.check_default(
                            &f.schema,
                            default,
                            child_ns.as_deref(),
                            &format!("{fpath}.default"),
                        )?;
                    }
                }
                Ok(())
            }
            AvroSchema::Enum(e) => {
                self.define(&e.name, &e.aliases, s, ns, path)?;
                let mut seen = HashSet::new();
                for symbol in &e.symbols {
                    check_name(symbol, "enum symbol", path)?;
                    if !seen.insert(symbol.as_str()) {
                        return Err(SchemaError::InvalidSymbol {
                            path: path.to_string(),
                            symbol: symbol.clone(),
                            reason: "is listed twice",
                        });
                    }
                }
                if let Some(default) = &e.default {
                    if !seen.contains(default.as_str()) {
                        return Err(SchemaError::InvalidSymbol {
                            path: path.to_string(),
                            symbol: default.clone(),
                            reason: "is the default but not a symbol",
                        });
                    }
                }
                Ok(())
            }
            AvroSchema::Fixed(f) => {
                self.define(&f.name, &f.aliases, s, ns, path)?;
                if let Some(lt) = f.logical_type.as_ref().filter(|_| !self.container) {
                    check_logical(lt, Base::Fixed(f.size), path)?;
                }
                Ok(())
            }
            AvroSchema::Array(a) => self.schema(&a.items, ns, &format!("{path}.items")),
            AvroSchema::Map(m) => self.schema(&m.values, ns, &format!("{path}.values")),
            AvroSchema::Union(branches) => self.union(branches, ns, path),
            AvroSchema::Reference(name) => self.resolve(name, ns, path).map(|_| ()),
        }
    }

    fn union(
        &mut self,
        branches: &'a [AvroSchema],
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<()> {
        if branches.is_empty() {
            return Err(SchemaError::InvalidUnion {
                path: path.to_string(),
                reason: "a union needs at least one branch".to_string(),
            });
        }
        let mut keys = HashSet::new();
        let mut non_null = Vec::new();
        for (i, branch) in branches.iter().enumerate() {
            let bpath = format!("{path}[{i}]");
            self.schema(branch, ns, &bpath)?;
            let key = match branch {
                AvroSchema::Union(_) => {
                    return Err(SchemaError::InvalidUnion {
                        path: bpath,
                        reason: "a union may not directly contain another union".to_string(),
                    })
                }
                AvroSchema::Primitive(p) => p.primitive.name().to_string(),
                AvroSchema::Array(_) => "array".to_string(),
                AvroSchema::Map(_) => "map".to_string(),
                AvroSchema::Record(r) => r.name.fullname(ns),
                AvroSchema::Enum(e) => e.name.fullname(ns),
                AvroSchema::Fixed(f) => f.name.fullname(ns),
                AvroSchema::Reference(name) => self.resolve(name, ns, &bpath)?,
            };
            if !keys.insert(key.clone()) {
                return Err(SchemaError::InvalidUnion {
                    path: bpath,
                    reason: format!("the union contains {key} twice"),
                });
            }
            if !branch.is_null() {
                non_null.push(branch.describe());
            }
        }
        if non_null.len() > 1 && !self.general_unions {
            return Err(SchemaError::UnsupportedUnion {
                path: path.to_string(),
                branches: non_null,
            });
        }
        Ok(())
    }

    /// Registers a named type; returns its full name.
    fn define(
        &mut self,
        name: &Name,
        aliases: &[String],
        s: &'a AvroSchema,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<String> {
        check_dotted(&name.name, "name", path)?;
        if let Some(space) = &name.namespace {
            if !space.is_empty() {
                check_dotted(space, "namespace", path)?;
            }
        }
        for alias in aliases {
            check_dotted(alias, "alias", path)?;
        }
        let full = name.fullname(ns);
        if PrimitiveType::from_name(&full).is_some() {
            return Err(SchemaError::DuplicateName {
                path: path.to_string(),
                fullname: full,
                reason: "may not be named after a primitive type",
            });
        }
        if self.types.contains_key(&full) {
            return Err(SchemaError::DuplicateName {
                path: path.to_string(),
                fullname: full,
                reason: "is defined twice",
            });
        }
        self.types.insert(full.clone(), s);
        Ok(full)
    }

    /// The full name a reference denotes, or an error naming it.
    fn resolve(&self, name: &str, ns: Option<&str>, path: &str) -> SchemaResult<String> {
        let candidates = reference_candidates(name, ns);
        for full in &candidates {
            if self.types.contains_key(full) {
                return Ok(full.clone());
            }
        }
        Err(SchemaError::UndefinedName {
            path: path.to_string(),
            name: name.to_string(),
            fullname: candidates.into_iter().next().unwrap_or_default(),
        })
    }

    /// Checks a default against the Avro rules (union: first branch).
    fn check_default(
        &self,
        s: &'a AvroSchema,
        value: &Value,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<()> {
        let fail = |expected: &str| {
            Err(SchemaError::InvalidDefault {
                path: path.to_string(),
                reason: format!("{value} is not {expected} (type {})", s.describe()),
            })
        };
        match s {
            AvroSchema::Primitive(p) => {
                let ok = match p.primitive {
                    PrimitiveType::Null => value.is_null(),
                    PrimitiveType::Boolean => value.is_boolean(),
                    PrimitiveType::Int => value.as_i64().is_some_and(|v| i32::try_from(v).is_ok()),
                    PrimitiveType::Long => value.as_i64().is_some(),
                    PrimitiveType::Float | PrimitiveType::Double => {
                        value.is_number()
                            || matches!(value.as_str(), Some("NaN" | "Infinity" | "-Infinity"))
                    }
                    PrimitiveType::Bytes | PrimitiveType::String => value.is_string(),
                };
                if ok {
                    Ok(())
                } else {
                    fail(&format!("a valid {} value", p.primitive.name()))
                }
            }
            AvroSchema::Fixed(_) => match value {
                Value::String(_) => Ok(()),
                _ => fail("a string"),
            },
            AvroSchema::Enum(e) => match value {
                Value::String(symbol) if e.symbols.contains(symbol) => Ok(()),
                _ => fail("one of the enum's symbols"),
            },
            AvroSchema::Array(a) => match value {
                Value::Array(items) => items.iter().enumerate().try_for_each(|(i, v)| {
                    self.check_default(&a.items, v, ns, &format!("{path}[{i}]"))
                }),
                _ => fail("an array"),
            },
            AvroSchema::Map(m) => match value {
                Value::Object(entries) => entries.iter().try_for_each(|(k, v)| {
                    self.check_default(&m.values, v, ns, &format!("{path}[{k}]"))
                }),
                _ => fail("an object"),
            },
            AvroSchema::Record(r) => {
                let Value::Object(members) = value else {
                    return fail("an object");
                };
                let full = r.name.fullname(ns);
                let child_ns = namespace_of(&full);
                for f in &r.fields {
                    let fpath = format!("{path}.{}", f.name);
                    match members.get(&f.name).or(f.default.as_ref()) {
                        Some(v) => self.check_default(&f.schema, v, child_ns, &fpath)?,
                        None => {
                            return Err(SchemaError::InvalidDefault {
                                path: fpath,
                                reason: "no value and the field has no default".to_string(),
                            })
                        }
                    }
                }
                Ok(())
            }
            AvroSchema::Union(branches) => match branches.first() {
                Some(first) => self.check_default(first, value, ns, path),
                None => fail("possible for an empty union"),
            },
            AvroSchema::Reference(name) => {
                let full = self.resolve(name, ns, path)?;
                match self.types.get(&full) {
                    Some(target) => self.check_default(target, value, namespace_of(&full), path),
                    None => fail("resolvable"),
                }
            }
        }
    }
}

/// What a logical type annotates.
enum Base {
    Primitive(PrimitiveType),
    Fixed(usize),
}

fn check_logical(lt: &LogicalType, base: Base, path: &str) -> SchemaResult<()> {
    let fail = |reason: String| {
        Err(SchemaError::InvalidLogicalType {
            path: path.to_string(),
            logical_type: lt.name().to_string(),
            reason,
        })
    };
    match (lt, &base) {
        (LogicalType::Decimal { precision, scale }, _) => {
            if *precision == 0 {
                return fail("precision must be at least 1".to_string());
            }
            if scale > precision {
                return fail(format!("scale {scale} exceeds precision {precision}"));
            }
            match base {
                Base::Primitive(PrimitiveType::Bytes) => Ok(()),
                Base::Fixed(size) => {
                    let max = decimal_max_precision(size);
                    if *precision > max {
                        fail(format!("precision {precision} does not fit fixed({size}) (at most {max} digits)"))
                    } else {
                        Ok(())
                    }
                }
                Base::Primitive(p) => {
                    fail(format!("must annotate bytes or fixed, not {}", p.name()))
                }
            }
        }
        (_, Base::Fixed(size)) => fail(format!("must annotate a primitive, not fixed({size})")),
        (_, Base::Primitive(p)) => match lt.primitive_base() {
            Some(expected) if expected == *p => Ok(()),
            Some(expected) => fail(format!(
                "must annotate {}, not {}",
                expected.name(),
                p.name()
            )),
            None => Ok(()),
        },
    }
}

/// Avro name rule (Java's: a letter or `_`, then letters, digits or `_`).
fn check_name(name: &str, kind: &'static str, path: &str) -> SchemaResult<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(SchemaError::InvalidName {
            path: path.to_string(),
            kind,
            name: name.to_string(),
        })
    }
}

/// A dotted name: every part follows the name rule.
fn check_dotted(name: &str, kind: &'static str, path: &str) -> SchemaResult<()> {
    if name
        .split('.')
        .all(|part| check_name(part, kind, path).is_ok())
    {
        Ok(())
    } else {
        Err(SchemaError::InvalidName {
            path: path.to_string(),
            kind,
            name: name.to_string(),
        })
    }
}
