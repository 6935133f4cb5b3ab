//! The DynamoDB lock, item for item and condition for condition the AWS DynamoDB Lock Client
//! (`com.amazonaws:dynamodb-lock-client`) as Hudi's `DynamoDBBasedLockProvider` configures it, so that this sink
//! and Hudi's Java writers exclude each other on the same table.
//!
//! # Item (table with the single String hash key `key`)
//!
//! | attribute | type | value |
//! |---|---|---|
//! | `key` | S | `hoodie.write.lock.dynamodb.partition_key`, by default `hoodie.table.name` |
//! | `ownerName` | S | host name followed directly by a random UUID |
//! | `leaseDuration` | S | milliseconds as a decimal string; Hudi: `hoodie.write.lock.wait_time_ms` |
//! | `recordVersionNumber` | S | random UUID, new on every acquire and heartbeat |
//! | `isReleased` | S | `"1"` when released without deletion; never written here (Hudi deletes on release), honoured when found |
//! | `data` | B | optional payload; Hudi writes none, neither do we |
//!
//! # Requests
//!
//! - read: `GetItem`, `ConsistentRead = true`.
//! - acquire a free lock: `PutItem` of `key`, `ownerName`, `leaseDuration`, `recordVersionNumber`, condition
//!   `attribute_not_exists(#pk)`.
//! - acquire a released lock: the same `PutItem`, condition `attribute_exists(#pk) AND #ir = :ir`.
//! - steal a stale lock (version unchanged for longer than its `leaseDuration` on *our* clock): the same
//!   `PutItem`, condition `attribute_exists(#pk) AND #rvn = :rvn`.
//! - heartbeat and [`ensure_held`](super::LockGuard::ensure_held): `UpdateItem SET #ld = :ld, #rvn = :newRvn`,
//!   condition `attribute_exists(#pk) AND #rvn = :rvn AND #on = :on`.
//! - release: `DeleteItem`, condition `attribute_exists(#pk) AND #rvn = :rvn AND #on = :on`.
//!
//! `ConditionalCheckFailedException` means another client won (acquire) or holds the lock (heartbeat,
//! release). Timeouts, dispatch failures, throttling and 5xx are retryable; acquisition retries them within its
//! wait budget, as the lock client does.
//!
//! # Configuration (Hudi keys)
//!
//! `hoodie.write.lock.dynamodb.table` (required), `.partition_key` (else `hoodie.table.name`), `.region` (else
//! `$AWS_REGION`, else `us-east-1`), `.endpoint_url` (`https://` prefixed when it has no scheme), `.billing_mode`,
//! `.read_capacity`, `.write_capacity`, `.table_creation_timeout` (for [`create_lock_table_if_missing`]) and
//! `hoodie.write.lock.wait_time_ms` (acquire wait *and* lease; heartbeat every third of it).
//!
//! Hudi's `DynamoDBBasedImplicitPartitionKeyLockProvider` (partition key = hash of the base path) is not
//! supported: configure the explicit partition key on both sides.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ProvisionedThroughput, ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;

use crate::clock::Clock;

use super::engine::Engine;
use super::{
    default_clock, default_owner_name, wait_time_ms, Expect, LeaseOptions, LeaseStore, Lock,
    LockError, LockGuard, LockRecord,
};

pub use super::keys::{
    BILLING_MODE_KEY, ENDPOINT_URL_KEY, PARTITION_KEY_KEY, READ_CAPACITY_KEY, REGION_KEY,
    TABLE_CREATION_TIMEOUT_KEY, TABLE_KEY, WRITE_CAPACITY_KEY,
};
/// `hoodie.table.name`: the default partition key.
pub const TABLE_NAME_KEY: &str = "hoodie.table.name";

/// Hash key attribute of the lock table.
pub const PARTITION_KEY_ATTRIBUTE: &str = "key";
/// Attribute `ownerName` (S).
pub const OWNER_NAME: &str = "ownerName";
/// Attribute `leaseDuration` (S, milliseconds).
pub const LEASE_DURATION: &str = "leaseDuration";
/// Attribute `recordVersionNumber` (S, UUID).
pub const RECORD_VERSION_NUMBER: &str = "recordVersionNumber";
/// Attribute `isReleased` (S, `"1"`).
pub const IS_RELEASED: &str = "isReleased";
/// Attribute `data` (B, optional).
pub const DATA: &str = "data";
const IS_RELEASED_VALUE: &str = "1";

