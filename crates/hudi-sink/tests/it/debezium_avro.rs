//! Debezium change events as registry-framed Avro through every way the registry layer finds a writer
//! schema: Glue framing (plain and zlib) against moto's Glue Schema Registry, Confluent framing against the
//! stub registry (its base URL, no subject), and the event source mapping's `valueSchemaMetadata` (the
//! framing already removed). Datums are written by fastavro; the table, started from the Envelope schema
//! file, is read back by hudi-rs 0.5.0 and compared row for row with the payload's ordering.

use std::collections::BTreeMap;

use hudi_sink::bootstrap::build_sink;
use serde_json::{json, Map, Value};

use crate::avro_registry::{batch_at, encode, table_rows, StubRegistry};

fn envelope() -> Value {
    json!({"type":"record","name":"Envelope","namespace":"pg.public.items",
        "connect.name":"pg.public.items.Envelope","fields":[
        {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
            {"name":"uuid","type":"string"},{"name":"city","type":"string"},
            {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":20,"scale":2,
                "connect.name":"org.apache.kafka.connect.data.Decimal"}],"default":null},
            {"name":"seen","type":[{"type":"long","connect.name":"io.debezium.time.MicroTimestamp"},"null"],
                "default":0}]}],"default":null},
        {"name":"after","type":["null","Value"],"default":null},
        {"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql",
            "fields":[{"name":"name","type":"string"},{"name":"ts_ms","type":"long"},
                {"name":"schema","type":"string"},{"name":"txId","type":["null","long"],"default":null},
                {"name":"lsn","type":["null","long"],"default":null}]}},
        {"name":"op","type":"string"},
        {"name":"ts_ms","type":["null","long"],"default":null}]})
}

/// One event: its datum, and the row it leaves (meta columns first) when it wins.
fn event(op: &str, uuid: &str, price: Option<&str>, lsn: i64) -> (Value, Map<String, Value>) {
    let image = json!({"uuid":uuid,"city":"oslo","price":price,"seen":lsn * 1000});
    let (before, after) = match op {
        "d" => (image.clone(), Value::Null),
        _ => (Value::Null, image.clone()),
    };
    let datum = json!({"before":before,"after":after,
        "source":{"name":"pg","ts_ms":lsn + 1,"schema":"public","txId":lsn / 10,"lsn":lsn},
        "op":op,"ts_ms":lsn + 2});
    // hudi_read.py renders a decimal as its unscaled integer's text.
    let unscaled = price.map(|p| p.replace('.', "").trim_start_matches('0').to_string());
    let row = json!({"_change_operation_type":op,"_upstream_event_processed_ts_ms":lsn + 2,
        "db_shard_source_partition":"pg","db_schema_source_partition":"public",
        "_event_origin_ts_ms":lsn + 1,"_event_tx_id":lsn / 10,"_event_lsn":lsn,"_event_xmin":null,
        "uuid":uuid,"city":"oslo","price":unscaled,"seen":lsn * 1000});
    (datum, row.as_object().cloned().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debezium_avro_reads_glue_confluent_and_esm_metadata_values() {
    let moto = crate::common::moto::moto();
    std::env::set_var("AWS_ENDPOINT_URL_GLUE", &moto.endpoint);
    let glue = aws_sdk_glue::Client::new(&crate::common::moto::sdk_config().await);
    let registry_name = crate::common::moto::unique_name("dbz");
    glue.create_registry()
        .registry_name(&registry_name)
        .send()
        .await
        .expect("create registry");
    let created = glue
        .create_schema()
        .registry_id(
            aws_sdk_glue::types::RegistryId::builder()
                .registry_name(&registry_name)
                .build(),
        )
        .schema_name("pg.public.items-value")
        .data_format(aws_sdk_glue::types::DataFormat::Avro)
        .compatibility(aws_sdk_glue::types::Compatibility::None)
        .schema_definition(envelope().to_string())
        .send()
        .await
        .expect("create schema");
    let version = created.schema_version_id().expect("version id").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let stub = StubRegistry::start(&dir.path().join("registry"));
    stub.put(1, &envelope());

    let esm = json!({"dataFormat":"AVRO","schemaId":"1"});
    let events = [
        ("a", "c", Some("1.05"), 100, format!("glue:{version}"), None),
        (
            "b",
            "c",
            Some("7.50"),
            110,
            format!("glue-zlib:{version}"),
            None,
        ),
        (
            "a",
            "u",
            Some("123456789012345678.91"),
            120,
            "confluent:1".to_string(),
            None,
        ),
        (
            "b",
            "d",
            Some("7.50"),
            130,
            "bare".into(),
            Some(esm.clone()),
        ),
        ("c", "r", None, 90, "bare".into(), Some(esm)),
        // Older than the stored version of `a`: ignored.
        ("a", "u", Some("0.01"), 115, "confluent:1".into(), None),
    ];
    let mut model: BTreeMap<String, (i64, Option<Map<String, Value>>)> = BTreeMap::new();
    let mut records = Vec::new();
    for (uuid, op, price, lsn, framing, metadata) in &events {
        let (datum, row) = event(op, uuid, *price, *lsn);
        let mut record =
            json!({"key":uuid,"schema":"e","framing":framing,"datum":datum,"expect":false});
        if let Some(m) = metadata {
            record["metadata"] = m.clone();
        }
        records.push(record);
        if model.get(*uuid).is_none_or(|(stored, _)| lsn >= stored) {
            let row = (*op != "d").then_some(row);
            model.insert(uuid.to_string(), (*lsn, row));
        }
    }
    let expected: BTreeMap<String, Map<String, Value>> = model
        .into_iter()
        .filter_map(|(k, (_, row))| row.map(|r| (k, r)))
        .collect();
    let (values, _) = encode(
        dir.path(),
        &json!({"table":envelope(),"schemas":{"e":envelope()},"records":records}),
    );

    let schema_file = dir.path().join("items.avsc");
    std::fs::write(&schema_file, envelope().to_string()).expect("schema file");
    let props: BTreeMap<String, String> = [
        (
            "hoodie.base.path",
            dir.path().join("items").display().to_string(),
        ),
        ("hoodie.table.name", "items".into()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file",
            schema_file.display().to_string(),
        ),
        (
            "hoodie.streamer.schemaprovider.registry.url",
            format!("http://127.0.0.1:{}", stub.port),
        ),
        ("hoodie.datasource.write.recordkey.field", "uuid".into()),
        ("hoodie.datasource.write.partitionpath.field", "city".into()),
        ("hoodie.index.type", "BUCKET".into()),
        ("hoodie.bucket.index.num.buckets", "2".into()),
        ("hudi.sink.value.format", "debezium".into()),
        ("hudi.sink.debezium.connector", "postgres".into()),
        // Deletes carry whole rows (partitioned by `city`, keyed by `uuid`).
        ("hudi.sink.debezium.replica.identity", "full".into()),
        ("hudi.sink.commit.interval.ms", "0".into()),
        (
            "hudi.sink.dead.letter.path",
            dir.path().join("dead").display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let sink = build_sink(&props, "debezium-avro-test")
        .await
        .expect("sink");
    // One event per batch, in order, so that the update of `a` meets the stored create.
    for (offset, value) in values.iter().enumerate() {
        let report = sink
            .process(batch_at(std::slice::from_ref(value), offset as i64))
            .await
            .expect("process");
        assert_eq!(report.dead_lettered, 0, "{offset}: {report:?}");
    }
    assert_eq!(table_rows(&dir.path().join("items")), expected);
}
