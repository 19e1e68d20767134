//! [`LargeCsr`]: a borrowed CSR matrix with 32- or 64-bit row pointers,
//! validated in parallel without copying the caller's arrays.

use super::LargeCsrError;
use crate::device::Scalar;

/// Row-pointer element type of a [`LargeCsr`]: `u32` or `u64`.
pub trait Offset: Copy + Send + Sync + 'static + private::Sealed {
    /// The matching [`OffsetWidth`].
    const WIDTH: OffsetWidth;
    /// The offset as a 64-bit value.
    fn get(self) -> u64;
}

impl Offset for u32 {
    const WIDTH: OffsetWidth = OffsetWidth::U32;
    fn get(self) -> u64 {
        self as u64
    }
}

impl Offset for u64 {
    const WIDTH: OffsetWidth = OffsetWidth::U64;
    fn get(self) -> u64 {
        self
    }
}

mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Width of the row pointers a matrix is stored with (host or device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OffsetWidth {
    /// 32-bit row pointers (matrices with fewer than 2^31 nonzeros).
    U32,
    /// 64-bit row pointers.
    U64,
}

/// Nonzeros below which 32-bit row pointers are used: `2^31`, so that the
/// offsets also fit the signed 32-bit index type of other libraries.
pub const U32_OFFSET_LIMIT: u64 = 1 << 31;

impl OffsetWidth {
    /// The narrowest width for a matrix of `nnz` nonzeros: `U32` below
    /// [`U32_OFFSET_LIMIT`], `U64` from there on.
    pub fn for_nnz(nnz: u64) -> OffsetWidth {
        if nnz < U32_OFFSET_LIMIT {
            OffsetWidth::U32
        } else {
            OffsetWidth::U64
        }
    }

    /// Bytes per row pointer.
    pub fn bytes(self) -> usize {
        match self {
            OffsetWidth::U32 => 4,
            OffsetWidth::U64 => 8,
        }
    }

    /// Name in entry points and reports (`"u32"`, `"u64"`).
    pub fn as_str(self) -> &'static str {
        match self {
            OffsetWidth::U32 => "u32",
            OffsetWidth::U64 => "u64",
        }
    }
}

/// Largest row or column count: row and column ids are 32-bit unsigned on
/// the device (`2^32 - 1` rows, column indices up to `2^32 - 2`).
pub const MAX_DIM: u64 = u32::MAX as u64;

/// A CSR matrix over arrays the caller holds: row pointers of type `O`
/// (`u32` or `u64`), `u32` column indices (sorted and distinct within each
/// row), values of type `T`. Nothing is copied: the type borrows the three
/// slices and only checks them ([`LargeCsr::try_from_parts`]).
#[derive(Debug, Clone, Copy)]
pub struct LargeCsr<'a, O: Offset, T: Scalar> {
    rows: usize,
    cols: usize,
    indptr: &'a [O],
    indices: &'a [u32],
    values: &'a [T],
}

/// Rows per validation task: large enough that a thread's start-up cost
/// does not matter, small enough to balance threads over skewed rows.
const ROWS_PER_TASK: usize = 1 << 16;

