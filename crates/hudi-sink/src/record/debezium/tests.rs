use serde_json::{json, Value};

use super::*;
use crate::schema::avro::AvroSchema;

/// The flattened row as a JSON value (members in order), and whether it deletes.
fn row(connector: Connector, value: &str) -> (Value, bool) {
    match flatten(connector, value.as_bytes()) {
        Ok(Flattened::Row { json, delete, .. }) => (
            serde_json::from_slice(&json).expect("flattened JSON"),
            delete,
        ),
        other => panic!("expected a row, got {other:?}"),
    }
}

fn pg_source(lsn: Value) -> Value {
    json!({"version":"2.7.3.Final","connector":"postgresql","name":"pg","ts_ms":1718000005000i64,
           "snapshot":"false","db":"shop","sequence":"[\"24023119\",\"24023128\"]","schema":"public",
           "table":"customers","txId":556,"lsn":lsn,"xmin":null})
}

fn mysql_source(file: &str, pos: i64) -> Value {
    json!({"version":"2.7.3.Final","connector":"mysql","name":"mysql1","ts_ms":1718000005000i64,
           "snapshot":"false","db":"inventory","sequence":null,"table":"customers","server_id":223344,
           "gtid":null,"file":file,"pos":pos,"row":0,"thread":7,"query":null})
}

fn pg_meta(op: &str, lsn: Value) -> Value {
    json!({"_change_operation_type":op,"_upstream_event_processed_ts_ms":1718000005123i64,
           "db_shard_source_partition":"pg","db_schema_source_partition":"public",
           "_event_origin_ts_ms":1718000005000i64,"_event_tx_id":556,"_event_lsn":lsn,"_event_xmin":null})
}

/// `meta` followed by `fields`, as one object in that order.
fn joined(meta: Value, fields: Value) -> Value {
    let mut out = meta.as_object().cloned().expect("object");
    for (k, v) in fields.as_object().cloned().expect("object") {
        out.insert(k, v);
    }
    Value::Object(out)
}

#[test]
fn postgres_envelopes_flatten_after_for_c_u_r_and_before_for_d() {
    let before = json!({"id":1004,"first_name":"Anne","price":"AJw="});
    let after = json!({"id":1004,"first_name":"Anne Marie","price":"B88="});
    for op in ["c", "u", "r"] {
        let event = json!({"before":before,"after":after,"source":pg_source(json!(24023128)),
                           "transaction":null,"op":op,"ts_ms":1718000005123i64,"ts_us":1718000005123456i64});
        let (got, delete) = row(Connector::Postgres, &event.to_string());
        assert_eq!(
            got,
            joined(pg_meta(op, json!(24023128)), after.clone()),
            "op {op}"
        );
        assert!(!delete);
        // Member order: the meta columns first, then the row image's.
        let keys: Vec<&str> = got
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(&keys[..8], Connector::Postgres.meta_columns());
        assert_eq!(&keys[8..], ["id", "first_name", "price"]);
    }
    let event = json!({"before":before,"after":null,"source":pg_source(json!(46523128)),"op":"d",
                       "ts_ms":1718000005123i64});
    let (got, delete) = row(Connector::Postgres, &event.to_string());
    assert_eq!(got, joined(pg_meta("d", json!(46523128)), before));
    assert!(delete);
}

#[test]
fn an_update_with_a_before_row_carries_that_row_as_a_delete() {
    let before = json!({"id":1004,"region":"eu","price":"AJw="});
    let after = json!({"id":1004,"region":"us","price":"B88="});
    let prior = |op: &str, before: &Value| {
        let event = json!({"before":before,"after":after,"source":pg_source(json!(24023128)),
                           "op":op,"ts_ms":1718000005123i64});
        match flatten(Connector::Postgres, event.to_string().as_bytes()) {
            Ok(Flattened::Row { prior, .. }) => {
                prior.map(|p| serde_json::from_slice::<Value>(&p).expect("prior JSON"))
            }
            other => panic!("expected a row, got {other:?}"),
        }
    };
    // The before image, with the update's source fields and op `d`: what a delete event of it would be.
    assert_eq!(
        prior("u", &before),
        Some(joined(pg_meta("d", json!(24023128)), before.clone()))
    );
    // No row image before (REPLICA IDENTITY DEFAULT), or an op that is not an update: nothing.
    assert_eq!(prior("u", &Value::Null), None);
    assert_eq!(prior("c", &before), None);
    assert_eq!(prior("r", &before), None);
}

