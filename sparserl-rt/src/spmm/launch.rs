//! Typed SpMM launches: [`SpmmSpec`], the [`SpmmKernel`] trait and the
//! `unsafe` SpMM kernel launches (plain, and programmatic dependent).
//!
//! Every SpMM entry has one ABI (`T` = `float` or `double`):
//!
//! ```text
//! extern "C" __global__ void ENTRY(const int rows, const int cols, const int nnz,
//!     const int n, const int* indptr, const int* indices, const T* values,
//!     const T* x, const int ldx, T* y, const int ldy, const T alpha,
//!     const T beta, const T* bias)
//! ```
//!
//! `Y = alpha A X + beta Y` (fused: `relu(... + bias[col])`); `beta == 0`
//! never reads `Y`. An entry of a compile-time width returns at once when
//! `n` differs from it. Nnz-split modules hold two (three with an
//! epilogue) entries per width: `<entry>_prep` (a warp per row up to
//! [`PASS_WARPS`](super::variant::PASS_WARPS) warps, past that up to 32
//! rows per warp: rows cut between warps start from `beta Y`, empty rows
//! get their final value), the main entry, and `<entry>_post` (the epilogue's ReLU on the
//! cut rows), launched in that order on the one stream. Entries compiled for
//! sm_90 or later ([`SpmmFunctions::dependent`]) have main and post launched
//! as programmatic dependents of the pass before them (`cuLaunchKernelEx`
//! with programmatic stream serialization): their blocks start while that
//! pass still runs and wait for it with `griddepcontrol.wait` before they
//! touch `Y`, which hides a launch gap per pass on small matrices (a
//! capture records programmatic edges; the first refusal by the driver makes
//! every later launch plain).

use super::variant::{SpmmEpilogue, SpmmShape, SpmmVariant, TRANSPOSE_BLOCK, workspace_ld};
use super::workspace::with_workspace;
use crate::capture::Enter;
use crate::dense::{DenseLayout, DeviceDense};
use crate::device::{DeviceCsr, DeviceVec, Gpu, Scalar};
use crate::error::RtError;
use crate::kernel::{Image, Provenance, arch_number};
use crate::launch::load_entry;
use crate::renumber::{Numbering, Operand};
use crate::variant::ValueType;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError, LaunchConfig,
    PushKernelArg, sys,
};
use std::collections::BTreeSet;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A compiled image of an SpMM module for one architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpmmImage {
    /// Target, e.g. `sm_90`.
    pub arch: &'static str,
    /// PTX text.
    pub ptx: &'static str,
    /// SASS for exactly `arch`, when `ptxas` ran at build time.
    pub cubin: Option<&'static [u8]>,
}

/// One translation unit of an SpMM kernel: a variant at a compile-time
/// width (`Some(n)`: the tuned entry plus the generic one) or only the
/// generic-width entry (`None`), with the declared fused entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpmmModule {
    /// The variant.
    pub variant: SpmmVariant,
    /// The compile-time width of its tuned entry.
    pub width: Option<usize>,
    /// CUDA C++ source (for NVRTC at first use when no image was embedded).
    pub source: &'static str,
    /// Images per architecture.
    pub images: &'static [SpmmImage],
}

impl SpmmModule {
    /// The exact-architecture cubin, else the PTX of the highest embedded
    /// architecture not above the device's; `Ok(None)` when nothing was
    /// embedded (compile `source` at first use); an error when every image
    /// targets a newer device.
    pub fn image_for(&self, kernel: &str, gpu_cc: (i32, i32)) -> Result<Option<Image>, RtError> {
        let device = (gpu_cc.0.max(0) * 10 + gpu_cc.1.max(0)) as u32;
        let usable = self
            .images
            .iter()
            .filter_map(|i| arch_number(i.arch).map(|n| (n, i)))
            .filter(|(n, _)| *n <= device)
            .max_by_key(|(n, _)| *n);
        match usable {
            Some((n, i)) => Ok(Some(match i.cubin {
                Some(bytes) if n == device => Image::Cubin {
                    arch: i.arch,
                    bytes,
                },
                _ => Image::Ptx {
                    arch: i.arch,
                    text: i.ptx,
                },
            })),
            None => match self.images.iter().filter_map(|i| arch_number(i.arch)).min() {
                Some(lowest) => Err(RtError::UnsupportedDevice {
                    kernel: kernel.to_string(),
                    device: format!("sm_{}{}", gpu_cc.0, gpu_cc.1),
                    lowest: format!("sm_{lowest}"),
                }),
                None => Ok(None),
            },
        }
    }
}

