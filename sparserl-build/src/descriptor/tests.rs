//! Tests of `descriptor`.

use super::*;

const HEAD: &str = "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n";
const KERNEL: &str = "[[package.metadata.sparserl.kernel]]\nname = \"laplace2d\"\nop = \"spmv\"\nvalue = \"f32\"\npattern = { kind = \"stencil\", grid = [64, 64], points = 5 }\n";

fn manifest() -> &'static Path {
    Path::new("app/Cargo.toml")
}

fn parse(body: &str) -> Result<Descriptor, DescriptorError> {
    parse_descriptor(manifest(), &format!("{HEAD}{body}"))
}

/// A descriptor with one kernel whose pattern is `pattern` (inline table body).
fn with_pattern(pattern: &str) -> String {
    format!(
        "[[package.metadata.sparserl.kernel]]\nname = \"k\"\nop = \"spmv\"\nvalue = \"f64\"\npattern = {{ {pattern} }}\n"
    )
}

/// Parses `body`, expects an error and checks it names the manifest, the
/// key path and every `wanted` fragment.
fn fails(body: &str, key_path: &str, wanted: &[&str]) -> DescriptorError {
    let err = parse(body).expect_err("descriptor should be rejected");
    check(&err, key_path, wanted);
    err
}

fn check(err: &DescriptorError, key_path: &str, wanted: &[&str]) {
    let msg = err.to_string();
    assert_eq!(err.key_path(), key_path, "{msg}");
    assert!(msg.starts_with("error in "), "{msg}");
    assert!(msg.contains(&err.manifest().display().to_string()), "{msg}");
    assert!(msg.contains(&format!(" at {key_path}: ")), "{msg}");
    for w in wanted {
        assert!(msg.contains(w), "missing {w:?} in: {msg}");
    }
}

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

const SMALL_MTX: &str = "%%MatrixMarket matrix coordinate real general\n% comment\n3 3 4\n1 1 1.0\n2 2 2.0\n3 3 3.0\n1 3 4.0\n";

// ---- good paths -------------------------------------------------------

#[test]
fn full_example_parses() {
    let body = format!(
        "[package.metadata.sparserl]\narch = [\"sm_80\", \"sm_90\"]\nbudget-seconds = 30\n\n{}",
        KERNEL.replace("[64, 64]", "[1024, 1024]")
    );
    let d = parse(&body).unwrap();
    assert_eq!(d.manifest, manifest());
    assert_eq!(d.arch, Some(vec!["sm_80".to_string(), "sm_90".to_string()]));
    assert_eq!(d.budget_seconds, Some(30.0));
    assert_eq!(
        d.kernels,
        vec![KernelDecl {
            name: "laplace2d".into(),
            type_name: "Laplace2d".into(),
            op: Op::Spmv,
            value: ValueType::F32,
            epilogues: vec![],
            reorder: None,
            objective: crate::objective::Objective::Time,
            spmm: None,
            pattern: Pattern::Stencil {
                grid: vec![1024, 1024],
                points: 5
            },
        }]
    );
}

#[test]
fn optional_keys_default_and_tables_work() {
    let body = "[[package.metadata.sparserl.kernel]]\nname = \"my_kernel_v2\"\nop = \"spmv\"\nvalue = \"f64\"\n[package.metadata.sparserl.kernel.pattern]\nkind = \"uniform\"\nrows = 10\ncols = 20\navg-degree = 2.5\n";
    let d = parse(body).unwrap();
    assert_eq!(d.arch, None);
    assert_eq!(d.budget_seconds, None);
    let k = &d.kernels[0];
    assert_eq!(k.type_name, "MyKernelV2");
    assert_eq!(
        k.pattern,
        Pattern::Uniform {
            rows: 10,
            cols: 20,
            avg_degree: 2.5,
            seed: 0,
            samples: 2
        }
    );
}

