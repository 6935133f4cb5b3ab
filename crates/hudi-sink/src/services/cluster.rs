//! Clustering of small files (placeholder; being written).
