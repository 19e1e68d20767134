//! A thin cuSPARSE `cusparseSpMM` wrapper for the SpMM benchmark and the GCN
//! layer of `bench-app`: `Y = A X` for a CSR matrix `A` and dense `X`, `Y`
//! of `n` columns in one [`DenseLayout`].
//!
//! Created once per (matrix, width, layout): the handle (on the [`Gpu`]'s
//! stream), one CSR descriptor per algorithm (`cusparseSpMM_preprocess`
//! keeps its analysis with the matrix descriptor, so algorithms never share
//! one), the dense descriptors of several rotated `X`/`Y` copies, and per
//! algorithm one work buffer sized by `cusparseSpMM_bufferSize` and
//! preprocessed once. A launch only enqueues `cusparseSpMM`. An algorithm
//! that cuSPARSE refuses for a layout or value type is an error of
//! [`CusparseSpmm::prepare`] (the benchmark records it as skipped).
//! [`crate::cusparse::library_status`] must succeed before anything here is
//! used (cudarc panics on a missing library).

use crate::cusparse::{check, csr_descriptor, data_type, has_symbol, library_status};
use anyhow::{Context, Result, bail, ensure};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::{DeviceCsr, Gpu, Scalar};
use std::ffi::c_void;

/// The `cusparseSpMM` algorithms for CSR matrices, in the order they are tried.
pub const ALGS: [SpmmAlg; 4] = [
    SpmmAlg::Default,
    SpmmAlg::CsrAlg1,
    SpmmAlg::CsrAlg2,
    SpmmAlg::CsrAlg3,
];

/// One `cusparseSpMM` algorithm for CSR matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpmmAlg {
    /// `CUSPARSE_SPMM_ALG_DEFAULT`.
    Default,
    /// `CUSPARSE_SPMM_CSR_ALG1`.
    CsrAlg1,
    /// `CUSPARSE_SPMM_CSR_ALG2`.
    CsrAlg2,
    /// `CUSPARSE_SPMM_CSR_ALG3`.
    CsrAlg3,
}

impl SpmmAlg {
    /// The cuSPARSE enumerator name.
    pub fn name(self) -> &'static str {
        match self {
            SpmmAlg::Default => "CUSPARSE_SPMM_ALG_DEFAULT",
            SpmmAlg::CsrAlg1 => "CUSPARSE_SPMM_CSR_ALG1",
            SpmmAlg::CsrAlg2 => "CUSPARSE_SPMM_CSR_ALG2",
            SpmmAlg::CsrAlg3 => "CUSPARSE_SPMM_CSR_ALG3",
        }
    }

    /// The name without the `CUSPARSE_SPMM_` prefix (`CSR_ALG3`).
    pub fn short(self) -> &'static str {
        self.name()
            .strip_prefix("CUSPARSE_SPMM_")
            .unwrap_or(self.name())
    }

    fn raw(self) -> sys::cusparseSpMMAlg_t {
        match self {
            SpmmAlg::Default => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT,
            SpmmAlg::CsrAlg1 => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG1,
            SpmmAlg::CsrAlg2 => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG2,
            SpmmAlg::CsrAlg3 => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG3,
        }
    }

    fn index(self) -> usize {
        match self {
            SpmmAlg::Default => 0,
            SpmmAlg::CsrAlg1 => 1,
            SpmmAlg::CsrAlg2 => 2,
            SpmmAlg::CsrAlg3 => 3,
        }
    }
}

fn order(layout: DenseLayout) -> sys::cusparseOrder_t {
    match layout {
        DenseLayout::RowMajor => sys::cusparseOrder_t::CUSPARSE_ORDER_ROW,
        DenseLayout::ColMajor => sys::cusparseOrder_t::CUSPARSE_ORDER_COL,
    }
}

/// Leading dimension of a dense `rows x n` matrix stored tightly in `layout`.
pub fn leading_dim(rows: usize, n: usize, layout: DenseLayout) -> usize {
    match layout {
        DenseLayout::RowMajor => n.max(1),
        DenseLayout::ColMajor => rows.max(1),
    }
}

