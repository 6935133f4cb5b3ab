//! Hudi's simple bucket index (`hoodie.index.type=BUCKET`, engine `SIMPLE`): a record's file group follows from
//! its record key alone.
//!
//! `bucket = (List.hashCode(hash field values) & Integer.MAX_VALUE) % numBuckets`, where the hash field values are
//! taken back out of the record key string the way `KeyGenUtils.extractRecordKeysByFields` does, and
//! `List.hashCode`/`String.hashCode` are Java's (31-based, over UTF-16 code units, wrapping at 32 bits). The
//! file group of bucket `n` has a file id whose first 8 characters are `n` zero-padded (`00000003-…-0`).
//!
//! Invariants: every function here is a pure function of its inputs and allocates nothing per record, except
//! [`new_bucket_file_id`] (once per new file group) and [`extract_hash_values`] (for tests and diagnostics).
//! A bucket count must be the same for every writer of a table, forever: Hudi does not persist it, and a
//! different count sends existing keys to other file groups (duplicates).

use std::num::NonZeroU32;

use thiserror::Error;

/// Most buckets per partition: bucket numbers must fit the 8 digits that replace the start of the file id.
pub const MAX_NUM_BUCKETS: u32 = 100_000_000;

/// Placeholder Hudi writes for a null record key part (`KeyGenerator.NULL_RECORDKEY_PLACEHOLDER`).
const NULL_PLACEHOLDER: &str = "__null__";
/// Placeholder Hudi writes for an empty record key part (`KeyGenerator.EMPTY_RECORDKEY_PLACEHOLDER`).
const EMPTY_PLACEHOLDER: &str = "__empty__";

/// An invalid bucket index configuration.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BucketIndexError {
    /// The bucket count is missing.
    #[error(
        "hoodie.bucket.index.num.buckets is not set; set it to the bucket count every writer of this table uses \
         (Hudi's default is 256, and it can never change for an existing table)"
    )]
    MissingNumBuckets,
    /// The bucket count is not a number in range.
    #[error("hoodie.bucket.index.num.buckets={value:?} is invalid: {reason}")]
    InvalidNumBuckets {
        /// The configured text.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A hash field is not one of the record key fields.
    #[error(
        "hoodie.bucket.index.hash.field names {field:?}, which is not a record key field ({record_key_fields}); \
         the hash fields must be a subset of the record key fields (written without spaces)"
    )]
    HashFieldNotInRecordKey {
        /// The offending hash field, as configured.
        field: String,
        /// The record key fields, comma separated.
        record_key_fields: String,
    },
    /// The engine is not the simple one.
    #[error("hoodie.index.bucket.engine={value:?} is not supported; only SIMPLE is")]
    UnsupportedEngine {
        /// The configured engine.
        value: String,
    },
}

/// The simple bucket index of one table: how many buckets each partition has and which record key fields are
/// hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketIndexConfig {
    /// Buckets per partition (`hoodie.bucket.index.num.buckets`).
    pub num_buckets: NonZeroU32,
    /// The record key fields whose values are hashed (`hoodie.bucket.index.hash.field`; default: all record key
    /// fields).
    pub hash_fields: Vec<String>,
}

impl BucketIndexConfig {
    /// Validates a bucket count and hash fields against the record key fields.
    ///
    /// An empty `hash_fields` means all record key fields, as in Hudi.
    pub fn try_new(
        num_buckets: u32,
        hash_fields: Vec<String>,
        record_key_fields: &[String],
    ) -> Result<Self, BucketIndexError> {
        let num_buckets = validate_num_buckets(num_buckets, &num_buckets.to_string())?;
        let hash_fields = if hash_fields.is_empty() {
            record_key_fields.to_vec()
        } else {
            hash_fields
        };
        if let Some(field) = hash_fields.iter().find(|f| !record_key_fields.contains(f)) {
            return Err(BucketIndexError::HashFieldNotInRecordKey {
                field: field.clone(),
                record_key_fields: record_key_fields.join(","),
            });
        }
        Ok(Self {
            num_buckets,
            hash_fields,
        })
    }