const OWNED_CONDITION: &str = "attribute_exists(#pk) AND #rvn = :rvn AND #on = :on";

/// Error codes that mean "try again later".
const RETRYABLE_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
];

/// Billing of a lock table created by [`create_lock_table_if_missing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockTableBilling {
    /// `PAY_PER_REQUEST` (Hudi's default).
    PayPerRequest,
    /// `PROVISIONED` with these capacity units.
    Provisioned {
        /// `hoodie.write.lock.dynamodb.read_capacity`.
        read_capacity: i64,
        /// `hoodie.write.lock.dynamodb.write_capacity`.
        write_capacity: i64,
    },
}

/// Settings of a [`DynamoDbLock`], parsed from Hudi's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoDbLockConfig {
    /// The DynamoDB table.
    pub table: String,
    /// The lock's `key` value.
    pub partition_key: String,
    /// AWS region of the table.
    pub region: String,
    /// Endpoint override (a local emulator), with scheme.
    pub endpoint_url: Option<String>,
    /// Billing of a table created by [`create_lock_table_if_missing`].
    pub billing: LockTableBilling,
    /// How long [`create_lock_table_if_missing`] waits for the table to become ACTIVE.
    pub table_creation_timeout: Duration,
    /// The acquire wait (`hoodie.write.lock.wait_time_ms`), to pass to [`Lock::acquire`].
    pub wait: Duration,
    /// Lease timing (lease = `hoodie.write.lock.wait_time_ms`, heartbeat = lease / 3).
    pub lease: LeaseOptions,
    /// `ownerName` written by this client.
    pub owner_name: String,
}

fn config_error(key: &str, value: &str, reason: &str) -> LockError {
    LockError::Config {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

fn parse_positive(
    props: &BTreeMap<String, String>,
    key: &str,
    default: i64,
) -> Result<i64, LockError> {
    match props.get(key) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<i64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(config_error(key, v, "expected a positive integer")),
        },
    }
}

impl DynamoDbLockConfig {
    /// Reads Hudi's keys (see the module doc); the owner name is generated.
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self, LockError> {
        let non_empty = |key: &str| props.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
        let table = non_empty(TABLE_KEY)
            .ok_or_else(|| config_error(TABLE_KEY, "", "required for the DynamoDB lock"))?
            .to_string();
        let partition_key = non_empty(PARTITION_KEY_KEY)
            .or_else(|| non_empty(TABLE_NAME_KEY))
            .ok_or_else(|| {
                config_error(
                    PARTITION_KEY_KEY,
                    "",
                    "required when hoodie.table.name is not set (it is the default partition key)",
                )
            })?
            .to_string();
        let region = non_empty(REGION_KEY)
            .map(str::to_string)
            .or_else(|| {
                std::env::var("AWS_REGION")
                    .ok()
                    .filter(|r| !r.trim().is_empty())
            })
            .unwrap_or_else(|| "us-east-1".to_string());
        let endpoint_url = non_empty(ENDPOINT_URL_KEY).map(|url| {
            if url.starts_with("http://") || url.starts_with("https://") {
                url.to_string()
            } else {
                format!("https://{url}")
            }
        });
        let billing = match props.get(BILLING_MODE_KEY).map(|v| v.trim()) {
            None | Some("PAY_PER_REQUEST") => LockTableBilling::PayPerRequest,
            Some("PROVISIONED") => LockTableBilling::Provisioned {
                read_capacity: parse_positive(props, READ_CAPACITY_KEY, 20)?,
                write_capacity: parse_positive(props, WRITE_CAPACITY_KEY, 10)?,
            },
            Some(other) => {
                return Err(config_error(
                    BILLING_MODE_KEY,
                    other,
                    "expected PAY_PER_REQUEST or PROVISIONED",
                ))
            }
        };
        let creation_ms = parse_positive(props, TABLE_CREATION_TIMEOUT_KEY, 600_000)?;
        let wait_ms = wait_time_ms(props)?;
        let lease = LeaseOptions::hudi(Duration::from_millis(wait_ms));
        lease.validate()?;
        Ok(Self {
            table,
            partition_key,
            region,
            endpoint_url,
            billing,
            table_creation_timeout: Duration::from_millis(
                u64::try_from(creation_ms).unwrap_or(600_000),
            ),
            wait: Duration::from_millis(wait_ms),
            lease,
            owner_name: default_owner_name(),
        })
    }

