//! Iterative solvers that run entirely on the device with a crate's tuned
//! kernels: conjugate gradients ([`Cg`], optional Jacobi preconditioner) and
//! PageRank ([`pagerank`]).
//!
//! One CG iteration is three kernels: the tuned SpMV with its fused dot
//! epilogue (`q = A p`, `p . q`), one fused update (`r -= alpha q` with
//! `r . z` and `r . r`) and one more (`x += alpha p`, `p = z + beta p`); every
//! scalar stays on the device and `chunk` iterations are replayed as one CUDA
//! graph, so the host synchronises once per chunk to test convergence. One
//! PageRank iteration is the tuned SpMV with its fused `axpby-dot` epilogue
//! (`y = d M x + c`, `c` from the dangling mass of `x`, and the next
//! dangling mass `w . y`): one kernel per iteration.
//!
//! The reported time covers the iterations only; the first launch of a
//! kernel in a process may include the driver's one-time module loading (a
//! JIT of embedded PTX where no image for the device is cached), so time a
//! second solve when the per-iteration cost is what matters.
//!
//! The kernel must declare the epilogue it needs: `epilogues = ["dot"]` for
//! CG, `epilogues = ["axpby-dot"]` for PageRank
//! ([`RtError::EpilogueNotGenerated`] otherwise).
//!
//! ```no_run
//! # use sparserl_rt::{Csr, DeviceVec, Gpu, RtError, SpmvKernel};
//! # use sparserl_rt::solvers::{Cg, CgOptions};
//! # fn solve<K: SpmvKernel<Value = f64>>(k: &K, a: &Csr, b: &[f64]) -> Result<Vec<f64>, RtError> {
//! let gpu = Gpu::new(0)?;
//! let da = k.upload_lean(&gpu, a)?;
//! let db = DeviceVec::from_host(&gpu, b)?;
//! let mut x = DeviceVec::zeros(&gpu, a.rows())?;
//! let mut cg = Cg::new(&gpu, k, &da, None)?;
//! let report = cg.solve(&gpu, &da, &db, &mut x, &CgOptions::default())?;
//! println!("{} iterations, residual {:.1e}", report.iterations, report.rel_residual);
//! x.to_host(&gpu)
//! # }
//! ```

use crate::csr::Csr;
use crate::device::{DeviceCsr, DeviceVec, Gpu, Scalar};
use crate::error::RtError;
use crate::launch::{Fused, SpmvKernel};
use crate::ops;
use crate::pin::{Pin, Shared};
use crate::scalar::{Coef, DeviceCoefs, DeviceScalar};
use cudarc::driver::CudaSlice;
use std::sync::Arc;
use std::time::Instant;

/// Doubles of the CG state (see `kernels/vector_ops.cu`).
const CG_STATE_LEN: usize = 48;

/// Most iterations one graph of [`Cg::solve`] or [`pagerank`] records
/// (`chunk` above it is refused: the whole chunk is captured and
/// instantiated at once).
pub const MAX_CHUNK: usize = 1024;

/// `chunk` validated against [`MAX_CHUNK`] and capped by `max_iters`
/// (a chunk is never longer than the iterations it may run).
fn chunk_of(chunk: usize, max_iters: usize) -> Result<usize, RtError> {
    if chunk == 0 || chunk > MAX_CHUNK {
        return Err(RtError::InvalidArgument(format!(
            "chunk must be in 1..={MAX_CHUNK} iterations per graph, got {chunk}"
        )));
    }
    Ok(chunk.min(max_iters.max(1)))
}

/// Options of [`Cg::solve`].
#[derive(Debug, Clone, Copy)]
pub struct CgOptions {
    /// Stop when `||r|| <= tol ||b||` (the recursively updated residual).
    pub tol: f64,
    /// At most this many iterations.
    pub max_iters: usize,
    /// Iterations per CUDA-graph replay (one host synchronisation each), in
    /// `1..=`[`MAX_CHUNK`] (capped by `max_iters`).
    pub chunk: usize,
}

impl Default for CgOptions {
    fn default() -> Self {
        CgOptions {
            tol: 1e-8,
            max_iters: 10_000,
            chunk: 25,
        }
    }
}

