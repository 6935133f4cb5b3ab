//! The Avro schema model: what Hudi stores as the table schema (`extraMetadata.schema` in every commit,
//! `hoodie.table.create.schema`, the `parquet.avro.schema` footer) and what a user hands us as a schema file.
//!
//! Invariants:
//! * Parsing keeps everything the JSON says: names and namespaces exactly as written (a short name stays short,
//!   an explicit namespace stays explicit), docs, aliases, defaults, field `order`, and every attribute this
//!   model does not interpret (kept in [`Attributes`], in document order). Serialising gives back the same JSON
//!   value; for schemas written by Java Avro (Spark-Hudi) it gives back the same text, because members are
//!   written in Java's order. The only normalisations (same meaning, different JSON): a primitive in object
//!   form without any attribute (`{"type":"int"}`) becomes `"int"` and empty `aliases` are dropped (both as
//!   Java prints them), and a decimal without `scale` gains `"scale":0`.
//! * A parsed schema has passed [`AvroSchema::validate`]: names follow Java Avro's rule (a letter or `_`,
//!   then letters, digits or `_`; Unicode letters allowed as in Java), every named type is
//!   defined once and before it is referenced, references resolve per the Avro namespace rules, defaults match
//!   their type (a union default matches its first branch), logical types sit on the right underlying type with
//!   sane parameters, and every union has at most one non-null branch (this writer maps only `["null", T]`).
//! * Known logical types on the wrong type are errors rather than silently ignored (as Java Avro would): a
//!   writer must not store a decimal the user declared as plain bytes. Unknown logical types are kept as
//!   attributes and the underlying type is used, as the Avro specification requires.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

mod error;

pub use error::{SchemaError, SchemaResult};

/// JSON attributes this model does not interpret (Avro "properties"), in document order.
pub type Attributes = Map<String, Value>;

/// The eight Avro primitive types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrimitiveType {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
}

impl PrimitiveType {
    /// The Avro type name (`"int"`, …).
    pub fn name(self) -> &'static str {
        match self {
            PrimitiveType::Null => "null",
            PrimitiveType::Boolean => "boolean",
            PrimitiveType::Int => "int",
            PrimitiveType::Long => "long",
            PrimitiveType::Float => "float",
            PrimitiveType::Double => "double",
            PrimitiveType::Bytes => "bytes",
            PrimitiveType::String => "string",
        }
    }

    /// The primitive called `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "null" => PrimitiveType::Null,
            "boolean" => PrimitiveType::Boolean,
            "int" => PrimitiveType::Int,
            "long" => PrimitiveType::Long,
            "float" => PrimitiveType::Float,
            "double" => PrimitiveType::Double,
            "bytes" => PrimitiveType::Bytes,
            "string" => PrimitiveType::String,
            _ => return None,
        })
    }
}

/// The Avro logical types this writer understands (those parquet-avro maps to a Parquet annotation, plus uuid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicalType {
    /// On `bytes` or `fixed`: unscaled two's-complement big-endian integer × 10^-scale.
    Decimal { precision: u32, scale: u32 },
    /// On `int`: days since 1970-01-01.
    Date,
    /// On `int`: milliseconds after midnight.
    TimeMillis,
    /// On `long`: microseconds after midnight.
    TimeMicros,
    /// On `long`: milliseconds since the epoch, UTC.
    TimestampMillis,
    /// On `long`: microseconds since the epoch, UTC.
    TimestampMicros,
    /// On `long`: milliseconds since the epoch in an unspecified local time zone.
    LocalTimestampMillis,
    /// On `long`: microseconds since the epoch in an unspecified local time zone.
    LocalTimestampMicros,
    /// On `string`: an RFC 4122 UUID in text form.
    Uuid,
}

