//! What a table holds, as the crash tests inspect it: data files, slices as of an instant, the cleans on the
//! timeline with their plans, and the files under `.hoodie/` that are not timeline files.

use std::collections::BTreeSet;

use hudi_sink::services::clean::relative_path;
use hudi_sink::storage::Storage;
use hudi_sink::table::file_name::BaseFileName;
use hudi_sink::table::instant::{Action, Instant, InstantTime, State};
use hudi_sink::table::records::{CleanMetadata, CleanerPlan};
use hudi_sink::table::timeline::{latest_file_slices, Timeline, META_DIR};

/// A file slice as a reader picks it: path and size.
pub type Slice = (String, u64);

/// The slices visible as of `t`, checking that each one's file exists with its listed size.
pub async fn slices_as_of(storage: &dyn Storage, t: &InstantTime, what: &str) -> Vec<Slice> {
    let timeline = Timeline::load(storage).await.expect("timeline");
    let mut out = Vec::new();
    for slice in latest_file_slices(storage, &timeline, Some(t))
        .await
        .expect("slices")
    {
        let found = storage.head(&slice.path()).await.expect("head");
        assert_eq!(
            found.map(|m| m.size),
            Some(slice.size),
            "{what}: file {} of a slice as of {t}",
            slice.path()
        );
        out.push((slice.path(), slice.size));
    }
    out
}

/// Data files of the table (relative paths).
pub async fn data_files(storage: &dyn Storage) -> BTreeSet<String> {
    storage
        .list("")
        .await
        .expect("list")
        .into_iter()
        .filter(|o| !o.path.starts_with(META_DIR))
        .filter(|o| BaseFileName::parse(o.path.rsplit('/').next().unwrap_or(&o.path)).is_ok())
        .map(|o| o.path)
        .collect()
}

/// The instant of a base file's path.
pub fn instant_of(path: &str) -> InstantTime {
    BaseFileName::parse(path.rsplit('/').next().unwrap_or(path))
        .expect("base file")
        .instant_time
}

/// A clean on the timeline: its ECR and the files it planned (relative paths).
pub struct CleanInfo {
    /// Its state on the timeline.
    pub state: State,
    /// Its earliest commit to retain.
    pub ecr: Option<InstantTime>,
    /// The files it planned to delete.
    pub files: BTreeSet<String>,
}

/// The object at `path`, `None` when absent or empty.
pub async fn read_optional(storage: &dyn Storage, path: &str) -> Option<bytes::Bytes> {
    match storage.get(path).await {
        Ok(b) if !b.is_empty() => Some(b),
        Ok(_) => None,
        Err(e) if e.is_not_found() => None,
        Err(e) => panic!("{path}: {e}"),
    }
}

/// Every clean on the timeline, from its plan (requested or inflight) or, once those are archived, from
/// its metadata.
pub async fn clean_plans(storage: &dyn Storage, timeline: &Timeline) -> Vec<CleanInfo> {
    let mut out = Vec::new();
    for instant in timeline
        .instants()
        .iter()
        .filter(|i| i.action == Action::Clean)
    {
        let file = |s| Instant::new(instant.time.clone(), Action::Clean, s).path();
        let plan = match read_optional(storage, &file(State::Requested)).await {
            Some(b) => Some(b),
            None => read_optional(storage, &file(State::Inflight)).await,
        };
        let (ecr, files) = match plan {
            Some(bytes) => {
                let plan = CleanerPlan::from_avro_bytes(&bytes, storage.base_uri()).expect("plan");
                let files = plan
                    .file_paths_to_be_deleted_per_partition
                    .values()
                    .flatten()
                    .map(|f| relative_path(storage, &f.file_path).expect("inside the table"))
                    .collect();
                (plan.earliest_instant_to_retain.map(|i| i.timestamp), files)
            }
            None => {
                let bytes = read_optional(storage, &file(State::Completed))
                    .await
                    .expect("a clean without plan or metadata");
                let meta = CleanMetadata::from_avro_bytes(&bytes).expect("clean metadata");
                let files = meta
                    .partition_metadata
                    .values()
                    .flat_map(|p| {
                        p.success_delete_files
                            .iter()
                            .map(|n| format!("{}/{n}", p.partition_path))
                    })
                    .collect();
                (Some(meta.earliest_commit_to_retain), files)
            }
        };
        out.push(CleanInfo {
            state: instant.state,
            ecr: ecr.map(|t| InstantTime::parse(&t).expect("ecr")),
            files,
        });
    }
    out
}

/// Files under `.hoodie/` that are not instant files of the timeline.
pub async fn aux_files(storage: &dyn Storage) -> BTreeSet<String> {
    storage
        .list(META_DIR)
        .await
        .expect("list")
        .into_iter()
        .map(|o| o.path)
        .filter(|path| {
            let name = &path[META_DIR.len()..];
            name.contains('/') || Instant::parse_file_name(name).is_err()
        })
        .collect()
}
