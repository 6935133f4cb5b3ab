//! The file slices pending compactions read: the operations of every `<t>.compaction.requested` plan (Avro
//! `HoodieCompactionPlan`, merge-on-read.md §4) whose compaction is still requested or inflight.
//!
//! Only what the cleaner and `hudi-sink show` need is read: per operation the partition, file id, the base
//! instant of the slice it compacts, and the base and log file names. Decoding is by field name under the
//! plan's own writer schema, so plans of Spark 0.14 (version 1: paths) and of this writer (version 2: names)
//! both read; extra fields are ignored.
//!
//! Invariant: a plan that cannot be read is an error for the caller to act on (the cleaner then plans
//! nothing, since it cannot tell which slices the compaction reads), never an empty list of operations.

use crate::avro::{decode_container, AvroError, AvroValue};
use crate::storage::Storage;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::timeline::Timeline;
use crate::write::WriteError;

/// The Avro record name of a compaction plan.
const COMPACTION_PLAN: &str = "HoodieCompactionPlan";

/// One operation of a compaction plan: the slice it compacts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CompactionOperation {
    /// Partition path (relative, `""` when non-partitioned).
    pub partition_path: String,
    /// File group id.
    pub file_id: String,
    /// Base instant of the slice the compaction reads (it keeps every slice at or after it).
    pub base_instant: InstantTime,
    /// The slice's base file as the plan names it (a name in version 2, a path in version 1), if any.
    pub data_file: Option<String>,
    /// The slice's log files as the plan names them.
    pub delta_files: Vec<String>,
}

/// A compaction still requested or inflight, with its plan's operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCompaction {
    /// The compaction instant (requested or inflight).
    pub instant: Instant,
    /// The plan's operations.
    pub operations: Vec<CompactionOperation>,
}

/// Why a pending compaction's plan could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CompactionPlanError {
    /// The file is not a one-record Avro container (empty files included).
    #[error("compaction plan is not readable Avro: {0}")]
    Avro(#[from] AvroError),
    /// The record is not a `HoodieCompactionPlan` of the expected shape.
    #[error("compaction plan {field}: {reason}")]
    Shape { field: String, reason: String },
}

