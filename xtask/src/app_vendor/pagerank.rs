//! PageRank with cuSPARSE + cuBLAS: the graph and the textbook forms.

use super::*;

/// What [`run_pagerank`] measured.
#[derive(Debug, Clone, Serialize)]
pub struct VendorPrReport {
    /// Pages.
    pub n: usize,
    /// Links (nonzeros of `M`).
    pub nnz: usize,
    /// Iterations run in each form (from `x = 1/n`).
    pub iterations: usize,
    /// Iterations per captured graph actually used (even).
    pub graph_chunk: usize,
    /// Graph form: microseconds per iteration.
    pub graph_us_per_iter: f64,
    /// Textbook form: microseconds per iteration.
    pub textbook_us_per_iter: f64,
    /// The graph form's final ranks.
    pub x: Vec<f32>,
    /// Largest `|x_graph - x_textbook|` (a cross-check of the two forms).
    pub textbook_max_abs_diff: f64,
    /// CSR arrays as cuSPARSE reads them plus the SpMV work buffer.
    pub device_bytes: usize,
    /// CSR arrays (row pointers, column indices, values).
    pub csr_bytes: usize,
    /// `cusparseSpMV` work buffer.
    pub spmv_buffer_bytes: usize,
    /// The two rank vectors and the dangling mask.
    pub vector_bytes: usize,
    /// The preallocated cuBLAS workspace (not in `device_bytes`).
    pub blas_workspace_bytes: usize,
    /// Whether `cusparseSpMV_preprocess` ran.
    pub spmv_preprocess: bool,
}

/// The 0/1 mask of dangling pages.
pub(super) fn dangling_mask(n: usize, dangling: &[u32]) -> Result<Vec<f32>> {
    let mut mask = vec![0f32; n];
    for &d in dangling {
        let d = d as usize;
        ensure!(d < n, "dangling page {d} out of range (n = {n})");
        mask[d] = 1.0;
    }
    Ok(mask)
}

/// PageRank on cuSPARSE + cuBLAS in `f32` (see the module docs).
pub struct VendorPr {
    // Dropped first: they point into the buffers below.
    spmv: SpmvPlan<f32>,
    blas: Blas,
    gpu: Gpu,
    teleport: CudaFunction,
    add_dev: CudaFunction,
    add_host: CudaFunction,
    a: DeviceCsr<f32>,
    n: usize,
    damping: f32,
    /// The two rank vectors; iteration `i` reads `v[i % 2]`, writes the other.
    v: [CudaSlice<f32>; 2],
    mask: CudaSlice<f32>,
    scalars: CudaSlice<f32>,
    vec_ids: [usize; 2],
}

impl VendorPr {
    /// Uploads `m` (square, column-stochastic), the dangling mask and the
    /// vectors, creates the handles, descriptors and work buffer.
    pub fn new(gpu: &Gpu, m: &Csr, dangling: &[u32], damping: f64) -> Result<Self> {
        ensure!(m.rows() == m.cols(), "PageRank needs a square matrix");
        let n = m.rows();
        c_len(n)?;
        library_status()?;
        blas_library_status()?;
        let mask_host = dangling_mask(n, dangling)?;
        let [teleport, add_dev, add_host] =
            load_kernels(gpu, [PR_TELEPORT, PR_ADD_DEV, PR_ADD_HOST])?;
        let dev =
            DeviceCsr::<f32>::upload_with(gpu, m, Layouts::NONE).context("uploading the matrix")?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { gpu.stream() };
        let v = [
            stream.alloc_zeros::<f32>(n).context("allocating x")?,
            stream.alloc_zeros::<f32>(n).context("allocating y")?,
        ];
        let mask = stream
            .clone_htod(&mask_host)
            .context("uploading the mask")?;
        let scalars = stream
            .alloc_zeros::<f32>(PR_SLOTS)
            .context("allocating the PageRank scalars")?;
        let mut spmv = SpmvPlan::new(gpu, &dev)?;
        let vec_ids = [spmv.add_vector(&v[0], n)?, spmv.add_vector(&v[1], n)?];
        spmv.prepare(damping as f32, 0.0, vec_ids[0], vec_ids[1])?;
        let blas = Blas::new(gpu)?;
        Ok(VendorPr {
            spmv,
            blas,
            gpu: gpu.clone(),
            teleport,
            add_dev,
            add_host,
            a: dev,
            n,
            damping: damping as f32,
            v,
            mask,
            scalars,
            vec_ids,
        })
    }

