//! Element-wise operations of the large path (64-bit lengths) and the
//! 64-bit index arrays another library reads (`spmv64.cu`).

use super::LargeError;
use super::device::{DeviceLargeCsr, DeviceOffsets, MemoryNeed};
use super::host::OffsetWidth;
use super::kernels::{BLOCK, function, widen_entry};
use crate::device::{DeviceVec, Gpu, Scalar};
use crate::pin::Shared;
use crate::variant::ValueType;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

/// A grid-stride geometry over `n` elements (at most 32 blocks per SM).
fn stride_grid(gpu: &Gpu, n: u64) -> LaunchConfig {
    let blocks = n
        .div_ceil(BLOCK as u64)
        .clamp(1, gpu.sm_count().max(1) as u64 * 32);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn same_len(what: &'static str, expected: usize, found: usize) -> Result<(), LargeError> {
    if expected == found {
        Ok(())
    } else {
        Err(LargeError::DimensionMismatch {
            what,
            expected,
            found,
        })
    }
}

/// `out[i] = x[i] * w[i]` (all of one length, any length up to the device's
/// memory).
pub fn scale<T: Scalar>(
    gpu: &Gpu,
    x: &DeviceVec<T>,
    w: &DeviceVec<T>,
    out: &mut DeviceVec<T>,
) -> Result<(), LargeError> {
    x.check_gpu(gpu, "x")?;
    w.check_gpu(gpu, "w")?;
    out.check_gpu(gpu, "out")?;
    same_len("w", x.len(), w.len())?;
    same_len("out", x.len(), out.len())?;
    let entry = match T::TYPE {
        ValueType::F32 => "sparserl_large_scale_f32",
        ValueType::F64 => "sparserl_large_scale_f64",
    };
    let func = function(gpu, entry)?;
    let n = x.len() as u64;
    let stream = gpu.enqueue("large::scale")?;
    let mut b = stream.launch_builder(&func);
    b.arg(&n)
        .arg(x.as_slice())
        .arg(w.as_slice())
        .arg(out.as_mut_slice());
    // SAFETY: (u64 n, const T* x, const T* w, T* out) as the entry declares,
    // T = `Scalar::TYPE`; all three hold n entries (checked) and belong to
    // this Gpu's stream (checked), which orders their frees after the launch.
    unsafe { b.launch(stride_grid(gpu, n)) }?;
    Ok(())
}

/// `out[i] = alpha y[i] + beta` (one length, any length).
pub fn axpb<T: Scalar>(
    gpu: &Gpu,
    alpha: T,
    y: &DeviceVec<T>,
    beta: T,
    out: &mut DeviceVec<T>,
) -> Result<(), LargeError> {
    y.check_gpu(gpu, "y")?;
    out.check_gpu(gpu, "out")?;
    same_len("out", y.len(), out.len())?;
    let entry = match T::TYPE {
        ValueType::F32 => "sparserl_large_axpb_f32",
        ValueType::F64 => "sparserl_large_axpb_f64",
    };
    let func = function(gpu, entry)?;
    let n = y.len() as u64;
    let stream = gpu.enqueue("large::axpb")?;
    let mut b = stream.launch_builder(&func);
    b.arg(&n)
        .arg(&alpha)
        .arg(y.as_slice())
        .arg(&beta)
        .arg(out.as_mut_slice());
    // SAFETY: (u64 n, T alpha, const T* y, T beta, T* out) as the entry
    // declares; y and out hold n entries and belong to this Gpu (checked).
    unsafe { b.launch(stride_grid(gpu, n)) }?;
    Ok(())
}

/// `out[i] = v` for every element (e.g. a NaN poison before a check).
pub fn fill<T: Scalar>(gpu: &Gpu, v: T, out: &mut DeviceVec<T>) -> Result<(), LargeError> {
    out.check_gpu(gpu, "out")?;
    let entry = match T::TYPE {
        ValueType::F32 => "sparserl_large_fill_f32",
        ValueType::F64 => "sparserl_large_fill_f64",
    };
    let func = function(gpu, entry)?;
    let n = out.len() as u64;
    let stream = gpu.enqueue("large::fill")?;
    let mut b = stream.launch_builder(&func);
    b.arg(&n).arg(&v).arg(out.as_mut_slice());
    // SAFETY: (u64 n, T v, T* out) as the entry declares; out holds n
    // entries and belongs to this Gpu (checked).
    unsafe { b.launch(stride_grid(gpu, n)) }?;
    Ok(())
}

/// 64-bit signed copies of a [`DeviceLargeCsr`]'s index arrays, for a
/// library that takes 64-bit row offsets and column indices together
/// (cuSPARSE's `CUSPARSE_INDEX_64I`). Row offsets are copied only when the
/// matrix holds them as `u32`; `u64` ones are read in place (same bits for
/// values below 2^63).
pub struct Index64 {
    indptr: Option<Shared<CudaSlice<i64>>>,
    indices: Shared<CudaSlice<i64>>,
}

impl Index64 {
    /// Device bytes [`Index64::build`] allocates for `a`.
    pub fn bytes_for<T: Scalar>(a: &DeviceLargeCsr<T>) -> u64 {
        let ptr = match a.offset_width() {
            OffsetWidth::U32 => (a.rows() as u64 + 1) * 8,
            OffsetWidth::U64 => 0,
        };
        ptr + a.nnz().max(1) as u64 * 8
    }

    /// Widens `a`'s indices (and `u32` row pointers) on the device, after
    /// checking the device's free memory ([`LargeError::DeviceMemory`]).
    pub fn build<T: Scalar>(gpu: &Gpu, a: &DeviceLargeCsr<T>) -> Result<Index64, LargeError> {
        a.check_gpu(gpu)?;
        MemoryNeed::check(gpu, "64-bit index copies", Self::bytes_for(a))?;
        let indices = widen(gpu, &a.indices, a.nnz().max(1))?;
        let indptr = match &*a.indptr {
            DeviceOffsets::U32(p) => Some(widen(gpu, p, a.rows() + 1)?),
            DeviceOffsets::U64(_) => None,
        };
        gpu.synchronize()?;
        Ok(Index64 {
            indptr: indptr.map(|p| gpu.own(p)),
            indices: gpu.own(indices),
        })
    }

    /// The widened row offsets, or `None` when the matrix's own `u64` ones
    /// serve.
    pub fn indptr(&self) -> Option<&CudaSlice<i64>> {
        self.indptr.as_deref()
    }

    /// The widened column indices.
    pub fn indices(&self) -> &CudaSlice<i64> {
        &self.indices
    }
}

/// `n` elements of `src` (a `u32` buffer) as a new `i64` buffer.
fn widen(gpu: &Gpu, src: &CudaSlice<u32>, n: usize) -> Result<CudaSlice<i64>, LargeError> {
    let func = function(gpu, widen_entry(OffsetWidth::U32))?;
    let stream = gpu.outside_capture("large::Index64::build")?;
    let mut dst = stream.alloc_zeros::<i64>(n.max(1))?;
    let n64 = n as u64;
    let mut b = stream.launch_builder(&func);
    b.arg(&n64).arg(src).arg(&mut dst);
    // SAFETY: (u64 n, const u32* src, long long* dst) as the u32 widening
    // entry declares; src holds at least n
    // entries (the matrix's indices, nnz or one padding element, or its
    // rows + 1 row pointers) and dst n; both on this Gpu's stream.
    unsafe { b.launch(stride_grid(gpu, n64)) }?;
    Ok(dst)
}
