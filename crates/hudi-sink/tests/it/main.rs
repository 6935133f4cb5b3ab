//! Integration tests, gathered into one binary to save link time.

mod common;
