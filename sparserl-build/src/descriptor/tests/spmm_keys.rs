//! `op = "spmm"` kernels: `columns`, `dense`, their epilogues, and the
//! refusal of each operation's keys on the other.

use super::*;

/// One spmm kernel with the extra `keys` (lines) after `op`.
fn spmm(keys: &str) -> String {
    format!(
        "[[package.metadata.sparserl.kernel]]\nname = \"gcn\"\nop = \"spmm\"\nvalue = \"f32\"\n{keys}pattern = {{ kind = \"power-law\", rows = 1000, avg-degree = 8, exponent = 2.1 }}\n"
    )
}

const K: &str = "package.metadata.sparserl.kernel[0]";

#[test]
fn spmm_kernel_parses_with_defaults() {
    let d = parse(&spmm("columns = 64\n")).unwrap();
    let k = &d.kernels[0];
    assert_eq!(k.op, Op::Spmm);
    assert_eq!(k.value, ValueType::F32);
    assert!(k.epilogues.is_empty());
    assert_eq!(
        k.spmm,
        Some(SpmmDecl {
            columns: vec![64],
            dense: DenseLayout::RowMajor,
            epilogues: vec![],
        })
    );
}

#[test]
fn columns_are_deduplicated_and_sorted() {
    let d = parse(&spmm(
        "columns = [128, 32, 64, 32]\ndense = \"col-major\"\nepilogues = [\"bias-relu\"]\n",
    ))
    .unwrap();
    let s = d.kernels[0].spmm.as_ref().unwrap();
    assert_eq!(s.columns, vec![32, 64, 128]);
    assert_eq!(s.dense, DenseLayout::ColMajor);
    assert_eq!(s.epilogues, vec![SpmmEpilogue::BiasRelu]);
    let json = d.kernels[0].canonical_json();
    assert!(
        json.contains(
            r#""spmm":{"columns":[32,64,128],"dense":"col-major","epilogues":["bias-relu"]}"#
        ),
        "{json}"
    );
    // Same widths written differently: the same declaration, the same key.
    let e = parse(&spmm(
        "columns = [32, 64, 128]\ndense = \"col-major\"\nepilogues = [\"bias-relu\"]\n",
    ))
    .unwrap();
    assert_eq!(json, e.kernels[0].canonical_json());
    let one = parse(&spmm(&format!("columns = {MAX_SPMM_COLUMNS}\n"))).unwrap();
    assert_eq!(
        one.kernels[0].spmm.as_ref().unwrap().columns,
        vec![MAX_SPMM_COLUMNS]
    );
}

#[test]
fn the_widths_and_the_layout_change_the_canonical_form() {
    let base = parse(&spmm("columns = 64\n")).unwrap().kernels[0].canonical_json();
    for keys in [
        "columns = 32\n",
        "columns = [64, 128]\n",
        "columns = 64\ndense = \"col-major\"\n",
        "columns = 64\nepilogues = [\"bias-relu\"]\n",
    ] {
        let other = parse(&spmm(keys)).unwrap().kernels[0].canonical_json();
        assert_ne!(base, other, "{keys}");
    }
    // The default layout written out is the default.
    let explicit = parse(&spmm("columns = 64\ndense = \"row-major\"\n")).unwrap();
    assert_eq!(base, explicit.kernels[0].canonical_json());
}

#[test]
fn columns_is_required_for_spmm() {
    fails(
        &spmm(""),
        &format!("{K}.columns"),
        &[
            "missing required key \"columns\"",
            "columns = [32, 64, 128]",
        ],
    );
}

#[test]
fn bad_columns_name_the_element() {
    let limit = format!("no larger than {MAX_SPMM_COLUMNS}");
    for (keys, at, wanted) in [
        (
            "columns = 0\n",
            format!("{K}.columns"),
            vec!["found 0", limit.as_str()],
        ),
        (
            "columns = -3\n",
            format!("{K}.columns"),
            vec!["found -3", "positive integer"],
        ),
        (
            "columns = 4097\n",
            format!("{K}.columns"),
            vec!["found 4097", limit.as_str()],
        ),
        (
            "columns = \"64\"\n",
            format!("{K}.columns"),
            vec!["found string \"64\"", "or an array of them"],
        ),
        (
            "columns = 64.0\n",
            format!("{K}.columns"),
            vec!["found float 64.0"],
        ),
        (
            "columns = []\n",
            format!("{K}.columns"),
            vec!["found an empty array", "at least one dense width"],
        ),
        (
            "columns = [32, 0]\n",
            format!("{K}.columns[1]"),
            vec!["found 0", limit.as_str()],
        ),
        (
            "columns = [32, \"x\"]\n",
            format!("{K}.columns[1]"),
            vec!["found string \"x\""],
        ),
        (
            "columns = [99999999999]\n",
            format!("{K}.columns[0]"),
            vec!["found 99999999999", limit.as_str()],
        ),
    ] {
        fails(&spmm(keys), &at, &wanted);
    }
}

