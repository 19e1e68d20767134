//! The SELL-C-sigma layout read by [`Strategy::Sell`](crate::Strategy::Sell).
//!
//! Sliced ELLPACK with local sorting (Kreutzer et al.): within each window
//! of [`SIGMA`] consecutive rows the rows are ordered by decreasing length;
//! consecutive runs of [`C`] ordered rows form a slice, padded to its
//! longest row and stored column-major, so the `C` threads of a warp (one
//! per row, one slot each) load consecutive elements at every step: fully
//! coalesced loads of values and column indices, no per-row pointer chase,
//! and warps whose rows have nearly equal lengths. Sorting only within a
//! window keeps the rows of a slice close together, so the `y` stores and
//! most `x` gathers stay local.
//!
//! Each slot also records its row's length, so a kernel never reads the
//! padding (a zero value times an infinite `x` would otherwise make NaN);
//! the padding costs memory, not reads. A matrix qualifies when the
//! padding is at most [`MAX_STORED_PER_NNZ`] - 1 of its nonzeros (short or
//! uniform rows; power-law rows pad too much).
//!
//! ```
//! use sparserl_rt::{Csr, sell};
//! // 2048 rows: odd rows have 2 nonzeros, even rows 1.
//! let t: Vec<(u32, u32, f64)> = (0..2048u32)
//!     .flat_map(|r| (0..1 + r % 2).map(move |k| (r, (r + k) % 2048, 1.0)))
//!     .collect();
//! let a = Csr::from_triplets(2048, 2048, &t).unwrap();
//! let l = sell::SellLayout::build(&a).unwrap();
//! // Sorted within each window of 1024 rows: the long (odd) rows first.
//! assert_eq!(&l.row_of[..3], &[1, 3, 5]);
//! assert_eq!(l.stored_per_nnz(&a), 1.0); // no padding at all
//! // A handful of rows cannot fill a slice of 32: refused.
//! assert!(sell::SellLayout::build(&Csr::from_triplets(4, 4, &[(0, 0, 1.0)]).unwrap()).is_none());
//! ```

use crate::csr::Csr;
use crate::error::RtError;

/// Slice height: rows per slice (one warp, a thread per row).
pub const C: usize = 32;

/// Sorting window: rows are ordered by length within windows this long.
pub const SIGMA: usize = 1024;

/// Largest stored elements per nonzero for which the layout is built.
pub const MAX_STORED_PER_NNZ: f64 = 1.5;

/// The host form of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SellLayout {
    /// Per slice and one past the end: first stored element.
    pub slice_ptr: Vec<i32>,
    /// Row of each slot (`slices * C`), `-1` for the slots past the last row.
    pub row_of: Vec<i32>,
    /// Nonzeros of each slot's row (0 for empty slots).
    pub slot_len: Vec<i32>,
    /// Column of each stored element (padding: the slot's row's last column,
    /// or 0; never read).
    pub cols: Vec<i32>,
    /// For each stored element the index of its nonzero in the CSR arrays,
    /// or `u32::MAX` for padding.
    pub src: Vec<u32>,
}

impl SellLayout {
    /// Builds the layout, or `None` when the padding would exceed
    /// [`MAX_STORED_PER_NNZ`] or the stored elements would not fit the
    /// kernels' 32-bit offsets.
    pub fn build(a: &Csr) -> Option<SellLayout> {
        Self::build_with_limit(a, MAX_STORED_PER_NNZ)
    }

