//! The device forms of the optional layouts a [`DeviceCsr`](super::DeviceCsr) may hold.

use super::Scalar;
use cudarc::driver::CudaSlice;
use std::fmt;

/// The row-binned layout of a [`DeviceCsr`](super::DeviceCsr) (see [`crate::binned`]).
pub struct DeviceBinned {
    /// `[threshold, n_long, n_chunks, long_rows, chunk_long, chunk_start]`.
    pub meta: CudaSlice<i32>,
    /// `n_long + 1` zeroed slots: long-row accumulators and a completion
    /// counter, written by binned kernels and left zeroed by them.
    pub scratch: CudaSlice<f64>,
    /// Rows longer than this are long.
    pub threshold: usize,
    /// Number of long rows.
    pub long_rows: usize,
    /// Number of chunks of long rows.
    pub chunks: usize,
}

impl fmt::Debug for DeviceBinned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBinned")
            .field("threshold", &self.threshold)
            .field("long_rows", &self.long_rows)
            .field("chunks", &self.chunks)
            .finish_non_exhaustive()
    }
}

/// The tile layout of a [`DeviceCsr`](super::DeviceCsr) (see [`crate::tiled`]).
pub struct DeviceTiled {
    /// `[n_tiles, n_acc, tile_row, tile_nnz, tile_acc, acc_row, acc_pieces]`.
    pub meta: CudaSlice<i32>,
    /// `2 * n_acc` zeroed slots (at least one): accumulators of the rows cut
    /// into pieces and their completion counters, written by tiled kernels
    /// and left zeroed by them.
    pub scratch: CudaSlice<f64>,
    /// Number of tiles (one block each).
    pub tiles: usize,
    /// Number of rows cut into pieces.
    pub split_rows: usize,
}

impl fmt::Debug for DeviceTiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceTiled")
            .field("tiles", &self.tiles)
            .field("split_rows", &self.split_rows)
            .finish_non_exhaustive()
    }
}

/// The diagonal layout of a [`DeviceCsr`](super::DeviceCsr) (see [`crate::dia`]).
pub struct DeviceDia<T: Scalar> {
    /// Ascending diagonal offsets `col - row`.
    pub offsets: CudaSlice<i32>,
    /// Diagonal-major values, `offsets.len() * rows` entries, zero padded.
    pub values: CudaSlice<T>,
    /// Number of diagonals.
    pub diagonals: usize,
    /// Stored entries per nonzero (1.0 = no padding).
    pub stored_per_nnz: f64,
}

impl<T: Scalar> fmt::Debug for DeviceDia<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceDia")
            .field("diagonals", &self.diagonals)
            .field("stored_per_nnz", &self.stored_per_nnz)
            .finish_non_exhaustive()
    }
}

/// The SELL-C-sigma layout of a [`DeviceCsr`](super::DeviceCsr) (see [`crate::sell`]).
pub struct DeviceSell<T: Scalar> {
    /// Per slice and one past the end: first stored element.
    pub slice_ptr: CudaSlice<i32>,
    /// `[row_of[slots], slot_len[slots]]`: the row of each slot (-1: none)
    /// and its number of nonzeros.
    pub meta: CudaSlice<i32>,
    /// Column of each stored element (slice-major, then element, then slot).
    pub cols: CudaSlice<i32>,
    /// Value of each stored element (zero in the padding).
    pub values: CudaSlice<T>,
    /// Row slots (slices x [`crate::sell::C`]).
    pub slots: usize,
    /// Stored elements per nonzero (1.0 = no padding).
    pub stored_per_nnz: f64,
}

impl<T: Scalar> fmt::Debug for DeviceSell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceSell")
            .field("slots", &self.slots)
            .field("stored_per_nnz", &self.stored_per_nnz)
            .finish_non_exhaustive()
    }
}