    /// Reads `hoodie.bucket.index.num.buckets` (required: a silent default could corrupt an existing table),
    /// `hoodie.bucket.index.hash.field` (split on `,` without trimming, as Hudi does, so that a stray space is an
    /// error here instead of a different hash) and `hoodie.index.bucket.engine` (must be `SIMPLE` if set).
    pub fn from_properties(
        props: &std::collections::BTreeMap<String, String>,
        record_key_fields: &[String],
    ) -> Result<Self, BucketIndexError> {
        if let Some(engine) = props.get("hoodie.index.bucket.engine") {
            if !engine.trim().eq_ignore_ascii_case("SIMPLE") {
                return Err(BucketIndexError::UnsupportedEngine {
                    value: engine.clone(),
                });
            }
        }
        let text = props
            .get("hoodie.bucket.index.num.buckets")
            .ok_or(BucketIndexError::MissingNumBuckets)?;
        let parsed: u32 = text
            .trim()
            .parse()
            .map_err(|_| BucketIndexError::InvalidNumBuckets {
                value: text.clone(),
                reason: "not a whole number",
            })?;
        let hash_fields = match props.get("hoodie.bucket.index.hash.field") {
            Some(fields) if !fields.is_empty() => fields.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let num_buckets = validate_num_buckets(parsed, text)?;
        Self::try_new(num_buckets.get(), hash_fields, record_key_fields)
    }

    /// The bucket of `record_key` under this configuration.
    pub fn bucket_id(&self, record_key: &str) -> u32 {
        bucket_id(record_key, &self.hash_fields, self.num_buckets)
    }
}

fn validate_num_buckets(value: u32, text: &str) -> Result<NonZeroU32, BucketIndexError> {
    let invalid = |reason| BucketIndexError::InvalidNumBuckets {
        value: text.to_string(),
        reason,
    };
    let n = NonZeroU32::new(value).ok_or_else(|| invalid("must be at least 1"))?;
    if value > MAX_NUM_BUCKETS {
        return Err(invalid(
            "must be at most 100000000 (bucket numbers have 8 digits in file ids)",
        ));
    }
    Ok(n)
}

/// Java's `String.hashCode`: `h = 31·h + c` over the UTF-16 code units, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Java's `List.hashCode` of a list of strings: `h = 31·h + (e == null ? 0 : e.hashCode())` starting at 1.
pub fn java_list_hash(values: &[Option<&str>]) -> i32 {
    values
        .iter()
        .fold(1i32, |h, value| list_hash_step(h, *value))
}

fn list_hash_step(h: i32, value: Option<&str>) -> i32 {
    h.wrapping_mul(31)
        .wrapping_add(value.map_or(0, java_string_hash))
}

/// Calls `visit` with each hash value `KeyGenUtils.extractRecordKeysByFields(recordKey, fields)` would return, in
/// order: the whole key when it lacks `,` or `:` (a simple key); otherwise the values of the `field:value` pairs
/// whose field is in `fields` (all of them when `fields` is empty or one empty name), `__null__` read as null and
/// `__empty__` as the empty string; the whole key when no pair matched. Values containing `:` or `,` are split the
/// way Hudi splits them (a `,` counts as a separator only if it precedes the next `field:`).
///
/// One deviation: where Hudi's loop never ends (a skipped field whose value has a `:` but no later `,`), this
/// stops at the end of the key.
pub fn for_each_hash_value<'k, S: AsRef<str>>(
    record_key: &'k str,
    fields: &[S],
    mut visit: impl FnMut(Option<&'k str>),
) {
    if !record_key.contains(',') || !record_key.contains(':') {
        visit(Some(record_key));
        return;
    }
    let all_fields = fields.is_empty() || (fields.len() == 1 && fields[0].as_ref().is_empty());
    let wanted = |name: &str| all_fields || fields.iter().any(|f| f.as_ref() == name);
    let bytes = record_key.as_bytes();
    let len = bytes.len();
    // Java's `indexOf(':', from)` and `lastIndexOf(',', at)`; both separators are ASCII, so byte offsets are
    // char boundaries.
    let next_colon = |from: usize| {
        bytes
            .get(from..)
            .and_then(|rest| rest.iter().position(|&b| b == b':'))
            .map(|p| p + from)
    };
    let last_comma = |at: Option<usize>| {
        at.and_then(|a| bytes[..=a.min(len - 1)].iter().rposition(|&b| b == b','))
    };
    let mut visited = false;
    let mut processed = 0;
    while processed < len {
        // Always found: `processed` sits just after a ',' that precedes a ':'.
        let Some(sep1) = next_colon(processed) else {
            break;
        };
        let field = &record_key[processed..sep1];
        let mut sep2 = next_colon(sep1 + 1);
        let mut comma = last_comma(sep2);
        // A ',' only ends the value if it comes before the next "field:"; skip ':' inside the value until one does.
        while let Some(colon) = sep2 {
            if comma.is_some_and(|c| c >= sep1) {
                break;
            }
            sep2 = next_colon(colon + 1);
            comma = last_comma(sep2);
        }
        let end = comma.filter(|&c| c > sep1);
        processed = end.map_or(len, |c| c + 1);
        if wanted(field) {
            let value = &record_key[sep1 + 1..end.unwrap_or(len)];
            visited = true;
            visit(match value {
                NULL_PLACEHOLDER => None,
                EMPTY_PLACEHOLDER => Some(""),
                other => Some(other),
            });
        }
    }
    if !visited {
        visit(Some(record_key));
    }
}

/// The hash values of `record_key` as a list (see [`for_each_hash_value`]); allocates, for tests and diagnostics.
pub fn extract_hash_values<'k, S: AsRef<str>>(
    record_key: &'k str,
    fields: &[S],
) -> Vec<Option<&'k str>> {
    let mut values = Vec::new();
    for_each_hash_value(record_key, fields, |v| values.push(v));
    values
}

