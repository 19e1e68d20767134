//! The row-major workspaces of the transposed SpMM path
//! ([`SpmmVariant::trans`](super::SpmmVariant::trans)): one pair per value
//! type and [`Gpu`], grown on demand outside captures.
//!
//! A launch holds the pair's lock from its first to its last enqueue, so
//! the launches of two threads never interleave on one workspace (they run
//! in the stream's order, one call after the other). A capture pins the
//! pair it records (a later, larger pair replaces it for direct calls; the
//! graph keeps the old one alive). A capture cannot allocate: the first
//! call of a shape runs outside a capture (or a larger one did).

use crate::device::{DeviceVec, Gpu, Scalar};
use crate::error::RtError;
use std::any::{Any, TypeId};
use std::collections::HashMap;

/// Workspace pairs by value type: `(DeviceVec<T>, DeviceVec<T>)` for X and Y.
#[derive(Default)]
pub(crate) struct Slots(HashMap<TypeId, Box<dyn Any + Send>>);

/// Runs `f` with `gpu`'s workspace pair for `T`, at least `x_len` and
/// `y_len` elements long, under its lock.
pub(crate) fn with_workspace<T: Scalar, R>(
    gpu: &Gpu,
    x_len: usize,
    y_len: usize,
    f: impl FnOnce(&mut DeviceVec<T>, &mut DeviceVec<T>) -> Result<R, RtError>,
) -> Result<R, RtError> {
    let mut slots = gpu
        .spmm_workspaces()
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let slot = slots
        .0
        .entry(TypeId::of::<T>())
        .or_insert_with(|| Box::new(None::<(DeviceVec<T>, DeviceVec<T>)>));
    let pair = slot
        .downcast_mut::<Option<(DeviceVec<T>, DeviceVec<T>)>>()
        .ok_or_else(|| RtError::InvalidArgument("SpMM workspace of another type".into()))?;
    let fits = pair
        .as_ref()
        .is_some_and(|(x, y)| x.len() >= x_len && y.len() >= y_len);
    if !fits {
        if gpu.is_capturing() {
            return Err(RtError::InvalidArgument(format!(
                "this column-major SpMM runs through row-major workspaces ({x_len} + {y_len} \
                 elements) that a capture cannot allocate: call it once with this shape (or a \
                 larger one) before capturing"
            )));
        }
        let (old_x, old_y) = pair.as_ref().map_or((0, 0), |(x, y)| (x.len(), y.len()));
        // The old pair (if any) goes first: freed in stream order after the
        // work queued on it, or kept by the graphs that pinned it.
        *pair = None;
        *pair = Some((
            DeviceVec::zeros(gpu, x_len.max(old_x))?,
            DeviceVec::zeros(gpu, y_len.max(old_y))?,
        ));
    }
    let Some((x, y)) = pair.as_mut() else {
        return Err(RtError::InvalidArgument("SpMM workspace missing".into()));
    };
    x.check_gpu(gpu, "the SpMM workspace")?;
    y.check_gpu(gpu, "the SpMM workspace")?;
    f(x, y)
}
