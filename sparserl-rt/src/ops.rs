//! Device vector operations (BLAS-1 and the element-wise updates solvers
//! need), for `f32` and `f64`, on the [`Gpu`]'s stream.
//!
//! The kernels are sparserl-rt's own (`kernels/vector_ops.cu`), compiled
//! ahead of time to PTX and embedded, so a user binary needs no compiler and
//! no cuBLAS. Every call:
//! - checks lengths and that every operand belongs to `gpu`
//!   ([`RtError::DimensionMismatch`], [`RtError::ForeignOperand`]) before
//!   any device work, and never panics;
//! - only enqueues work (no allocation, no host synchronisation), so it can
//!   be captured into a CUDA graph ([`Gpu::capture`]);
//! - leaves reduction results on the device ([`DeviceScalar`]); read them
//!   with [`DeviceScalar::get`] when the host needs the number.
//!
//! Sums are accumulated in `f64` for both value types.
//!
//! ```no_run
//! use sparserl_rt::{DeviceScalar, DeviceVec, Gpu, ops, Coef};
//! # fn main() -> Result<(), sparserl_rt::RtError> {
//! let gpu = Gpu::new(0)?;
//! let x = DeviceVec::from_host(&gpu, &[1.0f32, 2.0, 3.0])?;
//! let mut y = DeviceVec::from_host(&gpu, &[1.0f32, 1.0, 1.0])?;
//! ops::axpy(&gpu, Coef::host(2.0), &x, &mut y)?; // y = 2 x + y
//! let d = DeviceScalar::new(&gpu)?;
//! ops::dot(&gpu, &x, &y, &d)?; // stays on the device
//! assert_eq!(d.get(&gpu)?, 3.0 + 10.0 + 21.0);
//! # Ok(()) }
//! ```

use crate::device::{DeviceVec, Gpu, Scalar};
use crate::error::RtError;
use crate::scalar::{Coef, DeviceScalar};
use crate::variant::ValueType;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchArgs, LaunchConfig, PushKernelArg};

/// The PTX of `kernels/vector_ops.cu` (compute capability 8.0, loaded on
/// any newer device by the driver's JIT).
pub const VECTOR_OPS_PTX: &str = include_str!("../kernels/vector_ops.ptx");
/// The CUDA source the PTX was compiled from.
pub const VECTOR_OPS_SOURCE: &str = include_str!("../kernels/vector_ops.cu");

/// Threads per block of every vector kernel (`VB` in the source).
pub(crate) const BLOCK: u32 = 256;

