//! The row-binned layout read by [`Strategy::Binned`](crate::Strategy::Binned).
//!
//! Rows longer than a threshold fixed at upload ([`long_row_threshold`]) are
//! "long": the layout lists them and cuts them into chunks of [`CHUNK`]
//! nonzeros, so that a kernel can spread one long row over many warps while
//! short rows keep a small group of lanes each. A matrix without long rows
//! does not get the layout (binned kernels would be group-per-row kernels).
//!
//! Device form: one `i32` array `meta = [threshold, n_long, n_chunks, n_multi,
//! long_rows[n_long], chunk_long[n_chunks], chunk_start[n_chunks],
//! multi[n_multi]]` (`chunk_long` indexes `long_rows`, `chunk_start` is the
//! chunk's first nonzero, `multi` lists the indices of the long rows that
//! span more than one chunk), plus a zeroed `f64` scratch of `n_long + 1`
//! slots (accumulators of the multi-chunk rows and a completion counter)
//! that the kernel leaves zeroed. A long row of one chunk is finished by one
//! warp; only multi-chunk rows go through the scratch.
//!
//! ```
//! use sparserl_rt::{Csr, binned};
//! // Row 1 has 3000 nonzeros, the other rows one each.
//! let mut t: Vec<(u32, u32, f64)> = (0..100).map(|r| (r, r, 1.0)).filter(|e| e.0 != 1).collect();
//! t.extend((0..3000).map(|c| (1, c, 0.5)));
//! let a = Csr::from_triplets(100, 3000, &t).unwrap();
//! let layout = binned::BinnedLayout::build(&a).unwrap();
//! assert_eq!(layout.long_rows, vec![1]);
//! assert_eq!(layout.chunks(), 3); // 1024 + 1024 + 952
//! assert_eq!(layout.multi, vec![0]);
//! ```

use crate::csr::Csr;

/// Nonzeros per chunk of a long row (one warp's task).
pub const CHUNK: usize = 1024;

/// Shortest row length that can count as long.
pub const MIN_LONG: usize = 64;

/// The long-row threshold of a matrix: `max(MIN_LONG, 4 * mean row length)`.
/// A row is long when it has more nonzeros than this.
pub fn long_row_threshold(csr: &Csr) -> usize {
    let mean = if csr.rows() == 0 {
        0.0
    } else {
        csr.nnz() as f64 / csr.rows() as f64
    };
    MIN_LONG.max((4.0 * mean).ceil() as usize)
}

/// The host form of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinnedLayout {
    /// Rows longer than this are long.
    pub threshold: usize,
    /// The long rows, ascending.
    pub long_rows: Vec<i32>,
    /// Per chunk: index into `long_rows`.
    pub chunk_long: Vec<i32>,
    /// Per chunk: its first nonzero.
    pub chunk_start: Vec<i32>,
    /// Indices into `long_rows` of the rows with more than one chunk.
    pub multi: Vec<i32>,
}

impl BinnedLayout {
    /// The layout of `csr`, or `None` when it has no long row. O(rows + chunks).
    pub fn build(csr: &Csr) -> Option<BinnedLayout> {
        let threshold = long_row_threshold(csr);
        let indptr = csr.indptr();
        let mut out = BinnedLayout {
            threshold,
            long_rows: Vec::new(),
            chunk_long: Vec::new(),
            chunk_start: Vec::new(),
            multi: Vec::new(),
        };
        for r in 0..csr.rows() {
            let (start, end) = (indptr[r] as usize, indptr[r + 1] as usize);
            if end - start > threshold {
                // Validated CSR: rows and offsets are below i32::MAX.
                let li = out.long_rows.len() as i32;
                out.long_rows.push(r as i32);
                if end - start > CHUNK {
                    out.multi.push(li);
                }
                for s in (start..end).step_by(CHUNK) {
                    out.chunk_long.push(li);
                    out.chunk_start.push(s as i32);
                }
            }
        }
        (!out.long_rows.is_empty()).then_some(out)
    }

    /// Number of chunks.
    pub fn chunks(&self) -> usize {
        self.chunk_start.len()
    }

    /// The device `meta` array (see the module docs).
    pub fn meta(&self) -> Vec<i32> {
        let mut m =
            Vec::with_capacity(4 + self.long_rows.len() + 2 * self.chunks() + self.multi.len());
        m.push(self.threshold.min(i32::MAX as usize) as i32);
        m.push(self.long_rows.len() as i32);
        m.push(self.chunks() as i32);
        m.push(self.multi.len() as i32);
        m.extend(&self.long_rows);
        m.extend(&self.chunk_long);
        m.extend(&self.chunk_start);
        m.extend(&self.multi);
        m
    }
}

#[cfg(all(test, feature = "tools"))]
mod tests {
    use super::*;
    use crate::synth;

    #[test]
    fn regular_matrices_have_no_long_rows() {
        assert_eq!(
            BinnedLayout::build(&synth::uniform(5000, 5000, 12.0, 1).unwrap()),
            None
        );
        assert_eq!(
            BinnedLayout::build(&synth::stencil(&[30, 30], 5).unwrap()),
            None
        );
    }

    #[test]
    fn chunks_cover_every_long_row_exactly() {
        let a = synth::power_law(20_000, 8.0, 1.8, 3).unwrap();
        let l = BinnedLayout::build(&a).expect("a power-law matrix has long rows");
        assert_eq!(l.threshold, long_row_threshold(&a));
        let indptr = a.indptr();
        let mut covered = vec![0usize; l.long_rows.len()];
        for (c, &s) in l.chunk_start.iter().enumerate() {
            let li = l.chunk_long[c] as usize;
            let r = l.long_rows[li] as usize;
            let end = indptr[r + 1] as usize;
            assert!((s as usize) >= indptr[r] as usize && (s as usize) < end);
            covered[li] += CHUNK.min(end - s as usize);
        }
        for (li, &r) in l.long_rows.iter().enumerate() {
            let len = (indptr[r as usize + 1] - indptr[r as usize]) as usize;
            assert!(len > l.threshold);
            assert_eq!(covered[li], len, "row {r}");
        }
        let long = (0..a.rows())
            .filter(|&r| (indptr[r + 1] - indptr[r]) as usize > l.threshold)
            .count();
        assert_eq!(long, l.long_rows.len());
        for (li, &r) in l.long_rows.iter().enumerate() {
            let len = (indptr[r as usize + 1] - indptr[r as usize]) as usize;
            assert_eq!(l.multi.contains(&(li as i32)), len > CHUNK, "row {r}");
        }
        let m = l.meta();
        assert_eq!(
            m.len(),
            4 + l.long_rows.len() + 2 * l.chunks() + l.multi.len()
        );
        assert_eq!(m[1] as usize, l.long_rows.len());
        assert_eq!(m[3] as usize, l.multi.len());
    }
}