/// What [`Cg::solve`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CgReport {
    /// Iterations that updated the solution.
    pub iterations: usize,
    /// Iterations launched (whole chunks: a few more than `iterations`; the
    /// ones after convergence only run the SpMV).
    pub launched: usize,
    /// `||r|| / ||b||` of the recursively updated residual at the end.
    pub rel_residual: f64,
    /// Whether `rel_residual <= tol`.
    pub converged: bool,
    /// Wall time of the iterations (capture excluded), seconds.
    pub seconds: f64,
}

/// Conjugate gradients for a symmetric positive definite matrix with a
/// tuned kernel; owns its work vectors (`r`, `p`, `q`, optional Jacobi
/// inverse diagonal) and device state, so repeated solves allocate nothing.
///
/// A renumbered matrix ([`crate::renumber`]) is solved in permuted space:
/// `b` and `x` are converted once at the start and `x` once at the end, and
/// every iteration runs without permutations. Such a matrix must be the
/// same upload in [`Cg::new`] and [`Cg::solve`] (the Jacobi diagonal is
/// stored in its order).
pub struct Cg<'k, K: SpmvKernel> {
    kernel: &'k K,
    n: usize,
    r: DeviceVec<K::Value>,
    p: DeviceVec<K::Value>,
    q: DeviceVec<K::Value>,
    dinv: Option<DeviceVec<K::Value>>,
    /// `st` of `vector_ops.cu`: rho, accumulators, alpha, beta, iterations,
    /// flag, threshold, r.r.
    st: Shared<CudaSlice<f64>>,
    ticket: Shared<CudaSlice<u32>>,
    pq: DeviceScalar,
    /// `b` and `x` in the stored order of a renumbered matrix.
    space: Option<Stored<K::Value>>,
    /// The permutation of the renumbered upload `Cg::new` was given (kept
    /// alive, so its identity cannot be reused): the Jacobi diagonal is in
    /// its order, so `solve` takes only that upload.
    perm: Option<Pin>,
}

/// `b` and `x` of a solve in a renumbered matrix's stored order.
struct Stored<T: Scalar> {
    b: DeviceVec<T>,
    x: DeviceVec<T>,
}

impl<'k, K: SpmvKernel> std::fmt::Debug for Cg<'k, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cg")
            .field("n", &self.n)
            .field("jacobi", &self.dinv.is_some())
            .finish_non_exhaustive()
    }
}

/// [`RtError::EpilogueNotGenerated`] unless `kernel` declares `epilogue`.
fn require_epilogue<K: SpmvKernel>(kernel: &K, epilogue: crate::Epilogue) -> Result<(), RtError> {
    if kernel.spec().fused.iter().any(|f| f.epilogue == epilogue) {
        Ok(())
    } else {
        Err(RtError::EpilogueNotGenerated {
            kernel: kernel.spec().name.to_string(),
            epilogue: epilogue.as_str(),
        })
    }
}

/// The inverse of the diagonal of `a` (the Jacobi preconditioner), or an
/// error naming the first row whose diagonal entry is missing or zero.
pub fn jacobi_inverse(a: &Csr) -> Result<Vec<f64>, RtError> {
    if a.rows() != a.cols() {
        return Err(RtError::InvalidArgument(format!(
            "the Jacobi preconditioner needs a square matrix, got {} x {}",
            a.rows(),
            a.cols()
        )));
    }
    let (ip, ind, val) = (a.indptr(), a.indices(), a.values());
    (0..a.rows())
        .map(|i| {
            let (s, e) = (ip[i] as usize, ip[i + 1] as usize);
            let d = ind[s..e]
                .binary_search(&(i as u32))
                .map(|k| val[s + k])
                .unwrap_or(0.0);
            if d == 0.0 || !d.is_finite() {
                Err(RtError::InvalidArgument(format!(
                    "row {i} has no usable diagonal entry ({d}) for the Jacobi preconditioner"
                )))
            } else {
                Ok(1.0 / d)
            }
        })
        .collect()
}