#[test]
fn bad_dense_layout() {
    fails(
        &spmm("columns = 64\ndense = \"row\"\n"),
        &format!("{K}.dense"),
        &[
            "found \"row\"",
            "expected one of \"row-major\", \"col-major\"",
        ],
    );
    fails(
        &spmm("columns = 64\ndense = 1\n"),
        &format!("{K}.dense"),
        &["found integer 1", "\"row-major\""],
    );
}

#[test]
fn epilogues_belong_to_their_operation() {
    fails(
        &spmm("columns = 64\nepilogues = [\"dot\"]\n"),
        &format!("{K}.epilogues[0]"),
        &[
            "found \"dot\", expected one of \"bias-relu\"",
            "op = \"spmv\" kernels",
        ],
    );
    fails(
        &spmm("columns = 64\nepilogues = [\"bias-relu\", \"bias-relu\"]\n"),
        &format!("{K}.epilogues[1]"),
        &["found \"bias-relu\" twice"],
    );
    fails(
        &spmm("columns = 64\nepilogues = \"bias-relu\"\n"),
        &format!("{K}.epilogues"),
        &["found string \"bias-relu\", expected an array of"],
    );
    fails(
        &format!("{KERNEL}epilogues = [\"bias-relu\"]\n"),
        &format!("{K}.epilogues[0]"),
        &[
            "found \"bias-relu\", expected one of \"axpby\"",
            "op = \"spmm\" kernels",
        ],
    );
}

#[test]
fn spmm_kernels_keep_the_given_numbering() {
    for r in ["rcm", "degree"] {
        fails(
            &spmm(&format!("columns = 64\nreorder = \"{r}\"\n")),
            &format!("{K}.reorder"),
            &[
                &format!("found \"{r}\", expected \"auto\" or \"none\""),
                "op = \"spmm\" kernel",
            ],
        );
    }
    for r in ["auto", "none"] {
        parse(&spmm(&format!("columns = 64\nreorder = \"{r}\"\n"))).unwrap();
    }
}

#[test]
fn spmm_keys_are_refused_on_spmv_kernels() {
    fails(
        &format!("{KERNEL}columns = 64\n"),
        &format!("{K}.columns"),
        &["found 64", "no \"columns\" key on an op = \"spmv\" kernel"],
    );
    fails(
        &format!("{KERNEL}dense = \"row-major\"\n"),
        &format!("{K}.dense"),
        &[
            "found \"row-major\"",
            "no \"dense\" key on an op = \"spmv\" kernel",
        ],
    );
}

#[test]
fn spmv_descriptors_are_unchanged() {
    // What an spmv kernel was before SpMM existed: same fields, same
    // canonical form (lock-file fingerprints depend on it).
    let d = parse(&format!(
        "{KERNEL}epilogues = [\"dot\"]\nreorder = \"rcm\"\n"
    ))
    .unwrap();
    let k = &d.kernels[0];
    assert_eq!(k.op, Op::Spmv);
    assert_eq!(k.spmm, None);
    assert_eq!(k.epilogues, vec![sparserl_rt::Epilogue::Dot]);
    assert_eq!(
        k.canonical_json(),
        r#"{"name":"laplace2d","type_name":"Laplace2d","op":"spmv","value":"f32","pattern":{"kind":"stencil","grid":[64,64],"points":5},"epilogues":["dot"],"reorder":"rcm"}"#
    );
}

#[test]
fn key_order_reports_the_first_problem() {
    // Documented order: ..., pattern, columns, dense, epilogues, reorder.
    fails(
        &spmm("columns = 0\ndense = \"x\"\nepilogues = [\"dot\"]\n"),
        &format!("{K}.columns"),
        &["found 0"],
    );
    fails(
        &spmm("columns = 8\ndense = \"x\"\nepilogues = [\"dot\"]\n"),
        &format!("{K}.dense"),
        &["found \"x\""],
    );
}
