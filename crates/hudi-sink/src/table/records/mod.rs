//! The Avro records of the timeline: the clustering plan (`replacecommit.requested`), the clean plan
//! (`clean.requested` / `clean.inflight`), the clean metadata (`clean`) and the compaction plan
//! (`compaction.requested`).
//!
//! Spark writes and reads these with Java Avro's `DataFileWriter` / `DataFileReader`: one container file,
//! codec null, holding exactly one record. The container codec is [`crate::avro`]; this module holds the
//! typed Hudi records on top of it ([`replace`], [`clean`], [`compaction`]) and their Hudi schemas.
//!
//! Invariants:
//! * The typed records write the newest schema (a superset of the 0.14 and 1.x fields, every added field with
//!   a default). Readers resolve by field name, so 0.14 and 1.x Hudi both read them; decoding accepts older
//!   writer schemas (Spark's), taking the Avro default for a field the writer did not have.
//! * A typed record is read only from a file whose writer schema names the same record
//!   ([`crate::avro::AvroError::WrongRecord`] otherwise), as Java's reader requires.

pub mod clean;
pub mod compaction;
mod fields;
pub mod replace;

pub use clean::{ActionInstant, CleanFileInfo, CleanMetadata, CleanPartitionMetadata, CleanerPlan};
pub use compaction::{CompactionOperation, CompactionPlan};
pub use replace::{
    ClusteringGroup, ClusteringPlan, ClusteringStrategy, RequestedReplaceMetadata, SliceInfo,
};

/// Key in a plan's `extraMetadata` naming the engine that scheduled it.
pub const WRITER_KEY: &str = "hudi.sink.writer";
/// This sink's name under [`WRITER_KEY`]: the mark of plans it may roll back, and of the compaction plans whose
/// late logs it carries (another engine's plan gets writers' appends in its own slice instead).
pub const WRITER_NAME: &str = "msk-hudi-sink";

/// Namespace of every Hudi timeline record (`org.apache.hudi.avro.model.<Name>`); readers require it.
pub const HUDI_NAMESPACE: &str = "org.apache.hudi.avro.model";
