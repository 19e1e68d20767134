//! [`DeviceLargeCsr`]: a [`LargeCsr`] on the device, its memory checked
//! before any allocation.

use super::LargeError;
use super::host::{LargeCsr, Offset, OffsetWidth, RowStats, csr_bytes};
use crate::device::{DeviceVec, Gpu, Scalar, check_owner};
use crate::pin::Shared;
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use std::fmt;
use std::sync::Arc;

/// Row pointers staged per host-to-device copy when they change width on
/// the way (the only host copy the upload makes: at most this many entries).
const STAGE: usize = 1 << 24;

/// Device row pointers of either width.
pub(crate) enum DeviceOffsets {
    /// 32-bit row pointers.
    U32(CudaSlice<u32>),
    /// 64-bit row pointers.
    U64(CudaSlice<u64>),
}

impl DeviceOffsets {
    fn num_bytes(&self) -> usize {
        match self {
            DeviceOffsets::U32(s) => s.num_bytes(),
            DeviceOffsets::U64(s) => s.num_bytes(),
        }
    }
}

/// The device memory an upload or a set of vectors needs, compared with
/// what the device has free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryNeed {
    /// Bytes needed.
    pub needed: u64,
    /// Bytes free before the allocation.
    pub free: u64,
    /// Device memory in all.
    pub total: u64,
}

impl MemoryNeed {
    /// `needed` bytes against `gpu`'s free memory: [`LargeError::DeviceMemory`]
    /// naming `what` when they do not fit. Allocates nothing.
    pub fn check(gpu: &Gpu, what: &'static str, needed: u64) -> Result<MemoryNeed, LargeError> {
        let (free, total) = gpu.mem_info()?;
        let (free, total) = (free as u64, total as u64);
        if needed > free {
            return Err(LargeError::DeviceMemory {
                what,
                needed,
                free,
                total,
            });
        }
        Ok(MemoryNeed {
            needed,
            free,
            total,
        })
    }
}

/// A CSR matrix on the device with `u32` or `u64` row pointers
/// ([`OffsetWidth::for_nnz`] of its nonzeros, whatever the host width),
/// `u32` column indices and values of `T`, plus the row-length statistics
/// its variant selection reads. Tied to the [`Gpu`] stream of its upload
/// like [`crate::DeviceCsr`]: launches with another `Gpu` are refused.
pub struct DeviceLargeCsr<T: Scalar> {
    rows: usize,
    cols: usize,
    nnz: usize,
    width: OffsetWidth,
    stats: RowStats,
    pub(crate) indptr: Shared<DeviceOffsets>,
    pub(crate) indices: Shared<CudaSlice<u32>>,
    pub(crate) values: Shared<CudaSlice<T>>,
    stream: Arc<CudaStream>,
}

impl<T: Scalar> fmt::Debug for DeviceLargeCsr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceLargeCsr")
            .field("value", &T::TYPE)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("nnz", &self.nnz)
            .field("offsets", &self.width)
            .finish_non_exhaustive()
    }
}

impl<T: Scalar> DeviceLargeCsr<T> {
    /// Device bytes an upload of a `rows`-row, `nnz`-nonzero matrix takes
    /// (the three arrays, row pointers at [`OffsetWidth::for_nnz`]).
    pub fn bytes_for(rows: u64, nnz: u64) -> u64 {
        csr_bytes::<T>(rows, nnz, OffsetWidth::for_nnz(nnz))
    }

    /// Uploads `a`: first its size against the device's free memory
    /// ([`LargeError::DeviceMemory`] before any allocation), then the three
    /// arrays, row pointers converted to the device width in staged chunks
    /// of at most 2^24 entries (the indices and values are copied as they
    /// are: no host copy of them).
    pub fn upload<O: Offset>(gpu: &Gpu, a: &LargeCsr<'_, O, T>) -> Result<Self, LargeError> {
        Self::upload_with(gpu, a, OffsetWidth::for_nnz(a.nnz() as u64))
    }

