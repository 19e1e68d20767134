//! Device allocations that captured graphs keep alive.
//!
//! Every device buffer of the crate (vectors, matrix arrays and layouts,
//! scalars, coefficients, solver state) is a [`Shared`]: the owner's handle
//! plus an `Arc` that a capture clones into its pin list when a recorded
//! launch uses the buffer ([`Shared::pin`]). The memory is freed when the
//! last of them goes, so a [`Graph`](crate::Graph) never replays work on
//! freed memory, whatever the owner does with its handle (drop it, replace
//! it inside a `RefCell`, drop a matrix's layouts). Frees go through
//! [`CaptureCtl::release`]: never while a capture is in progress.

use crate::capture::CaptureCtl;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A type-erased owner of device memory, held by a capture or a graph.
/// Nothing reads through it: it is only dropped.
pub(crate) type Pin = Arc<dyn Send + Sync>;

/// The shared cell. Only the one [`Shared`] handle ever creates references
/// into it; the [`Pin`] clones of its `Arc` never do.
struct Cell<X>(UnsafeCell<X>);

// SAFETY: references into the cell are created only by its single `Shared`
// handle, following that handle's borrows (`&Shared` gives `&X`, `&mut
// Shared` gives `&mut X`), so sharing the cell between threads is as safe as
// sharing `&X` (X: Sync) and moving its last owner is as safe as moving X
// (X: Send).
unsafe impl<X: Send + Sync> Sync for Cell<X> {}

/// A device allocation (or a struct of them) owned by one handle and
/// pinned by the graphs whose recorded launches use it.
pub(crate) struct Shared<X: Send + Sync + 'static> {
    cell: ManuallyDrop<Arc<Cell<X>>>,
    ctl: Arc<CaptureCtl>,
}

impl<X: Send + Sync + 'static> Shared<X> {
    /// Wraps `x`, freed through `ctl` (the capture state of its `Gpu`).
    pub(crate) fn new(ctl: &Arc<CaptureCtl>, x: X) -> Self {
        Shared {
            cell: ManuallyDrop::new(Arc::new(Cell(UnsafeCell::new(x)))),
            ctl: ctl.clone(),
        }
    }

    /// Another owner of the memory, for a capture's pin list.
    pub(crate) fn pin(&self) -> Pin {
        let arc: Arc<Cell<X>> = Arc::clone(&self.cell);
        arc
    }
}

impl<X: Send + Sync + 'static> Deref for Shared<X> {
    type Target = X;
    fn deref(&self) -> &X {
        // SAFETY: see `Cell`: this handle is the only source of references
        // into the cell and this one follows the borrow of `self`.
        unsafe { &*self.cell.0.get() }
    }
}

impl<X: Send + Sync + 'static> DerefMut for Shared<X> {
    fn deref_mut(&mut self) -> &mut X {
        // SAFETY: as in `deref`; `&mut self` excludes every other reference.
        unsafe { &mut *self.cell.0.get() }
    }
}

impl<X: Send + Sync + 'static> Drop for Shared<X> {
    fn drop(&mut self) {
        // SAFETY: `cell` is not used again (this is the drop).
        let cell = unsafe { ManuallyDrop::take(&mut self.cell) };
        self.ctl.release(cell);
    }
}
