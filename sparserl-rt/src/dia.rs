//! The diagonal (DIA) layout read by [`Strategy::Diagonal`](crate::Strategy::Diagonal).
//!
//! A matrix whose nonzeros lie on a few diagonals (stencils, narrow bands) is
//! stored as `D` diagonal offsets `col - row` (ascending) and a dense
//! diagonal-major value array: entry `(d, r)` (row `r` on diagonal `d`) at
//! index `d * rows + r`, zero where the diagonal has no entry in that row.
//! The kernel then reads no column indices and no row pointers, and its value
//! loads are coalesced across consecutive rows.
//!
//! A matrix qualifies when it has at most [`MAX_DIAGONALS`] distinct
//! diagonals and the dense array holds at most [`MAX_STORED_PER_NNZ`] entries
//! per nonzero (at most 50% padding); otherwise the layout is not built and
//! diagonal variants do not apply (the search records them as failed, runtime
//! dispatch uses the fallback).
//!
//! ```
//! use sparserl_rt::{Csr, dia};
//! // A tridiagonal 4 x 4 matrix: diagonals -1, 0, +1.
//! let a = Csr::from_triplets(4, 4, &[
//!     (0, 0, 2.0), (0, 1, -1.0),
//!     (1, 0, -1.0), (1, 1, 2.0), (1, 2, -1.0),
//!     (2, 1, -1.0), (2, 2, 2.0), (2, 3, -1.0),
//!     (3, 2, -1.0), (3, 3, 2.0),
//! ]).unwrap();
//! let offsets = dia::diagonal_offsets(&a).unwrap();
//! assert_eq!(offsets, vec![-1, 0, 1]);
//! let values = dia::diagonal_values(&a, &offsets, a.values());
//! // Diagonal -1 has no entry in row 0, diagonal +1 none in row 3.
//! assert_eq!(&values[0..4], &[0.0, -1.0, -1.0, -1.0]);
//! assert_eq!(&values[8..12], &[-1.0, -1.0, -1.0, 0.0]);
//! ```

use crate::csr::Csr;

/// Most diagonals the layout (and the kernel's shared offset table) holds.
pub const MAX_DIAGONALS: usize = 64;

/// Most stored entries (diagonals x rows) per nonzero: 1.5 = at most 50% padding.
pub const MAX_STORED_PER_NNZ: f64 = 1.5;

/// The ascending distinct diagonal offsets (`col - row`) of `csr` when the
/// matrix qualifies for the diagonal layout (at most [`MAX_DIAGONALS`]
/// diagonals, at most [`MAX_STORED_PER_NNZ`] stored entries per nonzero);
/// `None` otherwise or for a matrix without nonzeros. O(nnz log D), stops
/// early once there are too many diagonals.
pub fn diagonal_offsets(csr: &Csr) -> Option<Vec<i32>> {
    if csr.nnz() == 0 {
        return None;
    }
    let indptr = csr.indptr();
    let indices = csr.indices();
    let mut offsets: Vec<i64> = Vec::new();
    for r in 0..csr.rows() {
        for &c in &indices[indptr[r] as usize..indptr[r + 1] as usize] {
            let d = c as i64 - r as i64;
            if let Err(pos) = offsets.binary_search(&d) {
                if offsets.len() == MAX_DIAGONALS {
                    return None;
                }
                offsets.insert(pos, d);
            }
        }
    }
    let stored = offsets.len() as f64 * csr.rows() as f64;
    if stored > MAX_STORED_PER_NNZ * csr.nnz() as f64 {
        return None;
    }
    // |col - row| < 2^31: both are validated 32-bit indices below i32::MAX.
    offsets.into_iter().map(|d| i32::try_from(d).ok()).collect()
}