impl<'a, O: Offset, T: Scalar> LargeCsr<'a, O, T> {
    /// Checks the arrays (in parallel over chunks of rows, on every
    /// available core) and borrows them: `rows, cols` in `1..=`[`MAX_DIM`],
    /// `indptr` of `rows + 1` nondecreasing entries from 0 to `nnz`,
    /// `indices` and `values` of `nnz` entries, columns below `cols` and
    /// strictly increasing within each row. The first bad row (lowest
    /// index) is reported.
    pub fn try_from_parts(
        rows: usize,
        cols: usize,
        indptr: &'a [O],
        indices: &'a [u32],
        values: &'a [T],
    ) -> Result<Self, LargeCsrError> {
        check_sizes::<O>(rows, cols, indptr.len(), indices.len(), values.len())?;
        let last = indptr[rows].get();
        if indptr[0].get() != 0 {
            return Err(LargeCsrError::IndptrNotMonotone { row: 0 });
        }
        if last != indices.len() as u64 {
            return Err(LargeCsrError::NnzMismatch {
                indptr_last: last,
                indices: indices.len(),
                values: values.len(),
            });
        }
        validate_rows(cols, indptr, indices)?;
        Ok(LargeCsr {
            rows,
            cols,
            indptr,
            indices,
            values,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Stored nonzeros.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
    /// Row pointers (`rows + 1` entries).
    pub fn indptr(&self) -> &'a [O] {
        self.indptr
    }
    /// Column indices (`nnz` entries).
    pub fn indices(&self) -> &'a [u32] {
        self.indices
    }
    /// Values (`nnz` entries).
    pub fn values(&self) -> &'a [T] {
        self.values
    }
    /// The half-open nonzero range of row `r` (`None` past the last row).
    pub fn row_range(&self, r: usize) -> Option<std::ops::Range<usize>> {
        (r < self.rows).then(|| self.indptr[r].get() as usize..self.indptr[r + 1].get() as usize)
    }
    /// `sum_j a_rj x_j` in float64 for row `r < rows` and `sum_j |a_rj x_j|`:
    /// the reference and the rounding scale of one row.
    /// [`LargeCsrError::Operand`] unless `x` has `cols` entries and `r < rows`.
    pub fn row_dot_f64(&self, r: usize, x: &[T]) -> Result<(f64, f64), LargeCsrError> {
        if x.len() != self.cols {
            return Err(LargeCsrError::Operand {
                what: "x (must have cols entries)",
                expected: self.cols,
                found: x.len(),
            });
        }
        let range = self.row_range(r).ok_or(LargeCsrError::Operand {
            what: "row index (must be below rows)",
            expected: self.rows,
            found: r,
        })?;
        let cols = &self.indices[range.clone()];
        let vals = &self.values[range];
        Ok(cols.iter().zip(vals).fold((0.0, 0.0), |(s, m), (&c, v)| {
            let t = v.to_f64() * x[c as usize].to_f64();
            (s + t, m + t.abs())
        }))
    }
    /// The bytes of the three arrays as stored on the device with
    /// row pointers of `width`.
    pub fn csr_bytes(&self, width: OffsetWidth) -> u64 {
        csr_bytes::<T>(self.rows as u64, self.nnz() as u64, width)
    }
}

/// Bytes of CSR arrays: `(rows + 1)` row pointers of `width`, `nnz` `u32`
/// column indices and `nnz` values of `T`.
pub fn csr_bytes<T: Scalar>(rows: u64, nnz: u64, width: OffsetWidth) -> u64 {
    (rows + 1) * width.bytes() as u64 + nnz * (4 + std::mem::size_of::<T>() as u64)
}

/// The size rules of [`LargeCsr::try_from_parts`], before any element is read.
pub(super) fn check_sizes<O: Offset>(
    rows: usize,
    cols: usize,
    indptr_len: usize,
    nnz: usize,
    n_values: usize,
) -> Result<(), LargeCsrError> {
    if rows == 0 || cols == 0 {
        return Err(LargeCsrError::Empty { rows, cols });
    }
    if rows as u64 > MAX_DIM || cols as u64 > MAX_DIM {
        return Err(LargeCsrError::DimensionTooLarge {
            rows,
            cols,
            max: MAX_DIM,
        });
    }
    if O::WIDTH == OffsetWidth::U32 && nnz as u64 > u32::MAX as u64 {
        return Err(LargeCsrError::OffsetsTooNarrow { nnz });
    }
    if indptr_len != rows + 1 {
        return Err(LargeCsrError::IndptrLength {
            expected: rows + 1,
            found: indptr_len,
        });
    }
    if n_values != nnz {
        return Err(LargeCsrError::NnzMismatch {
            indptr_last: nnz as u64,
            indices: nnz,
            values: n_values,
        });
    }
    Ok(())
}

