//! Schema registries: the writer schema of every Avro value, fetched once per id and cached for the life of
//! the process (registry ids never change).
//!
//! ```text
//! batch ─ unframe each value (framing.rs) ─ ids not cached yet ─ fetch (confluent.rs, glue.rs) ─ cache
//!                                                               └ unavailable → the invocation fails, retryable
//! ```
//!
//! The fetch happens before anything is written: a registry that is unreachable or answers 5xx fails the
//! invocation with [`RegistryError::Unavailable`] (the ESM redelivers the batch), while an id the registry
//! does not know, or a schema that is not Avro, dead-letters only the records that name it.

pub mod framing;
pub mod latest;

#[cfg(feature = "aws")]
pub mod confluent;
#[cfg(feature = "glue")]
pub mod glue;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use thiserror::Error;

use crate::schema::avro::AvroSchema;

pub use framing::{schema_id, unframe, Framed, FramingError, SchemaId};

/// What a registry answered for one id.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// The writer schema.
    Found(Arc<AvroSchema>),
    /// The records naming this id are dead-lettered with this reason (unknown id, not Avro, invalid).
    Refused(String),
}

/// A registry the sink cannot use right now: the invocation fails and the batch is redelivered.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// Unreachable, timed out, 5xx, throttled, or refusing our credentials.
    #[error("schema registry unavailable for {id}: {detail} (retryable: nothing was written)")]
    Unavailable {
        /// The id being fetched.
        id: SchemaId,
        /// What happened.
        detail: String,
    },
    /// A value names a registry that is not configured.
    #[error("{id} is named by a record, but no {registry} registry is configured ({hint})")]
    NotConfigured {
        /// The id.
        id: SchemaId,
        /// Which registry.
        registry: &'static str,
        /// The property that configures it.
        hint: &'static str,
    },
    /// The registry settings are wrong (a start-up error).
    #[error("schema registry configuration: {0}")]
    Config(String),
    /// The subject whose latest version is the JSON values' schema could not be asked.
    #[error("schema registry unavailable for {url}: {detail} (retryable: nothing was written)")]
    SubjectUnavailable {
        /// The subject URL.
        url: String,
        /// What happened.
        detail: String,
    },
    /// The subject's latest version cannot be the JSON values' schema.
    #[error("schema registry subject {url}: {reason} (nothing was written)")]
    SubjectRefused {
        /// The subject URL.
        url: String,
        /// Why.
        reason: String,
    },
}

/// What one registry returns for an id: the schema's text and type, or `None` when it does not know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The schema definition.
    pub text: String,
    /// `AVRO`, `PROTOBUF`, `JSON` (as the registry spells it).
    pub format: String,
}

/// One registry's API (Confluent REST, Glue, or a fake in tests).
#[async_trait]
pub trait SchemaSource: Send + Sync + std::fmt::Debug {
    /// The schema of `id`: `Ok(None)` when the registry does not know it, `Err` (a description) when the
    /// registry cannot answer.
    async fn fetch(&self, id: SchemaId) -> Result<Option<Fetched>, String>;
}

/// The configured registries and the schemas fetched so far.
#[derive(Debug, Default)]
pub struct SchemaRegistry {
    confluent: Option<Arc<dyn SchemaSource>>,
    glue: Option<Arc<dyn SchemaSource>>,
    cache: Mutex<HashMap<SchemaId, Arc<AvroSchema>>>,
    fetches: std::sync::atomic::AtomicU64,
}

impl SchemaRegistry {
    /// Registries from their sources (either may be absent).
    pub fn new(
        confluent: Option<Arc<dyn SchemaSource>>,
        glue: Option<Arc<dyn SchemaSource>>,
    ) -> Self {
        Self {
            confluent,
            glue,
            ..Self::default()
        }
    }

