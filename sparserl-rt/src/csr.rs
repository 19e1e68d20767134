//! Host-side CSR matrices: the common currency of the build helper and the runtime.

use thiserror::Error;

/// Why a set of CSR arrays is not a valid matrix.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CsrError {
    /// A vector multiplied with the matrix has the wrong length.
    #[error("x has {found} entries, expected cols = {expected}")]
    XLength {
        /// The matrix's columns.
        expected: usize,
        /// The vector's length.
        found: usize,
    },
    /// `indptr` has the wrong length.
    #[error("indptr has {found} entries, expected rows + 1 = {expected}")]
    IndptrLength {
        /// expected length
        expected: usize,
        /// actual length
        found: usize,
    },
    /// `indptr` decreases or does not start at 0 / end at nnz.
    #[error("indptr is not non-decreasing from 0 to nnz at row {row}")]
    IndptrNotMonotone {
        /// first offending row
        row: usize,
    },
    /// `indices` and `values` lengths differ from `indptr[rows]`.
    #[error(
        "indices ({indices}) and values ({values}) must both have indptr[rows] = {nnz} entries"
    )]
    NnzMismatch {
        /// nnz according to indptr
        nnz: usize,
        /// indices length
        indices: usize,
        /// values length
        values: usize,
    },
    /// A column index is `>= cols`.
    #[error("column index {col} in row {row} is out of range for {cols} columns")]
    ColumnOutOfRange {
        /// row holding it
        row: usize,
        /// the index
        col: u32,
        /// number of columns
        cols: usize,
    },
    /// Column indices within a row are not strictly increasing.
    #[error("row {row} has unsorted or duplicate column indices")]
    UnsortedRow {
        /// offending row
        row: usize,
    },
    /// A dense operand of an SpMM has the wrong number of entries.
    #[error("dense operand {what} has {found} entries, expected {expected}")]
    DenseLength {
        /// which operand
        what: &'static str,
        /// expected entries
        expected: usize,
        /// actual entries
        found: usize,
    },
    /// Dimensions or nnz do not fit 32-bit kernel indices.
    #[error("matrix of {rows} x {cols} with {nnz} nonzeros exceeds 32-bit indices")]
    TooLarge {
        /// rows
        rows: usize,
        /// cols
        cols: usize,
        /// nonzeros
        nnz: usize,
    },
}