impl<'k, K: SpmvKernel> Cg<'k, K> {
    /// Allocates the work vectors for `a` (square). `jacobi` is the inverse
    /// diagonal ([`jacobi_inverse`]) for a Jacobi-preconditioned solve.
    pub fn new(
        gpu: &Gpu,
        kernel: &'k K,
        a: &DeviceCsr<K::Value>,
        jacobi: Option<&[f64]>,
    ) -> Result<Self, RtError> {
        a.check_gpu(gpu)?;
        if a.rows() != a.cols() {
            return Err(RtError::InvalidArgument(format!(
                "conjugate gradients needs a square matrix, got {} x {}",
                a.rows(),
                a.cols()
            )));
        }
        require_epilogue(kernel, crate::Epilogue::Dot)?;
        let n = a.rows();
        ops::int_len(n)?;
        let dinv = match jacobi {
            Some(d) => {
                ops::same_len("the Jacobi inverse diagonal", n, d.len())?;
                let v: Vec<K::Value> = d.iter().map(|&v| K::Value::from_f64(v)).collect();
                let user = DeviceVec::from_host(gpu, &v)?;
                let mut stored = DeviceVec::zeros(gpu, n)?;
                a.to_internal(gpu, &user, &mut stored)?;
                Some(stored)
            }
            None => None,
        };
        let s = gpu.outside_capture("Cg::new")?;
        let st = gpu.own(s.alloc_zeros::<f64>(CG_STATE_LEN)?);
        let ticket = gpu.own(s.alloc_zeros::<u32>(1)?);
        drop(s);
        Ok(Cg {
            kernel,
            n,
            r: DeviceVec::zeros(gpu, n)?,
            p: DeviceVec::zeros(gpu, n)?,
            q: DeviceVec::zeros(gpu, n)?,
            dinv,
            st,
            ticket,
            pq: DeviceScalar::new(gpu)?,
            perm: a.perm_pin(),
            space: if a.renumbering().is_none() {
                None
            } else {
                Some(Stored {
                    b: DeviceVec::zeros(gpu, n)?,
                    x: DeviceVec::zeros(gpu, n)?,
                })
            },
        })
    }

    /// Device bytes of the work vectors and state.
    pub fn device_bytes(&self) -> usize {
        let v = self.r.as_slice().num_bytes() * 3;
        v + self.dinv.as_ref().map_or(0, |d| d.as_slice().num_bytes())
            + self.st.num_bytes()
            + self.pq.buf.num_bytes()
            + 8
    }

    /// Solves `A x = b` starting from the given `x`; `x` holds the solution.
    pub fn solve(
        &mut self,
        gpu: &Gpu,
        a: &DeviceCsr<K::Value>,
        b: &DeviceVec<K::Value>,
        x: &mut DeviceVec<K::Value>,
        opts: &CgOptions,
    ) -> Result<CgReport, RtError> {
        a.check_gpu(gpu)?;
        b.check_gpu(gpu, "b")?;
        x.check_gpu(gpu, "x")?;
        ops::same_len("b (must have the matrix's rows)", self.n, b.len())?;
        ops::same_len("x (must have the matrix's rows)", self.n, x.len())?;
        if a.rows() != self.n || a.cols() != self.n {
            return Err(RtError::DimensionMismatch {
                what: "the matrix (Cg was created for another size)",
                expected: self.n,
                found: a.rows(),
            });
        }
        if opts.tol.is_nan() || opts.tol < 0.0 {
            return Err(RtError::InvalidArgument(format!(
                "tol must be >= 0, got {}",
                opts.tol
            )));
        }
        let same_upload = match (&self.perm, a.perm_pin()) {
            (None, None) => true,
            (Some(mine), Some(theirs)) => {
                std::ptr::addr_eq(Arc::as_ptr(mine), Arc::as_ptr(&theirs))
            }
            _ => false,
        };
        if !same_upload {
            return Err(RtError::InvalidArgument(
                "Cg::solve needs the matrix upload Cg::new was given: a renumbered matrix's \
                 solve runs in its stored order (the Jacobi diagonal too), so another upload \
                 or another renumbering is refused"
                    .into(),
            ));
        }
        chunk_of(opts.chunk, opts.max_iters)?;
        // The workspace is put back whatever happens.
        let mut space = self.space.take();
        let result = self.solve_in(gpu, a, b, x, opts, &mut space);
        self.space = space;
        result
    }