#[test]
fn the_row_image_keeps_its_exact_number_text() {
    let event = r#"{"before":null,"after":{"id":1,"big":123456789012345678901234567890,"f":1.50},
        "source":{"name":"pg","schema":"public","ts_ms":1,"lsn":7},"op":"c","ts_ms":2}"#;
    let Ok(Flattened::Row { json, .. }) = flatten(Connector::Postgres, event.as_bytes()) else {
        panic!("row");
    };
    let text = String::from_utf8(json).expect("utf-8");
    assert!(
        text.ends_with(r#""id":1,"big":123456789012345678901234567890,"f":1.50}"#),
        "{text}"
    );
}

#[test]
fn mysql_envelopes_get_the_binlog_columns_and_the_sequence() {
    let after = json!({"id":1004,"first_name":"Anne Marie"});
    let event = json!({"before":null,"after":after,"source":mysql_source("mysql-bin.000003", 484),
                       "op":"u","ts_ms":1718000005523i64});
    let (got, delete) = row(Connector::MySql, &event.to_string());
    let meta = json!({"_change_operation_type":"u","_upstream_event_processed_ts_ms":1718000005523i64,
        "db_shard_source_partition":"mysql1","_event_origin_ts_ms":1718000005000i64,
        "_event_bin_file":"mysql-bin.000003","_event_pos":484,"_event_row":0,"_event_seq":"000003.484"});
    assert_eq!(got, joined(meta, after));
    assert!(!delete);
    let keys: Vec<String> = got.as_object().expect("object").keys().cloned().collect();
    assert_eq!(&keys[..8], Connector::MySql.meta_columns());
    // Without a binlog file (or with a negative position) the sequence is null, not an error.
    let mut source = mysql_source("", 5);
    source["file"] = Value::Null;
    let event = json!({"after":{"id":1},"source":source,"op":"r","ts_ms":1});
    let (got, _) = row(Connector::MySql, &event.to_string());
    assert_eq!(got["_event_seq"], Value::Null);
    assert_eq!(got["_event_bin_file"], Value::Null);
}

#[test]
fn an_event_without_an_lsn_gets_a_null_lsn() {
    // A Postgres incremental snapshot: source.lsn and txId are absent.
    let event = json!({"before":null,"after":{"id":1},"source":{"name":"pg","schema":"public",
        "ts_ms":5,"snapshot":"incremental"},"op":"r","ts_ms":6});
    let (got, delete) = row(Connector::Postgres, &event.to_string());
    assert_eq!(
        got,
        json!({"_change_operation_type":"r","_upstream_event_processed_ts_ms":6,
               "db_shard_source_partition":"pg","db_schema_source_partition":"public",
               "_event_origin_ts_ms":5,"_event_tx_id":null,"_event_lsn":null,"_event_xmin":null,"id":1})
    );
    assert!(!delete);
}

