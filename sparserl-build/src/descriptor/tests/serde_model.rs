//! The serde model and its path-tracking deserializer: every table's keys,
//! the `kind` tag, values of unexpected TOML types (datetimes included) and
//! which problem of several is reported.

use super::*;

const AT: &str = "package.metadata.sparserl.kernel[0]";

#[test]
fn other_tables_of_the_manifest_are_cargos() {
    let body = format!(
        "[package.metadata.docs.rs]\nall-features = true\n[dependencies]\nserde = \"1\"\n\
         [workspace]\nwhen = 1979-05-27\n{KERNEL}"
    );
    assert_eq!(parse(&body).unwrap().kernels.len(), 1);
}

#[test]
fn manifest_levels_must_be_tables() {
    let err = parse_descriptor(manifest(), "package = 3\n").unwrap_err();
    check(&err, "package", &["found integer 3, expected a table"]);
    fails(
        "[package.metadata]\nsparserl = [1]\n",
        ROOT,
        &["found an array of 1 elements, expected a table"],
    );
    let err = parse_descriptor(manifest(), "[package]\nmetadata = \"x\"\n").unwrap_err();
    check(
        &err,
        "package.metadata",
        &["found string \"x\", expected a table"],
    );
}

#[test]
fn unknown_keys_name_every_allowed_key() {
    fails(
        &format!("[package.metadata.sparserl]\n\"a b\" = 1\n{KERNEL}"),
        "package.metadata.sparserl.\"a b\"",
        &["unknown key \"a b\"; allowed keys: arch, budget-seconds, objective, kernel"],
    );
    fails(
        &format!("{KERNEL}zzz = 1\n"),
        &format!("{AT}.zzz"),
        &[
            "unknown key \"zzz\"; allowed keys: name, op, value, pattern, columns, dense, epilogues, reorder",
        ],
    );
    let cases = [
        ("matrix-market", "kind, path"),
        ("samples", "kind, dir"),
        ("stencil", "kind, grid, points, seed, samples"),
        ("banded", "kind, rows, bandwidth, avg-degree, seed, samples"),
        (
            "power-law",
            "kind, rows, avg-degree, exponent, seed, samples",
        ),
        ("uniform", "kind, rows, cols, avg-degree, seed, samples"),
        ("block", "kind, rows, block, blocks-per-row, seed, samples"),
    ];
    for (kind, allowed) in cases {
        let err = fails(
            &with_pattern(&format!("kind = \"{kind}\", cols2 = 1")),
            &format!("{AT}.pattern.cols2"),
            &[&format!("unknown key \"cols2\"; allowed keys: {allowed}")],
        );
        assert!(err.message().ends_with(allowed), "{err}");
    }
    // The same in a sub-table.
    fails(
        "[[package.metadata.sparserl.kernel]]\nname = \"k\"\nop = \"spmv\"\nvalue = \"f32\"\n\
         [package.metadata.sparserl.kernel.pattern]\nkind = \"uniform\"\nrows = 1\ncols = 1\n\
         avg-degree = 1\nseed2 = 1\n",
        &format!("{AT}.pattern.seed2"),
        &["unknown key \"seed2\""],
    );
}

#[test]
fn the_kind_tag() {
    let kinds = one_of(KINDS);
    let unknown = fails(
        &with_pattern("kind = \"diagonal\""),
        &format!("{AT}.pattern.kind"),
        &[],
    );
    // serde's variant names are the documented kinds, in order.
    assert_eq!(
        unknown.message(),
        format!("found \"diagonal\", expected {kinds}")
    );
    let missing = fails(
        &with_pattern("rows = 1"),
        &format!("{AT}.pattern.kind"),
        &[],
    );
    assert_eq!(
        missing.message(),
        format!("missing required key \"kind\", expected {kinds}")
    );
    fails(
        &with_pattern("kind = 3"),
        &format!("{AT}.pattern.kind"),
        &["found integer 3, expected a string"],
    );
    fails(
        &with_pattern("kind = [\"stencil\"]"),
        &format!("{AT}.pattern.kind"),
        &["found an array of 1 elements, expected a string"],
    );
    // The kind is checked before the other keys.
    fails(
        &with_pattern("foo = 1, kind = \"diagonal\""),
        &format!("{AT}.pattern.kind"),
        &["found \"diagonal\""],
    );
}

#[test]
fn containers_of_the_wrong_type() {
    // An internally tagged enum would take the kind from an array's first element.
    fails(
        &KERNEL.replace(
            "{ kind = \"stencil\", grid = [64, 64], points = 5 }",
            "[\"stencil\", [64, 64], 5]",
        ),
        &format!("{AT}.pattern"),
        &["found an array of 3 elements, expected a table such as { kind = \"stencil\""],
    );
    fails(
        "[package.metadata.sparserl]\nkernel = [1]\n",
        AT,
        &["found integer 1, expected a kernel table"],
    );
    fails(
        "[package.metadata.sparserl]\nkernel = [[\"k\", \"spmv\"]]\n",
        AT,
        &["found an array of 2 elements, expected a kernel table"],
    );
}

#[test]
fn datetimes_are_reported_as_datetimes() {
    fails(
        &format!("[package.metadata.sparserl]\nbudget-seconds = 1979-05-27\n{KERNEL}"),
        "package.metadata.sparserl.budget-seconds",
        &["found datetime 1979-05-27, expected a positive number"],
    );
    fails(
        &KERNEL.replace("\"laplace2d\"", "1979-05-27"),
        &format!("{AT}.name"),
        &["found datetime 1979-05-27, expected a string"],
    );
    fails(
        &with_pattern("kind = \"uniform\", rows = 1979-05-27T07:32:00Z, cols = 2, avg-degree = 1"),
        &format!("{AT}.pattern.rows"),
        &["found datetime 1979-05-27T07:32:00Z, expected a positive integer"],
    );
    fails(
        &with_pattern("kind = 07:32:00"),
        &format!("{AT}.pattern.kind"),
        &["found datetime 07:32:00, expected a string"],
    );
}

#[test]
fn the_first_problem_in_documented_order_is_reported() {
    // Unknown keys of a table come first, whatever their place.
    fails(
        &format!("{}zzz = 1\n", KERNEL.replace("\"laplace2d\"", "3")),
        &format!("{AT}.zzz"),
        &["unknown key \"zzz\""],
    );
    // Then its keys in documented order: name before op before value.
    fails(
        &KERNEL
            .replace("\"spmv\"", "3")
            .replace("\"laplace2d\"", "\"2d\""),
        &format!("{AT}.name"),
        &["starts with a digit"],
    );
    // The descriptor table's keys before its kernels.
    fails(
        &format!(
            "[package.metadata.sparserl]\narch = [\"x\"]\n{}",
            KERNEL.replace("\"spmv\"", "3")
        ),
        "package.metadata.sparserl.arch[0]",
        &["found \"x\""],
    );
    // Kernels one after the other.
    fails(
        &format!(
            "{}{}",
            KERNEL.replace("\"spmv\"", "\"spmvv\""),
            KERNEL
                .replace("laplace2d", "other")
                .replace("op = ", "opp = ")
        ),
        "package.metadata.sparserl.kernel[0].op",
        &["found \"spmvv\""],
    );
}