impl LogicalType {
    /// The `logicalType` attribute value.
    pub fn name(&self) -> &'static str {
        match self {
            LogicalType::Decimal { .. } => "decimal",
            LogicalType::Date => "date",
            LogicalType::TimeMillis => "time-millis",
            LogicalType::TimeMicros => "time-micros",
            LogicalType::TimestampMillis => "timestamp-millis",
            LogicalType::TimestampMicros => "timestamp-micros",
            LogicalType::LocalTimestampMillis => "local-timestamp-millis",
            LogicalType::LocalTimestampMicros => "local-timestamp-micros",
            LogicalType::Uuid => "uuid",
        }
    }

    /// The parameterless logical type called `name` (decimal is parsed separately).
    fn simple_from_name(name: &str) -> Option<Self> {
        Some(match name {
            "date" => LogicalType::Date,
            "time-millis" => LogicalType::TimeMillis,
            "time-micros" => LogicalType::TimeMicros,
            "timestamp-millis" => LogicalType::TimestampMillis,
            "timestamp-micros" => LogicalType::TimestampMicros,
            "local-timestamp-millis" => LogicalType::LocalTimestampMillis,
            "local-timestamp-micros" => LogicalType::LocalTimestampMicros,
            "uuid" => LogicalType::Uuid,
            _ => return None,
        })
    }

    /// The primitive this logical type must annotate (`None` for decimal, which also sits on `fixed`).
    fn primitive_base(&self) -> Option<PrimitiveType> {
        match self {
            LogicalType::Decimal { .. } => None,
            LogicalType::Date | LogicalType::TimeMillis => Some(PrimitiveType::Int),
            LogicalType::Uuid => Some(PrimitiveType::String),
            _ => Some(PrimitiveType::Long),
        }
    }
}

/// A primitive type, possibly annotated with a logical type and attributes (the JSON object form).
#[derive(Debug, Clone, PartialEq)]
pub struct PrimitiveSchema {
    pub primitive: PrimitiveType,
    pub logical_type: Option<LogicalType>,
    pub attributes: Attributes,
}

/// The name of a record, enum or fixed, exactly as written: `name` may itself be dotted (then it is the full
/// name and `namespace` is ignored, per the Avro specification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub name: String,
    pub namespace: Option<String>,
}

impl Name {
    /// A name without an explicit namespace (it inherits the enclosing one).
    pub fn new(name: impl Into<String>) -> Self {
        Name {
            name: name.into(),
            namespace: None,
        }
    }

    /// A name with an explicit namespace.
    pub fn with_namespace(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Name {
            name: name.into(),
            namespace: Some(namespace.into()),
        }
    }

    /// The full name, given the namespace of the enclosing named type (`None` at the top or in the null
    /// namespace).
    pub fn fullname(&self, enclosing: Option<&str>) -> String {
        if self.name.contains('.') {
            return self.name.clone();
        }
        match self.namespace.as_deref().or(enclosing) {
            Some(ns) if !ns.is_empty() => format!("{ns}.{}", self.name),
            _ => self.name.clone(),
        }
    }
}

/// The namespace part of a full name (`None` for the null namespace).
pub fn namespace_of(fullname: &str) -> Option<&str> {
    fullname.rsplit_once('.').map(|(ns, _)| ns)
}

/// How a field sorts records (Avro `order`); kept only because it is part of the schema text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOrder {
    Ascending,
    Descending,
    Ignore,
}

impl FieldOrder {
    fn name(self) -> &'static str {
        match self {
            FieldOrder::Ascending => "ascending",
            FieldOrder::Descending => "descending",
            FieldOrder::Ignore => "ignore",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ascending" => FieldOrder::Ascending,
            "descending" => FieldOrder::Descending,
            "ignore" => FieldOrder::Ignore,
            _ => return None,
        })
    }
}

/// One field of a record.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordField {
    pub name: String,
    pub schema: AvroSchema,
    pub doc: Option<String>,
    /// The JSON default; `Some(Value::Null)` is an explicit `"default": null`.
    pub default: Option<Value>,
    pub order: Option<FieldOrder>,
    pub aliases: Vec<String>,
    pub attributes: Attributes,
}

impl RecordField {
    /// A field of type `schema` with no doc, default or attributes.
    pub fn new(name: impl Into<String>, schema: AvroSchema) -> Self {
        RecordField {
            name: name.into(),
            schema,
            doc: None,
            default: None,
            order: None,
            aliases: Vec::new(),
            attributes: Attributes::new(),
        }
    }

    /// A nullable field in Spark-Hudi's style: `["null", schema]` with `"default": null`.
    pub fn nullable(name: impl Into<String>, schema: AvroSchema) -> Self {
        RecordField {
            default: Some(Value::Null),
            ..RecordField::new(name, AvroSchema::nullable(schema))
        }
    }
}

