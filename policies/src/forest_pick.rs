//! The records' forest pick for SpMV: a [`Forest`] predicts a variant's log
//! fraction of the best from the matrix's features and the variant's knobs,
//! trained on every measured (record, variant) pair; a matrix gets the
//! runnable variant it predicts best.
//!
//! Inputs per (matrix, variant): the 18 features, each squashed by
//! `sign(x) ln(1 + |x|)` (trees need no scaling; the squash only makes the
//! stored thresholds readable), 1 for f64 values, then the variant's knob
//! tokens: one input per family (1 for its own) and one per knob letter
//! (`b`lock, `l`anes, `i`tems, `u`nroll: log2 of its number, -1 where the
//! variant has none; `ldg`, `cs`: 1 or 0).

use crate::forest::{Forest, ForestConfig, Rows};
use crate::net::policy_space;
use crate::prepared::Prepared;
use serde::{Deserialize, Serialize};
use sparserl_rt::{ValueType, Variant};
use std::collections::BTreeMap;

/// Measured fractions below this (incorrect results, strategies a matrix
/// cannot run) are trained as this: a miss is a miss, how bad matters less.
pub const FLOOR: f64 = 0.02;

/// The knob-token inputs of every variant of a space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnobInputs {
    /// Input names, after the matrix inputs.
    pub names: Vec<String>,
    /// Per variant id, its inputs.
    pub ids: Vec<String>,
    /// Per variant, `names.len()` values.
    pub values: Vec<Vec<f32>>,
}

/// One knob token: its input name, value and whether it is a number (an
/// absent number reads -1, an absent family or flag 0).
struct Token {
    name: String,
    value: f32,
    number: bool,
}

/// The knob tokens of a variant id: `fam:<family>` (1), then per further
/// dot-separated part its letters with log2 of its number, or the part as
/// a flag (1).
fn tokens(id: &str) -> Vec<Token> {
    let mut parts = id.split('.');
    let family = parts.next().unwrap_or_default();
    let flag = |name: String| Token {
        name,
        value: 1.0,
        number: false,
    };
    std::iter::once(flag(format!("fam:{family}")))
        .chain(parts.map(|p| {
            let digits = p.find(|c: char| c.is_ascii_digit()).unwrap_or(p.len());
            match p[digits..].parse::<u32>() {
                Ok(n) if digits > 0 => Token {
                    name: p[..digits].to_string(),
                    value: (n.max(1) as f32).log2(),
                    number: true,
                },
                _ => flag(p.to_string()),
            }
        }))
        .collect()
}

impl KnobInputs {
    /// The inputs of `ids`.
    pub fn new(ids: &[String]) -> KnobInputs {
        let toks: Vec<Vec<Token>> = ids.iter().map(|id| tokens(id)).collect();
        let absent: BTreeMap<&str, f32> = toks
            .iter()
            .flatten()
            .map(|t| (t.name.as_str(), if t.number { -1.0 } else { 0.0 }))
            .collect();
        let names: Vec<String> = absent.keys().map(|k| k.to_string()).collect();
        let values = toks
            .iter()
            .map(|t| {
                let own: BTreeMap<&str, f32> =
                    t.iter().map(|k| (k.name.as_str(), k.value)).collect();
                absent
                    .iter()
                    .map(|(n, a)| own.get(n).copied().unwrap_or(*a))
                    .collect()
            })
            .collect();
        KnobInputs {
            names,
            ids: ids.to_vec(),
            values,
        }
    }
}

/// The matrix inputs of a record: squashed features, then 1 for f64.
pub fn matrix_inputs(features: &[f64], value: ValueType) -> Vec<f32> {
    features
        .iter()
        .map(|&x| (x.signum() * x.abs().ln_1p()) as f32)
        .chain(std::iter::once(f32::from(u8::from(
            value == ValueType::F64,
        ))))
        .collect()
}

/// How many times each record (by its class, in `classes`' order) enters
/// a class-balanced training set: the median class size over the record's
/// class size, rounded, between 1 and `cap`.
pub fn class_repeats(classes: &[&str], cap: usize) -> Vec<usize> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in classes {
        *counts.entry(c).or_default() += 1;
    }
    let mut sizes: Vec<usize> = counts.values().copied().collect();
    sizes.sort_unstable();
    let median = sizes.get(sizes.len() / 2).copied().unwrap_or(1) as f64;
    classes
        .iter()
        .map(|c| ((median / counts[c] as f64).round() as usize).clamp(1, cap.max(1)))
        .collect()
}

/// A trained forest pick over the policy space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForestPick {
    /// What it was trained on (for the SpMV records, the first 16 hex
    /// digits of the records file's sha256).
    pub trained_on: String,
    /// The training configuration.
    pub config: ForestConfig,
    /// Matrix inputs per row ([`matrix_inputs`]' length).
    pub matrix_inputs: usize,
    /// The variants' inputs.
    pub knobs: KnobInputs,
    /// The forest.
    pub forest: Forest,
}

impl ForestPick {
    /// Trains on every measured (record, variant) pair of `train`, named
    /// `trained_on`.
    pub fn fit(train: &[&Prepared], config: &ForestConfig, trained_on: &str) -> ForestPick {
        Self::fit_balanced(train, config, trained_on, 1)
    }