    /// [`SellLayout::build`] with another padding limit (stored elements
    /// per nonzero; `f64::INFINITY` builds every matrix whose stored
    /// elements fit the 32-bit offsets).
    pub fn build_with_limit(a: &Csr, max_stored_per_nnz: f64) -> Option<SellLayout> {
        let rows = a.rows();
        let len = |r: usize| a.row_len(r);
        let mut order: Vec<u32> = (0..rows as u32).collect();
        for w in order.chunks_mut(SIGMA) {
            // Stable: equal lengths keep their order.
            w.sort_by_key(|&r| std::cmp::Reverse(len(r as usize)));
        }
        let slices = rows.div_ceil(C);
        // The kernels index `meta` (2 x slots entries) and the slots with
        // 32-bit integers: a layout of more slots is not built.
        if slices.saturating_mul(2 * C) > i32::MAX as usize {
            return None;
        }
        let mut slice_ptr = Vec::with_capacity(slices + 1);
        slice_ptr.push(0i64);
        for s in 0..slices {
            let width = order[s * C..((s + 1) * C).min(rows)]
                .iter()
                .map(|&r| len(r as usize))
                .max()
                .unwrap_or(0);
            slice_ptr.push(slice_ptr[s] + (width * C) as i64);
        }
        let stored = *slice_ptr.last().unwrap_or(&0);
        if stored > i32::MAX as i64
            || (stored as f64) > max_stored_per_nnz * (a.nnz().max(1) as f64)
        {
            return None;
        }
        let stored = stored as usize;
        let mut row_of = vec![-1i32; slices * C];
        let mut slot_len = vec![0i32; slices * C];
        let mut cols = vec![0i32; stored];
        let mut src = vec![u32::MAX; stored];
        for (slot, &r) in order.iter().enumerate() {
            let (s, lane) = (slot / C, slot % C);
            let (start, end) = (
                a.indptr()[r as usize] as usize,
                a.indptr()[r as usize + 1] as usize,
            );
            row_of[slot] = r as i32;
            slot_len[slot] = (end - start) as i32;
            let base = slice_ptr[s] as usize;
            let width = (slice_ptr[s + 1] - slice_ptr[s]) as usize / C;
            let last = if end > start {
                a.indices()[end - 1] as i32
            } else {
                0
            };
            for j in 0..width {
                let at = base + j * C + lane;
                if start + j < end {
                    cols[at] = a.indices()[start + j] as i32;
                    src[at] = (start + j) as u32;
                } else {
                    cols[at] = last;
                }
            }
        }
        Some(SellLayout {
            slice_ptr: slice_ptr.iter().map(|&p| p as i32).collect(),
            row_of,
            slot_len,
            cols,
            src,
        })
    }

    /// Number of row slots.
    pub fn slots(&self) -> usize {
        self.row_of.len()
    }

    /// `[row_of, slot_len]`, the kernels' `meta`.
    pub fn meta(&self) -> Vec<i32> {
        let mut m = self.row_of.clone();
        m.extend_from_slice(&self.slot_len);
        m
    }

    /// The stored values for `values` (the CSR values in `T`), `zero` in
    /// the padding; [`RtError::DimensionMismatch`] when `values` is shorter
    /// than the nonzeros the layout refers to.
    pub fn values<T: Copy>(&self, values: &[T], zero: T) -> Result<Vec<T>, RtError> {
        self.src
            .iter()
            .map(|&i| match i {
                u32::MAX => Ok(zero),
                i => values
                    .get(i as usize)
                    .copied()
                    .ok_or_else(|| RtError::DimensionMismatch {
                        what: "values (the layout refers to more nonzeros)",
                        expected: i as usize + 1,
                        found: values.len(),
                    }),
            })
            .collect()
    }

    /// Stored elements per nonzero of `a`.
    pub fn stored_per_nnz(&self, a: &Csr) -> f64 {
        self.cols.len() as f64 / a.nnz().max(1) as f64
    }

