//! Typed launches of generated kernels, with runtime dispatch to the fallback.
//!
//! Every generated kernel has one ABI (`T` = `float` or `double`):
//!
//! ```text
//! extern "C" __global__ void ENTRY(const int rows, const int cols, const int nnz,
//!     const int* indptr, const int* indices, const T* values, const T* x, T* y)
//! ```
//!
//! launched with [`Variant::grid`] blocks of `variant.block` threads and no
//! dynamic shared memory; `y` is zeroed first when [`Variant::needs_zeroed_y`].
//!
//! Diagonal kernels ([`Strategy::Diagonal`]) keep the same signature and read
//! the matrix's diagonal layout ([`crate::dia`]) through it: `nnz` is the
//! number of diagonals, `indptr` the diagonal offsets, `values` the
//! diagonal-major values; `indices` is passed but not read. Binned kernels
//! ([`Strategy::Binned`]) take two more parameters after `y`: the binned
//! layout's `const int* meta` and `double* scratch` ([`crate::binned`]), and
//! run on [`binned_grid`] blocks. Tiled kernels ([`Strategy::Tiled`]) take
//! the tile layout's `meta` and `scratch` the same way ([`crate::tiled`]) and
//! run one block per tile. Narrow-index kernels ([`Strategy::Narrow`]) keep
//! the signature with `indices` of type `const short*`: the matrix's 16-bit
//! column offsets `col - row` ([`crate::narrow`]).

use crate::csr::Csr;
use crate::device::{DeviceCsr, DeviceVec, FnKey, Gpu, Layouts, Scalar};
use crate::epilogue::Epilogue;
use crate::error::RtError;
use crate::features::Features;
use crate::kernel::{Image, KernelSpec};
use crate::renumber::{Numbering, Operand};
use crate::scalar::{DeviceCoefs, DeviceScalar};
use crate::variant::{Strategy, Variant};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchArgs, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// Which code path runtime dispatch picked for a matrix.
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatch {
    /// The tuned variant fits the matrix.
    Tuned,
    /// The matrix is far from the tuning samples; use the nnz-balanced fallback.
    Fallback {
        /// Human-readable explanation.
        reason: String,
    },
}

/// Decides between a kernel's tuned variant and its fallback for a matrix.
///
/// Nnz-balanced variants ([`Strategy::NnzSplit`]) are safe for any shape and
/// are always used as tuned; so are diagonal variants, whose speed depends on
/// the layout's padding rather than on row lengths, and binned variants,
/// which split long rows by construction (a matrix without the layout falls
/// back in `resolve_entry`). A row-mapped variant falls back when the matrix
/// is far from [`KernelSpec::tuned_for`] by any of these rules (`t` = tuned,
/// `m` = matrix):
///
/// - `m.cv_row > 2 t.cv_row + 1` (much more irregular row lengths),
/// - `m.max_over_mean > 4 t.max_over_mean + 16` (a much heavier longest row),
/// - `m.mean_row < t.mean_row / 8` or `m.mean_row > 8 t.mean_row` (rows of a
///   very different typical length; only when `t.mean_row > 0`).
///
/// A non-finite tuned statistic never triggers a fallback.
pub fn dispatch(spec: &KernelSpec, m: &Features) -> Dispatch {
    if matches!(
        spec.variant.strategy,
        Strategy::NnzSplit | Strategy::Diagonal | Strategy::Binned | Strategy::Tiled
    ) {
        return Dispatch::Tuned;
    }
    let t = &spec.tuned_for;
    let cv_limit = 2.0 * t.cv_row + 1.0;
    if m.cv_row > cv_limit {
        return Dispatch::Fallback {
            reason: format!(
                "row-length coefficient of variation {:.3} exceeds {:.3} (tuned for {:.3})",
                m.cv_row, cv_limit, t.cv_row
            ),
        };
    }
    let max_limit = 4.0 * t.max_over_mean + 16.0;
    if m.max_over_mean > max_limit {
        return Dispatch::Fallback {
            reason: format!(
                "longest row / mean row {:.1} exceeds {:.1} (tuned for {:.1})",
                m.max_over_mean, max_limit, t.max_over_mean
            ),
        };
    }
    if t.mean_row > 0.0 && (m.mean_row < t.mean_row / 8.0 || m.mean_row > t.mean_row * 8.0) {
        return Dispatch::Fallback {
            reason: format!(
                "mean row length {:.2} is outside [{:.2}, {:.2}] (tuned for {:.2})",
                m.mean_row,
                t.mean_row / 8.0,
                t.mean_row * 8.0,
                t.mean_row
            ),
        };
    }
    Dispatch::Tuned
}