#[test]
fn every_synthetic_kind_loads_samples_of_the_right_size() {
    let cases: &[(&str, usize, usize, usize)] = &[
        ("kind = \"stencil\", grid = [8, 8], points = 5", 64, 64, 1),
        ("kind = \"stencil\", grid = [6, 7], points = 9", 42, 42, 1),
        (
            "kind = \"stencil\", grid = [4, 4, 4], points = 7",
            64,
            64,
            1,
        ),
        (
            "kind = \"stencil\", grid = [3, 4, 5], points = 27",
            60,
            60,
            1,
        ),
        (
            "kind = \"banded\", rows = 100, bandwidth = 5, avg-degree = 4",
            100,
            100,
            2,
        ),
        (
            "kind = \"power-law\", rows = 200, avg-degree = 6, exponent = 2.1",
            200,
            200,
            2,
        ),
        (
            "kind = \"uniform\", rows = 50, cols = 80, avg-degree = 3.5, seed = 4",
            50,
            80,
            2,
        ),
        (
            "kind = \"block\", rows = 64, block = [4, 2], blocks-per-row = 3, samples = 1",
            64,
            64,
            1,
        ),
    ];
    for &(pattern, rows, cols, count) in cases {
        let d = parse(&with_pattern(pattern)).unwrap();
        let samples = d.load_samples(0).unwrap();
        assert_eq!(samples.len(), count, "{pattern}");
        for s in &samples {
            assert_eq!(s.matrix.rows(), rows, "{pattern}");
            assert_eq!(s.matrix.cols(), cols, "{pattern}");
            assert!(s.matrix.nnz() > 0, "{pattern}");
            assert!(s.source_file.is_none());
            assert!(
                s.label.starts_with(d.kernels[0].pattern.kind()),
                "{}",
                s.label
            );
        }
        assert!(
            d.kernels[0]
                .pattern
                .files(&d.manifest_dir())
                .unwrap()
                .is_empty()
        );
    }
    let d = parse(&with_pattern(
        "kind = \"stencil\", grid = [64, 64], points = 5",
    ))
    .unwrap();
    assert_eq!(d.load_samples(0).unwrap()[0].label, "stencil 64x64 5-pt");
}

#[test]
fn samples_three_gives_three_distinct_instances() {
    let d = parse(&with_pattern(
        "kind = \"uniform\", rows = 100, cols = 100, avg-degree = 5, seed = 10, samples = 3",
    ))
    .unwrap();
    let s = d.load_samples(0).unwrap();
    assert_eq!(s.len(), 3);
    assert!(s[0].matrix != s[1].matrix && s[1].matrix != s[2].matrix && s[0].matrix != s[2].matrix);
    assert!(s[0].label.ends_with("seed 10") && s[2].label.ends_with("seed 12"));
    // Deterministic: loading again gives the same matrices.
    assert_eq!(d.load_samples(0).unwrap(), s);
}

#[test]
fn matrix_market_and_samples_dir_load() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("Cargo.toml");
    write(tmp.path(), "data/one.mtx", SMALL_MTX);
    write(tmp.path(), "set/b/two.mtx", SMALL_MTX);
    write(tmp.path(), "set/a.mtx", SMALL_MTX);
    write(tmp.path(), "set/notes.txt", "not a matrix");
    let body = format!(
        "{HEAD}{}{}",
        with_pattern("kind = \"matrix-market\", path = \"data/one.mtx\""),
        with_pattern("kind = \"samples\", dir = \"set\"").replace("\"k\"", "\"k2\"")
    );
    let d = parse_descriptor(&m, &body).unwrap();
    let one = d.load_samples(0).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].label, "one.mtx");
    assert_eq!(one[0].matrix.nnz(), 4);
    assert_eq!(
        one[0].source_file.as_deref(),
        Some(tmp.path().join("data/one.mtx").as_path())
    );
    let set = d.load_samples(1).unwrap();
    let labels: Vec<&str> = set.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["a.mtx", "b/two.mtx"]);
    assert_eq!(
        d.kernels[1].pattern.files(tmp.path()).unwrap(),
        vec![
            tmp.path().join("set/a.mtx"),
            tmp.path().join("set/b/two.mtx")
        ]
    );
    let watched = d.watched_paths();
    assert!(watched.contains(&m) && watched.contains(&tmp.path().join("set")));
    assert_eq!(watched.len(), 5);
    // The pattern-level API gives the same samples.
    assert_eq!(d.kernels[1].pattern.load_samples(tmp.path()).unwrap(), set);
}

