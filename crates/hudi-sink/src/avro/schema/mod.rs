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

/// Fewest bytes of a two's-complement `fixed` that hold every decimal of `precision` digits: the smallest
/// `n` with 2^(8n-1) > 10^precision. Spark sizes decimal `fixed` types this way, and arrow-rs writes
/// FIXED_LEN_BYTE_ARRAY decimals with exactly this length.
pub fn decimal_min_bytes(precision: u32) -> usize {
    if precision <= 38 {
        let limit = 10u128.pow(precision);
        // 2^(8n-1) for n = 1..=16 fits u128 and 10^38 < 2^127, so the loop ends by n = 16.
        (1..=16usize)
            .find(|n| (1u128 << (8 * n - 1)) > limit)
            .unwrap_or(16)
    } else {
        // Beyond i128: the same bound in floating point, as Spark computes it.
        let bits = f64::from(precision) * std::f64::consts::LOG2_10;
        ((bits + 1.0) / 8.0).ceil() as usize
    }
}

/// Most decimal digits a `fixed` of `size` bytes can hold: floor(log10(2^(8·size-1) - 1)).
pub fn decimal_max_precision(size: usize) -> u32 {
    if size == 0 {
        return 0;
    }
    if size <= 16 {
        let max = (1u128 << (8 * size - 1)) - 1;
        // Number of decimal digits of `max`, minus one.
        let mut digits = 0u32;
        let mut v = max;
        while v >= 10 {
            v /= 10;
            digits += 1;
        }
        digits
    } else {
        ((8 * size - 1) as f64 * std::f64::consts::LOG10_2).floor() as u32
    }
}