/// Kernel names already warned about (one warning per kernel per process).
static WARNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
/// Kernels whose "tuned on another GPU" message was given.
static WARNED_TUNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

fn warn_fallback_once(name: &'static str, reason: &str) {
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if warned.insert(name) {
        log::warn!(
            "sparserl: kernel `{name}` uses its nnz-balanced fallback for this matrix: {reason} \
             (add similar matrices to the kernel's samples to tune for them); \
             this is reported once per kernel"
        );
    }
}

/// Loads `entry` on `gpu` from `image` (a cubin loads as is, PTX is compiled
/// by the driver), or compiles `source` with NVRTC when nothing was compiled
/// at build time ([`RtError::NotCompiled`] on failure). Cached per `Gpu`
/// under the address of the `'static` image (or source) and the entry name:
/// no PTX loaded through [`Gpu::function_or_load`] can take its place.
pub(crate) fn load_entry(
    gpu: &Gpu,
    kernel: &str,
    entry: &str,
    image: Option<Image>,
    source: &'static str,
) -> Result<CudaFunction, RtError> {
    load_keyed_entry(gpu, kernel, Cow::Owned(entry.to_string()), image, source)
}

/// [`load_entry`] for a `'static` entry name (a spec's): no allocation on
/// the launch path.
fn load_static_entry(
    gpu: &Gpu,
    kernel: &str,
    entry: &'static str,
    image: Option<Image>,
    source: &'static str,
) -> Result<CudaFunction, RtError> {
    load_keyed_entry(gpu, kernel, Cow::Borrowed(entry), image, source)
}

fn load_keyed_entry(
    gpu: &Gpu,
    kernel: &str,
    entry: Cow<'static, str>,
    image: Option<Image>,
    source: &'static str,
) -> Result<CudaFunction, RtError> {
    let name = entry.clone();
    let key = match image {
        Some(Image::Cubin { bytes, .. }) => FnKey::image(bytes, entry),
        Some(Image::Ptx { text, .. }) => FnKey::image(text.as_bytes(), entry),
        None => FnKey::Source {
            addr: source.as_ptr() as usize,
            len: source.len(),
            entry,
        },
    };
    gpu.load_keyed(key, &name, || match image {
        Some(Image::Cubin { bytes, .. }) => Ok(Ptx::from_binary(bytes.to_vec())),
        Some(Image::Ptx { text, .. }) => Ok(Ptx::from_src(text)),
        #[cfg(feature = "jit")]
        None => crate::nvrtc::compile_ptx(source, &gpu.arch(), &[])
            .map(Ptx::from_src)
            .map_err(|e| RtError::NotCompiled {
                kernel: kernel.to_string(),
                reason: e.to_string(),
            }),
        #[cfg(not(feature = "jit"))]
        None => {
            let _ = source;
            Err(RtError::NotCompiled {
                kernel: kernel.to_string(),
                reason: "the build embedded no compiled image (NVRTC was missing at build \
                         time) and this binary was built without sparserl-rt's `jit` feature; \
                         rebuild with NVRTC available, or enable `jit`"
                    .into(),
            })
        }
    })
}