/// Everything the runtime needs to launch one declared SpMM kernel.
#[derive(Debug, Clone, Copy)]
pub struct SpmmSpec {
    /// Declared kernel name.
    pub name: &'static str,
    /// Value type of A, X and Y.
    pub value: ValueType,
    /// Layout of X and Y.
    pub layout: DenseLayout,
    /// One module per declared width (`width: Some(n)`), its tuned variant.
    pub tuned: &'static [SpmmModule],
    /// The generic-width [`SpmmVariant::FALLBACK`] (runs when no width is tuned).
    pub fallback: SpmmModule,
    /// Declared fused epilogues (entries in every module).
    pub epilogues: &'static [SpmmEpilogue],
    /// How the variants were chosen.
    pub provenance: Provenance,
    /// The GPU the variants were measured on.
    pub tuned_on: Option<&'static str>,
}

/// Kernels already told about running a generic-width entry.
static WARNED_WIDTH: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

impl SpmmSpec {
    /// The module and entry width for a call of width `n`: the tuned module
    /// of exactly that width (its compile-time entry), else the generic
    /// entry of the module of the nearest tuned width (ties: the smaller),
    /// else the fallback's generic entry.
    pub fn module_for(&self, n: usize) -> (&SpmmModule, Option<usize>) {
        if let Some(m) = self.tuned.iter().find(|m| m.width == Some(n)) {
            return (m, Some(n));
        }
        let nearest = self
            .tuned
            .iter()
            .min_by_key(|m| (m.width.map_or(usize::MAX, |w| w.abs_diff(n)), m.width));
        match nearest {
            Some(m) => {
                let mut warned = WARNED_WIDTH.lock().unwrap_or_else(|p| p.into_inner());
                if warned.insert(self.name) {
                    log::info!(
                        "sparserl: SpMM kernel `{}` has no tuned entry for N = {n}; it runs the \
                         generic-width entry of {} (tuned for N = {}); declare the width in \
                         `columns` to tune it (reported once per kernel)",
                        self.name,
                        m.variant.id(),
                        m.width.map_or("any".into(), |w| w.to_string())
                    );
                }
                (m, None)
            }
            None => (&self.fallback, None),
        }
    }
}

/// The entry names of one SpMM launch of `variant` at `width` with
/// `epilogue`: main, the nnz-split passes, and the transposed path's
/// transposes (whose main and passes are the plain ones: the epilogue is
/// applied by the transpose that writes Y).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpmmEntryNames {
    /// Main entry.
    pub main: String,
    /// Pre-pass (nnz-split).
    pub prep: Option<String>,
    /// Post-pass (nnz-split with an epilogue, not transposed).
    pub post: Option<String>,
    /// X into the row-major workspace (transposed path).
    pub tin: Option<String>,
    /// Y back from the workspace (transposed path).
    pub tout: Option<String>,
}

impl SpmmEntryNames {
    /// The names for `v` (canonical) with `value`, `layout`, `width`, `epilogue`.
    pub fn of(
        v: &SpmmVariant,
        value: ValueType,
        layout: DenseLayout,
        width: Option<usize>,
        epilogue: Option<SpmmEpilogue>,
    ) -> SpmmEntryNames {
        let main_epilogue = if v.trans { None } else { epilogue };
        let main = v.entry(value, layout, width, main_epilogue);
        let passes = v.strategy.has_passes();
        SpmmEntryNames {
            prep: passes.then(|| format!("{main}_prep")),
            post: (passes && main_epilogue.is_some()).then(|| format!("{main}_post")),
            tin: v.trans.then(|| v.tin_entry(value, layout)),
            tout: v.trans.then(|| v.tout_entry(value, layout, epilogue)),
            main,
        }
    }

    /// Every name, in the order of [`SpmmEntryNames::from_list`].
    pub fn list(&self) -> Vec<String> {
        let mut out = vec![self.main.clone()];
        for n in [&self.prep, &self.post, &self.tin, &self.tout]
            .into_iter()
            .flatten()
        {
            out.push(n.clone());
        }
        out
    }

