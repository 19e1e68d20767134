//! Trains a small policy and checks that it learned something: on held-out
//! matrices (a whole structure class plus about a fifth of the other
//! matrices), the zero-shot pick of the exported policy, evaluated by the
//! pure-Rust inference, beats a uniformly random choice and the fixed
//! template rule in mean normalised reward.
//!
//! Data: the first measured dataset committed under `policies/data/`
//! (`*.json.gz`, sorted by name). Until one is committed, a synthetic
//! dataset from the hidden ground-truth cost function of
//! `sparserl_policies::synthetic` is used instead.
#![cfg(feature = "train")]

use sparserl_policies::dataset::Dataset;
use sparserl_policies::train::{TrainConfig, train};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn committed_dataset() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    files.into_iter().next()
}

/// Held-out split: `road-network` if present (else the first class, by
/// name, with at least two matrices) and every fifth other matrix name.
fn holdout(ds: &Dataset) -> (Vec<String>, Vec<String>) {
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
    let ds = match committed_dataset() {
        Some(p) => Dataset::read(&p).unwrap(),
        None => sparserl_policies::synthetic::dataset(7, 8),
    };
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
        if committed_dataset().is_some() {
            "measured"
        } else {
            "synthetic"
        },
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