/// An Avro record.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSchema {
    pub name: Name,
    pub doc: Option<String>,
    pub aliases: Vec<String>,
    pub fields: Vec<RecordField>,
    pub attributes: Attributes,
}

impl RecordSchema {
    /// A record with the given fields and nothing else.
    pub fn new(name: Name, fields: Vec<RecordField>) -> Self {
        RecordSchema {
            name,
            doc: None,
            aliases: Vec::new(),
            fields,
            attributes: Attributes::new(),
        }
    }

    /// The direct field called `name`.
    pub fn field(&self, name: &str) -> Option<&RecordField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// An Avro enum.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumSchema {
    pub name: Name,
    pub doc: Option<String>,
    pub aliases: Vec<String>,
    pub symbols: Vec<String>,
    pub default: Option<String>,
    pub attributes: Attributes,
}

/// An Avro array.
#[derive(Debug, Clone, PartialEq)]
pub struct ArraySchema {
    pub items: Box<AvroSchema>,
    pub attributes: Attributes,
}

/// An Avro map (keys are always strings).
#[derive(Debug, Clone, PartialEq)]
pub struct MapSchema {
    pub values: Box<AvroSchema>,
    pub attributes: Attributes,
}

/// An Avro fixed, possibly a decimal.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedSchema {
    pub name: Name,
    pub doc: Option<String>,
    pub aliases: Vec<String>,
    pub size: usize,
    pub logical_type: Option<LogicalType>,
    pub attributes: Attributes,
}

/// An Avro schema.
#[derive(Debug, Clone, PartialEq)]
pub enum AvroSchema {
    Primitive(PrimitiveSchema),
    Record(RecordSchema),
    Enum(EnumSchema),
    Array(ArraySchema),
    Map(MapSchema),
    Fixed(FixedSchema),
    /// The branches in order; the first one decides which defaults are valid.
    Union(Vec<AvroSchema>),
    /// A use of a named type defined earlier, by its name as written (short or full).
    Reference(String),
}

impl AvroSchema {
    /// A bare primitive (`"int"`).
    pub fn primitive(primitive: PrimitiveType) -> Self {
        AvroSchema::Primitive(PrimitiveSchema {
            primitive,
            logical_type: None,
            attributes: Attributes::new(),
        })
    }

    /// A primitive annotated with a logical type (`{"type":"int","logicalType":"date"}`).
    pub fn logical(primitive: PrimitiveType, logical_type: LogicalType) -> Self {
        AvroSchema::Primitive(PrimitiveSchema {
            primitive,
            logical_type: Some(logical_type),
            attributes: Attributes::new(),
        })
    }

    /// `["null", inner]`, the only union this writer maps.
    pub fn nullable(inner: AvroSchema) -> Self {
        AvroSchema::Union(vec![AvroSchema::primitive(PrimitiveType::Null), inner])
    }

    /// An array of `items`.
    pub fn array(items: AvroSchema) -> Self {
        AvroSchema::Array(ArraySchema {
            items: Box::new(items),
            attributes: Attributes::new(),
        })
    }

    /// A map with `values`.
    pub fn map(values: AvroSchema) -> Self {
        AvroSchema::Map(MapSchema {
            values: Box::new(values),
            attributes: Attributes::new(),
        })
    }

    /// Parses and validates a schema from JSON text.
    pub fn parse(text: &str) -> SchemaResult<Self> {
        let json: Value =
            serde_json::from_str(text).map_err(|source| SchemaError::Json { source })?;
        Self::from_json(&json)
    }

    /// Parses and validates a schema from a JSON value.
    pub fn from_json(json: &Value) -> SchemaResult<Self> {
        let schema = parse::schema(json, "$")?;
        schema.validate()?;
        Ok(schema)
    }

    /// Parses a producer's writer schema, which is only read: unions of several non-null types are allowed.
    pub fn parse_writer(text: &str) -> SchemaResult<Self> {
        let json: Value =
            serde_json::from_str(text).map_err(|source| SchemaError::Json { source })?;
        let schema = parse::schema(&json, "$")?;
        schema.validate_writer()?;
        Ok(schema)
    }