#[test]
fn canonical_json_is_stable() {
    let a = parse(&with_pattern(
        "kind = \"power-law\", rows = 1000, avg-degree = 8, exponent = 2.5, seed = 3",
    ))
    .unwrap();
    // Same declaration, keys in another order and written as a sub-table.
    let b = parse("[[package.metadata.sparserl.kernel]]\nvalue = \"f64\"\nname = \"k\"\nop = \"spmv\"\n[package.metadata.sparserl.kernel.pattern]\nseed = 3\nexponent = 2.5\navg-degree = 8.0\nrows = 1000\nkind = \"power-law\"\n").unwrap();
    let json = a.kernels[0].canonical_json();
    assert_eq!(json, b.kernels[0].canonical_json());
    assert_eq!(
        json,
        r#"{"name":"k","type_name":"K","op":"spmv","value":"f64","pattern":{"kind":"power-law","rows":1000,"avg-degree":8.0,"exponent":2.5,"seed":3,"samples":2}}"#
    );
    let c = parse(&with_pattern(
        "kind = \"power-law\", rows = 1000, avg-degree = 8, exponent = 2.5, seed = 4",
    ))
    .unwrap();
    assert_ne!(json, c.kernels[0].canonical_json());
    let mm = KernelDecl {
        epilogues: vec![],
        pattern: Pattern::MatrixMarket {
            path: PathBuf::from("data/a.mtx"),
        },
        ..a.kernels[0].clone()
    };
    assert!(
        mm.canonical_json()
            .contains(r#""pattern":{"kind":"matrix-market","path":"data/a.mtx"}"#)
    );
}

// ---- bad inputs -------------------------------------------------------

#[test]
fn toml_syntax_error_names_manifest_and_line() {
    let err = parse("[package.metadata.sparserl\nfoo = ").unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.key_path(), "");
    assert!(
        msg.starts_with("error in app/Cargo.toml: invalid TOML"),
        "{msg}"
    );
    assert!(msg.contains("line"), "{msg}");
}

#[test]
fn missing_section_says_what_to_add() {
    fails(
        "",
        ROOT,
        &[
            "[package.metadata.sparserl]",
            "[[package.metadata.sparserl.kernel]]",
        ],
    );
    fails(
        "[package.metadata]\nother = 1\n",
        ROOT,
        &["add a [package.metadata.sparserl] table"],
    );
    fails(
        "[package.metadata]\nsparserl = 3\n",
        ROOT,
        &["found integer 3, expected a table"],
    );
}

#[test]
fn no_kernels_says_what_to_add() {
    fails(
        "[package.metadata.sparserl]\narch = [\"sm_80\"]\n",
        "package.metadata.sparserl.kernel",
        &[
            "no kernels declared",
            "[[package.metadata.sparserl.kernel]]",
        ],
    );
    fails(
        "[package.metadata.sparserl]\nkernel = []\n",
        "package.metadata.sparserl.kernel",
        &[
            "found an empty array",
            "[[package.metadata.sparserl.kernel]]",
        ],
    );
    fails(
        &KERNEL.replace(
            "[[package.metadata.sparserl.kernel]]",
            "[package.metadata.sparserl.kernel]",
        ),
        "package.metadata.sparserl.kernel",
        &["found a single table", "double brackets"],
    );
}

#[test]
fn unknown_top_level_key() {
    fails(
        &format!("[package.metadata.sparserl]\nfoo = 1\n{KERNEL}"),
        "package.metadata.sparserl.foo",
        &["unknown key \"foo\"; allowed keys: arch, budget-seconds, objective, kernel"],
    );
}