/// An algorithm's work buffer and whether it was preprocessed.
struct Prepared {
    buf: CudaSlice<u8>,
    preprocessed: bool,
}

/// `Y = A X` through `cusparseSpMM` for one uploaded CSR matrix, `n`
/// columns, one layout.
pub struct CusparseSpmm<'a, T: Scalar> {
    gpu: Gpu,
    a: &'a DeviceCsr<T>,
    n: usize,
    layout: DenseLayout,
    handle: sys::cusparseHandle_t,
    /// One CSR descriptor per algorithm (index = `SpmmAlg::index`).
    mats: [sys::cusparseSpMatDescr_t; 4],
    xs: Vec<CudaSlice<T>>,
    ys: Vec<CudaSlice<T>>,
    x_descr: Vec<sys::cusparseDnMatDescr_t>,
    y_descr: Vec<sys::cusparseDnMatDescr_t>,
    work: [Option<Prepared>; 4],
    /// Notes from preparing (a preprocess cuSPARSE refused, ...).
    notes: Vec<String>,
    next: usize,
}

impl<'a, T: Scalar> CusparseSpmm<'a, T> {
    /// Creates the handle (bound to the Gpu's stream) and the descriptors;
    /// each of the `copies` `X` buffers holds `x` (`a.cols() x n` in
    /// `layout`, tightly stored: see [`leading_dim`]).
    pub fn new(
        gpu: &Gpu,
        a: &'a DeviceCsr<T>,
        x: &[T],
        n: usize,
        layout: DenseLayout,
        copies: usize,
    ) -> Result<Self> {
        library_status()?;
        ensure!(n > 0, "SpMM needs at least one column");
        ensure!(
            x.len() == a.cols() * n,
            "X must have cols x n = {} entries, got {}",
            a.cols() * n,
            x.len()
        );
        a.check_gpu(gpu)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        unsafe { gpu.context() }
            .bind_to_thread()
            .context("binding the CUDA context")?;
        let mut handle: sys::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: the library is loaded (checked above); `handle` is a valid
        // out-pointer.
        check(
            unsafe { sys::cusparseCreate(&mut handle) },
            "cusparseCreate",
        )?;
        let mut me = CusparseSpmm {
            gpu: gpu.clone(),
            a,
            n,
            layout,
            handle,
            mats: [std::ptr::null_mut(); 4],
            xs: Vec::new(),
            ys: Vec::new(),
            x_descr: Vec::new(),
            y_descr: Vec::new(),
            work: [None, None, None, None],
            notes: Vec::new(),
            next: 0,
        };
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { gpu.stream() };
        // SAFETY: `handle` is live; the stream belongs to the current context
        // and outlives the handle (the Gpu is held by `me`, Drop destroys the
        // handle first).
        check(
            unsafe { sys::cusparseSetStream(me.handle, stream.cu_stream() as sys::cudaStream_t) },
            "cusparseSetStream",
        )?;
        for m in me.mats.iter_mut() {
            *m = csr_descriptor(stream, a)?;
        }
        for _ in 0..copies.max(1) {
            me.xs.push(stream.clone_htod(x).context("uploading X")?);
            let ys = stream
                .alloc_zeros::<T>((a.rows() * n).max(1))
                .context("allocating Y")?;
            me.ys.push(ys);
        }
        me.create_dense_descriptors()?;
        stream.synchronize().context("synchronizing after setup")?;
        Ok(me)
    }

