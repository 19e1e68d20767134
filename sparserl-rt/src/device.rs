//! Device side: the GPU context, uploaded matrices and vectors.
//!
//! All device work of one [`Gpu`] goes through a single CUDA stream, so
//! operations are ordered without extra synchronization. Every device
//! buffer is a shared allocation that captured graphs pin.

use crate::csr::Csr;
use crate::error::RtError;
use crate::features::Features;
use crate::pin::Shared;
use crate::variant::ValueType;
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use std::fmt;
use std::sync::Arc;

pub use crate::layouts::Layouts;

mod gpu;
mod parts;
pub(crate) use gpu::FnKey;
pub use gpu::{DEFAULT_L2_BYTES, Gpu, driver_present};
pub use parts::{DeviceBinned, DeviceDia, DeviceSell, DeviceTiled};

/// Element types kernels are generated for: `f32` and `f64`.
pub trait Scalar:
    DeviceRepr + ValidAsZeroBits + Copy + Default + fmt::Debug + Send + Sync + 'static
{
    /// The matching [`ValueType`].
    const TYPE: ValueType;
    /// Conversion from `f64` (rounding for `f32`).
    fn from_f64(v: f64) -> Self;
    /// Exact conversion to `f64`.
    fn to_f64(self) -> f64;
}

impl Scalar for f32 {
    const TYPE: ValueType = ValueType::F32;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Scalar for f64 {
    const TYPE: ValueType = ValueType::F64;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// Checks raw CSR arrays on the host, with the same rules as
/// [`Csr::try_new`], plus [`RtError::EmptyMatrix`] for a matrix without rows
/// or columns (zero nonzeros with at least one row is fine).
pub fn validate_raw(
    rows: usize,
    cols: usize,
    indptr: &[u32],
    indices: &[u32],
    n_values: usize,
) -> Result<(), RtError> {
    if rows == 0 || cols == 0 {
        return Err(RtError::EmptyMatrix { rows, cols });
    }
    Csr::validate_parts(rows, cols, indptr, indices, n_values)?;
    Ok(())
}

/// Copies `data` to a new device buffer of at least one element (CUDA cannot
/// allocate zero bytes; the padding element is never read by kernels).
fn upload_padded<T: DeviceRepr + ValidAsZeroBits + Copy>(
    s: &Arc<CudaStream>,
    data: &[T],
) -> Result<CudaSlice<T>, RtError> {
    if data.is_empty() {
        Ok(s.alloc_zeros::<T>(1)?)
    } else {
        Ok(s.clone_htod(data)?)
    }
}

/// A CSR matrix on the device: 32-bit indices, values of type `T`, plus the
/// host-computed [`Features`] used by runtime dispatch.
///
/// When the matrix qualifies (see [`crate::dia`]), the upload also builds the
/// diagonal layout that [`Strategy::Diagonal`](crate::Strategy::Diagonal)
/// kernels read (`DeviceCsr::diagonals`); it costs about one value per
/// nonzero of extra device memory. A matrix with long rows also gets the
/// small row-binned layout of [`Strategy::Binned`](crate::Strategy::Binned)
/// kernels (`DeviceCsr::binned`, see [`crate::binned`]), and every matrix
/// gets the small tile layout of [`Strategy::Tiled`](crate::Strategy::Tiled)
/// kernels (`DeviceCsr::tiled`, see [`crate::tiled`]; 12 bytes per tile of
/// up to 1024 nonzeros). A matrix whose nonzeros all lie within 32767 of the
/// diagonal also gets the 16-bit column offsets of
/// [`Strategy::Narrow`](crate::Strategy::Narrow) kernels
/// (`DeviceCsr::narrow`, see [`crate::narrow`]; 2 bytes per nonzero).
/// [`DeviceCsr::upload_with`] builds only chosen layouts, and
/// [`DeviceCsr::drop_layouts`] frees them when no such kernel will run.
pub struct DeviceCsr<T: Scalar> {
    rows: usize,
    cols: usize,
    nnz: usize,
    indptr: Shared<CudaSlice<i32>>,
    indices: Shared<CudaSlice<i32>>,
    values: Shared<CudaSlice<T>>,
    features: Features,
    dia: Option<Shared<DeviceDia<T>>>,
    binned: Option<Shared<DeviceBinned>>,
    tiled: Option<Shared<DeviceTiled>>,
    narrow: Option<Shared<CudaSlice<i16>>>,
    sell: Option<Shared<DeviceSell<T>>>,
    /// The stream of the upload ([`Gpu::stream`]): every kernel on this
    /// matrix runs there (checked), so its memory is freed in stream order.
    stream: Arc<CudaStream>,
    /// Whether all three CSR arrays are held (see [`Layouts::csr`]).
    csr: bool,
    /// The permutation of a renumbered upload (see [`crate::renumber`]).
    perm: Option<Shared<crate::renumber::DevicePerm<T>>>,
}

impl<T: Scalar> fmt::Debug for DeviceCsr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceCsr")
            .field("value", &T::TYPE)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("nnz", &self.nnz)
            .finish_non_exhaustive()
    }
}