    /// [`SpmmFunctions`] from the functions of [`SpmmEntryNames::list`], in
    /// order, loaded from an image for architecture `arch` (`sm_NN` as a
    /// number; `None`: unknown), which sets [`SpmmFunctions::dependent`].
    pub fn functions(
        &self,
        variant: SpmmVariant,
        width: Option<usize>,
        arch: Option<u32>,
        mut next: impl FnMut() -> Result<CudaFunction, RtError>,
    ) -> Result<SpmmFunctions, RtError> {
        let main = next()?;
        let mut opt = |name: &Option<String>| name.as_ref().map(|_| next()).transpose();
        Ok(SpmmFunctions {
            variant,
            width,
            main,
            prep: opt(&self.prep)?,
            post: opt(&self.post)?,
            tin: opt(&self.tin)?,
            tout: opt(&self.tout)?,
            dependent: waits_on_passes(arch),
        })
    }
}

/// The loaded entries of one SpMM launch: main, the nnz-split passes and
/// the transposed path's transposes.
#[derive(Debug, Clone)]
pub struct SpmmFunctions {
    /// The variant they were generated for.
    pub variant: SpmmVariant,
    /// The compile-time width of the entry (`None`: generic).
    pub width: Option<usize>,
    /// Main entry.
    pub main: CudaFunction,
    /// Pre-pass (nnz-split).
    pub prep: Option<CudaFunction>,
    /// Post-pass (nnz-split with an epilogue).
    pub post: Option<CudaFunction>,
    /// X into the row-major workspace (transposed path).
    pub tin: Option<CudaFunction>,
    /// Y back from the workspace, with `alpha`, `beta` and the epilogue
    /// (transposed path).
    pub tout: Option<CudaFunction>,
    /// The entries were compiled for sm_90 or later, so the main entry waits
    /// on the pre-pass with `griddepcontrol.wait` (and the post-pass on the
    /// main entry): it and the post-pass may be launched as programmatic
    /// dependents. Never set for an image of an older architecture (sm_80
    /// PTX compiled by the driver for an sm_90 device lacks the wait).
    pub dependent: bool,
}

/// Whether entries compiled for `arch` (`sm_NN` as a number; `None`:
/// unknown) wait on the pass before them ([`SpmmFunctions::dependent`]):
/// sm_90 or later.
pub(crate) fn waits_on_passes(arch: Option<u32>) -> bool {
    arch.is_some_and(|a| a >= 90)
}

/// The architecture the entries of `image` were compiled for: its own, or
/// without one (NVRTC compiles the source for the device) `device`'s.
pub(crate) fn image_arch(image: Option<Image>, device: Option<u32>) -> Option<u32> {
    image.map_or(device, |i| arch_number(i.arch()))
}

/// The architecture of `gpu` as a number (`90` for `sm_90`).
pub(crate) fn device_arch(gpu: &Gpu) -> Option<u32> {
    arch_number(&gpu.arch())
}

/// Loads the entries of `variant` (width `width`, fused with `epilogue`)
/// from a module image or, without one, from `source` (NVRTC).
pub(crate) fn load_spmm(
    gpu: &Gpu,
    kernel: &str,
    value: ValueType,
    layout: DenseLayout,
    module: &SpmmModule,
    width: Option<usize>,
    epilogue: Option<SpmmEpilogue>,
) -> Result<SpmmFunctions, RtError> {
    let image = module.image_for(kernel, gpu.compute_capability())?;
    let v = module.variant;
    let names = SpmmEntryNames::of(&v, value, layout, width, epilogue);
    let mut list = names.list().into_iter();
    let arch = image_arch(image, device_arch(gpu));
    names.functions(v, width, arch, || {
        let name = list
            .next()
            .ok_or_else(|| RtError::Compile("SpMM entry list mismatch".into()))?;
        load_entry(gpu, kernel, &name, image, module.source)
    })
}

