//! Many tables from one `hudi-sink ingest`: three generated topics (two through a pattern route, one exact)
//! ingested in one run land in three tables, each read back by the independent Python `hudi` reader equal to
//! its generator's model row for row; a second run skips everything; a topic without a route is refused
//! before anything is written.

use std::path::Path;

use crate::common::*;

const TOPICS: [(&str, &str, &str); 3] = [
    ("pg.public.customers", "customers", "11"),
    ("pg.public.orders", "orders", "12"),
    ("audit-log", "audit", "13"),
];

/// `examples/local.properties` turned into a routed configuration under `dir`.
fn routed_config(dir: &Path) -> std::path::PathBuf {
    let example = std::fs::read_to_string(workspace_root().join("examples/local.properties"))
        .expect("examples/local.properties");
    let mut text: String = example
        .lines()
        .filter(|l| {
            !l.starts_with("hoodie.table.name=")
                && !l.starts_with("hoodie.base.path=")
                && !l.starts_with("hudi.sink.dead.letter.path=")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    text.push_str(&format!(
        "hoodie.base.path={0}/tables/$table\nhudi.sink.dead.letter.path={0}/dead-letters/$table\n\
         hudi.sink.route.pg.topic.regex=pg\\\\.public\\\\.(.*)\nhudi.sink.route.pg.table=$1\n\
         hudi.sink.route.audit.topic=audit-log\n",
        dir.display()
    ));
    let path = dir.join("routed.properties");
    std::fs::write(&path, text).expect("config");
    path
}

#[test]
fn one_ingest_of_three_topics_lands_in_three_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = |p: &Path| p.display().to_string();
    let config = routed_config(dir.path());
    let mut event_dirs = Vec::new();
    for (topic, table, seed) in TOPICS {
        let events = dir.path().join(format!("events-{table}"));
        let model = dir.path().join(format!("{table}.jsonl"));
        ok(&[
            "generate",
            "--out",
            &s(&events),
            "--topic",
            topic,
            "--records",
            "600",
            "--partitions",
            "2",
            "--keys",
            "200",
            "--records-per-file",
            "300",
            "--seed",
            seed,
            "--model",
            &s(&model),
        ]);
        event_dirs.push(s(&events));
    }
    let mut args = vec!["ingest".to_string(), "--config".into(), s(&config)];
    args.extend(event_dirs.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(&args);
    assert_eq!(number_after(&out, "records in "), 1800, "{out}");
    assert_eq!(number_after(&out, "already committed "), 0, "{out}");
    // The six files are one batch (one commit interval): one instant in each table.
    assert!(out.contains(": 3 commits"), "{out}");
    for (_, table, _) in TOPICS {
        assert_eq!(
            number_after(&out, &format!("table {table}: records in ")),
            600,
            "{out}"
        );
        let path = dir.path().join("tables").join(table);
        assert_eq!(completed_commits(&path).len(), 1, "{table}");
        let expected = model_rows(&dir.path().join(format!("{table}.jsonl")));
        assert!(!expected.is_empty());
        let actual = read_table(&path);
        assert_eq!(actual.len(), expected.len(), "{table}: row count");
        assert!(actual == expected, "{table}: table differs from the model");
    }
    // The same files again: every table skips them by its own checkpoint.
    let out = ok(&args);
    assert_eq!(number_after(&out, "already committed "), 1800, "{out}");
    assert!(out.contains(": 0 commits"), "{out}");

    // A topic without a route: refused before anything is written.
    let stray = dir.path().join("events-stray");
    ok(&[
        "generate",
        "--out",
        &s(&stray),
        "--topic",
        "inventory.items",
        "--records",
        "10",
    ]);
    let fresh = tempfile::tempdir().expect("tempdir");
    let config = routed_config(fresh.path());
    let first = &event_dirs[0];
    let failed = hudi_sink(&["ingest", "--config", &s(&config), first, &s(&stray)]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("no route for topic inventory.items"),
        "{stderr}"
    );
    assert!(!fresh.path().join("tables").exists(), "nothing written");
}