/// The entry of `names` (`[f32 entry, f64 entry]`) for `T` in the
/// vector-op module.
pub(crate) fn func<T: Scalar>(
    gpu: &Gpu,
    names: [&'static str; 2],
) -> Result<CudaFunction, RtError> {
    let entry = match T::TYPE {
        ValueType::F32 => names[0],
        ValueType::F64 => names[1],
    };
    gpu.static_function(VECTOR_OPS_PTX, entry)
}

/// Launch shape for `n` elements: enough blocks to fill the device (8 per
/// SM), fewer for short vectors; grid-stride loops cover the rest.
pub(crate) fn config(gpu: &Gpu, n: usize) -> LaunchConfig {
    let want = n.div_ceil(BLOCK as usize).max(1);
    let cap = (gpu.sm_count() * 8).max(1);
    LaunchConfig {
        grid_dim: (want.min(cap) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `n` as the kernels' `int`, or an error for vectors beyond `i32::MAX`.
pub(crate) fn int_len(n: usize) -> Result<i32, RtError> {
    i32::try_from(n).map_err(|_| {
        RtError::InvalidArgument(format!(
            "vectors of {n} elements exceed the kernels' 32-bit index range"
        ))
    })
}

pub(crate) fn same_len(what: &'static str, expected: usize, found: usize) -> Result<(), RtError> {
    if expected != found {
        return Err(RtError::DimensionMismatch {
            what,
            expected,
            found,
        });
    }
    Ok(())
}

/// Pushes a coefficient as `(double host, const double* dev)`.
fn push_coef<'a>(b: &mut LaunchArgs<'a>, c: &'a Coef<'a>, null: &'a u64) {
    b.arg(&c.host);
    match c.dev {
        Some(s) => b.arg(&*s.buf),
        None => b.arg(null),
    };
}

fn check_coef(gpu: &Gpu, c: &Coef<'_>) -> Result<(), RtError> {
    match c.dev {
        Some(s) => s.check_gpu(gpu, "a coefficient's device scalar"),
        None => Ok(()),
    }
}

/// Launches after the caller pushed the arguments.
///
/// # Safety
/// The caller pushed arguments matching the entry's parameter list in type
/// and order, every buffer long enough for the `n` the kernel was given,
/// all on `gpu`'s stream.
unsafe fn launch(mut b: LaunchArgs<'_>, cfg: LaunchConfig) -> Result<(), RtError> {
    // SAFETY: forwarded from the caller's contract.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

/// `x[i] = value` for every element.
pub fn fill<T: Scalar>(gpu: &Gpu, x: &mut DeviceVec<T>, value: T) -> Result<(), RtError> {
    x.check_gpu(gpu, "x")?;
    let n = int_len(x.len())?;
    if n == 0 {
        return Ok(());
    }
    let f = func::<T>(gpu, ["sparserl_fill_f32", "sparserl_fill_f64"])?;
    let s = gpu.enqueue("ops::fill")?;
    let mut b = s.launch_builder(&f);
    b.arg(&n).arg(&value).arg(x.as_mut_slice());
    // SAFETY: (int n, T v, T* x) as in vector_ops.cu; x holds n elements and
    // belongs to this stream (checked).
    unsafe { launch(b, config(gpu, n as usize)) }
}

/// `y = x` (lengths must match).
pub fn copy<T: Scalar>(gpu: &Gpu, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), RtError> {
    x.check_gpu(gpu, "x")?;
    y.check_gpu(gpu, "y")?;
    same_len("y (must match x)", x.len(), y.len())?;
    if x.is_empty() {
        return Ok(());
    }
    let n = x.len();
    let src = x.as_slice().slice(..n);
    let mut dst = y.as_mut_slice().slice_mut(..n);
    gpu.enqueue("ops::copy")?.memcpy_dtod(&src, &mut dst)?;
    Ok(())
}

/// `x = a x`.
pub fn scal<T: Scalar>(gpu: &Gpu, a: Coef<'_>, x: &mut DeviceVec<T>) -> Result<(), RtError> {
    x.check_gpu(gpu, "x")?;
    check_coef(gpu, &a)?;
    let n = int_len(x.len())?;
    if n == 0 {
        return Ok(());
    }
    let f = func::<T>(gpu, ["sparserl_scal_f32", "sparserl_scal_f64"])?;
    let null = 0u64;
    let s = gpu.enqueue("ops::scal")?;
    let mut b = s.launch_builder(&f);
    b.arg(&n);
    push_coef(&mut b, &a, &null);
    b.arg(x.as_mut_slice());
    // SAFETY: (int n, double ah, const double* ad, T* x); ad is null or a
    // 2-element scalar of this stream; x holds n elements (checked).
    unsafe { launch(b, config(gpu, n as usize)) }
}

/// `y = a x + b y` (`y` is not read when `b` is 0: it may hold anything).
pub fn axpby<T: Scalar>(
    gpu: &Gpu,
    a: Coef<'_>,
    x: &DeviceVec<T>,
    b: Coef<'_>,
    y: &mut DeviceVec<T>,
) -> Result<(), RtError> {
    x.check_gpu(gpu, "x")?;
    y.check_gpu(gpu, "y")?;
    check_coef(gpu, &a)?;
    check_coef(gpu, &b)?;
    same_len("y (must match x)", x.len(), y.len())?;
    let n = int_len(x.len())?;
    if n == 0 {
        return Ok(());
    }
    let f = func::<T>(gpu, ["sparserl_axpby_f32", "sparserl_axpby_f64"])?;
    let null = 0u64;
    let s = gpu.enqueue("ops::axpby")?;
    let mut l = s.launch_builder(&f);
    l.arg(&n);
    push_coef(&mut l, &a, &null);
    push_coef(&mut l, &b, &null);
    l.arg(x.as_slice()).arg(y.as_mut_slice());
    // SAFETY: (int n, double, const double*, double, const double*, const T*
    // x, T* y); x and y hold n elements, are distinct buffers (one is
    // borrowed mutably) and belong to this stream (checked).
    unsafe { launch(l, config(gpu, n as usize)) }
}

/// `y = a x + y`.
pub fn axpy<T: Scalar>(
    gpu: &Gpu,
    a: Coef<'_>,
    x: &DeviceVec<T>,
    y: &mut DeviceVec<T>,
) -> Result<(), RtError> {
    axpby(gpu, a, x, Coef::host(1.0), y)
}

/// `c = a .* b` (element-wise product; e.g. a Jacobi preconditioner step).
pub fn mul<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceVec<T>,
    b: &DeviceVec<T>,
    c: &mut DeviceVec<T>,
) -> Result<(), RtError> {
    a.check_gpu(gpu, "a")?;
    b.check_gpu(gpu, "b")?;
    c.check_gpu(gpu, "c")?;
    same_len("b (must match a)", a.len(), b.len())?;
    same_len("c (must match a)", a.len(), c.len())?;
    let n = int_len(a.len())?;
    if n == 0 {
        return Ok(());
    }
    let f = func::<T>(gpu, ["sparserl_mul_f32", "sparserl_mul_f64"])?;
    let s = gpu.enqueue("ops::mul")?;
    let mut l = s.launch_builder(&f);
    l.arg(&n)
        .arg(a.as_slice())
        .arg(b.as_slice())
        .arg(c.as_mut_slice());
    // SAFETY: (int n, const T* a, const T* b, T* c), n elements each, c a
    // distinct buffer (borrowed mutably), all on this stream (checked).
    unsafe { launch(l, config(gpu, n as usize)) }
}

/// The reductions of `sparserl_reduce` (its `mode`).
#[derive(Clone, Copy)]
enum Reduce {
    Dot = 0,
    Nrm2 = 1,
    DiffL1 = 2,
    Sum = 3,
}

fn reduce<T: Scalar>(
    gpu: &Gpu,
    mode: Reduce,
    x: &DeviceVec<T>,
    y: Option<&DeviceVec<T>>,
    out: &DeviceScalar,
) -> Result<(), RtError> {
    x.check_gpu(gpu, "x")?;
    out.check_gpu(gpu, "the result scalar")?;
    if let Some(y) = y {
        y.check_gpu(gpu, "y")?;
        same_len("y (must match x)", x.len(), y.len())?;
    }
    let n = int_len(x.len())?;
    let f = func::<T>(gpu, ["sparserl_reduce_f32", "sparserl_reduce_f64"])?;
    let m = mode as i32;
    let s = gpu.enqueue("a vector reduction")?;
    let mut l = s.launch_builder(&f);
    l.arg(&n).arg(&m).arg(x.as_slice());
    match y {
        Some(y) => l.arg(y.as_slice()),
        None => l.arg(x.as_slice()),
    };
    l.arg(&*out.buf).arg(&*out.ticket);
    // SAFETY: (int n, int mode, const T* x, const T* y, double* out,
    // unsigned* ticket); x and y hold n elements (y = x when the mode reads
    // only x); out is a scalar (SCALAR_LEN doubles) and ticket one counter,
    // zero-accumulated between launches as the kernel leaves them; all on
    // this stream (checked). n == 0 still launches so the result becomes 0.
    // The scalar is written through a shared reference: the host never
    // holds a reference into its device memory, and all writers and readers
    // are ordered on this one stream.
    unsafe { launch(l, config(gpu, n as usize)) }
}

/// `out = x . y`.
pub fn dot<T: Scalar>(
    gpu: &Gpu,
    x: &DeviceVec<T>,
    y: &DeviceVec<T>,
    out: &DeviceScalar,
) -> Result<(), RtError> {
    reduce(gpu, Reduce::Dot, x, Some(y), out)
}

/// `out = ||x||_2`.
pub fn nrm2<T: Scalar>(gpu: &Gpu, x: &DeviceVec<T>, out: &DeviceScalar) -> Result<(), RtError> {
    reduce(gpu, Reduce::Nrm2, x, None, out)
}

/// `out = ||x - y||_1` (e.g. PageRank's convergence test).
pub fn diff_l1<T: Scalar>(
    gpu: &Gpu,
    x: &DeviceVec<T>,
    y: &DeviceVec<T>,
    out: &DeviceScalar,
) -> Result<(), RtError> {
    reduce(gpu, Reduce::DiffL1, x, Some(y), out)
}

/// `out = sum of x`.
pub fn sum<T: Scalar>(gpu: &Gpu, x: &DeviceVec<T>, out: &DeviceScalar) -> Result<(), RtError> {
    reduce(gpu, Reduce::Sum, x, None, out)
}

/// Publishes the dot product a fused SpMV epilogue left in `dot`'s
/// accumulators (one warp; [`SpmvKernel::spmv_fused`](crate::SpmvKernel::spmv_fused)
/// calls it).
pub(crate) fn publish_dot(gpu: &Gpu, dot: &DeviceScalar) -> Result<(), RtError> {
    dot.check_gpu(gpu, "the dot scalar")?;
    let f = gpu.static_function(VECTOR_OPS_PTX, "sparserl_finalize_dot")?;
    let s = gpu.enqueue("a dot epilogue's publish")?;
    let mut l = s.launch_builder(&f);
    l.arg(&*dot.buf);
    // SAFETY: (double* dot): the scalar's SCALAR_LEN doubles, on this
    // stream (checked); one block of 32 threads reads and zeroes the 32
    // accumulators and writes the result.
    unsafe {
        launch(
            l,
            LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            },
        )
    }
}

// ---- fused solver updates (used by crate::solvers) ----

/// Pushes the optional Jacobi inverse diagonal as `(const T* dinv, int use)`.
fn push_dinv<'a, T: Scalar>(
    l: &mut LaunchArgs<'a>,
    dinv: Option<&'a CudaSlice<T>>,
    other: &'a CudaSlice<T>,
    flag: &'a i32,
) {
    l.arg(dinv.unwrap_or(other)).arg(flag);
}

/// `p = z`, `rho = r . z`, `rr = r . r` into the CG state `st`.
pub(crate) fn cg_init<T: Scalar>(
    gpu: &Gpu,
    n: i32,
    r: &CudaSlice<T>,
    dinv: Option<&CudaSlice<T>>,
    p: &mut CudaSlice<T>,
    st: &CudaSlice<f64>,
    ticket: &CudaSlice<u32>,
) -> Result<(), RtError> {
    let f = func::<T>(gpu, ["sparserl_cg_init_f32", "sparserl_cg_init_f64"])?;
    let use_dinv = i32::from(dinv.is_some());
    let s = gpu.enqueue("Cg::solve")?;
    let mut l = s.launch_builder(&f);
    l.arg(&n).arg(r);
    push_dinv(&mut l, dinv, r, &use_dinv);
    l.arg(p).arg(st).arg(ticket);
    // SAFETY: (int n, const T* r, const T* dinv, int use_dinv, T* p, double*
    // st, unsigned* ticket); the solver allocated r, dinv, p with n elements,
    // st with 48 and ticket with 1 (zero) on this Gpu's stream.
    unsafe { launch(l, config(gpu, n as usize)) }
}

/// `alpha = rho / pq`, `r -= alpha q`, the new `rho` and `r . r`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cg_update_r<T: Scalar>(
    gpu: &Gpu,
    n: i32,
    q: &CudaSlice<T>,
    r: &mut CudaSlice<T>,
    dinv: Option<&CudaSlice<T>>,
    st: &CudaSlice<f64>,
    pq: &CudaSlice<f64>,
    ticket: &CudaSlice<u32>,
) -> Result<(), RtError> {
    let f = func::<T>(
        gpu,
        ["sparserl_cg_update_r_f32", "sparserl_cg_update_r_f64"],
    )?;
    let use_dinv = i32::from(dinv.is_some());
    let s = gpu.enqueue("Cg::solve")?;
    let mut l = s.launch_builder(&f);
    l.arg(&n).arg(q).arg(r);
    push_dinv(&mut l, dinv, q, &use_dinv);
    l.arg(st).arg(pq).arg(ticket);
    // SAFETY: (int n, const T* q, T* r, const T* dinv, int use_dinv, double*
    // st, double* pq, unsigned* ticket); sizes as in cg_init, pq a device
    // scalar (SCALAR_LEN doubles) that the kernel publishes and whose
    // accumulators it zeroes; all on this Gpu's stream.
    unsafe { launch(l, config(gpu, n as usize)) }
}