/// The function and variant to launch for `spec` on a matrix with
/// `features`, after [`dispatch`] (warning once per kernel when it falls
/// back), for the plain entry (`epilogue` `None`) or a fused one;
/// `has_layout` says whether the matrix holds the layout the tuned variant
/// reads ([`Strategy::needs_layout`]; without it the fallback runs);
/// `has_csr` false (a matrix holding only its layout) keeps the tuned
/// variant even where dispatch would prefer the fallback, which needs CSR.
pub(crate) fn resolve_entry(
    gpu: &Gpu,
    spec: &KernelSpec,
    features: &Features,
    has_layout: bool,
    has_csr: bool,
    epilogue: Option<Epilogue>,
) -> Result<(CudaFunction, Variant), RtError> {
    if spec.tuned_on.is_some_and(|t| t != gpu.name()) {
        let mut warned = WARNED_TUNED.lock().unwrap_or_else(|p| p.into_inner());
        if warned.insert(spec.name)
            && let Some(msg) = spec.tuned_elsewhere(gpu.name())
        {
            log::warn!("{msg}");
        }
    }
    let cc = gpu.compute_capability();
    let (image, fallback_image) = match spec.images_for(cc) {
        Some((i, f)) => (Some(i), Some(f)),
        None => match spec.lowest_arch() {
            // Images exist, all for newer architectures than the device's.
            Some(lowest) => {
                return Err(RtError::UnsupportedDevice {
                    kernel: spec.name.to_string(),
                    device: gpu.arch(),
                    lowest: format!("sm_{lowest}"),
                });
            }
            // Nothing was compiled at build time: NVRTC at first use.
            None => (None, None),
        },
    };
    let (entry, fallback_entry, fused_variant) = match epilogue {
        None => (Some(spec.entry), spec.fallback_entry, Variant::FALLBACK),
        Some(ep) => {
            let f = spec
                .fused
                .iter()
                .find(|f| f.epilogue == ep)
                .ok_or_else(|| RtError::EpilogueNotGenerated {
                    kernel: spec.name.to_string(),
                    epilogue: ep.as_str(),
                })?;
            (f.entry, f.fallback_entry, Variant::FUSED_FALLBACK)
        }
    };
    let decision = if spec.variant.strategy.needs_layout() && !has_layout {
        Dispatch::Fallback {
            reason: format!(
                "the matrix has no {} layout (see sparserl_rt::dia)",
                spec.variant.strategy.as_str()
            ),
        }
    } else if !has_csr {
        // Only the layout is on the device: its kernel is the one that can run.
        Dispatch::Tuned
    } else {
        dispatch(spec, features)
    };
    match (decision, entry) {
        (Dispatch::Tuned, Some(entry)) => Ok((
            load_static_entry(gpu, spec.name, entry, image, spec.source)?,
            spec.variant,
        )),
        (decision, _) => {
            if !has_csr {
                return Err(RtError::LayoutUnavailable {
                    variant: spec.variant.id(),
                    reason: "the matrix was uploaded without its CSR arrays (Layouts::csr = \
                             false) and without the layout of the tuned kernel; the \
                             fallback needs row pointers, column indices and values"
                        .into(),
                });
            }
            if let Dispatch::Fallback { reason } = decision {
                warn_fallback_once(spec.name, &reason);
            }
            Ok((
                load_static_entry(
                    gpu,
                    spec.name,
                    fallback_entry,
                    fallback_image,
                    spec.fallback_source,
                )?,
                fused_variant,
            ))
        }
    }
}

/// The epilogue operands of a fused launch (device pointers appended to the
/// kernel ABI: `coef`, `w`, `dot`).
pub(crate) struct EpArgs<'a, T: Scalar> {
    pub coef: &'a CudaSlice<f64>,
    pub w: &'a CudaSlice<T>,
    pub dot: &'a CudaSlice<f64>,
}

/// Launches one SpMV `y = A x` of the kernel ABI on [`Gpu::stream`]
/// (asynchronous), zeroing `y` first when the variant needs it.
///
/// `x` must hold at least `cols` and `y` at least `rows` elements (checked).
///
/// # Safety
/// `func` must be the entry point of a kernel of this ABI for value type `T`
/// generated for `variant` (e.g. loaded from `sparserl_build::codegen`'s
/// output for that variant), and `x` and `y` must be buffers of `gpu`'s
/// stream (the raw slices carry no owner to check). Safe code launches
/// through [`SpmvKernel`], whose specs come from the generated module.
pub unsafe fn launch_variant<T: Scalar>(
    gpu: &Gpu,
    func: &CudaFunction,
    variant: &Variant,
    a: &DeviceCsr<T>,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
) -> Result<(), RtError> {
    launch_variant_ep(gpu, func, variant, a, x, y, None)
}

