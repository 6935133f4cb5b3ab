//! The schema layer against Spark-written tables: every v6 golden table's commit schemas and create schema
//! re-serialise unchanged, map to the Arrow schema arrow-rs reads from the table's Parquet files, predict each
//! file's `parquet.avro.schema` footer and Parquet column types; and a batch of every supported type survives
//! a Parquet round trip with the physical types parquet-avro would have chosen.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, MapBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int64Array, ListArray, MapArray, RecordBatch,
    StringArray, StructArray, Time32MillisecondArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema};
use hudi_sink::schema::arrow::{arrow_to_avro, avro_to_arrow};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::schema::meta::{self, with_meta_fields, META_COLUMNS};
use hudi_sink::schema::parquet::parquet_schema_for;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::ArrowWriter;
use parquet::basic::{LogicalType, Repetition, TimeUnit, Type as PhysicalType};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};
use serde_json::Value;

use crate::common;

/// `extraMetadata.schema` of every completed `.commit` / `.replacecommit`, by instant.
fn commit_schemas(table: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(table.join(".hoodie")).expect("read .hoodie") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let Some((instant, action)) = name.split_once('.') else {
            continue;
        };
        if action != "commit" && action != "replacecommit" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read commit");
        let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let schema = json["extraMetadata"]["schema"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no extraMetadata.schema"));
        out.insert(instant.to_string(), schema.to_string());
    }
    out
}

/// `hoodie.table.create.schema` with Java's `\:` escapes undone (the only escape these files use in it).
fn create_schema(table: &Path) -> String {
    let text =
        std::fs::read_to_string(table.join(".hoodie/hoodie.properties")).expect("read properties");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("hoodie.table.create.schema="))
        .expect("create schema present");
    let unescaped = line.replace("\\:", ":");
    assert!(
        !unescaped.contains('\\'),
        "unexpected escape left in {unescaped}"
    );
    unescaped
}

/// The instant in a base file name `<fileId>_<writeToken>_<instant>.parquet`.
fn file_instant(file: &Path) -> String {
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .expect("file name");
    let stem = name.split('.').next().expect("stem");
    stem.split('_').nth(2).expect("instant token").to_string()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).expect("valid JSON")
}