    fn create_dense_descriptors(&mut self) -> Result<()> {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { self.gpu.stream() }.clone();
        let value = data_type(T::TYPE);
        let (xr, yr, n, layout) = (self.a.cols(), self.a.rows(), self.n, self.layout);
        // A `rows x n` descriptor over the buffer at `p` with this layout.
        let dn_mat = |rows: usize, p: u64, what: &str| -> Result<sys::cusparseDnMatDescr_t> {
            let mut d: sys::cusparseDnMatDescr_t = std::ptr::null_mut();
            // SAFETY: the buffer at `p` holds at least rows x n elements
            // stored with this leading dimension and lives as long as `self`
            // (descriptors are destroyed in Drop before the buffers are freed).
            let st = unsafe {
                sys::cusparseCreateDnMat(
                    &mut d,
                    rows as i64,
                    n as i64,
                    leading_dim(rows, n, layout) as i64,
                    p as *mut c_void,
                    value,
                    order(layout),
                )
            };
            check(st, what)?;
            Ok(d)
        };
        for i in 0..self.xs.len() {
            let (xp, _gx) = self.xs[i].device_ptr(&stream);
            let xd = dn_mat(xr, xp, "cusparseCreateDnMat(X)")?;
            self.x_descr.push(xd);
            let (yp, _gy) = self.ys[i].device_ptr_mut(&stream);
            let yd = dn_mat(yr, yp, "cusparseCreateDnMat(Y)")?;
            self.y_descr.push(yd);
        }
        Ok(())
    }

    /// The GPU whose stream the launches go to.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The layout of `X` and `Y`.
    pub fn layout(&self) -> DenseLayout {
        self.layout
    }

    /// `Y_0` (rows x n, tightly stored in the layout).
    pub fn y0(&self) -> &CudaSlice<T> {
        &self.ys[0]
    }

    /// Leading dimension of `Y`.
    pub fn ldy(&self) -> usize {
        leading_dim(self.a.rows(), self.n, self.layout)
    }

    /// Notes gathered while preparing algorithms.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether `alg` was prepared with `cusparseSpMM_preprocess`.
    pub fn preprocessed(&self, alg: SpmmAlg) -> bool {
        self.work[alg.index()]
            .as_ref()
            .is_some_and(|p| p.preprocessed)
    }

    fn scalars() -> (T, T) {
        (T::from_f64(1.0), T::from_f64(0.0))
    }

    const OP: sys::cusparseOperation_t = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;

    /// Queries and allocates the work buffer of `alg`, then runs
    /// `cusparseSpMM_preprocess` when the library has it (a refused
    /// preprocess is a note, the algorithm then runs without it). An error
    /// means cuSPARSE does not offer `alg` for this layout / value type.
    /// Idempotent.
    pub fn prepare(&mut self, alg: SpmmAlg) -> Result<()> {
        if self.work[alg.index()].is_some() {
            return Ok(());
        }
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        unsafe { self.gpu.context() }.bind_to_thread()?;
        let (alpha, beta) = Self::scalars();
        let mat = self.mats[alg.index()];
        let mut size: usize = 0;
        // SAFETY: handle and descriptors are live; alpha/beta point to host
        // scalars of the compute type (default host pointer mode); `size` is
        // a valid out-pointer.
        let st = unsafe {
            sys::cusparseSpMM_bufferSize(
                self.handle,
                Self::OP,
                Self::OP,
                &alpha as *const T as *const c_void,
                mat,
                self.x_descr[0],
                &beta as *const T as *const c_void,
                self.y_descr[0],
                data_type(T::TYPE),
                alg.raw(),
                &mut size,
            )
        };
        check(st, &format!("cusparseSpMM_bufferSize({})", alg.short()))?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut buf = stream
            .alloc_zeros::<u8>(size.max(1))
            .context("allocating the cuSPARSE work buffer")?;
        let mut preprocessed = false;
        if has_symbol("cusparseSpMM_preprocess") {
            let (bp, _g) = buf.device_ptr_mut(&stream);
            // SAFETY: as for bufferSize; `bp` points to a device buffer of at
            // least the size cuSPARSE asked for, kept alive in `self.work`
            // with the descriptor the analysis belongs to.
            let st = unsafe {
                sys::cusparseSpMM_preprocess(
                    self.handle,
                    Self::OP,
                    Self::OP,
                    &alpha as *const T as *const c_void,
                    mat,
                    self.x_descr[0],
                    &beta as *const T as *const c_void,
                    self.y_descr[0],
                    data_type(T::TYPE),
                    alg.raw(),
                    bp as *mut c_void,
                )
            };
            match check(st, &format!("cusparseSpMM_preprocess({})", alg.short())) {
                Ok(()) => preprocessed = true,
                Err(e) => self.notes.push(format!("{e:#}; run without it")),
            }
        }
        stream.synchronize()?;
        self.work[alg.index()] = Some(Prepared { buf, preprocessed });
        Ok(())
    }