/// [`launch_variant`] with the epilogue operands of a fused entry.
///
/// Crate-internal and safe to call only with a `func` resolved from a
/// generated [`KernelSpec`] for `variant` (and the epilogue of `ep`), or one
/// an `unsafe` caller vouched for ([`crate::Bench::check`]); `x` and `y` must
/// be buffers of `gpu`'s stream.
pub(crate) fn launch_variant_ep<T: Scalar>(
    gpu: &Gpu,
    func: &CudaFunction,
    variant: &Variant,
    a: &DeviceCsr<T>,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    ep: Option<EpArgs<'_, T>>,
) -> Result<(), RtError> {
    check_launch(gpu, variant, a, x, y, ep.is_some())?;
    let stream = gpu.enqueue("an SpMV launch")?;
    if variant.needs_zeroed_y() {
        stream.memset_zeros(y)?;
    }
    let (grid, extra) = grid_of(variant, a)?;
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (variant.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let dims = Dims::of(variant, a)?;
    let mut builder = stream.launch_builder(func);
    push_matrix_args(&mut builder, variant, a, &dims, x, y, extra)?;
    if let Some(ep) = &ep {
        builder.arg(ep.coef).arg(ep.w).arg(ep.dot);
    }
    // SAFETY: the arguments match the generated ABI in type and order
    // (int, int, int, const int*, const int*, const T*, const T*, T*) with
    // `T` = `Scalar::TYPE`. CSR kernels: `indptr` has rows + 1 entries,
    // `indices`/`values` hold nnz entries with validated column indices < cols.
    // Diagonal kernels: `ndiag` <= 64 offsets and ndiag * rows values, and the
    // kernel bounds every column by `cols`. Narrow kernels get `const short*`
    // offsets (nnz entries) in place of `indices`, each `row + offset` a
    // validated column of that row. SELL-C-sigma kernels get the slice
    // pointers (slots / 32 + 1), the stored columns and values (every
    // column a validated one of its row's, or of the row's padding, which
    // is not read) and `meta` = [row_of, slot_len] of `slots` entries each,
    // all built from this CSR at upload. Binned kernels additionally get
    // `meta` (consistent with this CSR, built from it at upload) and
    // `scratch` (n_long + 1 slots), which they write; tiled kernels likewise
    // get the tile `meta` and `scratch` (2 n_acc slots, at least one); the matrix was uploaded
    // on this Gpu's stream (checked in `check_launch`) and launches on one stream do not
    // overlap, so no two kernels touch `scratch` at once. `x`/`y` were checked to hold
    // at least cols/rows entries, so the kernel only touches memory inside
    // these buffers, which outlive the queued launch (they are freed in
    // stream order on the same stream: the matrix was checked to belong to
    // `gpu`, the vectors by the callers). Fused entries additionally get
    // `coef` (4 doubles), `w` (at least rows entries, checked by the caller)
    // and `dot` ({result, accumulator[32]}, the accumulators zero at launch:
    // every launch with a dot is followed by a publish that zeroes them).
    unsafe { builder.launch(cfg) }?;
    Ok(())
}

/// The checks of a launch that need no device work: the matrix is `gpu`'s,
/// the variant is valid (and can fuse an epilogue when `fused`), `x` and `y`
/// are long enough, and the CSR arrays are there when the variant reads them.
fn check_launch<T: Scalar>(
    gpu: &Gpu,
    variant: &Variant,
    a: &DeviceCsr<T>,
    x: &CudaSlice<T>,
    y: &CudaSlice<T>,
    fused: bool,
) -> Result<(), RtError> {
    a.check_gpu(gpu)?;
    if fused && !variant.strategy.fuses_epilogue() {
        return Err(RtError::InvalidVariant {
            variant: variant.id(),
            reason: "nnz-split kernels cannot fuse an epilogue".into(),
        });
    }
    variant
        .validate()
        .map_err(|reason| RtError::InvalidVariant {
            variant: variant.id(),
            reason: reason.to_string(),
        })?;
    if x.len() < a.cols() {
        return Err(RtError::DimensionMismatch {
            what: "x (must have cols entries)",
            expected: a.cols(),
            found: x.len(),
        });
    }
    if y.len() < a.rows() {
        return Err(RtError::DimensionMismatch {
            what: "y (must have rows entries)",
            expected: a.rows(),
            found: y.len(),
        });
    }
    if !variant.strategy.needs_layout() && !a.has_csr() {
        return Err(RtError::LayoutUnavailable {
            variant: variant.id(),
            reason: "the matrix was uploaded without its CSR arrays (Layouts::csr = false)".into(),
        });
    }
    Ok(())
}

/// The `meta` / `scratch` pair that binned and tiled kernels take after `y`.
type Extra<'a> = Option<(&'a CudaSlice<i32>, &'a CudaSlice<f64>)>;

/// The grid of a launch, and the layout's `meta` / `scratch` pair that
/// binned and tiled kernels take after `y`.
fn grid_of<'a, T: Scalar>(
    variant: &Variant,
    a: &'a DeviceCsr<T>,
) -> Result<(u32, Extra<'a>), RtError> {
    if variant.strategy == Strategy::Binned {
        let b = a.binned().ok_or_else(|| RtError::LayoutUnavailable {
            variant: variant.id(),
            reason: "the matrix has no row-binned layout (no row longer than the long-row \
                     threshold, or it was dropped)"
                .into(),
        })?;
        Ok((
            binned_grid(variant, a.rows(), b.chunks)?,
            Some((&b.meta, &b.scratch)),
        ))
    } else if variant.strategy == Strategy::Tiled {
        let t = a.tiled().ok_or_else(|| RtError::LayoutUnavailable {
            variant: variant.id(),
            reason: "the matrix's tile layout was dropped".into(),
        })?;
        Ok((
            t.tiles.clamp(1, i32::MAX as usize) as u32,
            Some((&t.meta, &t.scratch)),
        ))
    } else {
        Ok((variant.grid(a.rows(), a.nnz())?, None))
    }
}

/// The `int` scalars of a launch.
struct Dims {
    rows: i32,
    cols: i32,
    nnz: i32,
    ndiag: i32,
    slots: i32,
}

