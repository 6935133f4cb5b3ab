//! Clean (placeholder; being written).