impl<T: Scalar> DeviceCsr<T> {
    /// Uploads a host matrix, converting its values to `T`, with every layout
    /// the matrix qualifies for ([`Layouts::ALL`]).
    pub fn upload(gpu: &Gpu, csr: &Csr) -> Result<Self, RtError> {
        Self::upload_with(gpu, csr, Layouts::ALL)
    }

    /// Uploads a host matrix, converting its values to `T`, building only the
    /// chosen optional layouts (the device memory of the others is never
    /// allocated). [`SpmvKernel::upload`](crate::SpmvKernel::upload) picks
    /// those its tuned variant reads.
    pub fn upload_with(gpu: &Gpu, csr: &Csr, layouts: Layouts) -> Result<Self, RtError> {
        if csr.rows() == 0 || csr.cols() == 0 {
            return Err(RtError::EmptyMatrix {
                rows: csr.rows(),
                cols: csr.cols(),
            });
        }
        if let Some(m) = Self::upload_renumbered(gpu, csr, layouts) {
            return m;
        }
        let values: Vec<T> = csr.values().iter().map(|&v| T::from_f64(v)).collect();
        Self::upload_parts(gpu, csr, &values, layouts)
    }

    /// Uploads a sprs matrix (CSR or CSC; converted, sorted and validated on the host).
    #[cfg(feature = "sprs")]
    pub fn from_sprs(gpu: &Gpu, m: &sprs::CsMat<f64>) -> Result<Self, RtError> {
        if m.rows() == 0 || m.cols() == 0 {
            return Err(RtError::EmptyMatrix {
                rows: m.rows(),
                cols: m.cols(),
            });
        }
        Self::upload(gpu, &Csr::from_sprs(m)?)
    }

    /// Uploads raw CSR arrays after checking them with [`validate_raw`]
    /// (before any device call).
    pub fn from_raw(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        indptr: &[u32],
        indices: &[u32],
        values: &[T],
    ) -> Result<Self, RtError> {
        validate_raw(rows, cols, indptr, indices, values.len())?;
        let csr = Csr::try_new(
            rows,
            cols,
            indptr.to_vec(),
            indices.to_vec(),
            values.iter().map(|v| v.to_f64()).collect(),
        )?;
        Self::upload_parts(gpu, &csr, values, Layouts::ALL)
    }

