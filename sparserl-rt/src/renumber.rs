//! Renumbered matrices on the device: the two ways to use one.
//!
//! An upload that asks for a [`Reorder`] ([`Layouts::reorder`], set by
//! [`SpmvKernel::upload`](crate::SpmvKernel::upload) when the tuned variant
//! is renumbered) stores `P A Pᵀ` plus the permutation. Vectors then live in
//! one of two numberings, and the type of the matrix operand says which:
//!
//! - **transparent** (`&DeviceCsr`, [`Numbering::User`]): `x` and `y` are in
//!   the user's numbering; each launch gathers `x` into the stored order,
//!   runs the kernel and gathers `y` back (through the inverse permutation), all on the device, all queued on
//!   the matrix's stream (the search times exactly this);
//! - **permuted space** ([`DeviceCsr::internal`], [`Numbering::Internal`]):
//!   `x` and `y` are already in the stored order, the kernel runs alone. An
//!   iterative method converts its vectors once
//!   ([`DeviceCsr::to_internal`] / [`DeviceCsr::to_user`]), iterates, and
//!   converts the result back; the solvers in [`crate::solvers`] do this.
//!
//! A matrix stored in the given order has no permutation; both numberings
//! are then the same and the conversions are copies.
//!
//! ```no_run
//! use sparserl_rt::{Csr, DeviceCsr, DeviceVec, Gpu, Layouts, reorder::Reorder};
//! # fn run(k: &impl sparserl_rt::SpmvKernel<Value = f64>, a: &Csr) -> Result<(), sparserl_rt::RtError> {
//! let gpu = Gpu::new(0)?;
//! let m = DeviceCsr::<f64>::upload_with(&gpu, a, Layouts { reorder: Reorder::Rcm, ..Layouts::NONE })?;
//! println!("renumbering cost {:?} on the host", m.reorder_cost());
//! let x = DeviceVec::from_host(&gpu, &vec![1.0; a.cols()])?;
//! let mut y = DeviceVec::zeros(&gpu, a.rows())?;
//! k.spmv(&gpu, &m, &x, &mut y)?; // transparent: y in the user's numbering
//! let mut xi = DeviceVec::zeros(&gpu, a.cols())?;
//! let mut yi = DeviceVec::zeros(&gpu, a.rows())?;
//! m.to_internal(&gpu, &x, &mut xi)?;
//! k.spmv(&gpu, &m.internal(), &xi, &mut yi)?; // permuted space, no gathers
//! m.to_user(&gpu, &yi, &mut y)?;
//! # Ok(()) }
//! ```

use std::sync::Mutex;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};

use crate::csr::Csr;
use crate::device::{DeviceCsr, DeviceVec, Gpu, Layouts, Scalar};
use crate::error::RtError;
use crate::launch::{EpArgs, launch_variant_ep};
use crate::ops;
use crate::reorder::{Permutation, Reorder};
use crate::variant::Variant;

mod dense;

/// Which numbering the vectors of a launch are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbering {
    /// The user's (the matrix as given); a renumbered matrix permutes `x`
    /// and `y` around each launch.
    User,
    /// The matrix's stored order (no permutation around the launch).
    Internal,
}

mod sealed {
    pub trait Sealed {}
}

/// A matrix operand of a launch: a [`DeviceCsr`] (vectors in the user's
/// numbering) or its [`Internal`] view (vectors in the stored order).
/// Sealed: only this crate implements it.
pub trait Operand<T: Scalar>: sealed::Sealed {
    /// The matrix and the numbering of the launch's vectors.
    fn parts(&self) -> (&DeviceCsr<T>, Numbering);
}

impl<T: Scalar> sealed::Sealed for DeviceCsr<T> {}
impl<T: Scalar> Operand<T> for DeviceCsr<T> {
    fn parts(&self) -> (&DeviceCsr<T>, Numbering) {
        (self, Numbering::User)
    }
}

/// A [`DeviceCsr`] whose launches take vectors in its stored order
/// ([`DeviceCsr::internal`]).
#[derive(Debug, Clone, Copy)]
pub struct Internal<'a, T: Scalar>(&'a DeviceCsr<T>);

impl<T: Scalar> sealed::Sealed for Internal<'_, T> {}
impl<T: Scalar> Operand<T> for Internal<'_, T> {
    fn parts(&self) -> (&DeviceCsr<T>, Numbering) {
        (self.0, Numbering::Internal)
    }
}

