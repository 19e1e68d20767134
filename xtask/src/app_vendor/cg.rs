//! Conjugate gradients with cuSPARSE + cuBLAS: the graph and the textbook forms.

use super::*;

/// `||b - A x|| / ||b||` in float64 on the host (`||b - A x||` when `b = 0`).
pub(super) fn rel_residual(a: &Csr, b: &[f64], x: &[f64]) -> f64 {
    // Callers pass x of the matrix's size (a solution of it).
    let Ok(ax) = a.spmv_f64(x) else {
        return f64::NAN;
    };
    let res = b
        .iter()
        .zip(&ax)
        .map(|(bi, yi)| (bi - yi) * (bi - yi))
        .sum::<f64>()
        .sqrt();
    let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    let e = if norm > 0.0 { res / norm } else { res };
    if e.is_nan() { f64::INFINITY } else { e }
}

/// What [`run_cg`] measured.
#[derive(Debug, Clone, Serialize)]
pub struct VendorCgReport {
    /// Working precision.
    pub value: ValueType,
    /// Matrix order.
    pub rows: usize,
    /// Nonzeros.
    pub nnz: usize,
    /// Iterations run in each form (from `x = 0`).
    pub iterations: usize,
    /// Iterations per captured graph actually used.
    pub graph_chunk: usize,
    /// Graph form: microseconds per iteration.
    pub graph_us_per_iter: f64,
    /// Textbook form: microseconds per iteration.
    pub textbook_us_per_iter: f64,
    /// `||b - A x|| / ||b||` (host, float64) of the graph form's final `x`.
    pub rel_residual: f64,
    /// The same for the textbook form's final `x` (a cross-check).
    pub textbook_rel_residual: f64,
    /// CSR arrays as cuSPARSE reads them plus the SpMV work buffer.
    pub device_bytes: usize,
    /// CSR arrays (row pointers, column indices, values).
    pub csr_bytes: usize,
    /// `cusparseSpMV` work buffer.
    pub spmv_buffer_bytes: usize,
    /// The vectors `x`, `r`, `p`, `q`.
    pub vector_bytes: usize,
    /// The preallocated cuBLAS workspace (not in `device_bytes`).
    pub blas_workspace_bytes: usize,
    /// Whether `cusparseSpMV_preprocess` ran.
    pub spmv_preprocess: bool,
}

/// CG on cuSPARSE + cuBLAS (see the module docs for the two forms).
pub struct VendorCg<T: Scalar> {
    // The plan and the handles come first: they are dropped (and destroy
    // their descriptors) before the buffers they point into.
    spmv: SpmvPlan<T>,
    blas: Blas,
    gpu: Gpu,
    alpha_kernel: CudaFunction,
    beta_kernel: CudaFunction,
    a: DeviceCsr<T>,
    n: usize,
    b: Vec<T>,
    x: CudaSlice<T>,
    r: CudaSlice<T>,
    p: CudaSlice<T>,
    q: CudaSlice<T>,
    scalars: CudaSlice<T>,
    p_vec: usize,
    q_vec: usize,
}

impl<T: Scalar> VendorCg<T> {
    /// Uploads `a` (square) and `b`, creates the handles, descriptors and
    /// work buffer, and compiles the scalar kernels.
    pub fn new(gpu: &Gpu, a: &Csr, b: &[f64]) -> Result<Self> {
        ensure!(a.rows() == a.cols(), "CG needs a square matrix");
        ensure!(b.len() == a.rows(), "b must have rows entries");
        let n = a.rows();
        c_len(n)?;
        library_status()?;
        blas_library_status()?;
        let [alpha_kernel, beta_kernel] = if is_f32::<T>() {
            load_kernels(gpu, [CG_ALPHA_F32, CG_BETA_F32])?
        } else {
            load_kernels(gpu, [CG_ALPHA_F64, CG_BETA_F64])?
        };
        let dev =
            DeviceCsr::<T>::upload_with(gpu, a, Layouts::NONE).context("uploading the matrix")?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { gpu.stream() };
        let alloc = || stream.alloc_zeros::<T>(n).context("allocating a CG vector");
        let (x, r, p, q) = (alloc()?, alloc()?, alloc()?, alloc()?);
        let scalars = stream
            .alloc_zeros::<T>(CG_SLOTS)
            .context("allocating the CG scalars")?;
        let mut spmv = SpmvPlan::new(gpu, &dev)?;
        let p_vec = spmv.add_vector(&p, n)?;
        let q_vec = spmv.add_vector(&q, n)?;
        spmv.prepare(T::from_f64(1.0), T::from_f64(0.0), p_vec, q_vec)?;
        let blas = Blas::new(gpu)?;
        Ok(VendorCg {
            spmv,
            blas,
            gpu: gpu.clone(),
            alpha_kernel,
            beta_kernel,
            a: dev,
            n,
            b: b.iter().map(|&v| T::from_f64(v)).collect(),
            x,
            r,
            p,
            q,
            scalars,
            p_vec,
            q_vec,
        })
    }

