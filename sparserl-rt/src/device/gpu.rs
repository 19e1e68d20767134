//! [`Gpu`]: the context, the one stream, the capture state and the registry
//! of loaded functions.

use crate::capture::{CaptureCtl, Enter, Mode};
use crate::error::{RtError, is_sticky};
use crate::pin::Shared;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, sys};
use cudarc::nvrtc::Ptx;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// L2 size assumed when the driver does not report one (H100/H200: 50 MB).
pub const DEFAULT_L2_BYTES: usize = 50 * 1000 * 1000;

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to open the driver library with
    // `dlopen`/`LoadLibrary` and drops it again; it calls no CUDA function.
    unsafe { sys::is_culib_present() }
}

/// The key a loaded function is registered under. The crate's own kernels
/// and the entries of generated specs are keyed by the address of their
/// `'static` image, which no caller-supplied PTX can have; PTX loaded
/// through the `unsafe` loaders lives in a namespace of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum FnKey {
    /// An entry of a `'static` module image (PTX text or cubin bytes):
    /// the image's address and length identify its bytes.
    Image {
        addr: usize,
        len: usize,
        entry: Cow<'static, str>,
    },
    /// An entry compiled at run time from a `'static` CUDA source (`jit`).
    Source {
        addr: usize,
        len: usize,
        entry: Cow<'static, str>,
    },
    /// An entry loaded by name through [`Gpu::function_or_load_module`].
    User(String),
}

impl FnKey {
    /// The key of `entry` in the `'static` image `bytes`.
    /// A `'static` entry name is borrowed: the lookups on the launch path
    /// allocate nothing.
    pub(crate) fn image(bytes: &'static [u8], entry: impl Into<Cow<'static, str>>) -> FnKey {
        FnKey::Image {
            addr: bytes.as_ptr() as usize,
            len: bytes.len(),
            entry: entry.into(),
        }
    }
}