    /// [`Self::upload`] with row pointers of `width` whatever the size (64
    /// bits for a small matrix runs the 64-bit kernels on it, as checks
    /// do); 32 bits for 2^31 nonzeros or more is
    /// [`LargeCsrError::OffsetsTooNarrow`](super::LargeCsrError::OffsetsTooNarrow).
    pub fn upload_with<O: Offset>(
        gpu: &Gpu,
        a: &LargeCsr<'_, O, T>,
        width: OffsetWidth,
    ) -> Result<Self, LargeError> {
        if width == OffsetWidth::U32 && a.nnz() as u64 >= super::U32_OFFSET_LIMIT {
            return Err(super::LargeCsrError::OffsetsTooNarrow { nnz: a.nnz() }.into());
        }
        MemoryNeed::check(gpu, "the matrix", a.csr_bytes(width))?;
        let stats = RowStats::of(a);
        let s = gpu.outside_capture("DeviceLargeCsr::upload")?;
        let indptr = match width {
            OffsetWidth::U32 => DeviceOffsets::U32(staged(&s, a.indptr(), |o| o.get() as u32)?),
            OffsetWidth::U64 => DeviceOffsets::U64(staged(&s, a.indptr(), |o| o.get())?),
        };
        let indices = padded(&s, a.indices())?;
        let values = padded(&s, a.values())?;
        Ok(DeviceLargeCsr {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            width,
            stats,
            indptr: gpu.own(indptr),
            indices: gpu.own(indices),
            values: gpu.own(values),
            stream: s.clone(),
        })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Nonzeros.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// Row-pointer width on the device.
    pub fn offset_width(&self) -> OffsetWidth {
        self.width
    }
    /// Row-length statistics computed at upload.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }
    /// Device bytes of the three arrays.
    pub fn device_bytes(&self) -> usize {
        self.indptr.num_bytes() + self.indices.num_bytes() + self.values.num_bytes()
    }

    /// [`RtError::ForeignOperand`](crate::RtError::ForeignOperand) unless
    /// uploaded with `gpu`; pins the arrays inside a capture.
    pub fn check_gpu(&self, gpu: &Gpu) -> Result<(), LargeError> {
        check_owner(gpu, &self.stream, "the large matrix")?;
        gpu.pin(&self.indptr);
        gpu.pin(&self.indices);
        gpu.pin(&self.values);
        Ok(())
    }

    /// The device arrays, for another library (cuSPARSE) or a tool kernel:
    /// `(row pointers: u32 or u64, columns, values)`.
    ///
    /// # Safety
    /// As [`crate::DeviceCsr::raw_csr`]: use them only on this matrix's
    /// [`Gpu::stream`], never write them, and let no operation on them
    /// outlive the matrix.
    pub unsafe fn raw(&self) -> (RawOffsets<'_>, &CudaSlice<u32>, &CudaSlice<T>) {
        let ip = match &*self.indptr {
            DeviceOffsets::U32(s) => RawOffsets::U32(s),
            DeviceOffsets::U64(s) => RawOffsets::U64(s),
        };
        (ip, &self.indices, &self.values)
    }

    /// Checks `x` and `y` for `y = A x`: same `Gpu`, `cols` and `rows` entries.
    pub(crate) fn check_operands(
        &self,
        gpu: &Gpu,
        x: &DeviceVec<T>,
        y: &DeviceVec<T>,
    ) -> Result<(), LargeError> {
        self.check_gpu(gpu)?;
        x.check_gpu(gpu, "x")?;
        y.check_gpu(gpu, "y")?;
        if x.len() != self.cols {
            return Err(LargeError::DimensionMismatch {
                what: "x (must have cols entries)",
                expected: self.cols,
                found: x.len(),
            });
        }
        if y.len() != self.rows {
            return Err(LargeError::DimensionMismatch {
                what: "y (must have rows entries)",
                expected: self.rows,
                found: y.len(),
            });
        }
        Ok(())
    }
}

/// Borrowed device row pointers of either width ([`DeviceLargeCsr::raw`]).
#[derive(Debug, Clone, Copy)]
pub enum RawOffsets<'a> {
    /// 32-bit row pointers.
    U32(&'a CudaSlice<u32>),
    /// 64-bit row pointers.
    U64(&'a CudaSlice<u64>),
}

/// `data` converted by `f` into a new device buffer of the same length
/// (at least one element), through host staging chunks of [`STAGE`].
fn staged<S: Copy, D: DeviceRepr + ValidAsZeroBits + Copy>(
    s: &Arc<CudaStream>,
    data: &[S],
    f: impl Fn(S) -> D,
) -> Result<CudaSlice<D>, LargeError> {
    let mut out = s.alloc_zeros::<D>(data.len().max(1))?;
    let mut stage: Vec<D> = Vec::with_capacity(STAGE.min(data.len()));
    for (i, chunk) in data.chunks(STAGE).enumerate() {
        stage.clear();
        stage.extend(chunk.iter().map(|&v| f(v)));
        let lo = i * STAGE;
        let mut view = out.slice_mut(lo..lo + chunk.len());
        s.memcpy_htod(&stage, &mut view)?;
        // Reusing the stage is safe: a copy from pageable host memory returns
        // once the driver has staged the source (CUDA's API sync rules).
    }
    Ok(out)
}

/// `data` on the device, at least one element (CUDA allocates no zero bytes;
/// the padding is never read).
fn padded<D: DeviceRepr + ValidAsZeroBits + Copy>(
    s: &Arc<CudaStream>,
    data: &[D],
) -> Result<CudaSlice<D>, LargeError> {
    Ok(if data.is_empty() {
        s.alloc_zeros::<D>(1)?
    } else {
        s.clone_htod(data)?
    })
}
