//! Capturing device work into a CUDA graph and replaying it.
//!
//! Every launch and vector operation of sparserl-rt only enqueues work on
//! the [`Gpu`]'s stream (no allocation, no host synchronisation, no other
//! stream), so a whole solver iteration, or many, can be recorded once and
//! replayed with one launch each time. Calls that would synchronise with the
//! host or allocate ([`DeviceVec::to_host`](crate::DeviceVec::to_host),
//! [`DeviceScalar::get`](crate::DeviceScalar::get), uploads,
//! [`Gpu::synchronize`]) return [`RtError::Capturing`] inside a capture.
//!
//! The graph holds device pointers of the operands the closure used, so it
//! borrows them: [`Graph`] carries the closure's lifetime, and the borrow
//! checker keeps every captured vector, matrix and scalar alive (and
//! mutably borrowed vectors untouched by the host) until the graph is
//! dropped. Freeing a captured operand while its graph can still be
//! replayed does not compile:
//!
//! ```compile_fail,E0505
//! use sparserl_rt::{Coef, DeviceVec, Gpu, ops};
//! # fn main() -> Result<(), sparserl_rt::RtError> {
//! let gpu = Gpu::new(0)?;
//! let x = DeviceVec::from_host(&gpu, &[1.0f32; 4])?;
//! let mut y = DeviceVec::<f32>::zeros(&gpu, 4)?;
//! let graph = gpu.capture(|| ops::axpy(&gpu, Coef::host(1.0), &x, &mut y))?;
//! drop(y); // the graph still writes y
//! graph.launch(&gpu)?;
//! # Ok(()) }
//! ```
//!
//! ```no_run
//! use sparserl_rt::{DeviceScalar, DeviceVec, Gpu, ops, Coef};
//! # fn main() -> Result<(), sparserl_rt::RtError> {
//! let gpu = Gpu::new(0)?;
//! let x = DeviceVec::from_host(&gpu, &vec![1.0f64; 1000])?;
//! let mut y = DeviceVec::<f64>::zeros(&gpu, 1000)?;
//! let d = DeviceScalar::new(&gpu)?;
//! {
//!     let graph = gpu.capture(|| {
//!         for _ in 0..10 {
//!             ops::axpy(&gpu, Coef::host(0.5), &x, &mut y)?;
//!         }
//!         ops::dot(&gpu, &x, &y, &d)
//!     })?;
//!     graph.launch(&gpu)?; // 10 axpys and a dot, one launch
//!     graph.launch(&gpu)?;
//! }
//! assert_eq!(d.get(&gpu)?, 1000.0 * 10.0);
//! # Ok(()) }
//! ```

use crate::device::Gpu;
use crate::error::RtError;
use cudarc::driver::{CudaGraph, sys};
use std::fmt;
use std::marker::PhantomData;

/// A captured, instantiated CUDA graph of work on one [`Gpu`]'s stream.
///
/// `'a` is the lifetime of the operands the captured work uses.
pub struct Graph<'a> {
    graph: CudaGraph,
    owner: Gpu,
    _operands: PhantomData<&'a mut ()>,
}

impl fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph").finish_non_exhaustive()
    }
}

impl Gpu {
    /// Records the device work that `work` enqueues on this Gpu's stream into
    /// a CUDA graph (nothing runs yet); replay it with [`Graph::launch`].
    ///
    /// Errors: whatever `work` returns (the capture is then abandoned),
    /// [`RtError::Capturing`] when a capture is already in progress, or a
    /// driver error from instantiation.
    pub fn capture<'a, F>(&self, work: F) -> Result<Graph<'a>, RtError>
    where
        F: FnOnce() -> Result<(), RtError> + 'a,
    {
        self.check_not_capturing("Gpu::capture")?;
        // Finish the uploads queued so far (they are not part of the graph).
        self.stream().synchronize()?;
        self.stream()
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        self.set_capturing(true);
        let result = work();
        self.set_capturing(false);
        let ended = self.stream().end_capture(sys::CUgraphInstantiate_flags(0));
        result?;
        match ended? {
            Some(graph) => {
                graph.upload()?;
                Ok(Graph {
                    graph,
                    owner: self.clone(),
                    _operands: PhantomData,
                })
            }
            None => Err(RtError::InvalidArgument(
                "the capture recorded no device work".into(),
            )),
        }
    }
}

impl Graph<'_> {
    /// Enqueues one replay of the graph on `gpu`'s stream (asynchronous).
    pub fn launch(&self, gpu: &Gpu) -> Result<(), RtError> {
        if !gpu.owns(self.owner.stream()) {
            return Err(RtError::ForeignOperand { what: "the graph" });
        }
        gpu.check_not_capturing("Graph::launch")?;
        Ok(self.graph.launch()?)
    }
}
