//! cuSPARSE's side of the scale set: `cusparseSpMV` on the large upload's
//! own arrays with 32-bit index types where the matrix fits them, and with
//! 64-bit ones (`CUSPARSE_INDEX_64I` row offsets and columns, the columns
//! widened on the device by [`Index64`]). As `crate::cusparse`: the library
//! is checked loadable first, descriptors and work buffers are created once
//! per algorithm, `cusparseSpMV_preprocess` is used when present.
//!
//! Past 2^31 nonzeros: cuSPARSE documents `CUSPARSE_INDEX_64I` for
//! `cusparseSpMV` (docs.nvidia.com/cuda/cusparse, cusparseSpMV), but users
//! report `CUSPARSE_STATUS_INTERNAL_ERROR` there: JuliaGPU/CUDA.jl#2555
//! (SpMM / SpMV from 2^31 - 127 nonzeros on an H100, CUDA 12.4) and
//! cupy/cupy#9490 (64-bit SpMV / SpMM fail at 2^31 + 2^20 nonzeros with
//! cuSPARSE 12.5.4 and succeed with 12.8.0). Our first scale run saw the
//! error from `cusparseSpMV_preprocess` for all three algorithms on R-MAT
//! scale 28 (4.26e9 nonzeros). So when preprocessing fails, the error is
//! recorded, the matrix descriptor is created again and the algorithm runs
//! as plain `cusparseSpMV` on the `cusparseSpMV_bufferSize` buffer; its
//! output is checked against float64 like every other run, and a failure
//! of the plain call is reported as such ([`library_version`] names the
//! library that ran).

use crate::cusparse::{Alg, check, data_type, has_symbol, library_status};
use anyhow::{Context, Result, anyhow, bail};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use sparserl_rt::large::ops::Index64;
use sparserl_rt::large::{DeviceLargeCsr, MemoryNeed, RawOffsets};
use sparserl_rt::{DeviceVec, Gpu};
use std::ffi::c_void;

/// Index types of a cuSPARSE run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IndexBits {
    /// `CUSPARSE_INDEX_32I` offsets and columns (our own arrays read as `int`).
    #[serde(rename = "32")]
    I32,
    /// `CUSPARSE_INDEX_64I` offsets and columns.
    #[serde(rename = "64")]
    I64,
}

/// `y = A x` through `cusparseSpMV` on a [`DeviceLargeCsr`].
pub struct LargeCusparse<'a> {
    gpu: Gpu,
    handle: sys::cusparseHandle_t,
    mat: sys::cusparseSpMatDescr_t,
    xd: sys::cusparseDnVecDescr_t,
    yd: sys::cusparseDnVecDescr_t,
    work: [Option<CudaSlice<u8>>; 3],
    preprocess: bool,
    /// Per algorithm: whether `cusparseSpMV_preprocess` ran, or its error.
    preprocessed: [Option<std::result::Result<(), String>>; 3],
    bits: IndexBits,
    x: DeviceVec<f32>,
    y: DeviceVec<f32>,
    _a: &'a DeviceLargeCsr<f32>,
    _index: Option<&'a Index64>,
}

impl<'a> LargeCusparse<'a> {
    /// Descriptors over `a` (with `index`'s 64-bit arrays for
    /// [`IndexBits::I64`]) and the vectors `x`, `y`, owned from here on (their
    /// buffers stay where the descriptors point).
    pub fn new(
        gpu: &Gpu,
        a: &'a DeviceLargeCsr<f32>,
        bits: IndexBits,
        index: Option<&'a Index64>,
        x: DeviceVec<f32>,
        mut y: DeviceVec<f32>,
    ) -> Result<Self> {
        library_status()?;
        anyhow::ensure!(x.len() == a.cols() && y.len() == a.rows(), "x / y lengths");
        a.check_gpu(gpu)?;
        x.check_gpu(gpu, "x")?;
        y.check_gpu(gpu, "y")?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread
        // per Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { gpu.context() }.bind_to_thread()?;
        // SAFETY: as above.
        let stream = unsafe { gpu.stream() }.clone();
        let mut handle: sys::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: the library is loaded (checked above); a valid out-pointer.
        check(
            unsafe { sys::cusparseCreate(&mut handle) },
            "cusparseCreate",
        )?;
        let mut me = LargeCusparse {
            gpu: gpu.clone(),
            handle,
            mat: std::ptr::null_mut(),
            xd: std::ptr::null_mut(),
            yd: std::ptr::null_mut(),
            work: [None, None, None],
            preprocess: has_symbol("cusparseSpMV_preprocess"),
            preprocessed: [None, None, None],
            bits,
            x: DeviceVec::zeros(gpu, 0)?,
            y: DeviceVec::zeros(gpu, 0)?,
            _a: a,
            _index: index,
        };
        // SAFETY: a live handle; the stream outlives it (the Gpu is held).
        check(
            unsafe { sys::cusparseSetStream(me.handle, stream.cu_stream() as sys::cudaStream_t) },
            "cusparseSetStream",
        )?;
        // SAFETY: x and y are used on this stream only and are owned by the
        // value the descriptors belong to (destroyed first, in Drop);
        // cuSPARSE reads x and writes y.
        let (xp, _gx) = unsafe { x.raw() }.device_ptr(&stream);
        // SAFETY: as above.
        let (yp, _gy) = unsafe { y.raw_mut() }.device_ptr_mut(&stream);
        drop((_gx, _gy));
        me.x = x;
        me.y = y;
        me.mat = matrix(&stream, a, bits, index)?;
        let value = data_type(sparserl_rt::ValueType::F32);
        // SAFETY: x holds cols elements, y rows; valid out-pointers.
        check(
            unsafe {
                sys::cusparseCreateDnVec(&mut me.xd, a.cols() as i64, xp as *mut c_void, value)
            },
            "cusparseCreateDnVec(x)",
        )?;
        // SAFETY: as above.
        check(
            unsafe {
                sys::cusparseCreateDnVec(&mut me.yd, a.rows() as i64, yp as *mut c_void, value)
            },
            "cusparseCreateDnVec(y)",
        )?;
        Ok(me)
    }