/// `x += alpha p`, `p = z + beta p`.
pub(crate) fn cg_update_xp<T: Scalar>(
    gpu: &Gpu,
    n: i32,
    x: &mut CudaSlice<T>,
    p: &mut CudaSlice<T>,
    r: &CudaSlice<T>,
    dinv: Option<&CudaSlice<T>>,
    st: &CudaSlice<f64>,
) -> Result<(), RtError> {
    let f = func::<T>(
        gpu,
        ["sparserl_cg_update_xp_f32", "sparserl_cg_update_xp_f64"],
    )?;
    let use_dinv = i32::from(dinv.is_some());
    let s = gpu.enqueue("Cg::solve")?;
    let mut l = s.launch_builder(&f);
    l.arg(&n).arg(x).arg(p).arg(r);
    push_dinv(&mut l, dinv, r, &use_dinv);
    l.arg(st);
    // SAFETY: (int n, T* x, T* p, const T* r, const T* dinv, int use_dinv,
    // const double* st); x, p, r, dinv hold n elements, st 48; this stream.
    unsafe { launch(l, config(gpu, n as usize)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_ptx_was_compiled_from_this_source() {
        // The first line of the PTX names the sha256 of the source it was
        // compiled from (`cargo xtask vector-ptx` writes it).
        let first = VECTOR_OPS_PTX.lines().next().unwrap_or_default();
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(VECTOR_OPS_SOURCE.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let want = format!("// source-sha256: {hex}");
        assert_eq!(
            first, want,
            "kernels/vector_ops.ptx is stale: run `cargo xtask vector-ptx`"
        );
    }

    #[test]
    fn every_entry_is_in_the_ptx() {
        for t in ["f32", "f64"] {
            for name in [
                "sparserl_fill",
                "sparserl_scal",
                "sparserl_axpby",
                "sparserl_mul",
                "sparserl_reduce",
                "sparserl_cg_init",
                "sparserl_cg_update_r",
                "sparserl_cg_update_xp",
            ] {
                let entry = format!(".entry {name}_{t}(");
                assert!(VECTOR_OPS_PTX.contains(&entry), "{entry} missing");
            }
        }
        assert!(VECTOR_OPS_PTX.contains(".entry sparserl_finalize_dot("));
    }

    #[test]
    fn lengths_are_checked() {
        assert!(matches!(
            same_len("y (must match x)", 3, 2),
            Err(RtError::DimensionMismatch {
                expected: 3,
                found: 2,
                ..
            })
        ));
        assert!(same_len("y", 4, 4).is_ok());
        assert!(matches!(
            int_len(i32::MAX as usize + 1),
            Err(RtError::InvalidArgument(_))
        ));
        assert_eq!(int_len(7).unwrap(), 7);
    }
}