/// One CUDA device: context, the stream all SparseRL work runs on, the
/// capture state, and a registry of loaded kernel functions.
///
/// Cloning is cheap and shares the context, stream, capture state and
/// registry.
///
/// Event tracking between streams is disabled for this context: all device
/// memory of the crate is used and freed in the order of the one stream
/// ([`Gpu::stream`] is `unsafe` for that reason).
#[derive(Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    functions: Arc<Mutex<HashMap<FnKey, CudaFunction>>>,
    /// Modules of `'static` images, by image address.
    modules: Arc<Mutex<HashMap<usize, Arc<CudaModule>>>>,
    name: Arc<str>,
    cc: (i32, i32),
    l2_bytes: usize,
    sm_count: usize,
    /// Who may enqueue while [`Gpu::capture`] records the stream, and what
    /// captured graphs keep alive ([`crate::capture`]).
    ctl: Arc<CaptureCtl>,
    /// Small buffers passed for kernel parameters a launch does not use.
    spare: Arc<Shared<(CudaSlice<f64>, CudaSlice<u32>)>>,
    /// The transposed SpMM path's workspaces, per value type
    /// ([`crate::spmm::workspace`]).
    spmm_ws: Arc<Mutex<crate::spmm::workspace::Slots>>,
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
        // and freed on the single stream created below (launches check the
        // owner of every operand; the raw stream and context are reachable
        // only through `unsafe` methods), so stream order alone guarantees
        // that no buffer is used before it is written or after it is freed;
        // per-buffer events are not needed (and would be recorded inside
        // CUDA graph captures otherwise).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let name: Arc<str> = ctx.name()?.into();
        let cc = ctx.compute_capability()?;
        let attr = |a| ctx.attribute(a).ok().filter(|&v| v > 0);
        let l2_bytes = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_or(DEFAULT_L2_BYTES, |b| b as usize);
        let sm_count = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_or(1, |n| n as usize);
        let ctl = Arc::new(CaptureCtl::default());
        let spare = (
            stream.alloc_zeros::<f64>(crate::scalar::SCALAR_LEN)?,
            stream.alloc_zeros::<u32>(1)?,
        );
        Ok(Gpu {
            ctx,
            stream,
            functions: Arc::new(Mutex::new(HashMap::new())),
            modules: Arc::new(Mutex::new(HashMap::new())),
            name,
            cc,
            l2_bytes,
            sm_count,
            spare: Arc::new(Shared::new(&ctl, spare)),
            spmm_ws: Arc::default(),
            ctl,
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

    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> usize {
        self.sm_count
    }

    /// Free and total device memory in bytes (`cuMemGetInfo`), for checks
    /// before large allocations.
    pub fn mem_info(&self) -> Result<(usize, usize), RtError> {
        Ok(self.ctx.mem_get_info()?)
    }

    /// The stream all SparseRL work of this device runs on, for handing to
    /// another library (cuSPARSE, cuBLAS) or enqueueing work of your own.
    ///
    /// # Safety
    /// The crate's checks do not see what is done with the stream. The
    /// caller must not begin or end a capture on it, launch a CUDA graph on
    /// it, or enqueue anything on it while [`Gpu::capture`] (on any thread)
    /// is in progress; work it enqueues on buffers of this `Gpu` must be
    /// valid for them (lengths, types); it must not create other streams
    /// that touch this `Gpu`'s buffers (event tracking is off: nothing
    /// orders them); and memory it allocates on the stream it frees itself.
    pub unsafe fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA context.
    ///
    /// # Safety
    /// As [`Gpu::stream`], for everything reachable from the context: no
    /// stream made from it may touch this `Gpu`'s buffers, and nothing made
    /// from it may be used on [`Gpu::stream`] during a capture.
    pub unsafe fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Permission to enqueue device work that a capture may record
    /// ([`Mode::Record`]); [`RtError::Capturing`] naming `call` while
    /// another thread captures.
    pub(crate) fn enqueue(&self, call: &'static str) -> Result<Enter<'_>, RtError> {
        self.ctl.enter(&self.stream, Mode::Record, call)
    }

    /// Permission for work that must not happen during any capture (host
    /// synchronisation and copies, allocation, graph launch).
    pub(crate) fn outside_capture(&self, call: &'static str) -> Result<Enter<'_>, RtError> {
        self.ctl.enter(&self.stream, Mode::Outside, call)
    }

    /// The capture state shared by this `Gpu`'s clones and buffers.
    pub(crate) fn ctl(&self) -> &Arc<CaptureCtl> {
        &self.ctl
    }

    /// Wraps a new allocation of this `Gpu` (see [`crate::pin`]).
    pub(crate) fn own<X: Send + Sync + 'static>(&self, x: X) -> Shared<X> {
        Shared::new(&self.ctl, x)
    }

    /// Registers `s` as an operand of the launch the current thread is
    /// recording (nothing outside a capture).
    pub(crate) fn pin<X: Send + Sync + 'static>(&self, s: &Shared<X>) {
        self.ctl.pin(|| s.pin());
    }

    /// Spare device buffers for parameters a kernel does not read or write
    /// (owned by the `Gpu`, which every graph holds).
    pub(crate) fn spare(&self) -> &(CudaSlice<f64>, CudaSlice<u32>) {
        &self.spare
    }

    /// The transposed SpMM path's workspaces (shared by the clones).
    pub(crate) fn spmm_workspaces(&self) -> &Mutex<crate::spmm::workspace::Slots> {
        &self.spmm_ws
    }

    /// Waits for all work queued on the stream.
    ///
    /// [`RtError::Capturing`] while the stream is being captured.
    pub fn synchronize(&self) -> Result<(), RtError> {
        Ok(self.outside_capture("Gpu::synchronize")?.synchronize()?)
    }

    /// Whether [`Gpu::capture`] is recording this Gpu's stream right now
    /// (on any thread).
    pub fn is_capturing(&self) -> bool {
        self.ctl.is_active()
    }

    /// Whether `other` shares this Gpu's stream (is this `Gpu` or a clone).
    pub(crate) fn same_gpu(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.stream, &other.stream)
    }

    /// Whether `stream` is this Gpu's stream (device data remembers the
    /// stream it was created on; see [`check_owner`](super::check_owner)).
    pub(crate) fn owns(&self, stream: &Arc<CudaStream>) -> bool {
        Arc::ptr_eq(&self.stream, stream)
    }

    /// The function `entry`, loaded on first use from the PTX that
    /// `make_ptx` returns (called at most once per entry and `Gpu`; loading
    /// is serialized across threads).
    ///
    /// # Safety
    /// Entries loaded here are keyed by name alone (in a namespace of their
    /// own: never one of the crate's or a generated kernel's): the caller
    /// must use different entry names for different code, and launch the
    /// function only with the arguments its code expects.
    pub unsafe fn function_or_load<F>(
        &self,
        entry: &str,
        make_ptx: F,
    ) -> Result<CudaFunction, RtError>
    where
        F: FnOnce() -> Result<String, RtError>,
    {
        let make = || {
            let ptx = make_ptx()?;
            if ptx.contains('\0') {
                return Err(RtError::Compile(format!(
                    "PTX for `{entry}` contains a NUL byte"
                )));
            }
            Ok(Ptx::from_src(ptx))
        };
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.function_or_load_module(entry, make) }
    }

    /// [`Gpu::function_or_load`] for any module image (PTX text or a cubin).
    ///
    /// # Safety
    /// As [`Gpu::function_or_load`].
    pub unsafe fn function_or_load_module<F>(
        &self,
        entry: &str,
        make: F,
    ) -> Result<CudaFunction, RtError>
    where
        F: FnOnce() -> Result<Ptx, RtError>,
    {
        self.load_keyed(FnKey::User(entry.to_string()), entry, make)
    }

    /// The function `entry` of `ptx`, loaded once per entry.
    ///
    /// # Safety
    /// As [`Gpu::function_or_load`].
    pub unsafe fn load_ptx(&self, entry: &str, ptx: &str) -> Result<CudaFunction, RtError> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.function_or_load(entry, || Ok(ptx.to_string())) }
    }

    /// The functions `entries` of one module image, loaded once for all of
    /// them (`make` is called only when some entry is not registered yet),
    /// registered by name in the namespace of [`Gpu::function_or_load_module`].
    ///
    /// # Safety
    /// As [`Gpu::function_or_load`]: every entry name stands for the code
    /// `make` returns, whoever loads that name later.
    #[cfg(feature = "tools")]
    pub(crate) unsafe fn functions_of_module<F>(
        &self,
        entries: &[String],
        make: F,
    ) -> Result<Vec<CudaFunction>, RtError>
    where
        F: FnOnce() -> Result<Ptx, RtError>,
    {
        let mut map = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        let key = |e: &String| FnKey::User(e.clone());
        if let Some(found) = entries.iter().map(|e| map.get(&key(e)).cloned()).collect() {
            return Ok(found);
        }
        let module = self.load_module(make()?, || "a module".into())?;
        entries
            .iter()
            .map(|e| {
                let f = module.load_function(e).map_err(|err| {
                    RtError::Compile(format!("the module has no usable entry `{e}`: {err}"))
                })?;
                map.insert(key(e), f.clone());
                Ok(f)
            })
            .collect()
    }

    /// The function registered under `key` (entry name `entry`), loading
    /// the module `make` returns on first use.
    pub(crate) fn load_keyed<F>(
        &self,
        key: FnKey,
        entry: &str,
        make: F,
    ) -> Result<CudaFunction, RtError>
    where
        F: FnOnce() -> Result<Ptx, RtError>,
    {
        let mut map = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = map.get(&key) {
            return Ok(f.clone());
        }
        let what = || format!("the module of entry `{entry}`");
        let module = self.load_module(make()?, what)?;
        let f = module
            .load_function(entry)
            .map_err(|e| load_error(e, what()))?;
        map.insert(key, f.clone());
        Ok(f)
    }

    /// Loads a module image; a failure that is not sticky is a
    /// [`RtError::Compile`] saying "loading {what} failed".
    fn load_module(
        &self,
        image: Ptx,
        what: impl FnOnce() -> String,
    ) -> Result<Arc<CudaModule>, RtError> {
        self.ctx
            .load_module(image)
            .map_err(|e| load_error(e, what()))
    }

    /// The function `entry` of the crate's own `'static` PTX `ptx`, the
    /// module loaded once per `Gpu` (keyed by the image's address).
    pub(crate) fn static_function(
        &self,
        ptx: &'static str,
        entry: &'static str,
    ) -> Result<CudaFunction, RtError> {
        let key = FnKey::image(ptx.as_bytes(), entry);
        if let Some(f) = self
            .functions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(f.clone());
        }
        let module = {
            let mut map = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match map.get(&(ptx.as_ptr() as usize)) {
                Some(m) => m.clone(),
                None => {
                    let m = self.load_module(Ptx::from_src(ptx), || {
                        format!("sparserl-rt's module with `{entry}`")
                    })?;
                    map.insert(ptx.as_ptr() as usize, m.clone());
                    m
                }
            }
        };
        let f = module.load_function(entry).map_err(|e| {
            RtError::Compile(format!(
                "sparserl-rt's module has no usable entry `{entry}`: {e}"
            ))
        })?;
        self.functions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, f.clone());
        Ok(f)
    }
}

/// A driver error of loading `what`: sticky errors as they are (the context
/// is unusable), others as [`RtError::Compile`].
fn load_error(e: cudarc::driver::DriverError, what: String) -> RtError {
    if is_sticky(&e) {
        e.into()
    } else {
        RtError::Compile(format!("loading {what} failed: {e}"))
    }
}
