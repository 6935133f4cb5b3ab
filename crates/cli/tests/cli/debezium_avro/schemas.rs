//! Debezium's Avro value schemas as the AvroConverter registers them (record names, `connect.*`
//! annotations, unions in both branch orders), for the two connectors.

use serde_json::{json, Value};

use super::{Db, V1, V2};

/// The table's `Value` record: version 2 adds the nullable `note`. `amount` is a decimal(22, 4) (bytes, as
/// the AvroConverter writes Connect's Decimal), `updated_at` a MicroTimestamp long whose union puts `null`
/// second (a column with a database default), `born` a Debezium Date int.
pub(super) fn value_record(db: Db, version: i32) -> Value {
    let mut fields = vec![
        json!({"name":"uuid","type":"string"}),
        json!({"name":"city","type":"string"}),
        json!({"name":"name","type":["null","string"],"default":null}),
        json!({"name":"amount","type":["null",{"type":"bytes","scale":4,"precision":22,
            "connect.version":1,"connect.parameters":{"scale":"4","connect.decimal.precision":"22"},
            "connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}],"default":null}),
        json!({"name":"updated_at","type":[{"type":"long","connect.version":1,"connect.default":0,
            "connect.name":"io.debezium.time.MicroTimestamp"},"null"],"default":0}),
        json!({"name":"born","type":["null",{"type":"int","connect.version":1,
            "connect.name":"io.debezium.time.Date"}],"default":null}),
    ];
    if version == V2 {
        fields.push(json!({"name":"note","type":["null","string"],"default":null}));
    }
    json!({"type":"record","name":"Value","connect.name":format!("{}.Value", namespace(db)),
        "fields":fields})
}

pub(super) fn namespace(db: Db) -> &'static str {
    match db {
        Db::Postgres => "pg.public.customers",
        Db::MySql => "mysql1.inventory.customers",
    }
}

fn source_record(db: Db) -> Value {
    let snapshot = json!({"name":"snapshot","type":[{"type":"string","connect.version":1,
        "connect.parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
        "connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"});
    let common = vec![
        json!({"name":"version","type":"string"}),
        json!({"name":"connector","type":"string"}),
        json!({"name":"name","type":"string"}),
        json!({"name":"ts_ms","type":"long"}),
        snapshot,
        json!({"name":"db","type":"string"}),
        json!({"name":"sequence","type":["null","string"],"default":null}),
        json!({"name":"ts_us","type":["null","long"],"default":null}),
        json!({"name":"ts_ns","type":["null","long"],"default":null}),
    ];
    let (ns, own) = match db {
        Db::Postgres => (
            "io.debezium.connector.postgresql",
            vec![
                json!({"name":"schema","type":"string"}),
                json!({"name":"table","type":"string"}),
                json!({"name":"txId","type":["null","long"],"default":null}),
                json!({"name":"lsn","type":["null","long"],"default":null}),
                json!({"name":"xmin","type":["null","long"],"default":null}),
            ],
        ),
        Db::MySql => (
            "io.debezium.connector.mysql",
            vec![
                json!({"name":"table","type":["null","string"],"default":null}),
                json!({"name":"server_id","type":"long"}),
                json!({"name":"gtid","type":["null","string"],"default":null}),
                json!({"name":"file","type":"string"}),
                json!({"name":"pos","type":"long"}),
                json!({"name":"row","type":"int"}),
                json!({"name":"thread","type":["null","long"],"default":null}),
                json!({"name":"query","type":["null","string"],"default":null}),
            ],
        ),
    };
    let fields: Vec<Value> = common.into_iter().chain(own).collect();
    json!({"type":"record","name":"Source","namespace":ns,"connect.name":format!("{ns}.Source"),
        "fields":fields})
}

/// Debezium's Envelope as the AvroConverter registers it. Version 1 has `["null", Value]` unions, version 2
/// `[Value, "null"]`.
pub(super) fn envelope_schema(db: Db, version: i32) -> Value {
    let value = value_record(db, version);
    let (before, after) = match version {
        V1 => (json!(["null", value]), json!(["null", "Value"])),
        _ => (json!([value, "null"]), json!(["Value", "null"])),
    };
    let mut before_field = json!({"name":"before","type":before});
    let mut after_field = json!({"name":"after","type":after});
    if version == V1 {
        before_field["default"] = Value::Null;
        after_field["default"] = Value::Null;
    }
    json!({"type":"record","name":"Envelope","namespace":namespace(db),"connect.version":2,
        "connect.name":format!("{}.Envelope", namespace(db)),
        "fields":[before_field, after_field,
            {"name":"source","type":source_record(db)},
            {"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event",
                "connect.version":1,"connect.name":"event.block","fields":[
                {"name":"id","type":"string"},{"name":"total_order","type":"long"},
                {"name":"data_collection_order","type":"long"}]}],"default":null},
            {"name":"op","type":"string"},
            {"name":"ts_ms","type":["null","long"],"default":null},
            {"name":"ts_us","type":["null","long"],"default":null},
            {"name":"ts_ns","type":["null","long"],"default":null}]})
}

/// ExtractNewRecordState's record (`add.fields=op,lsn` or `op,file,pos,row`, plus `source.ts_ms`;
/// `delete.tombstone.handling.mode=rewrite-with-tombstone`): the row with `__` fields.
pub(super) fn extracted_schema(db: Db) -> Value {
    let mut schema = value_record(db, V1);
    schema["namespace"] = namespace(db).into();
    let fields = schema["fields"].as_array_mut().expect("fields");
    fields.push(json!({"name":"__op","type":["null","string"],"default":null}));
    match db {
        Db::Postgres => fields.push(json!({"name":"__lsn","type":["null","long"],"default":null})),
        Db::MySql => {
            fields.push(json!({"name":"__file","type":["null","string"],"default":null}));
            fields.push(json!({"name":"__pos","type":["null","long"],"default":null}));
            fields.push(json!({"name":"__row","type":["null","int"],"default":null}));
        }
    }
    fields.push(json!({"name":"__source_ts_ms","type":["null","long"],"default":null}));
    fields.push(json!({"name":"__deleted","type":["null","string"],"default":null}));
    schema
}
