//! The feature vector of a sparse matrix, computed in O(nnz) from CSR.
//!
//! The same code runs at build time (policy input, cache buckets) and at run
//! time (dispatch). The order of [`Features::NAMES`] is part of the policy file
//! format: append, never reorder.

use crate::csr::Csr;

/// Structural statistics of a CSR matrix. All fields are `f64`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Features {
    /// Number of rows.
    pub rows: f64,
    /// Number of columns.
    pub cols: f64,
    /// Stored nonzeros.
    pub nnz: f64,
    /// nnz / (rows * cols).
    pub density: f64,
    /// Mean row length.
    pub mean_row: f64,
    /// Standard deviation of row lengths (population).
    pub std_row: f64,
    /// std_row / mean_row (0 when mean is 0).
    pub cv_row: f64,
    /// Shortest row.
    pub min_row: f64,
    /// Longest row.
    pub max_row: f64,
    /// Median row length (nearest rank).
    pub p50_row: f64,
    /// 90th percentile row length (nearest rank).
    pub p90_row: f64,
    /// 99th percentile row length (nearest rank).
    pub p99_row: f64,
    /// Gini coefficient of row lengths (0 = all equal).
    pub gini_row: f64,
    /// Share of rows with no nonzeros.
    pub empty_share: f64,
    /// max_row / mean_row (0 when mean is 0).
    pub max_over_mean: f64,
    /// Mean over nonzeros of |col/cols - row/rows| (0 = on the diagonal).
    pub diag_dist: f64,
    /// Distinct 128-byte segments of `x` (32 f32 values) touched per warp of 32
    /// consecutive rows, divided by the nonzeros of those rows; averaged over warps
    /// weighted by nonzeros. Low = gathers of x are coalesced.
    pub x_segments_per_nnz: f64,
    /// nnz / (16 * number of distinct 4x4 blocks touched): 1 = fully dense blocks.
    pub block4_density: f64,
}
