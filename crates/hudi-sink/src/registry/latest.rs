//! The latest version of a registry subject as the schema of JSON values, the way HoodieStreamer's
//! `SchemaRegistryProvider` reads `hoodie.streamer.schemaprovider.registry.url`
//! (`https://host/subjects/<subject>/versions/latest`).
//!
//! ```text
//! batch ─ due? (hudi.sink.schema.registry.refresh.ms) ── no ─→ the table schema as it is
//!           └ yes: GET the subject URL ─ the version taken last ─→ the table schema as it is
//!                                      ├ a new version ─→ evolve the table (sink/values.rs), then taken
//!                                      └ unreachable, 5xx, unknown subject, not Avro ─→ the invocation fails
//! ```
//!
//! A version is remembered as taken only once the table took it: a change Hudi refuses fails every batch
//! (nothing is written) until the subject or the table is fixed, instead of being skipped after one try.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::{Fetched, RegistryError};
use crate::schema::avro::AvroSchema;

/// What the registry answers for a subject's latest version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestVersion {
    /// The schema's registry id, when the answer carries one.
    pub id: Option<i64>,
    /// The subject's version number, when the answer carries one.
    pub version: Option<i64>,
    /// The schema text and type.
    pub fetched: Fetched,
}

/// A registry that can name a subject's latest version (Confluent REST, or a fake in tests).
#[async_trait]
pub trait LatestSource: Send + Sync + std::fmt::Debug {
    /// The subject URL asked, for messages (without credentials).
    fn subject_url(&self) -> &str;
    /// The subject's latest version: `Ok(None)` when the registry does not know the subject, `Err` (a
    /// description) when it cannot answer.
    async fn latest(&self) -> Result<Option<LatestVersion>, String>;
}