impl Dims {
    fn of<T: Scalar>(variant: &Variant, a: &DeviceCsr<T>) -> Result<Dims, RtError> {
        // The layout is built only when 2 x slots fits an `int`; checked again.
        let slots = match a.sell() {
            Some(l) => i32::try_from(l.slots).map_err(|_| RtError::LayoutUnavailable {
                variant: variant.id(),
                reason: format!(
                    "{} SELL-C-sigma slots exceed the kernels' int range",
                    l.slots
                ),
            })?,
            None => 0,
        };
        Ok(Dims {
            // DeviceCsr guarantees all three are below i32::MAX.
            rows: a.rows() as i32,
            cols: a.cols() as i32,
            nnz: a.nnz() as i32,
            // At most MAX_DIAGONALS (64).
            ndiag: a.diagonals().map_or(0, |d| d.diagonals as i32),
            slots,
        })
    }
}

/// Pushes the matrix, `x` and `y` in the order of the variant's ABI (see
/// the module docs), then `extra`.
fn push_matrix_args<'a, T: Scalar>(
    builder: &mut LaunchArgs<'a>,
    variant: &Variant,
    a: &'a DeviceCsr<T>,
    d: &'a Dims,
    x: &'a CudaSlice<T>,
    y: &'a mut CudaSlice<T>,
    extra: Extra<'a>,
) -> Result<(), RtError> {
    let missing = |reason: &str| RtError::LayoutUnavailable {
        variant: variant.id(),
        reason: reason.into(),
    };
    match variant.strategy {
        Strategy::Diagonal => {
            let dia = a.diagonals().ok_or_else(|| {
                missing(
                    "the matrix has no diagonal layout (more than 64 diagonals or more than \
                     50% padding, or it was dropped)",
                )
            })?;
            builder
                .arg(&d.rows)
                .arg(&d.cols)
                .arg(&d.ndiag)
                .arg(&dia.offsets);
            builder.arg(a.indices()).arg(&dia.values).arg(x).arg(y);
        }
        Strategy::Sell => {
            let l = a.sell().ok_or_else(|| {
                missing(
                    "the matrix has no SELL-C-sigma layout (its slices would pad more than \
                     50%, or it was dropped)",
                )
            })?;
            builder
                .arg(&d.rows)
                .arg(&d.cols)
                .arg(&d.slots)
                .arg(&l.slice_ptr);
            builder
                .arg(&l.cols)
                .arg(&l.values)
                .arg(x)
                .arg(y)
                .arg(&l.meta);
        }
        Strategy::Narrow => {
            let off = a.narrow().ok_or_else(|| {
                missing(
                    "the matrix has no 16-bit column offsets (a nonzero lies farther than \
                     32767 from the diagonal, or they were dropped)",
                )
            })?;
            builder
                .arg(&d.rows)
                .arg(&d.cols)
                .arg(&d.nnz)
                .arg(a.indptr());
            builder.arg(off).arg(a.values()).arg(x).arg(y);
        }
        _ => {
            builder
                .arg(&d.rows)
                .arg(&d.cols)
                .arg(&d.nnz)
                .arg(a.indptr());
            builder.arg(a.indices()).arg(a.values()).arg(x).arg(y);
            if let Some((meta, scratch)) = extra {
                builder.arg(meta).arg(scratch);
            }
        }
    }
    Ok(())
}

/// Grid of a binned launch: the short-row blocks of [`Variant::grid`] plus
/// one warp per chunk of long rows, at most 4096 long-row blocks (their
/// warps loop over the chunks); an error for an invalid variant (see
/// [`Variant::grid`]).
pub fn binned_grid(variant: &Variant, rows: usize, chunks: usize) -> Result<u32, RtError> {
    let short = variant.grid(rows, 0)? as usize;
    let warps_per_block = (variant.block as usize / 32).max(1);
    let long = chunks.div_ceil(warps_per_block).clamp(1, 4096);
    Ok((short + long).min(i32::MAX as usize) as u32)
}