/// The operands of one SpMM launch, checked by [`check_spmm`].
pub(crate) struct SpmmOperands<'a, T: Scalar> {
    pub a: &'a DeviceCsr<T>,
    pub x: &'a DeviceDense<T>,
    pub y: &'a mut DeviceDense<T>,
    pub alpha: T,
    pub beta: T,
    pub bias: Option<&'a DeviceVec<T>>,
}

/// Checks owners, shapes and layouts of an SpMM's operands against `layout`.
pub(crate) fn check_spmm<T: Scalar>(
    gpu: &Gpu,
    layout: DenseLayout,
    ops: &SpmmOperands<'_, T>,
) -> Result<(), RtError> {
    ops.a.check_gpu(gpu)?;
    ops.x.check_gpu(gpu, "x")?;
    ops.y.check_gpu(gpu, "y")?;
    if !ops.a.has_csr() {
        return Err(RtError::InvalidArgument(
            "SpMM needs the matrix's CSR arrays (it was uploaded with Layouts::csr = false)".into(),
        ));
    }
    for (what, m) in [("x", ops.x.layout()), ("y", ops.y.layout())] {
        if m != layout {
            return Err(RtError::InvalidArgument(format!(
                "{what} is {m} but the kernel was generated for {layout} dense matrices"
            )));
        }
    }
    if ops.x.rows() != ops.a.cols() {
        return Err(RtError::DimensionMismatch {
            what: "x rows (must equal the matrix's cols)",
            expected: ops.a.cols(),
            found: ops.x.rows(),
        });
    }
    if ops.y.rows() != ops.a.rows() {
        return Err(RtError::DimensionMismatch {
            what: "y rows (must equal the matrix's rows)",
            expected: ops.a.rows(),
            found: ops.y.rows(),
        });
    }
    if ops.y.cols() != ops.x.cols() {
        return Err(RtError::DimensionMismatch {
            what: "y cols (must equal x cols)",
            expected: ops.x.cols(),
            found: ops.y.cols(),
        });
    }
    if let Some(b) = ops.bias {
        b.check_gpu(gpu, "the bias")?;
        if b.len() != ops.x.cols() {
            return Err(RtError::DimensionMismatch {
                what: "bias (must have one entry per column of x)",
                expected: ops.x.cols(),
                found: b.len(),
            });
        }
    }
    Ok(())
}

/// Queues the entries of `f` on `gpu`'s stream (asynchronous; no host
/// synchronisation, so it may be captured; the transposed path's first call
/// of a shape allocates its workspaces, which a capture refuses).
///
/// Crate-internal: `f` must have been loaded from a module generated for
/// `f.variant` with this value type, layout and width (as [`SpmmKernel`]'s
/// spec guarantees or an `unsafe` caller vouched for), compiled for sm_90 or
/// later if `f.dependent` (as the loaders set it), and the operands must
/// have passed [`check_spmm`] for that layout.
pub(crate) fn launch_spmm<T: Scalar>(
    gpu: &Gpu,
    f: &SpmmFunctions,
    ops: SpmmOperands<'_, T>,
) -> Result<(), RtError> {
    let v = f.variant;
    v.validate().map_err(|reason| RtError::InvalidVariant {
        variant: v.id(),
        reason: reason.to_string(),
    })?;
    if v.trans != (f.tin.is_some() && f.tout.is_some()) {
        return Err(RtError::InvalidVariant {
            variant: v.id(),
            reason: "transpose entries do not match the variant".into(),
        });
    }
    let n = ops.x.cols();
    if f.width.is_some_and(|w| w != n) {
        return Err(RtError::InvalidArgument(format!(
            "entry of width {} called with N = {n}",
            f.width.unwrap_or(0)
        )));
    }
    if n == 0 || ops.a.rows() == 0 {
        return Ok(());
    }
    let shape: SpmmShape = (ops.a.rows(), ops.a.cols(), ops.a.nnz(), n);
    // One guard for every launch of the call: a capture begun by another
    // thread waits until the whole sequence is queued (it neither records
    // part of it nor refuses its later launches).
    let enter = gpu.enqueue("SpmmKernel::spmm")?;
    if let (Some(tin), Some(tout)) = (&f.tin, &f.tout) {
        return launch_transposed(gpu, &enter, f, (tin, tout), shape, ops);
    }
    let bias = ops.bias.map_or(ops.x.as_slice(), |b| b.as_slice());
    let raw = RawArgs {
        shape,
        x: (ops.x.as_slice(), ops.x.ld()),
        ldy: ops.y.ld(),
        alpha: ops.alpha,
        beta: ops.beta,
        bias,
    };
    raw.main(&enter, ops.a, f, ops.y.as_mut_slice())
}

