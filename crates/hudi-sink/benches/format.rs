//! Micro-benchmarks of the format core's hot paths: bloom filter, key generation and bucket ids, and the
//! base-file writer. Run with `make bench`; numbers go to docs/performance.md. No timing is
//! asserted anywhere.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use hudi_sink::base_file::bloom::BloomFilter;
use hudi_sink::base_file::writer::{BaseFileOptions, BaseFileWriter};
use hudi_sink::index::bucket::BucketIndexConfig;
use hudi_sink::record::keygen::{KeyGenConfig, KeyGenerator};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::write::TableSchema;

const ROWS: usize = 10_000;

const SCHEMA: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
 {"name":"uuid","type":"string"},{"name":"ts","type":"long"},
 {"name":"rider","type":["null","string"],"default":null},{"name":"fare","type":["null","double"],"default":null},
 {"name":"city","type":"string"}]}"#;

fn keys() -> Vec<String> {
    (0..ROWS)
        .map(|i| format!("{:08x}-trip-{i}", i * 2_654_435_761usize))
        .collect()
}

fn data_batch(schema: &TableSchema) -> RecordBatch {
    let cities = ["san_francisco", "sao_paulo", "chennai", "amsterdam"];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(keys())),
        Arc::new(Int64Array::from_iter_values(
            (0..ROWS as i64).map(|i| 1_700_000_000_000 + i),
        )),
        Arc::new(StringArray::from_iter_values(
            (0..ROWS).map(|i| format!("rider-{}", i % 977)),
        )),
        Arc::new(Float64Array::from_iter_values(
            (0..ROWS).map(|i| i as f64 * 0.37),
        )),
        Arc::new(StringArray::from_iter_values(
            (0..ROWS).map(|i| cities[i % 4]),
        )),
    ];
    RecordBatch::try_new(schema.data.clone(), columns).expect("batch")
}

fn bench_bloom(c: &mut Criterion) {
    let keys = keys();
    let mut g = c.benchmark_group("bloom");
    g.throughput(Throughput::Elements(ROWS as u64));
    g.bench_function("add_10k_keys_dynamic_v0", |b| {
        b.iter_batched(
            BloomFilter::hudi_default,
            |mut f| {
                for k in &keys {
                    f.add(k.as_bytes()).expect("non-empty key");
                }
                f
            },
            BatchSize::LargeInput,
        )
    });
    let mut filled = BloomFilter::hudi_default();
    for k in &keys {
        filled.add(k.as_bytes()).expect("non-empty key");
    }
    g.bench_function("might_contain_10k", |b| {
        b.iter(|| {
            keys.iter()
                .filter(|k| filled.might_contain(k.as_bytes()))
                .count()
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("to_base64", |b| b.iter(|| black_box(filled.to_base64())));
    g.finish();
}

fn bench_keys(c: &mut Criterion) {
    let schema =
        TableSchema::try_new(AvroSchema::parse(SCHEMA).expect("schema")).expect("table schema");
    let batch = data_batch(&schema);
    let mut g = c.benchmark_group("keys");
    g.throughput(Throughput::Elements(ROWS as u64));
    for (name, key_fields, hive) in [
        ("simple", "uuid", "true"),
        ("complex", "uuid,rider", "false"),
    ] {
        let props: BTreeMap<String, String> = [
            ("hoodie.datasource.write.recordkey.field", key_fields),
            ("hoodie.datasource.write.partitionpath.field", "city"),
            ("hoodie.datasource.write.hive_style_partitioning", hive),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let keygen = KeyGenerator::try_new(
            KeyGenConfig::from_properties(&props).expect("config"),
            &schema.data,
        )
        .expect("keygen");
        g.bench_function(format!("record_key_and_partition_{name}"), |b| {
            let mut key = String::new();
            let mut part = String::new();
            b.iter(|| {
                for row in 0..ROWS {
                    key.clear();
                    part.clear();
                    keygen.record_key(&batch, row, &mut key).expect("key");
                    keygen
                        .partition_path(&batch, row, &mut part)
                        .expect("partition");
                }
                black_box((&key, &part));
            })
        });
    }
    let index = BucketIndexConfig::try_new(256, vec![], &["uuid".to_string()]).expect("index");
    let keys = keys();
    g.bench_function("bucket_id_256", |b| {
        b.iter(|| keys.iter().map(|k| index.bucket_id(k) as u64).sum::<u64>())
    });
    g.finish();
}

fn bench_base_file(c: &mut Criterion) {
    let schema =
        TableSchema::try_new(AvroSchema::parse(SCHEMA).expect("schema")).expect("table schema");
    let data = data_batch(&schema);
    let n = data.num_rows();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            "20260101000000000",
            n,
        ))),
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("20260101000000000_0_{i}")),
        )),
        data.column(0).clone(),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            "city=x", n,
        ))),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            "f.parquet",
            n,
        ))),
    ];
    columns.extend(data.columns().iter().cloned());
    let batch = RecordBatch::try_new(schema.file.clone(), columns).expect("file batch");
    let mut g = c.benchmark_group("base_file");
    g.throughput(Throughput::Elements(n as u64));
    for codec in ["snappy", "gzip", "zstd"] {
        let options = BaseFileOptions {
            codec: codec.parse().expect("codec"),
            ..BaseFileOptions::default()
        };
        g.bench_function(format!("write_10k_rows_{codec}"), |b| {
            b.iter(|| {
                let mut w = BaseFileWriter::try_new(
                    schema.file.clone(),
                    schema.parquet.clone(),
                    schema.avro_with_meta_json.clone(),
                    &options,
                )
                .expect("writer");
                w.write(&batch).expect("write");
                black_box(w.finish().expect("finish").data.len())
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_bloom, bench_keys, bench_base_file
}
criterion_main!(benches);
