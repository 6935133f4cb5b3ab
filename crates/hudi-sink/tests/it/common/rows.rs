//! Rows of a table keyed for exact comparison: as this crate reads them (latest file slices as of an instant,
//! then the files) and as the Python readers return them.

use std::collections::BTreeMap;

use hudi_sink::storage::Storage;
use hudi_sink::table::instant::InstantTime;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use serde_json::{Map, Value};

use super::canon::canon_rows;

/// Rows keyed by (partition, record key); no duplicates.
pub type Rows = BTreeMap<(String, String), Map<String, Value>>;

/// `rows` keyed, without `_hoodie_file_name` when `drop_file_name`; panics on a duplicate key.
pub fn keyed(rows: Vec<Map<String, Value>>, drop_file_name: bool, what: &str) -> Rows {
    let mut out = Rows::new();
    for mut row in rows {
        let text = |c: &str| row[c].as_str().unwrap_or_default().to_string();
        let key = (text("_hoodie_partition_path"), text("_hoodie_record_key"));
        if drop_file_name {
            row.remove("_hoodie_file_name");
        }
        assert!(
            out.insert(key.clone(), row).is_none(),
            "{what}: duplicate {key:?}"
        );
    }
    out
}

/// The rows visible as of `as_of` (default: the latest commit) as this crate reads them: the latest file
/// slices, then the files, checking on the way that every slice's file exists and every row's
/// `_hoodie_file_name` names its file.
pub async fn library_rows(
    storage: &dyn Storage,
    as_of: Option<&InstantTime>,
    drop_file_name: bool,
    what: &str,
) -> Rows {
    let timeline = Timeline::load(storage).await.expect("timeline");
    let mut rows = Vec::new();
    for slice in latest_file_slices(storage, &timeline, as_of)
        .await
        .expect("slices")
    {
        let data = match storage.get(&slice.path()).await {
            Ok(data) => data,
            Err(e) => panic!("{what}: file {} of a visible slice: {e}", slice.path()),
        };
        let (_, batches) = hudi_sink::base_file::reader::read_base_file(data).expect("read");
        for row in canon_rows(&batches) {
            assert_eq!(
                row["_hoodie_file_name"].as_str(),
                Some(slice.file_name.as_str()),
                "{what}"
            );
            rows.push(row);
        }
    }
    keyed(rows, drop_file_name, what)
}

/// The latest rows as this crate reads them, without `_hoodie_file_name`.
pub async fn rust_rows(storage: &dyn Storage, what: &str) -> Rows {
    library_rows(storage, None, true, what).await
}