    /// [`Cg::solve`] after the checks: through the stored-order copies of a
    /// renumbered matrix.
    fn solve_in(
        &mut self,
        gpu: &Gpu,
        a: &DeviceCsr<K::Value>,
        b: &DeviceVec<K::Value>,
        x: &mut DeviceVec<K::Value>,
        opts: &CgOptions,
        space: &mut Option<Stored<K::Value>>,
    ) -> Result<CgReport, RtError> {
        let Some(st) = space else {
            return self.solve_stored(gpu, a, b, x, opts);
        };
        a.to_internal(gpu, b, &mut st.b)?;
        a.to_internal(gpu, x, &mut st.x)?;
        let result = self.solve_stored(gpu, a, &st.b, &mut st.x, opts);
        a.to_user(gpu, &st.x, x)?;
        result
    }

    /// [`Cg::solve`] with `b` and `x` in the matrix's stored order.
    fn solve_stored(
        &mut self,
        gpu: &Gpu,
        a: &DeviceCsr<K::Value>,
        b: &DeviceVec<K::Value>,
        x: &mut DeviceVec<K::Value>,
        opts: &CgOptions,
    ) -> Result<CgReport, RtError> {
        let chunk = chunk_of(opts.chunk, opts.max_iters)?;
        let n = self.n as i32;
        // r = b - A x, ||b||, the threshold; then p = z, rho, r.r.
        self.kernel.spmv(gpu, &a.internal(), x, &mut self.q)?;
        ops::copy(gpu, b, &mut self.r)?;
        ops::axpy(gpu, Coef::host(-1.0), &self.q, &mut self.r)?;
        let bnorm_s = DeviceScalar::new(gpu)?;
        ops::nrm2(gpu, b, &bnorm_s)?;
        let bnorm = bnorm_s.get(gpu)?;
        let threshold = (opts.tol * bnorm).powi(2);
        let mut head = self.st.slice_mut(..10);
        gpu.outside_capture("Cg::solve")?.memcpy_htod(
            &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, threshold, 0.0, 0.0],
            &mut head,
        )?;
        let dinv = self.dinv.as_ref().map(|d| d.as_slice());
        ops::cg_init(
            gpu,
            n,
            self.r.as_slice(),
            dinv,
            self.p.as_mut_slice(),
            &self.st,
            &self.ticket,
        )?;
        let state = |gpu: &Gpu, st: &CudaSlice<f64>| -> Result<(usize, f64, f64), RtError> {
            let s = gpu.outside_capture("Cg::solve")?.clone_dtoh(st)?;
            Ok((s[5] as usize, s[6], s[8]))
        };
        let (_, flag, _) = state(gpu, &self.st)?;
        // Restarted once the graph is captured: the report times iterations.
        let mut t = Instant::now();
        let mut launched = 0;
        if flag == 0.0 && opts.max_iters > 0 {
            let Cg {
                kernel,
                r,
                p,
                q,
                st,
                ticket,
                pq,
                ..
            } = self;
            let graph = gpu.capture(|| {
                r.check_gpu(gpu, "r")?;
                gpu.pin(st);
                gpu.pin(ticket);
                for _ in 0..chunk {
                    // p . q stays in pq's accumulators: cg_update_r publishes it.
                    crate::launch::spmv_fused_unpublished(
                        kernel.spec(),
                        gpu,
                        a,
                        crate::renumber::Numbering::Internal,
                        p,
                        q,
                        Fused::Dot { w: p, dot: pq },
                    )?;
                    ops::cg_update_r(
                        gpu,
                        n,
                        q.as_slice(),
                        r.as_mut_slice(),
                        dinv,
                        st,
                        &pq.buf,
                        ticket,
                    )?;
                    ops::cg_update_xp(
                        gpu,
                        n,
                        x.as_mut_slice(),
                        p.as_mut_slice(),
                        r.as_slice(),
                        dinv,
                        st,
                    )?;
                }
                Ok(())
            })?;
            t = Instant::now();
            while launched < opts.max_iters {
                graph.launch(gpu)?;
                launched += chunk;
                // tol == 0: a fixed number of iterations, no host read per chunk.
                if opts.tol > 0.0 && state(gpu, st)?.1 != 0.0 {
                    break;
                }
            }
        }
        gpu.synchronize()?;
        let seconds = t.elapsed().as_secs_f64();
        let (iterations, _, rr) = state(gpu, &self.st)?;
        let rel_residual = if bnorm > 0.0 { rr.sqrt() / bnorm } else { 0.0 };
        Ok(CgReport {
            iterations,
            launched,
            rel_residual,
            converged: rel_residual <= opts.tol,
            seconds,
        })
    }
}

