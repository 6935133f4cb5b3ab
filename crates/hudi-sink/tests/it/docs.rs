//! The README and every page of `docs/` link only to what exists: the target of every relative Markdown link or
//! image names a file or directory of the repository (relative to the page), and every `#fragment` names a
//! heading of its page as GitHub anchors it. Links inside fenced code blocks and inline code are not links.
//!
//! [`documented_keys`] reads the keys of the configuration reference (`docs/configuration.md`), for the tests
//! that compare them with the keys the parsers accept.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::workspace_root;

/// The section of `docs/configuration.md` that lists prefixes accepted and ignored, not keys.
const IGNORED_KEYS_SECTION: &str = "Accepted and ignored keys";

/// `README.md` and every `docs/*.md`, in name order.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/ is a directory of the repository")
        .map(|entry| entry.expect("an entry of docs/").path())
        .filter(|path| path.extension().and_then(|ext| ext.to_str()) == Some("md"))
        .collect();
    docs.sort();
    let mut files = vec![root.join("README.md")];
    files.extend(docs);
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of `text` outside fenced code blocks (```` ``` ```` or `~~~`), with their 1-based numbers.
fn lines_outside_fences(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut fence: Option<&str> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push((index + 1, line)),
            Some(marker) => {
                if trimmed.starts_with(marker) {
                    fence = None;
                }
            }
        }
    }
    lines
}

/// The text of an ATX heading (`#` to `######` then a space, at most three spaces of indent), without any
/// closing `#`s; `None` for any other line.
fn heading_text(line: &str) -> Option<&str> {
    let unindented = line.trim_start_matches(' ');
    if line.len() - unindented.len() > 3 {
        return None;
    }
    let rest = unindented.trim_start_matches('#');
    let level = unindented.len() - rest.len();
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// `text` with every `[label](target)` reduced to its label.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let link = after.find("](").and_then(|middle| {
            after[middle + 2..]
                .find(')')
                .map(|close| (middle, middle + 2 + close))
        });
        match link {
            Some((middle, close)) => {
                out.push_str(&after[..middle]);
                rest = &after[close + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// GitHub's anchor for a heading's text: link syntax reduced to its label, lower case, each space a `-`, and
/// every character other than a letter, a digit, `-` or `_` dropped (backticks and punctuation included).
fn slug(heading: &str) -> String {
    strip_links(heading)
        .trim()
        .chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of every heading of `text`: a repeated anchor gets `-1`, `-2`, … in order, as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in lines_outside_fences(text) {
        let Some(heading) = heading_text(line) else {
            continue;
        };
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        if *count == 0 {
            anchors.insert(base);
        } else {
            anchors.insert(format!("{base}-{count}"));
        }
        *count += 1;
    }
    anchors
}

/// The targets of the Markdown links and images on one line (`[text](target)`, `![alt](target)`), outside
/// inline code spans; a title after the target and angle brackets around it are dropped.
fn link_targets(line: &str) -> Vec<String> {
    let bytes = line.as_bytes();
    let mut targets = Vec::new();
    let mut in_code = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            in_code = !in_code;
        } else if !in_code && bytes[i] == b']' && bytes.get(i + 1) == Some(&b'(') {
            if let Some(close) = line[i + 2..].find(')') {
                let inner = line[i + 2..i + 2 + close].trim();
                let target = inner.split(' ').next().unwrap_or_default();
                targets.push(
                    target
                        .trim_start_matches('<')
                        .trim_end_matches('>')
                        .to_string(),
                );
                i += 2 + close + 1;
                continue;
            }
        }
        i += 1;
    }
    targets
}

/// The keys the configuration reference documents: the first cell of every table row of `docs/configuration.md`
/// that is one name in backticks, outside the section `## Accepted and ignored keys` (which lists prefixes).
pub fn documented_keys(root: &Path) -> BTreeSet<String> {
    let text = read(&root.join("docs/configuration.md"));
    let mut keys = BTreeSet::new();
    let mut in_ignored_section = false;
    for (_, line) in lines_outside_fences(&text) {
        if let Some(heading) = heading_text(line) {
            in_ignored_section = heading == IGNORED_KEYS_SECTION;
            continue;
        }
        if in_ignored_section {
            continue;
        }
        let Some(row) = line.trim().strip_prefix('|') else {
            continue;
        };
        let cell = row.split('|').next().unwrap_or_default().trim();
        if let Some(key) = cell.strip_prefix('`').and_then(|c| c.strip_suffix('`')) {
            if !key.is_empty() && !key.contains('`') {
                keys.insert(key.to_string());
            }
        }
    }
    keys
}

#[test]
fn every_link_in_the_readme_and_docs_resolves() {
    let root = workspace_root();
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in markdown_files(&root) {
        let text = read(&file);
        let dir = file.parent().expect("a file lies in a directory");
        let name = file
            .strip_prefix(&root)
            .unwrap_or(file.as_path())
            .display()
            .to_string();
        for (number, line) in lines_outside_fences(&text) {
            for target in link_targets(line) {
                if target.starts_with("http://")
                    || target.starts_with("https://")
                    || target.starts_with("mailto:")
                {
                    continue;
                }
                checked += 1;
                let place = format!("{name}:{number}: ({target})");
                let (path, fragment) = match target.split_once('#') {
                    Some((path, fragment)) => (path, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let resolved = if path.is_empty() {
                    file.clone()
                } else {
                    dir.join(path)
                };
                if !resolved.exists() {
                    broken.push(format!("{place}: {} does not exist", resolved.display()));
                    continue;
                }
                let Some(fragment) = fragment else {
                    continue;
                };
                if resolved.extension().and_then(|ext| ext.to_str()) != Some("md") {
                    broken.push(format!(
                        "{place}: a fragment of a file that is not Markdown"
                    ));
                    continue;
                }
                if !anchors(&read(&resolved)).contains(fragment) {
                    broken.push(format!(
                        "{place}: no heading of {} has the anchor #{fragment}",
                        resolved.display()
                    ));
                }
            }
        }
    }
    assert!(
        checked > 0,
        "no relative link found in the README and docs/"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_githubs_heading_rules() {
    let text = "# Title\n\n## 1. Build the functions\n\n## Interval commit (`commit/window/`, `sink/window.rs`)\n\n\
                ### Hudi's Java table services on the sink's tables\n\n## Engines × queries\n\n## Twice\n\n\
                ```sh\n## not a heading\n```\n\n## Twice\n\n## Twice ##\n\n    ## indented code\n";
    let expected: BTreeSet<String> = [
        "title",
        "1-build-the-functions",
        "interval-commit-commitwindow-sinkwindowrs",
        "hudis-java-table-services-on-the-sinks-tables",
        "engines--queries",
        "twice",
        "twice-1",
        "twice-2",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(anchors(text), expected);
    assert_eq!(
        slug("See [the limits](limits.md) here"),
        "see-the-limits-here"
    );
    assert_eq!(
        link_targets("a [b](c.md#d) `[e](f)` ![g](../h.svg \"title\")"),
        vec!["c.md#d", "../h.svg"]
    );
}

#[test]
fn the_configuration_reference_has_one_key_per_row() {
    let keys = documented_keys(&workspace_root());
    for key in [
        "hoodie.table.name",
        "hoodie.datasource.write.table.type",
        "hudi.sink.commit.interval.ms",
        "hoodie.cleaner.hours.retained",
        "hudi.sink.catalog.sync.backoff.ms",
    ] {
        assert!(
            keys.contains(key),
            "{key} has no row in docs/configuration.md"
        );
    }
    for key in &keys {
        assert!(
            key.starts_with("hoodie.") || key.starts_with("hudi.sink."),
            "{key:?}: not a key of this sink"
        );
        assert!(
            !key.contains([' ', ',', '/', '*', '…']) && !key.ends_with('.'),
            "{key:?}: a row names one whole key"
        );
    }
    assert!(
        !keys.contains("hoodie.kafka."),
        "the accepted and ignored prefixes are not keys"
    );
}

/// The configuration reference and the parsers agree: every key some parser reads (each module's `KEYS`,
/// joined by `bootstrap::KEY_LISTS`) has a row in `docs/configuration.md`, and every row names a key a parser
/// reads, so that a documented key is never refused and an accepted key is never undocumented.
#[test]
fn the_configuration_reference_documents_exactly_the_accepted_keys() {
    let documented = documented_keys(&workspace_root());
    let accepted: BTreeSet<String> = hudi_sink::bootstrap::accepted_keys()
        .into_iter()
        .map(String::from)
        .collect();
    let undocumented: Vec<&String> = accepted.difference(&documented).collect();
    let refused: Vec<&String> = documented.difference(&accepted).collect();
    assert!(
        undocumented.is_empty() && refused.is_empty(),
        "accepted but not in docs/configuration.md: {undocumented:?}\n\
         documented but refused at start-up: {refused:?}"
    );
    // And a documented key really passes the start-up check.
    let all: std::collections::BTreeMap<String, String> = documented
        .iter()
        .map(|k| (k.clone(), "x".to_string()))
        .collect();
    assert_eq!(hudi_sink::bootstrap::check_keys(&all), Ok(vec![]));
}
