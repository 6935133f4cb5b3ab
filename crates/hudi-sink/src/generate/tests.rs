use super::*;
use crate::record::decode::RecordDecoder;
use crate::schema::arrow::avro_to_arrow;
use crate::schema::avro::AvroSchema;
use crate::source::event::{KafkaBatch, Payload as KafkaPayload};

fn payloads(opts: GenerateOptions) -> (Vec<Payload>, Generator) {
    let mut g = Generator::new(opts).expect("options");
    let mut out = Vec::new();
    while let Some(p) = g.next_payload().expect("payload") {
        out.push(p);
    }
    (out, g)
}

#[test]
fn every_value_decodes_with_its_schema_and_every_payload_parses() {
    for (schema, source) in [
        (SchemaKind::Trips, SourceKind::Msk),
        (SchemaKind::Bench, SourceKind::SelfManaged),
    ] {
        let avro = AvroSchema::parse(schema.avro_schema()).expect("schema");
        let arrow = std::sync::Arc::new(avro_to_arrow(&avro).expect("arrow"));
        let mut decoder = RecordDecoder::try_new(arrow, &avro).expect("decoder");
        let opts = GenerateOptions {
            records: 2_000,
            partitions: 3,
            records_per_file: 300,
            schema,
            source,
            ..GenerateOptions::default()
        };
        let (files, g) = payloads(opts);
        let mut records = 0u64;
        let mut tombstones = 0u64;
        let mut next: BTreeMapOffsets = BTreeMapOffsets::new();
        for f in &files {
            let batch = KafkaBatch::from_slice(&f.bytes).expect("valid event");
            for r in &batch.records {
                records += 1;
                let prev = next.insert(r.partition, r.offset);
                assert!(prev.is_none_or(|p| r.offset > p), "offsets increase");
                match r.payload() {
                    KafkaPayload::Value(v) => decoder.append(v).expect("value decodes"),
                    KafkaPayload::Tombstone => {
                        tombstones += 1;
                        assert!(r.key.is_some(), "tombstones carry the key");
                    }
                    KafkaPayload::Undecodable(e) => panic!("{e}"),
                }
            }
        }
        assert_eq!(records, 2_000);
        assert_eq!(tombstones, g.report().tombstones);
        assert!(g.report().tombstones > 0 && g.report().deletes > 0 && g.report().updates > 0);
    }
}

type BTreeMapOffsets = std::collections::BTreeMap<i32, i64>;

#[test]
fn payloads_stay_under_the_byte_limit_and_are_cut_by_size() {
    let opts = GenerateOptions {
        records: 3_000,
        records_per_file: 2_000,
        max_payload_bytes: 200_000,
        schema: SchemaKind::Bench,
        ..GenerateOptions::default()
    };
    let (files, _) = payloads(opts);
    assert!(files.len() > 2, "cut by size, not by count");
    for f in &files {
        assert!(f.bytes.len() <= 200_000, "{} bytes", f.bytes.len());
        assert!(f.records < 2_000);
    }
    assert_eq!(files.iter().map(|f| f.records).sum::<usize>(), 3_000);
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let opts = GenerateOptions {
        records: 500,
        ..GenerateOptions::default()
    };
    let (a, _) = payloads(opts.clone());
    let (b, _) = payloads(opts.clone());
    let (c, _) = payloads(GenerateOptions { seed: 7, ..opts });
    let bytes = |v: &[Payload]| v.iter().map(|p| p.bytes.clone()).collect::<Vec<_>>();
    assert_eq!(bytes(&a), bytes(&b));
    assert_ne!(bytes(&a), bytes(&c));
}

#[test]
fn model_follows_the_fold_rules() {
    // One key, one batch: tombstone, then a late record recreates it unconditionally.
    let mut g = Generator::new(GenerateOptions::default()).expect("options");
    g.keys.push(KeyState {
        last_ordering: 0,
        stored: Some((0, 100)),
    });
    g.report.live_rows = 1;
    let rec = |index, kind, ordering| Record {
        index,
        key: 0,
        partition: 0,
        kind,
        ordering,
        json: String::new(),
    };
    let mut fold = HashMap::new();
    let mut order = Vec::new();
    g.fold_record(&rec(1, Kind::Update, 50), &mut fold, &mut order);
    g.apply_batch(&fold, &order);
    assert_eq!(g.keys[0].stored, Some((0, 100)), "older update ignored");
    let (mut fold, mut order) = (HashMap::new(), Vec::new());
    g.fold_record(&rec(2, Kind::Tombstone, 0), &mut fold, &mut order);
    g.fold_record(&rec(3, Kind::Update, 10), &mut fold, &mut order);
    g.fold_record(&rec(4, Kind::Update, 5), &mut fold, &mut order);
    g.apply_batch(&fold, &order);
    assert_eq!(g.keys[0].stored, Some((3, 10)), "recreated after tombstone");
    let (mut fold, mut order) = (HashMap::new(), Vec::new());
    g.fold_record(&rec(5, Kind::Update, 10), &mut fold, &mut order);
    g.apply_batch(&fold, &order);
    assert_eq!(
        g.keys[0].stored,
        Some((5, 10)),
        "tie goes to the later offset"
    );
    let (mut fold, mut order) = (HashMap::new(), Vec::new());
    g.fold_record(&rec(6, Kind::Delete, 9), &mut fold, &mut order);
    g.apply_batch(&fold, &order);
    assert_eq!(g.keys[0].stored, Some((5, 10)), "older delete ignored");
    let (mut fold, mut order) = (HashMap::new(), Vec::new());
    g.fold_record(&rec(7, Kind::Delete, 11), &mut fold, &mut order);
    g.apply_batch(&fold, &order);
    assert_eq!(g.keys[0].stored, None);
    assert_eq!(g.report.live_rows, 0);
}

#[test]
fn options_are_checked() {
    for bad in [
        GenerateOptions {
            update_ratio: 0.8,
            delete_ratio: 0.3,
            ..GenerateOptions::default()
        },
        GenerateOptions {
            records_per_file: 10_001,
            ..GenerateOptions::default()
        },
        GenerateOptions {
            max_payload_bytes: MAX_PAYLOAD_BYTES + 1,
            ..GenerateOptions::default()
        },
        GenerateOptions {
            topic: Some("no spaces".into()),
            ..GenerateOptions::default()
        },
    ] {
        assert!(Generator::new(bad).is_err());
    }
}