/// The bucket of a record: `(List.hashCode(hash values) & 0x7fffffff) % num_buckets`, as Hudi's
/// `BucketIdentifier.getBucketId`. `hash_fields` empty means all fields of a complex key.
pub fn bucket_id<S: AsRef<str>>(
    record_key: &str,
    hash_fields: &[S],
    num_buckets: NonZeroU32,
) -> u32 {
    let mut hash = 1i32;
    for_each_hash_value(record_key, hash_fields, |value| {
        hash = list_hash_step(hash, value)
    });
    // Masking the sign bit leaves a non-negative i32, so the conversion is exact.
    (hash & i32::MAX).unsigned_abs() % num_buckets.get()
}

/// The 8-digit, zero-padded bucket number that starts a bucket file id (`BucketIdentifier.bucketIdStr`).
pub fn bucket_id_str(bucket: u32) -> String {
    format!("{bucket:08}")
}

/// A new file id for `bucket`: a random lower-case UUID v4 whose first 8 characters are the bucket number, then
/// `-0` (`BucketIdentifier.newBucketFileIdPrefix` + `FSUtils.createNewFileId`).
pub fn new_bucket_file_id(bucket: u32) -> String {
    let uuid = uuid::Uuid::new_v4().hyphenated().to_string();
    // The hyphenated form is ASCII and 36 characters long; its first 8 characters are hex digits.
    format!("{}{}-0", bucket_id_str(bucket), &uuid[8..])
}