fn shape(field: impl Into<String>, reason: impl Into<String>) -> CompactionPlanError {
    CompactionPlanError::Shape {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The non-null string of field `name` of `record`, looking through unions.
fn string_field(record: &AvroValue, name: &str) -> Option<String> {
    record
        .field(name)
        .map(AvroValue::unwrap_union)
        .and_then(AvroValue::as_str)
        .map(str::to_string)
}

/// Parses the operations of a `<t>.compaction.requested` file.
pub fn parse_compaction_plan(
    bytes: &[u8],
) -> Result<Vec<CompactionOperation>, CompactionPlanError> {
    let (schema, plan) = decode_container(bytes)?;
    let schema: serde_json::Value = serde_json::from_str(&schema).map_err(AvroError::from)?;
    let name = schema["name"].as_str().unwrap_or_default();
    if name.rsplit('.').next() != Some(COMPACTION_PLAN) {
        return Err(shape(
            "schema",
            format!("record {name:?}, not {COMPACTION_PLAN}"),
        ));
    }
    let Some(operations) = plan.field("operations").map(AvroValue::unwrap_union) else {
        return Ok(Vec::new());
    };
    if operations.is_null() {
        return Ok(Vec::new());
    }
    let items = operations
        .as_array()
        .ok_or_else(|| shape("operations", "not an array"))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let op = item.unwrap_union();
        let field = |f: &str| format!("operations[{i}].{f}");
        let file_id =
            string_field(op, "fileId").ok_or_else(|| shape(field("fileId"), "missing"))?;
        let base = string_field(op, "baseInstantTime")
            .ok_or_else(|| shape(field("baseInstantTime"), "missing"))?;
        let base_instant = InstantTime::parse(&base)
            .map_err(|e| shape(field("baseInstantTime"), e.to_string()))?;
        let delta_files = match op.field("deltaFilePaths").map(AvroValue::unwrap_union) {
            Some(AvroValue::Array(files)) => files
                .iter()
                .map(|f| {
                    f.unwrap_union()
                        .as_str()
                        .map(str::to_string)
                        .ok_or_else(|| shape(field("deltaFilePaths"), "not a string"))
                })
                .collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        out.push(CompactionOperation {
            partition_path: string_field(op, "partitionPath").unwrap_or_default(),
            file_id,
            base_instant,
            data_file: string_field(op, "dataFilePath"),
            delta_files,
        });
    }
    out.sort();
    Ok(out)
}

/// Every compaction of `timeline` still requested or inflight, with the operations of its plan (one GET
/// each). The outer error is a storage failure; the inner one a plan that cannot be read.
pub async fn pending_compactions(
    storage: &dyn Storage,
    timeline: &Timeline,
) -> Result<
    Vec<(
        Instant,
        Result<Vec<CompactionOperation>, CompactionPlanError>,
    )>,
    WriteError,
> {
    let mut out = Vec::new();
    for instant in timeline
        .pending()
        .into_iter()
        .filter(|i| i.action == Action::Compaction)
    {
        let requested = Instant::new(instant.time.clone(), Action::Compaction, State::Requested);
        let plan = match storage.get(&requested.path()).await {
            Ok(bytes) => parse_compaction_plan(&bytes),
            // An inflight compaction without its plan: nothing tells which slices it reads.
            Err(e) if e.is_not_found() => {
                Err(shape("file", format!("{} is missing", requested.path())))
            }
            Err(e) => return Err(e.into()),
        };
        out.push((instant.clone(), plan));
    }
    Ok(out)
}

/// [`pending_compactions`] for the cleaner: every operation, or the first compaction whose plan cannot
/// be read (with why).
pub async fn pending_operations(
    storage: &dyn Storage,
    timeline: &Timeline,
) -> Result<Result<Vec<CompactionOperation>, (InstantTime, CompactionPlanError)>, WriteError> {
    let mut ops = Vec::new();
    for (instant, plan) in pending_compactions(storage, timeline).await? {
        match plan {
            Ok(found) => ops.extend(found),
            Err(e) => return Ok(Err((instant.time, e))),
        }
    }
    Ok(Ok(ops))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::avro::encode_container;

    /// The 0.14 plan schema with the fields this reader uses (and one it ignores).
    const SCHEMA: &str = r#"{"type":"record","name":"HoodieCompactionPlan","namespace":"org.apache.hudi.avro.model",
      "fields":[
        {"name":"operations","type":["null",{"type":"array","items":{"type":"record","name":"HoodieCompactionOperation",
          "fields":[
            {"name":"baseInstantTime","type":["null","string"],"default":null},
            {"name":"deltaFilePaths","type":["null",{"type":"array","items":"string"}],"default":null},
            {"name":"dataFilePath","type":["null","string"],"default":null},
            {"name":"fileId","type":["null","string"],"default":null},
            {"name":"partitionPath","type":["null","string"],"default":null},
            {"name":"metrics","type":["null",{"type":"map","values":"double"}],"default":null},
            {"name":"bootstrapFilePath","type":["null","string"],"default":null}]}}],"default":null},
        {"name":"extraMetadata","type":["null",{"type":"map","values":"string"}],"default":null},
        {"name":"version","type":["int","null"],"default":1}]}"#;

    fn some(v: AvroValue) -> AvroValue {
        AvroValue::Union(1, Box::new(v))
    }

    fn op(file_id: &str, base: &str, logs: &[&str]) -> AvroValue {
        AvroValue::record([
            ("baseInstantTime", some(AvroValue::string(base))),
            ("deltaFilePaths", some(AvroValue::string_array(logs))),
            (
                "dataFilePath",
                some(AvroValue::string(format!("{file_id}_0-1-0_{base}.parquet"))),
            ),
            ("fileId", some(AvroValue::string(file_id))),
            ("partitionPath", some(AvroValue::string("p"))),
            ("metrics", AvroValue::Union(0, Box::new(AvroValue::Null))),
            (
                "bootstrapFilePath",
                AvroValue::Union(0, Box::new(AvroValue::Null)),
            ),
        ])
    }

    /// A `compaction.requested` file compacting each (partition, file id, base instant) slice.
    pub(crate) fn plan_bytes(slices: &[(&str, &str, &InstantTime)]) -> Vec<u8> {
        plan(
            slices
                .iter()
                .map(|(p, id, base)| {
                    let mut o = op(id, base.as_str(), &[]);
                    if let AvroValue::Record(fields) = &mut o {
                        for (name, value) in fields.iter_mut() {
                            if name == "partitionPath" {
                                *value = some(AvroValue::string(*p));
                            }
                        }
                    }
                    o
                })
                .collect(),
        )
    }

    fn plan(ops: Vec<AvroValue>) -> Vec<u8> {
        let value = AvroValue::record([
            ("operations", some(AvroValue::Array(ops))),
            (
                "extraMetadata",
                AvroValue::Union(0, Box::new(AvroValue::Null)),
            ),
            ("version", AvroValue::Union(0, Box::new(AvroValue::Int(2)))),
        ]);
        encode_container(SCHEMA, &value).expect("encode")
    }

    #[test]
    fn reads_each_operation_of_a_plan() {
        let bytes = plan(vec![
            op("g2", "20240101000000002", &[]),
            op(
                "g1",
                "20240101000000001",
                &[".g1_20240101000000001.log.1_0-1-0"],
            ),
        ]);
        let ops = parse_compaction_plan(&bytes).expect("plan");
        assert_eq!(
            ops,
            vec![
                CompactionOperation {
                    partition_path: "p".into(),
                    file_id: "g1".into(),
                    base_instant: InstantTime::parse("20240101000000001").expect("t"),
                    data_file: Some("g1_0-1-0_20240101000000001.parquet".into()),
                    delta_files: vec![".g1_20240101000000001.log.1_0-1-0".into()],
                },
                CompactionOperation {
                    partition_path: "p".into(),
                    file_id: "g2".into(),
                    base_instant: InstantTime::parse("20240101000000002").expect("t"),
                    data_file: Some("g2_0-1-0_20240101000000002.parquet".into()),
                    delta_files: vec![],
                },
            ]
        );
    }

    #[test]
    fn an_unreadable_plan_is_an_error() {
        assert!(matches!(
            parse_compaction_plan(b""),
            Err(CompactionPlanError::Avro(AvroError::Empty))
        ));
        assert!(parse_compaction_plan(b"garbage").is_err());
        let other = encode_container(
            r#"{"type":"record","name":"HoodieCleanerPlan","fields":[{"name":"policy","type":"string"}]}"#,
            &AvroValue::record([("policy", AvroValue::string("x"))]),
        )
        .expect("encode");
        assert!(matches!(
            parse_compaction_plan(&other),
            Err(CompactionPlanError::Shape { .. })
        ));
        let bad = plan(vec![op("g1", "not-a-time", &[])]);
        assert!(matches!(
            parse_compaction_plan(&bad),
            Err(CompactionPlanError::Shape { .. })
        ));
    }
}