    /// Parses the writer schema of an object-container file (`avro.schema`), as Java Avro's reader accepts
    /// it: any union, recursive records; defaults and logical types are left to the datum codec, which
    /// checks a default when it uses one.
    pub fn parse_container(text: &str) -> SchemaResult<Self> {
        let json: Value =
            serde_json::from_str(text).map_err(|source| SchemaError::Json { source })?;
        let schema = parse::schema(&json, "$")?;
        let mut validator = validate::Validator::default();
        validator.general_unions = true;
        validator.container = true;
        validator.schema(&schema, None, "$")?;
        Ok(schema)
    }

    /// [`AvroSchema::validate`] for a writer schema: unions of several non-null types are allowed.
    pub fn validate_writer(&self) -> SchemaResult<NamedTypes<'_>> {
        let mut validator = validate::Validator::default();
        validator.general_unions = true;
        validator.schema(self, None, "$")?;
        Ok(validator.into_named_types())
    }

    /// Checks everything the module invariants promise and returns the named types by full name.
    pub fn validate(&self) -> SchemaResult<NamedTypes<'_>> {
        let mut validator = validate::Validator::default();
        validator.schema(self, None, "$")?;
        Ok(validator.into_named_types())
    }

    /// The schema as a JSON value (Java Avro's member order).
    pub fn to_json_value(&self) -> Value {
        match self {
            AvroSchema::Primitive(p) => {
                if p.logical_type.is_none() && p.attributes.is_empty() {
                    return Value::String(p.primitive.name().to_string());
                }
                let mut obj = Map::new();
                obj.insert("type".into(), p.primitive.name().into());
                write_logical(&mut obj, p.logical_type.as_ref());
                extend(&mut obj, &p.attributes);
                Value::Object(obj)
            }
            AvroSchema::Record(r) => {
                let mut obj = Map::new();
                obj.insert("type".into(), "record".into());
                write_name(&mut obj, &r.name);
                if let Some(doc) = &r.doc {
                    obj.insert("doc".into(), doc.as_str().into());
                }
                let fields = r.fields.iter().map(field_to_json).collect();
                obj.insert("fields".into(), Value::Array(fields));
                extend(&mut obj, &r.attributes);
                write_aliases(&mut obj, &r.aliases);
                Value::Object(obj)
            }
            AvroSchema::Enum(e) => {
                let mut obj = Map::new();
                obj.insert("type".into(), "enum".into());
                write_name(&mut obj, &e.name);
                if let Some(doc) = &e.doc {
                    obj.insert("doc".into(), doc.as_str().into());
                }
                let symbols = e.symbols.iter().map(|s| Value::from(s.as_str())).collect();
                obj.insert("symbols".into(), Value::Array(symbols));
                if let Some(default) = &e.default {
                    obj.insert("default".into(), default.as_str().into());
                }
                extend(&mut obj, &e.attributes);
                write_aliases(&mut obj, &e.aliases);
                Value::Object(obj)
            }
            AvroSchema::Array(a) => {
                let mut obj = Map::new();
                obj.insert("type".into(), "array".into());
                obj.insert("items".into(), a.items.to_json_value());
                extend(&mut obj, &a.attributes);
                Value::Object(obj)
            }
            AvroSchema::Map(m) => {
                let mut obj = Map::new();
                obj.insert("type".into(), "map".into());
                obj.insert("values".into(), m.values.to_json_value());
                extend(&mut obj, &m.attributes);
                Value::Object(obj)
            }
            AvroSchema::Fixed(f) => {
                let mut obj = Map::new();
                obj.insert("type".into(), "fixed".into());
                write_name(&mut obj, &f.name);
                if let Some(doc) = &f.doc {
                    obj.insert("doc".into(), doc.as_str().into());
                }
                obj.insert("size".into(), f.size.into());
                write_logical(&mut obj, f.logical_type.as_ref());
                extend(&mut obj, &f.attributes);
                write_aliases(&mut obj, &f.aliases);
                Value::Object(obj)
            }
            AvroSchema::Union(branches) => {
                Value::Array(branches.iter().map(AvroSchema::to_json_value).collect())
            }
            AvroSchema::Reference(name) => Value::String(name.clone()),
        }
    }

    /// The schema as compact JSON text (what goes into `extraMetadata.schema` and the Parquet footer).
    pub fn to_json_string(&self) -> String {
        self.to_json_value().to_string()
    }

    /// Whether a value of this type may be null: `null` itself or a union with a `null` branch.
    pub fn is_nullable(&self) -> bool {
        match self {
            AvroSchema::Primitive(p) => p.primitive == PrimitiveType::Null,
            AvroSchema::Union(branches) => branches.iter().any(AvroSchema::is_null),
            _ => false,
        }
    }

    /// `T` when this is `["null", T]` or `[T, "null"]`.
    pub fn nullable_inner(&self) -> Option<&AvroSchema> {
        match self {
            AvroSchema::Union(branches) => match branches.as_slice() {
                [a, b] if a.is_null() && !b.is_null() => Some(b),
                [a, b] if b.is_null() && !a.is_null() => Some(a),
                _ => None,
            },
            _ => None,
        }
    }

    /// The type without its nullability: `T` for `["null", T]` or `[T, "null"]`, else the schema itself.
    pub fn non_null(&self) -> &AvroSchema {
        self.nullable_inner().unwrap_or(self)
    }

    /// Whether this is the `null` type.
    pub fn is_null(&self) -> bool {
        matches!(self, AvroSchema::Primitive(p) if p.primitive == PrimitiveType::Null)
    }

    /// The record, if this is one.
    pub fn as_record(&self) -> Option<&RecordSchema> {
        match self {
            AvroSchema::Record(r) => Some(r),
            _ => None,
        }
    }

    /// The logical type on a primitive or fixed.
    pub fn logical_type(&self) -> Option<LogicalType> {
        match self {
            AvroSchema::Primitive(p) => p.logical_type,
            AvroSchema::Fixed(f) => f.logical_type,
            _ => None,
        }
    }

    /// A short description for error messages (`"int"`, `"record a.b"`, `"fixed(5) decimal"`).
    pub fn describe(&self) -> String {
        match self {
            AvroSchema::Primitive(p) => match p.logical_type {
                Some(lt) => format!("{} ({})", p.primitive.name(), lt.name()),
                None => p.primitive.name().to_string(),
            },
            AvroSchema::Record(r) => format!("record {}", r.name.name),
            AvroSchema::Enum(e) => format!("enum {}", e.name.name),
            AvroSchema::Array(_) => "array".to_string(),
            AvroSchema::Map(_) => "map".to_string(),
            AvroSchema::Fixed(f) => match f.logical_type {
                Some(lt) => format!("fixed {}({}) ({})", f.name.name, f.size, lt.name()),
                None => format!("fixed {}({})", f.name.name, f.size),
            },
            AvroSchema::Union(_) => "union".to_string(),
            AvroSchema::Reference(name) => name.clone(),
        }
    }

    /// The field at a dotted path (`"structField.child_struct.child_field1"`), looking through nullable unions
    /// and named-type references into nested records, as Hudi resolves record-key and partition fields.
    pub fn field(&self, path: &str) -> Option<&RecordField> {
        let names = NamedTypes::collect(self);
        let mut current = self;
        let mut ns: Option<String> = None;
        let mut found = None;
        for part in path.split('.') {
            let (record, record_ns) = names.record_of(current, ns.as_deref())?;
            let field = record.field(part)?;
            ns = record_ns;
            current = &field.schema;
            found = Some(field);
        }
        found
    }
}

