//! A nearest-neighbour pick, judged beside the learned policy by the
//! leave-one-class-out evaluation: a matrix gets the variant with the best
//! measured fraction of the oracle over the `k` training records nearest to
//! it in feature space (same value type). It learns nothing but the
//! measurements themselves, so it shows how far the records alone carry to
//! a class none of them belongs to.
//!
//! Distance: Euclidean over the [`sparserl_rt::Features`] vector, each
//! feature squashed by `sign(x) ln(1 + |x|)` (counts and ratios on one
//! scale) and standardised with the training records' mean and spread.

use crate::prepared::Prepared;
use sparserl_rt::ValueType;

/// How the neighbours' measured fractions of one variant are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Combine {
    /// Their mean.
    Mean,
    /// The mean minus half their standard deviation: a variant that is the
    /// best on some neighbours and poor on others scores lower than one that
    /// is good on all (the loss of a miss weighs more).
    Cautious,
}

/// The training records, scaled, and the scaling.
#[derive(Debug)]
pub struct NeighbourPick<'a> {
    train: Vec<(&'a Prepared, Vec<f64>)>,
    mean: Vec<f64>,
    spread: Vec<f64>,
    k: usize,
}

fn squash(x: f64) -> f64 {
    x.signum() * x.abs().ln_1p()
}

