//! The narrow-index layout read by [`Strategy::Narrow`](crate::Strategy::Narrow).
//!
//! When every nonzero lies within [`MAX_OFFSET`] of the diagonal
//! (`|col - row| <= 32767`: banded and many mesh matrices, and every matrix
//! with fewer than 32768 rows and columns), its column can be stored as the
//! 16-bit signed offset `col - row`. A kernel that reads these offsets
//! instead of the 32-bit indices moves 2 index bytes per nonzero instead of
//! 4 (with the CSR values and row pointers): a quarter fewer bytes for f32
//! matrices, a sixth for f64.
//!
//! ```
//! use sparserl_rt::{Csr, narrow, synth};
//! let a = synth::banded(1000, 40, 8.0, 1).unwrap();
//! let off = narrow::offsets(&a).expect("a band of half-width 40 fits 16 bits");
//! assert_eq!(off.len(), a.nnz());
//! // Far from the diagonal: no layout.
//! let far = Csr::from_triplets(40_000, 40_000, &[(0, 39_999, 1.0)]).unwrap();
//! assert!(narrow::offsets(&far).is_none());
//! ```

use crate::csr::Csr;

/// Largest `|col - row|` the layout can hold.
pub const MAX_OFFSET: i64 = i16::MAX as i64;

/// The per-nonzero offsets `col - row` in CSR order, or `None` when the
/// matrix has no nonzero or one lies farther than [`MAX_OFFSET`] from the
/// diagonal. O(nnz).
pub fn offsets(csr: &Csr) -> Option<Vec<i16>> {
    if csr.nnz() == 0 {
        return None;
    }
    let indptr = csr.indptr();
    let indices = csr.indices();
    let mut out = Vec::with_capacity(csr.nnz());
    for r in 0..csr.rows() {
        for &c in &indices[indptr[r] as usize..indptr[r + 1] as usize] {
            let d = c as i64 - r as i64;
            out.push(i16::try_from(d).ok()?);
        }
    }
    Some(out)
}

#[cfg(all(test, feature = "tools"))]
mod tests {
    use super::*;
    use crate::synth;

    #[test]
    fn offsets_rebuild_the_columns() {
        let a = synth::stencil(&[50, 50], 5).unwrap();
        let off = offsets(&a).unwrap();
        let indptr = a.indptr();
        let mut k = 0;
        for r in 0..a.rows() {
            for &c in &a.indices()[indptr[r] as usize..indptr[r + 1] as usize] {
                assert_eq!(r as i64 + off[k] as i64, c as i64);
                k += 1;
            }
        }
        assert_eq!(k, off.len());
    }

    #[test]
    fn the_limit_is_inclusive() {
        let edge = Csr::from_triplets(2, 40_000, &[(0, 32_767, 1.0), (1, 0, 2.0)]).unwrap();
        assert_eq!(offsets(&edge), Some(vec![32_767, -1]));
        let over = Csr::from_triplets(1, 40_000, &[(0, 32_768, 1.0)]).unwrap();
        assert_eq!(offsets(&over), None);
        assert_eq!(offsets(&Csr::from_triplets(3, 3, &[]).unwrap()), None);
    }
}