    /// Enqueues `Y_i = A X_i` with `alg` (prepared first) on the stream.
    pub fn launch(&mut self, alg: SpmmAlg, i: usize) -> Result<()> {
        self.prepare(alg)?;
        let i = i % self.xs.len();
        let (alpha, beta) = Self::scalars();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { self.gpu.stream() }.clone();
        let mat = self.mats[alg.index()];
        let Some(p) = self.work[alg.index()].as_mut() else {
            bail!("work buffer of {} missing", alg.name());
        };
        let (bp, _g) = p.buf.device_ptr_mut(&stream);
        // SAFETY: handle, matrix and dense descriptors are live and point to
        // buffers owned by `self` or by `self.a`; the work buffer was sized
        // by cusparseSpMM_bufferSize for this algorithm and descriptor;
        // alpha/beta are host scalars read before the call returns.
        let st = unsafe {
            sys::cusparseSpMM(
                self.handle,
                Self::OP,
                Self::OP,
                &alpha as *const T as *const c_void,
                mat,
                self.x_descr[i],
                &beta as *const T as *const c_void,
                self.y_descr[i],
                data_type(T::TYPE),
                alg.raw(),
                bp as *mut c_void,
            )
        };
        check(st, &format!("cusparseSpMM({})", alg.short()))
    }

    /// Enqueues one SpMM on the next rotated copy.
    pub fn launch_next(&mut self, alg: SpmmAlg) -> Result<()> {
        let i = self.next;
        self.next = self.next.wrapping_add(1);
        self.launch(alg, i)
    }

    /// Fills `Y_0` with NaN (`poison`) or zeros, on the device.
    pub fn fill_y0(&mut self, poison: bool) -> Result<()> {
        if poison {
            crate::bench_spmm::rowerr::poison(&self.gpu, &mut self.ys[0])
        } else {
            // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
            let stream = unsafe { self.gpu.stream() }.clone();
            Ok(stream.memset_zeros(&mut self.ys[0])?)
        }
    }

    /// `X_0`, for a producer on the same stream (the GEMM of a GCN layer);
    /// its descriptor keeps pointing at it.
    pub fn x0_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.xs[0]
    }

    /// `Y_0`, for a consumer on the same stream (an epilogue kernel).
    pub fn y0_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.ys[0]
    }
}

impl<T: Scalar> Drop for CusparseSpmm<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let _ = unsafe { self.gpu.stream() }.synchronize();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let _ = unsafe { self.gpu.context() }.bind_to_thread();
        for d in self.x_descr.drain(..).chain(self.y_descr.drain(..)) {
            // SAFETY: each descriptor was created by cusparseCreateDnMat and
            // is destroyed exactly once (drained); queued work has finished.
            unsafe { sys::cusparseDestroyDnMat(d) };
        }
        for m in self.mats.iter_mut().filter(|m| !m.is_null()) {
            // SAFETY: created by cusparseCreateCsr, destroyed once (nulled).
            unsafe { sys::cusparseDestroySpMat(*m) };
            *m = std::ptr::null_mut();
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
    fn algorithms_are_distinct_and_named() {
        let names: std::collections::HashSet<_> = ALGS.iter().map(|a| a.name()).collect();
        assert_eq!(names.len(), ALGS.len());
        let idx: std::collections::HashSet<_> = ALGS.iter().map(|a| a.index()).collect();
        assert_eq!(idx.len(), ALGS.len());
        assert_eq!(SpmmAlg::CsrAlg3.short(), "CSR_ALG3");
    }

    #[test]
    fn leading_dimensions_follow_the_layout() {
        assert_eq!(leading_dim(10, 4, DenseLayout::RowMajor), 4);
        assert_eq!(leading_dim(10, 4, DenseLayout::ColMajor), 10);
        assert_eq!(leading_dim(0, 4, DenseLayout::ColMajor), 1);
    }
}
