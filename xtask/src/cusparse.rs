//! A thin cuSPARSE `cusparseSpMV` wrapper for the benchmark.
//!
//! The matrix descriptor, the `x`/`y` vector descriptors (several rotated
//! copies) and one work buffer per algorithm are created once; a launch only
//! enqueues `cusparseSpMV` on the [`Gpu`]'s stream. cudarc loads libcusparse
//! dynamically and panics on a missing library or symbol, so
//! [`library_status`] must succeed before anything else here is used, and
//! optional symbols are looked up before they are called.

use anyhow::{Context, Result, anyhow, bail};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use sparserl_rt::{DeviceCsr, Gpu, Scalar, ValueType};
use std::ffi::c_void;

/// The CSR algorithms of `cusparseSpMV`, in the order they are tried.
pub const ALGS: [Alg; 3] = [Alg::Default, Alg::CsrAlg1, Alg::CsrAlg2];

/// One `cusparseSpMV` algorithm for CSR matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alg {
    /// `CUSPARSE_SPMV_ALG_DEFAULT`.
    Default,
    /// `CUSPARSE_SPMV_CSR_ALG1`.
    CsrAlg1,
    /// `CUSPARSE_SPMV_CSR_ALG2`.
    CsrAlg2,
}

impl Alg {
    /// The cuSPARSE enumerator name.
    pub fn name(self) -> &'static str {
        match self {
            Alg::Default => "CUSPARSE_SPMV_ALG_DEFAULT",
            Alg::CsrAlg1 => "CUSPARSE_SPMV_CSR_ALG1",
            Alg::CsrAlg2 => "CUSPARSE_SPMV_CSR_ALG2",
        }
    }

    pub(crate) fn raw(self) -> sys::cusparseSpMVAlg_t {
        match self {
            Alg::Default => sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT,
            Alg::CsrAlg1 => sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1,
            Alg::CsrAlg2 => sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG2,
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Alg::Default => 0,
            Alg::CsrAlg1 => 1,
            Alg::CsrAlg2 => 2,
        }
    }
}

/// Shared-library names cudarc tries for cuSPARSE.
pub fn library_candidates() -> Vec<String> {
    cudarc::get_lib_name_candidates("cusparse")
}

/// Checks that libcusparse can be loaded; the error names the library and
/// `LD_LIBRARY_PATH`.
pub fn library_status() -> Result<()> {
    // SAFETY: `is_culib_present` only tries to open the library with the
    // platform loader and drops it again; no cuSPARSE function is called.
    let present = unsafe { sys::is_culib_present() };
    if present {
        return Ok(());
    }
    bail!(
        "cannot load the cuSPARSE library (libcusparse; tried {:?}): add the directory that \
         holds it (for example the CUDA toolkit's lib64) to LD_LIBRARY_PATH (currently {:?})",
        library_candidates(),
        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
    )
}

/// A cuSPARSE CSR descriptor of `a`'s device arrays (32-bit indices, base
/// zero). The caller destroys it with `cusparseDestroySpMat` before `a` is
/// dropped, and uses it on `a`'s stream only.
pub(crate) fn csr_descriptor<T: Scalar>(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    a: &DeviceCsr<T>,
) -> Result<sys::cusparseSpMatDescr_t> {
    let mut mat: sys::cusparseSpMatDescr_t = std::ptr::null_mut();
    // SAFETY: used on the matrix's own stream, read only, by descriptors the
    // caller destroys before the matrix is dropped.
    let (ip, ix, vs) = unsafe { a.raw_csr() };
    let (rp, _g1) = ip.device_ptr(stream);
    let (ci, _g2) = ix.device_ptr(stream);
    let (va, _g3) = vs.device_ptr(stream);
    // SAFETY: the three device arrays belong to `a`, hold rows + 1 / nnz / nnz
    // valid entries (indices and values are padded to at least one element),
    // and cuSPARSE only reads them during SpMV.
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
                sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                data_type(T::TYPE),
            )
        },
        "cusparseCreateCsr",
    )?;
    Ok(mat)
}

/// Whether the loaded libcusparse exports `symbol`.
pub(crate) fn has_symbol(symbol: &str) -> bool {
    // SAFETY: callers run `library_status` first, so `culib` finds the library
    // and does not panic; looking up a symbol does not call it, and the
    // function-pointer type is never used to call anything.
    unsafe {
        sys::culib()
            .get::<unsafe extern "C" fn()>(symbol.as_bytes())
            .is_ok()
    }
}

pub(crate) fn check(status: sys::cusparseStatus_t, what: &str) -> Result<()> {
    if status == sys::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(anyhow!("{what} failed: {status:?}"))
    }
}