/// A declared kernel of the generated module: `y = A x` with a build-time
/// tuned variant.
///
/// The generated code implements this trait for one unit struct per kernel;
/// only [`SpmvKernel::spec`] is generated, [`SpmvKernel::spmv`] is provided.
///
/// # Safety
/// The provided methods launch the PTX of [`SpmvKernel::spec`] with the
/// kernel ABI: an implementation must return a spec whose entries (plain,
/// fallback and fused) are kernels of that ABI for its value type, variant
/// and epilogues, as `sparserl-build` generates them. Implementing it by
/// hand for foreign PTX is `unsafe` for that reason (a plain `impl` is
/// rejected with E0200: `tests/ui/spmv_kernel_impl_needs_unsafe.rs`).
///
/// ```no_run
/// use sparserl_rt::{Csr, DeviceCsr, DeviceVec, Gpu, RtError, SpmvKernel};
///
/// fn multiply<K: SpmvKernel<Value = f64>>(kernel: &K, a: &Csr) -> Result<Vec<f64>, RtError> {
///     let gpu = Gpu::new(0)?;
///     let da = DeviceCsr::<f64>::upload(&gpu, a)?;
///     let x = DeviceVec::from_host(&gpu, &vec![1.0; a.cols()])?;
///     let mut y = DeviceVec::zeros(&gpu, a.rows())?;
///     kernel.spmv(&gpu, &da, &x, &mut y)?;
///     y.to_host(&gpu)
/// }
/// ```
pub unsafe trait SpmvKernel {
    /// Element type of values, `x` and `y`.
    type Value: Scalar;

    /// The build-time description of this kernel.
    fn spec(&self) -> &'static KernelSpec;

    /// Queues `y = A x` on [`Gpu::stream`] (asynchronous; `y.to_host` waits).
    ///
    /// Checks `x.len() == cols`, `y.len() == rows` and the value type, picks
    /// the tuned variant or the fallback with [`dispatch`], loads (or
    /// NVRTC-compiles) the kernel once per [`Gpu`], and launches it.
    ///
    /// `a` is a [`DeviceCsr`] (vectors in the user's numbering; a renumbered
    /// matrix permutes them around the kernel) or [`DeviceCsr::internal`]
    /// (vectors in the matrix's stored order; see [`crate::renumber`]).
    fn spmv(
        &self,
        gpu: &Gpu,
        a: &impl Operand<Self::Value>,
        x: &DeviceVec<Self::Value>,
        y: &mut DeviceVec<Self::Value>,
    ) -> Result<(), RtError> {
        let (a, numbering) = a.parts();
        spmv_with_spec(self.spec(), gpu, a, numbering, x, y)
    }

    /// Uploads `a` for this kernel: the CSR arrays plus only the layout its
    /// tuned variant reads ([`Layouts::for_variants`]), so a matrix does not
    /// hold, say, a diagonal copy of its values that no kernel will read.
    /// [`DeviceCsr::upload`] builds every layout instead.
    fn upload(&self, gpu: &Gpu, a: &Csr) -> Result<DeviceCsr<Self::Value>, RtError> {
        DeviceCsr::upload_with(gpu, a, Layouts::for_variants(&[self.spec().variant]))
    }

    /// Uploads `a` for this kernel with the least device memory: only the
    /// tuned variant's layout where its kernels need no CSR array
    /// ([`Layouts::lean`]: diagonal; narrow keeps row pointers and values),
    /// else as [`SpmvKernel::upload`]. A matrix without CSR arrays always
    /// runs the tuned kernel (the nnz-balanced fallback needs CSR).
    fn upload_lean(&self, gpu: &Gpu, a: &Csr) -> Result<DeviceCsr<Self::Value>, RtError> {
        DeviceCsr::upload_with(gpu, a, Layouts::lean(&self.spec().variant))
    }

    /// Queues a fused SpMV (see [`Fused`]); [`RtError::EpilogueNotGenerated`]
    /// when the kernel's declaration does not list that epilogue.
    fn spmv_fused(
        &self,
        gpu: &Gpu,
        a: &impl Operand<Self::Value>,
        x: &DeviceVec<Self::Value>,
        y: &mut DeviceVec<Self::Value>,
        fused: Fused<'_, Self::Value>,
    ) -> Result<(), RtError> {
        let (a, numbering) = a.parts();
        spmv_fused_with_spec(self.spec(), gpu, a, numbering, x, y, fused)
    }

    /// `y = alpha A x + beta y + gamma` in one kernel, `{alpha, beta, gamma}`
    /// read on the device when it runs (declare `epilogues = ["axpby"]`).
    fn spmv_axpby(
        &self,
        gpu: &Gpu,
        a: &impl Operand<Self::Value>,
        coefs: &DeviceCoefs,
        x: &DeviceVec<Self::Value>,
        y: &mut DeviceVec<Self::Value>,
    ) -> Result<(), RtError> {
        self.spmv_fused(gpu, a, x, y, Fused::Axpby { coefs })
    }

    /// `y = A x` and `dot = x . y` in one kernel (CG's `p . A p`; square
    /// matrices; declare `epilogues = ["dot"]`). The result stays on the device.
    fn spmv_dot(
        &self,
        gpu: &Gpu,
        a: &impl Operand<Self::Value>,
        x: &DeviceVec<Self::Value>,
        y: &mut DeviceVec<Self::Value>,
        dot: &DeviceScalar,
    ) -> Result<(), RtError> {
        self.spmv_fused(gpu, a, x, y, Fused::Dot { w: x, dot })
    }
}

