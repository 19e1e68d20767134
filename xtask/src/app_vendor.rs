//! Vendor baseline of the application benchmark: conjugate gradients (CG) and
//! PageRank written with cuSPARSE and cuBLAS, in two forms each.
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
        let f = gpu
            .function_or_load(entry, || {
                if ptx.is_none() {
                    let p = sparserl_rt::nvrtc::compile_ptx(&kernel_source(), &gpu.arch(), &[])
                        .map_err(|e| RtError::Compile(e.to_string()))?;
                    ptx = Some(p);
                }
                Ok(ptx.clone().unwrap_or_default())
            })
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
    let (p, _g) = s.device_ptr(gpu.stream());
    Ok(p + (i * std::mem::size_of::<T>()) as drv::CUdeviceptr)
}

/// Timing events (the default flags of `new_event` disable timing).
fn timing_event(gpu: &Gpu) -> Result<CudaEvent> {
    gpu.context()
        .new_event(Some(drv::CUevent_flags::CU_EVENT_DEFAULT))
        .context("creating a timing event")
}

/// Milliseconds between two events recorded around `enqueue` on the stream.
fn timed_ms(gpu: &Gpu, enqueue: impl FnOnce() -> Result<()>) -> Result<f64> {
    let (start, stop) = (timing_event(gpu)?, timing_event(gpu)?);
    let stream = gpu.stream();
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
    let stream = gpu.stream();
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

// ---------------------------------------------------------------- cuBLAS --

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

fn blas_check(status: blas::cublasStatus_t, what: &str) -> Result<()> {
    if status == blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(anyhow!("{what} failed: {status:?}"))
    }
}

/// cuBLAS pointer mode of scalar arguments and results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Host,
    Device,
}

/// A scalar input: a host value, or slot `i` of a device slice.
#[derive(Clone, Copy)]
enum In<'a, T> {
    Host(T),
    Dev(&'a CudaSlice<T>, usize),
}

