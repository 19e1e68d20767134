//! Unit tests of `eval-classes` on small synthetic datasets.

use super::*;
use sparserl_rt::{Strategy, ValueType, Variant};

fn v(block: u32) -> Variant {
    Variant {
        block,
        ..Variant::of(Strategy::ThreadPerRow)
    }
}

fn rec(name: &str, class: &str, results: &[(usize, f64)]) -> MatrixRecord {
    MatrixRecord {
        energy: Vec::new(),
        name: name.into(),
        class: class.into(),
        value: ValueType::F32,
        features: vec![0.0; 18],
        results: results.iter().map(|&(i, g)| (i, g, 0.0, g > 0.0)).collect(),
        cannot_run: Vec::new(),
        provenance: None,
    }
}

fn ds(matrices: Vec<MatrixRecord>) -> Dataset {
    Dataset {
        gpu: "test".into(),
        copy_gbs: 1000.0,
        date: "today".into(),
        command: "test".into(),
        feature_names: Vec::new(),
        variants: vec![v(128), v(256), v(512), v(1024)],
        matrices,
    }
}

/// Always proposes 128, 256, 512 (1024 is never proposed).
fn propose(_: &MatrixRecord) -> Vec<Proposal> {
    [128, 256, 512]
        .iter()
        .map(|&b| Proposal {
            variant: v(b),
            score: 0.0,
        })
        .collect()
}

/// Two runs, classes `alpha` (two records) and `beta` (one).
fn two_runs() -> Vec<Vec<RecordRun>> {
    let run1 = ds(vec![
        // pick 90 of 100; top-16 = 90 (1024 is the oracle, not proposed)
        rec("a1", "alpha", &[(0, 90.0), (1, 80.0), (3, 100.0)]),
        // pick not measured: zero-shot miss (0); top-16 = 100
        rec("a2", "alpha", &[(1, 100.0), (2, 50.0)]),
        // pick measured incorrect: miss; top-16 = 0.5 (1024 not proposed)
        rec("b1", "beta", &[(0, 0.0), (1, 50.0), (3, 100.0)]),
    ]);
    let run2 = ds(vec![
        rec("a1", "alpha", &[(0, 100.0), (3, 100.0)]),
        rec("a2", "alpha", &[(0, 50.0), (1, 100.0)]),
        rec("b1", "beta", &[(0, 80.0), (2, 100.0)]),
    ]);
    let bench = vec![
        json!({"matrix": "a1", "value": "f32", "ours_gbs": 120.0, "oracle_gbs": 120.0,
                            "cusparse_gbs": 50.0, "variant": "x", "reorder": "rcm"}),
    ];
    vec![
        eval_run(&run1, &bench, &propose),
        eval_run(&run2, &[], &propose),
    ]
}

#[test]
fn policy_classes_missing_picks_are_counted_misses() {
    let runs = two_runs();
    let r = &runs[0];
    assert_eq!(r[0].zero_shot_gbs, Some(90.0));
    assert_eq!(r[0].fractions["zero_shot"], Some(0.9));
    assert_eq!(r[0].fractions["top16"], Some(0.9));
    assert_eq!(r[0].top16_measured, 2); // 512 is not in the record
    assert_eq!(r[1].zero_shot_gbs, None);
    assert_eq!(r[1].zero_shot_status, "not in the sweep");
    assert_eq!(r[1].fractions["zero_shot"], Some(0.0));
    assert_eq!(r[1].fractions["top16"], Some(1.0));
    assert_eq!(r[2].zero_shot_status, "incorrect in the sweep");
    assert_eq!(r[2].fractions["zero_shot"], Some(0.0));
    assert_eq!(r[2].fractions["top16"], Some(0.5));
    // Bench columns: only where the report has the row.
    assert_eq!(r[0].fractions["ours"], Some(1.2));
    assert_eq!(r[0].fractions["ours_vs_bench_oracle"], Some(1.0));
    assert_eq!(r[0].fractions["cusparse"], Some(0.5));
    assert_eq!(r[1].fractions["ours"], None);
    let alpha = group(&runs, &|r| r.class == "alpha");
    assert_eq!(alpha.runs[0].zero_shot_missing, 1);
    assert_eq!(alpha.runs[1].zero_shot_missing, 0);
    assert_eq!(
        group(&runs, &|r| r.class == "beta").runs[0].zero_shot_missing,
        1
    );
}