pub(crate) fn data_type(v: ValueType) -> sys::cudaDataType {
    match v {
        ValueType::F32 => sys::cudaDataType::CUDA_R_32F,
        ValueType::F64 => sys::cudaDataType::CUDA_R_64F,
    }
}

/// `y = A x` through `cusparseSpMV` for one uploaded CSR matrix.
pub struct CusparseSpmv<'a, T: Scalar> {
    gpu: Gpu,
    a: &'a DeviceCsr<T>,
    handle: sys::cusparseHandle_t,
    mat: sys::cusparseSpMatDescr_t,
    xs: Vec<CudaSlice<T>>,
    ys: Vec<CudaSlice<T>>,
    x_descr: Vec<sys::cusparseDnVecDescr_t>,
    y_descr: Vec<sys::cusparseDnVecDescr_t>,
    /// Work buffer per algorithm once prepared (index = `Alg::index`).
    work: [Option<CudaSlice<u8>>; 3],
    preprocess: bool,
    next: usize,
}

impl<'a, T: Scalar> CusparseSpmv<'a, T> {
    /// Creates the handle (bound to the Gpu's stream) and the descriptors;
    /// every one of the `copies` `x` vectors holds `x`.
    pub fn new(gpu: &Gpu, a: &'a DeviceCsr<T>, x: &[T], copies: usize) -> Result<Self> {
        library_status()?;
        anyhow::ensure!(x.len() == a.cols(), "x must have cols entries");
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { gpu.context() }
            .bind_to_thread()
            .context("binding the CUDA context")?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { gpu.stream() };
        let mut handle: sys::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: the library is loaded (checked above); `handle` is a valid
        // out-pointer.
        check(
            unsafe { sys::cusparseCreate(&mut handle) },
            "cusparseCreate",
        )?;
        let mut me = CusparseSpmv {
            gpu: gpu.clone(),
            a,
            handle,
            mat: std::ptr::null_mut(),
            xs: Vec::new(),
            ys: Vec::new(),
            x_descr: Vec::new(),
            y_descr: Vec::new(),
            work: [None, None, None],
            preprocess: has_symbol("cusparseSpMV_preprocess"),
            next: 0,
        };
        // SAFETY: `handle` is a live handle; the stream belongs to the
        // current context and outlives the handle (the Gpu is held by `me`).
        check(
            unsafe { sys::cusparseSetStream(me.handle, stream.cu_stream() as sys::cudaStream_t) },
            "cusparseSetStream",
        )?;
        let value = data_type(T::TYPE);
        me.mat = csr_descriptor(stream, a)?;
        for _ in 0..copies.max(1) {
            let xb = stream.clone_htod(x).context("uploading x")?;
            let yb = stream
                .alloc_zeros::<T>(a.rows().max(1))
                .context("allocating y")?;
            me.xs.push(xb);
            me.ys.push(yb);
        }
        for i in 0..me.xs.len() {
            let mut xd: sys::cusparseDnVecDescr_t = std::ptr::null_mut();
            let mut yd: sys::cusparseDnVecDescr_t = std::ptr::null_mut();
            let (xp, _gx) = me.xs[i].device_ptr(stream);
            // SAFETY: `xs[i]` holds cols elements and lives as long as `me`
            // (descriptors are destroyed in Drop before the buffers are freed).
            check(
                unsafe {
                    sys::cusparseCreateDnVec(&mut xd, a.cols() as i64, xp as *mut c_void, value)
                },
                "cusparseCreateDnVec(x)",
            )?;
            me.x_descr.push(xd);
            let (yp, _gy) = me.ys[i].device_ptr_mut(stream);
            // SAFETY: as above, `ys[i]` holds at least rows elements.
            check(
                unsafe {
                    sys::cusparseCreateDnVec(&mut yd, a.rows() as i64, yp as *mut c_void, value)
                },
                "cusparseCreateDnVec(y)",
            )?;
            me.y_descr.push(yd);
        }
        stream.synchronize().context("synchronizing after setup")?;
        Ok(me)
    }

    /// Whether `cusparseSpMV_preprocess` is available and used.
    pub fn uses_preprocess(&self) -> bool {
        self.preprocess
    }

    fn scalars() -> (T, T) {
        (T::from_f64(1.0), T::from_f64(0.0))
    }