impl fmt::Display for AvroSchema {
    /// Compact JSON, as [`AvroSchema::to_json_string`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json_value())
    }
}

impl FromStr for AvroSchema {
    type Err = SchemaError;

    fn from_str(s: &str) -> SchemaResult<Self> {
        AvroSchema::parse(s)
    }
}

fn extend(obj: &mut Map<String, Value>, attributes: &Attributes) {
    for (k, v) in attributes {
        obj.insert(k.clone(), v.clone());
    }
}

fn write_name(obj: &mut Map<String, Value>, name: &Name) {
    obj.insert("name".into(), name.name.as_str().into());
    if let Some(ns) = &name.namespace {
        obj.insert("namespace".into(), ns.as_str().into());
    }
}

fn write_aliases(obj: &mut Map<String, Value>, aliases: &[String]) {
    if !aliases.is_empty() {
        let list = aliases.iter().map(|a| Value::from(a.as_str())).collect();
        obj.insert("aliases".into(), Value::Array(list));
    }
}

fn write_logical(obj: &mut Map<String, Value>, logical_type: Option<&LogicalType>) {
    let Some(lt) = logical_type else { return };
    obj.insert("logicalType".into(), lt.name().into());
    if let LogicalType::Decimal { precision, scale } = lt {
        obj.insert("precision".into(), (*precision).into());
        obj.insert("scale".into(), (*scale).into());
    }
}

