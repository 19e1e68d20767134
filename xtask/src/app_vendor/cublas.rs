//! cuBLAS: the library check and a handle in device or host pointer mode.

use super::*;

/// Shared-library names cudarc tries for cuBLAS.
pub fn blas_library_candidates() -> Vec<String> {
    cudarc::get_lib_name_candidates("cublas")
}

/// Checks that libcublas can be loaded (cudarc panics on a missing library).
pub fn blas_library_status() -> Result<()> {
    // SAFETY: `is_culib_present` only tries to open the library with the
    // platform loader and drops it again; no cuBLAS function is called.
    let present = unsafe { blas::is_culib_present() };
    if present {
        return Ok(());
    }
    bail!(
        "cannot load the cuBLAS library (libcublas; tried {:?}): add the directory that holds \
         it (for example the CUDA toolkit's lib64) to LD_LIBRARY_PATH (currently {:?})",
        blas_library_candidates(),
        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
    )
}

pub(super) fn blas_check(status: blas::cublasStatus_t, what: &str) -> Result<()> {
    if status == blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(anyhow!("{what} failed: {status:?}"))
    }
}

/// cuBLAS pointer mode of scalar arguments and results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Host,
    Device,
}

/// A scalar input: a host value, or slot `i` of a device slice.
#[derive(Clone, Copy)]
pub(super) enum In<'a, T> {
    Host(T),
    Dev(&'a CudaSlice<T>, usize),
}

