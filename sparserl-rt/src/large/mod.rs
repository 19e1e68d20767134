//! Matrices past the 32-bit path: up to the device's memory, with 64-bit
//! row pointers where the nonzeros need them.
//!
//! - [`LargeCsr`] (`host.rs`): a borrowed CSR over arrays the caller holds
//!   (`u32` or `u64` row pointers, `u32` columns, `f32` / `f64` values),
//!   validated in parallel, never copied; [`OffsetWidth::for_nnz`] picks the
//!   row-pointer width by size.
//! - [`DeviceLargeCsr`] (`device.rs`): its upload, with the device memory
//!   checked against `cuMemGetInfo` before anything is allocated, row
//!   pointers narrowed to 32 bits on the way when the matrix allows it.
//! - [`LargeVariant`] and [`DeviceLargeCsr::spmv`] (`kernels.rs` +
//!   `spmv64.cu`): SpMV kernels with 64-bit offsets compiled with NVRTC at
//!   first use (a group of lanes per row, one thread per row, merge path).
//! - [`reorder`]: degree order and reverse Cuthill-McKee of a square
//!   [`LargeCsr`], and `P A Pᵀ` into new owned arrays, in parallel.
//! - `select.rs` (`tools`): every variant checked against a float64
//!   reference on sampled rows, a cost model over [`RowStats`], and a
//!   short measured run on the full matrix ([`select::select`]).
//!
//! Separate from [`crate::Csr`] and the generated kernels: the generator,
//! its lock files and the 32-bit path are untouched.

mod device;
mod host;
mod kernels;
pub mod ops;
pub mod reorder;
#[cfg(feature = "tools")]
pub mod select;

pub use device::{DeviceLargeCsr, MemoryNeed, RawOffsets};
pub use host::{
    LargeCsr, MAX_DIM, Offset, OffsetWidth, RowStats, U32_OFFSET_LIMIT, csr_bytes, parallel_chunks,
};
pub use kernels::{LargeVariant, SOURCE};

use crate::error::RtError;
use thiserror::Error;

/// A host matrix that [`LargeCsr::try_from_parts`] refuses.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LargeCsrError {
    /// No rows or no columns.
    #[error("matrix is {rows} x {cols}; at least one row and one column are needed")]
    Empty {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// Rows or columns past what 32-bit row and column ids address.
    #[error("matrix is {rows} x {cols}; rows and columns are limited to {max} (32-bit ids)")]
    DimensionTooLarge {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// The limit, [`MAX_DIM`].
        max: u64,
    },
    /// `u32` row pointers for more nonzeros than they can count.
    #[error("{nnz} nonzeros do not fit u32 row pointers; pass u64 row pointers")]
    OffsetsTooNarrow {
        /// Nonzeros.
        nnz: usize,
    },
    /// `indptr` is not `rows + 1` long.
    #[error("indptr has {found} entries, expected rows + 1 = {expected}")]
    IndptrLength {
        /// rows + 1.
        expected: usize,
        /// Entries given.
        found: usize,
    },
    /// `indptr` decreases at `row` (or does not start at 0, `row` 0, or
    /// points past the nonzeros).
    #[error("indptr is not monotone from 0 to nnz at row {row}")]
    IndptrNotMonotone {
        /// The first bad row.
        row: usize,
    },
    /// The last row pointer, the indices and the values disagree on nnz.
    #[error("indptr ends at {indptr_last}, but there are {indices} indices and {values} values")]
    NnzMismatch {
        /// `indptr[rows]`.
        indptr_last: u64,
        /// Column indices given.
        indices: usize,
        /// Values given.
        values: usize,
    },
    /// A column index at or past `cols`.
    #[error("row {row} has column {col}, but the matrix has {cols} columns")]
    ColumnOutOfRange {
        /// Row.
        row: usize,
        /// Column index.
        col: u32,
        /// Columns.
        cols: usize,
    },
    /// A row's columns are not strictly increasing.
    #[error("row {row} has unsorted or repeated columns")]
    UnsortedRow {
        /// Row.
        row: usize,
    },
    /// An operand of a host computation has the wrong length or index.
    #[error("{what}: {found} given, expected {expected}")]
    Operand {
        /// Which operand.
        what: &'static str,
        /// Expected length (or bound).
        expected: usize,
        /// Given.
        found: usize,
    },
}

impl LargeCsrError {
    /// The row an element error names (0 for the size errors).
    fn row(&self) -> usize {
        match self {
            LargeCsrError::IndptrNotMonotone { row }
            | LargeCsrError::ColumnOutOfRange { row, .. }
            | LargeCsrError::UnsortedRow { row } => *row,
            _ => 0,
        }
    }
}

/// Everything that can go wrong on the large path's device side.
#[derive(Debug, Error)]
pub enum LargeError {
    /// The host matrix is invalid.
    #[error("invalid large matrix: {0}")]
    Csr(#[from] LargeCsrError),
    /// The device cannot hold what is asked, checked before any allocation.
    #[error("{what} needs {needed} bytes of device memory, but only {free} of {total} are free")]
    DeviceMemory {
        /// What was to be allocated.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes free (`cuMemGetInfo`).
        free: u64,
        /// Device memory in all.
        total: u64,
    },
    /// A vector has the wrong length for the operation.
    #[error("{what} has {found} entries, expected {expected}")]
    DimensionMismatch {
        /// Which operand.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        found: usize,
    },
    /// A variant whose parameters are outside the compiled space.
    #[error("large-path variant {0:?} is not in the compiled space")]
    InvalidVariant(LargeVariant),
    /// A runtime error (driver, compilation, foreign operand, capture).
    #[error(transparent)]
    Rt(#[from] RtError),
}

impl From<cudarc::driver::DriverError> for LargeError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        LargeError::Rt(e.into())
    }
}

#[cfg(test)]
mod tests;