    /// With an explicit owner name (it must be unique per client).
    pub fn with_owner_name(mut self, owner_name: impl Into<String>) -> Self {
        self.owner_name = owner_name.into();
        self
    }

    /// With other lease timing (tests use short leases and a short refresh period).
    pub fn with_lease(mut self, lease: LeaseOptions) -> Self {
        self.lease = lease;
        self
    }
}

/// The conditional requests on one lock item.
#[derive(Debug)]
struct DynamoDbStore {
    client: Client,
    table: String,
    key: String,
    describe: String,
}

impl DynamoDbStore {
    fn backend_error<E>(&self, operation: &'static str, err: SdkError<E, HttpResponse>) -> LockError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let retryable = match &err {
            SdkError::TimeoutError(_)
            | SdkError::DispatchFailure(_)
            | SdkError::ResponseError(_) => true,
            SdkError::ServiceError(se) => {
                se.err()
                    .code()
                    .is_some_and(|c| RETRYABLE_CODES.contains(&c))
                    || se.raw().status().as_u16() >= 500
            }
            _ => false,
        };
        LockError::Backend {
            lock: self.describe.clone(),
            operation,
            message: DisplayErrorContext(&err).to_string(),
            retryable,
        }
    }

    fn key_value(&self) -> AttributeValue {
        AttributeValue::S(self.key.clone())
    }

    fn parse(
        &self,
        item: &std::collections::HashMap<String, AttributeValue>,
    ) -> Result<LockRecord, LockError> {
        let string = |name: &str| -> Result<String, LockError> {
            match item.get(name) {
                Some(AttributeValue::S(s)) => Ok(s.clone()),
                Some(other) => Err(LockError::Corrupt {
                    lock: self.describe.clone(),
                    reason: format!("attribute {name} is not a string: {other:?}"),
                }),
                None => Err(LockError::Corrupt {
                    lock: self.describe.clone(),
                    reason: format!("attribute {name} is missing"),
                }),
            }
        };
        let lease = string(LEASE_DURATION)?;
        let lease_ms: u64 = lease.trim().parse().map_err(|_| LockError::Corrupt {
            lock: self.describe.clone(),
            reason: format!("{LEASE_DURATION} {lease:?} is not a number of milliseconds"),
        })?;
        Ok(LockRecord {
            key: self.key.clone(),
            owner: string(OWNER_NAME)?,
            record_version: string(RECORD_VERSION_NUMBER)?,
            lease_duration: Duration::from_millis(lease_ms),
            // The lock client tests presence only.
            released: item.contains_key(IS_RELEASED),
            sequence: None,
        })
    }
}

fn is_condition_failed<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    err.as_service_error().and_then(|e| e.code()) == Some("ConditionalCheckFailedException")
}

#[async_trait]
impl LeaseStore for DynamoDbStore {
    fn describe(&self) -> &str {
        &self.describe
    }

