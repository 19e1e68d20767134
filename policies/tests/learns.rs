//! Trains a small policy and checks that it learned something: on held-out
//! matrices, the zero-shot pick of the exported policy, evaluated by the
//! pure-Rust inference, beats a uniformly random choice and the fixed
//! template rule in mean normalised reward.
//!
//! Data: the committed H200 dataset `policies/data/h200-round0.json.gz`
//! (measured, every core variant per matrix). Split: the held-out matrices
//! and classes recorded in the committed `policies/policy.json`, so the test
//! checks the same generalisation the committed policy claims; without a
//! committed policy, the `road-network` class plus every fifth other matrix.
#![cfg(feature = "train")]

use sparserl_policies::LearnedPolicy;
use sparserl_policies::dataset::Dataset;
use sparserl_policies::train::{TrainConfig, train};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Training seeds libtorch's process-wide generator: tests that train must
/// not run at the same time, or their random streams interleave.
static TORCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn torch_lock() -> std::sync::MutexGuard<'static, ()> {
    TORCH.lock().unwrap_or_else(|p| p.into_inner())
}

fn committed_dataset() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/h200-round0.json.gz")
}

/// Held-out split: the committed policy's, else `road-network` (or the
/// first class with at least two matrices) and every fifth other matrix.
fn holdout(ds: &Dataset) -> (Vec<String>, Vec<String>) {
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policy.json");
    if let Ok(p) = LearnedPolicy::load(&committed) {
        let f = p.file();
        return (f.holdout_names.clone(), f.holdout_classes.clone());
    }
    let classes: BTreeSet<&str> = ds.matrices.iter().map(|m| m.class.as_str()).collect();
    let names_of = |c: &str| -> BTreeSet<&str> {
        ds.matrices
            .iter()
            .filter(|m| m.class == c)
            .map(|m| m.name.as_str())
            .collect()
    };
    let class = if classes.contains("road-network") {
        "road-network"
    } else {
        classes
            .iter()
            .copied()
            .find(|c| names_of(c).len() >= 2)
            .unwrap_or("")
    };
    let others: BTreeSet<&str> = ds
        .matrices
        .iter()
        .filter(|m| m.class != class)
        .map(|m| m.name.as_str())
        .collect();
    let names = others
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 5 == 2)
        .map(|(_, n)| n.to_string())
        .collect();
    (names, vec![class.to_string()])
}

#[test]
fn learned_policy_beats_random_and_template_on_held_out_matrices() {
    let _torch = torch_lock();
    let path = committed_dataset();
    let ds = Dataset::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let (names, classes) = holdout(&ds);
    let cfg = TrainConfig {
        seed: 0,
        epochs: 150,
        samples: 16,
        cost_steps: 200,
        hidden: 32,
        cost_hidden: 32,
        holdout_names: names,
        holdout_classes: classes,
        ..TrainConfig::default()
    };
    let t0 = std::time::Instant::now();
    let out = train(&ds, &cfg, |_| {}).unwrap();
    let h = &out.heldout;
    eprintln!(
        "{} ({}): trained in {:.1} s; held-out {} records: learned {:.3}, uniform {:.3}, template {:.3}, prior {:.3}; train learned {:.3}",
        ds.gpu,
        path.file_name().unwrap_or_default().to_string_lossy(),
        t0.elapsed().as_secs_f64(),
        h.records,
        h.learned_greedy,
        h.uniform,
        h.template_rule,
        h.prior,
        out.train.learned_greedy
    );
    assert!(h.records > 0);
    let first = &out.epochs[0];
    let last = out.epochs.last().unwrap();
    assert!(
        last.train_expected > first.train_expected,
        "training reward did not improve: {} -> {}",
        first.train_expected,
        last.train_expected
    );
    assert!(
        h.learned_greedy > h.uniform,
        "learned {} vs uniform {}",
        h.learned_greedy,
        h.uniform
    );
    assert!(
        h.learned_greedy > h.template_rule,
        "learned {} vs template rule {}",
        h.learned_greedy,
        h.template_rule
    );
}

#[test]
fn training_is_reproducible() {
    let _torch = torch_lock();
    let ds = sparserl_policies::synthetic::dataset(3, 2);
    let cfg = TrainConfig {
        epochs: 5,
        samples: 4,
        cost_steps: 5,
        hidden: 8,
        cost_hidden: 8,
        holdout_classes: vec!["road-network".into()],
        ..TrainConfig::default()
    };
    let a = train(&ds, &cfg, |_| {}).unwrap();
    let b = train(&ds, &cfg, |_| {}).unwrap();
    assert_eq!(a.file, b.file);
}
