//! Records: key generators, partition paths and the string form of values that both use.

pub mod debezium;
pub mod decode;
pub mod keygen;
pub mod partition;
pub mod value;
