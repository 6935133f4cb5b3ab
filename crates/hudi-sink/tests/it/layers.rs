//! The crate's top-level modules form layers: a module's non-test code names only modules of lower layers
//! (`crate::<module>`), so no two modules import each other, directly or round a circle, and each layer can be
//! read and tested with only the ones below it. The layers are the ones `docs/architecture.md` draws (section
//! "Module layers"); this test reads them from there, so the drawing and the code cannot drift.
//!
//! Test code (`#[cfg(test)]` items, `tests.rs` and `*_tests.rs` files) may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::common::workspace_root;

/// Module → the modules its non-test code names, each with one file that names it (for the message).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// Removes comments and the items under `#[cfg(test)]` (a one-line `mod x;` or a braced block).
fn non_test_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // Skip the next item: up to a `;` ending a line before any `{`, or to its closing brace.
            let mut depth = 0i32;
            let mut opened = false;
            for item in lines.by_ref() {
                let code = item.split("//").next().unwrap_or("");
                for c in code.chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        let code = match trimmed.find("//") {
            Some(i) if !trimmed[..i].contains('"') => &trimmed[..i],
            _ => trimmed,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The top-level modules `code` names: `crate::m` and the first segment of each `crate::{m, n::x}` item.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            let mut name = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        item_start = true;
                        continue;
                    }
                    _ => {}
                }
                if depth == 1 && item_start {
                    if c.is_alphanumeric() || c == '_' {
                        name.push(c);
                    } else if !name.is_empty() {
                        found.insert(std::mem::take(&mut name));
                        item_start = false;
                    }
                }
            }
            if !name.is_empty() {
                found.insert(name);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

fn collect(dir: &Path, src: &Path, graph: &mut Graph) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            collect(&path, src, graph);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") || is_test_file(&path) {
            continue;
        }
        let relative = path.strip_prefix(src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file name")
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" {
            continue;
        }
        let text = fs::read_to_string(&path).expect("read source");
        let edges = graph.entry(top.clone()).or_default();
        for module in named_modules(&non_test_code(&text)) {
            if module != top {
                edges
                    .entry(module)
                    .or_insert_with(|| relative.display().to_string());
            }
        }
    }
}

/// The module graph of the library crate's non-test code.
fn module_graph() -> Graph {
    let src = workspace_root().join("crates/hudi-sink/src");
    let mut graph = Graph::new();
    collect(&src, &src, &mut graph);
    graph
}

/// The layers of `docs/architecture.md`, bottom first: the lines of the fenced block after the heading
/// "Module layers", each `<layer>: <module> <module> …`.
fn documented_layers() -> Vec<Vec<String>> {
    let text = fs::read_to_string(workspace_root().join("docs/architecture.md")).expect("read");
    let section = text
        .split("## Module layers")
        .nth(1)
        .expect("docs/architecture.md has a \"Module layers\" section");
    let block = section
        .split("```")
        .nth(1)
        .expect("the section has a fenced block");
    let mut layers: Vec<Vec<String>> = block
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(_, modules)| modules.split_whitespace().map(String::from).collect())
        .collect();
    // Drawn top first, as layers are.
    layers.reverse();
    layers
}

#[test]
fn top_level_modules_form_the_documented_layers() {
    let graph = module_graph();
    let layers = documented_layers();
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, modules)| modules.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let modules: BTreeSet<&str> = graph
        .iter()
        .flat_map(|(m, edges)| std::iter::once(m.as_str()).chain(edges.keys().map(String::as_str)))
        .collect();
    let undrawn: Vec<&&str> = modules
        .iter()
        .filter(|m| !layer_of.contains_key(**m))
        .collect();
    assert!(
        undrawn.is_empty(),
        "modules missing from docs/architecture.md's layers: {undrawn:?}"
    );
    let mut upward = Vec::new();
    for (module, edges) in &graph {
        for (target, file) in edges {
            if layer_of[target.as_str()] >= layer_of[module.as_str()] {
                upward.push(format!("{module} -> {target} ({file})"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not go down a layer (a module may only name modules of lower layers):\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_scanner_sees_imports_and_skips_test_code() {
    let code = "use crate::{table::x, write::{a, b}};\nuse crate::storage::S;\n\
                // crate::commentary\n#[cfg(test)]\nmod tests {\n    use crate::commit::y;\n}\n\
                #[cfg(test)]\nmod more;\nfn f() { crate::clock::now(); }\n";
    assert_eq!(
        named_modules(&non_test_code(code)),
        ["clock", "storage", "table", "write"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}
