//! Partition values from a partition path, decoded exactly as the sink's own partition-path code
//! (`crate::record::partition`) encodes them: one `/`-separated segment per partition field, `field=value` with
//! Hive-style partitioning, values escaped with Hive's escaping set when URL encoding is on, and
//! `__HIVE_DEFAULT_PARTITION__` for a null or empty value (Delta's `null`: Delta cannot tell `""` from null).

use crate::record::partition::{unescape_path_name, PartitionPathOptions, DEFAULT_PARTITION_PATH};

/// One partition column and its value (`None`: null).
pub type PartitionValue = (String, Option<String>);

/// The value of each partition field in `path`, in field order. Fails when the path does not have one
/// segment per field (a timestamp-based key generator's `yyyy/MM/dd` output, for one) or a Hive-style
/// segment does not start with its field's name.
pub fn partition_values(
    path: &str,
    fields: &[String],
    options: PartitionPathOptions,
) -> Result<Vec<PartitionValue>, String> {
    if fields.is_empty() {
        return if path.is_empty() {
            Ok(Vec::new())
        } else {
            Err(format!(
                "partition path {path:?} in a table without partition fields"
            ))
        };
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() != fields.len() {
        return Err(format!(
            "partition path {path:?} has {} segments for the {} partition fields {fields:?}",
            segments.len(),
            fields.len()
        ));
    }
    fields
        .iter()
        .zip(segments)
        .map(|(field, segment)| {
            let raw = if options.hive_style {
                segment
                    .strip_prefix(field.as_str())
                    .and_then(|rest| rest.strip_prefix('='))
                    .ok_or_else(|| {
                        format!("partition path {path:?}: segment {segment:?} is not `{field}=…`")
                    })?
            } else {
                segment
            };
            let value = if raw == DEFAULT_PARTITION_PATH {
                None
            } else if options.url_encode {
                Some(unescape_path_name(raw))
            } else {
                Some(raw.to_string())
            };
            Ok((field.clone(), value.filter(|v| !v.is_empty())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::partition::{append_segment, SegmentKind};

    fn fields(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// Encodes with the sink's own code, decodes with this module: the values come back.
    fn round_trip(values: &[Option<&str>], options: PartitionPathOptions) -> Vec<Option<String>> {
        let names: Vec<String> = (0..values.len()).map(|i| format!("p{i}")).collect();
        let mut path = String::new();
        for (name, value) in names.iter().zip(values) {
            append_segment(&mut path, name, *value, SegmentKind::Value, options).unwrap();
        }
        partition_values(&path, &names, options)
            .unwrap()
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn decodes_what_the_sink_encodes() {
        let hive_url = PartitionPathOptions {
            hive_style: true,
            url_encode: true,
        };
        let values = [
            Some("eu/west"),
            Some("a=b%c:d#e?f*g\"h'i[j]k^l{m\\n"),
            Some("plain"),
            Some("ünï cödé + space"),
            None,
        ];
        let back = round_trip(&values, hive_url);
        let want: Vec<Option<String>> = values.iter().map(|v| v.map(str::to_string)).collect();
        assert_eq!(back, want);
        // Without URL encoding only safe values are written; they come back as they were.
        for options in [
            PartitionPathOptions::default(),
            PartitionPathOptions {
                hive_style: true,
                url_encode: false,
            },
        ] {
            assert_eq!(
                round_trip(&[Some("x y"), None, Some("2024-01-01")], options),
                vec![
                    Some("x y".to_string()),
                    None,
                    Some("2024-01-01".to_string())
                ]
            );
        }
        // An empty value is written as the default partition: null.
        assert_eq!(round_trip(&[Some("")], hive_url), vec![None]);
    }

    #[test]
    fn refuses_paths_that_do_not_fit_the_fields() {
        let opts = PartitionPathOptions {
            hive_style: true,
            url_encode: false,
        };
        assert!(partition_values(
            "2024/01/01",
            &fields(&["ts"]),
            PartitionPathOptions::default()
        )
        .is_err());
        assert!(partition_values("other=x", &fields(&["region"]), opts).is_err());
        assert!(partition_values("region=x", &[], opts).is_err());
        assert_eq!(partition_values("", &[], opts).unwrap(), vec![]);
    }
}
