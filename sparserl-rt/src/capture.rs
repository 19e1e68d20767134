//! Who may use a [`Gpu`](crate::Gpu)'s stream while it is being captured,
//! and what keeps captured memory alive.
//!
//! One `CaptureCtl` is shared by a `Gpu` and all its clones. It enforces:
//!
//! - **Entering**: every call that enqueues work on the stream (launches,
//!   copies, allocations, synchronisations) first takes an [`Enter`] guard
//!   ([`CaptureCtl::enter`]). While a capture is in progress only the thread
//!   that runs the capture closure may enter, and only with
//!   [`Mode::Record`] (device work that a graph can replay); everything else
//!   returns [`RtError::Capturing`]. Nothing is ever enqueued on a capturing
//!   stream by another thread, so nothing is silently recorded.
//! - **Beginning**: [`CaptureCtl::begin`] marks the capture *before* the
//!   stream starts capturing and then waits until the guards that other
//!   threads took before the mark are released, so no call is half-way
//!   through its enqueues when the capture starts.
//! - **Pinning**: operands a recorded launch uses are registered
//!   ([`CaptureCtl::pin`]) and end up owned by the [`Graph`](crate::Graph).
//! - **Freeing**: device memory of the crate is freed only through
//!   [`CaptureCtl::release`], under the state lock: during a capture the
//!   allocation is moved into the capture's pins instead (a free enqueued on a
//!   capturing stream would become a graph node that frees memory on every
//!   replay).

use crate::error::RtError;
use crate::pin::Pin;
use cudarc::driver::CudaStream;
use std::cell::RefCell;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, ThreadId};

/// What a guard is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Device work that may be recorded into a graph (kernel launches,
    /// device-to-device copies and memsets): allowed on the capturing thread.
    Record,
    /// Host synchronisation, host copies, allocation, graph launch: never
    /// while a capture is in progress.
    Outside,
}

#[derive(Default)]
struct State {
    /// The thread running the capture closure, while a capture is in progress.
    thread: Option<ThreadId>,
    /// What the capture's graph must keep alive.
    pins: Vec<Pin>,
}

/// The capture state of one `Gpu` and its clones.
#[derive(Default)]
pub(crate) struct CaptureCtl {
    /// Mirrors `state.thread.is_some()` for the lock-free fast path.
    active: AtomicBool,
    /// Guards currently held, by any thread.
    inflight: AtomicUsize,
    state: Mutex<State>,
}

thread_local! {
    /// Guards this thread holds, per `CaptureCtl` address.
    static HELD: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

fn held_add(ctl: &CaptureCtl, delta: isize) -> usize {
    let key = ctl as *const CaptureCtl as usize;
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        let i = match h.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                h.push((key, 0));
                h.len() - 1
            }
        };
        h[i].1 = h[i].1.saturating_add_signed(delta);
        let n = h[i].1;
        if n == 0 {
            h.swap_remove(i);
        }
        n
    })
}

/// Permission to enqueue on the stream (see the module docs); derefs to it.
pub(crate) struct Enter<'g> {
    ctl: &'g CaptureCtl,
    stream: &'g Arc<CudaStream>,
}

impl Deref for Enter<'_> {
    type Target = Arc<CudaStream>;
    fn deref(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

impl Drop for Enter<'_> {
    fn drop(&mut self) {
        held_add(self.ctl, -1);
        self.ctl.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl CaptureCtl {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a capture is in progress (on any thread).
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// Whether the current thread runs the capture in progress.
    fn is_capturer(&self) -> bool {
        self.lock().thread == Some(thread::current().id())
    }

    /// A guard for enqueueing `call` on `stream` in `mode`, or
    /// [`RtError::Capturing`] (see the module docs).
    pub(crate) fn enter<'g>(
        &'g self,
        stream: &'g Arc<CudaStream>,
        mode: Mode,
        call: &'static str,
    ) -> Result<Enter<'g>, RtError> {
        // Counted before the flag is read; `begin` sets the flag before it
        // reads the count (both SeqCst): one of the two sees the other.
        self.inflight.fetch_add(1, Ordering::SeqCst);
        held_add(self, 1);
        let guard = Enter { ctl: self, stream };
        if self.is_active() && !(mode == Mode::Record && self.is_capturer()) {
            return Err(RtError::Capturing { call });
        }
        Ok(guard)
    }

    /// Registers `make()` with the capture in progress when the current
    /// thread runs it (operands of a recorded launch); nothing otherwise.
    pub(crate) fn pin(&self, make: impl FnOnce() -> Pin) {
        if !self.is_active() {
            return;
        }
        let mut st = self.lock();
        if st.thread == Some(thread::current().id()) {
            st.pins.push(make());
        }
    }

    /// Drops `p` (maybe the last owner of device memory), or, while a
    /// capture is in progress, hands it to the capture's pins.
    pub(crate) fn release(&self, p: Pin) {
        let mut st = self.lock();
        if st.thread.is_some() {
            st.pins.push(p);
        } else {
            // Under the lock: no capture can begin while the memory is freed.
            drop(p);
        }
    }

    /// [`CaptureCtl::release`] for many.
    pub(crate) fn release_all(&self, pins: Vec<Pin>) {
        let mut st = self.lock();
        if st.thread.is_some() {
            st.pins.extend(pins);
        } else {
            drop(pins);
        }
    }

    /// Marks a capture by the current thread, then waits for the guards
    /// other threads hold. [`RtError::Capturing`] when a capture is already
    /// in progress.
    pub(crate) fn begin(&self, call: &'static str) -> Result<(), RtError> {
        {
            let mut st = self.lock();
            if st.thread.is_some() {
                return Err(RtError::Capturing { call });
            }
            st.thread = Some(thread::current().id());
            self.active.store(true, Ordering::SeqCst);
        }
        let mine = held_add(self, 0);
        while self.inflight.load(Ordering::SeqCst) > mine {
            thread::yield_now();
        }
        Ok(())
    }

    /// Ends the capture state: `keep(pins)` takes what the capture pinned
    /// (a graph keeps it); with `None` it is dropped under the lock.
    pub(crate) fn finish(&self, keep: Option<&mut Vec<Pin>>) {
        let mut st = self.lock();
        st.thread = None;
        self.active.store(false, Ordering::SeqCst);
        let pins = std::mem::take(&mut st.pins);
        match keep {
            Some(k) => *k = pins,
            None => drop(pins),
        }
    }
}