/// The epilogue of a fused SpMV and its operands.
#[derive(Debug, Clone, Copy)]
pub enum Fused<'a, T: Scalar> {
    /// `y = alpha A x + beta y + gamma`.
    Axpby {
        /// `{alpha, beta, gamma}`.
        coefs: &'a DeviceCoefs,
    },
    /// `y = A x`, `dot = w . y` (`w` has `rows` entries).
    Dot {
        /// The weights.
        w: &'a DeviceVec<T>,
        /// Where the result goes (it stays on the device).
        dot: &'a DeviceScalar,
    },
    /// `y = alpha A x + beta y + gamma`, then `dot = w . y`.
    AxpbyDot {
        /// `{alpha, beta, gamma}`.
        coefs: &'a DeviceCoefs,
        /// The weights.
        w: &'a DeviceVec<T>,
        /// Where the result goes.
        dot: &'a DeviceScalar,
    },
}

impl<T: Scalar> Fused<'_, T> {
    /// Which epilogue this is.
    pub fn epilogue(&self) -> Epilogue {
        match self {
            Fused::Axpby { .. } => Epilogue::Axpby,
            Fused::Dot { .. } => Epilogue::Dot,
            Fused::AxpbyDot { .. } => Epilogue::AxpbyDot,
        }
    }
}

/// Checks value type, shapes and owners of an SpMV's operands.
fn check_operands<T: Scalar>(
    spec: &KernelSpec,
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    x: &DeviceVec<T>,
    y: &DeviceVec<T>,
) -> Result<(), RtError> {
    if spec.value != T::TYPE {
        return Err(RtError::WrongValueType {
            kernel: spec.name.to_string(),
            expected: spec.value,
            found: T::TYPE,
        });
    }
    a.check_gpu(gpu)?;
    x.check_gpu(gpu, "x")?;
    y.check_gpu(gpu, "y")?;
    if x.len() != a.cols() {
        return Err(RtError::DimensionMismatch {
            what: "x (must have cols entries)",
            expected: a.cols(),
            found: x.len(),
        });
    }
    if y.len() != a.rows() {
        return Err(RtError::DimensionMismatch {
            what: "y (must have rows entries)",
            expected: a.rows(),
            found: y.len(),
        });
    }
    Ok(())
}

/// The body of [`SpmvKernel::spmv_fused`] for an explicit spec.
pub(crate) fn spmv_fused_with_spec<T: Scalar>(
    spec: &KernelSpec,
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    numbering: Numbering,
    x: &DeviceVec<T>,
    y: &mut DeviceVec<T>,
    fused: Fused<'_, T>,
) -> Result<(), RtError> {
    spmv_fused_unpublished(spec, gpu, a, numbering, x, y, fused)?;
    match fused {
        Fused::Dot { dot, .. } | Fused::AxpbyDot { dot, .. } => crate::ops::publish_dot(gpu, dot),
        Fused::Axpby { .. } => Ok(()),
    }
}

/// The fused launch alone: a dot stays in the scalar's accumulators until
/// [`crate::ops::publish_dot`] or a solver update that publishes it runs.
pub(crate) fn spmv_fused_unpublished<T: Scalar>(
    spec: &KernelSpec,
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    numbering: Numbering,
    x: &DeviceVec<T>,
    y: &mut DeviceVec<T>,
    fused: Fused<'_, T>,
) -> Result<(), RtError> {
    check_operands(spec, gpu, a, x, y)?;
    let (coefs, w, dot) = match fused {
        Fused::Axpby { coefs } => (Some(coefs), None, None),
        Fused::Dot { w, dot } => (None, Some(w), Some(dot)),
        Fused::AxpbyDot { coefs, w, dot } => (Some(coefs), Some(w), Some(dot)),
    };
    if let Some(c) = coefs {
        c.check_gpu(gpu, "the coefficients")?;
    }
    if let Some(w) = w {
        w.check_gpu(gpu, "the dot weights w")?;
        if w.len() != a.rows() {
            return Err(RtError::DimensionMismatch {
                what: "w (the dot weights must have rows entries)",
                expected: a.rows(),
                found: w.len(),
            });
        }
    }
    if let Some(d) = dot {
        d.check_gpu(gpu, "the dot scalar")?;
    }
    let (func, variant) = resolve_entry(
        gpu,
        spec,
        a.features(),
        a.has_layout(spec.variant.strategy),
        a.has_csr(),
        Some(fused.epilogue()),
    )?;
    // Operands an epilogue does not read still need valid pointers of the
    // right types: x for w, the scalar's buffer for coef, and so on.
    let spare = gpu.spare();
    let ep = EpArgs {
        coef: coefs.map_or_else(|| dot.map_or(&spare.0, |d| &*d.buf), |c| &*c.buf),
        w: w.map_or(x.as_slice(), |w| w.as_slice()),
        dot: dot.map_or(&spare.0, |d| &*d.buf),
    };
    let w_is_x = w.is_none_or(|w| std::ptr::eq(w, x));
    crate::renumber::launch(
        gpu,
        (&func, &variant),
        a,
        numbering,
        x.as_slice(),
        y.as_mut_slice(),
        Some(crate::renumber::EpLaunch {
            args: ep,
            w_is_x,
            reads_y: fused.epilogue().has_axpby(),
        }),
    )
}