/// A CSR matrix with 32-bit indices and `f64` values, rows sorted by column.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    rows: usize,
    cols: usize,
    indptr: Vec<u32>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl Csr {
    /// Builds a matrix, checking every invariant.
    pub fn try_new(
        rows: usize,
        cols: usize,
        indptr: Vec<u32>,
        indices: Vec<u32>,
        values: Vec<f64>,
    ) -> Result<Csr, CsrError> {
        Csr::validate_parts(rows, cols, &indptr, &indices, values.len())?;
        Ok(Csr {
            rows,
            cols,
            indptr,
            indices,
            values,
        })
    }

    /// Checks CSR arrays without taking ownership: 32-bit sizes, `indptr`
    /// length and monotonicity, matching lengths, columns in range and
    /// strictly increasing within each row.
    pub fn validate_parts(
        rows: usize,
        cols: usize,
        indptr: &[u32],
        indices: &[u32],
        n_values: usize,
    ) -> Result<(), CsrError> {
        let nnz = indices.len();
        if rows >= i32::MAX as usize || cols >= i32::MAX as usize || nnz >= i32::MAX as usize {
            return Err(CsrError::TooLarge { rows, cols, nnz });
        }
        if indptr.len() != rows + 1 {
            return Err(CsrError::IndptrLength {
                expected: rows + 1,
                found: indptr.len(),
            });
        }
        if indptr[0] != 0 {
            return Err(CsrError::IndptrNotMonotone { row: 0 });
        }
        if let Some(r) = (0..rows).find(|&r| indptr[r + 1] < indptr[r]) {
            return Err(CsrError::IndptrNotMonotone { row: r });
        }
        let nnz_ptr = indptr[rows] as usize;
        if nnz_ptr != nnz || nnz_ptr != n_values {
            return Err(CsrError::NnzMismatch {
                nnz: nnz_ptr,
                indices: nnz,
                values: n_values,
            });
        }
        for r in 0..rows {
            let row = &indices[indptr[r] as usize..indptr[r + 1] as usize];
            for (k, &c) in row.iter().enumerate() {
                if c as usize >= cols {
                    return Err(CsrError::ColumnOutOfRange {
                        row: r,
                        col: c,
                        cols,
                    });
                }
                if k > 0 && row[k - 1] >= c {
                    return Err(CsrError::UnsortedRow { row: r });
                }
            }
        }
        Ok(())
    }

    /// Builds a matrix from triplets `(row, col, value)`; duplicates are summed,
    /// rows are sorted. Panics never; indices out of range are an error.
    pub fn from_triplets(
        rows: usize,
        cols: usize,
        triplets: &[(u32, u32, f64)],
    ) -> Result<Csr, CsrError> {
        if rows >= i32::MAX as usize || cols >= i32::MAX as usize {
            return Err(CsrError::TooLarge {
                rows,
                cols,
                nnz: triplets.len(),
            });
        }
        for &(r, c, _) in triplets {
            if r as usize >= rows || c as usize >= cols {
                return Err(CsrError::ColumnOutOfRange {
                    row: r as usize,
                    col: c,
                    cols,
                });
            }
        }
        let mut counts = vec![0u32; rows + 1];
        for &(r, _, _) in triplets {
            counts[r as usize + 1] += 1;
        }
        for r in 0..rows {
            counts[r + 1] += counts[r];
        }
        let mut next = counts.clone();
        let mut entries = vec![(0u32, 0f64); triplets.len()];
        for &(r, c, v) in triplets {
            let slot = &mut next[r as usize];
            entries[*slot as usize] = (c, v);
            *slot += 1;
        }
        let mut indptr = Vec::with_capacity(rows + 1);
        let mut indices = Vec::with_capacity(triplets.len());
        let mut values = Vec::with_capacity(triplets.len());
        indptr.push(0u32);
        for r in 0..rows {
            let seg = &mut entries[counts[r] as usize..counts[r + 1] as usize];
            seg.sort_unstable_by_key(|e| e.0);
            for &(c, v) in seg.iter() {
                if indices.len() > indptr[r] as usize && *indices.last().unwrap() == c {
                    *values.last_mut().unwrap() += v;
                } else {
                    indices.push(c);
                    values.push(v);
                }
            }
            indptr.push(indices.len() as u32);
        }
        Csr::try_new(rows, cols, indptr, indices, values)
    }

    /// Converts from a sprs matrix (CSR or CSC), sorting and validating.
    #[cfg(feature = "sprs")]
    pub fn from_sprs(m: &sprs::CsMat<f64>) -> Result<Csr, CsrError> {
        let m = m.to_csr();
        let indptr: Vec<u32> = m.indptr().raw_storage().iter().map(|&p| p as u32).collect();
        let indices: Vec<u32> = m.indices().iter().map(|&c| c as u32).collect();
        Csr::try_new(m.rows(), m.cols(), indptr, indices, m.data().to_vec())
    }

    /// Converts into a sprs CSR matrix.
    #[cfg(feature = "sprs")]
    pub fn to_sprs(&self) -> sprs::CsMat<f64> {
        sprs::CsMat::new(
            (self.rows, self.cols),
            self.indptr.iter().map(|&p| p as usize).collect(),
            self.indices.iter().map(|&c| c as usize).collect(),
            self.values.clone(),
        )
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Number of stored nonzeros.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
    /// Row pointer array (`rows + 1` entries).
    pub fn indptr(&self) -> &[u32] {
        &self.indptr
    }
    /// Column indices.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }
    /// Values.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// Length of row `r`.
    pub fn row_len(&self, r: usize) -> usize {
        (self.indptr[r + 1] - self.indptr[r]) as usize
    }

    /// `y = A x` in float64 on the CPU: the correctness reference
    /// ([`CsrError::XLength`] unless `x` has `cols` entries).
    pub fn spmv_f64(&self, x: &[f64]) -> Result<Vec<f64>, CsrError> {
        if x.len() != self.cols {
            return Err(CsrError::XLength {
                expected: self.cols,
                found: x.len(),
            });
        }
        Ok((0..self.rows)
            .map(|r| {
                let (a, b) = (self.indptr[r] as usize, self.indptr[r + 1] as usize);
                self.indices[a..b]
                    .iter()
                    .zip(&self.values[a..b])
                    .map(|(&c, &v)| v * x[c as usize])
                    .sum()
            })
            .collect())
    }

    /// `Y = A X` in float64 on the CPU, the SpMM correctness reference: `x`
    /// is a packed `cols x n` matrix in `layout`, the result a packed
    /// `rows x n` matrix in the same layout.
    pub fn spmm_f64(
        &self,
        x: &[f64],
        n: usize,
        layout: crate::dense::DenseLayout,
    ) -> Result<Vec<f64>, CsrError> {
        let expected = self.cols.checked_mul(n).ok_or(CsrError::TooLarge {
            rows: self.rows,
            cols: self.cols,
            nnz: self.nnz(),
        })?;
        if x.len() != expected {
            return Err(CsrError::DenseLength {
                what: "x (cols x n)",
                expected,
                found: x.len(),
            });
        }
        let (ldx, ldy) = (
            layout.packed_ld(self.cols, n),
            layout.packed_ld(self.rows, n),
        );
        let mut y = vec![0.0; self.rows * n];
        for r in 0..self.rows {
            let (a, b) = (self.indptr[r] as usize, self.indptr[r + 1] as usize);
            for j in 0..n {
                y[layout.index(r, j, ldy)] = self.indices[a..b]
                    .iter()
                    .zip(&self.values[a..b])
                    .map(|(&c, &v)| v * x[layout.index(c as usize, j, ldx)])
                    .sum();
            }
        }
        Ok(y)
    }

    /// Compulsory bytes of one SpMV with values of `value_size` bytes and 4-byte
    /// indices: `nnz (v + 4) + (rows + 1) 4 + cols v + rows v`.
    pub fn compulsory_bytes(&self, value_size: usize) -> u64 {
        let (n, r, c) = (self.nnz() as u64, self.rows as u64, self.cols as u64);
        let v = value_size as u64;
        n * (v + 4) + (r + 1) * 4 + c * v + r * v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triplets_sum_duplicates_and_sort() {
        let m = Csr::from_triplets(2, 3, &[(0, 2, 1.0), (0, 0, 2.0), (0, 2, 3.0), (1, 1, 4.0)])
            .unwrap();
        assert_eq!(m.indptr(), &[0, 2, 3]);
        assert_eq!(m.indices(), &[0, 2, 1]);
        assert_eq!(m.values(), &[2.0, 4.0, 4.0]);
        assert_eq!(m.spmv_f64(&[1.0, 1.0, 1.0]).unwrap(), vec![6.0, 4.0]);
        assert!(matches!(
            m.spmv_f64(&[1.0, 1.0]),
            Err(CsrError::XLength {
                expected: 3,
                found: 2
            })
        ));
    }

    #[test]
    fn invalid_arrays_are_rejected() {
        assert!(matches!(
            Csr::try_new(1, 1, vec![0, 1], vec![1], vec![1.0]),
            Err(CsrError::ColumnOutOfRange { .. })
        ));
        assert!(matches!(
            Csr::try_new(1, 3, vec![0, 2], vec![2, 1], vec![1.0, 1.0]),
            Err(CsrError::UnsortedRow { row: 0 })
        ));
        assert!(matches!(
            Csr::try_new(2, 3, vec![0, 2], vec![], vec![]),
            Err(CsrError::IndptrLength { .. })
        ));
    }

    #[test]
    fn spmm_reference_matches_a_naive_loop() {
        use crate::dense::DenseLayout;
        let m = Csr::from_triplets(
            3,
            4,
            &[
                (0, 0, 2.0),
                (0, 3, -1.0),
                (2, 1, 0.5),
                (2, 2, 4.0),
                (2, 3, 1.0),
            ],
        )
        .unwrap();
        let n = 3;
        // x[c][j] = c + 10 j, packed row-major and col-major.
        let xv = |c: usize, j: usize| (c + 10 * j) as f64;
        let xr: Vec<f64> = (0..4).flat_map(|c| (0..n).map(move |j| xv(c, j))).collect();
        let xc: Vec<f64> = (0..n).flat_map(|j| (0..4).map(move |c| xv(c, j))).collect();
        let yr = m.spmm_f64(&xr, n, DenseLayout::RowMajor).unwrap();
        let yc = m.spmm_f64(&xc, n, DenseLayout::ColMajor).unwrap();
        for r in 0..3 {
            for j in 0..n {
                let mut want = 0.0;
                for c in 0..4 {
                    let a = m.indices()[m.indptr()[r] as usize..m.indptr()[r + 1] as usize]
                        .iter()
                        .position(|&k| k as usize == c)
                        .map_or(0.0, |p| m.values()[m.indptr()[r] as usize + p]);
                    want += a * xv(c, j);
                }
                assert_eq!(yr[r * n + j], want);
                assert_eq!(yc[j * 3 + r], want);
            }
        }
        assert_eq!(yr[3..6], [0.0; 3]);
        // N = 1 is the SpMV.
        let x1 = [1.0, -2.0, 3.0, 0.25];
        assert_eq!(
            m.spmm_f64(&x1, 1, DenseLayout::RowMajor).unwrap(),
            m.spmv_f64(&x1).unwrap()
        );
        assert!(matches!(
            m.spmm_f64(&x1, 2, DenseLayout::RowMajor),
            Err(CsrError::DenseLength {
                expected: 8,
                found: 4,
                ..
            })
        ));
        assert!(
            m.spmm_f64(&[], 0, DenseLayout::ColMajor)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn compulsory_bytes_formula() {
        let m = Csr::from_triplets(2, 3, &[(0, 0, 1.0)]).unwrap();
        assert_eq!(m.compulsory_bytes(4), 8 + 12 + 12 + 8);
    }
}
