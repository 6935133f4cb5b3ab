//! Archival (placeholder; being written).