    /// [`Self::fit`] with each record's pairs repeated
    /// ([`class_repeats`], at most `cap` times) so that small structure
    /// classes weigh nearer the median class; `cap` 1 is [`Self::fit`].
    pub fn fit_balanced(
        train: &[&Prepared],
        config: &ForestConfig,
        trained_on: &str,
        cap: usize,
    ) -> ForestPick {
        let ids: Vec<String> = policy_space().iter().map(Variant::id).collect();
        let knobs = KnobInputs::new(&ids);
        let dims = train.first().map_or(0, |r| r.features.len()) + 1;
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let classes: Vec<&str> = train.iter().map(|r| r.class.as_str()).collect();
        for (r, reps) in train.iter().zip(class_repeats(&classes, cap)) {
            let m = matrix_inputs(&r.features, r.value);
            for _ in 0..reps {
                for (j, f) in r.measured.iter().enumerate() {
                    let Some(f) = f else { continue };
                    x.extend_from_slice(&m);
                    x.extend_from_slice(&knobs.values[j]);
                    y.push(f.max(FLOOR).ln() as f32);
                }
            }
        }
        let inputs = dims + knobs.names.len();
        let forest = Forest::fit(
            &Rows {
                x: &x,
                y: &y,
                inputs,
            },
            config,
        );
        ForestPick {
            trained_on: trained_on.to_string(),
            config: *config,
            matrix_inputs: dims,
            knobs,
            forest,
        }
    }

    /// Predicted log fraction of the best of every variant, in
    /// [`Self::knobs`]' order.
    pub fn scores(&self, features: &[f64], value: ValueType) -> Vec<f64> {
        self.cautious_scores(features, value, 0.0)
    }

    /// [`Self::scores`] less `risk` times the trees' spread
    /// ([`Forest::predict_cautious`]).
    pub fn cautious_scores(&self, features: &[f64], value: ValueType, risk: f64) -> Vec<f64> {
        let m = matrix_inputs(features, value);
        let mut row = m.clone();
        self.knobs
            .values
            .iter()
            .map(|k| {
                row.truncate(m.len());
                row.extend_from_slice(k);
                self.forest.predict_cautious(&row, risk)
            })
            .collect()
    }

    /// Predicted log fraction per [`policy_space`] variant (`None` for a
    /// variant the forest was not trained with).
    pub fn space_scores(&self, features: &[f64], value: ValueType) -> Vec<Option<f64>> {
        self.cautious_space_scores(features, value, 0.0)
    }

    /// [`Self::space_scores`] less `risk` times the trees' spread.
    pub fn cautious_space_scores(
        &self,
        features: &[f64],
        value: ValueType,
        risk: f64,
    ) -> Vec<Option<f64>> {
        let scores = self.cautious_scores(features, value, risk);
        let index: BTreeMap<&str, usize> = self
            .knobs
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        policy_space()
            .iter()
            .map(|v| index.get(v.id().as_str()).map(|&i| scores[i]))
            .collect()
    }

    /// The index into [`policy_space`] of the runnable variant predicted
    /// best (`None` if no variant of the space is known to the forest or
    /// none is runnable).
    pub fn best(
        &self,
        features: &[f64],
        value: ValueType,
        runnable: &dyn Fn(&Variant) -> bool,
    ) -> Option<usize> {
        best_of(&self.space_scores(features, value), runnable)
    }

    /// Whether a loaded pick is well formed for `features_len` features.
    pub fn valid(&self, features_len: usize) -> bool {
        self.matrix_inputs == features_len + 1
            && self.forest.valid()
            && self.forest.inputs == self.matrix_inputs + self.knobs.names.len()
            && self.knobs.values.len() == self.knobs.ids.len()
            && self
                .knobs
                .values
                .iter()
                .all(|v| v.len() == self.knobs.names.len())
    }
}

/// Share of the forest's predicted log fraction in [`blend`]; the rest is
/// the knob pick's score.
pub const FOREST_SHARE: f64 = 0.5;

/// Per variant, [`FOREST_SHARE`] of the forest's score plus the rest of the
/// knob pick's ([`crate::knob_pick::KnobPick::scores`], also a log
/// fraction); either alone where the other has none. Two learners of
/// different kinds (trees over every record, a vote of the nearest records
/// with a knob regression) miss on different matrices, so their mean misses
/// less often than either.
pub fn blend(forest: &[Option<f64>], knob: &[Option<f64>]) -> Vec<Option<f64>> {
    combine(forest, knob, |f, k| {
        FOREST_SHARE * f + (1.0 - FOREST_SHARE) * k
    })
}

/// Per variant, `f` of two score lists' scores; either alone where the
/// other has none.
pub fn combine(
    a: &[Option<f64>],
    b: &[Option<f64>],
    f: impl Fn(f64, f64) -> f64,
) -> Vec<Option<f64>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(f(*x, *y)),
            (x, y) => x.or(*y),
        })
        .collect()
}

/// The index of the `runnable` [`policy_space`] variant with the highest
/// score (the first on ties), if any is scored.
pub fn best_of(scores: &[Option<f64>], runnable: &dyn Fn(&Variant) -> bool) -> Option<usize> {
    policy_space()
        .iter()
        .enumerate()
        .filter(|(_, v)| runnable(v))
        .filter_map(|(j, _)| scores.get(j).copied().flatten().map(|s| (j, s)))
        .fold(None::<(usize, f64)>, |b, (j, s)| match b {
            Some((_, bs)) if bs >= s => b,
            _ => Some((j, s)),
        })
        .map(|(j, _)| j)
}

#[cfg(test)]
mod tests;
