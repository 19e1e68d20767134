//! A ridge regression of a variant's log fraction of the fastest over its
//! knobs, shared by every variant: the inputs are the products of the
//! matrix's standardised features (with their squares and a constant) and
//! the variant's knob tokens (its family, and each of its knobs within the
//! family: `row-warp`, `row-warp:g4`, `row-warp:v2`, ...).
//!
//! Where the per-variant regression of [`crate::spmm_model`] learns one
//! variant from the records that measured it, this one lends strength
//! across variants: what a block size, an unroll or a vector width does on
//! a kind of matrix is learned from every variant that has that knob, so a
//! variant few neighbours measured is still judged by its knobs.

use crate::linalg::cholesky_solve;
use std::collections::BTreeMap;

/// Ridge penalty on every coefficient.
pub const KNOB_PENALTY: f64 = 1.0;

/// The knob tokens of a variant id: the family, then `family:knob` for
/// each further dot-separated part.
pub fn tokens(id: &str) -> Vec<String> {
    let mut parts = id.split('.');
    let family = parts.next().unwrap_or_default();
    std::iter::once(family.to_string())
        .chain(parts.map(|p| format!("{family}:{p}")))
        .collect()
}

/// Standardised features are clamped to this many deviations before
/// [`expand`]: a matrix far outside the records (a graph ten times larger
/// than any) must not be judged by squares extrapolated that far.
pub const CLAMP: f64 = 3.0;

/// `[1, z, z²]` of standardised features `z`, each clamped to
/// `[-CLAMP, CLAMP]`; with `pivot`, also the products of the other
/// features with `z[pivot]` (for SpMM the width: what suits a row length
/// depends on how many columns of X each nonzero brings).
pub fn expand(z: &[f64], pivot: Option<usize>) -> Vec<f64> {
    let z: Vec<f64> = z.iter().map(|x| x.clamp(-CLAMP, CLAMP)).collect();
    let by = pivot.and_then(|p| z.get(p).map(|&zp| (p, zp)));
    let cross = by.into_iter().flat_map(|(p, zp)| {
        z.iter()
            .enumerate()
            .filter(move |(i, _)| *i != p)
            .map(move |(_, x)| x * zp)
    });
    std::iter::once(1.0)
        .chain(z.iter().copied())
        .chain(z.iter().map(|x| x * x))
        .chain(cross)
        .collect()
}

/// The fitted regression.
#[derive(Debug, Clone)]
pub struct KnobModel {
    /// Token name to its column.
    tokens: BTreeMap<String, usize>,
    /// Per variant index, its token columns (empty for unknown ids).
    variant_tokens: Vec<Vec<usize>>,
    /// Expanded inputs per row (`1 + 2 * features`).
    inputs: usize,
    /// Coefficients, input-major: `coef[p * tokens + t]`.
    coef: Vec<f64>,
}

impl KnobModel {
    /// Fits on `samples`: per record its expanded inputs ([`expand`]) and
    /// its measured (variant index, fraction) pairs; `variants` names the
    /// indices. `None` when there is nothing to fit or the system is
    /// singular.
    pub fn fit<'s>(
        variants: &[String],
        samples: impl Iterator<Item = (Vec<f64>, &'s [(u32, f32)])>,
    ) -> Option<KnobModel> {
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for id in variants {
            for t in tokens(id) {
                let next = names.len();
                names.entry(t).or_insert(next);
            }
        }
        let variant_tokens: Vec<Vec<usize>> = variants
            .iter()
            .map(|id| tokens(id).iter().map(|t| names[t]).collect())
            .collect();
        // Per variant: the Gram matrix of its records' inputs and their
        // products with the log fractions; the whole system is the sum of
        // their Kronecker products with the variant's token indicators.
        let mut gram: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let mut rhs: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let mut inputs = 0;
        for (x, measured) in samples {
            inputs = x.len();
            for &(v, frac) in measured {
                let (g, b) = (&mut gram[v as usize], &mut rhs[v as usize]);
                if g.is_empty() {
                    *g = vec![0.0; inputs * inputs];
                    *b = vec![0.0; inputs];
                }
                let y = f64::from(frac).max(1e-6).ln();
                for (p, xp) in x.iter().enumerate() {
                    b[p] += xp * y;
                    for (q, xq) in x.iter().enumerate() {
                        g[p * inputs + q] += xp * xq;
                    }
                }
            }
        }
        let k = names.len();
        let dim = inputs * k;
        if dim == 0 {
            return None;
        }
        let mut a = vec![0.0; dim * dim];
        let mut y = vec![0.0; dim];
        for ((g, b), toks) in gram.iter().zip(&rhs).zip(&variant_tokens) {
            if g.is_empty() {
                continue;
            }
            for p in 0..inputs {
                for &s in toks {
                    y[p * k + s] += b[p];
                    for q in 0..inputs {
                        for &t in toks {
                            a[(p * k + s) * dim + q * k + t] += g[p * inputs + q];
                        }
                    }
                }
            }
        }
        for i in 0..dim {
            a[i * dim + i] += KNOB_PENALTY;
        }
        Some(KnobModel {
            tokens: names,
            variant_tokens,
            inputs,
            coef: cholesky_solve(a, y)?,
        })
    }

    /// The predicted log fraction of variant index `v` at expanded inputs
    /// `x`.
    pub fn predict(&self, x: &[f64], v: usize) -> f64 {
        let k = self.tokens.len();
        let toks = self.variant_tokens.get(v).map_or(&[][..], |t| &t[..]);
        x.iter()
            .take(self.inputs)
            .enumerate()
            .map(|(p, xp)| xp * toks.iter().map(|&t| self.coef[p * k + t]).sum::<f64>())
            .sum()
    }
}

#[cfg(test)]
mod tests;