#[test]
fn unknown_kernel_key() {
    fails(
        &format!("{KERNEL}foo = \"bar\"\n"),
        "package.metadata.sparserl.kernel[0].foo",
        &["unknown key \"foo\"; allowed keys: name, op, value, pattern"],
    );
}

#[test]
fn unknown_pattern_key() {
    fails(
        &with_pattern("kind = \"stencil\", grid = [8, 8], points = 5, foo = 1"),
        "package.metadata.sparserl.kernel[0].pattern.foo",
        &["unknown key \"foo\"; allowed keys: kind, grid, points, seed, samples"],
    );
    fails(
        &with_pattern("kind = \"matrix-market\", path = \"a.mtx\", seed = 1"),
        "package.metadata.sparserl.kernel[0].pattern.seed",
        &["unknown key \"seed\"; allowed keys: kind, path"],
    );
}

#[test]
fn wrong_types() {
    fails(
        &KERNEL.replace("name = \"laplace2d\"", "name = 3"),
        "package.metadata.sparserl.kernel[0].name",
        &["found integer 3, expected a string"],
    );
    fails(
        &KERNEL.replace("[64, 64]", "\"big\""),
        "package.metadata.sparserl.kernel[0].pattern.grid",
        &[
            "found string \"big\"",
            "expected an array of 2 or 3 positive integers",
        ],
    );
    fails(
        &KERNEL.replace("[64, 64]", "[64, 0]"),
        "package.metadata.sparserl.kernel[0].pattern.grid[1]",
        &["found 0, expected a positive integer"],
    );
    fails(
        &KERNEL.replace("points = 5", "points = 5.0"),
        "package.metadata.sparserl.kernel[0].pattern.points",
        &["found float 5.0", "expected one of 5, 9 for a 2-D grid"],
    );
    fails(
        &KERNEL.replace("pattern = {", "pattern = \"stencil\" #"),
        "package.metadata.sparserl.kernel[0].pattern",
        &["found string \"stencil\"", "expected a table"],
    );
    fails(
        &format!("{KERNEL}[[package.metadata.sparserl.kernel]]\n"),
        "package.metadata.sparserl.kernel[1].name",
        &["missing required key \"name\""],
    );
}

#[test]
fn unknown_op() {
    let body = format!(
        "{KERNEL}{}",
        KERNEL
            .replace("laplace2d", "other")
            .replace("\"spmv\"", "\"spmvv\"")
    );
    let err = fails(
        &body,
        "package.metadata.sparserl.kernel[1].op",
        &["found \"spmvv\", expected one of \"spmv\", \"spmm\""],
    );
    assert_eq!(
        err.to_string(),
        "error in app/Cargo.toml at package.metadata.sparserl.kernel[1].op: found \"spmvv\", expected one of \"spmv\", \"spmm\""
    );
    assert_eq!(
        err.message(),
        "found \"spmvv\", expected one of \"spmv\", \"spmm\""
    );
}

#[test]
fn spmm_is_an_operation() {
    // `op = "spmm"` is valid once its widths are declared, and an unknown
    // operation names both.
    let d = parse(&KERNEL.replace("\"spmv\"", "\"spmm\"\ncolumns = 64")).unwrap();
    assert_eq!(d.kernels[0].op, Op::Spmm);
    fails(
        &KERNEL.replace("\"spmv\"", "\"spmx\""),
        "package.metadata.sparserl.kernel[0].op",
        &["found \"spmx\", expected one of \"spmv\", \"spmm\""],
    );
}

#[test]
fn unknown_value() {
    fails(
        &KERNEL.replace("\"f32\"", "\"f16\""),
        "package.metadata.sparserl.kernel[0].value",
        &["found \"f16\", expected one of \"f32\", \"f64\""],
    );
}