mod parse;
mod validate;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every construct the model knows, written the way Java Avro prints it.
    const EVERYTHING: &str = concat!(
        r#"{"type":"record","name":"top","namespace":"com.example","doc":"the top","fields":["#,
        r#"{"name":"b","type":"boolean"},"#,
        r#"{"name":"i","type":"int","doc":"an int","default":7,"order":"descending","aliases":["i_old"],"x-prop":{"k":[1,2]}},"#,
        r#"{"name":"l","type":"long","order":"ignore"},"#,
        r#"{"name":"f","type":"float","default":1.5},"#,
        r#"{"name":"d","type":"double","default":"NaN"},"#,
        r#"{"name":"by","type":"bytes","default":"ÿ"},"#,
        r#"{"name":"s","type":{"type":"string","avro.java.string":"String"}},"#,
        r#"{"name":"n","type":"null","default":null},"#,
        r#"{"name":"e","type":{"type":"enum","name":"Color","doc":"colours","symbols":["RED","GREEN"],"default":"RED","x":1,"aliases":["Colour"]}},"#,
        r#"{"name":"a","type":{"type":"array","items":["null","Color"],"x":"y"},"default":[]},"#,
        r#"{"name":"m","type":{"type":"map","values":"long"},"default":{"k":1}},"#,
        r#"{"name":"fx","type":{"type":"fixed","name":"md5","namespace":"org.other","size":16,"x":true}},"#,
        r#"{"name":"fx2","type":"org.other.md5"},"#,
        r#"{"name":"dec","type":{"type":"fixed","name":"fixed","namespace":"com.example.top.dec","size":5,"logicalType":"decimal","precision":10,"scale":5}},"#,
        r#"{"name":"bdec","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}},"#,
        r#"{"name":"date","type":{"type":"int","logicalType":"date"}},"#,
        r#"{"name":"tms","type":{"type":"int","logicalType":"time-millis"}},"#,
        r#"{"name":"tus","type":{"type":"long","logicalType":"time-micros"}},"#,
        r#"{"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},"#,
        r#"{"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},"#,
        r#"{"name":"ltsms","type":{"type":"long","logicalType":"local-timestamp-millis"}},"#,
        r#"{"name":"ltsus","type":{"type":"long","logicalType":"local-timestamp-micros"}},"#,
        r#"{"name":"uuid","type":{"type":"string","logicalType":"uuid"}},"#,
        r#"{"name":"nanos","type":{"type":"long","logicalType":"timestamp-nanos"}},"#,
        r#"{"name":"u1","type":["null",{"type":"record","name":"inner","fields":[{"name":"x","type":"int"}]}],"default":null},"#,
        r#"{"name":"u2","type":["inner","null"]},"#,
        r#"{"name":"u3","type":["com.example.inner","null"]},"#,
        r#"{"name":"self","type":["null","top"],"default":null}"#,
        r#"],"x-top":"kept","aliases":["old_top"]}"#
    );

    #[test]
    fn every_construct_round_trips_to_the_same_text_and_value() {
        let schema = AvroSchema::parse(EVERYTHING).expect("parses");
        assert_eq!(schema.to_json_string(), EVERYTHING);
        let original: Value = serde_json::from_str(EVERYTHING).expect("json");
        assert_eq!(schema.to_json_value(), original);
        // And once more through the model.
        assert_eq!(
            AvroSchema::parse(&schema.to_string()).expect("reparses"),
            schema
        );
    }

    #[test]
    fn parse_builds_the_expected_model() {
        let schema = AvroSchema::parse(EVERYTHING).expect("parses");
        let record = schema.as_record().expect("record");
        assert_eq!(record.name, Name::with_namespace("top", "com.example"));
        assert_eq!(record.doc.as_deref(), Some("the top"));
        assert_eq!(record.aliases, vec!["old_top".to_string()]);
        assert_eq!(record.attributes.get("x-top"), Some(&json!("kept")));
        let i = record.field("i").expect("i");
        assert_eq!(i.default, Some(json!(7)));
        assert_eq!(i.order, Some(FieldOrder::Descending));
        assert_eq!(i.attributes.get("x-prop"), Some(&json!({"k": [1, 2]})));
        assert_eq!(
            record.field("dec").expect("dec").schema.logical_type(),
            Some(LogicalType::Decimal {
                precision: 10,
                scale: 5
            })
        );
        assert_eq!(
            record.field("bdec").expect("bdec").schema.logical_type(),
            Some(LogicalType::Decimal {
                precision: 40,
                scale: 2
            })
        );
        for (name, lt) in [
            ("date", LogicalType::Date),
            ("tms", LogicalType::TimeMillis),
            ("tus", LogicalType::TimeMicros),
            ("tsms", LogicalType::TimestampMillis),
            ("tsus", LogicalType::TimestampMicros),
            ("ltsms", LogicalType::LocalTimestampMillis),
            ("ltsus", LogicalType::LocalTimestampMicros),
            ("uuid", LogicalType::Uuid),
        ] {
            assert_eq!(
                record.field(name).expect(name).schema.logical_type(),
                Some(lt),
                "{name}"
            );
        }
        // Unknown logical types are attributes on the underlying type.
        let AvroSchema::Primitive(nanos) = &record.field("nanos").expect("nanos").schema else {
            panic!("nanos is a primitive");
        };
        assert_eq!(nanos.primitive, PrimitiveType::Long);
        assert_eq!(nanos.logical_type, None);
        assert_eq!(
            nanos.attributes.get("logicalType"),
            Some(&json!("timestamp-nanos"))
        );
        assert_eq!(
            record.field("u2").expect("u2").schema,
            AvroSchema::Union(vec![
                AvroSchema::Reference("inner".into()),
                AvroSchema::primitive(PrimitiveType::Null),
            ])
        );
    }

    #[test]
    fn named_types_resolve_per_the_namespace_rules() {
        let schema = AvroSchema::parse(EVERYTHING).expect("parses");
        let names = schema.validate().expect("valid");
        let mut all: Vec<_> = names.types.keys().cloned().collect();
        all.sort();
        assert_eq!(
            all,
            [
                "com.example.Color",
                "com.example.inner",
                "com.example.top",
                "com.example.top.dec.fixed",
                "org.other.md5"
            ]
        );
        // Short name: enclosing namespace first.
        assert_eq!(
            names.resolve("inner", Some("com.example")).map(|r| r.0),
            Some("com.example.inner".into())
        );
        // Then the null namespace.
        let null_ns = AvroSchema::parse(
            r#"{"type":"record","name":"R","fields":[
                {"name":"a","type":{"type":"fixed","name":"F","size":1}},
                {"name":"b","type":{"type":"record","name":"S","namespace":"x.y","fields":[{"name":"c","type":"F"}]}}]}"#,
        )
        .expect("a short name falls back to the null namespace");
        let names = null_ns.validate().expect("valid");
        assert_eq!(
            names.resolve("F", Some("x.y")).map(|r| r.0),
            Some("F".into())
        );
        // A dotted name field ignores namespace.
        assert_eq!(
            Name {
                name: "a.b.C".into(),
                namespace: Some("z".into())
            }
            .fullname(Some("q")),
            "a.b.C"
        );
        assert_eq!(Name::with_namespace("C", "").fullname(Some("q")), "C");
        assert_eq!(Name::new("C").fullname(Some("q")), "q.C");
        assert_eq!(Name::new("C").fullname(None), "C");
    }

    #[test]
    fn spark_schema_text_round_trips_exactly() {
        let spark = r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[{"name":"id","type":["null","int"],"default":null},{"name":"decimalField","type":["null",{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.decimalField","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},{"name":"arrayField","type":["null",{"type":"array","items":["null",{"type":"record","name":"arrayField","namespace":"hoodie.t.t_record","fields":[{"name":"f1","type":["null","string"],"default":null}]}]}],"default":null}]}"#;
        assert_eq!(
            AvroSchema::parse(spark).expect("parses").to_json_string(),
            spark
        );
        // The create-schema form: [T, "null"] without defaults.
        let create = r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[{"name":"id","type":["int","null"]},{"name":"d","type":[{"type":"int","logicalType":"date"},"null"]}]}"#;
        assert_eq!(
            AvroSchema::parse(create).expect("parses").to_json_string(),
            create
        );
    }

    #[test]
    fn normalisations_keep_the_value_meaning() {
        let schema = AvroSchema::parse(
            r#"{"type":"record","name":"r","aliases":[],"fields":[
                {"name":"a","type":{"type":"int"}},
                {"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":4}}]}"#,
        )
        .expect("parses");
        assert_eq!(
            schema.to_json_string(),
            r#"{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":0}}]}"#
        );
    }

    #[test]
    fn nullable_helpers() {
        let int = AvroSchema::primitive(PrimitiveType::Int);
        let null = AvroSchema::primitive(PrimitiveType::Null);
        let null_first = AvroSchema::Union(vec![null.clone(), int.clone()]);
        let null_last = AvroSchema::Union(vec![int.clone(), null.clone()]);
        assert!(null_first.is_nullable() && null_last.is_nullable() && null.is_nullable());
        assert!(!int.is_nullable());
        assert_eq!(null_first.nullable_inner(), Some(&int));
        assert_eq!(null_last.nullable_inner(), Some(&int));
        assert_eq!(int.nullable_inner(), None);
        assert_eq!(AvroSchema::Union(vec![int.clone()]).nullable_inner(), None);
        assert_eq!(null_last.non_null(), &int);
        assert_eq!(int.non_null(), &int);
        assert_eq!(AvroSchema::nullable(int.clone()), null_first);
        let field = RecordField::nullable("x", int);
        assert_eq!(field.default, Some(Value::Null));
        assert_eq!(field.schema, null_first);
    }

    #[test]
    fn field_lookup_by_dot_path() {
        let schema = AvroSchema::parse(
            r#"{"type":"record","name":"r","namespace":"n","fields":[
                {"name":"id","type":"int"},
                {"name":"s","type":["null",{"type":"record","name":"S","fields":[
                    {"name":"c","type":[{"type":"record","name":"C","fields":[{"name":"leaf","type":"string"}]},"null"]}]}],"default":null},
                {"name":"again","type":["null","S"],"default":null},
                {"name":"arr","type":{"type":"array","items":"S"}}]}"#,
        )
        .expect("parses");
        assert_eq!(schema.field("id").map(|f| f.name.as_str()), Some("id"));
        assert_eq!(
            schema.field("s.c.leaf").map(|f| f.name.as_str()),
            Some("leaf")
        );
        // Through a reference.
        assert_eq!(
            schema.field("again.c.leaf").map(|f| f.name.as_str()),
            Some("leaf")
        );
        assert!(schema.field("s.missing").is_none());
        assert!(schema.field("id.x").is_none());
        // Arrays are not traversed.
        assert!(schema.field("arr.c").is_none());
        assert!(schema.field("").is_none());
    }

    #[test]
    fn decimal_sizes_match_spark() {
        for (precision, bytes) in [
            (1, 1),
            (2, 1),
            (3, 2),
            (4, 2),
            (9, 4),
            (10, 5),
            (18, 8),
            (19, 9),
            (38, 16),
        ] {
            assert_eq!(decimal_min_bytes(precision), bytes, "precision {precision}");
        }
        for p in 1..=38 {
            let n = decimal_min_bytes(p);
            assert!(decimal_max_precision(n) >= p, "fixed({n}) holds {p} digits");
            assert!(
                decimal_max_precision(n - 1) < p,
                "fixed({}) does not hold {p} digits",
                n - 1
            );
        }
        assert_eq!(decimal_max_precision(5), 11);
        assert_eq!(decimal_max_precision(16), 38);
        assert_eq!(decimal_max_precision(0), 0);
        assert_eq!(decimal_min_bytes(76), 32);
    }

    fn parse_err(text: &str) -> SchemaError {
        match AvroSchema::parse(text) {
            Ok(s) => panic!("expected an error, parsed {s}"),
            Err(e) => e,
        }
    }

    fn record_with(field_type: &str) -> String {
        format!(r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type}}}]}}"#)
    }

    #[test]
    fn syntax_errors_name_the_place() {
        assert!(matches!(parse_err("{"), SchemaError::Json { .. }));
        assert!(matches!(parse_err("42"), SchemaError::NotASchema { path, .. } if path == "$"));
        assert!(matches!(
            parse_err(r#"{"name":"x"}"#),
            SchemaError::MissingAttribute {
                attribute: "type",
                ..
            }
        ));
        assert!(matches!(
            parse_err(r#"{"type":"record","name":"r"}"#),
            SchemaError::MissingAttribute {
                attribute: "fields",
                ..
            }
        ));
        assert!(matches!(
            parse_err(r#"{"type":"record","fields":[]}"#),
            SchemaError::MissingAttribute {
                attribute: "name",
                ..
            }
        ));
        assert!(
            matches!(parse_err(r#"{"type":"record","name":"r","fields":[{"type":"int"}]}"#),
            SchemaError::MissingAttribute { path, attribute: "name" } if path == "$.fields[0]")
        );
        assert!(
            matches!(parse_err(r#"{"type":"record","name":"r","fields":[{"name":"f"}]}"#),
            SchemaError::MissingAttribute { path, attribute: "type" } if path == "$.fields[f]")
        );
        assert!(matches!(parse_err(&record_with(r#"{"type":"error"}"#)),
            SchemaError::NotASchema { path, .. } if path == "$.fields[f].type"));
        assert!(matches!(
            parse_err(&record_with(r#"{"type":"fixed","name":"x","size":-1}"#)),
            SchemaError::InvalidAttribute {
                attribute: "size",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&record_with(r#"{"type":"array"}"#)),
            SchemaError::MissingAttribute {
                attribute: "items",
                ..
            }
        ));
        assert!(
            matches!(parse_err(&record_with(r#"{"type":"map","values":7}"#)),
            SchemaError::NotASchema { path, .. } if path == "$.fields[f].type.values")
        );
        assert!(matches!(
            parse_err(&record_with(r#"{"type":"enum","name":"E","symbols":[1]}"#)),
            SchemaError::InvalidAttribute {
                attribute: "symbols",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&record_with(r#"{"type":"bytes","logicalType":"decimal"}"#)),
            SchemaError::MissingAttribute {
                attribute: "precision",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&record_with(
                r#"{"type":"bytes","logicalType":"decimal","precision":"9"}"#
            )),
            SchemaError::InvalidAttribute {
                attribute: "precision",
                ..
            }
        ));
        assert!(matches!(
            parse_err(
                r#"{"type":"record","name":"r","fields":[{"name":"f","type":"int","order":"up"}]}"#
            ),
            SchemaError::InvalidAttribute {
                attribute: "order",
                ..
            }
        ));
    }

    #[test]
    fn semantic_errors_name_the_place() {
        assert!(matches!(parse_err(&record_with(r#""Missing""#)),
            SchemaError::UndefinedName { path, name, .. } if path == "$.fields[f].type" && name == "Missing"));
        AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"f","type":["null","r"]}]}"#,
        )
        .expect("a record may refer to itself");
        assert!(matches!(
            parse_err(r#"{"type":"record","name":"r","fields":[{"name":"a","type":{"type":"fixed","name":"r","size":1}}]}"#),
            SchemaError::DuplicateName { fullname, reason: "is defined twice", .. } if fullname == "r"
        ));
        assert!(matches!(
            parse_err(r#"{"type":"fixed","name":"int","size":1}"#),
            SchemaError::DuplicateName { .. }
        ));
        assert!(
            matches!(parse_err(r#"{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}"#),
            SchemaError::DuplicateField { name, .. } if name == "a")
        );
        assert!(matches!(
            parse_err(r#"{"type":"record","name":"1r","fields":[]}"#),
            SchemaError::InvalidName { kind: "name", .. }
        ));
        assert!(matches!(
            parse_err(r#"{"type":"record","name":"r","namespace":"a..b","fields":[]}"#),
            SchemaError::InvalidName {
                kind: "namespace",
                ..
            }
        ));
        assert!(matches!(
            parse_err(
                &record_with(r#"{"type":"int"}"#).replace(r#""name":"f""#, r#""name":"f-x""#)
            ),
            SchemaError::InvalidName {
                kind: "field name",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&record_with(
                r#"{"type":"enum","name":"E","symbols":["A","A"]}"#
            )),
            SchemaError::InvalidSymbol {
                reason: "is listed twice",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&record_with(
                r#"{"type":"enum","name":"E","symbols":["A"],"default":"B"}"#
            )),
            SchemaError::InvalidSymbol {
                reason: "is the default but not a symbol",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&record_with("[]")),
            SchemaError::InvalidUnion { .. }
        ));
        assert!(matches!(parse_err(&record_with(r#"["null",["int"]]"#)),
            SchemaError::InvalidUnion { path, .. } if path == "$.fields[f].type[1]"));
        assert!(matches!(
            parse_err(&record_with(r#"["null","null"]"#)),
            SchemaError::InvalidUnion { .. }
        ));
    }

    #[test]
    fn unions_with_two_types_are_refused_clearly() {
        let err = parse_err(&record_with(
            r#"["null","int",{"type":"string","logicalType":"uuid"}]"#,
        ));
        let SchemaError::UnsupportedUnion { path, branches } = &err else {
            panic!("expected UnsupportedUnion, got {err:?}");
        };
        assert_eq!(path, "$.fields[f].type");
        assert_eq!(branches, &["int".to_string(), "string (uuid)".to_string()]);
        assert_eq!(
            err.to_string(),
            "unsupported union at $.fields[f].type: 2 non-null branches (int, string (uuid)); \
             only unions of \"null\" and one type can be written"
        );
        // One branch, with or without null, is fine.
        AvroSchema::parse(&record_with(r#"["int"]"#)).expect("single-branch union");
        AvroSchema::parse(&record_with(r#"["null"]"#)).expect("null-only union parses");
    }

    #[test]
    fn logical_type_errors() {
        let cases = [
            (
                r#"{"type":"bytes","logicalType":"decimal","precision":4,"scale":5}"#,
                "scale 5 exceeds precision 4",
            ),
            (
                r#"{"type":"bytes","logicalType":"decimal","precision":0}"#,
                "precision must be at least 1",
            ),
            (
                r#"{"type":"fixed","name":"x","size":5,"logicalType":"decimal","precision":12,"scale":0}"#,
                "precision 12 does not fit fixed(5) (at most 11 digits)",
            ),
            (
                r#"{"type":"int","logicalType":"decimal","precision":4}"#,
                "must annotate bytes or fixed, not int",
            ),
            (
                r#"{"type":"long","logicalType":"date"}"#,
                "must annotate int, not long",
            ),
            (
                r#"{"type":"int","logicalType":"timestamp-micros"}"#,
                "must annotate long, not int",
            ),
            (
                r#"{"type":"bytes","logicalType":"uuid"}"#,
                "must annotate string, not bytes",
            ),
            (
                r#"{"type":"fixed","name":"x","size":16,"logicalType":"uuid"}"#,
                "must annotate a primitive, not fixed(16)",
            ),
        ];
        for (json, reason) in cases {
            match parse_err(&record_with(json)) {
                SchemaError::InvalidLogicalType {
                    path, reason: got, ..
                } => {
                    assert_eq!(path, "$.fields[f].type", "{json}");
                    assert_eq!(got, reason, "{json}");
                }
                other => panic!("{json}: expected InvalidLogicalType, got {other:?}"),
            }
        }
        AvroSchema::parse(&record_with(
            r#"{"type":"fixed","name":"x","size":5,"logicalType":"decimal","precision":11,"scale":11}"#,
        ))
        .expect("11 digits fit fixed(5)");
    }

    #[test]
    fn defaults_are_checked_against_the_first_branch() {
        let cases = [
            (r#"["null","string"]"#, r#""x""#),
            (r#"["string","null"]"#, "null"),
            (r#""int""#, "2147483648"),
            (r#""int""#, "1.5"),
            (r#""long""#, r#""1""#),
            (r#""boolean""#, "0"),
            (r#"{"type":"array","items":"int"}"#, r#"["a"]"#),
            (r#"{"type":"map","values":"int"}"#, "[]"),
            (r#"{"type":"enum","name":"E","symbols":["A"]}"#, r#""B""#),
            (
                r#"{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}"#,
                "{}",
            ),
        ];
        for (field_type, default) in cases {
            let text = format!(
                r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type},"default":{default}}}]}}"#
            );
            assert!(
                matches!(parse_err(&text), SchemaError::InvalidDefault { .. }),
                "{field_type} with default {default} must be refused"
            );
        }
        let ok = [
            (r#"["null","string"]"#, "null"),
            (r#"["string","null"]"#, r#""x""#),
            (r#""double""#, r#""-Infinity""#),
            (
                r#"{"type":"record","name":"S","fields":[{"name":"x","type":"int","default":1}]}"#,
                "{}",
            ),
            (r#"{"type":"fixed","name":"F","size":2}"#, r#""ab""#),
        ];
        for (field_type, default) in ok {
            let text = format!(
                r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type},"default":{default}}}]}}"#
            );
            AvroSchema::parse(&text)
                .unwrap_or_else(|e| panic!("{field_type} with default {default}: {e}"));
        }
    }

    #[test]
    fn built_schemas_are_validated_too() {
        let bad = AvroSchema::Record(RecordSchema::new(
            Name::new("r"),
            vec![RecordField::new(
                "d",
                AvroSchema::logical(PrimitiveType::String, LogicalType::Date),
            )],
        ));
        assert!(matches!(
            bad.validate(),
            Err(SchemaError::InvalidLogicalType { .. })
        ));
        assert_eq!(
            "\"int\"".parse::<AvroSchema>().expect("FromStr"),
            AvroSchema::primitive(PrimitiveType::Int)
        );
    }
}