#[test]
fn commit_and_create_schemas_round_trip() {
    let mut commits = 0;
    for name in common::V6_TABLES {
        let table = common::golden_table(name);
        for (instant, text) in commit_schemas(&table.path) {
            let schema =
                AvroSchema::parse(&text).unwrap_or_else(|e| panic!("{name} {instant}: {e}"));
            assert_eq!(schema.to_json_value(), json(&text), "{name} {instant}");
            // Java Avro's member order is ours too, so even the text is identical.
            assert_eq!(schema.to_json_string(), text, "{name} {instant}");
            commits += 1;
        }
        let text = create_schema(&table.path);
        let schema =
            AvroSchema::parse(&text).unwrap_or_else(|e| panic!("{name} create schema: {e}"));
        assert_eq!(schema.to_json_value(), json(&text), "{name} create schema");
        assert_eq!(schema.to_json_string(), text, "{name} create schema");
        meta::check_user_schema(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(commits, 12, "completed commits across the v6 tables");
}

/// Differences the comparison forgave, so the test can show they were really exercised.
#[derive(Default, Debug)]
struct Forgiven {
    legacy_lists: usize,
}

/// Compares our Arrow type with the one arrow-rs reads from a Spark file. Forgiven: a list item's name and,
/// for Spark's legacy 2-level lists (`repeated group array`), its nullability — a repeated group cannot be
/// null, so arrow-rs reads the item as non-null even though the Avro items are `["null", record]`
/// (parquet-avro's old list writer refuses null elements instead).
fn assert_same(ours: &DataType, file: &DataType, path: &str, forgiven: &mut Forgiven) {
    match (ours, file) {
        (DataType::List(a), DataType::List(b)) => {
            if b.name() == "array" {
                forgiven.legacy_lists += 1;
            } else {
                assert_eq!(a.is_nullable(), b.is_nullable(), "{path}[] nullability");
            }
            assert_same(a.data_type(), b.data_type(), &format!("{path}[]"), forgiven);
        }
        (DataType::Map(a, sorted_a), DataType::Map(b, sorted_b)) => {
            assert_eq!(sorted_a, sorted_b, "{path} keys_sorted");
            assert_eq!(a.name(), b.name(), "{path} entries name");
            assert_eq!(
                a.is_nullable(),
                b.is_nullable(),
                "{path} entries nullability"
            );
            assert_same(
                a.data_type(),
                b.data_type(),
                &format!("{path}{{}}"),
                forgiven,
            );
        }
        (DataType::Struct(a), DataType::Struct(b)) => {
            let names = |f: &Fields| f.iter().map(|f| f.name().clone()).collect::<Vec<_>>();
            assert_eq!(names(a), names(b), "{path} struct fields");
            for (fa, fb) in a.iter().zip(b.iter()) {
                let fpath = format!("{path}.{}", fa.name());
                assert_eq!(fa.is_nullable(), fb.is_nullable(), "{fpath} nullability");
                assert_same(fa.data_type(), fb.data_type(), &fpath, forgiven);
            }
        }
        _ => assert_eq!(ours, file, "{path}"),
    }
}

/// A leaf column path with Spark's 2-level list segment (`.array`) written as ours (`.list.element`).
fn our_path(spark_path: &str) -> String {
    spark_path.replace(".array.", ".list.element.")
}

#[test]
fn arrow_mapping_matches_parquet_files_and_footers() {
    let mut forgiven = Forgiven::default();
    let mut files = 0;
    let mut leaves = 0;
    for name in common::V6_TABLES {
        let table = common::golden_table(name);
        let schemas = commit_schemas(&table.path);
        for path in common::parquet_files(&table.path) {
            let label = format!(
                "{name}/{}",
                path.file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
            );
            let instant = file_instant(&path);
            let text = schemas
                .get(&instant)
                .unwrap_or_else(|| panic!("{label}: no commit {instant}"));
            let avro = AvroSchema::parse(text).expect("commit schema");
            let reader = SerializedFileReader::new(File::open(&path).expect("open"))
                .expect("parquet footer");
            let file_meta = reader.metadata().file_metadata();

            // (c) The footer is the commit schema with the meta fields: same JSON value, same text.
            let footer = file_meta
                .key_value_metadata()
                .and_then(|kv| kv.iter().find(|kv| kv.key == "parquet.avro.schema"))
                .and_then(|kv| kv.value.clone())
                .unwrap_or_else(|| panic!("{label}: no parquet.avro.schema"));
            let expected_footer = with_meta_fields(&avro);
            let parsed_footer =
                AvroSchema::parse(&footer).unwrap_or_else(|e| panic!("{label} footer: {e}"));
            assert_eq!(parsed_footer, expected_footer, "{label} footer model");
            assert_eq!(
                json(&footer),
                expected_footer.to_json_value(),
                "{label} footer value"
            );
            assert_eq!(
                footer,
                expected_footer.to_json_string(),
                "{label} footer text"
            );

            // (b) Arrow: the file's columns are the meta columns, then avro_to_arrow(commit schema).
            let file_arrow =
                ParquetRecordBatchReaderBuilder::try_new(File::open(&path).expect("open"))
                    .expect("arrow reader")
                    .schema()
                    .clone();
            let ours = avro_to_arrow(&avro).expect("maps to Arrow");
            let (meta_part, data_part) = file_arrow.fields().split_at(META_COLUMNS.len());
            let meta_fields: Vec<Field> = meta_part.iter().map(|f| f.as_ref().clone()).collect();
            assert_eq!(meta_fields, meta::arrow_fields(), "{label} meta columns");
            assert_eq!(data_part.len(), ours.fields().len(), "{label} column count");
            for (a, b) in ours.fields().iter().zip(data_part) {
                assert_eq!(a.name(), b.name(), "{label}");
                assert_eq!(a.is_nullable(), b.is_nullable(), "{label} {}", a.name());
                assert_same(
                    a.data_type(),
                    b.data_type(),
                    &format!("{label} {}", a.name()),
                    &mut forgiven,
                );
            }
            // And back: the Arrow form maps to the very schema Spark wrote.
            let record = avro.as_record().expect("record");
            let back = arrow_to_avro(&ours, &record.name.name, record.name.namespace.as_deref())
                .expect("to Avro");
            assert_eq!(back.to_json_string(), *text, "{label} Arrow → Avro");

            // Parquet: our schema for these columns has the physical and logical types of Spark's file,
            // modulo the list layout (documented in schema::parquet).
            let mut file_columns = meta::arrow_fields();
            file_columns.extend(ours.fields().iter().map(|f| f.as_ref().clone()));
            let descr = parquet_schema_for(&Schema::new(file_columns), &with_meta_fields(&avro))
                .expect("parquet");
            assert_eq!(
                descr.root_schema().name(),
                file_meta.schema_descr().root_schema().name(),
                "{label}"
            );
            let by_path: BTreeMap<String, &ColumnDescPtr> = descr
                .columns()
                .iter()
                .map(|c| (c.path().string(), c))
                .collect();
            assert_eq!(
                by_path.len(),
                file_meta.schema_descr().num_columns(),
                "{label} leaf count"
            );
            for spark in file_meta.schema_descr().columns() {
                let spath = spark.path().string();
                let mine = by_path
                    .get(&our_path(&spath))
                    .unwrap_or_else(|| panic!("{label}: no column for {spath}"));
                assert_eq!(
                    mine.physical_type(),
                    spark.physical_type(),
                    "{label} {spath}"
                );
                assert_eq!(mine.type_length(), spark.type_length(), "{label} {spath}");
                assert_eq!(
                    mine.logical_type_ref(),
                    spark.logical_type_ref(),
                    "{label} {spath}"
                );
                assert_eq!(
                    mine.self_type().get_basic_info().repetition(),
                    spark.self_type().get_basic_info().repetition(),
                    "{label} {spath}"
                );
                leaves += 1;
            }
            files += 1;
        }
    }
    assert_eq!(files, 23, "parquet files across the v6 tables");
    assert!(leaves > 23 * 20, "compared {leaves} leaf columns");
    assert_eq!(
        forgiven.legacy_lists, 23,
        "one 2-level list column per file"
    );
}

/// Every type the writer maps, Spark-named, with nullable and required columns.
const ALL_TYPES: &str = concat!(
    r#"{"type":"record","name":"all_record","namespace":"hoodie.all","fields":["#,
    r#"{"name":"id","type":"int"},"#,
    r#"{"name":"name","type":["null","string"],"default":null},"#,
    r#"{"name":"flag","type":["null","boolean"],"default":null},"#,
    r#"{"name":"l","type":"long"},"#,
    r#"{"name":"f","type":"float"},"#,
    r#"{"name":"d","type":["null","double"],"default":null},"#,
    r#"{"name":"bin","type":["null","bytes"],"default":null},"#,
    r#"{"name":"fx","type":{"type":"fixed","name":"fx","size":4}},"#,
    r#"{"name":"en","type":{"type":"enum","name":"E","symbols":["A","B"]}},"#,
    r#"{"name":"dec","type":["null",{"type":"fixed","name":"fixed","namespace":"hoodie.all.all_record.dec","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},"#,
    r#"{"name":"bdec","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":2}},"#,
    r#"{"name":"wide","type":{"type":"fixed","name":"fixed","namespace":"hoodie.all.all_record.wide","size":16,"logicalType":"decimal","precision":38,"scale":6}},"#,
    r#"{"name":"date","type":["null",{"type":"int","logicalType":"date"}],"default":null},"#,
    r#"{"name":"tms","type":{"type":"int","logicalType":"time-millis"}},"#,
    r#"{"name":"tus","type":{"type":"long","logicalType":"time-micros"}},"#,
    r#"{"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},"#,
    r#"{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},"#,
    r#"{"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},"#,
    r#"{"name":"uuid","type":{"type":"string","logicalType":"uuid"}},"#,
    r#"{"name":"st","type":["null",{"type":"record","name":"st","namespace":"hoodie.all.all_record","fields":["#,
    r#"{"name":"a","type":["null","string"],"default":null},"#,
    r#"{"name":"child","type":["null",{"type":"record","name":"child","namespace":"hoodie.all.all_record.st","fields":[{"name":"x","type":["null","double"],"default":null}]}],"default":null}]}],"default":null},"#,
    r#"{"name":"arr","type":["null",{"type":"array","items":["null",{"type":"record","name":"arr","namespace":"hoodie.all.all_record","fields":[{"name":"f1","type":["null","string"],"default":null},{"name":"f2","type":["null","int"],"default":null}]}]}],"default":null},"#,
    r#"{"name":"longs","type":{"type":"array","items":"long"}},"#,
    r#"{"name":"m","type":["null",{"type":"map","values":["null",{"type":"record","name":"m","namespace":"hoodie.all.all_record","fields":[{"name":"v","type":["null","double"],"default":null}]}]}],"default":null},"#,
    r#"{"name":"mi","type":{"type":"map","values":["null","int"]}}"#,
    r#"]}"#
);

fn struct_fields(schema: &Schema, name: &str) -> Fields {
    match schema.field_with_name(name).expect("column").data_type() {
        DataType::Struct(f) => f.clone(),
        other => panic!("{name} is {other}"),
    }
}

fn item_field(schema: &Schema, name: &str) -> FieldRef {
    match schema.field_with_name(name).expect("column").data_type() {
        DataType::List(f) => f.clone(),
        other => panic!("{name} is {other}"),
    }
}

/// Three rows of every column of `ALL_TYPES`, with nulls wherever the schema allows.
fn all_types_batch(schema: &Arc<Schema>, data: &Schema) -> RecordBatch {
    let n = 3;
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["20250101000000000"; n])),
        Arc::new(StringArray::from(vec![
            Some("20250101000000000_0_0"),
            Some("20250101000000000_0_1"),
            None,
        ])),
        Arc::new(StringArray::from(vec!["k1", "k2", "k3"])),
        Arc::new(StringArray::from(vec![""; n])),
        Arc::new(StringArray::from(vec![
            Some("f.parquet"),
            None,
            Some("f.parquet"),
        ])),
    ];
    let decimal = |values: Vec<Option<i128>>, p: u8, s: i8| -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(p, s)
                .expect("decimal"),
        )
    };
    columns.extend::<Vec<ArrayRef>>(vec![
        Arc::new(Int32Array::from(vec![1, 2, 3])),
        Arc::new(StringArray::from(vec![Some("Alice"), None, Some("Çé😀")])),
        Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        Arc::new(Int64Array::from(vec![i64::MIN, 0, i64::MAX])),
        Arc::new(Float32Array::from(vec![1.5, -0.0, f32::MAX])),
        Arc::new(Float64Array::from(vec![
            Some(2.25),
            None,
            Some(f64::MIN_POSITIVE),
        ])),
        Arc::new(BinaryArray::from_opt_vec(vec![
            Some(b"\x00\xff".as_slice()),
            None,
            Some(b"".as_slice()),
        ])),
        Arc::new(
            FixedSizeBinaryArray::try_from_iter(vec![[1u8, 2, 3, 4], [0; 4], [255; 4]].into_iter())
                .expect("fixed"),
        ),
        Arc::new(StringArray::from(vec!["A", "B", "A"])),
        decimal(
            vec![Some(12_345_678_901), None, Some(-99_999_999_999)],
            10,
            5,
        ),
        decimal(vec![Some(10i128.pow(20) - 1), Some(-1), Some(0)], 20, 2),
        decimal(
            vec![
                Some(10i128.pow(38) - 1),
                Some(-(10i128.pow(38) - 1)),
                Some(123_456),
            ],
            38,
            6,
        ),
        Arc::new(Date32Array::from(vec![Some(19_000), None, Some(-1)])),
        Arc::new(Time32MillisecondArray::from(vec![0, 86_399_999, 12_345])),
        Arc::new(Time64MicrosecondArray::from(vec![0, 86_399_999_999, 1])),
        Arc::new(
            TimestampMillisecondArray::from(vec![0, 1_700_000_000_000, -1]).with_timezone("UTC"),
        ),
        Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_713_480_000_000_000), None, Some(1)])
                .with_timezone("UTC"),
        ),
        Arc::new(TimestampMicrosecondArray::from(vec![5, 6, 7])),
        Arc::new(StringArray::from(
            vec!["6f1e9c2a-8d1b-4c55-9a1b-2c3d4e5f6a7b"; n],
        )),
    ]);

    // st: struct { a, child: struct { x } }, row 1 null.
    let st_fields = struct_fields(data, "st");
    let child_fields = match st_fields[1].data_type() {
        DataType::Struct(f) => f.clone(),
        other => panic!("child is {other}"),
    };
    let child = StructArray::try_new(
        child_fields,
        vec![Arc::new(Float64Array::from(vec![Some(1.0), None, None]))],
        Some(NullBuffer::from(vec![true, true, false])),
    )
    .expect("child");
    let st = StructArray::try_new(
        st_fields,
        vec![
            Arc::new(StringArray::from(vec![Some("x"), None, None])),
            Arc::new(child),
        ],
        Some(NullBuffer::from(vec![true, false, true])),
    )
    .expect("st");
    columns.push(Arc::new(st));

    // arr: list of nullable struct { f1, f2 }: [[{a,1}, null], null, []].
    let arr_item = item_field(data, "arr");
    let DataType::Struct(arr_struct) = arr_item.data_type() else {
        panic!("arr item")
    };
    let items = StructArray::try_new(
        arr_struct.clone(),
        vec![
            Arc::new(StringArray::from(vec![Some("a"), None])),
            Arc::new(Int32Array::from(vec![Some(1), None])),
        ],
        Some(NullBuffer::from(vec![true, false])),
    )
    .expect("arr items");
    let arr = ListArray::try_new(
        arr_item,
        OffsetBuffer::new(vec![0, 2, 2, 2].into()),
        Arc::new(items),
        Some(NullBuffer::from(vec![true, false, true])),
    )
    .expect("arr");
    columns.push(Arc::new(arr));

    // longs: list of required long: [[1,2], [], [3]].
    let longs = ListArray::try_new(
        item_field(data, "longs"),
        OffsetBuffer::new(vec![0, 2, 2, 3].into()),
        Arc::new(Int64Array::from(vec![1, 2, 3])),
        None,
    )
    .expect("longs");
    columns.push(Arc::new(longs));

    // m: map string → nullable struct { v }: [{k1: {1.5}, k2: null}, null, {}].
    let DataType::Map(m_entries, _) = data.field_with_name("m").expect("m").data_type() else {
        panic!("m")
    };
    let DataType::Struct(m_kv) = m_entries.data_type() else {
        panic!("m entries")
    };
    let DataType::Struct(m_value) = m_kv[1].data_type() else {
        panic!("m value")
    };
    let values = StructArray::try_new(
        m_value.clone(),
        vec![Arc::new(Float64Array::from(vec![Some(1.5), None]))],
        Some(NullBuffer::from(vec![true, false])),
    )
    .expect("m values");
    let entries = StructArray::try_new(
        m_kv.clone(),
        vec![
            Arc::new(StringArray::from(vec!["k1", "k2"])),
            Arc::new(values),
        ],
        None,
    )
    .expect("m entries");
    let m = MapArray::try_new(
        m_entries.clone(),
        OffsetBuffer::new(vec![0, 2, 2, 2].into()),
        entries,
        Some(NullBuffer::from(vec![true, false, true])),
        false,
    )
    .expect("m");
    columns.push(Arc::new(m));

    // mi: map string → nullable int, built with the builder and the schema's field names.
    let DataType::Map(mi_entries, _) = data.field_with_name("mi").expect("mi").data_type() else {
        panic!("mi")
    };
    let DataType::Struct(mi_kv) = mi_entries.data_type() else {
        panic!("mi entries")
    };
    let mut builder = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new())
        .with_keys_field(mi_kv[0].clone())
        .with_values_field(mi_kv[1].clone());
    builder.keys().append_value("a");
    builder.values().append_value(1);
    builder.keys().append_value("b");
    builder.values().append_null();
    builder.append(true).expect("row 0");
    builder.append(true).expect("row 1");
    builder.keys().append_value("c");
    builder.values().append_value(3);
    builder.append(true).expect("row 2");
    let mi = builder.finish();
    // The builder names the entries "entries"; rebuild with the schema's entries field.
    let (_, offsets, entries, nulls, sorted) = mi.into_parts();
    columns.push(Arc::new(
        MapArray::try_new(mi_entries.clone(), offsets, entries, nulls, sorted).expect("mi"),
    ));

    RecordBatch::try_new(schema.clone(), columns).expect("batch matches the schema")
}

