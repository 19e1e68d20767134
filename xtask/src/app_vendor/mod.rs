//! Vendor baseline of the application benchmark: conjugate gradients (CG) and
//! PageRank written with cuSPARSE and cuBLAS, in two forms each.
//!
//! # Raw-handle contract
//!
//! The vendor code (this module, `cusparse.rs`, the gather floor and the
//! kernel lab) uses the `Gpu`'s raw stream and context (`Gpu::stream` and
//! `Gpu::context` are `unsafe`). Every such use keeps their contract: each
//! `Gpu` is used by one thread; no sparserl-rt capture is in progress while
//! raw work is enqueued, and no sparserl-rt call runs inside the captures
//! made here (`capture_graph` records only vendor calls and this module's
//! kernels); raw work touches only buffers allocated here (or the CSR arrays
//! of `DeviceCsr::raw_csr`, read only) with the lengths they were allocated
//! with; no other stream is made from the context; what is allocated on the
//! stream is freed by its owner on the same stream.
//!
//! # Setup (shared by both forms, not timed)
//!
//! * The CSR matrix is uploaded once (32-bit row pointers and column indices,
//!   values of the working precision, no extra layouts). One cuSPARSE handle
//!   and one cuBLAS handle are bound to the [`Gpu`]'s stream. One cuSPARSE
//!   CSR matrix descriptor and one dense-vector descriptor per device vector
//!   are created once. The `cusparseSpMV` work buffer is sized once with
//!   `cusparseSpMV_bufferSize` and `cusparseSpMV_preprocess` runs once when
//!   the library exports it. The algorithm is `CUSPARSE_SPMV_ALG_DEFAULT`.
//! * cuSPARSE stays in host pointer mode: the SpMV `alpha`/`beta` are host
//!   constants (CG: 1 and 0; PageRank: the damping factor and 0).
//! * cuBLAS gets a preallocated workspace (`cublasSetWorkspace`, set after
//!   `cublasSetStream`, which resets it), so no call allocates memory, also
//!   not while a CUDA graph is being captured.
//!
//! # CG (`A` symmetric positive definite, `x_0 = 0`, `r_0 = p_0 = b`)
//!
//! **Graph form** (the strongest vendor route): cuBLAS in
//! `CUBLAS_POINTER_MODE_DEVICE`, every scalar stays on the device, and
//! `graph_chunk` iterations are captured into one CUDA graph that is replayed.
//! One iteration enqueues nine operations and never synchronizes the host:
//!
//! 1. `cusparseSpMV`: `q = A p`;
//! 2. `cublas{S,D}dot`: `pq = p·q` into device memory;
//! 3. a one-thread kernel: `alpha = rr / pq`, `-alpha` (0 when `pq = 0`);
//! 4. `cublas{S,D}axpy`: `x += alpha p`;
//! 5. `cublas{S,D}axpy`: `r += (-alpha) q`;
//! 6. `cublas{S,D}dot`: `rr_new = r·r` into device memory;
//! 7. a one-thread kernel: `beta = rr_new / rr` (0 when `rr = 0`), `rr = rr_new`;
//! 8. `cublas{S,D}scal`: `p *= beta`;
//! 9. `cublas{S,D}axpy`: `p += 1·r` (the device scalar 1).
//!
//! **Textbook form**: the same sequence with cuBLAS in
//! `CUBLAS_POINTER_MODE_HOST` and no graph: each dot returns its result to
//! the host (a host synchronization, two per iteration), `alpha` and `beta`
//! are computed on the host and passed to axpy/scal as host scalars, and
//! every call is launched individually.
//!
//! # PageRank (`f32`; `M` column-stochastic, `x_0 = 1/n`)
//!
//! One iteration computes `y = d M x + ((1 - d) + d Σ_{j dangling} x_j) / n`
//! and swaps `x` and `y` (two vectors, two dense-vector descriptors; the
//! iterations alternate between them, so the captured chunk is even).
//!
//! **Graph form** (the strongest vendor route): cuBLAS in device pointer
//! mode, captured into one CUDA graph per `graph_chunk` iterations:
//!
//! 1. `cublasSdot`: dangling mass `x·mask` (mask = 1 on dangling pages, else
//!    0) into device memory;
//! 2. a one-thread kernel: `c = (1 - d)/n + d · dangling / n` on the device;
//! 3. `cusparseSpMV`: `y = d M x` (`alpha = d`, `beta = 0`);
//! 4. a grid-stride kernel: `y += c`, reading `c` from device memory (one
//!    read and one write of `y`; less traffic than `cublasSaxpy` with a
//!    vector of ones).
//!
//! **Textbook form**: host pointer mode, no graph: the dot returns the
//! dangling mass to the host (one host synchronization per iteration), `c`
//! is computed on the host and passed by value to the same `y += c` kernel.
//!
//! # Timing
//!
//! Both forms run exactly `iterations` iterations from the initial state.
//! The graph form captures `graph_chunk` iterations (the remainder in a
//! second graph), uploads the graphs, replays once untimed, resets the
//! state, then times all replays between two CUDA events on the stream.
//! The textbook form runs a short untimed warm-up, resets, and times the
//! `iterations` iterations between two CUDA events (host synchronizations
//! included). Both report microseconds per iteration. The small kernels are
//! compiled once with NVRTC.