    /// Uploads the structure of `csr` with `values` (already of type `T`).
    fn upload_parts(gpu: &Gpu, csr: &Csr, values: &[T], layouts: Layouts) -> Result<Self, RtError> {
        let features = Features::compute(csr);
        let s = &*gpu.outside_capture("DeviceCsr::upload")?;
        // Validated: every offset and index is below i32::MAX.
        let indptr: Vec<i32> = csr.indptr().iter().map(|&p| p as i32).collect();
        let indices: Vec<i32> = csr.indices().iter().map(|&c| c as i32).collect();
        let dia = match layouts
            .diagonal
            .then(|| crate::dia::diagonal_offsets(csr))
            .flatten()
        {
            Some(offsets) => {
                let dvals = crate::dia::diagonal_values(csr, &offsets, values);
                Some(gpu.own(DeviceDia {
                    stored_per_nnz: crate::dia::stored_per_nnz(csr, &offsets),
                    diagonals: offsets.len(),
                    offsets: s.clone_htod(&offsets)?,
                    values: upload_padded(s, &dvals)?,
                }))
            }
            None => None,
        };
        let binned = match layouts
            .binned
            .then(|| crate::binned::BinnedLayout::build(csr))
            .flatten()
        {
            Some(l) => Some(gpu.own(DeviceBinned {
                meta: s.clone_htod(&l.meta())?,
                scratch: s.alloc_zeros::<f64>(l.long_rows.len() + 1)?,
                threshold: l.threshold,
                long_rows: l.long_rows.len(),
                chunks: l.chunks(),
            })),
            None => None,
        };
        let tiled = match layouts.tiled {
            true => Some(gpu.own(Self::tiled_layout(s, csr)?)),
            false => None,
        };
        let narrow = match layouts
            .narrow
            .then(|| crate::narrow::offsets(csr))
            .flatten()
        {
            Some(off) => Some(gpu.own(s.clone_htod(&off)?)),
            None => None,
        };
        let sell = match layouts
            .sell
            .then(|| crate::sell::SellLayout::build(csr))
            .flatten()
        {
            Some(l) => Some(gpu.own(Self::sell_layout(s, csr, &l, values)?)),
            None => None,
        };
        // Which CSR arrays to hold: all, unless a layout that stands alone
        // was built and the caller asked for it alone.
        let standalone = dia.is_some() || narrow.is_some() || sell.is_some();
        let keep_all = layouts.csr || !standalone || binned.is_some() || tiled.is_some();
        let keep_rows = keep_all || narrow.is_some();
        let held = |keep: bool, data: &[i32]| -> Result<_, RtError> {
            Ok(gpu.own(match keep {
                true => upload_padded(s, data)?,
                false => s.alloc_zeros::<i32>(1)?,
            }))
        };
        Ok(DeviceCsr {
            dia,
            binned,
            tiled,
            narrow,
            sell,
            stream: s.clone(),
            rows: csr.rows(),
            cols: csr.cols(),
            nnz: csr.nnz(),
            indptr: held(keep_rows, &indptr)?,
            indices: held(keep_all, &indices)?,
            values: gpu.own(match keep_rows {
                true => upload_padded(s, values)?,
                false => s.alloc_zeros::<T>(1)?,
            }),
            csr: keep_all,
            features,
            perm: None,
        })
    }

    fn tiled_layout(s: &Arc<CudaStream>, csr: &Csr) -> Result<DeviceTiled, RtError> {
        let t = crate::tiled::TiledLayout::build(csr);
        Ok(DeviceTiled {
            meta: s.clone_htod(&t.meta())?,
            scratch: s.alloc_zeros::<f64>((2 * t.acc_row.len()).max(1))?,
            tiles: t.tiles(),
            split_rows: t.acc_row.len(),
        })
    }