    /// The input vector (writable: its buffer stays where the descriptor
    /// points).
    pub fn x_mut(&mut self) -> &mut DeviceVec<f32> {
        &mut self.x
    }

    /// The output vector and the input, for a check or an iteration's
    /// vector kernels.
    pub fn vectors(&mut self) -> (&mut DeviceVec<f32>, &mut DeviceVec<f32>) {
        (&mut self.x, &mut self.y)
    }

    /// Work buffer (memory checked first) and preprocessing of `alg`, once.
    pub fn prepare(&mut self, alg: Alg) -> Result<()> {
        if self.work[alg.index()].is_some() {
            return Ok(());
        }
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        unsafe { self.gpu.context() }.bind_to_thread()?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let value = data_type(sparserl_rt::ValueType::F32);
        let mut size = 0usize;
        // SAFETY: live handle and descriptors; host scalars; out-pointer.
        check(
            unsafe {
                sys::cusparseSpMV_bufferSize(
                    self.handle,
                    op,
                    &alpha as *const f32 as *const c_void,
                    self.mat,
                    self.xd,
                    &beta as *const f32 as *const c_void,
                    self.yd,
                    value,
                    alg.raw(),
                    &mut size,
                )
            },
            &format!("cusparseSpMV_bufferSize({})", alg.name()),
        )?;
        MemoryNeed::check(&self.gpu, "the cuSPARSE work buffer", size as u64)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut buf = stream.alloc_zeros::<u8>(size.max(1))?;
        if self.preprocess {
            let (bp, _g) = buf.device_ptr_mut(&stream);
            // SAFETY: as bufferSize; the buffer has the size asked for and
            // is kept in `self.work` for every later call.
            let pre = check(
                unsafe {
                    sys::cusparseSpMV_preprocess(
                        self.handle,
                        op,
                        &alpha as *const f32 as *const c_void,
                        self.mat,
                        self.xd,
                        &beta as *const f32 as *const c_void,
                        self.yd,
                        value,
                        alg.raw(),
                        bp as *mut c_void,
                    )
                },
                &format!("cusparseSpMV_preprocess({})", alg.name()),
            );
            drop(_g);
            if pre.is_err() {
                // A fresh descriptor for the plain call (the failed one may
                // hold partial preprocessing state).
                stream.synchronize()?;
                self.rebuild_matrix()?;
            }
            self.preprocessed[alg.index()] = Some(pre.map_err(|e| format!("{e:#}")));
        }
        stream.synchronize()?;
        self.work[alg.index()] = Some(buf);
        Ok(())
    }

    /// Whether `alg` was preprocessed: `None` when it was not tried (the
    /// library has no `cusparseSpMV_preprocess`, or `alg` is unprepared),
    /// else the outcome (its error when it failed and the plain call ran).
    pub fn preprocess_outcome(&self, alg: Alg) -> Option<std::result::Result<(), String>> {
        self.preprocessed[alg.index()].clone()
    }

    /// Destroys the matrix descriptor and creates it again over the same
    /// arrays.
    fn rebuild_matrix(&mut self) -> Result<()> {
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let stream = unsafe { self.gpu.stream() }.clone();
        if !self.mat.is_null() {
            // SAFETY: created by cusparseCreateCsr, destroyed once; no work
            // on it is queued (the stream was synchronized).
            unsafe { sys::cusparseDestroySpMat(self.mat) };
            self.mat = std::ptr::null_mut();
        }
        self.mat = matrix(&stream, self._a, self.bits, self._index)?;
        Ok(())
    }