#[test]
fn policy_classes_mean_and_spread_per_class() {
    let runs = two_runs();
    let eq = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} != {b}");
    let alpha = group(&runs, &|r| r.class == "alpha");
    // zero-shot: run 1 (0.9 + 0) / 2 = 0.45; run 2 (1.0 + 0.5) / 2 = 0.75.
    eq(alpha.runs[0].means["zero_shot"].unwrap(), 0.45);
    eq(alpha.runs[1].means["zero_shot"].unwrap(), 0.75);
    let s = alpha.stats["zero_shot"].clone().unwrap();
    eq(s.mean, 0.6);
    eq(s.min, 0.45);
    eq(s.max, 0.75);
    eq(s.sd, (2.0 * 0.15f64.powi(2)).sqrt()); // n - 1 = 1
    assert_eq!(s.runs, 2);
    // top-16: run 1 (0.9 + 1) / 2, run 2 (1 + 1) / 2.
    eq(
        alpha.stats["top16"].clone().unwrap().mean,
        (0.95 + 1.0) / 2.0,
    );
    assert!(!alpha.pass_zero_shot && !alpha.pass_top16);
    // ours: one run with a bench row, one record.
    let o = alpha.stats["ours"].clone().unwrap();
    assert_eq!((o.runs, o.sd), (1, 0.0));
    eq(o.mean, 1.2);
    let beta = group(&runs, &|r| r.class == "beta");
    eq(beta.stats["zero_shot"].clone().unwrap().mean, 0.4);
    eq(beta.stats["top16"].clone().unwrap().mean, 0.75);
    assert!(beta.stats["cusparse"].is_none());
    let all = group(&runs, &|_| true);
    eq(all.runs[0].means["zero_shot"].unwrap(), 0.3);
    // Passing: a class at the targets in every run.
    let perfect = ds(vec![rec("p", "gamma", &[(0, 100.0)])]);
    let g = group(&[eval_run(&perfect, &[], &propose)], &|_| true);
    assert!(g.pass_zero_shot && g.pass_top16 && g.pass_top16_every_run);
}

#[test]
fn policy_classes_training_marking() {
    let train = ds(vec![
        rec("m1", "alpha", &[(0, 1.0)]),
        rec("m2", "road-network", &[(0, 1.0)]),
        rec("m3", "2D-mesh", &[(0, 1.0)]),
        rec("m4", "email-graph", &[(0, 1.0)]),
    ]);
    let extra = ds(vec![rec("m5", "circuit", &[(0, 1.0)])]);
    let t = training(&[&train, &extra], &["m4".into()], &["road-network".into()]);
    assert_eq!(t.records, 3);
    let set = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(t.classes, set(&["alpha", "2D-mesh", "circuit"]));
    assert_eq!(t.held_out_classes, set(&["road-network", "email-graph"]));
    assert_eq!(t.names, set(&["m1", "m3", "m5"]));
    let alpha = class_status("alpha", &t);
    assert!(alpha.in_training);
    assert_eq!(alpha.label, "also in training (as a class name)");
    assert!(alpha.related.is_empty());
    let circuit = class_status("circuit", &t);
    assert!(circuit.in_training);
    assert_eq!(circuit.related, vec![("circuit".into(), "trained".into())]);
    let road = class_status("road", &t);
    assert!(!road.in_training);
    assert_eq!(road.label, "never in training");
    assert_eq!(
        road.related,
        vec![("road-network".into(), "held out (never trained)".into())]
    );
    let mesh = class_status("mesh", &t);
    assert_eq!(
        mesh.related,
        vec![
            ("2D-mesh".into(), "trained".into()),
            ("3D-mesh".into(), "not in the training data".into())
        ]
    );
    assert!(!class_status("email-graph", &t).in_training);
}
