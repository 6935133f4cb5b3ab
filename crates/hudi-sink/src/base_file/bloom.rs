//! Hudi's record-key bloom filter, stored Base64-encoded in every base file's Parquet footer
//! (`org.apache.hudi.bloomfilter`).
//!
//! Spark-Hudi's BLOOM index trusts this footer when it later upserts the table: a key missing from the
//! filter means a missed update, i.e. a duplicate record. So the filter is not "a bloom filter", it is
//! *Hudi's* bloom filter, and these invariants hold:
//!
//! * **Byte-identical to Hudi.** For the same keys added in the same order, [`BloomFilter::to_base64`]
//!   returns exactly the text Hudi's Java writer puts in the footer (format spec §6.4, checked against every
//!   Spark-written golden file in `tests/it/bloom_golden.rs`). This mirrors, by name, Hudi's
//!   `SimpleBloomFilter`, `HoodieDynamicBoundedBloomFilter`, `InternalDynamicBloomFilter`,
//!   `InternalBloomFilter`, `InternalFilter`, `HashFunction`, `BloomFilterUtils` and the Hadoop-derived
//!   `MurmurHash`; sizes are computed in `f64` exactly as Java computes them in `double`.
//! * **Keys are UTF-8 bytes of the record key and never empty** (Hudi throws on empty keys; we return
//!   [`BloomError::EmptyKey`] and leave the filter unchanged).
//! * **Dynamic rows:** a `DYNAMIC_V0` filter holds up to `num_entries` keys per row, grows one row at a time
//!   while `rows × num_entries < max_entries`, then cycles keys over the existing rows. Above
//!   `num_entries` keys the bytes therefore depend on the order keys were added, as in Hudi.
//! * **Hot path:** [`BloomFilter::add`] and [`BloomFilter::might_contain`] allocate nothing (except one new
//!   row each `num_entries` keys); serialisation is a single linear pass.
//! * **Library code never panics:** malformed serialised filters are reported with the byte offset.

use std::fmt;
use std::str::FromStr;

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;

/// Hudi's default `hoodie.index.bloom.num_entries`: keys per filter row.
pub const DEFAULT_NUM_ENTRIES: u32 = 60_000;
/// Hudi's default `hoodie.index.bloom.fpp`: target false-positive probability.
pub const DEFAULT_FPP: f64 = 0.000_000_001;
/// Hudi's default `hoodie.bloom.index.filter.dynamic.max.entries`: bound on a dynamic filter's growth.
pub const DEFAULT_DYNAMIC_MAX_ENTRIES: u32 = 100_000;
/// The Hudi config key that selects the filter type.
pub const FILTER_TYPE_CONFIG_KEY: &str = "hoodie.bloom.index.filter.type";

/// Bits per row for the defaults; a unit test proves it equals the sizing formula.
const DEFAULT_VECTOR_SIZE: u32 = 2_587_966;
/// Hash functions for the defaults; a unit test proves it equals the sizing formula.
const DEFAULT_NUM_HASHES: u32 = 30;
/// First int of every serialised filter: "versioned format" (a positive value is the legacy format).
const VERSION_MARKER: i32 = -1;
/// Hash type code for Hadoop's MurmurHash, the only one Hudi's factory uses.
const MURMUR_HASH_TYPE: i8 = 1;
/// Version marker + nbHash + hashType + vectorSize.
const HEADER_LEN: usize = 4 + 4 + 1 + 4;
/// nr + currentNbRecord + rowCount of a dynamic filter.
const DYNAMIC_FIELDS_LEN: usize = 4 + 4 + 4;

/// Java's `Base64.getDecoder()`: standard alphabet, padding optional, unused trailing bits ignored.
const JAVA_BASE64_DECODER: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// How each base file's filter is sized.
///
/// Hudi sizes every filter for `hoodie.index.bloom.num_entries` keys (60 000 by default: about 316 KiB of bits,
/// 430 KB of Base64 in the footer) whatever the file holds. A sink that commits small batches writes many small
/// files, so by default the filter is sized for the file's own key count when that is smaller, at the same
/// false-positive probability: Hudi reads the size from the serialised filter, so such a filter is exactly the
/// one Hudi would write with `num_entries` set to that count.
#[derive(Debug, Clone)]
pub enum BloomSizing {
    /// `hoodie.index.bloom.num_entries` was set: every file gets a copy of this filter, byte for byte what
    /// Hudi writes with the same settings.
    Fixed(BloomFilter),
    /// Up to `num_entries` keys per row as configured, fewer when the file has fewer keys.
    FitToFile {
        /// Filter layout.
        filter_type: BloomFilterType,
        /// Keys per row at most (Hudi's `num_entries`).
        num_entries: u32,
        /// Target false-positive probability.
        fpp: f64,
        /// Bound on a dynamic filter's growth.
        max_entries: u32,
    },
}

impl Default for BloomSizing {
    fn default() -> Self {
        Self::FitToFile {
            filter_type: BloomFilterType::DynamicV0,
            num_entries: DEFAULT_NUM_ENTRIES,
            fpp: DEFAULT_FPP,
            max_entries: DEFAULT_DYNAMIC_MAX_ENTRIES,
        }
    }
}

impl BloomSizing {
    /// An empty filter for a file of `keys` record keys.
    pub fn filter_for(&self, keys: usize) -> Result<BloomFilter, BloomError> {
        match self {
            Self::Fixed(filter) => Ok(filter.clone()),
            Self::FitToFile {
                filter_type,
                num_entries,
                fpp,
                max_entries,
            } => {
                let fitted = u32::try_from(keys)
                    .unwrap_or(u32::MAX)
                    .clamp(1, *num_entries);
                BloomFilter::new(*filter_type, fitted, *fpp, *max_entries)
            }
        }
    }
}

/// Why a bloom filter could not be built, fed or parsed.
#[derive(Debug, thiserror::Error)]
pub enum BloomError {
    /// Hudi refuses empty keys ("key length must be > 0"); a file written with one could not be indexed.
    #[error("bloom filter keys must not be empty (Hudi rejects empty record keys)")]
    EmptyKey,