/// Row checks over chunks of [`ROWS_PER_TASK`] rows on scoped threads; the
/// lowest failing row wins (chunks before it are all checked).
fn validate_rows<O: Offset>(
    cols: usize,
    indptr: &[O],
    indices: &[u32],
) -> Result<(), LargeCsrError> {
    let rows = indptr.len() - 1;
    let tasks = rows.div_ceil(ROWS_PER_TASK);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tasks)
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let first_bad = std::sync::Mutex::new(None::<(usize, LargeCsrError)>);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if t >= tasks {
                        break;
                    }
                    let lo = t * ROWS_PER_TASK;
                    let hi = (lo + ROWS_PER_TASK).min(rows);
                    if let Err(e) = validate_chunk(cols, indptr, indices, lo, hi) {
                        let mut g = first_bad.lock().unwrap_or_else(|p| p.into_inner());
                        if g.as_ref().is_none_or(|(r, _)| e.row() < *r) {
                            *g = Some((e.row(), e));
                        }
                    }
                }
            });
        }
    });
    match first_bad.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Rows `lo..hi`: monotone pointers, columns in range and increasing.
fn validate_chunk<O: Offset>(
    cols: usize,
    indptr: &[O],
    indices: &[u32],
    lo: usize,
    hi: usize,
) -> Result<(), LargeCsrError> {
    let nnz = indices.len() as u64;
    for r in lo..hi {
        let (s, e) = (indptr[r].get(), indptr[r + 1].get());
        if e < s || e > nnz {
            return Err(LargeCsrError::IndptrNotMonotone { row: r });
        }
        let row = &indices[s as usize..e as usize];
        for (k, &c) in row.iter().enumerate() {
            if c as usize >= cols {
                return Err(LargeCsrError::ColumnOutOfRange {
                    row: r,
                    col: c,
                    cols,
                });
            }
            if k > 0 && row[k - 1] >= c {
                return Err(LargeCsrError::UnsortedRow { row: r });
            }
        }
    }
    Ok(())
}

/// Row-length statistics of a matrix, for the selection's cost model:
/// computed from the row pointers alone, in parallel.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RowStats {
    /// Rows.
    pub rows: u64,
    /// Nonzeros.
    pub nnz: u64,
    /// Mean row length.
    pub mean: f64,
    /// Coefficient of variation of the row lengths (standard deviation over mean).
    pub cv: f64,
    /// Longest row.
    pub max: u64,
    /// Rows without nonzeros.
    pub empty: u64,
}

impl RowStats {
    /// The statistics of `a`'s row lengths.
    pub fn of<O: Offset, T: Scalar>(a: &LargeCsr<'_, O, T>) -> RowStats {
        let ip = a.indptr();
        let rows = a.rows();
        let parts = parallel_chunks(rows, |lo, hi| {
            let mut acc = (0f64, 0u64, 0u64);
            for r in lo..hi {
                let len = ip[r + 1].get() - ip[r].get();
                acc.0 += (len as f64) * (len as f64);
                acc.1 = acc.1.max(len);
                acc.2 += (len == 0) as u64;
            }
            acc
        });
        let (sq, max, empty) = parts
            .into_iter()
            .fold((0.0, 0, 0), |a, b| (a.0 + b.0, a.1.max(b.1), a.2 + b.2));
        let nnz = a.nnz() as u64;
        let mean = nnz as f64 / rows as f64;
        let var = (sq / rows as f64 - mean * mean).max(0.0);
        RowStats {
            rows: rows as u64,
            nnz,
            mean,
            cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            max,
            empty,
        }
    }
}

/// `f(lo, hi)` over `n` items cut into one contiguous chunk per available
/// core, on scoped threads; the results in chunk order.
pub fn parallel_chunks<R: Send>(n: usize, f: impl Fn(usize, usize) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .clamp(1, n.max(1));
    let per = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                s.spawn(move || f((t * per).min(n), ((t + 1) * per).min(n)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}
