//! Avro object-container files of the timeline (placeholder; being written).