    /// A sizing parameter Hudi would reject or that would give a useless or unbounded filter.
    #[error("invalid bloom filter parameter {name} = {value}: {reason}")]
    InvalidParameter {
        /// The Hudi-side name of the parameter.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A `hoodie.bloom.index.filter.type` or footer type code that Hudi does not know.
    #[error("unknown bloom filter type {value:?} (expected SIMPLE or DYNAMIC_V0)")]
    UnknownType {
        /// The text found.
        value: String,
    },

    /// The footer text is not Java-compatible Base64.
    #[error("bloom filter is not valid Base64: {source}")]
    Base64 {
        /// The decoder's complaint, with the offending offset.
        #[source]
        source: base64::DecodeError,
    },

    /// The serialised filter ends before a field is complete.
    #[error("serialised bloom filter truncated at byte {offset}: {field} needs {needed} bytes, {available} left")]
    Truncated {
        /// Byte offset where the field starts.
        offset: usize,
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },

    /// The first int of a (row) header is not Hudi's versioned-format marker −1; positive values are the
    /// legacy unversioned Hadoop format with Jenkins hashing, which Hudi has never written.
    #[error("serialised bloom filter has unsupported version marker {version} at byte {offset} (expected -1)")]
    UnsupportedVersion {
        /// Byte offset of the marker.
        offset: usize,
        /// The marker found.
        version: i32,
    },

    /// Only hash type 1 (Murmur) is produced by Hudi's factory; other hashes would give other positions.
    #[error("serialised bloom filter uses hash type {hash_type} at byte {offset}; only 1 (Murmur) is supported")]
    UnsupportedHashType {
        /// Byte offset of the hash type byte.
        offset: usize,
        /// The hash type found.
        hash_type: i8,
    },

    /// A numeric field Hudi can never write (non-positive sizes or counts).
    #[error("serialised bloom filter has invalid {field} = {value} at byte {offset}")]
    InvalidField {
        /// Byte offset of the field.
        offset: usize,
        /// The field's name.
        field: &'static str,
        /// The value found.
        value: i64,
    },

    /// A dynamic filter row whose header disagrees with the filter's; Hudi writes identical headers.
    #[error(
        "row {row} at byte {offset} has {row_hashes} hashes over {row_vector_size} bits, \
         but the filter header says {num_hashes} over {vector_size}"
    )]
    RowMismatch {
        /// Byte offset of the row header.
        offset: usize,
        /// Row index.
        row: usize,
        /// The row's hash count.
        row_hashes: u32,
        /// The row's vector size.
        row_vector_size: u32,
        /// The filter's hash count.
        num_hashes: u32,
        /// The filter's vector size.
        vector_size: u32,
    },

    /// Bytes after a complete filter. Java ignores them; here they signal a wrong filter type (for example a
    /// `DYNAMIC_V0` payload parsed as `SIMPLE`), which would otherwise yield a garbage filter.
    #[error("serialised bloom filter has {len} unexpected trailing bytes at byte {offset} (wrong filter type?)")]
    TrailingBytes {
        /// Byte offset where the filter ended.
        offset: usize,
        /// Number of extra bytes.
        len: usize,
    },
}

/// The two filter layouts Hudi can write; the value of `hoodie.bloom.index.filter.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BloomFilterType {
    /// One fixed-size row (`SimpleBloomFilter`); no type-code footer is written.
    Simple,
    /// Rows added as keys grow, bounded by a maximum (`HoodieDynamicBoundedBloomFilter`); Hudi's default.
    #[default]
    DynamicV0,
}

impl BloomFilterType {
    /// The exact Hudi spelling, as used in config and in the `hoodie_bloom_filter_type_code` footer.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Simple => "SIMPLE",
            Self::DynamicV0 => "DYNAMIC_V0",
        }
    }

    /// Readers decide the type from the optional `hoodie_bloom_filter_type_code` footer: absent means
    /// `SIMPLE`, as in Hudi's `readBloomFilterFromMetadata`.
    pub fn from_footer_type_code(code: Option<&str>) -> Result<Self, BloomError> {
        code.map_or(Ok(Self::Simple), str::parse)
    }
}

impl fmt::Display for BloomFilterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BloomFilterType {
    type Err = BloomError;

    /// Case-insensitive, like Hudi's factory (`equalsIgnoreCase`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case(Self::Simple.as_str()) {
            Ok(Self::Simple)
        } else if s.eq_ignore_ascii_case(Self::DynamicV0.as_str()) {
            Ok(Self::DynamicV0)
        } else {
            Err(BloomError::UnknownType {
                value: s.to_string(),
            })
        }
    }
}

/// Hadoop's 32-bit MurmurHash port, as Hudi uses it for bloom positions.
///
/// It is *not* reference MurmurHash2: tail bytes are sign-extended and the first tail byte lands highest,
/// so any "standard" murmur crate gives different positions and thus filters Hudi cannot read.
pub fn murmur_hash(data: &[u8], seed: i32) -> i32 {
    const M: u32 = 0x5bd1_e995;
    // Java `byte` → `int` sign extension.
    let sx = |b: u8| i32::from(b as i8) as u32;

    // Java arrays never exceed i32::MAX, so the truncation mirrors `seed ^ length`.
    let mut h = (seed as u32) ^ (data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        if let &[b0, b1, b2, b3] = chunk {
            let mut k = u32::from_le_bytes([b0, b1, b2, b3]);
            k = k.wrapping_mul(M);
            k ^= k >> 24;
            k = k.wrapping_mul(M);
            h = h.wrapping_mul(M);
            h ^= k;
        }
    }
    match *chunks.remainder() {
        [b0, b1, b2] => {
            h ^= sx(b0) << 16;
            h ^= sx(b1) << 8;
            h ^= sx(b2);
            h = h.wrapping_mul(M);
        }
        [b0, b1] => {
            h ^= sx(b0) << 8;
            h ^= sx(b1);
            h = h.wrapping_mul(M);
        }
        [b0] => {
            h ^= sx(b0);
            h = h.wrapping_mul(M);
        }
        _ => {}
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The `num_hashes` bit positions of a key (Hudi's `HashFunction`): each hash is seeded with the previous
/// one. An iterator so that adding and probing need no buffer.
struct Positions<'a> {
    key: &'a [u8],
    seed: i32,
    remaining: u32,
    vector_size: u32,
}

impl<'a> Positions<'a> {
    fn new(key: &'a [u8], num_hashes: u32, vector_size: u32) -> Self {
        Self {
            key,
            seed: 0,
            remaining: num_hashes,
            vector_size,
        }
    }
}

impl Iterator for Positions<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        self.seed = murmur_hash(self.key, self.seed);
        // Java `Math.abs(seed % vectorSize)`: the truncating remainder's magnitude is |seed| mod vectorSize.
        Some((self.seed.unsigned_abs() % self.vector_size) as usize)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.remaining as usize;
        (n, Some(n))
    }
}

