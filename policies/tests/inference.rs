//! Pure-Rust inference of a tiny hand-made policy file (no libtorch).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sparserl_policies::net::{FORMAT, INPUTS, NS, VARIANT_ENCODING, policy_space};
use sparserl_policies::{
    EMBEDDED_POLICY, LearnedPolicy, POLICY_VERSION, Policy, PolicyChoice, PolicyError,
    default_policy, policy_in_use, try_default_policy,
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
            "strategy": ["thread-per-row", "group-per-row", "block-per-row", "nnz-split", "tiled", "sell"],
            "block": [128, 256, 512],
            "lanes": [2, 4, 8, 16, 32],
            "items": [1, 2, 4, 8, 16],
            "unroll": [1, 2, 4],
            "ldg_x": [true, false],
            "stream_y": [false, true]
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
            "stream_y": layer(h + NS, 2, 13),
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
    // Each broken file fails for its own reason (not, say, a parse error
    // that any edit would cause).
    let invalid = |v: &Value, what: &str| match LearnedPolicy::from_json(&v.to_string()) {
        Err(PolicyError::Invalid(m)) => assert!(m.contains(what), "{what:?} not in {m:?}"),
        other => panic!("expected an invalid-file error about {what:?}, got {other:?}"),
    };
    let mut v = tiny();
    v["layers"].as_object_mut().unwrap().remove("cost2");
    invalid(&v, "missing layer cost2");
    let mut v = tiny();
    v["layers"]["block"]["weight"] = json!([0.5]);
    invalid(&v, "layer block: expected");
    let mut v = tiny();
    v["feature_std"][3] = json!(0.0);
    invalid(&v, "normalisation constants");
    let mut v = tiny();
    v["actions"]["lanes"] = json!([2, 4, 8, 16, 64]);
    invalid(&v, "action vocabulary");
    let mut v = tiny();
    v["feature_names"][0] = json!("row_count");
    invalid(&v, "feature names");
    // The unmodified file loads (so the failures above are the edits').
    assert!(LearnedPolicy::from_json(&tiny().to_string()).is_ok());
    let missing = std::path::Path::new("no/such/policy.json");
    assert!(matches!(
        LearnedPolicy::load(missing),
        Err(PolicyError::Io { .. })
    ));
}

/// The committed `policy.json` must be embedded and load as the learned
/// policy: a file that fails to load would otherwise quietly turn every
/// build into a prior build.
#[test]
fn the_committed_policy_loads_as_the_learned_policy() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.json");
    let in_use = policy_in_use();
    let Ok(on_disk) = std::fs::read_to_string(&path) else {
        // No committed policy: the prior, saying so.
        assert_eq!(EMBEDDED_POLICY, None);
        assert_eq!(in_use.choice, PolicyChoice::PriorNoFile);
        assert_eq!(in_use.policy.name(), "prior");
        assert!(matches!(
            try_default_policy(),
            Err(PolicyError::NotEmbedded)
        ));
        return;
    };
    assert_eq!(
        EMBEDDED_POLICY,
        Some(on_disk.as_str()),
        "stale embedded policy"
    );
    let learned = match try_default_policy() {
        Ok(p) => p,
        Err(e) => panic!("the committed policy.json does not load: {e}"),
    };
    let sha: String = Sha256::digest(on_disk.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        in_use.choice,
        PolicyChoice::Learned {
            sha256: sha.clone(),
            round: learned.file().round,
        },
        "{}",
        in_use.choice.describe()
    );
    assert_eq!(in_use.choice.version(), format!("learned-1-{sha}"));
    assert_eq!(in_use.choice.version(), POLICY_VERSION);
    assert_eq!(in_use.policy.name(), "learned");
    // The policy in use, and `default_policy`, propose what the file does.
    for value in ValueType::ALL {
        let want = learned.propose(&feats(), value, 8);
        assert_eq!(in_use.policy.propose(&feats(), value, 8), want);
        assert_eq!(default_policy().propose(&feats(), value, 8), want);
    }
}