/// The transposed path: X into the row-major workspace, the row-major
/// kernel (plain: `alpha` 1, `beta` 0) into the Y workspace, then Y written
/// back with `alpha`, `beta` and the epilogue; all under the workspace lock.
fn launch_transposed<T: Scalar>(
    gpu: &Gpu,
    enter: &Enter<'_>,
    f: &SpmmFunctions,
    (tin, tout): (&CudaFunction, &CudaFunction),
    shape: SpmmShape,
    ops: SpmmOperands<'_, T>,
) -> Result<(), RtError> {
    let (rows, cols, _, n) = shape;
    let ld = workspace_ld(n);
    let len = |r: usize| r.checked_mul(ld).filter(|&l| l < i32::MAX as usize);
    let (Some(x_len), Some(y_len)) = (len(cols), len(rows)) else {
        return Err(RtError::InvalidArgument(format!(
            "the row-major workspaces of a {rows} x {cols} SpMM at N = {n} exceed 2^31 elements"
        )));
    };
    with_workspace::<T, _>(gpu, x_len, y_len, |wx, wy| {
        let block = TRANSPOSE_BLOCK;
        let zero = T::from_f64(0.0);
        // X (cols x n, column-major) -> wx (row-major, ld).
        let into = RawArgs {
            shape,
            x: (ops.x.as_slice(), ops.x.ld()),
            ldy: ld,
            alpha: zero,
            beta: zero,
            bias: ops.x.as_slice(),
        };
        let grid = SpmmVariant::transpose_grid(cols, n);
        into.launch(enter, ops.a, tin, grid, block, wx.as_mut_slice())?;
        let main = RawArgs {
            shape,
            x: (wx.as_slice(), ld),
            ldy: ld,
            alpha: T::from_f64(1.0),
            beta: zero,
            bias: wx.as_slice(),
        };
        main.main(enter, ops.a, f, wy.as_mut_slice())?;
        // wy (rows x n, row-major) -> Y with alpha, beta and the epilogue.
        let back = RawArgs {
            shape,
            x: (wy.as_slice(), ld),
            ldy: ops.y.ld(),
            alpha: ops.alpha,
            beta: ops.beta,
            bias: ops.bias.map_or(wy.as_slice(), |b| b.as_slice()),
        };
        let grid = SpmmVariant::transpose_grid(rows, n);
        back.launch(enter, ops.a, tout, grid, block, ops.y.as_mut_slice())
    })
}

/// Set once the driver refused a programmatic dependent launch: later
/// launches go plain.
static DEPENDENT_REFUSED: AtomicBool = AtomicBool::new(false);

/// The kernel ABI's arguments other than the matrix and `y`.
struct RawArgs<'a, T: Scalar> {
    shape: SpmmShape,
    x: (&'a CudaSlice<T>, usize),
    ldy: usize,
    alpha: T,
    beta: T,
    bias: &'a CudaSlice<T>,
}

