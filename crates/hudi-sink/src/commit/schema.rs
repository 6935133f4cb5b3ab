//! The schema a commit carries (`extraMetadata.schema`): the widest of the table's latest committed schema
//! and every contribution's.
//!
//! Writers evolve the table schema on their own (a new writer schema in the registry, a new schema file;
//! `schema/evolution.rs`), and a warm writer may not have seen another's evolution yet. A commit must never
//! carry a narrower schema than the table's latest, or readers that take the latest commit's schema would
//! lose the newer columns of files already written. So the committer evolves the latest committed schema
//! with each contribution's in turn; the result is the latest schema whenever nobody evolved it (no work
//! beyond comparing strings), and a contribution Hudi's rules refuse against it fails the commit.

use crate::schema::avro::AvroSchema;
use crate::schema::evolution::evolve;
use crate::write::WriteError;

/// The schema for a commit of `proposed` (the contributions' schemas, empty ones ignored) on a table whose
/// latest committed schema is `committed`; `None` when neither has one.
pub(crate) fn commit_schema<'a>(
    committed: Option<&'a str>,
    proposed: impl IntoIterator<Item = &'a str>,
) -> Result<Option<String>, WriteError> {
    let mut proposed = proposed.into_iter().filter(|s| !s.is_empty());
    if crate::mutation::is_disabled(crate::mutation::Mutation::CommitSchemaWidest) {
        return Ok(proposed.next().or(committed).map(str::to_string));
    }
    let Some(mut text) = committed.or_else(|| proposed.next()).map(str::to_string) else {
        return Ok(None);
    };
    let mut widest: Option<AvroSchema> = None;
    for next in proposed {
        if next == text {
            continue;
        }
        let current = match widest.take() {
            Some(schema) => schema,
            None => AvroSchema::parse(&text)?,
        };
        let evolved = evolve(&current, &AvroSchema::parse(next)?)?;
        if !evolved.changes.is_empty() {
            text = evolved.schema.to_json_string();
        }
        widest = Some(evolved.schema);
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = r#"{"type":"record","name":"t","fields":[{"name":"id","type":"int"}]}"#;
    const V2: &str = r#"{"type":"record","name":"t","fields":[{"name":"id","type":"int"},{"name":"note","type":["null","string"],"default":null}]}"#;

    fn fields(json: &str) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"));
        v["fields"]
            .as_array()
            .unwrap_or_else(|| panic!("fields"))
            .iter()
            .map(|f| f["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn a_commit_never_carries_a_narrower_schema_than_the_table() {
        // A warm writer still at v1 commits after another evolved the table to v2: the commit keeps v2.
        let s = commit_schema(Some(V2), [V1]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fields(&s.unwrap_or_default()), ["id", "note"]);
        // Contributions at v1 and v2 in one window, the table at v1: v2.
        let s = commit_schema(Some(V1), [V1, V2]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fields(&s.unwrap_or_default()), ["id", "note"]);
        // Nobody evolved anything: the committed text as it is.
        assert_eq!(
            commit_schema(Some(V1), [V1]).unwrap_or_else(|e| panic!("{e}")),
            Some(V1.to_string())
        );
        // A new table: the first contribution's.
        assert_eq!(
            commit_schema(None, ["", V1]).unwrap_or_else(|e| panic!("{e}")),
            Some(V1.to_string())
        );
        assert_eq!(
            commit_schema(None, [""]).unwrap_or_else(|e| panic!("{e}")),
            None
        );
    }

    #[test]
    fn a_contribution_the_rules_refuse_fails_the_commit() {
        let narrower = r#"{"type":"record","name":"t","fields":[{"name":"id","type":"string"},{"name":"x","type":"int"}]}"#;
        let err = commit_schema(Some(V1), [narrower]).expect_err("refused");
        assert!(matches!(err, WriteError::Evolution(_)), "{err}");
    }
}
