//! An SpMV pick from the measured records alone, in the way of the SpMM
//! record pick ([`crate::spmm_model`]): a variant's score is three quarters
//! the log of its rank-weighted mean fraction of the oracle over the 16
//! nearest training records (of those that measured it; 3 of the 8 nearest
//! must have) and one quarter the prediction of a regression shared by all
//! variants over their knob tokens ([`crate::spmm_knobs`]): strategy, block,
//! lanes, items, unroll, load and store paths. Judged by the
//! leave-one-class-out evaluation as `knob-knn16`.

use crate::knn::NeighbourPick;
use crate::net::policy_space;
use crate::spmm_knobs::{KnobModel, expand};
use sparserl_rt::ValueType;

/// Nearest records averaged.
pub const NEIGHBOURS: usize = 16;
/// Nearest records among which a variant needs [`MIN_VOTES`].
pub const VOTERS: usize = 8;
/// Measurements a variant needs among the [`VOTERS`] nearest.
pub const MIN_VOTES: usize = 3;
/// Share of the knob regression in the score.
pub const KNOB_SHARE: f64 = 0.25;
/// Fractions below this (incorrect or unusable kernels) are fitted as this:
/// a log of nearly 0 would let them decide the regression alone.
pub const FLOOR: f64 = 0.05;

/// A training record's expanded inputs and its measured (variant, fraction).
type Sample = (Vec<f64>, Vec<(u32, f32)>);

/// The knob regressions (one per value type) over a neighbour pick's
/// training records.
#[derive(Debug)]
pub struct KnobPick<'k, 'a> {
    knn: &'k NeighbourPick<'a>,
    pivot: Option<usize>,
    models: Vec<(ValueType, Option<KnobModel>)>,
}

impl<'k, 'a> KnobPick<'k, 'a> {
    /// Fits one knob regression per value type on `knn`'s training records;
    /// with `pivot`, the inputs also hold the features' products with that
    /// feature ([`expand`]).
    pub fn new(knn: &'k NeighbourPick<'a>, pivot: Option<usize>) -> Self {
        let ids: Vec<String> = policy_space().iter().map(|v| v.id()).collect();
        let models = [ValueType::F32, ValueType::F64]
            .into_iter()
            .map(|value| {
                let rows: Vec<Sample> = knn
                    .records()
                    .filter(|(r, _)| r.value == value)
                    .map(|(r, z)| {
                        let measured = r
                            .measured
                            .iter()
                            .enumerate()
                            .filter_map(|(j, m)| Some((j as u32, (*m)?.max(FLOOR) as f32)))
                            .collect();
                        (expand(z, pivot), measured)
                    })
                    .collect();
                let samples = rows.iter().map(|(x, m)| (x.clone(), &m[..]));
                (value, KnobModel::fit(&ids, samples))
            })
            .collect();
        KnobPick { knn, pivot, models }
    }

    /// Per policy-space variant (index as [`policy_space`]), its score, or
    /// `None` where too few neighbours measured it or no regression fits.
    pub fn scores(&self, features: &[f64], value: ValueType) -> Vec<Option<f64>> {
        let width = policy_space().len();
        let Some(model) = self
            .models
            .iter()
            .find(|m| m.0 == value)
            .and_then(|m| m.1.as_ref())
        else {
            return vec![None; width];
        };
        let mut acc = vec![(0.0, 0.0, 0usize); width];
        let near = self.knn.distances(features, value);
        for (rank, (_, r)) in near.iter().take(NEIGHBOURS).enumerate() {
            let w = 1.0 / (1.0 + rank as f64);
            for (e, m) in acc.iter_mut().zip(&r.measured) {
                if let Some(m) = m {
                    e.0 += w * m.max(0.0);
                    e.1 += w;
                    e.2 += usize::from(rank < VOTERS);
                }
            }
        }
        let x = expand(&self.knn.query(features), self.pivot);
        acc.iter()
            .enumerate()
            .map(|(j, &(sum, weight, votes))| {
                (votes >= MIN_VOTES && weight > 0.0).then(|| {
                    let mean = (sum / weight).max(1e-6).ln();
                    (1.0 - KNOB_SHARE) * mean + KNOB_SHARE * model.predict(&x, j)
                })
            })
            .collect()
    }

    /// The index (as [`policy_space`]) of the `runnable` variant with the
    /// best [`Self::scores`] (the first on ties), if any is scored.
    pub fn best(
        &self,
        features: &[f64],
        value: ValueType,
        runnable: &dyn Fn(&sparserl_rt::Variant) -> bool,
    ) -> Option<usize> {
        crate::forest_pick::best_of(&self.scores(features, value), runnable)
    }
}

#[cfg(test)]
mod tests;