impl<T: Scalar> RawArgs<'_, T> {
    /// The main entry of `f`, with its nnz-split passes around it.
    fn main(
        &self,
        enter: &Enter<'_>,
        a: &DeviceCsr<T>,
        f: &SpmmFunctions,
        y: &mut CudaSlice<T>,
    ) -> Result<(), RtError> {
        let v = f.variant;
        let dependent = f.dependent && f.prep.is_some();
        if let Some(prep) = &f.prep {
            self.launch(enter, a, prep, v.pass_grid(self.shape.0), v.block, y)?;
        }
        let main = (&f.main, v.grid(self.shape));
        self.launch_after(enter, a, main, v.block, y, dependent)?;
        if let Some(post) = &f.post {
            let post = (post, v.pass_grid(self.shape.0));
            self.launch_after(enter, a, post, v.block, y, dependent)?;
        }
        Ok(())
    }

    /// `func` on `grid` blocks as a programmatic dependent of the launch
    /// before it when `dependent` (and the driver has not refused one),
    /// else plainly. A refusal for the attribute falls back to the plain
    /// launch and makes every later one plain.
    fn launch_after(
        &self,
        stream: &Enter<'_>,
        a: &DeviceCsr<T>,
        (func, grid): (&CudaFunction, u32),
        block: u32,
        y: &mut CudaSlice<T>,
        dependent: bool,
    ) -> Result<(), RtError> {
        if !dependent || DEPENDENT_REFUSED.load(Ordering::Relaxed) {
            return self.launch(stream, a, func, grid, block, y);
        }
        match self.launch_dependent(stream, a, func, grid, block, y) {
            Err(DriverError(
                e @ (sys::CUresult::CUDA_ERROR_NOT_SUPPORTED
                | sys::CUresult::CUDA_ERROR_INVALID_VALUE),
            )) => {
                if !DEPENDENT_REFUSED.swap(true, Ordering::Relaxed) {
                    log::info!(
                        "sparserl: the driver refused a programmatic dependent SpMM launch \
                         ({e:?}); nnz-split passes are launched plainly from now on"
                    );
                }
                self.launch(stream, a, func, grid, block, y)
            }
            r => Ok(r?),
        }
    }

    /// The scalar arguments (rows, cols, nnz, n, ldx, ldy).
    fn ints(&self) -> [i32; 6] {
        let (rows, cols, nnz, n) = self.shape;
        // DeviceCsr and DeviceDense guarantee every size is below i32::MAX.
        let (ldx, ldy) = (self.x.1, self.ldy);
        [rows, cols, nnz, n, ldx, ldy].map(|v| v as i32)
    }

    /// The one `unsafe` plain SpMM kernel launch.
    fn launch(
        &self,
        stream: &Enter<'_>,
        a: &DeviceCsr<T>,
        func: &CudaFunction,
        grid: u32,
        block: u32,
        y: &mut CudaSlice<T>,
    ) -> Result<(), RtError> {
        let [rows, cols, nnz, n, ldx, ldy] = self.ints();
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = stream.launch_builder(func);
        b.arg(&rows)
            .arg(&cols)
            .arg(&nnz)
            .arg(&n)
            .arg(a.indptr())
            .arg(a.indices())
            .arg(a.values())
            .arg(self.x.0)
            .arg(&ldx)
            .arg(y)
            .arg(&ldy)
            .arg(&self.alpha)
            .arg(&self.beta)
            .arg(self.bias);
        // SAFETY: `func` is an entry of the SpMM ABI above for `T`, generated
        // for this variant, layout and width (the callers' contract: a spec of
        // the generated module, or an `unsafe` caller's promise). The
        // arguments match it one for one. `check_spmm` verified that the
        // matrix, x, y and the bias belong to `gpu` and have consistent
        // shapes: x holds `cols` rows of `n` columns at leading dimension
        // `ldx` and y `rows` rows at `ldy` (DeviceDense allocates at least
        // the elements its shape occupies), the bias `n` entries (or x is
        // passed in its place and not read: plain entries never touch it);
        // the CSR arrays were validated at upload, so every index the kernel
        // forms is inside these buffers (offsets in 64 bits). The transposed
        // path passes workspaces as x or y: `with_workspace` holds at least
        // `cols ld` (X copy) and `rows ld` (Y copy) elements with `ld` =
        // `workspace_ld(n) >= n`, and a transpose entry reads `cols` (in) or
        // `rows` (out) rows of `n` columns of its x and writes as many of its y. An entry of a
        // compile-time width returns at once for another `n`. Everything is
        // used and freed in this stream's order, and the buffers outlive the
        // queued launch (their owners are borrowed for this call and free on
        // the same stream).
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// The one `unsafe` programmatic dependent SpMM launch: the arguments
    /// of [`RawArgs::launch`], in its order, through `cuLaunchKernelEx`.
    fn launch_dependent(
        &self,
        stream: &Enter<'_>,
        a: &DeviceCsr<T>,
        func: &CudaFunction,
        grid: u32,
        block: u32,
        y: &mut CudaSlice<T>,
    ) -> Result<(), DriverError> {
        let [rows, cols, nnz, n, ldx, ldy] = self.ints();
        let s: &CudaStream = stream;
        // The guards (no-ops: event tracking is off) outlive the launch.
        let (indptr, _indptr) = a.indptr().device_ptr(s);
        let (indices, _indices) = a.indices().device_ptr(s);
        let (values, _values) = a.values().device_ptr(s);
        let (x, _x) = self.x.0.device_ptr(s);
        let (bias, _bias) = self.bias.device_ptr(s);
        let (y, _y) = y.device_ptr_mut(s);
        fn arg<A>(v: &A) -> *mut c_void {
            v as *const A as *mut c_void
        }
        let (alpha, beta) = (&self.alpha, &self.beta);
        let mut params = [
            arg(&rows),
            arg(&cols),
            arg(&nnz),
            arg(&n),
            arg(&indptr),
            arg(&indices),
            arg(&values),
            arg(&x),
            arg(&ldx),
            arg(&y),
            arg(&ldy),
            arg(alpha),
            arg(beta),
            arg(&bias),
        ];
        let mut attr = programmatic_serialization();
        let cfg = dependent_config(s, grid, block, &mut attr);
        s.context().bind_to_thread()?;
        let f = func.cu_function();
        // SAFETY: as in `RawArgs::launch` (the same entry, the arguments in
        // the same order, the same buffers and lifetimes): `params` points
        // at locals that live until the call returns (the driver copies the
        // values at the call), `cfg` at `attr`, likewise. The attribute only
        // relaxes this launch's dependency on the one immediately before it
        // on the stream (the pre-pass for main, main for the post-pass: one
        // enqueue guard covers the sequence and no event is recorded between
        // them), whose writes main and post wait for with
        // `griddepcontrol.wait` before any conflicting access to Y, because
        // `main` calls this only for `SpmmFunctions::dependent` entries,
        // compiled for sm_90 or later; main's threads also wait before they
        // exit, so main completes only after the pre-pass. The pre-pass
        // itself is launched plainly, so it and all earlier work whose
        // results the dependents read (X, the transposed path's workspace,
        // the matrix) complete before it starts.
        unsafe { sys::cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
    }
}

/// The launch attribute that lets a kernel start before the one before it
/// on the stream completes (it waits for that with `griddepcontrol.wait`).
fn programmatic_serialization() -> sys::CUlaunchAttribute {
    let mut value = sys::CUlaunchAttributeValue { pad: [0; 64] };
    value.programmaticStreamSerializationAllowed = 1;
    sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    }
}