/// The bucket number at the start of a bucket file id, or `None` if its first 8 characters are not digits.
pub fn bucket_id_from_file_id(file_id: &str) -> Option<u32> {
    let prefix = file_id.get(..8)?;
    if !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    prefix.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn n(value: u32) -> NonZeroU32 {
        NonZeroU32::new(value).expect("non-zero")
    }

    #[test]
    fn string_hash_matches_java() {
        // Values from java.lang.String.hashCode (Java 17); more are checked against a live JVM in tests/it.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("id1"), 104_054);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // Supplementary characters hash as two UTF-16 code units: U+1F600 = D83D DE00.
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(java_string_hash("é"), 0xE9);
    }

    #[test]
    fn list_hash_matches_java() {
        assert_eq!(java_list_hash(&[]), 1);
        assert_eq!(java_list_hash(&[None]), 31);
        assert_eq!(java_list_hash(&[Some("a")]), 31 + 97);
        assert_eq!(java_list_hash(&[Some("a"), None]), (31 + 97) * 31);
    }

    #[test]
    fn simple_keys_hash_whole() {
        assert_eq!(extract_hash_values("id1", &["id"]), vec![Some("id1")]);
        // A ':' without ',' (or the reverse) is still a simple key.
        assert_eq!(
            extract_hash_values("2023-04-01 12:00:00", &["ts"]),
            vec![Some("2023-04-01 12:00:00")]
        );
        assert_eq!(extract_hash_values("a,b", &["x"]), vec![Some("a,b")]);
        // Hudi's `BucketIdentifier`: `(List.hashCode(values) & Integer.MAX_VALUE) % numBuckets`, Java's
        // `String.hashCode` of each value.
        assert_eq!(bucket_id("id1", &["id"], n(16)), 5);
        assert_eq!(bucket_id("id1", &["id"], n(256)), 149);
        assert_eq!(bucket_id("user-123", &["id"], n(16)), 15);
        assert_eq!(bucket_id("user-123", &["id"], n(256)), 79);
    }

    #[test]
    fn complex_keys_keep_the_hash_fields_in_key_order() {
        let key = "id:1,name:Alice";
        assert_eq!(
            extract_hash_values(key, &["id", "name"]),
            vec![Some("1"), Some("Alice")]
        );
        assert_eq!(extract_hash_values(key, &["name"]), vec![Some("Alice")]);
        assert_eq!(
            extract_hash_values(key, &["name", "id"]),
            vec![Some("1"), Some("Alice")],
            "key order"
        );
        assert_eq!(
            extract_hash_values::<&str>(key, &[]),
            vec![Some("1"), Some("Alice")]
        );
        assert_eq!(
            extract_hash_values(key, &[""]),
            vec![Some("1"), Some("Alice")]
        );
        assert_eq!(
            extract_hash_values(key, &["other"]),
            vec![Some(key)],
            "nothing matched: whole key"
        );
        assert_eq!(
            extract_hash_values("a:__null__,b:__empty__,c:x", &["a", "b", "c"]),
            vec![None, Some(""), Some("x")]
        );
        assert_eq!(
            bucket_id("a:__null__,b:x", &["a", "b"], n(7)),
            (java_list_hash(&[None, Some("x")]) & i32::MAX) as u32 % 7
        );
    }

    #[test]
    fn values_with_separators_split_as_hudi_splits_them() {
        // ':' inside a value: skipped until a ',' precedes the next ':'.
        assert_eq!(
            extract_hash_values(
                "col1:val1,col2:2014-10-22 13:50:42,col3:val3",
                &["col1", "col2", "col3"]
            ),
            vec![Some("val1"), Some("2014-10-22 13:50:42"), Some("val3")]
        );
        // ',' inside a value: the last ',' before the next ':' separates.
        assert_eq!(
            extract_hash_values("a:x,y,b:z", &["a", "b"]),
            vec![Some("x,y"), Some("z")]
        );
        // The last value takes the rest, separators included.
        assert_eq!(
            extract_hash_values("a:1,b:x:y,z", &["a", "b"]),
            vec![Some("1"), Some("x:y,z")]
        );
        // Skipping a field whose value holds ':' and ','.
        assert_eq!(extract_hash_values("a:t:1,2,b:z", &["b"]), vec![Some("z")]);
        // Where Hudi would loop forever, stop at the end of the key.
        assert_eq!(extract_hash_values("x:1,a:1:2", &["x"]), vec![Some("1")]);
    }

    #[test]
    fn bucket_ids_are_in_range_and_stable() {
        for key in ["", "a", "id:1,name:Alice", "😀", "x".repeat(1000).as_str()] {
            for buckets in [1, 7, 16, 256] {
                let b = bucket_id(key, &["id", "name"], n(buckets));
                assert!(b < buckets);
                assert_eq!(b, bucket_id(key, &["id", "name"], n(buckets)));
            }
        }
        assert_eq!(bucket_id("anything", &["id"], n(1)), 0);
    }

    #[test]
    fn file_ids_carry_the_bucket() {
        assert_eq!(bucket_id_str(3), "00000003");
        assert_eq!(bucket_id_str(99_999_999), "99999999");
        let id = new_bucket_file_id(3);
        assert_eq!(id.len(), 38);
        assert!(id.starts_with("00000003-"), "{id}");
        assert!(id.ends_with("-0"), "{id}");
        assert_eq!(id, id.to_lowercase());
        assert_eq!(&id[14..15], "4", "UUID version nibble is kept: {id}");
        assert_ne!(new_bucket_file_id(3), id, "random");
        assert_eq!(bucket_id_from_file_id(&id), Some(3));
        assert_eq!(
            bucket_id_from_file_id("00000011-a324-4cfb-b24c-a6c562c921b9-0"),
            Some(11)
        );
        assert_eq!(
            bucket_id_from_file_id("a079bdb3-731c-4894-b855-abfcd6921007-0"),
            None
        );
        assert_eq!(bucket_id_from_file_id("0000001"), None);
        assert_eq!(bucket_id_from_file_id("+0000001-x"), None);
    }

    #[test]
    fn config_validation() {
        let keys = vec!["id".to_string(), "name".to_string()];
        let config = BucketIndexConfig::try_new(16, vec![], &keys).expect("valid");
        assert_eq!(config.hash_fields, keys);
        assert_eq!(
            config.bucket_id("id:1,name:Alice"),
            bucket_id("id:1,name:Alice", &keys, n(16))
        );
        assert!(matches!(
            BucketIndexConfig::try_new(0, vec![], &keys),
            Err(BucketIndexError::InvalidNumBuckets { .. })
        ));
        assert!(matches!(
            BucketIndexConfig::try_new(MAX_NUM_BUCKETS + 1, vec![], &keys),
            Err(BucketIndexError::InvalidNumBuckets { .. })
        ));
        let err = BucketIndexConfig::try_new(4, vec!["age".to_string()], &keys)
            .expect_err("not a key field");
        assert!(err.to_string().contains("\"age\""), "{err}");

        let mut props = BTreeMap::new();
        assert_eq!(
            BucketIndexConfig::from_properties(&props, &keys),
            Err(BucketIndexError::MissingNumBuckets)
        );
        props.insert(
            "hoodie.bucket.index.num.buckets".to_string(),
            "8".to_string(),
        );
        props.insert(
            "hoodie.bucket.index.hash.field".to_string(),
            "name".to_string(),
        );
        let config = BucketIndexConfig::from_properties(&props, &keys).expect("valid");
        assert_eq!(config.num_buckets.get(), 8);
        assert_eq!(config.hash_fields, vec!["name".to_string()]);
        props.insert(
            "hoodie.bucket.index.hash.field".to_string(),
            "id, name".to_string(),
        );
        assert!(matches!(
            BucketIndexConfig::from_properties(&props, &keys),
            Err(BucketIndexError::HashFieldNotInRecordKey { .. })
        ));
        props.insert(
            "hoodie.bucket.index.num.buckets".to_string(),
            "many".to_string(),
        );
        assert!(BucketIndexConfig::from_properties(&props, &keys).is_err());
        props.insert(
            "hoodie.bucket.index.num.buckets".to_string(),
            "8".to_string(),
        );
        props.insert(
            "hoodie.bucket.index.hash.field".to_string(),
            "id".to_string(),
        );
        props.insert(
            "hoodie.index.bucket.engine".to_string(),
            "CONSISTENT_HASHING".to_string(),
        );
        assert!(matches!(
            BucketIndexConfig::from_properties(&props, &keys),
            Err(BucketIndexError::UnsupportedEngine { .. })
        ));
    }
}