/// The device side of a renumbered matrix: the permutation and the scratch
/// vectors a transparent launch runs through.
pub(crate) struct DevicePerm<T: Scalar> {
    reorder: Reorder,
    /// `new_to_old` as the kernels' `int`: gathers `x` into the stored order.
    perm: CudaSlice<i32>,
    /// `old_to_new`: gathers `y` back into the user's numbering (a gather
    /// through the inverse writes whole sectors; a scatter through `perm`
    /// would write 4 or 8 bytes to a random sector per element).
    inv: CudaSlice<i32>,
    /// Gathered `x`, kernel output `y`, gathered weights `w`; the mutex
    /// keeps one launch's gathers and kernel together when several
    /// threads enqueue on the matrix's stream.
    scratch: Mutex<Scratch<T>>,
    cost: Duration,
}

struct Scratch<T: Scalar> {
    xs: CudaSlice<T>,
    ys: CudaSlice<T>,
    ws: CudaSlice<T>,
}

/// A host matrix renumbered for upload.
pub(crate) struct Renumbered {
    pub csr: Csr,
    pub perm: Permutation,
    pub cost: Duration,
}

/// `reorder` applied to `csr` on the host (timed), or `None` when it keeps
/// the given numbering (rectangular or [`Reorder::None`]).
pub(crate) fn renumber(csr: &Csr, reorder: Reorder) -> Option<Renumbered> {
    let t = Instant::now();
    let perm = reorder.permutation(csr)?;
    // `permutation` returned Some: `csr` is square of its length.
    let csr = perm.apply(csr)?;
    Some(Renumbered {
        csr,
        perm,
        cost: t.elapsed(),
    })
}

impl<T: Scalar> DevicePerm<T> {
    pub(crate) fn upload(
        gpu: &Gpu,
        reorder: Reorder,
        perm: &Permutation,
        cost: Duration,
    ) -> Result<Self, RtError> {
        let n = perm.len().max(1);
        let p: Vec<i32> = perm.new_to_old().iter().map(|&v| v as i32).collect();
        let q: Vec<i32> = perm.old_to_new().iter().map(|&v| v as i32).collect();
        let stream = gpu.outside_capture("DeviceCsr::upload")?;
        Ok(DevicePerm {
            reorder,
            perm: stream.clone_htod(&p)?,
            inv: stream.clone_htod(&q)?,
            scratch: Mutex::new(Scratch {
                xs: stream.alloc_zeros::<T>(n)?,
                ys: stream.alloc_zeros::<T>(n)?,
                ws: stream.alloc_zeros::<T>(n)?,
            }),
            cost,
        })
    }

    pub(crate) fn bytes(&self) -> usize {
        let s = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        self.perm.num_bytes()
            + self.inv.num_bytes()
            + s.xs.num_bytes()
            + s.ys.num_bytes()
            + s.ws.num_bytes()
    }
}

/// `dst[i] = src[idx[i]]`, `n` elements, on `gpu`'s stream: with `perm`
/// into the stored order, with `inv` back into the user's numbering.
fn permute<T: Scalar>(
    gpu: &Gpu,
    idx: &CudaSlice<i32>,
    src: &CudaSlice<T>,
    dst: &mut CudaSlice<T>,
) -> Result<(), RtError> {
    let n = ops::int_len(idx.len())?;
    let f = ops::func::<T>(gpu, ["sparserl_gather_f32", "sparserl_gather_f64"])?;
    let s = gpu.enqueue("a renumbering gather")?;
    let mut b = s.launch_builder(&f);
    b.arg(&n).arg(idx).arg(src).arg(dst);
    // SAFETY: (int n, const int* perm, const T* src, T* dst) as in
    // vector_ops.cu. `idx` is a permutation of 0..n (`perm` or its inverse,
    // both built from a checked `Permutation`), and the callers pass `src`
    // and `dst` of at least n elements, all buffers of the matrix's stream,
    // which is `gpu`'s (checked by the callers).
    unsafe { b.launch(ops::config(gpu, n as usize)) }?;
    Ok(())
}

/// A fused launch's epilogue operands and what a launch in the user's
/// numbering must permute for them.
pub(crate) struct EpLaunch<'a, T: Scalar> {
    /// The operands as given.
    pub args: EpArgs<'a, T>,
    /// The weights are `x` itself (its gathered copy is reused).
    pub w_is_x: bool,
    /// The epilogue reads the old `y` (axpby), so it is gathered too.
    pub reads_y: bool,
}