/// A one-dimensional launch of `grid` blocks of `block` threads on `s`
/// with the one attribute `attr` (which must outlive its use).
fn dependent_config(
    s: &CudaStream,
    grid: u32,
    block: u32,
    attr: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        hStream: s.cu_stream(),
        attrs: attr,
        numAttrs: 1,
    }
}

/// A declared SpMM kernel of the generated module.
///
/// # Safety
/// The provided methods launch the entries of [`SpmmKernel::spec`]'s modules
/// with the SpMM ABI: an implementation must return a spec whose modules
/// hold those entries for its value type, layout, variants, widths and
/// epilogues, as `sparserl-build` generates them. Implementing it by hand
/// for foreign PTX is `unsafe` for that reason:
///
/// ```compile_fail,E0200
/// struct Foreign;
/// impl sparserl_rt::SpmmKernel for Foreign {
///     type Value = f32;
///     fn spec(&self) -> &'static sparserl_rt::SpmmSpec {
///         std::process::abort()
///     }
/// }
/// ```
///
/// ```no_run
/// use sparserl_rt::{Csr, DenseLayout, DeviceCsr, DeviceDense, Gpu, RtError, SpmmKernel};
///
/// fn aggregate<K: SpmmKernel<Value = f32>>(k: &K, a: &Csr, h: &[f32], n: usize) -> Result<Vec<f32>, RtError> {
///     let gpu = Gpu::new(0)?;
///     let da = DeviceCsr::<f32>::upload(&gpu, a)?;
///     let x = DeviceDense::from_host(&gpu, a.cols(), n, DenseLayout::RowMajor, h)?;
///     let mut y = DeviceDense::zeros(&gpu, a.rows(), n, DenseLayout::RowMajor)?;
///     k.spmm(&gpu, 1.0, &da, &x, 0.0, &mut y)?;
///     y.to_host(&gpu)
/// }
/// ```
pub unsafe trait SpmmKernel {
    /// Element type of A, X and Y.
    type Value: Scalar;