/// A scalar output: a host location, or slot `i` of a device slice.
enum Out<'a, T> {
    Host(&'a mut T),
    Dev(&'a mut CudaSlice<T>, usize),
}

/// A cuBLAS handle on the Gpu's stream with a preallocated workspace. Every
/// call checks that its scalar arguments match the current pointer mode.
struct Blas {
    gpu: Gpu,
    handle: blas::cublasHandle_t,
    mode: Cell<Mode>,
    workspace: Option<CudaSlice<u8>>,
}

impl Blas {
    fn new(gpu: &Gpu) -> Result<Self> {
        blas_library_status()?;
        gpu.context()
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
        let stream = gpu.stream();
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

    fn set_mode(&self, mode: Mode) -> Result<()> {
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

    fn require(&self, mode: Mode) -> Result<()> {
        ensure!(
            self.mode.get() == mode,
            "cuBLAS is in {:?} pointer mode, the call passes {mode:?} scalars",
            self.mode.get()
        );
        Ok(())
    }

    /// Raw address of a scalar input; `keep` holds a host value while used.
    fn input_ptr<T: Scalar>(&self, alpha: In<'_, T>, keep: &mut T) -> Result<*const c_void> {
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
    fn dot<T: Scalar>(
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
        let stream = self.gpu.stream();
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
    fn axpy<T: Scalar>(
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
        let stream = self.gpu.stream();
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
    fn scal<T: Scalar>(&self, n: usize, alpha: In<'_, T>, x: &mut CudaSlice<T>) -> Result<()> {
        ensure!(x.len() >= n, "scal: vector shorter than {n}");
        let len = c_len(n)?;
        let stream = self.gpu.stream();
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

    fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, |w| w.num_bytes())
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        let _ = self.gpu.stream().synchronize();
        let _ = self.gpu.context().bind_to_thread();
        if !self.handle.is_null() {
            // SAFETY: created by cublasCreate, destroyed once; queued work
            // has finished. The workspace is freed afterwards (field drop).
            unsafe { blas::cublasDestroy_v2(self.handle) };
        }
    }
}

// -------------------------------------------------------------- cuSPARSE --

/// One CSR matrix with `cusparseSpMV` prepared for a set of dense vectors.
///
/// The descriptors hold raw addresses of the matrix arrays and vectors; the
/// owner keeps those alive and unmoved-in-device-memory for the plan's
/// lifetime (device allocations never move) and drops the plan first.
struct SpmvPlan<T: Scalar> {
    gpu: Gpu,
    handle: sp::cusparseHandle_t,
    mat: sp::cusparseSpMatDescr_t,
    vecs: Vec<sp::cusparseDnVecDescr_t>,
    buffer: Option<CudaSlice<u8>>,
    preprocess: bool,
    _t: PhantomData<T>,
}

impl<T: Scalar> SpmvPlan<T> {
    fn new(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<Self> {
        library_status()?;
        gpu.context()
            .bind_to_thread()
            .context("binding the CUDA context")?;
        let stream = gpu.stream();
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
        let (rp, _g1) = a.indptr().device_ptr(stream);
        let (ci, _g2) = a.indices().device_ptr(stream);
        let (va, _g3) = a.values().device_ptr(stream);
        // SAFETY: the arrays hold rows + 1 / nnz / nnz valid entries (padded
        // to at least one), belong to the owner's DeviceCsr which outlives the
        // plan, and cuSPARSE only reads them.
        sp_check(
            unsafe {
                sp::cusparseCreateCsr(
                    &mut me.mat,
                    a.rows() as i64,
                    a.cols() as i64,
                    a.nnz() as i64,
                    rp as *mut c_void,
                    ci as *mut c_void,
                    va as *mut c_void,
                    sp::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sp::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sp::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    data_type(T::TYPE),
                )
            },
            "cusparseCreateCsr",
        )?;
        Ok(me)
    }

    /// Creates a dense-vector descriptor of the first `len` entries of `v`
    /// and returns its index.
    fn add_vector(&mut self, v: &CudaSlice<T>, len: usize) -> Result<usize> {
        ensure!(v.len() >= len, "vector shorter than {len}");
        let mut d: sp::cusparseDnVecDescr_t = std::ptr::null_mut();
        let (p, _g) = v.device_ptr(self.gpu.stream());
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
    fn prepare(&mut self, alpha: T, beta: T, x: usize, y: usize) -> Result<()> {
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
        let stream = self.gpu.stream().clone();
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
    fn spmv(&mut self, alpha: T, beta: T, x: usize, y: usize) -> Result<()> {
        ensure!(x < self.vecs.len() && y < self.vecs.len(), "no such vector");
        let stream = self.gpu.stream().clone();
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

    fn buffer_bytes(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.num_bytes())
    }
}

impl<T: Scalar> Drop for SpmvPlan<T> {
    fn drop(&mut self) {
        let _ = self.gpu.stream().synchronize();
        let _ = self.gpu.context().bind_to_thread();
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

// -------------------------------------------------------------------- CG --

/// `||b - A x|| / ||b||` in float64 on the host (`||b - A x||` when `b = 0`).
fn rel_residual(a: &Csr, b: &[f64], x: &[f64]) -> f64 {
    let ax = a.spmv_f64(x);
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
        let stream = gpu.stream();
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
        let stream = self.gpu.stream().clone();
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
        let stream = self.gpu.stream();
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
        Ok(self.gpu.stream().clone_dtoh(&self.x)?)
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

// -------------------------------------------------------------- PageRank --

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
fn dangling_mask(n: usize, dangling: &[u32]) -> Result<Vec<f32>> {
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
        let stream = gpu.stream();
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
        self.gpu.stream().memcpy_htod(&x0, &mut self.v[0])?;
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
        let stream = self.gpu.stream().clone();
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
        let stream = self.gpu.stream().clone();
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
        Ok(self.gpu.stream().clone_dtoh(&self.v[iterations % 2])?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_plans_cover_every_iteration() {
        for iterations in 1..40 {
            for graph_chunk in 0..45 {
                for even in [false, true] {
                    let p = chunk_plan(iterations, graph_chunk, even);
                    assert_eq!(p.chunk * p.full + p.rest, iterations);
                    assert!(p.chunk <= iterations);
                    if even {
                        assert_eq!(p.chunk % 2, 0, "{p:?}");
                    }
                    if p.chunk > 0 {
                        assert!(p.rest < p.chunk);
                    }
                }
            }
        }
        assert_eq!(
            chunk_plan(100, 50, false),
            ChunkPlan {
                chunk: 50,
                full: 2,
                rest: 0
            }
        );
        assert_eq!(
            chunk_plan(1, 50, true),
            ChunkPlan {
                chunk: 0,
                full: 0,
                rest: 1
            }
        );
        assert_eq!(chunk_plan(0, 50, false).rest, 0);
    }

    #[test]
    fn kernel_source_names_every_entry() {
        let src = kernel_source();
        for e in [
            CG_ALPHA_F32,
            CG_ALPHA_F64,
            CG_BETA_F32,
            CG_BETA_F64,
            PR_TELEPORT,
            PR_ADD_DEV,
            PR_ADD_HOST,
        ] {
            assert_eq!(
                src.matches(&format!("void {e}(")).count(),
                1,
                "{e} in\n{src}"
            );
        }
        assert_eq!(src.matches('{').count(), src.matches('}').count());
        assert!(
            blas_library_candidates()
                .iter()
                .any(|n| n.contains("cublas"))
        );
    }

    #[test]
    fn kernels_compile_when_nvrtc_is_present() {
        let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
        let toolkit = match sparserl_rt::nvrtc::locate() {
            Ok(t) => t,
            Err(e) if require => panic!("SPARSERL_REQUIRE_CUDA=1 but {e}"),
            Err(e) => {
                eprintln!("app_vendor kernels: SKIPPED (no NVRTC)\n{e}");
                return;
            }
        };
        let ptx = sparserl_rt::nvrtc::compile_ptx(&kernel_source(), "sm_90", &[]).unwrap();
        for e in [
            CG_ALPHA_F32,
            CG_ALPHA_F64,
            CG_BETA_F32,
            CG_BETA_F64,
            PR_TELEPORT,
            PR_ADD_DEV,
            PR_ADD_HOST,
        ] {
            assert!(
                ptx.contains(&format!(".entry {e}(")),
                "{e} missing from the PTX"
            );
        }
        if toolkit.ptxas.is_some() {
            let report = sparserl_rt::nvrtc::ptxas_check(&ptx, "sm_90").unwrap();
            assert_eq!(report.total_spill_bytes(), 0);
        }
    }

    #[test]
    fn residual_and_mask_helpers() {
        // [[2, 1], [1, 3]] x = b with x = [1, 1]: b = [3, 4].
        let a = Csr::try_new(
            2,
            2,
            vec![0, 2, 4],
            vec![0, 1, 0, 1],
            vec![2.0, 1.0, 1.0, 3.0],
        )
        .unwrap();
        assert!(rel_residual(&a, &[3.0, 4.0], &[1.0, 1.0]) < 1e-15);
        assert!((rel_residual(&a, &[3.0, 4.0], &[0.0, 0.0]) - 1.0).abs() < 1e-15);
        assert_eq!(dangling_mask(3, &[2, 0]).unwrap(), vec![1.0, 0.0, 1.0]);
        assert!(dangling_mask(3, &[3]).is_err());
    }
}