    async fn read(&self) -> Result<Option<LockRecord>, LockError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PARTITION_KEY_ATTRIBUTE, self.key_value())
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.backend_error("GetItem", e))?;
        match out.item() {
            Some(item) if !item.is_empty() => self.parse(item).map(Some),
            _ => Ok(None),
        }
    }

    async fn create(
        &self,
        new: &LockRecord,
        expect: Expect<'_>,
    ) -> Result<Option<LockRecord>, LockError> {
        let mut req = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(PARTITION_KEY_ATTRIBUTE, self.key_value())
            .item(OWNER_NAME, AttributeValue::S(new.owner.clone()))
            .item(
                LEASE_DURATION,
                AttributeValue::S(new.lease_duration.as_millis().to_string()),
            )
            .item(
                RECORD_VERSION_NUMBER,
                AttributeValue::S(new.record_version.clone()),
            )
            .expression_attribute_names("#pk", PARTITION_KEY_ATTRIBUTE);
        req = match expect {
            Expect::Absent => req.condition_expression("attribute_not_exists(#pk)"),
            Expect::Released(_) => req
                .condition_expression("attribute_exists(#pk) AND #ir = :ir")
                .expression_attribute_names("#ir", IS_RELEASED)
                .expression_attribute_values(
                    ":ir",
                    AttributeValue::S(IS_RELEASED_VALUE.to_string()),
                ),
            Expect::Stale(seen) => req
                .condition_expression("attribute_exists(#pk) AND #rvn = :rvn")
                .expression_attribute_names("#rvn", RECORD_VERSION_NUMBER)
                .expression_attribute_values(
                    ":rvn",
                    AttributeValue::S(seen.record_version.clone()),
                ),
        };
        match req.send().await {
            Ok(_) => Ok(Some(LockRecord {
                key: self.key.clone(),
                released: false,
                sequence: None,
                ..new.clone()
            })),
            Err(e) if is_condition_failed(&e) => Ok(None),
            Err(e) => Err(self.backend_error("PutItem", e)),
        }
    }

    async fn renew(
        &self,
        held: &LockRecord,
        new_version: &str,
        lease: Duration,
    ) -> Result<Option<LockRecord>, LockError> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PARTITION_KEY_ATTRIBUTE, self.key_value())
            .update_expression("SET #ld = :ld, #rvn = :newRvn")
            .condition_expression(OWNED_CONDITION)
            .expression_attribute_names("#pk", PARTITION_KEY_ATTRIBUTE)
            .expression_attribute_names("#ld", LEASE_DURATION)
            .expression_attribute_names("#rvn", RECORD_VERSION_NUMBER)
            .expression_attribute_names("#on", OWNER_NAME)
            .expression_attribute_values(":rvn", AttributeValue::S(held.record_version.clone()))
            .expression_attribute_values(":on", AttributeValue::S(held.owner.clone()))
            .expression_attribute_values(":newRvn", AttributeValue::S(new_version.to_string()))
            .expression_attribute_values(":ld", AttributeValue::S(lease.as_millis().to_string()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(Some(LockRecord {
                record_version: new_version.to_string(),
                lease_duration: lease,
                ..held.clone()
            })),
            Err(e) if is_condition_failed(&e) => Ok(None),
            Err(e) => Err(self.backend_error("UpdateItem", e)),
        }
    }

    async fn remove(&self, held: &LockRecord) -> Result<bool, LockError> {
        let res = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(PARTITION_KEY_ATTRIBUTE, self.key_value())
            .condition_expression(OWNED_CONDITION)
            .expression_attribute_names("#pk", PARTITION_KEY_ATTRIBUTE)
            .expression_attribute_names("#rvn", RECORD_VERSION_NUMBER)
            .expression_attribute_names("#on", OWNER_NAME)
            .expression_attribute_values(":rvn", AttributeValue::S(held.record_version.clone()))
            .expression_attribute_values(":on", AttributeValue::S(held.owner.clone()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(self.backend_error("DeleteItem", e)),
        }
    }
}

/// The Hudi-compatible DynamoDB lock. See the module doc for the item and the requests.
#[derive(Debug, Clone)]
pub struct DynamoDbLock {
    engine: Engine,
    client: Client,
    config: DynamoDbLockConfig,
}

impl DynamoDbLock {
    /// A lock using `client` (built once and reused while the Lambda is warm).
    pub fn new(client: Client, config: DynamoDbLockConfig) -> Result<Self, LockError> {
        config.lease.validate()?;
        let describe = format!(
            "DynamoDB lock table {}, key {}",
            config.table, config.partition_key
        );
        let store = Arc::new(DynamoDbStore {
            client: client.clone(),
            table: config.table.clone(),
            key: config.partition_key.clone(),
            describe,
        });
        Ok(Self {
            engine: Engine {
                store,
                key: config.partition_key.clone(),
                owner: config.owner_name.clone(),
                options: config.lease,
                clock: default_clock(),
            },
            client,
            config,
        })
    }