    /// `y = A x` from the layout alone, in float64 (the reference the tests
    /// compare with [`Csr::spmv_f64`]). An error, never a panic, when the
    /// layout (its fields are public) does not fit `values`, `x` or `rows`.
    pub fn spmv_f64(&self, values: &[f64], x: &[f64], rows: usize) -> Result<Vec<f64>, RtError> {
        let vals = self.values(values, 0.0)?;
        let bad = |what: &str| {
            RtError::InvalidArgument(format!("the SELL-C-sigma layout is inconsistent: {what}"))
        };
        if self.slot_len.len() != self.row_of.len() || self.cols.len() != vals.len() {
            return Err(bad("row_of, slot_len, cols and src lengths disagree"));
        }
        let mut y = vec![0.0; rows];
        for (slot, &r) in self.row_of.iter().enumerate() {
            if r < 0 {
                continue;
            }
            let (s, lane) = (slot / C, slot % C);
            let base = *self
                .slice_ptr
                .get(s)
                .ok_or_else(|| bad("slice_ptr too short"))?;
            let mut sum = 0.0;
            for j in 0..self.slot_len[slot].max(0) as usize {
                let at = (base.max(0) as usize)
                    .checked_add(j * C + lane)
                    .ok_or_else(|| bad("offset overflow"))?;
                let (v, c) = match (vals.get(at), self.cols.get(at)) {
                    (Some(v), Some(&c)) => (v, c),
                    _ => return Err(bad("a slot runs past the stored elements")),
                };
                let xc = x.get(c.max(0) as usize).filter(|_| c >= 0);
                sum += v * xc.ok_or_else(|| bad("a column is outside x"))?;
            }
            *y.get_mut(r as usize)
                .ok_or_else(|| bad("a row is outside y"))? = sum;
        }
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rows: usize, seed: u64) -> Csr {
        // Row r has 1 + (r * 7 + seed) % 9 nonzeros at pseudo-random columns.
        let mut t = Vec::new();
        for r in 0..rows {
            let n = 1 + (r * 7 + seed as usize) % 9;
            for k in 0..n {
                t.push((
                    r as u32,
                    ((r * 31 + k * 17) % rows) as u32,
                    (r + k) as f64 * 0.25 - 1.0,
                ));
            }
        }
        Csr::from_triplets(rows, rows, &t).unwrap()
    }

    #[test]
    fn layout_reproduces_the_product() {
        for (rows, seed) in [(1500, 3), (2048, 1), (3000, 4), (4096, 5)] {
            let a = sample(rows, seed);
            let l = SellLayout::build(&a).unwrap();
            let x: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.1).cos()).collect();
            let want = a.spmv_f64(&x).unwrap();
            let got = l.spmv_f64(a.values(), &x, rows).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                    "{rows}: {g} vs {w}"
                );
            }
            // Every row appears in exactly one slot.
            let mut seen = vec![false; rows];
            for &r in l.row_of.iter().filter(|&&r| r >= 0) {
                assert!(!std::mem::replace(&mut seen[r as usize], true));
            }
            assert!(seen.iter().all(|&s| s));
            assert_eq!(l.slots() % C, 0);
            assert!(l.stored_per_nnz(&a) <= MAX_STORED_PER_NNZ);
        }
    }

    #[test]
    fn sorting_stays_inside_a_window() {
        let a = sample(3 * SIGMA + 5, 7);
        let l = SellLayout::build(&a).unwrap();
        for (slot, &r) in l.row_of.iter().enumerate().filter(|(_, r)| **r >= 0) {
            assert_eq!(slot / SIGMA, r as usize / SIGMA, "slot {slot} row {r}");
        }
    }

    #[test]
    fn padding_beyond_the_limit_is_refused() {
        // A lone row fills one slot of 32: 32 stored elements per nonzero.
        assert!(SellLayout::build(&sample(1, 0)).is_none());
        // One row of 1000 nonzeros among rows of one: a slice pads to 1000.
        let mut t: Vec<(u32, u32, f64)> = (0..64).map(|r| (r, r, 1.0)).collect();
        t.extend((0..1000).map(|c| (5u32, c as u32, 1.0)));
        let a = Csr::from_triplets(64, 1000, &t).unwrap();
        assert!(SellLayout::build(&a).is_none());
    }
}
