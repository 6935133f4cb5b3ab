//! Shared helpers: the Spark-written golden tables of `testdata/` (Apache-2.0, from hudi-rs), unpacked per test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod canon;
pub mod crash;
pub mod gen;
pub mod moto;
pub mod python;
pub mod rows;
pub mod table;

/// Every table-version-6 golden table shipped in `testdata/hudi-rs-tables`.
pub const V6_TABLES: &[&str] = &[
    "v6_complexkeygen_hivestyle",
    "v6_empty",
    "v6_nonpartitioned",
    "v6_simplekeygen_hivestyle_no_metafields",
    "v6_simplekeygen_nonhivestyle",
    "v6_simplekeygen_nonhivestyle_overwritetable",
    "v6_timebasedkeygen_nonhivestyle",
];

/// The table-version-8 golden tables (to check that they are refused clearly).
pub const V8_TABLES: &[&str] = &[
    "v8_complexkeygen_hivestyle",
    "v8_empty",
    "v8_nonpartitioned",
    "v8_simplekeygen_nonhivestyle",
];

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crate lives in <root>/crates/<name>")
        .to_path_buf()
}

/// `testdata/hudi-rs-tables` in the repository: the copy-on-write golden tables.
pub fn testdata_dir() -> PathBuf {
    let dir = workspace_root().join("testdata/hudi-rs-tables");
    assert!(dir.is_dir(), "golden tables not found at {}", dir.display());
    dir
}

/// `testdata/hudi-rs-tables-mor` (merge-on-read tables), beside [`testdata_dir`].
pub fn mor_testdata_dir() -> PathBuf {
    let dir = testdata_dir().join("../hudi-rs-tables-mor");
    assert!(
        dir.is_dir(),
        "merge-on-read golden tables not found at {}",
        dir.display()
    );
    dir
}

/// A golden table unpacked into a fresh temporary directory. Keep the `TempDir` alive while using the path.
pub struct GoldenTable {
    _dir: tempfile::TempDir,
    /// The table's base path.
    pub path: PathBuf,
    /// The table's name (zip name without extension).
    pub name: String,
}

/// Unpacks `<name>.zip` (skipping macOS `__MACOSX` and `.DS_Store` noise) and returns its base path.
pub fn golden_table(name: &str) -> GoldenTable {
    golden_table_in(&testdata_dir(), name)
}

/// Unpacks `<dir>/<name>.zip` as [`golden_table`] does.
pub fn golden_table_in(dir: &Path, name: &str) -> GoldenTable {
    let zip_path = dir.join(format!("{name}.zip"));
    let file = std::fs::File::open(&zip_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", zip_path.display()));
    let mut archive = zip::ZipArchive::new(file).expect("valid zip");
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).expect("zip entry");
        let Some(rel) = entry.enclosed_name() else {
            continue;
        };
        let rel_str = rel.to_string_lossy();
        if rel_str.starts_with("__MACOSX") || rel_str.ends_with(".DS_Store") {
            continue;
        }
        let out = dir.path().join(&rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&out).expect("mkdir");
        } else {
            std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
            let mut f = std::fs::File::create(&out).expect("create");
            std::io::copy(&mut entry, &mut f).expect("unzip");
        }
    }
    let path = dir.path().join(name);
    assert!(
        path.join(".hoodie").is_dir(),
        "{name}: no .hoodie after unzip"
    );
    GoldenTable {
        _dir: dir,
        path,
        name: name.to_string(),
    }
}

/// Every `.parquet` file under `root`, recursively, sorted.
pub fn parquet_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out
}

/// Every file under `root`, recursively, sorted (empty when `root` does not exist).
pub fn all_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out
}