/// The body of [`SpmvKernel::spmv`] for an explicit spec.
pub(crate) fn spmv_with_spec<T: Scalar>(
    spec: &KernelSpec,
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    numbering: Numbering,
    x: &DeviceVec<T>,
    y: &mut DeviceVec<T>,
) -> Result<(), RtError> {
    check_operands(spec, gpu, a, x, y)?;
    let (func, variant) = resolve_entry(
        gpu,
        spec,
        a.features(),
        a.has_layout(spec.variant.strategy),
        a.has_csr(),
        None,
    )?;
    crate::renumber::launch(
        gpu,
        (&func, &variant),
        a,
        numbering,
        x.as_slice(),
        y.as_mut_slice(),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Provenance, TunedFor};
    use crate::variant::ValueType;

    fn spec(strategy: Strategy, tuned: TunedFor) -> KernelSpec {
        KernelSpec {
            name: "test",
            value: ValueType::F32,
            variant: Variant::of(strategy),
            provenance: Provenance::Policy,
            entry: "e",
            source: "",
            ptx: None,
            fallback_entry: "f",
            fallback_source: "",
            fallback_ptx: None,
            ptx_by_arch: &[],
            fused: &[],
            tuned_on: None,
            tuned_for: tuned,
        }
    }

    fn features(mean_row: f64, cv_row: f64, max_over_mean: f64) -> Features {
        Features {
            mean_row,
            cv_row,
            max_over_mean,
            ..Features::default()
        }
    }

    const TUNED: TunedFor = TunedFor {
        mean_row: 10.0,
        cv_row: 0.2,
        max_over_mean: 2.0,
    };

    #[test]
    fn similar_matrix_uses_tuned() {
        let s = spec(Strategy::GroupPerRow, TUNED);
        assert_eq!(dispatch(&s, &features(12.0, 0.5, 3.0)), Dispatch::Tuned);
        // Just inside every limit.
        assert_eq!(dispatch(&s, &features(79.0, 1.39, 23.9)), Dispatch::Tuned);
        assert_eq!(dispatch(&s, &features(1.3, 0.0, 1.0)), Dispatch::Tuned);
    }

    #[test]
    fn irregular_matrix_falls_back() {
        let s = spec(Strategy::ThreadPerRow, TUNED);
        let Dispatch::Fallback { reason } = dispatch(&s, &features(10.0, 3.0, 5.0)) else {
            panic!("expected fallback")
        };
        assert!(reason.contains("coefficient of variation"));
        let Dispatch::Fallback { reason } = dispatch(&s, &features(10.0, 0.2, 100.0)) else {
            panic!("expected fallback")
        };
        assert!(reason.contains("longest row"));
        let Dispatch::Fallback { reason } = dispatch(&s, &features(1000.0, 0.2, 2.0)) else {
            panic!("expected fallback")
        };
        assert!(reason.contains("mean row length"));
        assert!(matches!(
            dispatch(&s, &features(1.0, 0.2, 2.0)),
            Dispatch::Fallback { .. }
        ));
    }

    #[test]
    fn nnz_split_never_falls_back() {
        let s = spec(Strategy::NnzSplit, TUNED);
        assert_eq!(dispatch(&s, &features(1e4, 50.0, 1e5)), Dispatch::Tuned);
    }

    #[test]
    fn unknown_tuning_statistics_do_not_fall_back() {
        let unknown = TunedFor {
            mean_row: f64::NAN,
            cv_row: f64::NAN,
            max_over_mean: f64::NAN,
        };
        let s = spec(Strategy::BlockPerRow, unknown);
        assert_eq!(dispatch(&s, &features(1e4, 50.0, 1e5)), Dispatch::Tuned);
    }

    #[test]
    fn warning_is_recorded_once() {
        warn_fallback_once("once-test", "r");
        warn_fallback_once("once-test", "r");
        let warned = WARNED.lock().unwrap();
        assert_eq!(warned.iter().filter(|n| **n == "once-test").count(), 1);
    }
}
