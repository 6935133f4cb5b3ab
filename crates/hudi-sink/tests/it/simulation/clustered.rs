//! The clustered seeds: an insert table's stream and services (see the simulation's "Clustering").

use super::*;

/// Whether `seed` is clustered: a sixth of the seeds, all copy-on-write and outside the Delta third, decided
/// without drawing from the run's generator so that the other seeds run as they always have.
pub(super) fn is_clustered(seed: u64) -> bool {
    seed % 6 == 4
}

/// `props` made an insert table's: no index, so that its inline clustering runs.
pub(super) fn insert_table(props: &mut BTreeMap<String, String>) {
    props.insert("hoodie.datasource.write.operation".into(), "insert".into());
    props.remove("hoodie.index.type");
    props.remove("hoodie.bucket.index.num.buckets");
}

/// The services of `seed`, if clustered (else `services` as they are): inline clustering after every
/// commit, two small files to a group and files of at most 64 KB, so that a run's few dozen commits plan,
/// rewrite and complete clusterings of clustered files too while writers, zombies and faults run. Half of
/// these seeds copy row groups as encoded, half decode and re-encode them
/// (`hudi.sink.clustering.copy.min.row.group.bytes`).
pub(super) fn clustered_services(seed: u64, services: ServicesConfig) -> ServicesConfig {
    if !is_clustered(seed) {
        return services;
    }
    ServicesConfig {
        clustering_inline: true,
        clustering_max_commits: 1,
        clustering_fan_out: 2,
        clustering_target_file_max_bytes: 64 * 1024,
        clustering_copy_min_row_group_bytes: if seed % 12 == 4 { 0 } else { u64::MAX },
        ..services
    }
}

/// An insert table's stream: every record of `msgs` a new key (its partition and offset) and no deletes, so
/// that the upsert model holds each record once; a tombstone becomes an insert. Values that are not JSON
/// objects stay as they are (dead letters).
pub(super) fn insert_only(msgs: &mut [Msg]) {
    for m in msgs.iter_mut() {
        let uuid = format!("trip-p{}-o{:05}", m.partition, m.offset);
        let value = match m
            .value
            .as_deref()
            .map(serde_json::from_slice::<serde_json::Value>)
        {
            None => Some(
                Trip {
                    uuid: uuid.clone(),
                    ts: m.offset,
                    rider: "insert".into(),
                    fare: 0.5,
                    city: "sf".into(),
                    deleted: false,
                }
                .json(),
            ),
            Some(Ok(serde_json::Value::Object(mut fields))) => {
                fields.insert("uuid".into(), uuid.clone().into());
                fields.insert("_hoodie_is_deleted".into(), false.into());
                serde_json::to_vec(&fields).ok()
            }
            Some(_) => m.value.clone(),
        };
        m.key = Some(uuid);
        m.value = value;
    }
}