fn leaf<'d>(descr: &'d SchemaDescriptor, path: &str) -> &'d ColumnDescPtr {
    descr
        .columns()
        .iter()
        .find(|c| c.path().string() == path)
        .unwrap_or_else(|| panic!("no column {path}"))
}

#[test]
fn every_type_round_trips_through_parquet_with_parquet_avro_types() {
    let avro = AvroSchema::parse(ALL_TYPES).expect("parses");
    meta::check_user_schema(&avro).expect("a valid user schema");
    let data = avro_to_arrow(&avro).expect("maps to Arrow");
    let mut fields = meta::arrow_fields();
    fields.extend(data.fields().iter().map(|f| f.as_ref().clone()));
    let file_schema = Arc::new(Schema::new(fields));
    let batch = all_types_batch(&file_schema, &data);

    let descr = parquet_schema_for(&file_schema, &with_meta_fields(&avro)).expect("parquet schema");
    let options = ArrowWriterOptions::new().with_parquet_schema(descr);
    let mut writer = ArrowWriter::try_new_with_options(Vec::new(), file_schema.clone(), options)
        .expect("writer");
    writer.write(&batch).expect("write");
    let bytes = bytes::Bytes::from(writer.into_inner().expect("close"));

    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.clone()).expect("reader");
    let written = builder.metadata().file_metadata().schema_descr_ptr();
    let read: Vec<RecordBatch> = builder
        .build()
        .expect("build")
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].schema().fields(), file_schema.fields());
    assert_eq!(read[0].columns(), batch.columns());
    assert_eq!(read[0].num_rows(), 3);

    // Physical and logical types as parquet-avro writes them for this Avro schema.
    let check = |path: &str,
                 physical: PhysicalType,
                 length: i32,
                 logical: Option<LogicalType>,
                 rep: Repetition| {
        let c = leaf(&written, path);
        assert_eq!(c.physical_type(), physical, "{path}");
        if physical == PhysicalType::FIXED_LEN_BYTE_ARRAY {
            assert_eq!(c.type_length(), length, "{path}");
        }
        assert_eq!(c.logical_type_ref(), logical.as_ref(), "{path}");
        assert_eq!(c.self_type().get_basic_info().repetition(), rep, "{path}");
    };
    use PhysicalType::*;
    const OPTIONAL: Repetition = Repetition::OPTIONAL;
    const REQUIRED: Repetition = Repetition::REQUIRED;
    check(
        "_hoodie_record_key",
        BYTE_ARRAY,
        0,
        Some(LogicalType::String),
        OPTIONAL,
    );
    check("id", INT32, 0, None, REQUIRED);
    check("name", BYTE_ARRAY, 0, Some(LogicalType::String), OPTIONAL);
    check("bin", BYTE_ARRAY, 0, None, OPTIONAL);
    check("fx", FIXED_LEN_BYTE_ARRAY, 4, None, REQUIRED);
    check("en", BYTE_ARRAY, 0, Some(LogicalType::String), REQUIRED);
    check(
        "dec",
        FIXED_LEN_BYTE_ARRAY,
        5,
        Some(LogicalType::decimal(5, 10)),
        OPTIONAL,
    );
    check(
        "bdec",
        FIXED_LEN_BYTE_ARRAY,
        9,
        Some(LogicalType::decimal(2, 20)),
        REQUIRED,
    );
    check(
        "wide",
        FIXED_LEN_BYTE_ARRAY,
        16,
        Some(LogicalType::decimal(6, 38)),
        REQUIRED,
    );
    check("date", INT32, 0, Some(LogicalType::Date), OPTIONAL);
    check(
        "tms",
        INT32,
        0,
        Some(LogicalType::time(true, TimeUnit::MILLIS)),
        REQUIRED,
    );
    check(
        "tus",
        INT64,
        0,
        Some(LogicalType::time(true, TimeUnit::MICROS)),
        REQUIRED,
    );
    check(
        "tsms",
        INT64,
        0,
        Some(LogicalType::timestamp(true, TimeUnit::MILLIS)),
        REQUIRED,
    );
    check(
        "ts",
        INT64,
        0,
        Some(LogicalType::timestamp(true, TimeUnit::MICROS)),
        OPTIONAL,
    );
    check(
        "lts",
        INT64,
        0,
        Some(LogicalType::timestamp(false, TimeUnit::MICROS)),
        REQUIRED,
    );
    check("st.child.x", DOUBLE, 0, None, OPTIONAL);
    check("arr.list.element.f2", INT32, 0, None, OPTIONAL);
    check("longs.list.element", INT64, 0, None, REQUIRED);
    check(
        "m.key_value.key",
        BYTE_ARRAY,
        0,
        Some(LogicalType::String),
        REQUIRED,
    );
    check("m.key_value.value.v", DOUBLE, 0, None, OPTIONAL);
    check("mi.key_value.value", INT32, 0, None, OPTIONAL);
    assert_eq!(written.root_schema().name(), "hoodie.all.all_record");

    // Control: without our Parquet schema arrow-rs stores decimal(10,5) as INT64, not Spark's FIXED(5).
    let mut plain = ArrowWriter::try_new(Vec::new(), file_schema.clone(), None).expect("writer");
    plain.write(&batch).expect("write");
    let plain = bytes::Bytes::from(plain.into_inner().expect("close"));
    let plain = ParquetRecordBatchReaderBuilder::try_new(plain).expect("reader");
    assert_eq!(
        leaf(plain.metadata().file_metadata().schema_descr(), "dec").physical_type(),
        INT64
    );
    // Every Arrow column is used, so a forgotten type would have failed above.
    assert!(batch.columns().iter().all(|c| c.len() == 3));
}
