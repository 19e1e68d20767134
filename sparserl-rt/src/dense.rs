//! Dense matrices on the device: the `X` and `Y` operands of SpMM.
//!
//! A [`DeviceDense`] is `rows x cols` values of one [`Scalar`] type in one
//! [`DenseLayout`] with a leading dimension `ld` (the distance between
//! consecutive rows of a row-major matrix, or columns of a column-major
//! one). Like [`DeviceVec`] it belongs to the [`Gpu`] (context and stream)
//! that created it and every launch refuses it on another
//! ([`RtError::ForeignOperand`]).

use crate::device::{DeviceVec, Gpu, Scalar};
use crate::error::RtError;
use cudarc::driver::CudaSlice;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Storage order of a dense matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DenseLayout {
    /// Rows contiguous (`a[i][j]` at `i * ld + j`): PyTorch and GNN feature matrices.
    RowMajor,
    /// Columns contiguous (`a[i][j]` at `j * ld + i`): BLAS and LAPACK.
    ColMajor,
}

impl DenseLayout {
    /// Both layouts.
    pub const ALL: [DenseLayout; 2] = [DenseLayout::RowMajor, DenseLayout::ColMajor];

    /// The descriptor spelling: `row-major` or `col-major`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DenseLayout::RowMajor => "row-major",
            DenseLayout::ColMajor => "col-major",
        }
    }

    /// Parses the descriptor spelling.
    pub fn parse(s: &str) -> Option<DenseLayout> {
        DenseLayout::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// Short tag used in entry names: `rm` or `cm`.
    pub const fn tag(self) -> &'static str {
        match self {
            DenseLayout::RowMajor => "rm",
            DenseLayout::ColMajor => "cm",
        }
    }

    /// The leading dimension of a packed `rows x cols` matrix (`cols` for
    /// row-major, `rows` for column-major).
    pub const fn packed_ld(self, rows: usize, cols: usize) -> usize {
        match self {
            DenseLayout::RowMajor => cols,
            DenseLayout::ColMajor => rows,
        }
    }

    /// Index of element `(i, j)` with leading dimension `ld`.
    pub const fn index(self, i: usize, j: usize, ld: usize) -> usize {
        match self {
            DenseLayout::RowMajor => i * ld + j,
            DenseLayout::ColMajor => j * ld + i,
        }
    }
}

impl fmt::Display for DenseLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Elements a `rows x cols` matrix with leading dimension `ld` occupies,
/// after checking that its shape fits the kernels' 32-bit row, column and
/// leading-dimension arguments (offsets are computed in 64 bits on the
/// device).
pub fn dense_len(
    rows: usize,
    cols: usize,
    layout: DenseLayout,
    ld: usize,
) -> Result<usize, RtError> {
    let limit = i32::MAX as usize;
    if rows >= limit || cols >= limit || ld >= limit {
        return Err(RtError::InvalidArgument(format!(
            "a {rows} x {cols} dense matrix with leading dimension {ld} exceeds 32-bit sizes"
        )));
    }
    let (inner, outer) = match layout {
        DenseLayout::RowMajor => (cols, rows),
        DenseLayout::ColMajor => (rows, cols),
    };
    if ld < inner.max(1) {
        return Err(RtError::InvalidArgument(format!(
            "leading dimension {ld} of a {rows} x {cols} {layout} matrix is below {}",
            inner.max(1)
        )));
    }
    // The last outer slice needs only `inner` elements.
    match outer {
        _ if inner == 0 => Ok(0),
        0 => Ok(0),
        o => (o - 1)
            .checked_mul(ld)
            .and_then(|v| v.checked_add(inner))
            .ok_or_else(|| RtError::InvalidArgument("dense matrix size overflows".into())),
    }
}

/// A dense matrix on the device, tied to the [`Gpu`] that created it.
///
/// Its storage is a [`DeviceVec`], so it shares the vector's ownership
/// rules: launches check its owner and pin it into a graph being captured.
pub struct DeviceDense<T: Scalar> {
    data: DeviceVec<T>,
    rows: usize,
    cols: usize,
    layout: DenseLayout,
    ld: usize,
}

impl<T: Scalar> fmt::Debug for DeviceDense<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceDense")
            .field("value", &T::TYPE)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("layout", &self.layout)
            .field("ld", &self.ld)
            .finish()
    }
}

impl<T: Scalar> DeviceDense<T> {
    /// A packed `rows x cols` matrix of zeros.
    pub fn zeros(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        layout: DenseLayout,
    ) -> Result<Self, RtError> {
        Self::zeros_with_ld(gpu, rows, cols, layout, layout.packed_ld(rows, cols).max(1))
    }

    /// A `rows x cols` matrix of zeros with leading dimension `ld` (at least
    /// `cols` for row-major, `rows` for column-major; a padded `ld` lets
    /// kernels use vector loads for any width).
    pub fn zeros_with_ld(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        layout: DenseLayout,
        ld: usize,
    ) -> Result<Self, RtError> {
        let len = dense_len(rows, cols, layout, ld)?;
        let data = DeviceVec::zeros(gpu, len)?;
        Self::from_vec(gpu, data, rows, cols, layout, ld)
    }