/// Hudi's bloom filter sizing (`BloomFilterUtils`), in IEEE double like Java: `(vector_size, num_hashes)`.
fn sizing(num_entries: u32, fpp: f64) -> Result<(u32, u32), BloomError> {
    if num_entries == 0 || i32::try_from(num_entries).is_err() {
        return Err(BloomError::InvalidParameter {
            name: "hoodie.index.bloom.num_entries",
            value: num_entries.to_string(),
            reason: "must be between 1 and 2147483647",
        });
    }
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(BloomError::InvalidParameter {
            name: "hoodie.index.bloom.fpp",
            value: fpp.to_string(),
            reason: "must be strictly between 0 and 1",
        });
    }
    let n = f64::from(num_entries);
    let ln2 = 2f64.ln();
    let bits = (n * (-fpp.ln() / (ln2 * ln2))).ceil();
    // Java's `(int)` cast would saturate silently; refuse instead of allocating a 256 MiB row.
    if !(bits >= 1.0 && bits <= f64::from(i32::MAX)) {
        return Err(BloomError::InvalidParameter {
            name: "hoodie.index.bloom.fpp",
            value: fpp.to_string(),
            reason: "gives a bit vector larger than 2147483647 bits",
        });
    }
    let vector_size = bits as u32;
    let hashes = (ln2 * f64::from(vector_size) / n).ceil();
    if !(hashes >= 1.0 && hashes <= f64::from(i32::MAX)) {
        return Err(BloomError::InvalidParameter {
            name: "hoodie.index.bloom.fpp",
            value: fpp.to_string(),
            reason: "gives an unusable number of hash functions",
        });
    }
    Ok((vector_size, hashes as u32))
}

/// Bytes holding `vector_size` bits.
fn row_len(vector_size: u32) -> usize {
    (vector_size as usize).div_ceil(8)
}

/// A Hudi bloom filter over record keys, `SIMPLE` or `DYNAMIC_V0`.
///
/// Build one per base file with [`BloomFilter::hudi_default`] (or [`BloomFilter::new`] from config), add
/// every record key in write order, and store [`BloomFilter::to_base64`] in the footer.
#[derive(Clone)]
pub struct BloomFilter {
    filter_type: BloomFilterType,
    /// Bits per row (`vectorSize`), 1..=i32::MAX.
    vector_size: u32,
    /// Hash functions per key (`nbHash`), 1..=i32::MAX.
    num_hashes: u32,
    /// Bit vectors, bit `i` at byte `i / 8` value `1 << (i % 8)`; unused high bits stay 0.
    /// `SIMPLE` has exactly one row, `DYNAMIC_V0` at least one.
    rows: Vec<Vec<u8>>,
    /// Keys per row before a new row is considered (`nr`); Java int semantics.
    row_capacity: i32,
    /// Growth bound (`maxNr`); not serialised, so 0 after parsing, as in Hudi.
    max_entries: i32,
    /// Keys added since the last row was appended (`currentNbRecord`).
    current_row_records: i32,
    /// Set once growth stopped; keys then cycle over the rows (`reachedMax`).
    reached_max: bool,
    /// Next row in the cycle (`curMatrixIndex`).
    cursor: u64,
}

impl fmt::Debug for BloomFilter {
    // The bit vectors are hundreds of kilobytes: show the shape, not the bits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("filter_type", &self.filter_type)
            .field("vector_size", &self.vector_size)
            .field("num_hashes", &self.num_hashes)
            .field("rows", &self.rows.len())
            .field("row_capacity", &self.row_capacity)
            .field("max_entries", &self.max_entries)
            .field("current_row_records", &self.current_row_records)
            .field("reached_max", &self.reached_max)
            .field("cursor", &self.cursor)
            .finish()
    }
}

impl Default for BloomFilter {
    fn default() -> Self {
        Self::hudi_default()
    }
}

impl BloomFilter {
    /// The filter Spark-Hudi writes with default settings (`DYNAMIC_V0`, 60000 entries, fpp 1e-9, max
    /// 100000): what our files must carry to be indistinguishable from Spark's.
    pub fn hudi_default() -> Self {
        Self::with_sizes(
            BloomFilterType::DynamicV0,
            DEFAULT_VECTOR_SIZE,
            DEFAULT_NUM_HASHES,
            DEFAULT_NUM_ENTRIES as i32,
            DEFAULT_DYNAMIC_MAX_ENTRIES as i32,
        )
    }