    /// `x = 1/n` in `v[0]`.
    fn reset(&mut self) -> Result<()> {
        let x0 = vec![1.0f32 / self.n as f32; self.n];
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { self.gpu.stream() }.memcpy_htod(&x0, &mut self.v[0])?;
        Ok(())
    }

    fn add_config(&self) -> LaunchConfig {
        let blocks = self.n.div_ceil(ADD_BLOCK as usize).max(1);
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (ADD_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Enqueues graph-form iteration `i` (reads `v[i % 2]`; cuBLAS in device
    /// pointer mode).
    fn graph_iteration(&mut self, i: usize) -> Result<()> {
        let (src, dst) = (i % 2, 1 - i % 2);
        let n = c_len(self.n)?;
        let inv_n = 1.0f32 / self.n as f32;
        self.blas.dot(
            self.n,
            &self.v[src],
            &self.mask,
            Out::Dev(&mut self.scalars, PR_DANGLING),
        )?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut b = stream.launch_builder(&self.teleport);
        b.arg(&mut self.scalars).arg(&self.damping).arg(&inv_n);
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel takes (float*, float, float) and writes slot
        // PR_C < PR_SLOTS of `scalars`, which outlives the enqueued work.
        unsafe { b.launch(one) }.context("launching the teleport kernel")?;
        self.spmv
            .spmv(self.damping, 0.0, self.vec_ids[src], self.vec_ids[dst])?;
        let cfg = self.add_config();
        let mut b = stream.launch_builder(&self.add_dev);
        b.arg(&mut self.v[dst]).arg(&self.scalars).arg(&n);
        // SAFETY: the kernel takes (float*, const float*, int), touches the
        // first `n` entries of `v[dst]` (length n) and slot PR_C of `scalars`.
        unsafe { b.launch(cfg) }.context("launching the y += c kernel")?;
        Ok(())
    }

    /// Runs textbook iteration `i` (cuBLAS in host pointer mode).
    fn textbook_iteration(&mut self, i: usize) -> Result<()> {
        let (src, dst) = (i % 2, 1 - i % 2);
        let n = c_len(self.n)?;
        let mut dangling = 0f32;
        self.blas
            .dot(self.n, &self.v[src], &self.mask, Out::Host(&mut dangling))?;
        let d = self.damping as f64;
        let c = ((1.0 - d) / self.n as f64 + d * dangling as f64 / self.n as f64) as f32;
        self.spmv
            .spmv(self.damping, 0.0, self.vec_ids[src], self.vec_ids[dst])?;
        let cfg = self.add_config();
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut b = stream.launch_builder(&self.add_host);
        b.arg(&mut self.v[dst]).arg(&c).arg(&n);
        // SAFETY: the kernel takes (float*, float, int) and touches the first
        // `n` entries of `v[dst]` (length n).
        unsafe { b.launch(cfg) }.context("launching the y += c kernel")?;
        Ok(())
    }

    /// Runs the graph form for exactly `iterations` iterations from `x = 1/n`
    /// and returns microseconds per iteration and the iterations per graph.
    pub fn time_graph(&mut self, iterations: usize, graph_chunk: usize) -> Result<(f64, usize)> {
        ensure!(iterations > 0, "iterations must be positive");
        let plan = chunk_plan(iterations, graph_chunk, true);
        let gpu = self.gpu.clone();
        self.blas.set_mode(Mode::Device)?;
        let this = std::cell::RefCell::new(self);
        let ms = time_graph_run(
            &gpu,
            plan,
            &mut |i| this.borrow_mut().graph_iteration(i),
            &mut || this.borrow_mut().reset(),
        )?;
        gpu.synchronize()?;
        Ok((ms * 1e3 / iterations as f64, plan.chunk))
    }

    /// Runs the textbook form for exactly `iterations` iterations from
    /// `x = 1/n` (after an untimed warm-up); microseconds per iteration.
    pub fn time_textbook(&mut self, iterations: usize) -> Result<f64> {
        ensure!(iterations > 0, "iterations must be positive");
        let gpu = self.gpu.clone();
        self.blas.set_mode(Mode::Host)?;
        // An untimed warm-up of a few iterations, then the timed run.
        let mut ms = 0.0;
        for count in [iterations.min(TEXTBOOK_WARMUP), iterations] {
            self.reset()?;
            ms = timed_ms(&gpu, || {
                for i in 0..count {
                    self.textbook_iteration(i)?;
                }
                Ok(())
            })?;
        }
        Ok(ms * 1e3 / iterations as f64)
    }

    /// The ranks after `iterations` iterations (waits for queued work).
    pub fn x(&self, iterations: usize) -> Result<Vec<f32>> {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
        // Gpu, no sparserl-rt capture in progress, own work on own buffers).
        Ok(unsafe { self.gpu.stream() }.clone_dtoh(&self.v[iterations % 2])?)
    }

    /// Bytes of the CSR arrays.
    pub fn csr_bytes(&self) -> usize {
        self.a.device_bytes()
    }

    /// Bytes of the `cusparseSpMV` work buffer.
    pub fn spmv_buffer_bytes(&self) -> usize {
        self.spmv.buffer_bytes()
    }

    /// Bytes of the two rank vectors and the mask.
    pub fn vector_bytes(&self) -> usize {
        self.v[0].num_bytes() + self.v[1].num_bytes() + self.mask.num_bytes()
    }
}

/// PageRank with cuSPARSE + cuBLAS in `f32`: `m` is the column-stochastic
/// link matrix (`m[i][j] = 1/outdeg(j)` when `j` links to `i`), `dangling`
/// the pages without out-links; `iterations` iterations from `x = 1/n` in the
/// graph form (`graph_chunk` iterations per CUDA graph, made even; 0 = all)
/// and in the textbook form.
pub fn run_pagerank(
    gpu: &Gpu,
    m: &Csr,
    dangling: &[u32],
    damping: f64,
    iterations: usize,
    graph_chunk: usize,
) -> Result<VendorPrReport> {
    let mut pr = VendorPr::new(gpu, m, dangling, damping)?;
    let (graph_us, chunk) = pr.time_graph(iterations, graph_chunk)?;
    let x = pr.x(iterations)?;
    let textbook_us = pr.time_textbook(iterations)?;
    let xt = pr.x(iterations)?;
    let textbook_max_abs_diff = x
        .iter()
        .zip(&xt)
        .map(|(a, b)| (*a as f64 - *b as f64).abs())
        .fold(0.0, f64::max);
    let csr_bytes = pr.csr_bytes();
    let spmv_buffer_bytes = pr.spmv_buffer_bytes();
    Ok(VendorPrReport {
        n: m.rows(),
        nnz: m.nnz(),
        iterations,
        graph_chunk: chunk,
        graph_us_per_iter: graph_us,
        textbook_us_per_iter: textbook_us,
        x,
        textbook_max_abs_diff,
        device_bytes: csr_bytes + spmv_buffer_bytes,
        csr_bytes,
        spmv_buffer_bytes,
        vector_bytes: pr.vector_bytes(),
        blas_workspace_bytes: pr.blas.workspace_bytes(),
        spmv_preprocess: pr.spmv.preprocess,
    })
}
