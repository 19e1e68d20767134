//! The `objective` key: crate-level and per kernel, its three forms, the
//! inheritance, the SpMM refusal, and that the default leaves the
//! declaration's canonical form (and so every fingerprint) unchanged.

use super::*;
use crate::objective::Objective;

const K: &str = "package.metadata.sparserl.kernel[0]";

/// One spmv kernel with the extra `keys` (lines).
fn spmv(keys: &str) -> String {
    format!("{KERNEL}{keys}")
}

fn crate_level(value: &str, kernels: &str) -> String {
    format!("[package.metadata.sparserl]\nobjective = {value}\n\n{kernels}")
}

#[test]
fn the_default_is_time_and_leaves_the_canonical_form_alone() {
    let d = parse(KERNEL).unwrap();
    assert_eq!(d.objective, Objective::Time);
    assert_eq!(d.kernels[0].objective, Objective::Time);
    let plain = d.kernels[0].canonical_json();
    assert!(!plain.contains("objective"), "{plain}");
    // Writing the default is the same declaration.
    let explicit = parse(&spmv("objective = \"time\"\n")).unwrap();
    assert_eq!(explicit.kernels[0].canonical_json(), plain);
}

#[test]
fn energy_and_weights_parse_and_change_the_canonical_form() {
    let e = parse(&spmv("objective = \"energy\"\n")).unwrap();
    assert_eq!(e.kernels[0].objective, Objective::Energy);
    let json = e.kernels[0].canonical_json();
    assert!(json.contains(r#""objective":"energy""#), "{json}");
    let w = parse(&spmv("objective = { time = 1, energy = 0.5 }\n")).unwrap();
    assert_eq!(
        w.kernels[0].objective,
        Objective::Weighted {
            time: 1.0,
            energy: 0.5
        }
    );
    let json = w.kernels[0].canonical_json();
    assert!(
        json.contains(r#""objective":{"time":1.0,"energy":0.5}"#),
        "{json}"
    );
    // A missing weight is zero.
    let only = parse(&spmv("objective = { energy = 2 }\n")).unwrap();
    assert_eq!(
        only.kernels[0].objective,
        Objective::Weighted {
            time: 0.0,
            energy: 2.0
        }
    );
}

#[test]
fn kernels_inherit_the_crate_objective_and_may_override_it() {
    let second = KERNEL
        .replace("laplace2d", "other")
        .replace("[64, 64]", "[32, 32]");
    let body = crate_level(
        "\"energy\"",
        &format!("{KERNEL}\n{second}objective = \"time\"\n"),
    );
    let d = parse(&body).unwrap();
    assert_eq!(d.objective, Objective::Energy);
    assert_eq!(d.kernels[0].objective, Objective::Energy);
    assert_eq!(d.kernels[1].objective, Objective::Time);
}

#[test]
fn spmm_kernels_measure_time_only() {
    let spmm = "[[package.metadata.sparserl.kernel]]\nname = \"gcn\"\nop = \"spmm\"\nvalue = \"f32\"\ncolumns = 64\npattern = { kind = \"power-law\", rows = 1000, avg-degree = 8, exponent = 2.1 }\n";
    // The crate's energy objective applies to SpMV kernels only.
    let d = parse(&crate_level("\"energy\"", &format!("{KERNEL}\n{spmm}"))).unwrap();
    assert_eq!(d.kernels[0].objective, Objective::Energy);
    assert_eq!(d.kernels[1].objective, Objective::Time);
    assert!(!d.kernels[1].canonical_json().contains("objective"));
    // "time" may be written on an spmm kernel; anything else is an error.
    assert!(parse(&format!("{spmm}objective = \"time\"\n")).is_ok());
    fails(
        &format!("{spmm}objective = \"energy\"\n"),
        &format!("{K}.objective"),
        &["found \"energy\"", "op = \"spmm\"", "time only"],
    );
    fails(
        &format!("{spmm}objective = {{ time = 1, energy = 1 }}\n"),
        &format!("{K}.objective"),
        &["found a table", "op = \"spmm\""],
    );
}

#[test]
fn bad_objectives_name_their_key_path() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "\"power\"",
            "",
            &["found \"power\"", "\"time\", \"energy\""],
        ),
        ("1", "", &["found integer 1", "a table of weights"]),
        ("[\"time\"]", "", &["found an array of 1 elements"]),
        (
            "{ time = 1, watts = 2 }",
            ".watts",
            &["unknown key \"watts\"", "only \"time\" and \"energy\""],
        ),
        (
            "{ time = -1 }",
            ".time",
            &["found -1", "non-negative finite"],
        ),
        (
            "{ energy = \"a lot\" }",
            ".energy",
            &["found string \"a lot\""],
        ),
        ("{ time = 0, energy = 0.0 }", "", &["all zero"]),
        (
            "{ time = nan }",
            ".time",
            &["found NaN", "non-negative finite"],
        ),
        ("{}", "", &["all zero"]),
    ];
    for (value, suffix, wanted) in cases {
        fails(
            &spmv(&format!("objective = {value}\n")),
            &format!("{K}.objective{suffix}"),
            wanted,
        );
        fails(
            &crate_level(value, KERNEL),
            &format!("package.metadata.sparserl.objective{suffix}"),
            wanted,
        );
    }
}