    /// Queries and allocates the work buffer of `alg` and runs
    /// `cusparseSpMV_preprocess` when the library has it. Idempotent.
    pub fn prepare(&mut self, alg: Alg) -> Result<()> {
        if self.work[alg.index()].is_some() {
            return Ok(());
        }
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { self.gpu.context() }.bind_to_thread()?;
        let (alpha, beta) = Self::scalars();
        let value = data_type(T::TYPE);
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let mut size: usize = 0;
        // SAFETY: handle and descriptors are live; alpha/beta point to host
        // scalars of the compute type (default host pointer mode); `size` is a
        // valid out-pointer.
        check(
            unsafe {
                sys::cusparseSpMV_bufferSize(
                    self.handle,
                    op,
                    &alpha as *const T as *const c_void,
                    self.mat,
                    self.x_descr[0],
                    &beta as *const T as *const c_void,
                    self.y_descr[0],
                    value,
                    alg.raw(),
                    &mut size,
                )
            },
            &format!("cusparseSpMV_bufferSize({})", alg.name()),
        )?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut buf = stream
            .alloc_zeros::<u8>(size.max(1))
            .context("allocating the cuSPARSE work buffer")?;
        if self.preprocess {
            let (bp, _g) = buf.device_ptr_mut(&stream);
            // SAFETY: as for bufferSize; `bp` points to a device buffer of at
            // least the size cuSPARSE asked for, kept alive in `self.work`.
            check(
                unsafe {
                    sys::cusparseSpMV_preprocess(
                        self.handle,
                        op,
                        &alpha as *const T as *const c_void,
                        self.mat,
                        self.x_descr[0],
                        &beta as *const T as *const c_void,
                        self.y_descr[0],
                        value,
                        alg.raw(),
                        bp as *mut c_void,
                    )
                },
                &format!("cusparseSpMV_preprocess({})", alg.name()),
            )?;
        }
        stream.synchronize()?;
        self.work[alg.index()] = Some(buf);
        Ok(())
    }

    /// Enqueues `y_i = A x_i` with `alg` (prepared first) on the stream.
    pub fn launch(&mut self, alg: Alg, i: usize) -> Result<()> {
        self.prepare(alg)?;
        let i = i % self.xs.len();
        let (alpha, beta) = Self::scalars();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        let Some(buf) = self.work[alg.index()].as_mut() else {
            bail!("work buffer of {} missing", alg.name());
        };
        let (bp, _g) = buf.device_ptr_mut(&stream);
        // SAFETY: handle, matrix and vector descriptors are live and point to
        // buffers owned by `self` or by `self.a`; the work buffer was sized by
        // cusparseSpMV_bufferSize for this algorithm; alpha/beta are host
        // scalars read before the call returns.
        check(
            unsafe {
                sys::cusparseSpMV(
                    self.handle,
                    sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &alpha as *const T as *const c_void,
                    self.mat,
                    self.x_descr[i],
                    &beta as *const T as *const c_void,
                    self.y_descr[i],
                    data_type(T::TYPE),
                    alg.raw(),
                    bp as *mut c_void,
                )
            },
            &format!("cusparseSpMV({})", alg.name()),
        )
    }

    /// Enqueues one SpMV on the next rotated copy.
    pub fn launch_next(&mut self, alg: Alg) -> Result<()> {
        let i = self.next;
        self.next = self.next.wrapping_add(1);
        self.launch(alg, i)
    }

    /// Overwrites `y_0` (e.g. with NaN poison or zeros).
    pub fn set_y0(&mut self, data: &[T]) -> Result<()> {
        anyhow::ensure!(data.len() == self.a.rows(), "y must have rows entries");
        if !data.is_empty() {
            // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
            // Gpu, no sparserl-rt capture in progress, own work on own buffers).
            unsafe { self.gpu.stream() }
                .memcpy_htod(data, &mut self.ys[0])
                .context("writing y")?;
        }
        Ok(())
    }

    /// Reads `y_0` back (waits for queued work).
    pub fn read_y0(&self) -> Result<Vec<T>> {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let mut y = unsafe { self.gpu.stream() }
            .clone_dtoh(&self.ys[0])
            .context("reading y")?;
        y.truncate(self.a.rows());
        Ok(y)
    }
}

impl<T: Scalar> Drop for CusparseSpmv<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let _ = unsafe { self.gpu.stream() }.synchronize();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let _ = unsafe { self.gpu.context() }.bind_to_thread();
        for d in self.x_descr.drain(..).chain(self.y_descr.drain(..)) {
            // SAFETY: each descriptor was created by cusparseCreateDnVec and
            // is destroyed exactly once (drained); queued work has finished.
            unsafe { sys::cusparseDestroyDnVec(d) };
        }
        if !self.mat.is_null() {
            // SAFETY: created by cusparseCreateCsr, destroyed once.
            unsafe { sys::cusparseDestroySpMat(self.mat) };
        }
        if !self.handle.is_null() {
            // SAFETY: created by cusparseCreate, destroyed once, after every
            // descriptor that used it.
            unsafe { sys::cusparseDestroy(self.handle) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_are_distinct() {
        let names: std::collections::HashSet<_> = ALGS.iter().map(|a| a.name()).collect();
        assert_eq!(names.len(), 3);
        assert!(library_candidates().iter().any(|n| n.contains("cusparse")));
    }
}