    /// Copies a packed host matrix (`rows * cols` values in `layout`, leading
    /// dimension `cols` for row-major, `rows` for column-major) to the device.
    pub fn from_host(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        layout: DenseLayout,
        data: &[T],
    ) -> Result<Self, RtError> {
        let ld = layout.packed_ld(rows, cols).max(1);
        let len = dense_len(rows, cols, layout, ld)?;
        if data.len() != len {
            return Err(RtError::DimensionMismatch {
                what: "host data of a dense matrix (must have rows * cols entries)",
                expected: len,
                found: data.len(),
            });
        }
        let v = DeviceVec::from_host(gpu, data)?;
        Self::from_vec(gpu, v, rows, cols, layout, ld)
    }

    /// Wraps an existing device vector of the same [`Gpu`] as a
    /// `rows x cols` matrix with leading dimension `ld` (no copy); the
    /// vector must hold at least the elements the shape occupies.
    pub fn from_vec(
        gpu: &Gpu,
        v: DeviceVec<T>,
        rows: usize,
        cols: usize,
        layout: DenseLayout,
        ld: usize,
    ) -> Result<Self, RtError> {
        v.check_gpu(gpu, "the vector of a dense matrix")?;
        let len = dense_len(rows, cols, layout, ld)?;
        if v.len() < len {
            return Err(RtError::DimensionMismatch {
                what: "device vector of a dense matrix (too short for its shape)",
                expected: len,
                found: v.len(),
            });
        }
        Ok(DeviceDense {
            data: v,
            rows,
            cols,
            layout,
            ld,
        })
    }

    /// Copies the matrix back to the host (waits for queued work), packed
    /// in its layout (`rows * cols` values, padding dropped).
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>, RtError> {
        let raw = self.data.to_host(gpu)?;
        let (inner, outer) = self.inner_outer();
        if inner == 0 || outer == 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(inner * outer);
        for o in 0..outer {
            out.extend_from_slice(&raw[o * self.ld..o * self.ld + inner]);
        }
        Ok(out)
    }

    /// Overwrites the matrix with packed host data (same shape as [`DeviceDense::from_host`]).
    pub fn copy_from_host(&mut self, gpu: &Gpu, data: &[T]) -> Result<(), RtError> {
        self.check_gpu(gpu, "the dense matrix")?;
        let packed = self.rows * self.cols;
        if data.len() != packed {
            return Err(RtError::DimensionMismatch {
                what: "host data of a dense matrix (must have rows * cols entries)",
                expected: packed,
                found: data.len(),
            });
        }
        if packed == 0 {
            return Ok(());
        }
        let (inner, _) = self.inner_outer();
        if inner == self.ld && packed == self.data.len() {
            return self.data.copy_from_host(gpu, data);
        }
        let mut raw = self.data.to_host(gpu)?;
        for (o, chunk) in data.chunks(inner).enumerate() {
            raw[o * self.ld..o * self.ld + inner].copy_from_slice(chunk);
        }
        self.data.copy_from_host(gpu, &raw)
    }

    /// (elements of one row or column in storage order, number of them).
    fn inner_outer(&self) -> (usize, usize) {
        match self.layout {
            DenseLayout::RowMajor => (self.cols, self.rows),
            DenseLayout::ColMajor => (self.rows, self.cols),
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Storage order.
    pub fn layout(&self) -> DenseLayout {
        self.layout
    }
    /// Leading dimension (elements between consecutive rows of a row-major
    /// matrix, columns of a column-major one).
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// [`RtError::ForeignOperand`] (naming `what`) unless this matrix belongs
    /// to `gpu`; inside a capture it also pins the matrix into the graph.
    pub fn check_gpu(&self, gpu: &Gpu, what: &'static str) -> Result<(), RtError> {
        self.data.check_gpu(gpu, what)
    }

    /// The device buffer (at least one element, and at least the elements
    /// its shape occupies).
    pub(crate) fn as_slice(&self) -> &CudaSlice<T> {
        self.data.as_slice()
    }

    /// The device buffer, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut CudaSlice<T> {
        self.data.as_mut_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_name_and_index() {
        assert_eq!(DenseLayout::parse("row-major"), Some(DenseLayout::RowMajor));
        assert_eq!(DenseLayout::parse("col-major"), Some(DenseLayout::ColMajor));
        assert_eq!(DenseLayout::parse("rowmajor"), None);
        assert_eq!(
            serde_json::to_string(&DenseLayout::ColMajor).unwrap(),
            "\"col-major\""
        );
        assert_eq!(DenseLayout::RowMajor.index(2, 1, 5), 11);
        assert_eq!(DenseLayout::ColMajor.index(2, 1, 5), 7);
        assert_eq!(DenseLayout::RowMajor.packed_ld(3, 4), 4);
        assert_eq!(DenseLayout::ColMajor.packed_ld(3, 4), 3);
    }

    #[test]
    fn shapes_are_checked_without_a_gpu() {
        use DenseLayout::*;
        assert_eq!(dense_len(3, 4, RowMajor, 4).unwrap(), 12);
        assert_eq!(dense_len(3, 4, RowMajor, 6).unwrap(), 16);
        assert_eq!(dense_len(3, 4, ColMajor, 3).unwrap(), 12);
        assert_eq!(dense_len(0, 4, RowMajor, 4).unwrap(), 0);
        assert_eq!(dense_len(5, 0, RowMajor, 1).unwrap(), 0);
        assert_eq!(dense_len(0, 5, ColMajor, 1).unwrap(), 0);
        assert!(dense_len(3, 4, RowMajor, 3).is_err());
        assert!(dense_len(3, 4, ColMajor, 2).is_err());
        assert!(dense_len(i32::MAX as usize, 1, RowMajor, 1).is_err());
        assert!(dense_len(1, 1, RowMajor, i32::MAX as usize).is_err());
    }
}