use crate::cusparse::{check as sp_check, data_type, has_symbol, library_status};
use anyhow::{Context, Result, anyhow, bail, ensure};
use cudarc::cublas::sys as blas;
use cudarc::cusparse::sys as sp;
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaGraph, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig,
    PushKernelArg, sys as drv,
};
use serde::Serialize;
use sparserl_rt::{Csr, DeviceCsr, Gpu, Layouts, RtError, Scalar, ValueType};
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

/// Bytes of the preallocated cuBLAS workspace (the size NVIDIA recommends
/// for Hopper; dot, axpy and scal need far less).
pub const BLAS_WORKSPACE_BYTES: usize = 32 << 20;

/// Slots of the CG device scalars.
const CG_RR: usize = 0;
const CG_PQ: usize = 1;
const CG_ALPHA: usize = 2;
const CG_NEG_ALPHA: usize = 3;
const CG_RR_NEW: usize = 4;
const CG_BETA: usize = 5;
const CG_ONE: usize = 6;
const CG_SLOTS: usize = 8;

/// Slots of the PageRank device scalars.
const PR_DANGLING: usize = 0;
const PR_C: usize = 1;
const PR_SLOTS: usize = 2;

/// Untimed warm-up iterations of the textbook forms.
const TEXTBOOK_WARMUP: usize = 5;

/// Threads per block of the `y += c` kernel.
const ADD_BLOCK: u32 = 256;

/// Kernel entry names (unique in the [`Gpu`]'s function registry).
const CG_ALPHA_F32: &str = "sparserl_vendor_cg_alpha_f32";
const CG_ALPHA_F64: &str = "sparserl_vendor_cg_alpha_f64";
const CG_BETA_F32: &str = "sparserl_vendor_cg_beta_f32";
const CG_BETA_F64: &str = "sparserl_vendor_cg_beta_f64";
const PR_TELEPORT: &str = "sparserl_vendor_pr_teleport";
const PR_ADD_DEV: &str = "sparserl_vendor_pr_add_dev";
const PR_ADD_HOST: &str = "sparserl_vendor_pr_add_host";