    /// Enqueues `y = A x` with `alg` (prepared first).
    pub fn launch(&mut self, alg: Alg) -> Result<()> {
        self.prepare(alg)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let stream = unsafe { self.gpu.stream() }.clone();
        let buf = self.work[alg.index()]
            .as_mut()
            .ok_or_else(|| anyhow!("work buffer of {} missing", alg.name()))?;
        let (bp, _g) = buf.device_ptr_mut(&stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: live handle and descriptors over buffers that outlive
        // `self`; the work buffer sized by bufferSize for this algorithm.
        check(
            unsafe {
                sys::cusparseSpMV(
                    self.handle,
                    sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &alpha as *const f32 as *const c_void,
                    self.mat,
                    self.xd,
                    &beta as *const f32 as *const c_void,
                    self.yd,
                    data_type(sparserl_rt::ValueType::F32),
                    alg.raw(),
                    bp as *mut c_void,
                )
            },
            &format!("cusparseSpMV({})", alg.name()),
        )
    }
}

/// The loaded cuSPARSE's version (`major.minor.patch`), `None` when the
/// library cannot be loaded or does not answer.
pub fn library_version() -> Option<String> {
    library_status().ok()?;
    let mut parts = [0i32; 3];
    for (p, kind) in parts.iter_mut().zip([
        sys::libraryPropertyType::MAJOR_VERSION,
        sys::libraryPropertyType::MINOR_VERSION,
        sys::libraryPropertyType::PATCH_LEVEL,
    ]) {
        // SAFETY: the library is loaded (checked above); a valid out-pointer.
        let st = unsafe { sys::cusparseGetProperty(kind, p) };
        if st != sys::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
            return None;
        }
    }
    Some(format!("{}.{}.{}", parts[0], parts[1], parts[2]))
}

/// The CSR descriptor of `a` with `bits` index types.
fn matrix(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    a: &DeviceLargeCsr<f32>,
    bits: IndexBits,
    index: Option<&Index64>,
) -> Result<sys::cusparseSpMatDescr_t> {
    // SAFETY: read only, on the matrix's stream, by a descriptor destroyed
    // (in Drop) before the matrix and `index` (borrowed for as long).
    let (ip, ix, vs) = unsafe { a.raw() };
    let (va, _g3) = vs.device_ptr(stream);
    let (rp, ci, kind, _g1, _g2) = match (bits, ip, index) {
        (IndexBits::I32, RawOffsets::U32(p), _) => {
            anyhow::ensure!(a.cols() < (1 << 31), "columns past i32");
            let (rp, g1) = p.device_ptr(stream);
            let (ci, g2) = ix.device_ptr(stream);
            (
                rp,
                ci,
                sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                Some(g1),
                Some(g2),
            )
        }
        (IndexBits::I32, RawOffsets::U64(_), _) => bail!("64-bit offsets: no 32-bit cuSPARSE run"),
        (IndexBits::I64, p, Some(w)) => {
            let rp = match (w.indptr(), p) {
                (Some(wide), _) => wide.device_ptr(stream).0,
                (None, RawOffsets::U64(own)) => own.device_ptr(stream).0,
                (None, RawOffsets::U32(_)) => bail!("u32 offsets without a widened copy"),
            };
            let (ci, _) = w.indices().device_ptr(stream);
            (
                rp,
                ci,
                sys::cusparseIndexType_t::CUSPARSE_INDEX_64I,
                None,
                None,
            )
        }
        (IndexBits::I64, _, None) => bail!("64-bit cuSPARSE run without 64-bit index copies"),
    };
    let mut mat: sys::cusparseSpMatDescr_t = std::ptr::null_mut();
    // SAFETY: the arrays hold rows + 1 offsets and nnz columns and values of
    // the index type named (u32 offsets below 2^31 and columns below 2^31
    // read as int are the same bits; u64 offsets below 2^63 as int64), and
    // live as long as the descriptor; cuSPARSE only reads them.
    check(
        unsafe {
            sys::cusparseCreateCsr(
                &mut mat,
                a.rows() as i64,
                a.cols() as i64,
                a.nnz() as i64,
                rp as *mut c_void,
                ci as *mut c_void,
                va as *mut c_void,
                kind,
                kind,
                sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                data_type(sparserl_rt::ValueType::F32),
            )
        },
        "cusparseCreateCsr",
    )
    .context("creating the cuSPARSE matrix")?;
    Ok(mat)
}

impl Drop for LargeCusparse<'_> {
    fn drop(&mut self) {
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let _ = unsafe { self.gpu.stream() }.synchronize();
        // SAFETY: as above.
        let _ = unsafe { self.gpu.context() }.bind_to_thread();
        for d in [self.xd, self.yd] {
            if !d.is_null() {
                // SAFETY: created by cusparseCreateDnVec, destroyed once; the
                // queued work has finished.
                unsafe { sys::cusparseDestroyDnVec(d) };
            }
        }
        if !self.mat.is_null() {
            // SAFETY: created by cusparseCreateCsr, destroyed once.
            unsafe { sys::cusparseDestroySpMat(self.mat) };
        }
        if !self.handle.is_null() {
            // SAFETY: created by cusparseCreate, destroyed once, last.
            unsafe { sys::cusparseDestroy(self.handle) };
        }
    }
}
