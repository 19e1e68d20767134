//! Values that stay on the device: reduction results ([`DeviceScalar`]) and
//! the coefficients of fused epilogues ([`DeviceCoefs`]).
//!
//! Reading one back ([`DeviceScalar::get`]) is the only host synchronisation
//! a solver needs, and the caller decides when it happens.

use crate::device::{Gpu, check_owner};
use crate::error::RtError;
use crate::pin::Shared;
use cudarc::driver::{CudaSlice, CudaStream};
use std::fmt;
use std::sync::Arc;

/// Accumulators of a [`DeviceScalar`].
pub const SLOTS: usize = 32;
/// Doubles between two accumulators (one 128-byte cache line each, so
/// atomics on different accumulators do not queue on one line).
pub const SLOT_STRIDE: usize = 16;
/// Doubles a [`DeviceScalar`] holds: the result and the accumulators.
pub const SCALAR_LEN: usize = SLOT_STRIDE * (SLOTS + 1);

/// A `f64` on the device, written by reductions (dot products, norms, the
/// dot epilogue of a fused SpMV) and read by later kernels without a host
/// round trip.
///
/// Layout: the result at 0, [`SLOTS`] accumulators [`SLOT_STRIDE`] doubles
/// apart, and a completion ticket; a reduction adds into the accumulators
/// and whoever publishes (the last block of a vector reduction, the
/// one-warp publish after a fused SpMV, a solver update) writes the result
/// and zeroes the accumulators again, so one scalar can be reused by any
/// number of reductions and CUDA-graph replays.
pub struct DeviceScalar {
    pub(crate) buf: Shared<CudaSlice<f64>>,
    pub(crate) ticket: Shared<CudaSlice<u32>>,
    stream: Arc<CudaStream>,
}

impl fmt::Debug for DeviceScalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceScalar").finish_non_exhaustive()
    }
}

impl DeviceScalar {
    /// A scalar holding 0.
    pub fn new(gpu: &Gpu) -> Result<DeviceScalar, RtError> {
        let s = gpu.outside_capture("DeviceScalar::new")?;
        Ok(DeviceScalar {
            buf: gpu.own(s.alloc_zeros::<f64>(SCALAR_LEN)?),
            ticket: gpu.own(s.alloc_zeros::<u32>(1)?),
            stream: s.clone(),
        })
    }

    /// [`RtError::ForeignOperand`] unless the scalar belongs to `gpu`
    /// (inside a capture, also pins it to the graph: see
    /// [`DeviceVec::check_gpu`](crate::DeviceVec::check_gpu)).
    pub fn check_gpu(&self, gpu: &Gpu, what: &'static str) -> Result<(), RtError> {
        check_owner(gpu, &self.stream, what)?;
        gpu.pin(&self.buf);
        gpu.pin(&self.ticket);
        Ok(())
    }

    /// The value (waits for the work queued before; [`RtError::Capturing`]
    /// inside a capture).
    pub fn get(&self, gpu: &Gpu) -> Result<f64, RtError> {
        self.check_gpu(gpu, "the scalar")?;
        let s = gpu.outside_capture("DeviceScalar::get")?;
        let v = s.clone_dtoh(&*self.buf)?;
        Ok(v[0])
    }

    /// Sets the value (copies from the host; not inside a capture).
    pub fn set(&mut self, gpu: &Gpu, value: f64) -> Result<(), RtError> {
        self.check_gpu(gpu, "the scalar")?;
        let s = gpu.outside_capture("DeviceScalar::set")?;
        let mut v = [0.0; SCALAR_LEN];
        v[0] = value;
        s.memcpy_htod(&v, &mut *self.buf)?;
        Ok(())
    }
}

/// The coefficients `{alpha, beta, gamma, gamma_dot}` of an `axpby`
/// epilogue: `y = alpha A x + beta y + gamma + gamma_dot * d`, with `d` the
/// value the launch's dot scalar holds when the kernel starts (the
/// `axpby-dot` epilogue then replaces it with `w . y`: PageRank's dangling
/// mass carried from one iteration to the next without another kernel);
/// `gamma_dot` is 0 unless set with [`DeviceCoefs::with_gamma_dot`] or
/// [`DeviceCoefs::set_all`] ([`DeviceCoefs::set`] keeps it). On the
/// device so that kernels (and CUDA-graph replays) read the values current
/// when they run.
pub struct DeviceCoefs {
    pub(crate) buf: Shared<CudaSlice<f64>>,
    stream: Arc<CudaStream>,
}

