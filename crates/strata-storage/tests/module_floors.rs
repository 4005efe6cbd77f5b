//! The crate's floors, kept: state below, work above, handles on top. Each
//! source file's `crate::` and `super::` paths (tests left out) are read as
//! edges between files; no files import each other in a circle, and no
//! file imports a higher floor, but the work that reads through the
//! `Storage` handle (its methods written beside their work, or sealed data
//! read through `Storage::view`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first; a file is on the floor of its first path
/// segment (`head/series.rs` is `head`'s).
const FLOORS: [&[&str]; 4] = [
    // Types, encodings and the object-store plumbing.
    &[
        "error",
        "keys",
        "values",
        "settings",
        "stats",
        "write",
        "postings",
        "table_compression",
        "object_store_url",
        "slatedb_options",
        "slatedb_metrics",
        "worker",
        "faults",
        "instrumented",
        "resend",
        "follower_store",
        "cache",
    ],
    // State.
    &["state", "head", "backend", "shared"],
    // Work.
    &[
        "read",
        "series_index",
        "stored",
        "metadata",
        "compact",
        "coordinator",
        "late",
        "reclaim",
        "recovery",
        "sealer",
        "spill",
        "tailer",
        "background",
        "packed_batch",
        "exemplars",
        "key_usage",
        "tombstones",
    ],
    // Handles, and the crate's face.
    &["storage", "writer", "open", ""],
];

/// The one way up: work reading through the read handle.
const UP_ALLOWED: &str = "storage";

type Module = Vec<String>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The text without `#[cfg(test)]` modules written inline, and without
/// line comments.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // An inline module: skip to its closing brace. A `mod tests;` line
        // (a file of its own) or another item: keep what follows.
        let head_end = after.find(['{', ';']).unwrap_or(after.len());
        if after[..head_end].contains("mod ") && after[head_end..].starts_with('{') {
            let mut depth = 0;
            let mut end = after.len();
            for (i, c) in after.char_indices().skip(head_end) {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = &after[end..];
        } else {
            out.push_str("#[cfg(test)]");
            rest = &after["#[cfg(test)]".len()..];
        }
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths `crate::a::b…` and `super::…::a…` in `text`, each as the
/// segments after `crate`, resolved from `module`; and those inside
/// `use crate::{…}` groups.
fn paths(module: &Module, text: &str) -> Vec<Module> {
    let mut out = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| !w.is_empty())
        .collect();
    for w in words {
        let segs: Vec<&str> = w.split("::").filter(|s| !s.is_empty()).collect();
        // `pub(crate)` and `pub(super)` name no path.
        if segs.len() < 2 {
            continue;
        }
        match segs.first() {
            Some(&"crate") => out.push(segs[1..].iter().map(|s| s.to_string()).collect()),
            Some(&"super") => {
                let mut base = module.clone();
                let mut rest = &segs[..];
                while rest.first() == Some(&"super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().map(|s| s.to_string()));
                out.push(base);
            }
            _ => {}
        }
    }
    let mut rest = text;
    while let Some(at) = rest.find("use crate::{") {
        let body = &rest[at + "use crate::{".len()..];
        let end = body.find("};").unwrap_or(body.len());
        for item in body[..end].split([',', '{', '}', ' ', '\n']) {
            let segs: Module = item
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            if !segs.is_empty() {
                out.push(segs);
            }
        }
        rest = &body[end..];
    }
    out
}

/// The longest prefix of `path` that is a file's module.
fn resolve<'m>(modules: &'m BTreeSet<Module>, path: &Module) -> Option<&'m Module> {
    (0..=path.len())
        .rev()
        .find_map(|k| modules.get(&path[..k].to_vec()))
}

fn floor(m: &Module) -> Option<usize> {
    let first = m.first().map_or("", String::as_str);
    FLOORS.iter().position(|f| f.contains(&first))
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let by_module: BTreeMap<Module, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let modules: BTreeSet<Module> = by_module.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for (m, file) in &by_module {
        if m.last().is_some_and(|s| s == "tests") {
            continue;
        }
        let text = without_tests(&std::fs::read_to_string(file).unwrap());
        let mut to = BTreeSet::new();
        for p in paths(m, &text) {
            if let Some(t) = resolve(&modules, &p) {
                // A module's own ancestors are its folders, not imports,
                // but for the crate root.
                let ancestor = t.len() < m.len() && m[..t.len()] == t[..];
                if t != m && (t.is_empty() || !ancestor) {
                    to.insert(t.clone());
                }
            }
        }
        edges.insert(m.clone(), to);
    }
    edges
}

/// The strongly connected parts of more than one file.
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    // Reachability by search from each file: a few hundred files.
    let reach = |from: &Module| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for t in edges.get(&m).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<Module>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<Vec<Module>> = Vec::new();
    for (m, r) in &reached {
        let part: Vec<Module> = r
            .iter()
            .filter(|t| *t != *m && reached.get(t).is_some_and(|back| back.contains(*m)))
            .cloned()
            .chain(std::iter::once((*m).clone()))
            .collect();
        if part.len() > 1 {
            let mut part = part;
            part.sort();
            if !out.contains(&part) {
                out.push(part);
            }
        }
    }
    out
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let edges = graph();
    assert!(edges.len() > 50, "read only {} files", edges.len());
    let found = circles(&edges);
    assert!(found.is_empty(), "files importing in a circle: {found:?}");
}

#[test]
fn no_file_imports_a_higher_floor_but_through_the_storage_handle() {
    let edges = graph();
    let mut up = Vec::new();
    for (m, to) in &edges {
        let from = floor(m).unwrap_or_else(|| panic!("{m:?} is on no floor: add it to FLOORS"));
        for t in to {
            let at = floor(t).unwrap_or_else(|| panic!("{t:?} is on no floor: add it to FLOORS"));
            if at > from && t.first().map(String::as_str) != Some(UP_ALLOWED) {
                up.push(format!("{} -> {}", m.join("/"), t.join("/")));
            }
        }
    }
    assert!(up.is_empty(), "imports up a floor: {up:#?}");
}

#[test]
fn the_check_sees_a_circle_and_an_import_up() {
    // The same reading of a made-up crate: a and b import each other, and
    // state imports work.
    let m = |s: &str| -> Module { s.split('/').map(str::to_string).collect() };
    let a = paths(
        &m("head/a"),
        "use super::b::X;\nfn f() { crate::read::g(); }",
    );
    assert!(a.contains(&m("head/b/X")) && a.contains(&m("read/g")));
    let mut edges = BTreeMap::new();
    edges.insert(m("head/a"), BTreeSet::from([m("head/b")]));
    edges.insert(m("head/b"), BTreeSet::from([m("head/a")]));
    edges.insert(m("read"), BTreeSet::new());
    assert_eq!(circles(&edges), vec![vec![m("head/a"), m("head/b")]]);
    assert!(floor(&m("head/a")) < floor(&m("read")));
    let text = "#[cfg(test)]\nmod tests {\n    use crate::read::x;\n}\nuse crate::keys::K;";
    let kept = without_tests(text);
    assert!(!kept.contains("crate::read") && kept.contains("crate::keys"));
}