    /// A filter sized from the Hudi config values (`hoodie.index.bloom.num_entries`,
    /// `hoodie.index.bloom.fpp`, `hoodie.bloom.index.filter.dynamic.max.entries`) with Hudi's formulas, so
    /// non-default settings still produce the bytes Hudi would. `max_entries` is ignored for `SIMPLE`.
    pub fn new(
        filter_type: BloomFilterType,
        num_entries: u32,
        fpp: f64,
        max_entries: u32,
    ) -> Result<Self, BloomError> {
        let (vector_size, num_hashes) = sizing(num_entries, fpp)?;
        let max_entries = i32::try_from(max_entries).map_err(|_| BloomError::InvalidParameter {
            name: "hoodie.bloom.index.filter.dynamic.max.entries",
            value: max_entries.to_string(),
            reason: "must be at most 2147483647",
        })?;
        // `sizing` has checked that num_entries fits an i32.
        let row_capacity = i32::try_from(num_entries).unwrap_or(i32::MAX);
        Ok(Self::with_sizes(
            filter_type,
            vector_size,
            num_hashes,
            row_capacity,
            max_entries,
        ))
    }

    fn with_sizes(
        filter_type: BloomFilterType,
        vector_size: u32,
        num_hashes: u32,
        row_capacity: i32,
        max_entries: i32,
    ) -> Self {
        Self {
            filter_type,
            vector_size,
            num_hashes,
            rows: vec![vec![0u8; row_len(vector_size)]],
            row_capacity,
            max_entries,
            current_row_records: 0,
            reached_max: false,
            cursor: 0,
        }
    }

    /// Which layout this filter serialises to.
    pub fn filter_type(&self) -> BloomFilterType {
        self.filter_type
    }

    /// The `hoodie_bloom_filter_type_code` footer value; Hudi writes the key only for dynamic filters, and
    /// readers take its absence to mean `SIMPLE`.
    pub fn type_code(&self) -> Option<&'static str> {
        match self.filter_type {
            BloomFilterType::Simple => None,
            BloomFilterType::DynamicV0 => Some(BloomFilterType::DynamicV0.as_str()),
        }
    }

    /// Bits per row; fixed by the sizing parameters, independent of the keys added.
    pub fn vector_size(&self) -> u32 {
        self.vector_size
    }

    /// Hash functions (bit positions) per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// Rows in the filter: 1 until a dynamic filter outgrows `num_entries` keys.
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// Records a key (the UTF-8 bytes of a record key). Rejects an empty key, as Hudi does, before touching
    /// any state.
    pub fn add(&mut self, key: &[u8]) -> Result<(), BloomError> {
        if key.is_empty() {
            return Err(BloomError::EmptyKey);
        }
        let row_index = self.select_row();
        let (num_hashes, vector_size) = (self.num_hashes, self.vector_size);
        if let Some(row) = self.rows.get_mut(row_index) {
            for position in Positions::new(key, num_hashes, vector_size) {
                if let Some(byte) = row.get_mut(position >> 3) {
                    *byte |= 1 << (position & 7);
                }
            }
        }
        self.current_row_records = self.current_row_records.wrapping_add(1);
        Ok(())
    }

    /// Whether a key may have been added (never a false negative). An empty key can never have been added,
    /// so it answers `false` where Hudi would throw.
    pub fn might_contain(&self, key: &[u8]) -> bool {
        if key.is_empty() {
            return false;
        }
        self.rows.iter().any(|row| {
            Positions::new(key, self.num_hashes, self.vector_size)
                .all(|p| row.get(p >> 3).is_some_and(|b| b & (1 << (p & 7)) != 0))
        })
    }

    /// Hudi's choice of the row a new key goes to (`getActiveStandardBF` + `addRow`); may append a row.
    fn select_row(&mut self) -> usize {
        if self.filter_type == BloomFilterType::Simple {
            return 0;
        }
        let rows = self.rows.len();
        if self.reached_max {
            // `rows` ≥ 1 by construction; `checked_rem` keeps this panic-free regardless.
            let index = self.cursor.checked_rem(rows as u64).unwrap_or(0) as usize;
            self.cursor = self.cursor.wrapping_add(1);
            return index;
        }
        if self.current_row_records >= self.row_capacity {
            // Java int arithmetic, overflow included.
            let capacity = i32::try_from(rows)
                .unwrap_or(i32::MAX)
                .wrapping_mul(self.row_capacity);
            if capacity < self.max_entries {
                self.rows.push(vec![0u8; row_len(self.vector_size)]);
                self.current_row_records = 0;
                return rows;
            }
            self.reached_max = true;
            return 0;
        }
        rows.saturating_sub(1)
    }

    /// Size of [`BloomFilter::to_bytes`], known up front so serialising never reallocates.
    pub fn serialized_len(&self) -> usize {
        let bits = row_len(self.vector_size);
        match self.filter_type {
            BloomFilterType::Simple => HEADER_LEN + bits,
            BloomFilterType::DynamicV0 => {
                HEADER_LEN + DYNAMIC_FIELDS_LEN + self.rows.len() * (HEADER_LEN + bits)
            }
        }
    }

    /// Hudi's binary form (Java `DataOutput`, big-endian), the bytes behind the footer's Base64.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.serialized_len());
        self.write_header(&mut out);
        match self.filter_type {
            BloomFilterType::Simple => {
                for row in &self.rows {
                    out.extend_from_slice(row);
                }
            }
            BloomFilterType::DynamicV0 => {
                out.extend_from_slice(&self.row_capacity.to_be_bytes());
                out.extend_from_slice(&self.current_row_records.to_be_bytes());
                let rows = i32::try_from(self.rows.len()).unwrap_or(i32::MAX);
                out.extend_from_slice(&rows.to_be_bytes());
                for row in &self.rows {
                    self.write_header(&mut out);
                    out.extend_from_slice(row);
                }
            }
        }
        out
    }

    fn write_header(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&VERSION_MARKER.to_be_bytes());
        out.extend_from_slice(&(self.num_hashes as i32).to_be_bytes());
        out.extend_from_slice(&MURMUR_HASH_TYPE.to_be_bytes());
        out.extend_from_slice(&(self.vector_size as i32).to_be_bytes());
    }

    /// The `org.apache.hudi.bloomfilter` footer value: Java `Base64.getEncoder()` text (standard alphabet,
    /// padded, no line breaks).
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.to_bytes())
    }

    /// Parses a footer value so the writer can prune files by key, as Hudi's BLOOM index does. `filter_type`
    /// comes from [`BloomFilterType::from_footer_type_code`].
    pub fn from_base64(text: &str, filter_type: BloomFilterType) -> Result<Self, BloomError> {
        let bytes = JAVA_BASE64_DECODER
            .decode(text)
            .map_err(|source| BloomError::Base64 { source })?;
        Self::from_bytes(&bytes, filter_type)
    }

    /// Parses Hudi's binary form. The growth bound is not serialised; like Hudi, a parsed dynamic filter
    /// takes it as 0, so keys added to a parsed filter whose last row is full cycle over the existing rows.
    pub fn from_bytes(bytes: &[u8], filter_type: BloomFilterType) -> Result<Self, BloomError> {
        let mut reader = Reader { bytes, offset: 0 };
        let header = reader.header()?;
        let (row_capacity, current_row_records, rows) = match filter_type {
            BloomFilterType::Simple => (0, 0, vec![reader.bits(header.vector_size)?]),
            BloomFilterType::DynamicV0 => {
                let row_capacity = reader.i32_at_least("nr", 1)?;
                let current_row_records = reader.i32_at_least("currentNbRecord", 0)?;
                let row_count = reader.i32_at_least("rowCount", 1)?;
                let mut rows = Vec::new();
                for row in 0..row_count as usize {
                    let offset = reader.offset;
                    let row_header = reader.header()?;
                    if row_header != header {
                        return Err(BloomError::RowMismatch {
                            offset,
                            row,
                            row_hashes: row_header.num_hashes,
                            row_vector_size: row_header.vector_size,
                            num_hashes: header.num_hashes,
                            vector_size: header.vector_size,
                        });
                    }
                    rows.push(reader.bits(header.vector_size)?);
                }
                (row_capacity, current_row_records, rows)
            }
        };
        let left = bytes.len().saturating_sub(reader.offset);
        if left != 0 {
            return Err(BloomError::TrailingBytes {
                offset: reader.offset,
                len: left,
            });
        }
        Ok(Self {
            filter_type,
            vector_size: header.vector_size,
            num_hashes: header.num_hashes,
            rows,
            row_capacity,
            max_entries: 0,
            current_row_records,
            reached_max: false,
            cursor: 0,
        })
    }
}