    /// A lock configured from Hudi's keys, with an SDK client for the configured region and endpoint
    /// (credentials from the default provider chain).
    pub async fn from_props(props: &BTreeMap<String, String>) -> Result<Self, LockError> {
        let config = DynamoDbLockConfig::from_props(props)?;
        // Every lock request has a deadline: a hung acquire or heartbeat must fail, not outlive the lease.
        let timeouts = crate::aws_clients::ClientTimeouts::from_properties(props).map_err(|e| {
            LockError::Config {
                key: "hudi.sink.dynamodb.*.timeout.ms".into(),
                value: String::new(),
                reason: e.to_string(),
            }
        })?;
        let sdk = crate::aws_clients::sdk_config(
            &timeouts.dynamodb,
            Some(&config.region),
            config.endpoint_url.as_deref(),
        )
        .await;
        Self::new(Client::new(&sdk), config)
    }

    /// With the clock leases are measured with (default: local monotonic time).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.engine.clock = clock;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &DynamoDbLockConfig {
        &self.config
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Releases `record` (the lock client's `releaseLock(LockItem)`): refused with [`LockError::NotOwner`]
    /// without a request when it names another owner, and with [`LockError::Lost`] when the item no longer
    /// carries its owner and version (conditional delete).
    pub async fn release_record(&self, record: &LockRecord) -> Result<(), LockError> {
        self.engine.release_record(record).await
    }

    /// [`create_lock_table_if_missing`] for this lock's table.
    pub async fn create_table_if_missing(&self) -> Result<bool, LockError> {
        create_lock_table_if_missing(&self.client, &self.config).await
    }
}

#[async_trait]
impl Lock for DynamoDbLock {
    async fn acquire(&self, wait: Duration) -> Result<LockGuard, LockError> {
        self.engine.acquire(wait).await
    }

    async fn current(&self) -> Result<Option<LockRecord>, LockError> {
        self.engine.store.read().await
    }

    fn owner(&self) -> &str {
        &self.engine.owner
    }

    fn describe(&self) -> &str {
        self.engine.describe()
    }
}

/// Creates the lock table as Hudi does when it is missing (single String hash key `key`, the configured
/// billing) and waits until it is usable (ACTIVE or UPDATING) for at most `table_creation_timeout`. Returns
/// whether this call created it. For tests and the CLI; production tables are better made by infrastructure
/// code.
pub async fn create_lock_table_if_missing(
    client: &Client,
    config: &DynamoDbLockConfig,
) -> Result<bool, LockError> {
    let lock = format!("DynamoDB lock table {}", config.table);
    let fail = |operation: &'static str, message: String| LockError::Backend {
        lock: lock.clone(),
        operation,
        message,
        retryable: false,
    };
    if let Some(status) = table_status(client, &config.table, &lock).await? {
        if !usable(&status) {
            wait_until_usable(client, config, &lock).await?;
        }
        return Ok(false);
    }
    let key_schema = KeySchemaElement::builder()
        .attribute_name(PARTITION_KEY_ATTRIBUTE)
        .key_type(KeyType::Hash)
        .build()
        .map_err(|e| fail("CreateTable", e.to_string()))?;
    let attribute = AttributeDefinition::builder()
        .attribute_name(PARTITION_KEY_ATTRIBUTE)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(|e| fail("CreateTable", e.to_string()))?;
    let mut req = client
        .create_table()
        .table_name(&config.table)
        .key_schema(key_schema)
        .attribute_definitions(attribute);
    req = match config.billing {
        LockTableBilling::PayPerRequest => req.billing_mode(BillingMode::PayPerRequest),
        LockTableBilling::Provisioned {
            read_capacity,
            write_capacity,
        } => {
            let throughput = ProvisionedThroughput::builder()
                .read_capacity_units(read_capacity)
                .write_capacity_units(write_capacity)
                .build()
                .map_err(|e| fail("CreateTable", e.to_string()))?;
            req.billing_mode(BillingMode::Provisioned)
                .provisioned_throughput(throughput)
        }
    };
    let created = match req.send().await {
        Ok(_) => true,
        // Someone else is creating it right now.
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            false
        }
        Err(e) => return Err(fail("CreateTable", DisplayErrorContext(&e).to_string())),
    };
    wait_until_usable(client, config, &lock).await?;
    if created {
        tracing::info!(table = %config.table, "created DynamoDB lock table");
    }
    Ok(created)
}