    /// Registry requests made so far (each id is fetched once).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The schema of every id in `ids`, fetching the ones not cached (up to four at a time).
    pub async fn lookup_all(
        &self,
        ids: &BTreeSet<SchemaId>,
    ) -> Result<BTreeMap<SchemaId, Lookup>, RegistryError> {
        let mut out = BTreeMap::new();
        let mut missing = Vec::new();
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            for id in ids {
                match cache.get(id) {
                    Some(schema) => {
                        out.insert(*id, Lookup::Found(schema.clone()));
                    }
                    None => missing.push(*id),
                }
            }
        }
        use futures_util::StreamExt as _;
        let fetches: Vec<_> = missing.into_iter().map(|id| self.fetch(id)).collect();
        let fetched: Vec<_> = futures_util::stream::iter(fetches)
            .buffer_unordered(4)
            .collect()
            .await;
        for result in fetched {
            let (id, lookup) = result?;
            if let Lookup::Found(schema) = &lookup {
                self.cache
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id, schema.clone());
            }
            out.insert(id, lookup);
        }
        Ok(out)
    }

    async fn fetch(&self, id: SchemaId) -> Result<(SchemaId, Lookup), RegistryError> {
        let (source, registry, hint) = match id {
            SchemaId::Confluent(_) => (
                &self.confluent,
                "Confluent",
                "hoodie.streamer.schemaprovider.registry.url",
            ),
            SchemaId::Glue(_) => (
                &self.glue,
                "Glue",
                "the writer is built without the `glue` feature",
            ),
        };
        let Some(source) = source else {
            return Err(RegistryError::NotConfigured { id, registry, hint });
        };
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let fetched = source
            .fetch(id)
            .await
            .map_err(|detail| RegistryError::Unavailable { id, detail })?;
        let lookup = match fetched {
            None => Lookup::Refused(format!("{id} is not in the registry")),
            Some(f) if !f.format.eq_ignore_ascii_case("AVRO") => Lookup::Refused(format!(
                "{id} is a {} schema; hudi.sink.value.format=avro reads Avro only",
                f.format
            )),
            Some(f) => match AvroSchema::parse_writer(&f.text) {
                Ok(schema) => Lookup::Found(Arc::new(schema)),
                Err(e) => Lookup::Refused(format!("{id} is not a valid Avro schema: {e}")),
            },
        };
        Ok((id, lookup))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Fake {
        schemas: HashMap<i32, Fetched>,
        down: bool,
        calls: std::sync::atomic::AtomicU32,
    }

    #[async_trait]
    impl SchemaSource for Fake {
        async fn fetch(&self, id: SchemaId) -> Result<Option<Fetched>, String> {
            self.calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if self.down {
                return Err("connection refused".to_string());
            }
            let SchemaId::Confluent(n) = id else {
                return Ok(None);
            };
            Ok(self.schemas.get(&n).cloned())
        }
    }

    fn fetched(text: &str, format: &str) -> Fetched {
        Fetched {
            text: text.to_string(),
            format: format.to_string(),
        }
    }

    #[tokio::test]
    async fn ids_are_fetched_once_and_refusals_are_per_id() {
        let mut fake = Fake::default();
        fake.schemas.insert(
            1,
            fetched(r#"{"type":"record","name":"r","fields":[]}"#, "AVRO"),
        );
        fake.schemas
            .insert(2, fetched("syntax = \"proto3\";", "PROTOBUF"));
        fake.schemas.insert(3, fetched("{not json", "AVRO"));
        let fake = Arc::new(fake);
        let registry = SchemaRegistry::new(Some(fake.clone()), None);
        let ids: BTreeSet<_> = [1, 2, 3, 4].into_iter().map(SchemaId::Confluent).collect();
        let got = registry
            .lookup_all(&ids)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            got.get(&SchemaId::Confluent(1)),
            Some(Lookup::Found(_))
        ));
        let refusal = |n| match got.get(&SchemaId::Confluent(n)) {
            Some(Lookup::Refused(r)) => r.clone(),
            other => panic!("{other:?}"),
        };
        assert!(refusal(2).contains("PROTOBUF"), "{}", refusal(2));
        assert!(
            refusal(3).contains("not a valid Avro schema"),
            "{}",
            refusal(3)
        );
        assert!(refusal(4).contains("not in the registry"), "{}", refusal(4));
        // Found schemas are cached; refused ones are asked again (an id may appear later).
        let again = registry
            .lookup_all(&ids)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.len(), 4);
        assert_eq!(fake.calls.load(std::sync::atomic::Ordering::Relaxed), 7);
    }

    #[tokio::test]
    async fn an_unreachable_or_missing_registry_fails_the_invocation() {
        let down = Arc::new(Fake {
            down: true,
            ..Fake::default()
        });
        let registry = SchemaRegistry::new(Some(down), None);
        let ids: BTreeSet<_> = [SchemaId::Confluent(1)].into_iter().collect();
        let e = registry.lookup_all(&ids).await.err();
        assert!(
            matches!(e, Some(RegistryError::Unavailable { .. })),
            "{e:?}"
        );
        let glue: BTreeSet<_> = [SchemaId::Glue(uuid::Uuid::nil())].into_iter().collect();
        let e = registry.lookup_all(&glue).await.err();
        assert!(
            matches!(e, Some(RegistryError::NotConfigured { .. })),
            "{e:?}"
        );
    }
}
