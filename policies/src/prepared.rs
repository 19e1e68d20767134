//! A dataset record as training and the record picks see it: its features
//! and, per variant of the policy space, the measured fraction of the best
//! variant the policy can pick.

use crate::dataset::{Dataset, MatrixRecord};
use crate::net::policy_space;
use sparserl_rt::{Strategy, Variant};
use std::collections::BTreeMap;

/// One record prepared for training: input and per-variant rewards.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Matrix name.
    pub name: String,
    /// Structure class.
    pub class: String,
    /// Value type.
    pub value: sparserl_rt::ValueType,
    /// Raw features.
    pub features: Vec<f64>,
    /// Best measured GB/s.
    pub best: f64,
    /// Per policy-space variant: measured reward (`gbs / best`, -1 if
    /// incorrect, 0 for a strategy in `cannot_run`), `None` when the dataset
    /// lacks it.
    pub measured: Vec<Option<f64>>,
    /// Strategies of the vocabulary this matrix has no layout for.
    pub cannot_run: Vec<Strategy>,
}

pub(crate) fn prepare(ds: &Dataset, rec: &MatrixRecord) -> Option<Prepared> {
    let index: BTreeMap<Variant, usize> = policy_space()
        .into_iter()
        .enumerate()
        .map(|(i, v)| (v, i))
        .collect();
    // Rewards are relative to the best variant the policy can pick (the
    // policy space); the other layout strategies (e.g. diagonal) are the
    // search's business.
    let best = rec
        .results
        .iter()
        .filter(|r| r.3)
        .filter(|r| {
            ds.variants
                .get(r.0)
                .is_some_and(|v| index.contains_key(&v.canonical()))
        })
        .map(|r| r.1)
        .fold(0.0, f64::max);
    if best <= 0.0 || rec.features.len() != 18 {
        return None;
    }
    let mut measured = vec![None; index.len()];
    // A strategy whose layout this matrix lacks gets no kernel: reward 0,
    // not an estimate (marked by the dataset, see `Dataset::mark_cannot_run`).
    let cannot_run = rec.cannot_run.clone();
    for (v, &j) in &index {
        if cannot_run.contains(&v.strategy) {
            measured[j] = Some(0.0);
        }
    }
    for r in &rec.results {
        let Some(v) = ds.variants.get(r.0) else {
            continue;
        };
        if let Some(&j) = index.get(&v.canonical()) {
            measured[j] = Some(if r.3 { r.1 / best } else { -1.0 });
        }
    }
    Some(Prepared {
        name: rec.name.clone(),
        class: rec.class.clone(),
        value: rec.value,
        features: rec.features.clone(),
        best,
        measured,
        cannot_run,
    })
}

/// Prepares a dataset's records (for evaluation outside training).
pub fn prepare_all(ds: &Dataset) -> Vec<Prepared> {
    ds.matrices.iter().filter_map(|r| prepare(ds, r)).collect()
}