    /// Restores `x = 0`, `r = p = b`, the scalar slots (with `one = 1`) and,
    /// with cuBLAS left in device pointer mode, `rr = r·r` on the device.
    fn reset(&mut self) -> Result<()> {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        stream.memset_zeros(&mut self.x)?;
        stream.memcpy_htod(&self.b, &mut self.r)?;
        stream.memcpy_htod(&self.b, &mut self.p)?;
        let mut init = [T::default(); CG_SLOTS];
        init[CG_ONE] = T::from_f64(1.0);
        stream.memcpy_htod(&init, &mut self.scalars)?;
        self.blas.set_mode(Mode::Device)?;
        self.blas
            .dot(self.n, &self.r, &self.r, Out::Dev(&mut self.scalars, CG_RR))
    }

    /// Launches a one-thread scalar kernel on the CG scalar slots.
    fn scalar_kernel(&mut self, f: &CudaFunction) -> Result<()> {
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() };
        let mut builder = stream.launch_builder(f);
        builder.arg(&mut self.scalars);
        // SAFETY: the kernel takes one `T*` and touches slots below CG_SLOTS,
        // all inside `scalars`, which outlives the enqueued work.
        unsafe { builder.launch(cfg) }.context("launching a CG scalar kernel")?;
        Ok(())
    }

    /// Enqueues one graph-form iteration (cuBLAS in device pointer mode).
    fn graph_iteration(&mut self) -> Result<()> {
        let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
        let n = self.n;
        self.spmv.spmv(one, zero, self.p_vec, self.q_vec)?;
        self.blas
            .dot(n, &self.p, &self.q, Out::Dev(&mut self.scalars, CG_PQ))?;
        let f = self.alpha_kernel.clone();
        self.scalar_kernel(&f)?;
        self.blas
            .axpy(n, In::Dev(&self.scalars, CG_ALPHA), &self.p, &mut self.x)?;
        self.blas.axpy(
            n,
            In::Dev(&self.scalars, CG_NEG_ALPHA),
            &self.q,
            &mut self.r,
        )?;
        self.blas
            .dot(n, &self.r, &self.r, Out::Dev(&mut self.scalars, CG_RR_NEW))?;
        let f = self.beta_kernel.clone();
        self.scalar_kernel(&f)?;
        self.blas
            .scal(n, In::Dev(&self.scalars, CG_BETA), &mut self.p)?;
        self.blas
            .axpy(n, In::Dev(&self.scalars, CG_ONE), &self.r, &mut self.p)
    }

    /// Runs one textbook iteration (cuBLAS in host pointer mode); `rr` is
    /// `r·r` on entry and is updated.
    fn textbook_iteration(&mut self, rr: &mut T) -> Result<()> {
        let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
        let n = self.n;
        self.spmv.spmv(one, zero, self.p_vec, self.q_vec)?;
        let mut pq = zero;
        self.blas.dot(n, &self.p, &self.q, Out::Host(&mut pq))?;
        let alpha = if pq.to_f64() != 0.0 {
            rr.to_f64() / pq.to_f64()
        } else {
            0.0
        };
        self.blas
            .axpy(n, In::Host(T::from_f64(alpha)), &self.p, &mut self.x)?;
        self.blas
            .axpy(n, In::Host(T::from_f64(-alpha)), &self.q, &mut self.r)?;
        let mut rr_new = zero;
        self.blas.dot(n, &self.r, &self.r, Out::Host(&mut rr_new))?;
        let beta = if rr.to_f64() != 0.0 {
            rr_new.to_f64() / rr.to_f64()
        } else {
            0.0
        };
        *rr = rr_new;
        self.blas
            .scal(n, In::Host(T::from_f64(beta)), &mut self.p)?;
        self.blas.axpy(n, In::Host(one), &self.r, &mut self.p)
    }

    /// Runs the graph form for exactly `iterations` iterations from `x = 0`
    /// and returns microseconds per iteration; `x` then holds the result.
    pub fn time_graph(&mut self, iterations: usize, graph_chunk: usize) -> Result<f64> {
        ensure!(iterations > 0, "iterations must be positive");
        let plan = chunk_plan(iterations, graph_chunk, false);
        let gpu = self.gpu.clone();
        self.reset()?;
        // `reset` leaves cuBLAS in device pointer mode, which capture records.
        let this = std::cell::RefCell::new(self);
        let ms = time_graph_run(
            &gpu,
            plan,
            &mut |_| this.borrow_mut().graph_iteration(),
            &mut || this.borrow_mut().reset(),
        )?;
        gpu.synchronize()?;
        Ok(ms * 1e3 / iterations as f64)
    }

    /// Runs the textbook form for exactly `iterations` iterations from
    /// `x = 0` (after an untimed warm-up) and returns microseconds per
    /// iteration; `x` then holds the result.
    pub fn time_textbook(&mut self, iterations: usize) -> Result<f64> {
        ensure!(iterations > 0, "iterations must be positive");
        let gpu = self.gpu.clone();
        // An untimed warm-up of a few iterations, then the timed run.
        let mut ms = 0.0;
        for count in [iterations.min(TEXTBOOK_WARMUP), iterations] {
            self.reset()?;
            self.blas.set_mode(Mode::Host)?;
            let mut rr = T::default();
            self.blas
                .dot(self.n, &self.r, &self.r, Out::Host(&mut rr))?;
            ms = timed_ms(&gpu, || {
                for _ in 0..count {
                    self.textbook_iteration(&mut rr)?;
                }
                Ok(())
            })?;
        }
        Ok(ms * 1e3 / iterations as f64)
    }

    /// The current `x` (waits for queued work).
    pub fn x(&self) -> Result<Vec<T>> {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        Ok(unsafe { self.gpu.stream() }.clone_dtoh(&self.x)?)
    }

    /// Bytes of the CSR arrays.
    pub fn csr_bytes(&self) -> usize {
        self.a.device_bytes()
    }

    /// Bytes of the `cusparseSpMV` work buffer.
    pub fn spmv_buffer_bytes(&self) -> usize {
        self.spmv.buffer_bytes()
    }

    /// Bytes of `x`, `r`, `p`, `q`.
    pub fn vector_bytes(&self) -> usize {
        self.x.num_bytes() + self.r.num_bytes() + self.p.num_bytes() + self.q.num_bytes()
    }
}

