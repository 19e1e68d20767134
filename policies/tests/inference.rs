//! Pure-Rust inference of a tiny hand-made policy file (no libtorch).

use serde_json::{Value, json};
use sparserl_policies::net::{FORMAT, INPUTS, NS, VARIANT_ENCODING, policy_space};
use sparserl_policies::{
    EMBEDDED_POLICY, LearnedPolicy, POLICY_VERSION, Policy, PolicyError, default_policy,
};
use sparserl_rt::{Features, ValueType};

/// A dense layer with small deterministic weights.
fn layer(inputs: usize, outputs: usize, salt: usize) -> Value {
    let w: Vec<f32> = (0..inputs * outputs)
        .map(|i| (((i * 7 + salt * 13) % 11) as f32 - 5.0) / 10.0)
        .collect();
    let b: Vec<f32> = (0..outputs)
        .map(|i| (((i + salt) % 5) as f32 - 2.0) / 10.0)
        .collect();
    json!({ "inputs": inputs, "outputs": outputs, "weight": w, "bias": b })
}

/// A policy file with trunk width 3 and cost width 2.
fn tiny() -> Value {
    let (h, c) = (3, 2);
    json!({
        "format": FORMAT,
        "round": 0,
        "gpu": "hand-made",
        "copy_gbs": 4000.0,
        "dataset_sha256": "none",
        "holdout_names": [],
        "holdout_classes": [],
        "seed": 0,
        "algorithm": "hand-made",
        "activation": "tanh",
        "feature_names": Features::NAMES,
        "feature_transform": sparserl_policies::net::FEATURE_TRANSFORMS,
        "feature_mean": vec![1.0; 18],
        "feature_std": vec![2.0; 18],
        "value_types": ["f32", "f64"],
        "actions": {
            "strategy": ["thread-per-row", "group-per-row", "block-per-row", "nnz-split", "tiled"],
            "block": [128, 256, 512],
            "lanes": [2, 4, 8, 16, 32],
            "items": [1, 2, 4, 8, 16],
            "unroll": [1, 2, 4],
            "ldg_x": [true, false]
        },
        "cost_mean": 6.0,
        "cost_std": 1.5,
        "layers": {
            "trunk1": layer(INPUTS, h, 1),
            "trunk2": layer(h, h, 2),
            "strategy": layer(h, NS, 3),
            "block": layer(h + NS, 3, 4),
            "lanes": layer(h + NS, 5, 5),
            "items": layer(h + NS, 5, 6),
            "unroll": layer(h + NS, 3, 7),
            "ldg_x": layer(h + NS, 2, 8),
            "value": layer(h, 1, 9),
            "cost1": layer(INPUTS + VARIANT_ENCODING, c, 10),
            "cost2": layer(c, c, 11),
            "cost3": layer(c, 1, 12)
        }
    })
}

fn feats() -> Features {
    Features {
        rows: 1e5,
        cols: 1e5,
        nnz: 1.2e6,
        density: 1.2e-4,
        mean_row: 12.0,
        std_row: 30.0,
        cv_row: 2.5,
        min_row: 1.0,
        max_row: 4000.0,
        p50_row: 6.0,
        p90_row: 25.0,
        p99_row: 160.0,
        gini_row: 0.6,
        max_over_mean: 333.0,
        diag_dist: 0.3,
        x_segments_per_nnz: 0.8,
        block4_density: 0.07,
        ..Features::default()
    }
}

#[test]
fn proposes_valid_variants_deterministically() {
    let text = tiny().to_string();
    let p = LearnedPolicy::from_json(&text).unwrap();
    assert_eq!(p.name(), "learned");
    let space = policy_space();
    for value in ValueType::ALL {
        let a = p.propose(&feats(), value, 10);
        assert_eq!(a, p.propose(&feats(), value, 10));
        assert_eq!(
            a,
            LearnedPolicy::from_json(&text)
                .unwrap()
                .propose(&feats(), value, 10)
        );
        assert_eq!(a.len(), 10);
        let probs = p.variant_probs(&feats(), value);
        let total: f64 = probs.iter().map(|x| x.1).sum();
        assert!((total - 1.0).abs() < 1e-9, "probabilities sum to {total}");
        let prob_of = |v| probs.iter().find(|x| x.0 == v).unwrap().1;
        for w in a.windows(2) {
            assert!(prob_of(w[0].variant) >= prob_of(w[1].variant));
        }
        for q in &a {
            q.variant.validate().unwrap();
            assert!(space.contains(&q.variant));
            assert!(q.score > 0.0 && q.score <= 1.0);
            let gbs = p.predicted_gbs(&feats(), value, &q.variant);
            assert!(gbs.is_finite() && gbs > 0.0);
        }
        assert_eq!(p.propose(&feats(), value, 1000).len(), space.len());
    }
    // Degenerate features stay finite.
    let z = p.propose(&Features::default(), ValueType::F64, 3);
    assert!(z.iter().all(|q| q.score.is_finite()));
}

#[test]
fn broken_files_are_errors_not_panics() {
    assert!(matches!(
        LearnedPolicy::from_json("{"),
        Err(PolicyError::Json(_))
    ));
    assert!(matches!(
        LearnedPolicy::from_json("[]"),
        Err(PolicyError::Json(_))
    ));
    let mut v = tiny();
    v["format"] = json!("other/9");
    assert!(matches!(
        LearnedPolicy::from_json(&v.to_string()),
        Err(PolicyError::Invalid(_))
    ));
    let mut v = tiny();
    v["layers"]["lanes"] = layer(7, 4, 0);
    let e = LearnedPolicy::from_json(&v.to_string()).unwrap_err();
    assert!(e.to_string().contains("lanes"), "{e}");
    let mut v = tiny();
    v["layers"].as_object_mut().unwrap().remove("cost2");
    assert!(LearnedPolicy::from_json(&v.to_string()).is_err());
    let mut v = tiny();
    v["layers"]["block"]["weight"] = json!([0.5]);
    assert!(LearnedPolicy::from_json(&v.to_string()).is_err());
    let mut v = tiny();
    v["feature_std"][3] = json!(0.0);
    assert!(LearnedPolicy::from_json(&v.to_string()).is_err());
    let mut v = tiny();
    v["actions"]["lanes"] = json!([2, 4, 8, 16, 64]);
    assert!(LearnedPolicy::from_json(&v.to_string()).is_err());
    let missing = std::path::Path::new("no/such/policy.json");
    assert!(matches!(
        LearnedPolicy::load(missing),
        Err(PolicyError::Io { .. })
    ));
}

#[test]
fn default_policy_matches_the_embedded_file() {
    let p = default_policy();
    let got = p.propose(&feats(), ValueType::F32, 3);
    assert_eq!(got.len(), 3);
    match EMBEDDED_POLICY {
        Some(text) => {
            assert!(POLICY_VERSION.starts_with("learned-"), "{POLICY_VERSION}");
            if LearnedPolicy::from_json(text).is_ok() {
                assert_eq!(p.name(), "learned");
            } else {
                assert_eq!(p.name(), "prior");
            }
        }
        None => {
            assert_eq!(p.name(), "prior");
            assert!(POLICY_VERSION.starts_with("prior-"));
        }
    }
}
