//! Indexes that route a record to its file group.

pub mod bucket;