/// Options of [`pagerank`].
#[derive(Debug, Clone, Copy)]
pub struct PageRankOptions {
    /// Damping factor `d` (0.85 usually).
    pub damping: f64,
    /// Stop when `||x_k - x_{k-1}||_1 <= tol` (tested once per chunk).
    pub tol: f64,
    /// At most this many iterations (rounded up to whole chunks).
    pub max_iters: usize,
    /// Iterations per CUDA-graph replay, in `1..=`[`MAX_CHUNK`] (capped by
    /// `max_iters`); rounded up to an even number (the iterates alternate
    /// between two vectors).
    pub chunk: usize,
}

impl Default for PageRankOptions {
    fn default() -> Self {
        PageRankOptions {
            damping: 0.85,
            tol: 1e-6,
            max_iters: 1000,
            chunk: 10,
        }
    }
}

/// What [`pagerank`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageRankReport {
    /// Iterations run.
    pub iterations: usize,
    /// `||x_k - x_{k-1}||_1` after the last one.
    pub last_change: f64,
    /// Wall time of the iterations (capture excluded), seconds.
    pub seconds: f64,
}

/// The dangling-page indicator of a link matrix `m` (`m[i][j] != 0` when
/// page `j` links to page `i`): 1 for the columns without a nonzero.
pub fn dangling_mask(m: &Csr) -> Vec<f64> {
    let mut has = vec![false; m.cols()];
    for &j in m.indices() {
        has[j as usize] = true;
    }
    has.into_iter().map(|h| if h { 0.0 } else { 1.0 }).collect()
}

/// PageRank by power iteration on the device: `x <- d M x + ((1 - d) + d
/// m(x)) / n`, `m(x)` the rank on dangling pages (`mask . x`), with `M` the
/// column-stochastic link matrix. `x` is the start vector (e.g. all `1/n`)
/// and receives the result. `mask` is [`dangling_mask`] on the device.
pub fn pagerank<K: SpmvKernel>(
    gpu: &Gpu,
    kernel: &K,
    m: &DeviceCsr<K::Value>,
    mask: &DeviceVec<K::Value>,
    x: &mut DeviceVec<K::Value>,
    opts: &PageRankOptions,
) -> Result<PageRankReport, RtError> {
    m.check_gpu(gpu)?;
    mask.check_gpu(gpu, "the dangling mask")?;
    x.check_gpu(gpu, "x")?;
    let n = m.rows();
    if m.cols() != n {
        return Err(RtError::InvalidArgument(format!(
            "PageRank needs a square link matrix, got {} x {}",
            n,
            m.cols()
        )));
    }
    ops::same_len("the dangling mask", n, mask.len())?;
    ops::same_len("x", n, x.len())?;
    if !(0.0..1.0).contains(&opts.damping) {
        return Err(RtError::InvalidArgument(format!(
            "damping must be in [0, 1), got {}",
            opts.damping
        )));
    }
    require_epilogue(kernel, crate::Epilogue::AxpbyDot)?;
    chunk_of(opts.chunk, opts.max_iters)?;
    // Permuted space: the mask and x in the stored order for the whole run.
    if !m.renumbering().is_none() {
        let mut mi = DeviceVec::zeros(gpu, n)?;
        let mut xi = DeviceVec::zeros(gpu, n)?;
        m.to_internal(gpu, mask, &mut mi)?;
        m.to_internal(gpu, x, &mut xi)?;
        let report = pagerank_stored(gpu, kernel, m, &mi, &mut xi, opts);
        m.to_user(gpu, &xi, x)?;
        return report;
    }
    pagerank_stored(gpu, kernel, m, mask, x, opts)
}

