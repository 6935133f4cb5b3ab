//! The timeline's Avro container codec against a Spark-written file: the `replacecommit.requested` of the
//! insert-overwrite golden table (`v6_simplekeygen_nonhivestyle_overwritetable`, Hudi 0.14 writer schema).

use std::collections::BTreeMap;

use hudi_sink::avro::{decode_container, encode_container, AvroValue, SchemaGraph};
use hudi_sink::table::records::RequestedReplaceMetadata;

use crate::common;

const REQUESTED: &str = ".hoodie/20240707001303088.replacecommit.requested";

fn spark_file() -> Vec<u8> {
    let table = common::golden_table("v6_simplekeygen_nonhivestyle_overwritetable");
    std::fs::read(table.path.join(REQUESTED)).expect("read the requested file")
}

#[test]
fn spark_requested_replace_decodes() {
    let bytes = spark_file();
    let (schema, value) = decode_container(&bytes).expect("decodes");
    assert_eq!(
        SchemaGraph::parse(&schema)
            .expect("writer schema")
            .full_name(),
        Some("org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata")
    );
    // Spark's writer schema has the 0.14 plan fields (no missingSchedulePartitions yet).
    assert!(schema.contains(r#""name":"preserveHoodieMetadata""#));
    assert!(!schema.contains("missingSchedulePartitions"));
    let null = || AvroValue::Union(0, Box::new(AvroValue::Null));
    assert_eq!(
        value,
        AvroValue::record([
            ("operationType", null()),
            ("clusteringPlan", null()),
            ("extraMetadata", null()),
            // Spark leaves even the version null here (branch 1 of ["int","null"]).
            ("version", AvroValue::Union(1, Box::new(AvroValue::Null))),
        ])
    );
    assert_eq!(
        RequestedReplaceMetadata::from_avro_bytes(&bytes).expect("typed"),
        RequestedReplaceMetadata {
            operation_type: String::new(),
            clustering_plan: None,
            extra_metadata: BTreeMap::new(),
            // A null version reads as the schema default.
            version: 1,
        }
    );
}

#[test]
fn encoder_writes_the_bytes_java_wrote() {
    let spark = spark_file();
    let (schema, value) = decode_container(&spark).expect("decodes");
    let mut ours = encode_container(&schema, &value).expect("encodes");
    assert_eq!(ours.len(), spark.len());
    // Only the random sync marker (after the header and at the end) may differ.
    let sync = &spark[spark.len() - 16..];
    let ours_sync = ours[ours.len() - 16..].to_vec();
    let mut replaced = 0;
    for i in 0..=ours.len() - 16 {
        if ours[i..i + 16] == ours_sync[..] {
            ours[i..i + 16].copy_from_slice(sync);
            replaced += 1;
        }
    }
    assert_eq!(replaced, 2);
    assert_eq!(ours, spark);
}