/// A scalar output: a host location, or slot `i` of a device slice.
pub(super) enum Out<'a, T> {
    Host(&'a mut T),
    Dev(&'a mut CudaSlice<T>, usize),
}

/// A cuBLAS handle on the Gpu's stream with a preallocated workspace. Every
/// call checks that its scalar arguments match the current pointer mode.
pub(crate) struct Blas {
    gpu: Gpu,
    handle: blas::cublasHandle_t,
    mode: Cell<Mode>,
    workspace: Option<CudaSlice<u8>>,
}

impl Blas {
    pub(crate) fn new(gpu: &Gpu) -> Result<Self> {
        blas_library_status()?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { gpu.context() }
            .bind_to_thread()
            .context("binding the CUDA context")?;
        let mut handle: blas::cublasHandle_t = std::ptr::null_mut();
        // SAFETY: the library is loaded (checked above); `handle` is a valid
        // out-pointer.
        blas_check(
            unsafe { blas::cublasCreate_v2(&mut handle) },
            "cublasCreate",
        )?;
        let mut me = Blas {
            gpu: gpu.clone(),
            handle,
            mode: Cell::new(Mode::Host),
            workspace: None,
        };
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { gpu.stream() };
        // SAFETY: `handle` is live; the stream belongs to the current context
        // and outlives the handle (`me` holds the Gpu, Drop destroys the
        // handle first).
        blas_check(
            unsafe {
                blas::cublasSetStream_v2(me.handle, stream.cu_stream() as blas::cudaStream_t)
            },
            "cublasSetStream",
        )?;
        let mut ws = stream
            .alloc_zeros::<u8>(BLAS_WORKSPACE_BYTES)
            .context("allocating the cuBLAS workspace")?;
        {
            let (wp, _g) = ws.device_ptr_mut(stream);
            // SAFETY: `wp` points to BLAS_WORKSPACE_BYTES of device memory
            // that `me.workspace` keeps alive until after cublasDestroy (Drop
            // runs before the fields are freed). Set after cublasSetStream,
            // which resets the workspace.
            blas_check(
                unsafe {
                    blas::cublasSetWorkspace_v2(me.handle, wp as *mut c_void, BLAS_WORKSPACE_BYTES)
                },
                "cublasSetWorkspace",
            )?;
        }
        me.workspace = Some(ws);
        me.set_mode(Mode::Host)?;
        Ok(me)
    }

    pub(super) fn set_mode(&self, mode: Mode) -> Result<()> {
        let raw = match mode {
            Mode::Host => blas::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST,
            Mode::Device => blas::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE,
        };
        // SAFETY: `handle` is live; setting the pointer mode enqueues nothing.
        blas_check(
            unsafe { blas::cublasSetPointerMode_v2(self.handle, raw) },
            "cublasSetPointerMode",
        )?;
        self.mode.set(mode);
        Ok(())
    }

    pub(super) fn require(&self, mode: Mode) -> Result<()> {
        ensure!(
            self.mode.get() == mode,
            "cuBLAS is in {:?} pointer mode, the call passes {mode:?} scalars",
            self.mode.get()
        );
        Ok(())
    }

    /// Raw address of a scalar input; `keep` holds a host value while used.
    pub(super) fn input_ptr<T: Scalar>(
        &self,
        alpha: In<'_, T>,
        keep: &mut T,
    ) -> Result<*const c_void> {
        match alpha {
            In::Host(v) => {
                self.require(Mode::Host)?;
                *keep = v;
                Ok(keep as *const T as *const c_void)
            }
            In::Dev(s, i) => {
                self.require(Mode::Device)?;
                Ok(elem_ptr(&self.gpu, s, i)? as *const c_void)
            }
        }
    }

    /// `out = x·y` over the first `n` entries.
    pub(super) fn dot<T: Scalar>(
        &self,
        n: usize,
        x: &CudaSlice<T>,
        y: &CudaSlice<T>,
        out: Out<'_, T>,
    ) -> Result<()> {
        ensure!(
            x.len() >= n && y.len() >= n,
            "dot: vectors shorter than {n}"
        );
        let len = c_len(n)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() };
        let res: *mut c_void = match out {
            Out::Host(r) => {
                self.require(Mode::Host)?;
                r as *mut T as *mut c_void
            }
            Out::Dev(s, i) => {
                self.require(Mode::Device)?;
                elem_ptr(&self.gpu, s, i)? as *mut c_void
            }
        };
        let (xp, _gx) = x.device_ptr(stream);
        let (yp, _gy) = y.device_ptr(stream);
        // SAFETY: the handle is live and bound to the stream; `xp`/`yp` hold
        // at least `n` elements of type T (checked); `res` matches the
        // current pointer mode (checked by `require`): a host `T` that is
        // written before the call returns (host mode blocks), or a device
        // slot of a slice that outlives the enqueued work (owned by the
        // caller's solver, freed after a stream synchronization). `is_f32`
        // asserts that T has the layout of the cuBLAS element type.
        let status = unsafe {
            if is_f32::<T>() {
                blas::cublasSdot_v2(
                    self.handle,
                    len,
                    xp as *const f32,
                    1,
                    yp as *const f32,
                    1,
                    res as *mut f32,
                )
            } else {
                blas::cublasDdot_v2(
                    self.handle,
                    len,
                    xp as *const f64,
                    1,
                    yp as *const f64,
                    1,
                    res as *mut f64,
                )
            }
        };
        blas_check(status, "cublas dot")
    }

    /// `y += alpha x` over the first `n` entries.
    pub(super) fn axpy<T: Scalar>(
        &self,
        n: usize,
        alpha: In<'_, T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        ensure!(
            x.len() >= n && y.len() >= n,
            "axpy: vectors shorter than {n}"
        );
        let len = c_len(n)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() };
        let mut keep = T::default();
        let ap = self.input_ptr(alpha, &mut keep)?;
        let (xp, _gx) = x.device_ptr(stream);
        let (yp, _gy) = y.device_ptr_mut(stream);
        // SAFETY: as for `dot`: live handle, vectors of at least `n`
        // elements of T, `ap` matches the pointer mode (a host value read
        // during the call, or a device slot that outlives the work); `x` and
        // `y` are distinct slices (one shared, one exclusive borrow).
        let status = unsafe {
            if is_f32::<T>() {
                blas::cublasSaxpy_v2(
                    self.handle,
                    len,
                    ap as *const f32,
                    xp as *const f32,
                    1,
                    yp as *mut f32,
                    1,
                )
            } else {
                blas::cublasDaxpy_v2(
                    self.handle,
                    len,
                    ap as *const f64,
                    xp as *const f64,
                    1,
                    yp as *mut f64,
                    1,
                )
            }
        };
        blas_check(status, "cublas axpy")
    }

    /// `x *= alpha` over the first `n` entries.
    pub(super) fn scal<T: Scalar>(
        &self,
        n: usize,
        alpha: In<'_, T>,
        x: &mut CudaSlice<T>,
    ) -> Result<()> {
        ensure!(x.len() >= n, "scal: vector shorter than {n}");
        let len = c_len(n)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() };
        let mut keep = T::default();
        let ap = self.input_ptr(alpha, &mut keep)?;
        let (xp, _gx) = x.device_ptr_mut(stream);
        // SAFETY: as for `axpy`.
        let status = unsafe {
            if is_f32::<T>() {
                blas::cublasSscal_v2(self.handle, len, ap as *const f32, xp as *mut f32, 1)
            } else {
                blas::cublasDscal_v2(self.handle, len, ap as *const f64, xp as *mut f64, 1)
            }
        };
        blas_check(status, "cublas scal")
    }

    /// Row-major `C = A B` for `A` (`m x k`), `B` (`k x n`) and `C`
    /// (`m x n`), all tightly stored, in host pointer mode: cuBLAS's
    /// column-major `Cᵀ = Bᵀ Aᵀ`.
    pub(crate) fn gemm_row_major<T: Scalar>(
        &self,
        (m, k, n): (usize, usize, usize),
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> Result<()> {
        ensure!(
            a.len() >= m * k && b.len() >= k * n && c.len() >= m * n,
            "gemm: operands shorter than {m} x {k} x {n}"
        );
        self.require(Mode::Host)?;
        let (cm, ck, cn) = (c_len(m)?, c_len(k)?, c_len(n)?);
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { self.gpu.stream() };
        let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
        let (ap, _ga) = a.device_ptr(stream);
        let (bp, _gb) = b.device_ptr(stream);
        let (cp, _gc) = c.device_ptr_mut(stream);
        let op = blas::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the handle is live and bound to the stream; `a`, `b`, `c`
        // hold at least m k, k n and m n elements of T (checked) in the
        // column-major shapes n x k (ld n), k x m (ld k) and n x m (ld n) of
        // Bᵀ, Aᵀ and Cᵀ; `c` is an exclusive borrow distinct from the
        // inputs; alpha / beta are host scalars (host mode, checked) read
        // before the call returns. `is_f32` asserts T's layout.
        let status = unsafe {
            if is_f32::<T>() {
                blas::cublasSgemm_v2(
                    self.handle,
                    op,
                    op,
                    cn,
                    cm,
                    ck,
                    &one as *const T as *const f32,
                    bp as *const f32,
                    cn,
                    ap as *const f32,
                    ck,
                    &zero as *const T as *const f32,
                    cp as *mut f32,
                    cn,
                )
            } else {
                blas::cublasDgemm_v2(
                    self.handle,
                    op,
                    op,
                    cn,
                    cm,
                    ck,
                    &one as *const T as *const f64,
                    bp as *const f64,
                    cn,
                    ap as *const f64,
                    ck,
                    &zero as *const T as *const f64,
                    cp as *mut f64,
                    cn,
                )
            }
        };
        blas_check(status, "cublas gemm")
    }

    pub(super) fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, |w| w.num_bytes())
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let _ = unsafe { self.gpu.stream() }.synchronize();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let _ = unsafe { self.gpu.context() }.bind_to_thread();
        if !self.handle.is_null() {
            // SAFETY: created by cublasCreate, destroyed once; queued work
            // has finished. The workspace is freed afterwards (field drop).
            unsafe { blas::cublasDestroy_v2(self.handle) };
        }
    }
}
