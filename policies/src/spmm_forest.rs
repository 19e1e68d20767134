//! A regression forest for the SpMM record pick: a variant's log fraction
//! of the fastest predicted from the record's vector (log sizes, row-length
//! shape, X-gather locality, log2 N) and the variant's knob tokens, trained
//! on every measured (record, variant) pair of one value type and layout.
//!
//! The same learner as the SpMV pick's ([`crate::forest_pick`]): trees state
//! thresholds directly (a row length against the column chunk, a width
//! against the vector loads, a size against the L2), which the nearest
//! records' vote and the ridge regressions over squares only approximate,
//! and they lend strength across variants through the knob inputs.

use crate::forest::{DEFAULT_FOREST, Forest, Rows};
use crate::forest_pick::{FLOOR, KnobInputs};
use crate::spmm_records::SpmmRecord;

/// A forest over one pool of SpMM records.
#[derive(Debug, Clone)]
pub struct SpmmForest {
    knobs: KnobInputs,
    dims: usize,
    forest: Forest,
}

impl SpmmForest {
    /// Trains on every measured (record, variant) pair of `pool`, variants
    /// indexed into `ids`; `None` when the pool measured nothing.
    pub fn fit(ids: &[String], pool: &[&SpmmRecord]) -> Option<SpmmForest> {
        let dims = pool.first()?.vector.len();
        let knobs = KnobInputs::new(ids);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for r in pool.iter().filter(|r| r.vector.len() == dims) {
            let m: Vec<f32> = r.vector.iter().map(|&v| v as f32).collect();
            for &(v, frac) in &r.measured {
                let Some(k) = knobs.values.get(v as usize) else {
                    continue;
                };
                x.extend_from_slice(&m);
                x.extend_from_slice(k);
                y.push(f64::from(frac).max(FLOOR).ln() as f32);
            }
        }
        if y.is_empty() {
            return None;
        }
        let rows = Rows {
            x: &x,
            y: &y,
            inputs: dims + knobs.names.len(),
        };
        let forest = Forest::fit(&rows, &DEFAULT_FOREST);
        Some(SpmmForest {
            knobs,
            dims,
            forest,
        })
    }

    /// The predicted log fraction of variant `v` (an index into the ids it
    /// was fitted with) on a matrix of `vector`; `None` for an unknown
    /// variant or a vector of another length.
    pub fn predict(&self, vector: &[f64], v: usize) -> Option<f64> {
        let k = self.knobs.values.get(v)?;
        if vector.len() != self.dims {
            return None;
        }
        let row: Vec<f32> = vector
            .iter()
            .map(|&x| x as f32)
            .chain(k.iter().copied())
            .collect();
        Some(self.forest.predict(&row))
    }
}

#[cfg(test)]
mod tests;