#[test]
fn unknown_kind() {
    fails(
        &KERNEL.replace("\"stencil\"", "\"diagonal\""),
        "package.metadata.sparserl.kernel[0].pattern.kind",
        &[
            "found \"diagonal\"",
            "expected one of \"matrix-market\", \"samples\", \"stencil\", \"banded\", \"power-law\", \"uniform\", \"block\"",
        ],
    );
}

#[test]
fn missing_required_keys() {
    fails(
        &KERNEL.replace(", points = 5", ""),
        "package.metadata.sparserl.kernel[0].pattern.points",
        &[
            "missing required key \"points\"",
            "expected one of 5, 9 for a 2-D grid",
        ],
    );
    fails(
        &with_pattern("grid = [8, 8], points = 5"),
        "package.metadata.sparserl.kernel[0].pattern.kind",
        &["missing required key \"kind\"", "\"power-law\""],
    );
    fails(
        &KERNEL.replace("value = \"f32\"\n", ""),
        "package.metadata.sparserl.kernel[0].value",
        &[
            "missing required key \"value\"",
            "expected one of \"f32\", \"f64\"",
        ],
    );
    fails(
        &with_pattern("kind = \"uniform\", rows = 10, avg-degree = 2"),
        "package.metadata.sparserl.kernel[0].pattern.cols",
        &["missing required key \"cols\"", "positive integer"],
    );
}

#[test]
fn bad_points_for_dims() {
    fails(
        &KERNEL.replace("points = 5", "points = 7"),
        "package.metadata.sparserl.kernel[0].pattern.points",
        &["found 7, expected one of 5, 9 for a 2-D grid"],
    );
    fails(
        &KERNEL.replace("[64, 64]", "[8, 8, 8]"),
        "package.metadata.sparserl.kernel[0].pattern.points",
        &["found 5, expected one of 7, 27 for a 3-D grid"],
    );
    fails(
        &KERNEL.replace("[64, 64]", "[8]"),
        "package.metadata.sparserl.kernel[0].pattern.grid",
        &["found an array of 1 elements, expected an array of 2 or 3 positive integers"],
    );
    fails(
        &KERNEL.replace("points = 5", "points = 5, samples = 2"),
        "package.metadata.sparserl.kernel[0].pattern.samples",
        &["found 2, expected 1", "deterministic"],
    );
}

#[test]
fn bad_synthetic_ranges() {
    let at = |k: &str| format!("package.metadata.sparserl.kernel[0].pattern.{k}");
    fails(
        &with_pattern("kind = \"uniform\", rows = 10, cols = 20, avg-degree = 21"),
        &at("avg-degree"),
        &["found 21, expected a positive number no larger than the 20 columns"],
    );
    fails(
        &with_pattern("kind = \"banded\", rows = 10, bandwidth = 2, avg-degree = 0"),
        &at("avg-degree"),
        &["found 0, expected a positive finite number"],
    );
    fails(
        &with_pattern("kind = \"banded\", rows = -10, bandwidth = 2, avg-degree = 1"),
        &at("rows"),
        &["found -10, expected a positive integer"],
    );
    fails(
        &with_pattern("kind = \"power-law\", rows = 100, avg-degree = 4, exponent = 1"),
        &at("exponent"),
        &["found 1, expected a finite number greater than 1"],
    );
    fails(
        &with_pattern("kind = \"block\", rows = 100, block = [3, 4], blocks-per-row = 2"),
        &at("block[0]"),
        &["found 3, expected a divisor of rows = 100"],
    );
    fails(
        &with_pattern("kind = \"block\", rows = 100, block = [4], blocks-per-row = 2"),
        &at("block"),
        &["expected an array [r, c] of 2 positive integers"],
    );
    fails(
        &with_pattern("kind = \"block\", rows = 16, block = [4, 4], blocks-per-row = 5"),
        &at("blocks-per-row"),
        &["found 5, expected at most 4"],
    );
    fails(
        &with_pattern("kind = \"uniform\", rows = 10, cols = 10, avg-degree = 2, samples = 9"),
        &at("samples"),
        &["found integer 9, expected an integer in 1..=8"],
    );
    fails(
        &with_pattern("kind = \"uniform\", rows = 10, cols = 10, avg-degree = 2, seed = -1"),
        &at("seed"),
        &["found integer -1, expected a non-negative integer"],
    );
    fails(
        &with_pattern("kind = \"uniform\", rows = 2000000000, cols = 2000000000, avg-degree = 8"),
        "package.metadata.sparserl.kernel[0].pattern",
        &["nonzeros", "32-bit"],
    );
}