fn usable(status: &TableStatus) -> bool {
    matches!(status, TableStatus::Active | TableStatus::Updating)
}

async fn table_status(
    client: &Client,
    table: &str,
    lock: &str,
) -> Result<Option<TableStatus>, LockError> {
    match client.describe_table().table_name(table).send().await {
        Ok(out) => Ok(Some(
            out.table()
                .and_then(|t| t.table_status())
                .cloned()
                .unwrap_or(TableStatus::Creating),
        )),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_not_found_exception()) =>
        {
            Ok(None)
        }
        Err(e) => Err(LockError::Backend {
            lock: lock.to_string(),
            operation: "DescribeTable",
            message: DisplayErrorContext(&e).to_string(),
            retryable: false,
        }),
    }
}

async fn wait_until_usable(
    client: &Client,
    config: &DynamoDbLockConfig,
    lock: &str,
) -> Result<(), LockError> {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = table_status(client, &config.table, lock).await? {
            if usable(&status) {
                return Ok(());
            }
        }
        if started.elapsed() > config.table_creation_timeout {
            return Err(LockError::Backend {
                lock: lock.to_string(),
                operation: "DescribeTable",
                message: format!(
                    "table did not become ACTIVE within {:?}",
                    config.table_creation_timeout
                ),
                retryable: false,
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn partition_key_defaults_to_the_table_name() {
        let c = DynamoDbLockConfig::from_props(&props(&[
            (TABLE_KEY, "locks"),
            (TABLE_NAME_KEY, "trips"),
        ]))
        .expect("config");
        assert_eq!(c.table, "locks");
        assert_eq!(c.partition_key, "trips");
        assert_eq!(c.wait, Duration::from_secs(60));
        assert_eq!(c.lease, LeaseOptions::hudi(Duration::from_secs(60)));
        assert_eq!(c.billing, LockTableBilling::PayPerRequest);
        assert_eq!(c.table_creation_timeout, Duration::from_secs(600));
        let c = DynamoDbLockConfig::from_props(&props(&[
            (TABLE_KEY, "locks"),
            (TABLE_NAME_KEY, "trips"),
            (PARTITION_KEY_KEY, "explicit"),
            (super::super::WAIT_TIME_MS_KEY, "1500"),
            (ENDPOINT_URL_KEY, "dynamodb.local:8000"),
            (REGION_KEY, "eu-west-1"),
            (BILLING_MODE_KEY, "PROVISIONED"),
            (WRITE_CAPACITY_KEY, "3"),
        ]))
        .expect("config");
        assert_eq!(c.partition_key, "explicit");
        assert_eq!(c.lease.lease_duration, Duration::from_millis(1500));
        assert_eq!(c.lease.heartbeat_period, Duration::from_millis(500));
        assert_eq!(c.wait, Duration::from_millis(1500));
        assert_eq!(
            c.endpoint_url.as_deref(),
            Some("https://dynamodb.local:8000")
        );
        assert_eq!(c.region, "eu-west-1");
        assert_eq!(
            c.billing,
            LockTableBilling::Provisioned {
                read_capacity: 20,
                write_capacity: 3
            }
        );
    }

    #[test]
    fn missing_or_bad_keys_are_named() {
        let err =
            DynamoDbLockConfig::from_props(&props(&[(TABLE_NAME_KEY, "t")])).expect_err("no table");
        assert!(err.to_string().contains(TABLE_KEY), "{err}");
        let err = DynamoDbLockConfig::from_props(&props(&[(TABLE_KEY, "l")])).expect_err("no key");
        assert!(err.to_string().contains(PARTITION_KEY_KEY), "{err}");
        let err = DynamoDbLockConfig::from_props(&props(&[
            (TABLE_KEY, "l"),
            (TABLE_NAME_KEY, "t"),
            (BILLING_MODE_KEY, "pay_per_request"),
        ]))
        .expect_err("billing");
        assert!(err.to_string().contains(BILLING_MODE_KEY), "{err}");
    }
}