/// CUDA C++ source of the scalar kernels of both applications.
fn kernel_source() -> String {
    let mut src = String::new();
    for (t, s) in [("float", "f32"), ("double", "f64")] {
        src.push_str(&format!(
            r#"
extern "C" __global__ void sparserl_vendor_cg_alpha_{s}({t}* s) {{
    const {t} rr = s[{CG_RR}];
    const {t} pq = s[{CG_PQ}];
    const {t} a = pq != ({t})0 ? rr / pq : ({t})0;
    s[{CG_ALPHA}] = a;
    s[{CG_NEG_ALPHA}] = -a;
}}
extern "C" __global__ void sparserl_vendor_cg_beta_{s}({t}* s) {{
    const {t} rr = s[{CG_RR}];
    const {t} rr_new = s[{CG_RR_NEW}];
    s[{CG_BETA}] = rr != ({t})0 ? rr_new / rr : ({t})0;
    s[{CG_RR}] = rr_new;
}}
"#
        ));
    }
    src.push_str(&format!(
        r#"
extern "C" __global__ void {PR_TELEPORT}(float* s, float damping, float inv_n) {{
    s[{PR_C}] = (1.0f - damping) * inv_n + damping * s[{PR_DANGLING}] * inv_n;
}}
extern "C" __global__ void {PR_ADD_DEV}(float* __restrict__ y, const float* __restrict__ s, int n) {{
    const float c = s[{PR_C}];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] += c;
}}
extern "C" __global__ void {PR_ADD_HOST}(float* __restrict__ y, float c, int n) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] += c;
}}
"#
    ));
    src
}

/// Loads `entries` of [`kernel_source`], compiling it at most once.
fn load_kernels<const N: usize>(gpu: &Gpu, entries: [&str; N]) -> Result<[CudaFunction; N]> {
    let mut ptx: Option<String> = None;
    let mut out = Vec::with_capacity(N);
    for entry in entries {
        // SAFETY: the entries of `kernel_source` have names of their own
        // (`sparserl_vendor_*`), one source per name; launched with its
        // argument lists below.
        let f = unsafe {
            gpu.function_or_load(entry, || {
                if ptx.is_none() {
                    let p = sparserl_rt::nvrtc::compile_ptx(&kernel_source(), &gpu.arch(), &[])
                        .map_err(|e| RtError::Compile(e.to_string()))?;
                    ptx = Some(p);
                }
                Ok(ptx.clone().unwrap_or_default())
            })
        }
        .with_context(|| format!("loading kernel {entry}"))?;
        out.push(f);
    }
    out.try_into().map_err(|_| anyhow!("kernel count mismatch"))
}

/// `n` as a C `int` (cuBLAS and the kernels take 32-bit lengths).
fn c_len(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| anyhow!("length {n} does not fit a 32-bit int"))
}

/// Whether `T` is `f32` (else `f64`). The size assertion ties the raw-pointer
/// casts of the cuBLAS calls to the value type.
fn is_f32<T: Scalar>() -> bool {
    match T::TYPE {
        ValueType::F32 => {
            assert_eq!(std::mem::size_of::<T>(), 4);
            true
        }
        ValueType::F64 => {
            assert_eq!(std::mem::size_of::<T>(), 8);
            false
        }
    }
}

/// Device address of element `i` of `s`.
fn elem_ptr<T: Scalar>(gpu: &Gpu, s: &CudaSlice<T>, i: usize) -> Result<drv::CUdeviceptr> {
    ensure!(i < s.len(), "scalar slot {i} out of range");
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    let (p, _g) = s.device_ptr(unsafe { gpu.stream() });
    Ok(p + (i * std::mem::size_of::<T>()) as drv::CUdeviceptr)
}

/// Timing events (the default flags of `new_event` disable timing).
fn timing_event(gpu: &Gpu) -> Result<CudaEvent> {
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    unsafe { gpu.context() }
        .new_event(Some(drv::CUevent_flags::CU_EVENT_DEFAULT))
        .context("creating a timing event")
}

/// Milliseconds between two events recorded around `enqueue` on the stream.
fn timed_ms(gpu: &Gpu, enqueue: impl FnOnce() -> Result<()>) -> Result<f64> {
    let (start, stop) = (timing_event(gpu)?, timing_event(gpu)?);
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    let stream = unsafe { gpu.stream() };
    stream.synchronize()?;
    start.record(stream)?;
    enqueue()?;
    stop.record(stream)?;
    Ok(start.elapsed_ms(&stop)? as f64)
}