fn field_to_json(field: &RecordField) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), field.name.as_str().into());
    obj.insert("type".into(), field.schema.to_json_value());
    if let Some(doc) = &field.doc {
        obj.insert("doc".into(), doc.as_str().into());
    }
    if let Some(default) = &field.default {
        obj.insert("default".into(), default.clone());
    }
    if let Some(order) = field.order {
        obj.insert("order".into(), order.name().into());
    }
    write_aliases(&mut obj, &field.aliases);
    extend(&mut obj, &field.attributes);
    Value::Object(obj)
}

/// The named types (records, enums, fixed) of a schema by full name, for resolving references.
#[derive(Debug, Default)]
pub struct NamedTypes<'a> {
    types: HashMap<String, &'a AvroSchema>,
}

impl<'a> NamedTypes<'a> {
    /// Collects every named type in `root` (first definition wins; use [`AvroSchema::validate`] to reject
    /// duplicates).
    pub fn collect(root: &'a AvroSchema) -> Self {
        fn walk<'a>(
            s: &'a AvroSchema,
            ns: Option<&str>,
            out: &mut HashMap<String, &'a AvroSchema>,
        ) {
            match s {
                AvroSchema::Record(r) => {
                    let full = r.name.fullname(ns);
                    let child_ns = namespace_of(&full).map(str::to_string);
                    out.entry(full).or_insert(s);
                    for f in &r.fields {
                        walk(&f.schema, child_ns.as_deref(), out);
                    }
                }
                AvroSchema::Enum(e) => {
                    out.entry(e.name.fullname(ns)).or_insert(s);
                }
                AvroSchema::Fixed(f) => {
                    out.entry(f.name.fullname(ns)).or_insert(s);
                }
                AvroSchema::Array(a) => walk(&a.items, ns, out),
                AvroSchema::Map(m) => walk(&m.values, ns, out),
                AvroSchema::Union(branches) => branches.iter().for_each(|b| walk(b, ns, out)),
                AvroSchema::Primitive(_) | AvroSchema::Reference(_) => {}
            }
        }
        let mut types = HashMap::new();
        walk(root, None, &mut types);
        NamedTypes { types }
    }

    /// The named type with this full name.
    pub fn get(&self, fullname: &str) -> Option<&'a AvroSchema> {
        self.types.get(fullname).copied()
    }

    /// Resolves a reference written inside namespace `enclosing`: a dotted name is a full name; a short name is
    /// looked up in the enclosing namespace, then in the null namespace (as Java Avro does). Returns the full
    /// name and the definition.
    pub fn resolve(
        &self,
        reference: &str,
        enclosing: Option<&str>,
    ) -> Option<(String, &'a AvroSchema)> {
        reference_candidates(reference, enclosing)
            .into_iter()
            .find_map(|full| self.get(&full).map(|s| (full, s)))
    }

    /// Number of named types.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the schema has no named types.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The record behind `schema` (through a nullable union and references) and the namespace its fields
    /// live in.
    fn record_of(
        &self,
        schema: &'a AvroSchema,
        ns: Option<&str>,
    ) -> Option<(&'a RecordSchema, Option<String>)> {
        match schema.non_null() {
            AvroSchema::Record(r) => {
                let full = r.name.fullname(ns);
                Some((r, namespace_of(&full).map(str::to_string)))
            }
            AvroSchema::Reference(name) => {
                let (full, target) = self.resolve(name, ns)?;
                let r = target.as_record()?;
                Some((r, namespace_of(&full).map(str::to_string)))
            }
            _ => None,
        }
    }
}

/// The full names a reference may denote, in lookup order.
pub(in crate::avro) fn reference_candidates(
    reference: &str,
    enclosing: Option<&str>,
) -> Vec<String> {
    if reference.contains('.') {
        return vec![reference.to_string()];
    }
    match enclosing {
        Some(ns) if !ns.is_empty() => vec![format!("{ns}.{reference}"), reference.to_string()],
        _ => vec![reference.to_string()],
    }
}

mod decimal;
mod parse;
mod validate;

pub use decimal::{decimal_max_precision, decimal_min_bytes};

#[cfg(test)]
mod tests;