/// [`pagerank`] with `mask` and `x` in the matrix's stored order.
fn pagerank_stored<K: SpmvKernel>(
    gpu: &Gpu,
    kernel: &K,
    m: &DeviceCsr<K::Value>,
    mask: &DeviceVec<K::Value>,
    x: &mut DeviceVec<K::Value>,
    opts: &PageRankOptions,
) -> Result<PageRankReport, RtError> {
    let n = m.rows();
    let m = &m.internal();
    // At most MAX_CHUNK (even): no overflow.
    let chunk = chunk_of(opts.chunk, opts.max_iters)?.next_multiple_of(2);
    let inv_n = 1.0 / n as f64;
    let mut y = DeviceVec::<K::Value>::zeros(gpu, n)?;
    // y = d M x + (1 - d) / n + (d / n) m(x): the dangling mass m(x) is the
    // dot scalar's value when the kernel starts, and the fused dot leaves
    // m(y) there for the next iteration.
    let coefs = DeviceCoefs::with_gamma_dot(
        gpu,
        opts.damping,
        0.0,
        (1.0 - opts.damping) * inv_n,
        opts.damping * inv_n,
    )?;
    let dangling = DeviceScalar::new(gpu)?;
    let change = DeviceScalar::new(gpu)?;
    ops::dot(gpu, mask, x, &dangling)?;
    let t;
    let mut iterations = 0;
    let mut last_change = f64::INFINITY;
    {
        let graph = gpu.capture(|| {
            for step in 0..chunk {
                let fused = Fused::AxpbyDot {
                    coefs: &coefs,
                    w: mask,
                    dot: &dangling,
                };
                if step % 2 == 0 {
                    kernel.spmv_fused(gpu, m, x, &mut y, fused)?;
                } else {
                    kernel.spmv_fused(gpu, m, &y, x, fused)?;
                }
            }
            ops::diff_l1(gpu, x, &y, &change)
        })?;
        // The iterations only: the capture (and the dot queued before it) not.
        gpu.synchronize()?;
        t = Instant::now();
        while iterations < opts.max_iters {
            graph.launch(gpu)?;
            iterations += chunk;
            // tol == 0: a fixed number of iterations, no host read per chunk.
            if opts.tol > 0.0 {
                last_change = change.get(gpu)?;
                if last_change <= opts.tol {
                    break;
                }
            }
        }
    }
    let seconds = if opts.tol > 0.0 {
        t.elapsed().as_secs_f64()
    } else {
        gpu.synchronize()?;
        last_change = change.get(gpu)?;
        t.elapsed().as_secs_f64()
    };
    Ok(PageRankReport {
        iterations,
        seconds,
        last_change,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_inverse_needs_a_diagonal() {
        let a = Csr::try_new(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![4.0, 1.0, 2.0]).unwrap();
        assert_eq!(jacobi_inverse(&a).unwrap(), vec![0.25, 0.5]);
        let no_diag = Csr::try_new(2, 2, vec![0, 1, 2], vec![1, 0], vec![1.0, 1.0]).unwrap();
        let err = jacobi_inverse(&no_diag).unwrap_err().to_string();
        assert!(err.contains("row 0"), "{err}");
        let rect = Csr::try_new(1, 2, vec![0, 1], vec![0], vec![1.0]).unwrap();
        assert!(matches!(
            jacobi_inverse(&rect),
            Err(RtError::InvalidArgument(_))
        ));
    }

    #[test]
    fn dangling_pages_are_empty_columns() {
        // Page 0 links to 1, page 1 links to 0 and 2, page 2 links nowhere.
        let m = Csr::try_new(3, 3, vec![0, 1, 2, 3], vec![1, 0, 1], vec![0.5, 1.0, 0.5]).unwrap();
        assert_eq!(dangling_mask(&m), vec![0.0, 0.0, 1.0]);
    }

    #[test]
    fn chunks_are_bounded_and_capped_by_the_iterations() {
        for bad in [0, MAX_CHUNK + 1, usize::MAX] {
            let err = chunk_of(bad, 100).unwrap_err().to_string();
            assert!(err.contains(&format!("got {bad}")), "{err}");
        }
        assert_eq!(chunk_of(MAX_CHUNK, usize::MAX).unwrap(), MAX_CHUNK);
        // Never more iterations captured than may run.
        assert_eq!(chunk_of(500, 7).unwrap(), 7);
        assert_eq!(chunk_of(25, 0).unwrap(), 1);
        // The defaults are accepted as they are.
        let c = CgOptions::default();
        assert_eq!(chunk_of(c.chunk, c.max_iters).unwrap(), c.chunk);
        let p = PageRankOptions::default();
        assert_eq!(chunk_of(p.chunk, p.max_iters).unwrap(), p.chunk);
    }
}
