//! The device buffers of dense operands, for handing to another library
//! (cuBLAS, cuSPARSE) or a tool kernel, as [`DeviceCsr::raw_csr`] does for
//! matrices.
//!
//! [`DeviceCsr::raw_csr`]: crate::DeviceCsr::raw_csr

use crate::dense::DeviceDense;
use crate::device::{DeviceVec, Scalar};
use cudarc::driver::CudaSlice;

impl<T: Scalar> DeviceDense<T> {
    /// The device buffer (at least one element, and at least the elements
    /// the shape occupies at its leading dimension).
    ///
    /// # Safety
    /// Device memory is tracked by stream order only: the caller must use
    /// the buffer only on this matrix's [`Gpu`](crate::Gpu) stream and must
    /// not let any operation on it outlive the matrix.
    pub unsafe fn raw(&self) -> &CudaSlice<T> {
        self.as_slice()
    }

    /// The device buffer, for writing (see [`DeviceDense::raw`]).
    ///
    /// # Safety
    /// As for [`DeviceDense::raw`]; writes keep the matrix's shape.
    pub unsafe fn raw_mut(&mut self) -> &mut CudaSlice<T> {
        self.as_mut_slice()
    }
}

impl<T: Scalar> DeviceVec<T> {
    /// The device buffer (at least one element; the first `len` are the
    /// vector).
    ///
    /// # Safety
    /// As for [`DeviceDense::raw`], on this vector's stream.
    pub unsafe fn raw(&self) -> &CudaSlice<T> {
        self.as_slice()
    }

    /// The device buffer, for another library to write (see
    /// [`DeviceVec::raw`]).
    ///
    /// # Safety
    /// As for [`DeviceVec::raw`]; writes stay within the buffer.
    pub unsafe fn raw_mut(&mut self) -> &mut CudaSlice<T> {
        self.as_mut_slice()
    }
}
