//! Device side: the GPU context, uploaded matrices and vectors.
//!
//! All device work of one [`Gpu`] goes through a single CUDA stream, so
//! operations are ordered without extra synchronization.

use crate::csr::Csr;
use crate::error::{RtError, is_sticky};
use crate::features::Features;
use crate::variant::ValueType;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
    ValidAsZeroBits, sys,
};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use crate::layouts::Layouts;

mod parts;
pub use parts::{DeviceBinned, DeviceDia, DeviceSell, DeviceTiled};

/// L2 size assumed when the driver does not report one (H100/H200: 50 MB).
pub const DEFAULT_L2_BYTES: usize = 50 * 1000 * 1000;

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to open the driver library with
    // `dlopen`/`LoadLibrary` and drops it again; it calls no CUDA function.
    unsafe { sys::is_culib_present() }
}

/// One CUDA device: context, the stream all SparseRL work runs on, and a
/// registry of loaded kernel functions.
///
/// Cloning is cheap and shares the context, stream and registry.
///
/// Event tracking between streams is disabled for this context (everything
/// runs on [`Gpu::stream`]); if you enqueue work on buffers of this `Gpu`
/// from another stream, synchronize yourself.
#[derive(Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    functions: Arc<Mutex<HashMap<String, CudaFunction>>>,
    /// Modules of sparserl-rt's own precompiled kernels, by key.
    modules: Arc<Mutex<HashMap<&'static str, Arc<CudaModule>>>>,
    name: Arc<str>,
    cc: (i32, i32),
    l2_bytes: usize,
    sm_count: usize,
    /// Set while [`Gpu::capture`](crate::graph) records the stream.
    capturing: Arc<AtomicBool>,
    /// Small buffers passed for kernel parameters a launch does not use.
    spare: Arc<(CudaSlice<f64>, CudaSlice<u32>)>,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ctx.ordinal())
            .field("name", &self.name)
            .field("arch", &self.arch())
            .finish()
    }
}

