//! The descriptor parser reads user files: whatever the text, it returns a
//! descriptor or a `DescriptorError` naming the manifest, never panics.

use proptest::prelude::*;
use sparserl_build::descriptor::parse_descriptor;
use std::path::Path;

const VALID: &str = r#"
[package]
name = "user"

[package.metadata.sparserl]
arch = ["sm_80", "sm_90"]
budget-seconds = 30

[[package.metadata.sparserl.kernel]]
name = "laplace2d"
op = "spmv"
value = "f32"
pattern = { kind = "stencil", grid = [64, 64], points = 5 }
epilogues = ["dot"]

[[package.metadata.sparserl.kernel]]
name = "web"
op = "spmv"
value = "f64"
pattern = { kind = "power-law", rows = 1000, avg-degree = 8, exponent = 2.1 }
"#;

/// Values a mutation may put at a key: of every TOML type, in and out of range.
fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "0",
        "-1",
        "1",
        "3",
        "7",
        "27",
        "1e400",
        "-0.0",
        "nan",
        "inf",
        "9999999999999999999",
        "\"\"",
        "\"spmv\"",
        "\"spmm\"",
        "\"f16\"",
        "\"dot\"",
        "\"stencil\"",
        "\"samples\"",
        "\"matrix-market\"",
        "\"../../../etc/passwd\"",
        "true",
        "[]",
        "[0]",
        "[1, 2, 3, 4]",
        "[\"sm_80\", \"sm_0\"]",
        "[\"axpby\", \"axpby\"]",
        "{}",
        "{ kind = \"banded\" }",
        "{ kind = \"block\", rows = 10, block = [0, 2], blocks-per-row = 1 }",
        "{ kind = \"uniform\", rows = 4, cols = 0, avg-degree = 2 }",
        "{ kind = \"stencil\", grid = [0, 0], points = 5 }",
        "{ kind = \"power-law\", rows = 10, avg-degree = 1e30, exponent = -2 }",
    ])
    .prop_map(str::to_string)
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "name",
        "op",
        "value",
        "pattern",
        "epilogues",
        "arch",
        "budget-seconds",
        "kind",
        "grid",
        "points",
        "rows",
        "cols",
        "seed",
        "samples",
        "path",
        "dir",
        "unknown",
    ])
    .prop_map(str::to_string)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,400}") {
        let _ = parse_descriptor(Path::new("fuzz/Cargo.toml"), &text);
    }

    #[test]
    fn mutated_descriptors_never_panic_and_errors_name_the_manifest(
        edits in proptest::collection::vec((0usize..30, key(), value()), 1..4),
    ) {
        let mut lines: Vec<String> = VALID.lines().map(str::to_string).collect();
        for (at, k, v) in edits {
            let at = at % lines.len();
            lines.insert(at, format!("{k} = {v}"));
        }
        let text = lines.join("\n");
        match parse_descriptor(Path::new("fuzz/Cargo.toml"), &text) {
            Ok(_) => {}
            Err(e) => prop_assert!(e.to_string().contains("fuzz/Cargo.toml"), "{e}"),
        }
    }
}

#[test]
fn the_unmutated_descriptor_parses() {
    let d = parse_descriptor(Path::new("fuzz/Cargo.toml"), VALID).unwrap();
    assert_eq!(d.kernels.len(), 2);
}