/// A subject's latest schema, asked for at most once per refresh interval.
#[derive(Debug)]
pub struct LatestWatch {
    source: Arc<dyn LatestSource>,
    refresh_ms: i64,
    state: Mutex<Watched>,
    fetches: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Watched {
    /// When the registry was last asked and answered with the version taken (epoch ms).
    checked_ms: Option<i64>,
    /// The version the table took last: its id, or its text when the registry gives no id.
    taken: Option<String>,
}

/// A version the table has not taken yet.
#[derive(Debug, Clone)]
pub struct NewVersion {
    /// What [`LatestWatch::taken`] remembers.
    pub key: String,
    /// The subject's version number, when known (for logs).
    pub version: Option<i64>,
    /// The schema.
    pub schema: Arc<AvroSchema>,
}

impl LatestWatch {
    /// Watches `source`'s subject, asking at most every `refresh` (zero: every batch).
    pub fn new(source: Arc<dyn LatestSource>, refresh: Duration) -> Self {
        Self {
            source,
            refresh_ms: i64::try_from(refresh.as_millis()).unwrap_or(i64::MAX),
            state: Mutex::new(Watched::default()),
            fetches: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Registry requests made so far.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The subject's latest version if it is time to ask and it is not the one taken last; `None` otherwise.
    pub async fn poll(&self, now_ms: i64) -> Result<Option<NewVersion>, RegistryError> {
        {
            let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(checked) = state.checked_ms {
                if now_ms.saturating_sub(checked) < self.refresh_ms {
                    return Ok(None);
                }
            }
        }
        let new = self.fetch().await?;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.taken.as_deref() == Some(new.key.as_str()) {
            state.checked_ms = Some(now_ms);
            return Ok(None);
        }
        Ok(Some(new))
    }

    /// Asks the registry now, whatever was taken.
    pub async fn fetch(&self) -> Result<NewVersion, RegistryError> {
        let url = self.source.subject_url().to_string();
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let latest =
            self.source
                .latest()
                .await
                .map_err(|detail| RegistryError::SubjectUnavailable {
                    url: url.clone(),
                    detail,
                })?;
        let refused = |reason: String| RegistryError::SubjectRefused {
            url: url.clone(),
            reason,
        };
        let Some(latest) = latest else {
            return Err(refused("the registry has no such subject".into()));
        };
        if !latest.fetched.format.eq_ignore_ascii_case("AVRO") {
            return Err(refused(format!(
                "its latest version is a {} schema; the JSON values are read with an Avro schema",
                latest.fetched.format
            )));
        }
        let schema = AvroSchema::parse(&latest.fetched.text).map_err(|e| {
            refused(format!(
                "its latest version is not a valid Avro schema: {e}"
            ))
        })?;
        Ok(NewVersion {
            key: match latest.id {
                Some(id) => format!("id {id}"),
                None => latest.fetched.text,
            },
            version: latest.version,
            schema: Arc::new(schema),
        })
    }

    /// Remembers that the table took `version` at `now_ms`: the registry is asked again only after the
    /// refresh interval.
    pub fn taken(&self, version: &NewVersion, now_ms: i64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.taken = Some(version.key.clone());
        state.checked_ms = Some(now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Fake {
        answer: Mutex<Option<Result<Option<LatestVersion>, String>>>,
    }

    #[async_trait]
    impl LatestSource for Fake {
        fn subject_url(&self) -> &str {
            "http://registry/subjects/t-value/versions/latest"
        }
        async fn latest(&self) -> Result<Option<LatestVersion>, String> {
            self.answer
                .lock()
                .map(|a| a.clone())
                .unwrap_or(None)
                .unwrap_or(Ok(None))
        }
    }

    fn version(id: i64, fields: &str) -> Result<Option<LatestVersion>, String> {
        Ok(Some(LatestVersion {
            id: Some(id),
            version: Some(id),
            fetched: Fetched {
                text: format!(r#"{{"type":"record","name":"r","fields":[{fields}]}}"#),
                format: "AVRO".into(),
            },
        }))
    }

    fn set(fake: &Fake, answer: Result<Option<LatestVersion>, String>) {
        if let Ok(mut a) = fake.answer.lock() {
            *a = Some(answer);
        }
    }

    #[tokio::test]
    async fn a_version_is_asked_for_once_per_interval_and_given_until_it_is_taken() {
        let fake = Arc::new(Fake::default());
        set(&fake, version(1, r#"{"name":"a","type":"int"}"#));
        let watch = LatestWatch::new(fake.clone(), Duration::from_secs(60));
        let first = watch.poll(0).await.ok().flatten();
        let Some(first) = first else {
            panic!("the first poll asks")
        };
        assert_eq!(first.key, "id 1");
        // Not taken (the table refused it): asked again and given again.
        assert!(matches!(watch.poll(1).await, Ok(Some(_))));
        watch.taken(&first, 1);
        assert_eq!(watch.fetches(), 2);
        // Taken: not asked within the interval, asked after it, and the same version is nothing new.
        assert!(matches!(watch.poll(59_000).await, Ok(None)));
        assert_eq!(watch.fetches(), 2);
        assert!(matches!(watch.poll(61_001).await, Ok(None)));
        assert_eq!(watch.fetches(), 3);
        set(&fake, version(2, r#"{"name":"a","type":"long"}"#));
        assert!(
            matches!(watch.poll(100_000).await, Ok(None)),
            "within the interval"
        );
        assert!(matches!(watch.poll(121_001).await, Ok(Some(v)) if v.key == "id 2"));
    }

    #[tokio::test]
    async fn an_unknown_subject_a_foreign_schema_and_an_outage_fail() {
        let fake = Arc::new(Fake::default());
        let watch = LatestWatch::new(fake.clone(), Duration::ZERO);
        let e = watch.poll(0).await.err().map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains("no such subject")),
            "{e:?}"
        );
        set(&fake, Err("connection refused".into()));
        let e = watch.poll(0).await.err();
        assert!(
            matches!(&e, Some(RegistryError::SubjectUnavailable { detail, .. }) if detail == "connection refused"),
            "{e:?}"
        );
        let mut proto = version(3, "");
        if let Ok(Some(v)) = &mut proto {
            v.fetched.format = "PROTOBUF".into();
        }
        set(&fake, proto);
        let e = watch.poll(0).await.err().map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains("PROTOBUF")),
            "{e:?}"
        );
    }
}
