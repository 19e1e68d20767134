//! The documentation's front doors stay true: `docs/README.md` names every file under
//! `docs/`, and every relative link of the README, the docs index and the user guide points
//! at a file that exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("docs/ is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The targets of Markdown links `](target)` that are neither web addresses nor anchors.
fn relative_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split([')', '#', ' ']).next())
        .filter(|t| !t.is_empty() && !t.starts_with("http") && !t.starts_with("mailto:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn docs_index_names_every_file() {
    let docs = root().join("docs");
    let index = std::fs::read_to_string(docs.join("README.md")).expect("docs/README.md");
    let mut files = Vec::new();
    files_under(&docs, &mut files);
    let missing: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(&docs)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|rel| rel != "README.md" && !index.contains(&format!("]({rel})")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not list {} file(s): {missing:?}",
        missing.len()
    );
}

#[test]
fn front_page_links_resolve() {
    let root = root();
    for page in [
        "README.md",
        "docs/README.md",
        "docs/guide.md",
        "docs/benchmarks/HISTORY.md",
    ] {
        let path = root.join(page);
        let text = std::fs::read_to_string(&path).expect("page exists");
        let dir = path.parent().unwrap();
        let broken: Vec<String> = relative_links(&text)
            .into_iter()
            .filter(|l| !dir.join(l).exists())
            .collect();
        assert!(broken.is_empty(), "{page}: broken links {broken:?}");
    }
}

#[test]
fn link_parser_finds_relative_links_only() {
    let text = "see [a](docs/a.md#x), [b](https://e.invalid/b) and [c](c.md)";
    assert_eq!(relative_links(text), vec!["docs/a.md", "c.md"]);
}