/// Captures `n` calls of `step(i)` into one CUDA graph on the Gpu's stream
/// (thread-local capture mode, as the workspace's measurement harness does).
fn capture_graph(
    gpu: &Gpu,
    n: usize,
    step: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<CudaGraph> {
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    let stream = unsafe { gpu.stream() };
    stream.synchronize()?;
    stream
        .begin_capture(drv::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .context("beginning stream capture")?;
    let mut captured = Ok(());
    for i in 0..n {
        captured = step(i);
        if captured.is_err() {
            break;
        }
    }
    // Always end the capture, also after a failed step, so the stream is usable.
    let ended = stream.end_capture(drv::CUgraphInstantiate_flags(0));
    captured.context("enqueueing an iteration during stream capture")?;
    let graph = ended
        .context("ending stream capture")?
        .ok_or_else(|| anyhow!("stream capture produced no graph"))?;
    graph.upload().context("uploading the graph")?;
    Ok(graph)
}

/// How `iterations` iterations split into replays of captured graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChunkPlan {
    /// Iterations per replay of the main graph (0: no main graph).
    chunk: usize,
    /// Replays of the main graph.
    full: usize,
    /// Iterations of the remainder graph (0: none).
    rest: usize,
}

/// Splits `iterations` into `full` replays of `chunk` iterations plus `rest`.
/// `chunk` is `graph_chunk` clamped to `1..=iterations` (0 means all); with
/// `even`, an odd chunk is made even (PageRank alternates two vectors, so
/// every replay of the main graph must end where it started).
fn chunk_plan(iterations: usize, graph_chunk: usize, even: bool) -> ChunkPlan {
    if iterations == 0 {
        return ChunkPlan {
            chunk: 0,
            full: 0,
            rest: 0,
        };
    }
    let mut chunk = if graph_chunk == 0 {
        iterations
    } else {
        graph_chunk.min(iterations)
    };
    if even && chunk % 2 == 1 {
        chunk = if chunk < iterations {
            chunk + 1
        } else {
            chunk - 1
        };
    }
    if chunk == 0 {
        return ChunkPlan {
            chunk: 0,
            full: 0,
            rest: iterations,
        };
    }
    ChunkPlan {
        chunk,
        full: iterations / chunk,
        rest: iterations % chunk,
    }
}

/// Captures the graphs of `plan` (`step(i)` enqueues iteration `i` of a
/// replay), replays the first once untimed after `reset`, resets again and
/// returns the milliseconds of all replays of one full run.
fn time_graph_run(
    gpu: &Gpu,
    plan: ChunkPlan,
    step: &mut dyn FnMut(usize) -> Result<()>,
    reset: &mut dyn FnMut() -> Result<()>,
) -> Result<f64> {
    let main = if plan.full > 0 {
        Some(capture_graph(gpu, plan.chunk, step)?)
    } else {
        None
    };
    let rest = if plan.rest > 0 {
        Some(capture_graph(gpu, plan.rest, step)?)
    } else {
        None
    };
    let Some(first) = main.as_ref().or(rest.as_ref()) else {
        bail!("no iterations to run");
    };
    reset()?;
    first.launch().context("warm-up replay")?;
    gpu.synchronize()?;
    reset()?;
    timed_ms(gpu, || {
        if let Some(g) = &main {
            for _ in 0..plan.full {
                g.launch()?;
            }
        }
        if let Some(g) = &rest {
            g.launch()?;
        }
        Ok(())
    })
}

mod cg;
mod cublas;
pub mod gcn;
mod pagerank;
mod spmv;

pub use cg::{VendorCg, run_cg};
pub(crate) use cublas::Blas;
pub use cublas::blas_library_status;
use cublas::{In, Mode, Out};
pub use pagerank::{VendorPr, run_pagerank};
use spmv::SpmvPlan;

#[cfg(test)]
mod tests;