impl<'a> NeighbourPick<'a> {
    /// Scaling fitted on `train`; `k` neighbours per query (at least 1).
    pub fn new(train: &[&'a Prepared], k: usize) -> Self {
        let dims = train.first().map_or(0, |r| r.features.len());
        let n = train.len().max(1) as f64;
        let squashed: Vec<Vec<f64>> = train
            .iter()
            .map(|r| r.features.iter().map(|&x| squash(x)).collect())
            .collect();
        let mean: Vec<f64> = (0..dims)
            .map(|d| squashed.iter().map(|f| f[d]).sum::<f64>() / n)
            .collect();
        let spread: Vec<f64> = (0..dims)
            .map(|d| {
                let var = squashed
                    .iter()
                    .map(|f| (f[d] - mean[d]).powi(2))
                    .sum::<f64>()
                    / n;
                if var > 1e-12 { var.sqrt() } else { 1.0 }
            })
            .collect();
        let mut pick = NeighbourPick {
            train: Vec::with_capacity(train.len()),
            mean,
            spread,
            k: k.max(1),
        };
        pick.train = train
            .iter()
            .zip(&squashed)
            .map(|(r, s)| (*r, pick.standardise(s)))
            .collect();
        pick
    }

    fn standardise(&self, squashed: &[f64]) -> Vec<f64> {
        squashed
            .iter()
            .enumerate()
            .map(|(d, x)| (x - self.mean[d]) / self.spread[d])
            .collect()
    }

    /// The mean standardised distance of the `k` nearest training records
    /// of `value` to `features` (infinity without any).
    pub fn mean_distance(&self, features: &[f64], value: ValueType) -> f64 {
        let d = self.distances(features, value);
        if d.is_empty() {
            return f64::INFINITY;
        }
        let k = d.len().min(self.k);
        d[..k].iter().map(|(x, _)| x.sqrt()).sum::<f64>() / k as f64
    }

    /// `features` squashed and standardised as the distance sees them.
    pub fn query(&self, features: &[f64]) -> Vec<f64> {
        let squashed: Vec<f64> = features.iter().map(|&x| squash(x)).collect();
        self.standardise(&squashed)
    }

    /// The training records with their squashed, standardised features.
    pub fn records(&self) -> impl Iterator<Item = (&'a Prepared, &[f64])> {
        self.train.iter().map(|(r, f)| (*r, &f[..]))
    }

    /// Squared distances to every training record of `value`, nearest first.
    pub fn distances(&self, features: &[f64], value: ValueType) -> Vec<(f64, &'a Prepared)> {
        let q = self.query(features);
        let mut by_distance: Vec<(f64, &'a Prepared)> = self
            .train
            .iter()
            .filter(|(r, _)| r.value == value)
            .map(|(r, f)| (f.iter().zip(&q).map(|(a, b)| (a - b).powi(2)).sum(), *r))
            .collect();
        by_distance.sort_by(|a, b| a.0.total_cmp(&b.0));
        by_distance
    }

    /// The `k` nearest training records of `value` to `features`.
    fn nearest(&self, features: &[f64], value: ValueType) -> Vec<&'a Prepared> {
        self.distances(features, value)
            .into_iter()
            .take(self.k)
            .map(|(_, r)| r)
            .collect()
    }

    /// A score per policy-space variant (index as
    /// [`crate::net::policy_space`]): the neighbours' measured fractions
    /// of their oracle combined by `how` (unmeasured or incorrect: 0). All
    /// zero without neighbours of that value type.
    pub fn scores(&self, features: &[f64], value: ValueType, how: Combine) -> Vec<f64> {
        let nb = self.nearest(features, value);
        let width = self.train.first().map_or(0, |(r, _)| r.measured.len());
        (0..width)
            .map(|j| {
                let xs: Vec<f64> = nb
                    .iter()
                    .map(|r| r.measured[j].unwrap_or(0.0).max(0.0))
                    .collect();
                if xs.is_empty() {
                    return 0.0;
                }
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                match how {
                    Combine::Mean => m,
                    Combine::Cautious => {
                        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
                        m - 0.5 * var.sqrt()
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, features: Vec<f64>, measured: Vec<Option<f64>>) -> Prepared {
        Prepared {
            name: name.into(),
            class: "c".into(),
            value: ValueType::F32,
            features,
            best: 1.0,
            measured,
            cannot_run: Vec::new(),
        }
    }

    #[test]
    fn the_nearest_records_decide() {
        // Two clusters: small matrices prefer variant 0, large ones variant 1.
        let small = [1.0, 2.0, 3.0].map(|x| rec("s", vec![x, 10.0], vec![Some(1.0), Some(0.4)]));
        let large = [1e6, 2e6, 3e6].map(|x| rec("l", vec![x, 10.0], vec![Some(0.3), Some(1.0)]));
        let train: Vec<&Prepared> = small.iter().chain(&large).collect();
        let knn = NeighbourPick::new(&train, 3);
        let s = knn.scores(&[2.5, 10.0], ValueType::F32, Combine::Mean);
        assert!(s[0] > s[1], "{s:?}");
        let l = knn.scores(&[1.5e6, 10.0], ValueType::F32, Combine::Mean);
        assert!(l[1] > l[0], "{l:?}");
        // No neighbour of the other value type: all zero, infinitely far.
        let none = knn.scores(&[2.5, 10.0], ValueType::F64, Combine::Mean);
        assert!(none.iter().all(|&x| x == 0.0));
        assert_eq!(
            knn.mean_distance(&[2.5, 10.0], ValueType::F64),
            f64::INFINITY
        );
        // A query inside a cluster is nearer its k records than one far outside.
        let k1 = NeighbourPick::new(&train, 1);
        let inside = k1.mean_distance(&[2.0, 10.0], ValueType::F32);
        let outside = k1.mean_distance(&[1e12, 10.0], ValueType::F32);
        assert!(inside < 1e-9 && outside > 1.0, "{inside} {outside}");
    }

    #[test]
    fn caution_prefers_the_variant_good_everywhere() {
        // Variant 0: best on two of three neighbours, poor on the third;
        // variant 1: 0.7 on all three. Mean picks 0, caution picks 1.
        let recs = [
            rec("a", vec![1.0], vec![Some(1.0), Some(0.7)]),
            rec("b", vec![1.1], vec![Some(1.0), Some(0.7)]),
            rec("c", vec![1.2], vec![Some(0.3), Some(0.7)]),
        ];
        let train: Vec<&Prepared> = recs.iter().collect();
        let knn = NeighbourPick::new(&train, 3);
        let m = knn.scores(&[1.1], ValueType::F32, Combine::Mean);
        assert!(m[0] > m[1], "{m:?}");
        let c = knn.scores(&[1.1], ValueType::F32, Combine::Cautious);
        assert!(c[1] > c[0], "{c:?}");
    }
}
