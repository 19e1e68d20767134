//! The row partition read by [`SpmmStrategy::RowPart`](crate::spmm::SpmmStrategy::RowPart)
//! kernels, built at upload from the matrix's row pointers whenever the CSR
//! arrays are kept ([`DeviceCsr::has_row_partition`](crate::DeviceCsr::has_row_partition);
//! an [`SpmvKernel`](crate::SpmvKernel)'s upload leaves it out).
//!
//! Entry `i` is the first row whose first nonzero index is at least
//! `PARTITION_STEP * i` (the number of rows that start before it), for `i`
//! in `0..steps` with `steps = max(ceil(nnz / PARTITION_STEP), 1)`, and the
//! last entry (`i = steps`) is `rows`. A kernel of range `W` (a multiple of
//! the step, `m = W / PARTITION_STEP`) gives range `j` the rows
//! `part[min(j m, steps)] .. part[min((j + 1) m, steps)]`: the rows whose
//! first nonzero lies in `[j W, (j + 1) W)`, empty rows included, the last
//! range also the empty rows past the last nonzero. The ranges cover every
//! row exactly once, whole, for every `W`, so one table serves every
//! row-part variant. Cost: `4 (ceil(nnz / 8) + 1)` bytes, half a byte per
//! nonzero, and one pass over the row pointers on the host.
//!
//! ```
//! use sparserl_rt::Csr;
//! use sparserl_rt::spmm::RowPartition;
//! // Rows of 3, 0, 20 and 1 nonzeros.
//! let mut t = vec![(0, 0, 1.0), (0, 1, 1.0), (0, 2, 1.0), (3, 0, 1.0)];
//! t.extend((0..20).map(|c| (2, c, 1.0)));
//! let a = Csr::from_triplets(4, 20, &t).unwrap();
//! let p = RowPartition::build(&a);
//! // Nonzeros 8 and 16 lie in row 2 (3..23): rows 0-2 start before both.
//! assert_eq!(p.entries(), &[0, 3, 3, 4]);
//! assert_eq!(p.ranges(16), vec![(0, 3), (3, 4)]);
//! ```

use crate::csr::Csr;

/// Nonzeros per step of the partition: every row-part range is a multiple.
pub const PARTITION_STEP: usize = 8;

/// The host form of the partition (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPartition {
    part: Vec<i32>,
}

impl RowPartition {
    /// Builds the partition of `a`'s rows (one pass over its row pointers).
    pub fn build(a: &Csr) -> RowPartition {
        Self::from_indptr(a.indptr(), a.nnz())
    }

    /// Builds it from row pointers (`indptr[rows] = nnz`, non-decreasing,
    /// fewer than 2^31 rows: what [`Csr`] guarantees).
    pub(crate) fn from_indptr(indptr: &[u32], nnz: usize) -> RowPartition {
        let rows = indptr.len().saturating_sub(1);
        let steps = Self::steps(nnz);
        let mut part = Vec::with_capacity(steps + 1);
        part.push(0);
        let mut r = 0usize;
        for i in 1..steps {
            let k = (PARTITION_STEP * i) as u64;
            while r < rows && u64::from(indptr[r]) < k {
                r += 1;
            }
            part.push(r as i32);
        }
        part.push(rows as i32);
        RowPartition { part }
    }

    /// Steps of a matrix of `nnz` nonzeros: `max(ceil(nnz / PARTITION_STEP), 1)`
    /// (the kernels compute it the same way; the table has one entry more).
    pub const fn steps(nnz: usize) -> usize {
        let s = nnz.div_ceil(PARTITION_STEP);
        if s == 0 { 1 } else { s }
    }

    /// The table, `steps + 1` entries.
    pub fn entries(&self) -> &[i32] {
        &self.part
    }

    /// The row ranges a kernel of range `w` nonzeros (a positive multiple
    /// of [`PARTITION_STEP`]) walks, in order, as `(first row, end row)`
    /// (what the kernel computes; for tests and documentation).
    pub fn ranges(&self, w: usize) -> Vec<(usize, usize)> {
        let steps = self.part.len() - 1;
        let m = (w / PARTITION_STEP).max(1);
        (0..steps.div_ceil(m))
            .map(|j| {
                let at = |i: usize| self.part[i.min(steps)] as usize;
                (at(j * m), at((j + 1) * m))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: &[usize]) -> Csr {
        let t: Vec<(u32, u32, f64)> = rows
            .iter()
            .enumerate()
            .flat_map(|(r, &len)| (0..len).map(move |c| (r as u32, c as u32, 1.0)))
            .collect();
        let cols = rows.iter().copied().max().unwrap_or(0).max(1);
        Csr::from_triplets(rows.len(), cols, &t).unwrap()
    }

    /// Every range walks whole rows, the ranges cover every row once, and a
    /// row is in the range its first nonzero lies in.
    fn check(rows: &[usize]) {
        let a = csr(rows);
        let p = RowPartition::build(&a);
        assert_eq!(p.entries().len(), RowPartition::steps(a.nnz()) + 1);
        for w in [8, 16, 32, 128, 512] {
            let ranges = p.ranges(w);
            assert_eq!(ranges.len(), a.nnz().max(1).div_ceil(w), "w {w}");
            let mut next = 0;
            for (j, &(r0, r1)) in ranges.iter().enumerate() {
                assert_eq!(r0, next, "w {w}: ranges are contiguous");
                for r in r0..r1 {
                    let s = a.indptr()[r] as usize;
                    let last = j + 1 == ranges.len();
                    assert!(s >= j * w && (s < (j + 1) * w || last), "w {w} row {r}");
                }
                next = r1;
            }
            assert_eq!(next, rows.len(), "w {w}: every row");
        }
    }

    #[test]
    fn ranges_cover_whole_rows() {
        check(&[3, 0, 20, 1]);
        check(&[0, 0, 0]);
        check(&[0, 0, 5, 0, 0]);
        check(&[100]);
        check(&[1; 1000]);
        check(&(0..300).map(|r| (r * 7919) % 61).collect::<Vec<_>>());
        check(
            &(0..200)
                .map(|r| if r % 50 == 0 { 700 } else { r % 3 })
                .collect::<Vec<_>>(),
        );
    }
}
