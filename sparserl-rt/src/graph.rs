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
//! The graph owns what it replays: every launch recorded into it registers
//! the device memory of its operands, and the [`Graph`] keeps that memory
//! alive until it is dropped. Dropping or replacing a captured vector (even
//! one inside a `RefCell` or a `Mutex`) only hands its buffer to the graph;
//! no replay ever touches memory that was freed or given to another vector.
//!
//! Only the thread running the closure may use the [`Gpu`] (or any clone)
//! while it is captured: device work from another thread returns
//! [`RtError::Capturing`] instead of being recorded. A panic inside the
//! closure ends the capture and leaves the stream usable.
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
use crate::pin::Pin;
use cudarc::driver::{CudaGraph, sys};
use std::fmt;

/// A captured, instantiated CUDA graph of work on one [`Gpu`]'s stream,
/// owning (pinning) the device memory its launches use.
pub struct Graph {
    graph: Option<CudaGraph>,
    owner: Gpu,
    pins: Vec<Pin>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("pinned", &self.pins.len())
            .finish_non_exhaustive()
    }
}

/// A capture in progress on the current thread; dropping it (an error or a
/// panic in the closure) ends the capture, discards what was recorded and
/// clears the capture state.
pub(crate) struct Session<'g> {
    gpu: &'g Gpu,
    begun: bool,
    done: bool,
}

impl<'g> Session<'g> {
    /// Marks the capture (other threads are refused from here on), waits for
    /// their calls in progress and for the work queued so far (it is not
    /// part of the graph), then starts capturing the stream.
    pub(crate) fn begin(gpu: &'g Gpu, call: &'static str) -> Result<Self, RtError> {
        gpu.ctl().begin(call)?;
        let mut session = Session {
            gpu,
            begun: false,
            done: false,
        };
        // SAFETY: the capture state is marked for this thread and no other
        // thread's call is in progress, so nothing else uses the stream
        // until `end` or the drop clears the state.
        let stream = unsafe { gpu.stream() };
        stream.synchronize()?;
        stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        session.begun = true;
        Ok(session)
    }

    /// Ends the capture: the instantiated graph (`None` when nothing was
    /// recorded), owning what the recorded launches pinned, uploaded.
    pub(crate) fn into_graph(mut self) -> Result<Option<Graph>, RtError> {
        self.done = true;
        let gpu = self.gpu;
        // SAFETY: as in `begin`: the capture state is still this thread's.
        let stream = unsafe { gpu.stream() };
        let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        let mut pins = Vec::new();
        gpu.ctl().finish(Some(&mut pins));
        match ended {
            Ok(Some(graph)) => {
                let graph = Graph {
                    graph: Some(graph),
                    owner: gpu.clone(),
                    pins,
                };
                graph.upload()?;
                Ok(Some(graph))
            }
            Ok(None) => {
                gpu.ctl().release_all(pins);
                Ok(None)
            }
            Err(e) => {
                gpu.ctl().release_all(pins);
                Err(e.into())
            }
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.begun {
            // SAFETY: as in `begin`.
            let stream = unsafe { self.gpu.stream() };
            // Discarded: the capture failed or panicked.
            drop(stream.end_capture(sys::CUgraphInstantiate_flags(0)));
        }
        self.gpu.ctl().finish(None);
    }
}

impl Gpu {
    /// Records the device work that `work` enqueues on this Gpu's stream into
    /// a CUDA graph (nothing runs yet); replay it with [`Graph::launch`].
    ///
    /// While `work` runs, only the current thread may use this `Gpu` (and
    /// its clones), and only for device work (launches, vector operations):
    /// anything else returns [`RtError::Capturing`].
    ///
    /// Errors: whatever `work` returns (the capture is then abandoned),
    /// [`RtError::Capturing`] when a capture is already in progress, or a
    /// driver error from instantiation. A panic in `work` abandons the
    /// capture too before it unwinds further.
    pub fn capture<F>(&self, work: F) -> Result<Graph, RtError>
    where
        F: FnOnce() -> Result<(), RtError>,
    {
        let session = Session::begin(self, "Gpu::capture")?;
        if let Err(e) = work() {
            drop(session); // discards what was recorded
            return Err(e);
        }
        session
            .into_graph()?
            .ok_or_else(|| RtError::InvalidArgument("the capture recorded no device work".into()))
    }
}

impl Graph {
    fn upload(&self) -> Result<(), RtError> {
        let _s = self.owner.outside_capture("Gpu::capture")?;
        match &self.graph {
            Some(g) => Ok(g.upload()?),
            None => Ok(()),
        }
    }

    /// Enqueues one replay of the graph on `gpu`'s stream (asynchronous).
    ///
    /// [`RtError::ForeignOperand`] for another `Gpu`'s graph,
    /// [`RtError::Capturing`] during a capture.
    pub fn launch(&self, gpu: &Gpu) -> Result<(), RtError> {
        if !gpu.same_gpu(&self.owner) {
            return Err(RtError::ForeignOperand { what: "the graph" });
        }
        let _s = gpu.outside_capture("Graph::launch")?;
        match &self.graph {
            Some(g) => Ok(g.launch()?),
            None => Ok(()),
        }
    }

    /// Number of device allocations the graph keeps alive (with repeats).
    pub fn pinned(&self) -> usize {
        self.pins.len()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // The executable first (the driver frees it after replays in
        // flight), then the memory, in stream order after every replay and
        // never into another capture.
        drop(self.graph.take());
        self.owner.ctl().release_all(std::mem::take(&mut self.pins));
    }
}