#[test]
fn missing_files() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("Cargo.toml");
    let err = parse_descriptor(
        &m,
        &format!(
            "{HEAD}{}",
            with_pattern("kind = \"matrix-market\", path = \"data/missing.mtx\"")
        ),
    )
    .unwrap_err();
    let resolved = tmp.path().join("data/missing.mtx").display().to_string();
    check(
        &err,
        "package.metadata.sparserl.kernel[0].pattern.path",
        &[
            "found \"data/missing.mtx\"",
            "expected an existing Matrix Market file",
            &resolved,
            "does not exist",
        ],
    );
    let err = parse_descriptor(
        &m,
        &format!(
            "{HEAD}{}",
            with_pattern("kind = \"matrix-market\", path = \"data/a.csv\"")
        ),
    )
    .unwrap_err();
    check(
        &err,
        "package.metadata.sparserl.kernel[0].pattern.path",
        &["expected a path ending in .mtx or .mtx.gz"],
    );
    let err = parse_descriptor(
        &m,
        &format!(
            "{HEAD}{}",
            with_pattern("kind = \"samples\", dir = \"nowhere\"")
        ),
    )
    .unwrap_err();
    check(
        &err,
        "package.metadata.sparserl.kernel[0].pattern.dir",
        &[
            &tmp.path().join("nowhere").display().to_string(),
            "does not exist",
        ],
    );
}

#[test]
fn empty_samples_dir() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "empty/readme.txt", "no matrices here");
    let err = parse_descriptor(
        &tmp.path().join("Cargo.toml"),
        &format!(
            "{HEAD}{}",
            with_pattern("kind = \"samples\", dir = \"empty\"")
        ),
    )
    .unwrap_err();
    check(
        &err,
        "package.metadata.sparserl.kernel[0].pattern.dir",
        &[
            "found \"empty\"",
            "at least one *.mtx or *.mtx.gz file",
            "has none",
        ],
    );
}

#[test]
fn malformed_matrix_market_reports_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = "%%MatrixMarket matrix coordinate real general\n% comment\n3 3 3\n1 1 1.0\n2 x 2.0\n3 3 3.0\n";
    write(tmp.path(), "bad.mtx", bad);
    let d = parse_descriptor(
        &tmp.path().join("Cargo.toml"),
        &format!(
            "{HEAD}{}",
            with_pattern("kind = \"matrix-market\", path = \"bad.mtx\"")
        ),
    )
    .unwrap();
    let err = d.load_samples(0).unwrap_err();
    check(
        &err,
        "package.metadata.sparserl.kernel[0].pattern.path",
        &["line 5", "bad.mtx", "expected a valid coordinate file"],
    );
    // Through the pattern-level API the key path is relative to the kernel.
    let err = d.kernels[0].pattern.load_samples(tmp.path()).unwrap_err();
    check(&err, "pattern.path", &["line 5"]);
}

#[test]
fn truncated_matrix_market() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "set/t.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 2.0\n",
    );
    let d = parse_descriptor(
        &tmp.path().join("Cargo.toml"),
        &format!(
            "{HEAD}{}",
            with_pattern("kind = \"samples\", dir = \"set\"")
        ),
    )
    .unwrap();
    let err = d.load_samples(0).unwrap_err();
    check(
        &err,
        "package.metadata.sparserl.kernel[0].pattern.dir",
        &["t.mtx", "line 4", "2 of 3"],
    );
}

