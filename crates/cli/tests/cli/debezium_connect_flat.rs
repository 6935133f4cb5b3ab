//! Rows flattened by `ExtractNewRecordState` (`add.fields=op,lsn,source.ts_ms`,
//! `delete.tombstone.handling.mode=rewrite-with-tombstone`) with their Connect schema and no schema file: the
//! table is created from the row struct without its `__` fields, which become the meta columns; read back with
//! hudi-rs row for row against the model.

use serde_json::{json, Map, Value};

use crate::common::*;
use crate::debezium_connect::{assert_rows, base64_decimal, model, read_rows, write_events, Event};

/// The flattened row's Connect schema.
fn flat_schema() -> Value {
    let field =
        |name: &str, ty: &str, optional: bool| json!({"field":name,"type":ty,"optional":optional});
    json!({"type":"struct","optional":false,"name":"pg.public.customers.Value","fields":[
        field("id","int32",false), field("region","string",false),
        {"field":"price","type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",
         "version":1,"parameters":{"scale":"3","connect.decimal.precision":"18"}},
        {"field":"updated_at","type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1},
        field("__op","string",true), field("__lsn","int64",true), field("__source_ts_ms","int64",true),
        field("__deleted","string",true)]})
}

fn flat_stream() -> Vec<Event> {
    let mut events = Vec::new();
    let mut live: std::collections::BTreeMap<i64, Map<String, Value>> = Default::default();
    let mut lsn = 5_000i64;
    for i in 0..48i64 {
        lsn += 17 + (i * 7) % 13;
        let key = 1 + (i * 5) % 9;
        let op = match (live.contains_key(&key), i % 4) {
            (false, _) if i < 9 => "r",
            (false, _) => "c",
            (true, 3) => "d",
            (true, _) => "u",
        };
        let unscaled = (i * 7_919_113 - 170_000_000) * if i % 2 == 0 { 1 } else { -1 };
        let region = ["eu", "us"][(key % 2) as usize];
        let image = match op {
            "d" => live.remove(&key).unwrap_or_default(),
            _ => json!({"id": key, "region": region,
                        "price": base64_decimal(unscaled), "updated_at": 1_718_000_000_000_000i64 + i})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        };
        let ts = 1_718_000_000_000i64 + i * 1000;
        let mut payload = image.clone();
        payload.insert("__op".into(), op.into());
        payload.insert("__lsn".into(), lsn.into());
        payload.insert("__source_ts_ms".into(), ts.into());
        payload.insert("__deleted".into(), (op == "d").to_string().into());
        let value = json!({"schema": flat_schema(), "payload": payload});
        let mut row = Map::new();
        for (k, v) in [
            ("_change_operation_type", Value::from(op)),
            ("_upstream_event_processed_ts_ms", Value::Null),
            ("db_shard_source_partition", Value::Null),
            ("db_schema_source_partition", Value::Null),
            ("_event_origin_ts_ms", ts.into()),
            ("_event_tx_id", Value::Null),
            ("_event_lsn", lsn.into()),
            ("_event_xmin", Value::Null),
        ] {
            row.insert(k.into(), v);
        }
        row.extend(image.clone());
        row.insert("price".into(), unscaled.to_string().into());
        if op == "d" {
            events.push(Event {
                key,
                value: Some(value),
                effect: Some((None, (lsn, 0))),
            });
            events.push(Event {
                key,
                value: None,
                effect: None,
            });
        } else {
            live.insert(key, image);
            events.push(Event {
                key,
                value: Some(value),
                effect: Some((Some(row), (lsn, 0))),
            });
        }
    }
    events
}

#[test]
fn extract_new_record_state_rows_with_their_connect_schema_create_the_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = flat_stream();
    let mut expected = model(&events);
    for row in expected.values_mut() {
        row.remove("phone");
    }
    assert!(expected.len() > 4, "a model with rows");
    for table_type in ["COPY_ON_WRITE", "MERGE_ON_READ"] {
        let event_dir = dir.path().join(format!("{table_type}-events"));
        write_events(&event_dir, &events, 12);
        let table = dir.path().join(table_type);
        let out = ingest_one_instant_per_file(
            &table,
            &event_dir,
            table_type,
            &[
                "hudi.sink.value.format=debezium",
                "hudi.sink.debezium.connector=postgres",
                "hudi.sink.debezium.replica.identity=full",
                "hoodie.streamer.schemaprovider.source.schema.file=",
                "hoodie.datasource.write.recordkey.field=id",
                "hoodie.datasource.write.partitionpath.field=region",
                "hoodie.datasource.write.precombine.field=",
                // The deletes carry whole rows (partitioned by `region`, keyed by `id`).
                "hudi.sink.debezium.replica.identity=full",
            ],
        );
        assert_eq!(
            number_after(&out, "dead-lettered "),
            0,
            "{table_type}: {out}"
        );
        assert_rows(&read_rows(&table), &expected, table_type);
    }
}