/// CG with cuSPARSE + cuBLAS in precision `T`: `iterations` iterations from
/// `x = 0` in the graph form (chunks of `graph_chunk` iterations per CUDA
/// graph; 0 = all in one graph) and in the textbook form.
pub fn run_cg<T: Scalar>(
    gpu: &Gpu,
    a: &Csr,
    b: &[f64],
    iterations: usize,
    graph_chunk: usize,
) -> Result<VendorCgReport> {
    let mut cg = VendorCg::<T>::new(gpu, a, b)?;
    let graph_us = cg.time_graph(iterations, graph_chunk)?;
    let xg: Vec<f64> = cg.x()?.into_iter().map(T::to_f64).collect();
    let textbook_us = cg.time_textbook(iterations)?;
    let xt: Vec<f64> = cg.x()?.into_iter().map(T::to_f64).collect();
    let csr_bytes = cg.csr_bytes();
    let spmv_buffer_bytes = cg.spmv_buffer_bytes();
    Ok(VendorCgReport {
        value: T::TYPE,
        rows: a.rows(),
        nnz: a.nnz(),
        iterations,
        graph_chunk: chunk_plan(iterations, graph_chunk, false).chunk,
        graph_us_per_iter: graph_us,
        textbook_us_per_iter: textbook_us,
        rel_residual: rel_residual(a, b, &xg),
        textbook_rel_residual: rel_residual(a, b, &xt),
        device_bytes: csr_bytes + spmv_buffer_bytes,
        csr_bytes,
        spmv_buffer_bytes,
        vector_bytes: cg.vector_bytes(),
        blas_workspace_bytes: cg.blas.workspace_bytes(),
        spmv_preprocess: cg.spmv.preprocess,
    })
}