/// The diagonal-major value array of `csr` for `offsets` (from
/// [`diagonal_offsets`]): `offsets.len() * rows` entries, entry `(d, r)` at
/// `d * rows + r`, `T::default()` (zero) as padding. `values` are the matrix's
/// values in storage order (`csr.values()` or their conversion to `T`).
/// Nonzeros on a diagonal missing from `offsets` are skipped, so pass the
/// offsets of this matrix.
pub fn diagonal_values<T: Copy + Default>(csr: &Csr, offsets: &[i32], values: &[T]) -> Vec<T> {
    let rows = csr.rows();
    let mut out = vec![T::default(); offsets.len() * rows];
    let indptr = csr.indptr();
    let indices = csr.indices();
    for r in 0..rows {
        let (start, end) = (indptr[r] as usize, indptr[r + 1] as usize);
        for (k, &c) in indices[start..end].iter().enumerate() {
            let d = c as i64 - r as i64;
            if let Ok(i) = offsets.binary_search_by(|o| (*o as i64).cmp(&d))
                && let Some(v) = values.get(start + k)
            {
                out[i * rows + r] = *v;
            }
        }
    }
    out
}

/// Stored entries of the diagonal layout per nonzero (1.0 = no padding).
pub fn stored_per_nnz(csr: &Csr, offsets: &[i32]) -> f64 {
    if csr.nnz() == 0 {
        return f64::INFINITY;
    }
    offsets.len() as f64 * csr.rows() as f64 / csr.nnz() as f64
}

#[cfg(all(test, feature = "tools"))]
mod tests {
    use super::*;
    use crate::synth;

    #[test]
    fn stencils_qualify_with_their_diagonals() {
        let a = synth::stencil(&[20, 30], 5).unwrap();
        let offs = diagonal_offsets(&a).unwrap();
        assert_eq!(offs.len(), 5);
        assert!(offs.contains(&-1) && offs.contains(&0) && offs.contains(&1));
        assert!(offs.windows(2).all(|w| w[0] < w[1]));
        assert!(stored_per_nnz(&a, &offs) < 1.1);
        let a = synth::stencil(&[6, 7, 8], 27).unwrap();
        assert_eq!(diagonal_offsets(&a).unwrap().len(), 27);
    }

    #[test]
    fn random_and_sparse_bands_do_not_qualify() {
        let a = synth::uniform(2000, 2000, 8.0, 1).unwrap();
        assert_eq!(diagonal_offsets(&a), None);
        // 201 diagonals, 8% filled.
        let a = synth::banded(5000, 100, 16.0, 2).unwrap();
        assert_eq!(diagonal_offsets(&a), None);
        // Two diagonals far apart in a 10-row matrix: 20 stored for 11 nonzeros.
        let mut t: Vec<(u32, u32, f64)> = (0..10).map(|i| (i, i, 1.0)).collect();
        t.push((9, 0, 1.0));
        let a = Csr::from_triplets(10, 10, &t).unwrap();
        assert_eq!(diagonal_offsets(&a), None);
    }

    #[test]
    fn values_reproduce_the_matrix() {
        let a = synth::stencil(&[9, 11], 9).unwrap();
        let offs = diagonal_offsets(&a).unwrap();
        let vals = diagonal_values(&a, &offs, a.values());
        // y = A x through the layout equals the CSR product.
        let x: Vec<f64> = (0..a.cols()).map(|i| (i as f64 * 0.37).sin()).collect();
        let want = a.spmv_f64(&x).unwrap();
        for (r, w) in want.iter().enumerate() {
            let mut s = 0.0;
            for (d, &o) in offs.iter().enumerate() {
                let c = r as i64 + o as i64;
                if c >= 0 && (c as usize) < a.cols() {
                    s += vals[d * a.rows() + r] * x[c as usize];
                } else {
                    assert_eq!(vals[d * a.rows() + r], 0.0, "padding must be zero");
                }
            }
            assert!((s - w).abs() <= 1e-12 * w.abs().max(1.0));
        }
    }

    #[test]
    fn rectangular_and_empty_matrices() {
        let a = Csr::from_triplets(3, 5, &[(0, 4, 1.0), (1, 0, 2.0), (2, 1, 3.0)]).unwrap();
        // Diagonals -1 and +4: 6 stored for 3 nonzeros is too much padding.
        assert_eq!(diagonal_offsets(&a), None);
        let e = Csr::from_triplets(3, 3, &[]).unwrap();
        assert_eq!(diagonal_offsets(&e), None);
    }
}
