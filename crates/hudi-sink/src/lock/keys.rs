//! The lock's configuration keys, declared whether or not the DynamoDB lock is built in, so that a properties
//! file for it is understood (and refused with a clear error) by a build without the `aws` feature.

pub use super::WAIT_TIME_MS_KEY;

/// `hoodie.write.lock.dynamodb.table`: the lock table (required).
pub const TABLE_KEY: &str = "hoodie.write.lock.dynamodb.table";
/// `hoodie.write.lock.dynamodb.partition_key`: the lock's key value; defaults to `hoodie.table.name`.
pub const PARTITION_KEY_KEY: &str = "hoodie.write.lock.dynamodb.partition_key";
/// `hoodie.write.lock.dynamodb.region`.
pub const REGION_KEY: &str = "hoodie.write.lock.dynamodb.region";
/// `hoodie.write.lock.dynamodb.endpoint_url`.
pub const ENDPOINT_URL_KEY: &str = "hoodie.write.lock.dynamodb.endpoint_url";
/// `hoodie.write.lock.dynamodb.billing_mode`: `PAY_PER_REQUEST` (default) or `PROVISIONED`.
pub const BILLING_MODE_KEY: &str = "hoodie.write.lock.dynamodb.billing_mode";
/// `hoodie.write.lock.dynamodb.read_capacity` (PROVISIONED only; default 20).
pub const READ_CAPACITY_KEY: &str = "hoodie.write.lock.dynamodb.read_capacity";
/// `hoodie.write.lock.dynamodb.write_capacity` (PROVISIONED only; default 10).
pub const WRITE_CAPACITY_KEY: &str = "hoodie.write.lock.dynamodb.write_capacity";
/// `hoodie.write.lock.dynamodb.table_creation_timeout` in ms (default 600000).
pub const TABLE_CREATION_TIMEOUT_KEY: &str = "hoodie.write.lock.dynamodb.table_creation_timeout";
/// `hoodie.write.lock.provider`: accepted for Hudi compatibility; the lock is chosen by [`TABLE_KEY`]
/// (DynamoDB when set, else the table's file lock).
pub const PROVIDER_KEY: &str = "hoodie.write.lock.provider";
/// `hoodie.write.concurrency.mode`: accepted for Hudi compatibility; writers always run optimistic
/// concurrency under the lock.
pub const CONCURRENCY_MODE_KEY: &str = "hoodie.write.concurrency.mode";

/// The keys the lock reads.
pub const KEYS: &[&str] = &[
    TABLE_KEY,
    PARTITION_KEY_KEY,
    REGION_KEY,
    ENDPOINT_URL_KEY,
    BILLING_MODE_KEY,
    READ_CAPACITY_KEY,
    WRITE_CAPACITY_KEY,
    TABLE_CREATION_TIMEOUT_KEY,
    WAIT_TIME_MS_KEY,
    PROVIDER_KEY,
    CONCURRENCY_MODE_KEY,
];