impl Gpu {
    /// Opens device `ordinal` (0 for the first GPU).
    ///
    /// Returns [`RtError::NoDriver`] when the CUDA driver library is missing
    /// and [`RtError::NoDevice`] when the device does not exist; never panics
    /// for lack of a GPU.
    pub fn new(ordinal: usize) -> Result<Gpu, RtError> {
        if !driver_present() {
            return Err(RtError::NoDriver);
        }
        let count = match CudaContext::device_count() {
            Ok(n) => n.max(0) as usize,
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE => 0,
            Err(e) => return Err(e.into()),
        };
        if ordinal >= count {
            return Err(RtError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: every buffer created through this `Gpu` is allocated, used
        // and freed on the single stream created below, so stream order alone
        // guarantees that no buffer is used before it is written or after it
        // is freed; per-buffer events are not needed (and would be recorded
        // inside CUDA graph captures otherwise).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let name: Arc<str> = ctx.name()?.into();
        let cc = ctx.compute_capability()?;
        let l2_bytes = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .ok()
            .filter(|&b| b > 0)
            .map_or(DEFAULT_L2_BYTES, |b| b as usize);
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ok()
            .filter(|&n| n > 0)
            .map_or(1, |n| n as usize);
        Ok(Gpu {
            ctx,
            stream: stream.clone(),
            functions: Arc::new(Mutex::new(HashMap::new())),
            modules: Arc::new(Mutex::new(HashMap::new())),
            name,
            cc,
            l2_bytes,
            sm_count,
            capturing: Arc::new(AtomicBool::new(false)),
            spare: Arc::new((
                stream.alloc_zeros::<f64>(crate::scalar::SCALAR_LEN)?,
                stream.alloc_zeros::<u32>(1)?,
            )),
        })
    }

    /// Device name as reported by the driver.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }

    /// The NVRTC architecture name, e.g. `"sm_90"`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.cc.0, self.cc.1)
    }

    /// L2 cache size in bytes.
    pub fn l2_bytes(&self) -> usize {
        self.l2_bytes
    }

    /// The stream all SparseRL work of this device runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Spare device buffers for parameters a kernel does not read or write.
    pub(crate) fn spare(&self) -> &(CudaSlice<f64>, CudaSlice<u32>) {
        &self.spare
    }

    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> usize {
        self.sm_count
    }

    /// Waits for all work queued on [`Gpu::stream`].
    ///
    /// [`RtError::Capturing`] while the stream is being captured.
    pub fn synchronize(&self) -> Result<(), RtError> {
        self.check_not_capturing("Gpu::synchronize")?;
        Ok(self.stream.synchronize()?)
    }

    /// Whether [`Gpu::capture`] is recording this Gpu's stream right now.
    pub fn is_capturing(&self) -> bool {
        self.capturing.load(Ordering::Acquire)
    }

    pub(crate) fn set_capturing(&self, on: bool) {
        self.capturing.store(on, Ordering::Release);
    }

    /// [`RtError::Capturing`] naming `call` while the stream is captured.
    pub(crate) fn check_not_capturing(&self, call: &'static str) -> Result<(), RtError> {
        if self.is_capturing() {
            return Err(RtError::Capturing { call });
        }
        Ok(())
    }

    /// Whether `stream` is this Gpu's stream (device data remembers the
    /// stream it was created on; see [`check_owner`]).
    pub(crate) fn owns(&self, stream: &Arc<CudaStream>) -> bool {
        Arc::ptr_eq(&self.stream, stream)
    }

    /// The function `entry`, loading it on first use from the PTX that
    /// `make_ptx` returns (called at most once per entry and `Gpu`; loading is
    /// serialized across threads).
    ///
    /// Entries are keyed by name alone: different PTX must use different entry names.
    pub fn function_or_load<F>(&self, entry: &str, make_ptx: F) -> Result<CudaFunction, RtError>
    where
        F: FnOnce() -> Result<String, RtError>,
    {
        self.function_or_load_module(entry, || {
            let ptx = make_ptx()?;
            if ptx.contains('\0') {
                return Err(RtError::Compile(format!(
                    "PTX for `{entry}` contains a NUL byte"
                )));
            }
            Ok(Ptx::from_src(ptx))
        })
    }

    /// [`Gpu::function_or_load`] for any module image (PTX text or a cubin).
    pub fn function_or_load_module<F>(&self, entry: &str, make: F) -> Result<CudaFunction, RtError>
    where
        F: FnOnce() -> Result<Ptx, RtError>,
    {
        let mut map = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = map.get(entry) {
            return Ok(f.clone());
        }
        let image = make()?;
        let load_err = |e: DriverError| -> RtError {
            if is_sticky(&e) {
                e.into()
            } else {
                RtError::Compile(format!("loading the module of entry `{entry}` failed: {e}"))
            }
        };
        let module = self.ctx.load_module(image).map_err(load_err)?;
        let f = module.load_function(entry).map_err(load_err)?;
        map.insert(entry.to_string(), f.clone());
        Ok(f)
    }

    /// The functions `entries` of one module image, loaded once for all of
    /// them (`make` is called only when some entry is not registered yet);
    /// registered by name like [`Gpu::function_or_load_module`].
    pub(crate) fn functions_of_module<F>(
        &self,
        entries: &[String],
        make: F,
    ) -> Result<Vec<CudaFunction>, RtError>
    where
        F: FnOnce() -> Result<Ptx, RtError>,
    {
        let mut map = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = entries.iter().map(|e| map.get(e).cloned()).collect() {
            return Ok(found);
        }
        let module = self.ctx.load_module(make()?).map_err(|e| {
            if is_sticky(&e) {
                RtError::from(e)
            } else {
                RtError::Compile(format!("loading a module failed: {e}"))
            }
        })?;
        entries
            .iter()
            .map(|e| {
                let f = module.load_function(e).map_err(|err| {
                    RtError::Compile(format!("the module has no usable entry `{e}`: {err}"))
                })?;
                map.insert(e.clone(), f.clone());
                Ok(f)
            })
            .collect()
    }

    /// The function `entry` of the static module `key` (PTX `ptx`), the
    /// module loaded once per `Gpu` and key.
    pub(crate) fn static_function(
        &self,
        key: &'static str,
        ptx: &'static str,
        entry: &str,
    ) -> Result<CudaFunction, RtError> {
        // Functions are kept in the same registry as generated entries (the
        // names are distinct), so a call finds them without a driver lookup.
        if let Some(f) = self
            .functions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(entry)
        {
            return Ok(f.clone());
        }
        let module = {
            let mut map = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match map.get(key) {
                Some(m) => m.clone(),
                None => {
                    let m =
                        self.ctx.load_module(Ptx::from_src(ptx)).map_err(|e| {
                            match is_sticky(&e) {
                                true => RtError::from(e),
                                false => {
                                    RtError::Compile(format!("loading module `{key}` failed: {e}"))
                                }
                            }
                        })?;
                    map.insert(key, m.clone());
                    m
                }
            }
        };
        let f = module.load_function(entry).map_err(|e| {
            RtError::Compile(format!("module `{key}` has no usable entry `{entry}`: {e}"))
        })?;
        self.functions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(entry.to_string(), f.clone());
        Ok(f)
    }

    /// The function `entry` of `ptx`, loaded once per entry (see [`Gpu::function_or_load`]).
    pub fn load_ptx(&self, entry: &str, ptx: &str) -> Result<CudaFunction, RtError> {
        self.function_or_load(entry, || Ok(ptx.to_string()))
    }
}

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
    gpu: &Gpu,
    data: &[T],
) -> Result<CudaSlice<T>, RtError> {
    if data.is_empty() {
        Ok(gpu.stream.alloc_zeros::<T>(1)?)
    } else {
        Ok(gpu.stream.clone_htod(data)?)
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
    indptr: CudaSlice<i32>,
    indices: CudaSlice<i32>,
    values: CudaSlice<T>,
    features: Features,
    dia: Option<DeviceDia<T>>,
    binned: Option<DeviceBinned>,
    tiled: Option<DeviceTiled>,
    narrow: Option<CudaSlice<i16>>,
    sell: Option<DeviceSell<T>>,
    /// The stream of the upload ([`Gpu::stream`]): every kernel on this
    /// matrix runs there (checked), so its memory is freed in stream order.
    stream: Arc<CudaStream>,
    /// Whether all three CSR arrays are held (see [`Layouts::csr`]).
    csr: bool,
    /// The permutation of a renumbered upload (see [`crate::renumber`]).
    perm: Option<crate::renumber::DevicePerm<T>>,
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
                Some(DeviceDia {
                    stored_per_nnz: crate::dia::stored_per_nnz(csr, &offsets),
                    diagonals: offsets.len(),
                    offsets: gpu.stream.clone_htod(&offsets)?,
                    values: upload_padded(gpu, &dvals)?,
                })
            }
            None => None,
        };
        let binned = match layouts
            .binned
            .then(|| crate::binned::BinnedLayout::build(csr))
            .flatten()
        {
            Some(l) => Some(DeviceBinned {
                meta: gpu.stream.clone_htod(&l.meta())?,
                scratch: gpu.stream.alloc_zeros::<f64>(l.long_rows.len() + 1)?,
                threshold: l.threshold,
                long_rows: l.long_rows.len(),
                chunks: l.chunks(),
            }),
            None => None,
        };
        let tiled = if layouts.tiled {
            let t = crate::tiled::TiledLayout::build(csr);
            Some(DeviceTiled {
                meta: gpu.stream.clone_htod(&t.meta())?,
                scratch: gpu
                    .stream
                    .alloc_zeros::<f64>((2 * t.acc_row.len()).max(1))?,
                tiles: t.tiles(),
                split_rows: t.acc_row.len(),
            })
        } else {
            None
        };
        let narrow = match layouts
            .narrow
            .then(|| crate::narrow::offsets(csr))
            .flatten()
        {
            Some(off) => Some(gpu.stream.clone_htod(&off)?),
            None => None,
        };
        let sell = match layouts
            .sell
            .then(|| crate::sell::SellLayout::build(csr))
            .flatten()
        {
            Some(l) => Some(DeviceSell {
                slice_ptr: gpu.stream.clone_htod(&l.slice_ptr)?,
                meta: gpu.stream.clone_htod(&l.meta())?,
                cols: upload_padded(gpu, &l.cols)?,
                values: upload_padded(gpu, &l.values(values, T::from_f64(0.0)))?,
                slots: l.slots(),
                stored_per_nnz: l.stored_per_nnz(csr),
            }),
            None => None,
        };
        // Which CSR arrays to hold: all, unless a layout that stands alone
        // was built and the caller asked for it alone.
        let standalone = dia.is_some() || narrow.is_some() || sell.is_some();
        let keep_all = layouts.csr || !standalone || binned.is_some() || tiled.is_some();
        let keep_rows = keep_all || narrow.is_some();
        Ok(DeviceCsr {
            dia,
            binned,
            tiled,
            narrow,
            sell,
            stream: gpu.stream.clone(),
            rows: csr.rows(),
            cols: csr.cols(),
            nnz: csr.nnz(),
            indptr: if keep_rows {
                gpu.stream.clone_htod(&indptr)?
            } else {
                gpu.stream.alloc_zeros::<i32>(1)?
            },
            indices: if keep_all {
                upload_padded(gpu, &indices)?
            } else {
                gpu.stream.alloc_zeros::<i32>(1)?
            },
            values: if keep_rows {
                upload_padded(gpu, values)?
            } else {
                gpu.stream.alloc_zeros::<T>(1)?
            },
            csr: keep_all,
            features,
            perm: None,
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
        (&self.indptr, &self.indices, &self.values)
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
        self.dia.as_ref()
    }
    /// The row-binned layout, when the matrix has long rows and it was not
    /// dropped.
    pub(crate) fn binned(&self) -> Option<&DeviceBinned> {
        self.binned.as_ref()
    }
    /// The 16-bit column offsets `col - row`, when every nonzero lies within
    /// 32767 of the diagonal and they were not dropped.
    pub(crate) fn narrow(&self) -> Option<&CudaSlice<i16>> {
        self.narrow.as_ref()
    }
    /// The tile layout, unless it was dropped.
    pub(crate) fn tiled(&self) -> Option<&DeviceTiled> {
        self.tiled.as_ref()
    }
    /// The SELL-C-sigma layout, when the matrix qualified and it was not dropped.
    pub(crate) fn sell(&self) -> Option<&DeviceSell<T>> {
        self.sell.as_ref()
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
        Arc::ptr_eq(&self.stream, &gpu.stream)
    }
    /// [`RtError::ForeignOperand`] unless this matrix was uploaded with `gpu`.
    pub fn check_gpu(&self, gpu: &Gpu) -> Result<(), RtError> {
        check_owner(gpu, &self.stream, "the matrix")
    }
    /// Whether the CSR arrays were kept at upload ([`Layouts::csr`]); without
    /// them only the kernels of the layout that was built can run.
    pub fn has_csr(&self) -> bool {
        self.csr
    }
    pub(crate) fn perm(&self) -> Option<&crate::renumber::DevicePerm<T>> {
        self.perm.as_ref()
    }
    pub(crate) fn set_perm(&mut self, p: crate::renumber::DevicePerm<T>) {
        self.perm = Some(p);
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
    same_owner(&gpu.stream, stream, what)
}

/// [`RtError::ForeignOperand`] unless `found` is the very object `expected`
/// is (identity, not equality).
fn same_owner<S>(expected: &Arc<S>, found: &Arc<S>, what: &'static str) -> Result<(), RtError> {
    if Arc::ptr_eq(expected, found) {
        Ok(())
    } else {
        Err(RtError::ForeignOperand { what })
    }
}

/// A dense vector on the device, tied to the [`Gpu`] (context and stream)
/// that created it: operations with another `Gpu` are refused
/// ([`RtError::ForeignOperand`]).
pub struct DeviceVec<T: Scalar> {
    buf: CudaSlice<T>,
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
        gpu.check_not_capturing("DeviceVec::from_host")?;
        Ok(DeviceVec {
            buf: upload_padded(gpu, data)?,
            len: data.len(),
            stream: gpu.stream.clone(),
        })
    }

    /// A vector of `n` zeros.
    pub fn zeros(gpu: &Gpu, n: usize) -> Result<Self, RtError> {
        gpu.check_not_capturing("DeviceVec::zeros")?;
        Ok(DeviceVec {
            buf: gpu.stream.alloc_zeros::<T>(n.max(1))?,
            len: n,
            stream: gpu.stream.clone(),
        })
    }

    /// [`RtError::ForeignOperand`] (naming `what`) unless this vector belongs to `gpu`.
    pub fn check_gpu(&self, gpu: &Gpu, what: &'static str) -> Result<(), RtError> {
        check_owner(gpu, &self.stream, what)
    }

    /// Overwrites the vector with `data` (same length).
    pub fn copy_from_host(&mut self, gpu: &Gpu, data: &[T]) -> Result<(), RtError> {
        self.check_gpu(gpu, "the vector")?;
        gpu.check_not_capturing("DeviceVec::copy_from_host")?;
        if data.len() != self.len {
            return Err(RtError::DimensionMismatch {
                what: "host data",
                expected: self.len,
                found: data.len(),
            });
        }
        if !data.is_empty() {
            gpu.stream.memcpy_htod(data, &mut self.buf)?;
        }
        Ok(())
    }

    /// Copies the vector back to the host (waits for queued work).
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>, RtError> {
        self.check_gpu(gpu, "the vector")?;
        gpu.check_not_capturing("DeviceVec::to_host")?;
        let mut v = gpu.stream.clone_dtoh(&self.buf)?;
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

    /// The buffer and its owning stream (for [`crate::DeviceDense::from_vec`]).
    pub(crate) fn into_parts(self) -> (CudaSlice<T>, Arc<CudaStream>) {
        (self.buf, self.stream)
    }
}

#[cfg(test)]
mod tests;