/// Launches `kernel` (a function resolved from a generated spec for the
/// variant, or vouched for by an `unsafe` caller) on `a` with vectors in
/// `numbering`: around it the gathers of a renumbered matrix
/// in the user's numbering. `x`, `y` and the epilogue's buffers belong to
/// `gpu` (checked by the callers).
pub(crate) fn launch<T: Scalar>(
    gpu: &Gpu,
    kernel: (&CudaFunction, &Variant),
    a: &DeviceCsr<T>,
    numbering: Numbering,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    ep: Option<EpLaunch<'_, T>>,
) -> Result<(), RtError> {
    let (func, variant) = kernel;
    let p = match (numbering, a.perm()) {
        (Numbering::User, Some(p)) => p,
        _ => return launch_variant_ep(gpu, func, variant, a, x, y, ep.map(|e| e.args)),
    };
    a.check_gpu(gpu)?;
    if x.len() < a.cols() || y.len() < a.rows() {
        return Err(RtError::DimensionMismatch {
            what: "x or y of a renumbered matrix",
            expected: a.rows(),
            found: x.len().min(y.len()),
        });
    }
    let mut guard = p.scratch.lock().unwrap_or_else(|e| e.into_inner());
    let Scratch { xs, ys, ws } = &mut *guard;
    permute(gpu, &p.perm, x, xs)?;
    let ep = match ep {
        Some(e) => {
            if e.reads_y {
                permute(gpu, &p.perm, y, ys)?;
            }
            let w = if e.w_is_x {
                &*xs
            } else {
                permute(gpu, &p.perm, e.args.w, ws)?;
                &*ws
            };
            Some(EpArgs {
                coef: e.args.coef,
                w,
                dot: e.args.dot,
            })
        }
        None => None,
    };
    launch_variant_ep(gpu, func, variant, a, xs, ys, ep)?;
    permute(gpu, &p.inv, ys, y)
}

impl<T: Scalar> DeviceCsr<T> {
    /// The view whose launches take vectors in the stored order (permuted
    /// space; the same as `self` for a matrix in the given order).
    pub fn internal(&self) -> Internal<'_, T> {
        Internal(self)
    }

    /// The renumbering the matrix is stored in ([`Reorder::None`]: given order).
    pub fn renumbering(&self) -> Reorder {
        self.perm().map_or(Reorder::None, |p| p.reorder)
    }

    /// Host time the renumbering took at upload (computing the order and
    /// permuting the matrix); `None` for a matrix in the given order.
    pub fn reorder_cost(&self) -> Option<Duration> {
        self.perm().map(|p| p.cost)
    }

    /// `out = P v`: a vector of the user's numbering in the stored order
    /// (a copy for a matrix in the given order). Square matrices only.
    pub fn to_internal(
        &self,
        gpu: &Gpu,
        v: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
    ) -> Result<(), RtError> {
        self.convert(gpu, true, v, out)
    }

    /// `out = Pᵀ v`: a vector of the stored order back in the user's
    /// numbering (a copy for a matrix in the given order).
    pub fn to_user(
        &self,
        gpu: &Gpu,
        v: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
    ) -> Result<(), RtError> {
        self.convert(gpu, false, v, out)
    }

    fn convert(
        &self,
        gpu: &Gpu,
        to_internal: bool,
        v: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
    ) -> Result<(), RtError> {
        self.check_gpu(gpu)?;
        v.check_gpu(gpu, "the vector to convert")?;
        out.check_gpu(gpu, "the converted vector")?;
        ops::same_len("the vector (must have rows entries)", self.rows(), v.len())?;
        ops::same_len(
            "the output (must have rows entries)",
            self.rows(),
            out.len(),
        )?;
        match self.perm() {
            Some(p) => {
                let idx = if to_internal { &p.perm } else { &p.inv };
                permute(gpu, idx, v.as_slice(), out.as_mut_slice())
            }
            None => ops::copy(gpu, v, out),
        }
    }

    /// Uploads `csr` renumbered by `layouts.reorder` (the other layouts
    /// built from the renumbered matrix); `None` when the reorder keeps the
    /// given numbering.
    pub(crate) fn upload_renumbered(
        gpu: &Gpu,
        csr: &Csr,
        layouts: Layouts,
    ) -> Option<Result<Self, RtError>> {
        let r = renumber(csr, layouts.reorder)?;
        let inner = Layouts {
            reorder: Reorder::None,
            ..layouts
        };
        Some(Self::upload_with(gpu, &r.csr, inner).and_then(|mut m| {
            let p = DevicePerm::upload(gpu, layouts.reorder, &r.perm, r.cost)?;
            m.set_perm(gpu, p);
            Ok(m)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumber_keeps_rectangular_and_none_as_given() {
        let a = Csr::from_triplets(2, 3, &[(0, 2, 1.0), (1, 0, 1.0)]).unwrap();
        assert!(renumber(&a, Reorder::Rcm).is_none());
        let sq = Csr::from_triplets(2, 2, &[(0, 1, 1.0), (1, 0, 1.0)]).unwrap();
        assert!(renumber(&sq, Reorder::None).is_none());
        let r = renumber(&sq, Reorder::Degree).unwrap();
        assert_eq!(r.csr.nnz(), 2);
        assert_eq!(r.perm.len(), 2);
    }
}