/// The fields of an `InternalFilter` header that matter once the version and hash type are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    num_hashes: u32,
    vector_size: u32,
}

/// A bounds-checked big-endian cursor that reports offsets in its errors.
struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, needed: usize, field: &'static str) -> Result<&'a [u8], BloomError> {
        let rest = self.bytes.get(self.offset..).unwrap_or_default();
        match rest.get(..needed) {
            Some(taken) => {
                self.offset += needed;
                Ok(taken)
            }
            None => Err(BloomError::Truncated {
                offset: self.offset,
                field,
                needed,
                available: rest.len(),
            }),
        }
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, BloomError> {
        match *self.take(4, field)? {
            [a, b, c, d] => Ok(i32::from_be_bytes([a, b, c, d])),
            // `take` returned exactly 4 bytes.
            _ => Err(BloomError::Truncated {
                offset: self.offset,
                field,
                needed: 4,
                available: 0,
            }),
        }
    }

    /// Reads an int that Hudi can only write as `min` or more.
    fn i32_at_least(&mut self, field: &'static str, min: i32) -> Result<i32, BloomError> {
        let offset = self.offset;
        let value = self.i32(field)?;
        if value < min {
            return Err(BloomError::InvalidField {
                offset,
                field,
                value: i64::from(value),
            });
        }
        Ok(value)
    }

    /// Reads an `InternalFilter` header, accepting only what Hudi writes.
    fn header(&mut self) -> Result<Header, BloomError> {
        let offset = self.offset;
        let version = self.i32("version marker")?;
        if version != VERSION_MARKER {
            return Err(BloomError::UnsupportedVersion { offset, version });
        }
        // Sizes are positive ints in Java; as u32 they index bits without sign checks.
        let num_hashes = self.i32_at_least("nbHash", 1)? as u32;
        let offset = self.offset;
        let hash_type = self.take(1, "hashType")?.first().map_or(0, |&b| b as i8);
        if hash_type != MURMUR_HASH_TYPE {
            return Err(BloomError::UnsupportedHashType { offset, hash_type });
        }
        let vector_size = self.i32_at_least("vectorSize", 1)? as u32;
        Ok(Header {
            num_hashes,
            vector_size,
        })
    }

    /// Reads one bit vector; bits past `vector_size` in the last byte are dropped, as Java ignores them.
    fn bits(&mut self, vector_size: u32) -> Result<Vec<u8>, BloomError> {
        let mut row = self.take(row_len(vector_size), "bit vector")?.to_vec();
        let used = vector_size % 8;
        if used != 0 {
            if let Some(last) = row.last_mut() {
                *last &= (1u8 << used) - 1;
            }
        }
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_VECTORS: &[(&str, i32, u32, [usize; 5])] = &[
        (
            "1",
            1_228_156_847,
            0x4934_2faf,
            [1_460_963, 105_785, 1_189_081, 2_066_078, 47_219],
        ),
        (
            "TXN-007",
            -693_178_798,
            0xd6ae_ee52,
            [2_191_876, 2_327_249, 2_515_256, 1_981_199, 454_638],
        ),
        (
            "id:1,name:Alice",
            71_696_166,
            0x0445_ff26,
            [1_821_084, 1_259_695, 2_258_328, 240_278, 789_559],
        ),
        (
            "abcd",
            646_393_889,
            0x2687_3021,
            [1_990_355, 1_895_795, 51_212, 2_131_065, 578_428],
        ),
        (
            "é",
            -384_040_333,
            0xe91c_0273,
            [1_021_365, 1_225_260, 586_514, 1_189_253, 2_525_069],
        ),
    ];

    fn positions(key: &str) -> Vec<usize> {
        Positions::new(key.as_bytes(), DEFAULT_NUM_HASHES, DEFAULT_VECTOR_SIZE).collect()
    }

    #[test]
    fn murmur_matches_spec_vectors() {
        assert_eq!("é".as_bytes(), [0xc3, 0xa9]);
        for &(key, signed, hex, _) in KEY_VECTORS {
            let h = murmur_hash(key.as_bytes(), 0);
            assert_eq!(h, signed, "{key}");
            assert_eq!(h as u32, hex, "{key}");
        }
    }

    #[test]
    fn first_five_positions_match_spec() {
        for &(key, _, _, first) in KEY_VECTORS {
            assert_eq!(positions(key)[..5], first, "{key}");
        }
    }

    #[test]
    fn all_positions_of_key_1() {
        let mut p = positions("1");
        assert_eq!(p.len(), 30);
        p.sort_unstable();
        assert_eq!(
            p,
            [
                47_219, 105_785, 222_072, 257_260, 352_770, 408_683, 411_489, 588_992, 589_946,
                641_450, 755_883, 883_953, 1_006_816, 1_176_393, 1_189_081, 1_310_977, 1_373_243,
                1_460_963, 1_488_581, 1_702_643, 1_755_127, 1_874_676, 1_902_059, 2_023_043,
                2_066_078, 2_090_518, 2_101_586, 2_137_834, 2_185_582, 2_490_016,
            ]
        );
    }

    #[test]
    fn sizing_matches_hudi_defaults() {
        assert_eq!(
            sizing(DEFAULT_NUM_ENTRIES, DEFAULT_FPP).unwrap(),
            (2_587_966, 30)
        );
        assert_eq!((DEFAULT_VECTOR_SIZE, DEFAULT_NUM_HASHES), (2_587_966, 30));
        let built = BloomFilter::new(
            BloomFilterType::DynamicV0,
            DEFAULT_NUM_ENTRIES,
            DEFAULT_FPP,
            DEFAULT_DYNAMIC_MAX_ENTRIES,
        )
        .unwrap();
        assert_eq!(built.to_bytes(), BloomFilter::hudi_default().to_bytes());
        assert_eq!(BloomFilter::default().to_bytes(), built.to_bytes());
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let bad = [
            (0, DEFAULT_FPP, 0),
            (u32::MAX, DEFAULT_FPP, 0),
            (10, 0.0, 0),
            (10, 1.0, 0),
            (10, -0.5, 0),
            (10, f64::NAN, 0),
            (10, DEFAULT_FPP, u32::MAX),
        ];
        for (n, p, max) in bad {
            let err = BloomFilter::new(BloomFilterType::DynamicV0, n, p, max).unwrap_err();
            assert!(
                matches!(err, BloomError::InvalidParameter { .. }),
                "{n} {p} {max}: {err}"
            );
        }
    }

    #[test]
    fn serialised_lengths() {
        let dynamic = BloomFilter::hudi_default();
        assert_eq!(dynamic.to_bytes().len(), 323_534);
        assert_eq!(dynamic.serialized_len(), 323_534);
        assert_eq!(dynamic.to_base64().len(), 431_380);
        let simple = BloomFilter::new(BloomFilterType::Simple, 60_000, 1e-9, 0).unwrap();
        assert_eq!(simple.to_bytes().len(), 323_509);
        assert_eq!(simple.serialized_len(), 323_509);
    }

    /// The 4-key file of §6.4 (`v6_nonpartitioned`, keys `1`..`4`).
    fn four_key_filter() -> BloomFilter {
        let mut f = BloomFilter::hudi_default();
        for key in ["1", "2", "3", "4"] {
            f.add(key.as_bytes()).unwrap();
        }
        f
    }

    #[test]
    fn worked_example_prefix_and_digest() {
        let f = four_key_filter();
        let bytes = f.to_bytes();
        let prefix: [u8; 38] = [
            0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x1e, 0x01, 0x00, 0x27, 0x7d, 0x3e, //
            0x00, 0x00, 0xea, 0x60, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, //
            0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x1e, 0x01, 0x00, 0x27, 0x7d, 0x3e,
        ];
        assert_eq!(bytes[..38], prefix);
        let text = f.to_base64();
        assert!(text.starts_with("/////wAAAB4BACd9PgAA6mAAAAAEAAAAAf////8AAAAeAQAnfT4"));
        assert_eq!(text.len(), 431_380);
        assert!(!text.contains('\n'));
        assert_eq!(
            hex(&sha256(text.as_bytes())),
            "20a16e582a630b81b8ace9e815c5f8de06dddd22e5a2038797fc47f8337e431b"
        );
        // 4 keys × 30 positions, all set in the only row.
        let set: u32 = f.rows[0].iter().map(|b| b.count_ones()).sum();
        assert!(set > 100 && set <= 120, "{set}");
    }

    #[test]
    fn round_trip_through_base64() {
        for filter_type in [BloomFilterType::Simple, BloomFilterType::DynamicV0] {
            let mut f = BloomFilter::new(filter_type, 1000, 1e-6, 5000).unwrap();
            let keys: Vec<String> = (0..500).map(|i| format!("key-{i}")).collect();
            for k in &keys {
                f.add(k.as_bytes()).unwrap();
            }
            let text = f.to_base64();
            let parsed = BloomFilter::from_base64(&text, filter_type).unwrap();
            assert_eq!(parsed.to_bytes(), f.to_bytes());
            assert_eq!(parsed.to_base64(), text);
            assert_eq!(parsed.filter_type(), filter_type);
            assert_eq!(parsed.type_code(), f.type_code());
            for k in &keys {
                assert!(parsed.might_contain(k.as_bytes()), "{k}");
            }
            let false_positives = (0..10_000)
                .filter(|i| parsed.might_contain(format!("other-{i}").as_bytes()))
                .count();
            assert!(false_positives < 5, "{false_positives}");
            // Java's decoder also accepts unpadded text.
            let unpadded = text.trim_end_matches('=');
            assert_eq!(
                BloomFilter::from_base64(unpadded, filter_type)
                    .unwrap()
                    .to_bytes(),
                f.to_bytes()
            );
        }
    }

    #[test]
    fn simple_layout_and_type_code() {
        let mut f = BloomFilter::new(BloomFilterType::Simple, 60_000, 1e-9, 0).unwrap();
        f.add(b"1").unwrap();
        assert_eq!(f.type_code(), None);
        let bytes = f.to_bytes();
        assert_eq!(
            bytes[..13],
            [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x1e, 0x01, 0x00, 0x27, 0x7d, 0x3e]
        );
        // Bit 47219 is the smallest position of key `1`: byte 5902, value 1 << 3.
        assert_eq!(bytes[13 + 47_219 / 8] & (1 << (47_219 % 8)), 1 << 3);
        let ones: u32 = bytes[13..].iter().map(|b| b.count_ones()).sum();
        assert_eq!(ones, 30);
        assert_eq!(BloomFilter::hudi_default().type_code(), Some("DYNAMIC_V0"));
    }

    #[test]
    fn last_byte_unused_bits_stay_zero() {
        // 2,587,966 = 8 × 323,495 + 6: the last byte holds 6 bits.
        let mut bytes = BloomFilter::new(BloomFilterType::Simple, 60_000, 1e-9, 0)
            .unwrap()
            .to_bytes();
        *bytes.last_mut().unwrap() = 0xff;
        let parsed = BloomFilter::from_bytes(&bytes, BloomFilterType::Simple).unwrap();
        assert_eq!(*parsed.to_bytes().last().unwrap(), 0x3f);
    }

    #[test]
    fn empty_key_is_rejected_without_side_effects() {
        let mut f = BloomFilter::hudi_default();
        assert!(matches!(f.add(b""), Err(BloomError::EmptyKey)));
        assert_eq!(f.to_bytes(), BloomFilter::hudi_default().to_bytes());
        assert!(!f.might_contain(b""));
    }

    #[test]
    fn dynamic_rows_with_defaults() {
        let mut f = BloomFilter::hudi_default();
        let key = |i: u32| format!("k{i}");
        for i in 1..=60_000 {
            f.add(key(i).as_bytes()).unwrap();
        }
        assert_eq!(f.row_count(), 1);
        assert_eq!(f.current_row_records, 60_000);
        f.add(key(60_001).as_bytes()).unwrap();
        assert_eq!(f.row_count(), 2);
        assert_eq!(f.current_row_records, 1);
        for i in 60_002..=120_000 {
            f.add(key(i).as_bytes()).unwrap();
        }
        assert_eq!(
            (f.row_count(), f.current_row_records, f.reached_max),
            (2, 60_000, false)
        );

        // 2 × 60000 ≥ 100000: no third row; key 120001 goes to row 0 without moving the cursor.
        let in_row = |f: &BloomFilter, row: usize, k: &str| {
            let one = BloomFilter {
                rows: vec![f.rows[row].clone()],
                ..f.clone()
            };
            one.might_contain(k.as_bytes())
        };
        f.add(key(120_001).as_bytes()).unwrap();
        assert!(f.reached_max);
        assert_eq!((f.row_count(), f.cursor), (2, 0));
        assert!(in_row(&f, 0, &key(120_001)) && !in_row(&f, 1, &key(120_001)));
        // Then rows 0, 1, 0, 1, …
        for (i, expected_row) in (120_002..=120_005).zip([0, 1, 0, 1]) {
            f.add(key(i).as_bytes()).unwrap();
            assert!(in_row(&f, expected_row, &key(i)), "{i}");
            assert!(!in_row(&f, 1 - expected_row, &key(i)), "{i}");
        }
        assert_eq!(f.current_row_records, 60_005);
        assert!(in_row(&f, 0, &key(1)) && in_row(&f, 1, &key(60_001)));

        let bytes = f.to_bytes();
        assert_eq!(bytes.len(), 13 + 12 + 2 * (13 + 323_496));
        assert_eq!(
            bytes[13..25],
            [0, 0, 0xea, 0x60, 0, 0, 0xea, 0x65, 0, 0, 0, 2]
        );
        let parsed = BloomFilter::from_base64(&f.to_base64(), BloomFilterType::DynamicV0).unwrap();
        assert_eq!(parsed.row_count(), 2);
        assert_eq!(parsed.to_bytes(), bytes);
        assert!((1..=120_005).all(|i| parsed.might_contain(key(i).as_bytes())));
    }

    #[test]
    fn dynamic_rows_follow_the_bound() {
        // nr = 10, max = 25: rows grow while rows × 10 < 25, i.e. to 3, then keys cycle from row 0.
        let mut f = BloomFilter::new(BloomFilterType::DynamicV0, 10, 0.01, 25).unwrap();
        let mut rows_after = Vec::new();
        for i in 1..=30 {
            f.add(format!("{i}").as_bytes()).unwrap();
            rows_after.push(f.row_count());
        }
        assert_eq!(rows_after[9], 1);
        assert_eq!(rows_after[10], 2);
        assert_eq!(rows_after[20], 3);
        assert!(!f.reached_max);
        f.add(b"31").unwrap();
        assert!(f.reached_max);
        assert_eq!((f.row_count(), f.cursor), (3, 0));
        for expected_cursor in 1..=4 {
            f.add(b"more").unwrap();
            assert_eq!(f.cursor, expected_cursor);
        }

        // A parsed filter does not know the bound (0, as in Hudi): once full it cycles, never grows.
        let mut full = BloomFilter::new(BloomFilterType::DynamicV0, 10, 0.01, 1000).unwrap();
        for i in 0..10 {
            full.add(format!("{i}").as_bytes()).unwrap();
        }
        let mut parsed =
            BloomFilter::from_bytes(&full.to_bytes(), BloomFilterType::DynamicV0).unwrap();
        parsed.add(b"x").unwrap();
        assert_eq!(parsed.row_count(), 1);
        assert!(parsed.reached_max);
    }

    #[test]
    fn filter_type_names() {
        for t in [BloomFilterType::Simple, BloomFilterType::DynamicV0] {
            assert_eq!(t.as_str().parse::<BloomFilterType>().unwrap(), t);
            assert_eq!(t.to_string(), t.as_str());
        }
        assert_eq!(
            "dynamic_v0".parse::<BloomFilterType>().unwrap(),
            BloomFilterType::DynamicV0
        );
        assert_eq!(
            "Simple".parse::<BloomFilterType>().unwrap(),
            BloomFilterType::Simple
        );
        for bad in ["", "DYNAMIC", "DYNAMIC_V1", " SIMPLE"] {
            assert!(matches!(
                bad.parse::<BloomFilterType>(),
                Err(BloomError::UnknownType { value }) if value == bad
            ));
        }
        assert_eq!(BloomFilterType::default(), BloomFilterType::DynamicV0);
        assert_eq!(
            BloomFilterType::from_footer_type_code(None).unwrap(),
            BloomFilterType::Simple
        );
        assert_eq!(
            BloomFilterType::from_footer_type_code(Some("DYNAMIC_V0")).unwrap(),
            BloomFilterType::DynamicV0
        );
    }

    #[test]
    fn malformed_input_is_reported_with_offsets() {
        let good = four_key_filter().to_bytes();
        let dynamic = BloomFilterType::DynamicV0;

        let err = BloomFilter::from_bytes(&good[..good.len() - 1], dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::Truncated {
                    offset: 38,
                    field: "bit vector",
                    needed: 323_496,
                    available: 323_495
                }
            ),
            "{err}"
        );
        let err = BloomFilter::from_bytes(&good[..20], dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::Truncated {
                    offset: 17,
                    field: "currentNbRecord",
                    ..
                }
            ),
            "{err}"
        );
        let err = BloomFilter::from_bytes(&[], dynamic).unwrap_err();
        assert!(
            matches!(err, BloomError::Truncated { offset: 0, .. }),
            "{err}"
        );

        let mut legacy = good.clone();
        legacy[..4].copy_from_slice(&30i32.to_be_bytes());
        let err = BloomFilter::from_bytes(&legacy, dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::UnsupportedVersion {
                    offset: 0,
                    version: 30
                }
            ),
            "{err}"
        );

        let mut jenkins = good.clone();
        jenkins[33] = 0;
        let err = BloomFilter::from_bytes(&jenkins, dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::UnsupportedHashType {
                    offset: 33,
                    hash_type: 0
                }
            ),
            "{err}"
        );

        let mut no_rows = good.clone();
        no_rows[21..25].copy_from_slice(&0i32.to_be_bytes());
        let err = BloomFilter::from_bytes(&no_rows, dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::InvalidField {
                    offset: 21,
                    field: "rowCount",
                    value: 0
                }
            ),
            "{err}"
        );

        let mut other_row = good.clone();
        other_row[37] = 0x3f;
        let err = BloomFilter::from_bytes(&other_row, dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::RowMismatch {
                    offset: 25,
                    row: 0,
                    ..
                }
            ),
            "{err}"
        );

        let mut zero_hashes = good.clone();
        zero_hashes[4..8].copy_from_slice(&0i32.to_be_bytes());
        let err = BloomFilter::from_bytes(&zero_hashes, dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::InvalidField {
                    offset: 4,
                    field: "nbHash",
                    value: 0
                }
            ),
            "{err}"
        );

        let mut trailing = good.clone();
        trailing.push(0);
        let err = BloomFilter::from_bytes(&trailing, dynamic).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::TrailingBytes {
                    offset: 323_534,
                    len: 1
                }
            ),
            "{err}"
        );

        // A dynamic payload read as SIMPLE is caught by its leftover bytes.
        let err = BloomFilter::from_bytes(&good, BloomFilterType::Simple).unwrap_err();
        assert!(
            matches!(
                err,
                BloomError::TrailingBytes {
                    offset: 323_509,
                    len: 25
                }
            ),
            "{err}"
        );

        for text in ["not base64!", "/////wAAAB4\nBACd9Pg=="] {
            let err = BloomFilter::from_base64(text, dynamic).unwrap_err();
            assert!(matches!(err, BloomError::Base64 { .. }), "{err}");
        }
    }

    #[test]
    fn debug_does_not_dump_bits() {
        let text = format!("{:?}", BloomFilter::hudi_default());
        assert!(text.len() < 400, "{text}");
        assert!(text.contains("DynamicV0"));
    }

    // A small SHA-256 (FIPS 180-4), only to check the spec's digest without a new dependency.
    fn sha256(data: &[u8]) -> [u8; 32] {
        const K: [u32; 64] = [
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
            0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
            0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
            0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
            0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
            0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
            0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
            0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
            0xc67178f2,
        ];
        let mut h: [u32; 8] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19,
        ];
        let mut msg = data.to_vec();
        msg.push(0x80);
        while msg.len() % 64 != 56 {
            msg.push(0);
        }
        msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
        for block in msg.chunks_exact(64) {
            let mut w = [0u32; 64];
            for (i, word) in block.chunks_exact(4).enumerate() {
                w[i] = u32::from_be_bytes(word.try_into().unwrap());
            }
            for i in 16..64 {
                let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
                let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
                w[i] = w[i - 16]
                    .wrapping_add(s0)
                    .wrapping_add(w[i - 7])
                    .wrapping_add(s1);
            }
            let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
            for i in 0..64 {
                let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
                let ch = (e & f) ^ (!e & g);
                let t1 = hh
                    .wrapping_add(s1)
                    .wrapping_add(ch)
                    .wrapping_add(K[i])
                    .wrapping_add(w[i]);
                let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
                let maj = (a & b) ^ (a & c) ^ (b & c);
                let t2 = s0.wrapping_add(maj);
                hh = g;
                g = f;
                f = e;
                e = d.wrapping_add(t1);
                d = c;
                c = b;
                b = a;
                a = t1.wrapping_add(t2);
            }
            for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
                *x = x.wrapping_add(y);
            }
        }
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_self_check() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
