//! The table's metadata on storage: `hoodie.properties`, instants and the timeline, commit metadata, file names.

pub mod commit;
pub mod file_name;
pub mod instant;
pub mod partition_metadata;
pub mod properties;
pub mod timeline;
