//! Every Spark-written base file in the golden tables is a byte-exact test of the bloom filter: rebuild it from
//! the file's `_hoodie_record_key` column, in file order, and compare with the footer Spark wrote.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use hudi_sink::base_file::bloom::{BloomFilter, BloomFilterType};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::common;

const BLOOM_KEY: &str = "org.apache.hudi.bloomfilter";
const LEGACY_BLOOM_KEY: &str = "com.uber.hoodie.bloomfilter";
const TYPE_CODE_KEY: &str = "hoodie_bloom_filter_type_code";
const MIN_KEY: &str = "hoodie_min_record_key";
const MAX_KEY: &str = "hoodie_max_record_key";
const RECORD_KEY_COL: &str = "_hoodie_record_key";

/// Java `String.compareTo`: UTF-16 code units, then length.
fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A base file's footer key/values and its record keys in file order (`None` = null).
struct BaseFile {
    footer: HashMap<String, String>,
    keys: Vec<Option<String>>,
}

fn read_base_file(path: &Path) -> BaseFile {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let footer: HashMap<String, String> = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv.key.clone(), kv.value.clone()?)))
        .collect();
    let mask = ProjectionMask::columns(builder.parquet_schema(), [RECORD_KEY_COL]);
    let reader = builder
        .with_projection(mask)
        .build()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut keys = Vec::new();
    for batch in reader {
        let batch = batch.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            batch.num_columns(),
            1,
            "{}: no {RECORD_KEY_COL}",
            path.display()
        );
        let column = batch.column(0).as_string::<i32>();
        keys.extend(
            (0..column.len()).map(|i| column.is_valid(i).then(|| column.value(i).to_string())),
        );
    }
    BaseFile { footer, keys }
}

#[test]
fn java_cmp_is_utf16_order() {
    assert_eq!(java_cmp("a", "b"), Ordering::Less);
    assert_eq!(java_cmp("ab", "a"), Ordering::Greater);
    assert_eq!(java_cmp("", ""), Ordering::Equal);
    // U+FF61 (one unit 0xFF61) sorts after U+1F600 (surrogates 0xD83D…) in UTF-16 but before it in UTF-8.
    assert_eq!(java_cmp("\u{ff61}", "\u{1f600}"), Ordering::Greater);
    assert!("\u{ff61}" < "\u{1f600}");
}

#[test]
fn footers_of_every_golden_file_are_rebuilt_byte_for_byte() {
    let mut with_footer = 0usize;
    let mut checked = 0usize;
    let mut without_footer = 0usize;
    let mut keys_checked = 0usize;

    for name in common::V6_TABLES.iter().chain(common::V8_TABLES) {
        let table = common::golden_table(name);
        for path in common::parquet_files(&table.path) {
            let rel = path
                .strip_prefix(&table.path)
                .unwrap_or(&path)
                .display()
                .to_string();
            let what = format!("{name}/{rel}");
            let file = read_base_file(&path);
            assert!(
                !file.footer.contains_key(LEGACY_BLOOM_KEY) || file.footer.contains_key(BLOOM_KEY),
                "{what}: legacy bloom footer only; this test would skip it"
            );

            let Some(expected) = file.footer.get(BLOOM_KEY) else {
                // populate.meta.fields=false: Hudi writes no bloom footer and no keys.
                without_footer += 1;
                assert!(
                    !file.keys.is_empty() && file.keys.iter().all(Option::is_none),
                    "{what}: no bloom footer, but record keys are not all null"
                );
                for key in [TYPE_CODE_KEY, MIN_KEY, MAX_KEY] {
                    assert!(
                        !file.footer.contains_key(key),
                        "{what}: {key} without bloom footer"
                    );
                }
                continue;
            };
            with_footer += 1;

            let keys: Vec<&str> = file
                .keys
                .iter()
                .map(|k| {
                    k.as_deref()
                        .unwrap_or_else(|| panic!("{what}: null record key"))
                })
                .collect();
            let mut rebuilt = BloomFilter::hudi_default();
            for key in &keys {
                rebuilt.add(key.as_bytes()).unwrap();
            }
            let text = rebuilt.to_base64();
            assert_eq!(text.len(), expected.len(), "{what}: Base64 length");
            assert!(
                text == *expected,
                "{what}: bloom filter differs from the footer"
            );

            assert_eq!(
                file.footer.get(TYPE_CODE_KEY).map(String::as_str),
                Some("DYNAMIC_V0"),
                "{what}"
            );
            assert_eq!(rebuilt.type_code(), Some("DYNAMIC_V0"));

            let min = keys.iter().copied().min_by(|a, b| java_cmp(a, b));
            let max = keys.iter().copied().max_by(|a, b| java_cmp(a, b));
            assert_eq!(
                file.footer.get(MIN_KEY).map(String::as_str),
                min,
                "{what}: min key"
            );
            assert_eq!(
                file.footer.get(MAX_KEY).map(String::as_str),
                max,
                "{what}: max key"
            );

            // Parse the footer back, as the writer does to prune files by key.
            let code = file.footer.get(TYPE_CODE_KEY).map(String::as_str);
            let filter_type = BloomFilterType::from_footer_type_code(code).unwrap();
            let parsed = BloomFilter::from_base64(expected, filter_type).unwrap();
            assert_eq!(parsed.to_bytes(), rebuilt.to_bytes(), "{what}");
            for key in &keys {
                assert!(parsed.might_contain(key.as_bytes()), "{what}: {key}");
            }
            assert!(!parsed.might_contain(b"no-such-record-key"), "{what}");

            checked += 1;
            keys_checked += keys.len();
        }
    }

    eprintln!(
        "bloom_golden: {checked} files matched byte-for-byte ({keys_checked} keys); \
         {without_footer} files without a bloom footer"
    );
    assert!(checked > 0, "no golden file carries a bloom footer");
    assert_eq!(checked, with_footer);
    assert!(
        without_footer > 0,
        "the no_metafields table should contribute files without a footer"
    );
}