#[test]
fn duplicate_names() {
    let body = format!("{KERNEL}{}", KERNEL.replace("\"f32\"", "\"f64\""));
    fails(
        &body,
        "package.metadata.sparserl.kernel[1].name",
        &[
            "found \"laplace2d\" again",
            "kernel[0] and kernel[1]",
            "unique",
        ],
    );
    let body = format!(
        "{}{}",
        KERNEL.replace("laplace2d", "a_b"),
        KERNEL.replace("laplace2d", "a__b")
    );
    fails(
        &body,
        "package.metadata.sparserl.kernel[1].name",
        &["\"a__b\"", "AB", "\"a_b\"", "kernel[0] and kernel[1]"],
    );
}

#[test]
fn names_with_the_same_generated_identifiers_clash() {
    let two = |a: &str, b: &str| {
        format!(
            "{}{}",
            KERNEL.replace("laplace2d", a),
            KERNEL.replace("laplace2d", b)
        )
    };
    let at = "package.metadata.sparserl.kernel[1].name";
    // Different type names (WebGraph, Webgraph), one static.
    fails(
        &two("webGraph", "webgraph"),
        at,
        &[
            "found \"webgraph\", whose static WEBGRAPH_SPEC is also derived from \"webGraph\"",
            "kernel[0] and kernel[1]",
            "letter case",
        ],
    );
    // One type name (MyKernel), different statics.
    fails(
        &two("my_kernel", "MyKernel"),
        at,
        &["found \"MyKernel\", whose type name MyKernel is also derived from \"my_kernel\""],
    );
    fails(
        &two("MyKernel", "my__kernel"),
        at,
        &[
            "found \"my__kernel\", whose type name MyKernel",
            "\"MyKernel\"",
        ],
    );
    // Different type names (Ab, AB), one static.
    fails(
        &two("ab", "AB"),
        at,
        &["found \"AB\", whose static AB_SPEC is also derived from \"ab\""],
    );
    // The clash is found across any pair, not only neighbours, and
    // names the kernels involved.
    let body = format!(
        "{}{}{}",
        KERNEL.replace("laplace2d", "graph_a"),
        KERNEL.replace("laplace2d", "other"),
        KERNEL.replace("laplace2d", "GRAPH_A")
    );
    fails(
        &body,
        "package.metadata.sparserl.kernel[2].name",
        &["GRAPH_A_SPEC", "\"graph_a\"", "kernel[0] and kernel[2]"],
    );
    // Names whose identifiers all differ are fine.
    let d = parse(&two("web_graph", "webgraph")).unwrap();
    let types: Vec<&str> = d.kernels.iter().map(|k| k.type_name.as_str()).collect();
    assert_eq!(types, ["WebGraph", "Webgraph"]);
    assert_eq!(spec_static_name("web_graph"), "WEB_GRAPH_SPEC");
}

#[test]
fn invalid_identifiers() {
    let at = "package.metadata.sparserl.kernel[0].name";
    let rule = "expected a Rust identifier in snake_case";
    fails(
        &KERNEL.replace("laplace2d", "2d"),
        at,
        &["found \"2d\"", rule, "starts with a digit"],
    );
    fails(
        &KERNEL.replace("laplace2d", "fn"),
        at,
        &["found \"fn\"", rule, "keyword"],
    );
    fails(
        &KERNEL.replace("laplace2d", "my-kernel"),
        at,
        &[
            "found \"my-kernel\"",
            rule,
            "'-' is not allowed",
            "\"my_kernel\"",
        ],
    );
    fails(
        &KERNEL.replace("laplace2d", ""),
        at,
        &["found an empty string", rule],
    );
    fails(
        &KERNEL.replace("laplace2d", "_"),
        at,
        &["found \"_\"", "type name"],
    );
    fails(
        &KERNEL.replace("laplace2d", "self_"),
        at,
        &["found \"self_\"", "\"Self\""],
    );
}