impl fmt::Debug for DeviceCoefs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceCoefs").finish_non_exhaustive()
    }
}

impl DeviceCoefs {
    /// Coefficients with the given values (`gamma_dot` 0).
    pub fn new(gpu: &Gpu, alpha: f64, beta: f64, gamma: f64) -> Result<DeviceCoefs, RtError> {
        Self::with_gamma_dot(gpu, alpha, beta, gamma, 0.0)
    }

    /// Coefficients with a constant term `gamma + gamma_dot * d` (see above).
    pub fn with_gamma_dot(
        gpu: &Gpu,
        alpha: f64,
        beta: f64,
        gamma: f64,
        gamma_dot: f64,
    ) -> Result<DeviceCoefs, RtError> {
        let s = gpu.outside_capture("DeviceCoefs::new")?;
        Ok(DeviceCoefs {
            buf: gpu.own(s.clone_htod(&[alpha, beta, gamma, gamma_dot])?),
            stream: s.clone(),
        })
    }

    /// [`RtError::ForeignOperand`] unless the coefficients belong to `gpu`
    /// (inside a capture, also pins them to the graph).
    pub fn check_gpu(&self, gpu: &Gpu, what: &'static str) -> Result<(), RtError> {
        check_owner(gpu, &self.stream, what)?;
        gpu.pin(&self.buf);
        Ok(())
    }

    /// Sets `alpha`, `beta` and `gamma` (copies from the host; not inside a
    /// capture); `gamma_dot` keeps its value.
    pub fn set(&mut self, gpu: &Gpu, alpha: f64, beta: f64, gamma: f64) -> Result<(), RtError> {
        self.check_gpu(gpu, "the coefficients")?;
        let s = gpu.outside_capture("DeviceCoefs::set")?;
        let mut head = self.buf.slice_mut(..3);
        s.memcpy_htod(&[alpha, beta, gamma], &mut head)?;
        Ok(())
    }

    /// Sets all four values, `gamma_dot` included (not inside a capture).
    pub fn set_all(&mut self, gpu: &Gpu, values: [f64; 4]) -> Result<(), RtError> {
        self.check_gpu(gpu, "the coefficients")?;
        let s = gpu.outside_capture("DeviceCoefs::set_all")?;
        s.memcpy_htod(&values, &mut *self.buf)?;
        Ok(())
    }

    /// The values `{alpha, beta, gamma, gamma_dot}` (waits for queued
    /// work; not inside a capture).
    pub fn get(&self, gpu: &Gpu) -> Result<[f64; 4], RtError> {
        self.check_gpu(gpu, "the coefficients")?;
        let s = gpu.outside_capture("DeviceCoefs::get")?;
        let v = s.clone_dtoh(&*self.buf)?;
        Ok([v[0], v[1], v[2], v[3]])
    }
}

/// A coefficient of a vector operation: `host`, times the current value of
/// a [`DeviceScalar`] when one is given (so `-alpha` with `alpha` on the
/// device is `Coef::device(&alpha).scaled(-1.0)`).
#[derive(Debug, Clone, Copy)]
pub struct Coef<'a> {
    pub(crate) host: f64,
    pub(crate) dev: Option<&'a DeviceScalar>,
}

impl<'a> Coef<'a> {
    /// A host value.
    pub const fn host(v: f64) -> Coef<'static> {
        Coef { host: v, dev: None }
    }
    /// The value of a device scalar when the kernel runs.
    pub fn device(s: &'a DeviceScalar) -> Coef<'a> {
        Coef {
            host: 1.0,
            dev: Some(s),
        }
    }
    /// This coefficient times `f`.
    pub fn scaled(self, f: f64) -> Coef<'a> {
        Coef {
            host: self.host * f,
            ..self
        }
    }
}

impl From<f64> for Coef<'static> {
    fn from(v: f64) -> Self {
        Coef::host(v)
    }
}