    fn sell_layout(
        s: &Arc<CudaStream>,
        csr: &Csr,
        l: &crate::sell::SellLayout,
        values: &[T],
    ) -> Result<DeviceSell<T>, RtError> {
        Ok(DeviceSell {
            slice_ptr: s.clone_htod(&l.slice_ptr)?,
            meta: s.clone_htod(&l.meta())?,
            cols: upload_padded(s, &l.cols)?,
            values: upload_padded(s, &l.values(values, T::from_f64(0.0))?)?,
            slots: l.slots(),
            stored_per_nnz: l.stored_per_nnz(csr),
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Stored nonzeros.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// Features computed on the host at upload.
    pub fn features(&self) -> &Features {
        &self.features
    }
    /// Row pointers (`rows + 1` entries; a one-element placeholder when
    /// neither the CSR arrays nor the narrow layout were kept, see [`DeviceCsr::has_csr`]).
    pub(crate) fn indptr(&self) -> &CudaSlice<i32> {
        &self.indptr
    }
    /// Column indices (at least one element; only the first `nnz` are
    /// meaningful; a one-element placeholder when `!has_csr()`).
    pub(crate) fn indices(&self) -> &CudaSlice<i32> {
        &self.indices
    }
    /// Values (at least one element; only the first `nnz` are meaningful).
    pub(crate) fn values(&self) -> &CudaSlice<T> {
        &self.values
    }
    /// The CSR arrays on the device (row pointers, column indices, values),
    /// for handing to another library (e.g. cuSPARSE).
    ///
    /// # Safety
    /// Device memory is tracked by stream order only (one stream per
    /// [`Gpu`], no per-buffer events): the caller must use these buffers
    /// only on this matrix's [`Gpu::stream`], must not write them, and must
    /// not let any operation on them outlive the matrix.
    pub unsafe fn raw_csr(&self) -> (&CudaSlice<i32>, &CudaSlice<i32>, &CudaSlice<T>) {
        (&*self.indptr, &*self.indices, &*self.values)
    }

    /// Device memory held by the CSR arrays, in bytes.
    pub fn device_bytes(&self) -> usize {
        self.indptr.num_bytes() + self.indices.num_bytes() + self.values.num_bytes()
    }
    /// Device memory held by the matrix in all: the CSR arrays kept and every
    /// layout built, in bytes.
    pub fn total_device_bytes(&self) -> usize {
        self.device_bytes()
            + self
                .dia
                .as_ref()
                .map_or(0, |d| d.offsets.num_bytes() + d.values.num_bytes())
            + self
                .binned
                .as_ref()
                .map_or(0, |b| b.meta.num_bytes() + b.scratch.num_bytes())
            + self
                .tiled
                .as_ref()
                .map_or(0, |t| t.meta.num_bytes() + t.scratch.num_bytes())
            + self.narrow.as_ref().map_or(0, |n| n.num_bytes())
            + self.perm.as_ref().map_or(0, |p| p.bytes())
            + self.sell.as_ref().map_or(0, |l| {
                l.slice_ptr.num_bytes()
                    + l.meta.num_bytes()
                    + l.cols.num_bytes()
                    + l.values.num_bytes()
            })
    }
    /// The diagonal layout, when the matrix qualified for it at upload and it
    /// was not dropped.
    pub(crate) fn diagonals(&self) -> Option<&DeviceDia<T>> {
        self.dia.as_deref()
    }
    /// The row-binned layout, when the matrix has long rows and it was not
    /// dropped.
    pub(crate) fn binned(&self) -> Option<&DeviceBinned> {
        self.binned.as_deref()
    }
    /// The 16-bit column offsets `col - row`, when every nonzero lies within
    /// 32767 of the diagonal and they were not dropped.
    pub(crate) fn narrow(&self) -> Option<&CudaSlice<i16>> {
        self.narrow.as_deref()
    }
    /// The tile layout, unless it was dropped.
    pub(crate) fn tiled(&self) -> Option<&DeviceTiled> {
        self.tiled.as_deref()
    }
    /// The SELL-C-sigma layout, when the matrix qualified and it was not dropped.
    pub(crate) fn sell(&self) -> Option<&DeviceSell<T>> {
        self.sell.as_deref()
    }
    /// Whether a kernel of `strategy` can run on this matrix (CSR strategies
    /// always; layout strategies when the matrix has their layout).
    pub fn has_layout(&self, strategy: crate::Strategy) -> bool {
        match strategy {
            crate::Strategy::Diagonal => self.dia.is_some(),
            crate::Strategy::Binned => self.binned.is_some(),
            crate::Strategy::Tiled => self.tiled.is_some(),
            crate::Strategy::Narrow => self.narrow.is_some(),
            crate::Strategy::Sell => self.sell.is_some(),
            _ => self.csr,
        }
    }
    /// Device memory of the arrays that a kernel of `strategy` reads, in bytes
    /// (the CSR arrays, the diagonal layout for diagonal kernels, CSR plus the
    /// binned metadata for binned kernels, CSR plus the tile metadata for
    /// tiled kernels, row pointers, values and 16-bit offsets for narrow
    /// kernels; `None` when that layout is not
    /// available).
    pub fn layout_bytes(&self, strategy: crate::Strategy) -> Option<usize> {
        match strategy {
            crate::Strategy::Diagonal => self
                .dia
                .as_ref()
                .map(|d| d.offsets.num_bytes() + d.values.num_bytes()),
            crate::Strategy::Binned => self
                .binned
                .as_ref()
                .map(|b| self.device_bytes() + b.meta.num_bytes() + b.scratch.num_bytes()),
            crate::Strategy::Tiled => self
                .tiled
                .as_ref()
                .map(|t| self.device_bytes() + t.meta.num_bytes() + t.scratch.num_bytes()),
            crate::Strategy::Narrow => self
                .narrow
                .as_ref()
                .map(|n| self.indptr.num_bytes() + self.values.num_bytes() + n.num_bytes()),
            crate::Strategy::Sell => self.sell.as_ref().map(|l| {
                l.slice_ptr.num_bytes()
                    + l.meta.num_bytes()
                    + l.cols.num_bytes()
                    + l.values.num_bytes()
            }),
            _ => Some(self.device_bytes()),
        }
    }
    /// Whether `gpu` runs on the stream this matrix was uploaded on.
    pub fn same_stream(&self, gpu: &Gpu) -> bool {
        gpu.owns(&self.stream)
    }
    /// [`RtError::ForeignOperand`] unless this matrix was uploaded with `gpu`.
    ///
    /// Every launch checks its operands with this: inside [`Gpu::capture`]
    /// it also registers the matrix's arrays and layouts with the graph,
    /// which keeps them alive for as long as it can be replayed.
    pub fn check_gpu(&self, gpu: &Gpu) -> Result<(), RtError> {
        check_owner(gpu, &self.stream, "the matrix")?;
        if gpu.is_capturing() {
            gpu.pin(&self.indptr);
            gpu.pin(&self.indices);
            gpu.pin(&self.values);
            self.dia.iter().for_each(|l| gpu.pin(l));
            self.binned.iter().for_each(|l| gpu.pin(l));
            self.tiled.iter().for_each(|l| gpu.pin(l));
            self.narrow.iter().for_each(|l| gpu.pin(l));
            self.sell.iter().for_each(|l| gpu.pin(l));
            self.perm.iter().for_each(|l| gpu.pin(l));
        }
        Ok(())
    }
    /// Whether the CSR arrays were kept at upload ([`Layouts::csr`]); without
    /// them only the kernels of the layout that was built can run.
    pub fn has_csr(&self) -> bool {
        self.csr
    }
    pub(crate) fn perm(&self) -> Option<&crate::renumber::DevicePerm<T>> {
        self.perm.as_deref()
    }
    /// An owner of the permutation of a renumbered upload (its identity
    /// tells two uploads apart).
    pub(crate) fn perm_pin(&self) -> Option<crate::pin::Pin> {
        self.perm.as_ref().map(|p| p.pin())
    }
    pub(crate) fn set_perm(&mut self, gpu: &Gpu, p: crate::renumber::DevicePerm<T>) {
        self.perm = Some(gpu.own(p));
    }
    /// Frees the layouts other than CSR (kernels that need them then fall
    /// back). Does nothing on a matrix uploaded without its CSR arrays
    /// ([`Layouts::csr`]): its layout is all it has.
    pub fn drop_layouts(&mut self) {
        if !self.csr {
            return;
        }
        self.dia = None;
        self.binned = None;
        self.tiled = None;
        self.narrow = None;
        self.sell = None;
    }
}

/// [`RtError::ForeignOperand`] unless `stream` is `gpu`'s stream: every
/// launch and vector operation checks each operand with it, so device memory
/// is only ever read and written on the one stream it was allocated and will
/// be freed on (stream order then rules out use-after-free and races).
pub(crate) fn check_owner(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    what: &'static str,
) -> Result<(), RtError> {
    if gpu.owns(stream) {
        Ok(())
    } else {
        Err(RtError::ForeignOperand { what })
    }
}

/// A dense vector on the device, tied to the [`Gpu`] (context and stream)
/// that created it: operations with another `Gpu` are refused
/// ([`RtError::ForeignOperand`]).
pub struct DeviceVec<T: Scalar> {
    buf: Shared<CudaSlice<T>>,
    len: usize,
    stream: Arc<CudaStream>,
}

impl<T: Scalar> fmt::Debug for DeviceVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceVec")
            .field("value", &T::TYPE)
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Scalar> DeviceVec<T> {
    /// Copies a host slice to the device.
    pub fn from_host(gpu: &Gpu, data: &[T]) -> Result<Self, RtError> {
        let s = gpu.outside_capture("DeviceVec::from_host")?;
        Ok(DeviceVec {
            buf: gpu.own(upload_padded(&s, data)?),
            len: data.len(),
            stream: s.clone(),
        })
    }

    /// A vector of `n` zeros.
    pub fn zeros(gpu: &Gpu, n: usize) -> Result<Self, RtError> {
        let s = gpu.outside_capture("DeviceVec::zeros")?;
        Ok(DeviceVec {
            buf: gpu.own(s.alloc_zeros::<T>(n.max(1))?),
            len: n,
            stream: s.clone(),
        })
    }

    /// [`RtError::ForeignOperand`] (naming `what`) unless this vector belongs to `gpu`.
    ///
    /// Every launch checks its operands with this: inside [`Gpu::capture`]
    /// it also registers the vector's memory with the graph, which keeps it
    /// alive for as long as it can be replayed.
    pub fn check_gpu(&self, gpu: &Gpu, what: &'static str) -> Result<(), RtError> {
        check_owner(gpu, &self.stream, what)?;
        gpu.pin(&self.buf);
        Ok(())
    }

    /// Overwrites the vector with `data` (same length).
    pub fn copy_from_host(&mut self, gpu: &Gpu, data: &[T]) -> Result<(), RtError> {
        self.check_gpu(gpu, "the vector")?;
        let s = gpu.outside_capture("DeviceVec::copy_from_host")?;
        if data.len() != self.len {
            return Err(RtError::DimensionMismatch {
                what: "host data",
                expected: self.len,
                found: data.len(),
            });
        }
        if !data.is_empty() {
            s.memcpy_htod(data, &mut *self.buf)?;
        }
        Ok(())
    }

    /// Copies the vector back to the host (waits for queued work).
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>, RtError> {
        self.check_gpu(gpu, "the vector")?;
        let s = gpu.outside_capture("DeviceVec::to_host")?;
        let mut v = s.clone_dtoh(&*self.buf)?;
        v.truncate(self.len);
        Ok(v)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device buffer (at least one element long, even when empty).
    pub(crate) fn as_slice(&self) -> &CudaSlice<T> {
        &self.buf
    }

    /// The device buffer, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut CudaSlice<T> {
        &mut self.buf
    }
}

#[cfg(test)]
mod tests;
