//! cuSPARSE: one CSR matrix with `cusparseSpMV` prepared for a set of vectors.

use super::*;

/// One CSR matrix with `cusparseSpMV` prepared for a set of dense vectors.
///
/// The descriptors hold raw addresses of the matrix arrays and vectors; the
/// owner keeps those alive and unmoved-in-device-memory for the plan's
/// lifetime (device allocations never move) and drops the plan first.
pub(super) struct SpmvPlan<T: Scalar> {
    gpu: Gpu,
    handle: sp::cusparseHandle_t,
    mat: sp::cusparseSpMatDescr_t,
    vecs: Vec<sp::cusparseDnVecDescr_t>,
    buffer: Option<CudaSlice<u8>>,
    pub(super) preprocess: bool,
    _t: PhantomData<T>,
}

impl<T: Scalar> SpmvPlan<T> {
    pub(super) fn new(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<Self> {
        library_status()?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { gpu.context() }
            .bind_to_thread()
            .context("binding the CUDA context")?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { gpu.stream() };
        let mut handle: sp::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: the library is loaded (checked above); `handle` is a valid
        // out-pointer.
        sp_check(unsafe { sp::cusparseCreate(&mut handle) }, "cusparseCreate")?;
        let mut me = SpmvPlan {
            gpu: gpu.clone(),
            handle,
            mat: std::ptr::null_mut(),
            vecs: Vec::new(),
            buffer: None,
            preprocess: has_symbol("cusparseSpMV_preprocess"),
            _t: PhantomData,
        };
        // SAFETY: `handle` is live; the stream belongs to the current context
        // and outlives the handle (the Gpu is held by `me`).
        sp_check(
            unsafe { sp::cusparseSetStream(me.handle, stream.cu_stream() as sp::cudaStream_t) },
            "cusparseSetStream",
        )?;
        // SAFETY: `handle` is live; SpMV alpha/beta are host scalars.
        sp_check(
            unsafe {
                sp::cusparseSetPointerMode(
                    me.handle,
                    sp::cusparsePointerMode_t::CUSPARSE_POINTER_MODE_HOST,
                )
            },
            "cusparseSetPointerMode",
        )?;
        me.mat = crate::cusparse::csr_descriptor(stream, a)?;
        Ok(me)
    }

    /// Creates a dense-vector descriptor of the first `len` entries of `v`
    /// and returns its index.
    pub(super) fn add_vector(&mut self, v: &CudaSlice<T>, len: usize) -> Result<usize> {
        ensure!(v.len() >= len, "vector shorter than {len}");
        let mut d: sp::cusparseDnVecDescr_t = std::ptr::null_mut();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let (p, _g) = v.device_ptr(unsafe { self.gpu.stream() });
        // SAFETY: `p` holds at least `len` elements of T; the owner keeps the
        // slice alive until after this plan is dropped (see the type docs).
        sp_check(
            unsafe {
                sp::cusparseCreateDnVec(&mut d, len as i64, p as *mut c_void, data_type(T::TYPE))
            },
            "cusparseCreateDnVec",
        )?;
        self.vecs.push(d);
        Ok(self.vecs.len() - 1)
    }

    /// Sizes and allocates the work buffer for `vecs[y] = alpha A vecs[x] +
    /// beta vecs[y]` and runs `cusparseSpMV_preprocess` when available.
    pub(super) fn prepare(&mut self, alpha: T, beta: T, x: usize, y: usize) -> Result<()> {
        ensure!(x < self.vecs.len() && y < self.vecs.len(), "no such vector");
        let op = sp::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let alg = sp::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;
        let mut size: usize = 0;
        // SAFETY: handle and descriptors are live; alpha/beta point to host
        // scalars of the compute type (host pointer mode); `size` is a valid
        // out-pointer.
        sp_check(
            unsafe {
                sp::cusparseSpMV_bufferSize(
                    self.handle,
                    op,
                    &alpha as *const T as *const c_void,
                    self.mat,
                    self.vecs[x],
                    &beta as *const T as *const c_void,
                    self.vecs[y],
                    data_type(T::TYPE),
                    alg,
                    &mut size,
                )
            },
            "cusparseSpMV_bufferSize",
        )?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut buf = stream
            .alloc_zeros::<u8>(size.max(1))
            .context("allocating the cuSPARSE work buffer")?;
        if self.preprocess {
            let (bp, _g) = buf.device_ptr_mut(&stream);
            // SAFETY: as for bufferSize; `bp` holds at least the size cuSPARSE
            // asked for and is kept in `self.buffer` for every later SpMV.
            sp_check(
                unsafe {
                    sp::cusparseSpMV_preprocess(
                        self.handle,
                        op,
                        &alpha as *const T as *const c_void,
                        self.mat,
                        self.vecs[x],
                        &beta as *const T as *const c_void,
                        self.vecs[y],
                        data_type(T::TYPE),
                        alg,
                        bp as *mut c_void,
                    )
                },
                "cusparseSpMV_preprocess",
            )?;
        }
        stream.synchronize()?;
        self.buffer = Some(buf);
        Ok(())
    }

    /// Enqueues `vecs[y] = alpha A vecs[x] + beta vecs[y]`.
    pub(super) fn spmv(&mut self, alpha: T, beta: T, x: usize, y: usize) -> Result<()> {
        ensure!(x < self.vecs.len() && y < self.vecs.len(), "no such vector");
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        let Some(buf) = self.buffer.as_mut() else {
            bail!("cusparseSpMV called before prepare");
        };
        let (bp, _g) = buf.device_ptr_mut(&stream);
        // SAFETY: handle, matrix and vector descriptors are live and point to
        // device memory the owner keeps alive; the work buffer was sized by
        // cusparseSpMV_bufferSize (same matrix, vectors of the same sizes and
        // type) and is owned by `self`; alpha/beta are host scalars read
        // during the call (host pointer mode).
        sp_check(
            unsafe {
                sp::cusparseSpMV(
                    self.handle,
                    sp::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &alpha as *const T as *const c_void,
                    self.mat,
                    self.vecs[x],
                    &beta as *const T as *const c_void,
                    self.vecs[y],
                    data_type(T::TYPE),
                    sp::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT,
                    bp as *mut c_void,
                )
            },
            "cusparseSpMV",
        )
    }

    pub(super) fn buffer_bytes(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.num_bytes())
    }
}

impl<T: Scalar> Drop for SpmvPlan<T> {
    fn drop(&mut self) {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let _ = unsafe { self.gpu.stream() }.synchronize();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let _ = unsafe { self.gpu.context() }.bind_to_thread();
        for d in self.vecs.drain(..) {
            // SAFETY: created by cusparseCreateDnVec, destroyed exactly once
            // (drained); queued work has finished.
            unsafe { sp::cusparseDestroyDnVec(d) };
        }
        if !self.mat.is_null() {
            // SAFETY: created by cusparseCreateCsr, destroyed once.
            unsafe { sp::cusparseDestroySpMat(self.mat) };
        }
        if !self.handle.is_null() {
            // SAFETY: created by cusparseCreate, destroyed once, after every
            // descriptor; the work buffer is freed afterwards (field drop).
            unsafe { sp::cusparseDestroy(self.handle) };
        }
    }
}