    /// The build-time description of this kernel.
    fn spec(&self) -> &'static SpmmSpec;

    /// Loads the module this kernel runs at width `n` (with the bias-ReLU
    /// entries when `fused`) ahead of the first call, which otherwise does
    /// it: that one-time cost (the driver compiles an embedded PTX image
    /// for a device without a matching cubin) then stays out of a timed
    /// region or a first graph capture. Launches nothing.
    fn preload(&self, gpu: &Gpu, n: usize, fused: bool) -> Result<(), RtError> {
        let spec = self.spec();
        let epilogue = fused.then_some(SpmmEpilogue::BiasRelu);
        if let Some(e) = epilogue
            && !spec.epilogues.contains(&e)
        {
            return Err(RtError::EpilogueNotGenerated {
                kernel: spec.name.to_string(),
                epilogue: e.as_str(),
            });
        }
        let (module, width) = spec.module_for(n);
        load_spmm(
            gpu,
            spec.name,
            spec.value,
            spec.layout,
            module,
            width,
            epilogue,
        )
        .map(|_| ())
    }

    /// Queues `Y = alpha A X + beta Y` (`beta == 0` never reads `Y`).
    fn spmm(
        &self,
        gpu: &Gpu,
        alpha: Self::Value,
        a: &impl Operand<Self::Value>,
        x: &DeviceDense<Self::Value>,
        beta: Self::Value,
        y: &mut DeviceDense<Self::Value>,
    ) -> Result<(), RtError> {
        let (a, numbering) = a.parts();
        spmm_with_spec(
            self.spec(),
            gpu,
            numbering,
            SpmmOperands {
                a,
                x,
                y,
                alpha,
                beta,
                bias: None,
            },
        )
    }

    /// Queues `Y = relu(alpha A X + beta Y + bias[col])` (declare
    /// `epilogues = ["bias-relu"]`).
    #[allow(clippy::too_many_arguments)]
    fn spmm_bias_relu(
        &self,
        gpu: &Gpu,
        alpha: Self::Value,
        a: &impl Operand<Self::Value>,
        x: &DeviceDense<Self::Value>,
        beta: Self::Value,
        y: &mut DeviceDense<Self::Value>,
        bias: &DeviceVec<Self::Value>,
    ) -> Result<(), RtError> {
        let (a, numbering) = a.parts();
        spmm_with_spec(
            self.spec(),
            gpu,
            numbering,
            SpmmOperands {
                a,
                x,
                y,
                alpha,
                beta,
                bias: Some(bias),
            },
        )
    }
}

/// The body of [`SpmmKernel::spmm`] and [`SpmmKernel::spmm_bias_relu`].
pub(crate) fn spmm_with_spec<T: Scalar>(
    spec: &SpmmSpec,
    gpu: &Gpu,
    numbering: Numbering,
    ops: SpmmOperands<'_, T>,
) -> Result<(), RtError> {
    if spec.value != T::TYPE {
        return Err(RtError::WrongValueType {
            kernel: spec.name.to_string(),
            expected: spec.value,
            found: T::TYPE,
        });
    }
    check_spmm(gpu, spec.layout, &ops)?;
    if numbering == Numbering::User && ops.a.renumbering() != crate::reorder::Reorder::None {
        return Err(RtError::InvalidArgument(
            "SpMM of a renumbered matrix takes X and Y in its stored order: call it with \
             `a.internal()`, X put in that order by `a.dense_to_internal`, and Y put back \
             by `a.dense_to_user`"
                .into(),
        ));
    }
    let epilogue = ops.bias.map(|_| SpmmEpilogue::BiasRelu);
    if let Some(e) = epilogue
        && !spec.epilogues.contains(&e)
    {
        return Err(RtError::EpilogueNotGenerated {
            kernel: spec.name.to_string(),
            epilogue: e.as_str(),
        });
    }
    let (module, width) = spec.module_for(ops.x.cols());
    let f = load_spmm(
        gpu,
        spec.name,
        spec.value,
        spec.layout,
        module,
        width,
        epilogue,
    )?;
    launch_spmm(gpu, &f, ops)
}