#[test]
fn the_connect_schema_form_is_unwrapped() {
    let payload = json!({"before":null,"after":{"id":7,"first_name":"x"},
                         "source":pg_source(json!(99)),"op":"c","ts_ms":1718000005123i64});
    let schema = json!({"type":"struct","name":"pg.public.customers.Envelope","optional":false,
                        "fields":[{"field":"op","type":"string","optional":false}]});
    let wrapped = json!({"schema":schema,"payload":payload}).to_string();
    assert_eq!(
        row(Connector::Postgres, &wrapped),
        row(Connector::Postgres, &payload.to_string())
    );
    // A tombstone under schemas.enable=true.
    assert_eq!(
        flatten(Connector::Postgres, br#"{"schema":null,"payload":null}"#),
        Ok(Flattened::Tombstone)
    );
    // An ExtractNewRecordState row wrapped the same way.
    let wrapped = json!({"schema":schema,"payload":{"id":3,"__op":"c","__lsn":5}}).to_string();
    let (got, _) = row(Connector::Postgres, &wrapped);
    assert_eq!(got["id"], json!(3));
    assert_eq!(got["_event_lsn"], json!(5));
}

#[test]
fn tombstones_are_recognised_in_every_spelling() {
    for value in [
        "",
        "null",
        "  null ",
        r#"{"schema":{"type":"struct"},"payload":null}"#,
    ] {
        assert_eq!(
            flatten(Connector::MySql, value.as_bytes()),
            Ok(Flattened::Tombstone),
            "{value:?}"
        );
    }
}

#[test]
fn extract_new_record_state_rows_map_their_added_fields() {
    // add.fields=op,table,lsn,source.ts_ms, delete.tombstone.handling.mode=rewrite
    let deleted = r#"{"id":1004,"first_name":"Anne Marie","price":"B88=","updated_at":1718000005000000,
        "__op":"d","__table":"customers","__lsn":46523128,"__source_ts_ms":1718000009000,"__deleted":"true"}"#;
    let (got, delete) = row(Connector::Postgres, deleted);
    assert_eq!(
        got,
        json!({"_change_operation_type":"d","_upstream_event_processed_ts_ms":null,
               "db_shard_source_partition":null,"db_schema_source_partition":null,
               "_event_origin_ts_ms":1718000009000i64,"_event_tx_id":null,"_event_lsn":46523128,
               "_event_xmin":null,"id":1004,"first_name":"Anne Marie","price":"B88=",
               "updated_at":1718000005000000i64})
    );
    assert!(delete);
    // `__deleted` alone marks a delete; "false" does not.
    let (got, delete) = row(Connector::Postgres, r#"{"id":1,"__deleted":"true"}"#);
    assert!(delete);
    assert_eq!(got["_change_operation_type"], json!("d"));
    let (got, delete) = row(Connector::Postgres, r#"{"id":1,"__deleted":"false"}"#);
    assert!(!delete);
    assert_eq!(got["_change_operation_type"], Value::Null);
    // MySQL source fields, under either spelling.
    let (got, _) = row(
        Connector::MySql,
        r#"{"id":2,"__op":"u","__ts_ms":9,"__source_file":"mysql-bin.000010","__pos":77,"__row":1,"__name":"m"}"#,
    );
    assert_eq!(
        got,
        json!({"_change_operation_type":"u","_upstream_event_processed_ts_ms":9,
               "db_shard_source_partition":"m","_event_origin_ts_ms":null,
               "_event_bin_file":"mysql-bin.000010","_event_pos":77,"_event_row":1,
               "_event_seq":"000010.77","id":2})
    );
}

#[test]
fn bad_events_are_refused_with_their_reason() {
    type Kind = fn(&DebeziumError) -> bool;
    let cases: [(&str, Kind, &str); 9] = [
        (
            "{not json",
            |e| matches!(e, DebeziumError::NotJson(_)),
            "not JSON",
        ),
        (
            "[1,2]",
            |e| matches!(e, DebeziumError::NotEnvelope(_)),
            "an array",
        ),
        (
            "42",
            |e| matches!(e, DebeziumError::NotEnvelope(_)),
            "a number",
        ),
        (
            r#"{"id":1,"name":"plain"}"#,
            |e| matches!(e, DebeziumError::NotEnvelope(_)),
            "neither",
        ),
        (
            r#"{"after":{"id":1},"source":{},"op":"t"}"#,
            |e| matches!(e, DebeziumError::UnknownOp(op) if op == "t"),
            "\"t\"",
        ),
        (
            r#"{"after":{"id":1},"source":{},"op":"x"}"#,
            |e| matches!(e, DebeziumError::UnknownOp(_)),
            "only c, u, r and d",
        ),
        (
            r#"{"before":null,"after":null,"source":{},"op":"d"}"#,
            |e| {
                matches!(
                    e,
                    DebeziumError::MissingImage {
                        field: "before",
                        ..
                    }
                )
            },
            "`before`, found null",
        ),
        (
            r#"{"after":{"id":1},"source":{},"op":"c","op":"d"}"#,
            |e| matches!(e, DebeziumError::NotJson(_)),
            "duplicate key",
        ),
        (
            r#"{"id":1,"__op":"z"}"#,
            |e| matches!(e, DebeziumError::UnknownOp(_)),
            "\"z\"",
        ),
    ];
    for (value, kind, says) in cases {
        let err = flatten(Connector::Postgres, value.as_bytes()).expect_err(value);
        assert!(kind(&err), "{value}: {err:?}");
        assert!(err.to_string().contains(says), "{value}: {err}");
    }
    let err = flatten(Connector::Postgres, &[0xff, 0xfe]).expect_err("bytes");
    assert!(matches!(err, DebeziumError::NotJson(_)));
    let err = flatten(
        Connector::Postgres,
        br#"{"before":null,"after":[1],"source":{},"op":"c"}"#,
    )
    .expect_err("array image");
    assert_eq!(
        err.to_string(),
        "op \"c\" needs an object in `after`, found an array"
    );
}

#[test]
fn the_table_schema_puts_the_meta_columns_first() {
    let row = AvroSchema::parse(
        r#"{"type":"record","name":"Value","fields":[{"name":"id","type":"int"},
           {"name":"_event_lsn","type":["null","long"],"default":null}]}"#,
    )
    .expect("row");
    let table = table_schema(Connector::Postgres, &row).expect("table");
    assert_eq!(
        table.to_json_string(),
        r#"{"type":"record","name":"Value","fields":[{"name":"_change_operation_type","type":["null","string"],"default":null},{"name":"_upstream_event_processed_ts_ms","type":["null","long"],"default":null},{"name":"db_shard_source_partition","type":["null","string"],"default":null},{"name":"db_schema_source_partition","type":["null","string"],"default":null},{"name":"_event_origin_ts_ms","type":["null","long"],"default":null},{"name":"_event_tx_id","type":["null","long"],"default":null},{"name":"_event_xmin","type":["null","long"],"default":null},{"name":"id","type":"int"},{"name":"_event_lsn","type":["null","long"],"default":null}]}"#
    );
    assert_eq!(
        table_schema(Connector::Postgres, &table).expect("again"),
        table
    );
    // A whole Envelope schema: its row record is taken.
    let envelope = AvroSchema::parse(
        r#"{"type":"record","name":"Envelope","namespace":"pg.public.t","fields":[
          {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"int"}]}],"default":null},
          {"name":"after","type":["null","Value"],"default":null},
          {"name":"source","type":{"type":"record","name":"Source","fields":[{"name":"lsn","type":["null","long"]}]}},
          {"name":"op","type":"string"}]}"#,
    )
    .expect("envelope");
    let table = table_schema(Connector::MySql, &envelope).expect("table");
    let AvroSchema::Record(record) = &table else {
        panic!("record");
    };
    let names: Vec<&str> = record.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "_change_operation_type",
            "_upstream_event_processed_ts_ms",
            "db_shard_source_partition",
            "_event_origin_ts_ms",
            "_event_bin_file",
            "_event_pos",
            "_event_row",
            "_event_seq",
            "id"
        ]
    );
    let data = crate::schema::arrow::avro_to_arrow(&table).expect("arrow");
    check_table(Connector::MySql, &data).expect("complete");
    let err = check_table(Connector::Postgres, &data).expect_err("a MySQL table");
    assert!(err.contains("db_schema_source_partition"), "{err}");
}
