//! Configuration: Java `.properties` files and the typed write configuration built from Hudi's own keys.

pub mod java_properties;
pub mod write_config;
