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
mod tests;