#[test]
fn bad_arch() {
    let body = |arch: &str| format!("[package.metadata.sparserl]\narch = {arch}\n{KERNEL}");
    for bad in [
        "\"sm80\"",
        "\"sm_8\"",
        "\"sm_1000\"",
        "\"compute_80\"",
        "\"sm_8a\"",
    ] {
        fails(
            &body(&format!("[\"sm_80\", {bad}]")),
            "package.metadata.sparserl.arch[1]",
            &[
                &format!("found {bad}"),
                "expected an architecture like \"sm_80\"",
            ],
        );
    }
    fails(
        &body("\"sm_80\""),
        "package.metadata.sparserl.arch",
        &["found string \"sm_80\"", "expected an array"],
    );
    fails(
        &body("[]"),
        "package.metadata.sparserl.arch",
        &["found an empty array", "\"sm_80\""],
    );
    fails(
        &body("[80]"),
        "package.metadata.sparserl.arch[0]",
        &["found integer 80", "\"sm_80\""],
    );
    let d = parse(&body("[\"sm_90\", \"sm_80\", \"sm_90\", \"sm_100\"]")).unwrap();
    assert_eq!(d.arch.unwrap(), ["sm_90", "sm_80", "sm_100"]);
}

#[test]
fn non_positive_budget() {
    let body = |b: &str| format!("[package.metadata.sparserl]\nbudget-seconds = {b}\n{KERNEL}");
    let at = "package.metadata.sparserl.budget-seconds";
    fails(
        &body("0"),
        at,
        &["found 0, expected a positive finite number"],
    );
    fails(
        &body("-1.5"),
        at,
        &["found -1.5, expected a positive finite number"],
    );
    fails(
        &body("inf"),
        at,
        &["found inf, expected a positive finite number"],
    );
    fails(&body("nan"), at, &["expected a positive finite number"]);
    fails(
        &body("\"30s\""),
        at,
        &["found string \"30s\", expected a positive number"],
    );
    assert_eq!(parse(&body("2.5")).unwrap().budget_seconds, Some(2.5));
}

#[test]
fn read_descriptor_reports_io_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("Cargo.toml");
    let err = read_descriptor(&m).unwrap_err();
    assert_eq!(err.manifest(), m);
    assert!(
        err.to_string().contains("cannot read the manifest"),
        "{err}"
    );
    std::fs::write(&m, format!("{HEAD}{KERNEL}")).unwrap();
    assert_eq!(read_descriptor(&m).unwrap().kernels.len(), 1);
}

#[test]
fn load_samples_bad_index() {
    let d = parse(KERNEL).unwrap();
    let err = d.load_samples(3).unwrap_err();
    check(
        &err,
        "package.metadata.sparserl.kernel[3]",
        &["no such kernel"],
    );
}

mod kernel_keys;
mod objective_keys;
mod serde_model;

#[cfg(unix)]
#[test]
fn a_samples_directory_walk_error_is_an_error_not_fewer_files() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "set/a.mtx", SMALL_MTX);
    write(tmp.path(), "set/sub/b.mtx", SMALL_MTX);
    let body = format!(
        "{HEAD}{}",
        with_pattern("kind = \"samples\", dir = \"set\"")
    );
    let d = parse_descriptor(&tmp.path().join("Cargo.toml"), &body).unwrap();
    assert_eq!(d.kernels[0].pattern.files(tmp.path()).unwrap().len(), 2);
    // A link back to an ancestor: the walk reports a loop (whatever the
    // user's permissions), and the listing must not quietly drop it.
    std::os::unix::fs::symlink(tmp.path().join("set"), tmp.path().join("set/sub/loop")).unwrap();
    let msg = d.kernels[0]
        .pattern
        .files(tmp.path())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("Cargo.toml") && msg.contains("pattern.dir"),
        "{msg}"
    );
    assert!(msg.contains("loop"), "{msg}");
}

mod spmm_keys;
