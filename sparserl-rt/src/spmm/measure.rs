//! The SpMM measurement harness (feature `tools`): compile a generated
//! source with NVRTC, check it on poisoned outputs against the float64
//! reference per row, time it with CUDA events (the SpMV harness's
//! [`time_launches`]: warm-up, median of many, short launches as graph
//! replays, rotating X / Y copies when the working set fits in L2).

use super::launch::{
    SpmmEntryNames, SpmmFunctions, SpmmOperands, check_spmm, device_arch, launch_spmm,
};
use super::reference::{SpmmCase, max_row_rel_err, spmm_reference};
use super::variant::{SpmmEpilogue, SpmmVariant, spmm_bytes};
use crate::csr::Csr;
use crate::dense::{DenseLayout, DeviceDense};
use crate::device::{DeviceCsr, DeviceVec, Gpu, Layouts, Scalar};
use crate::error::RtError;
use crate::kernel::ptx_target_arch;
use crate::measure::{MeasureOptions, finite_or_null, random_x, stats, time_launches, tolerance};
use crate::variant::ValueType;
use cudarc::nvrtc::Ptx;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The outcome of checking and timing one SpMM entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmmMeasurement {
    /// The variant measured.
    pub variant: SpmmVariant,
    /// Its id (what lock files and reports name).
    pub id: String,
    /// Value type.
    pub value: ValueType,
    /// Dense layout.
    pub layout: DenseLayout,
    /// Width N.
    pub n: usize,
    /// The entry's compile-time width (`None`: the generic entry).
    pub width: Option<usize>,
    /// The fused epilogue measured, if any.
    pub epilogue: Option<SpmmEpilogue>,
    /// Whether every check passed within [`tolerance`].
    pub correct: bool,
    /// Largest per-row relative error over the checks (infinity: not computed).
    #[serde(with = "finite_or_null")]
    pub max_row_rel_err: f64,
    /// Median time of one SpMM in microseconds (infinity when not timed).
    #[serde(with = "finite_or_null")]
    pub median_us: f64,
    /// 10th percentile.
    #[serde(with = "finite_or_null")]
    pub p10_us: f64,
    /// 90th percentile.
    #[serde(with = "finite_or_null")]
    pub p90_us: f64,
    /// [`spmm_bytes`] / median time, GB/s (0 when not timed).
    #[serde(with = "finite_or_null")]
    pub gbs: f64,
    /// Timed samples.
    pub reps: u32,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// A reference result and its term magnitudes (see [`spmm_reference`]).
type Reference = (Vec<f64>, Vec<f64>);

/// Host inputs of the checks and their references, per epilogue.
struct CheckData<T: Scalar> {
    x: Vec<T>,
    y0: Vec<T>,
    bias: Vec<T>,
    /// (plain case, scaled case) references with magnitudes, per epilogue.
    refs: BTreeMap<Option<SpmmEpilogue>, [Reference; 2]>,
}

struct State<T: Scalar> {
    xs: Vec<DeviceDense<T>>,
    ys: Vec<DeviceDense<T>>,
    bias: DeviceVec<T>,
    next: usize,
    check: CheckData<T>,
}

/// `alpha`, `beta` of the second check (the first is `1, 0` on a NaN `Y`).
const SCALED: (f64, f64) = (-0.75, 1.5);

/// One matrix on one GPU at one width and layout, ready to check and time
/// SpMM entries.
pub struct SpmmBench<T: Scalar> {
    gpu: Gpu,
    /// The matrix with values rounded to `T` (what the device holds).
    csr: Csr,
    a: DeviceCsr<T>,
    n: usize,
    layout: DenseLayout,
    state: Mutex<State<T>>,
}

impl<T: Scalar> SpmmBench<T> {
    /// Seed of the random inputs.
    pub const SEED: u64 = 0x5b33_0001;

    /// Uploads `csr` (CSR arrays only) and allocates `opts.x_copies` (0:
    /// 8 when [`spmm_bytes`] fits in L2, else 1) copies of X and Y.
    pub fn new(
        gpu: &Gpu,
        csr: &Csr,
        n: usize,
        layout: DenseLayout,
        opts: &MeasureOptions,
    ) -> Result<Self, RtError> {
        let rounded: Vec<f64> = csr
            .values()
            .iter()
            .map(|&v| T::from_f64(v).to_f64())
            .collect();
        let csr_t = Csr::try_new(
            csr.rows(),
            csr.cols(),
            csr.indptr().to_vec(),
            csr.indices().to_vec(),
            rounded,
        )?;
        let a = DeviceCsr::<T>::upload_with(gpu, &csr_t, Layouts::NONE)?;
        let bytes = spmm_bytes(csr.rows(), csr.cols(), csr.nnz(), n, T::TYPE.size());
        let copies = match opts.x_copies {
            0 if bytes <= gpu.l2_bytes() as u64 => 8,
            0 => 1,
            c => c,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(Self::SEED);
        let x: Vec<T> = random_x(&mut rng, csr.cols() * n);
        let mut xs = Vec::with_capacity(copies);
        let mut ys = Vec::with_capacity(copies);
        for _ in 0..copies {
            xs.push(DeviceDense::from_host(gpu, csr.cols(), n, layout, &x)?);
            ys.push(DeviceDense::zeros(gpu, csr.rows(), n, layout)?);
        }
        let bias_host: Vec<T> = random_x(&mut rng, n);
        let check = CheckData {
            y0: random_x(&mut rng, csr.rows() * n),
            bias: bias_host.clone(),
            x,
            refs: BTreeMap::new(),
        };
        Ok(SpmmBench {
            gpu: gpu.clone(),
            csr: csr_t,
            a,
            n,
            layout,
            state: Mutex::new(State {
                xs,
                ys,
                bias: DeviceVec::from_host(gpu, &bias_host)?,
                next: 0,
                check,
            }),
        })
    }

    /// The host matrix (values rounded to `T`).
    pub fn csr(&self) -> &Csr {
        &self.csr
    }
    /// Width N.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Dense layout.
    pub fn layout(&self) -> DenseLayout {
        self.layout
    }
    /// Compulsory bytes of one SpMM ([`spmm_bytes`]).
    pub fn bytes(&self) -> u64 {
        let c = &self.csr;
        spmm_bytes(c.rows(), c.cols(), c.nnz(), self.n, T::TYPE.size())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reference pair of `epilogue` (computed at first use).
    fn references(&self, st: &mut State<T>, ep: Option<SpmmEpilogue>) -> Result<(), RtError> {
        if st.check.refs.contains_key(&ep) {
            return Ok(());
        }
        let f = |v: &[T]| v.iter().map(|t| t.to_f64()).collect::<Vec<f64>>();
        let (x, y0, bias) = (f(&st.check.x), f(&st.check.y0), f(&st.check.bias));
        let bias = ep.map(|_| bias.as_slice());
        let run = |alpha, beta, y0| {
            let case = SpmmCase {
                alpha,
                beta,
                y0,
                bias,
            };
            spmm_reference(&self.csr, &x, self.n, self.layout, &case)
        };
        let plain = run(1.0, 0.0, None)?;
        let scaled = run(SCALED.0, SCALED.1, Some(&y0))?;
        st.check.refs.insert(ep, [plain, scaled]);
        Ok(())
    }

    /// Runs `f` twice against the float64 reference and returns the largest
    /// per-row relative error ([`max_row_rel_err`]): `Y = A X` on a `Y`
    /// poisoned with NaN (`beta = 0` must not read it), then
    /// `Y = -0.75 A X + 1.5 Y0` on a random `Y0`; with `epilogue` both
    /// fused (`relu(. + bias)`, random bias).
    ///
    /// # Safety
    /// `f` must hold entries of the SpMM ABI for `T` and this bench's
    /// layout, generated for `f.variant` at `f.width` with `epilogue`, and
    /// compiled for sm_90 or later if `f.dependent` (as this module's
    /// loaders set it).
    pub unsafe fn check(
        &self,
        f: &SpmmFunctions,
        epilogue: Option<SpmmEpilogue>,
    ) -> Result<f64, RtError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        self.references(st, epilogue)?;
        let (rows, n) = (self.csr.rows(), self.n);
        let poison = vec![T::from_f64(f64::NAN); rows * n];
        let mut worst = 0.0f64;
        for (k, (alpha, beta)) in [(1.0, 0.0), SCALED].into_iter().enumerate() {
            let start = if k == 0 { &poison } else { &st.check.y0 };
            st.ys[0].copy_from_host(&self.gpu, start)?;
            let ops = SpmmOperands {
                a: &self.a,
                x: &st.xs[0],
                y: &mut st.ys[0],
                alpha: T::from_f64(alpha),
                beta: T::from_f64(beta),
                bias: epilogue.map(|_| &st.bias),
            };
            check_spmm(&self.gpu, self.layout, &ops)?;
            launch_spmm(&self.gpu, f, ops)?;
            let y: Vec<f64> = st.ys[0]
                .to_host(&self.gpu)?
                .iter()
                .map(|v| v.to_f64())
                .collect();
            let (reference, mag) = &st.check.refs[&epilogue][k];
            worst = worst.max(max_row_rel_err(&y, reference, mag, rows, n, self.layout));
        }
        Ok(worst)
    }

    /// [`SpmmBench::check`]'s first case (`Y = A X` on a NaN `Y`) with the
    /// launch captured into a CUDA graph ([`Gpu::capture`]) and the graph
    /// replayed twice: the largest per-row relative error.
    ///
    /// # Safety
    /// As [`SpmmBench::check`].
    pub unsafe fn check_captured(
        &self,
        f: &SpmmFunctions,
        epilogue: Option<SpmmEpilogue>,
    ) -> Result<f64, RtError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        self.references(st, epilogue)?;
        let (rows, n) = (self.csr.rows(), self.n);
        st.ys[0].copy_from_host(&self.gpu, &vec![T::from_f64(f64::NAN); rows * n])?;
        let (xs, ys, bias) = (&st.xs, &mut st.ys, &st.bias);
        let graph = self.gpu.capture(|| {
            let ops = SpmmOperands {
                a: &self.a,
                x: &xs[0],
                y: &mut ys[0],
                alpha: T::from_f64(1.0),
                beta: T::from_f64(0.0),
                bias: epilogue.map(|_| bias),
            };
            check_spmm(&self.gpu, self.layout, &ops)?;
            launch_spmm(&self.gpu, f, ops)
        })?;
        graph.launch(&self.gpu)?;
        graph.launch(&self.gpu)?;
        drop(graph);
        let y: Vec<f64> = st.ys[0]
            .to_host(&self.gpu)?
            .iter()
            .map(|v| v.to_f64())
            .collect();
        let (reference, mag) = &st.check.refs[&epilogue][0];
        Ok(max_row_rel_err(&y, reference, mag, rows, n, self.layout))
    }

    /// Checks `f` ([`SpmmBench::check`]), then times `Y = A X` (fused:
    /// with the bias) with [`time_launches`] on the rotated copies. A wrong
    /// result or a recoverable error is a measurement with `correct: false`;
    /// only context-destroying faults are `Err`.
    ///
    /// # Safety
    /// As [`SpmmBench::check`].
    pub unsafe fn measure(
        &self,
        f: &SpmmFunctions,
        epilogue: Option<SpmmEpilogue>,
        opts: &MeasureOptions,
    ) -> Result<SpmmMeasurement, RtError> {
        let tol = tolerance(T::TYPE);
        let mut m = self.failed(f, epilogue, f64::INFINITY, String::new());
        // SAFETY: forwarded from the caller.
        let err = match unsafe { self.check(f, epilogue) } {
            Ok(e) => e,
            Err(e) if e.is_context_fatal() => return Err(e),
            Err(e) => {
                m.error = Some(format!("check failed: {e}"));
                return Ok(m);
            }
        };
        m.max_row_rel_err = err;
        if err > tol {
            m.error = Some(format!("per-row relative error {err:.3e} above {tol:.0e}"));
            return Ok(m);
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        let mut launch = || -> Result<(), RtError> {
            let i = st.next % st.xs.len();
            st.next = st.next.wrapping_add(1);
            let ops = SpmmOperands {
                a: &self.a,
                x: &st.xs[i],
                y: &mut st.ys[i],
                alpha: T::from_f64(1.0),
                beta: T::from_f64(0.0),
                bias: epilogue.map(|_| &st.bias),
            };
            launch_spmm(&self.gpu, f, ops)
        };
        match time_launches(
            &self.gpu,
            &mut launch,
            opts.warmup,
            opts.reps,
            opts.max_seconds,
        ) {
            Ok(times) => match stats(&times) {
                Some(s) => {
                    m.correct = true;
                    m.error = None;
                    m.median_us = s.median;
                    m.p10_us = s.p10;
                    m.p90_us = s.p90;
                    m.gbs = self.bytes() as f64 / (s.median * 1e3);
                    m.reps = times.len() as u32;
                }
                None => m.error = Some("no timed launch completed".into()),
            },
            Err(e) if e.is_context_fatal() => return Err(e),
            Err(e) => m.error = Some(format!("timing failed: {e}")),
        }
        Ok(m)
    }

    fn failed(
        &self,
        f: &SpmmFunctions,
        epilogue: Option<SpmmEpilogue>,
        err: f64,
        error: String,
    ) -> SpmmMeasurement {
        SpmmMeasurement {
            variant: f.variant,
            id: f.variant.id(),
            value: T::TYPE,
            layout: self.layout,
            n: self.n,
            width: f.width,
            epilogue,
            correct: false,
            max_row_rel_err: err,
            median_us: f64::INFINITY,
            p10_us: f64::INFINITY,
            p90_us: f64::INFINITY,
            gbs: 0.0,
            reps: 0,
            error: Some(error),
        }
    }
}

/// Compiles `source` (a generated SpMM unit of `variant` for `T` and
/// `layout`) with NVRTC for `gpu`'s architecture and loads the entry of
/// `width` and `epilogue` with its passes.
///
/// # Safety
/// `source` must be `sparserl-build`'s SpMM codegen output for exactly
/// these parameters (its entries then have the SpMM ABI the launches assume).
pub unsafe fn load_source<T: Scalar>(
    gpu: &Gpu,
    source: &str,
    variant: &SpmmVariant,
    layout: DenseLayout,
    width: Option<usize>,
    epilogue: Option<SpmmEpilogue>,
) -> Result<SpmmFunctions, RtError> {
    let ptx = crate::nvrtc::compile_ptx(source, &gpu.arch(), &[])
        .map_err(|e| RtError::Compile(format!("{}: {e}", variant.id())))?;
    // SAFETY: forwarded from the caller.
    unsafe { load_ptx(gpu, &ptx, variant, T::TYPE, layout, width, epilogue) }
}

/// [`load_source`] for PTX already compiled from such a source (its
/// `.target` sets [`SpmmFunctions::dependent`]; none that parses: false).
///
/// # Safety
/// As [`load_source`], for the PTX of that source.
pub unsafe fn load_ptx(
    gpu: &Gpu,
    ptx: &str,
    variant: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    width: Option<usize>,
    epilogue: Option<SpmmEpilogue>,
) -> Result<SpmmFunctions, RtError> {
    let image = (ptx_target_arch(ptx), || Ok(Ptx::from_src(ptx.to_string())));
    // SAFETY: forwarded from the caller.
    unsafe { load_one(gpu, image, variant, value, layout, (width, epilogue)) }
}

/// [`load_ptx`] for the cubin `ptxas` assembled from such PTX for this
/// GPU's architecture (loaded as is: no compile by the driver).
///
/// # Safety
/// As [`load_source`], for the cubin of that source, compiled and assembled
/// for this GPU's architecture (as [`load_source`] compiles it): its
/// entries are taken to hold the waits of that architecture, which
/// [`SpmmFunctions::dependent`] launches rely on.
pub unsafe fn load_cubin(
    gpu: &Gpu,
    cubin: &[u8],
    variant: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    width: Option<usize>,
    epilogue: Option<SpmmEpilogue>,
) -> Result<SpmmFunctions, RtError> {
    let image = (device_arch(gpu), || Ok(Ptx::from_binary(cubin.to_vec())));
    // SAFETY: forwarded from the caller.
    unsafe { load_one(gpu, image, variant, value, layout, (width, epilogue)) }
}

/// The one entry `which` of the module `image` makes.
///
/// # Safety
/// As [`load_entries`].
unsafe fn load_one(
    gpu: &Gpu,
    image: (Option<u32>, impl FnOnce() -> Result<Ptx, RtError>),
    variant: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    which: (Option<usize>, Option<SpmmEpilogue>),
) -> Result<SpmmFunctions, RtError> {
    // SAFETY: forwarded from the caller.
    let mut all = unsafe { load_entries(gpu, image, variant, value, layout, &[which]) }?;
    all.pop()
        .ok_or_else(|| RtError::Compile("no SpMM entry loaded".into()))
}

/// Loads several `(width, epilogue)` entries of one unit's PTX, the module
/// loaded (and JIT-compiled by the driver) once for all of them.
///
/// # Safety
/// As [`load_ptx`]; every pair must be an entry of that unit.
pub unsafe fn load_ptx_entries(
    gpu: &Gpu,
    ptx: &str,
    variant: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    which: &[(Option<usize>, Option<SpmmEpilogue>)],
) -> Result<Vec<SpmmFunctions>, RtError> {
    let image = (ptx_target_arch(ptx), || Ok(Ptx::from_src(ptx.to_string())));
    // SAFETY: forwarded from the caller.
    unsafe { load_entries(gpu, image, variant, value, layout, which) }
}

/// The entries `which` of the module `image.1` makes (PTX or cubin) for
/// architecture `image.0` (`None`: unknown; see
/// [`SpmmFunctions::dependent`]).
///
/// # Safety
/// `image` must make the module of a generated unit of `variant`, `value`
/// and `layout` holding every pair of `which`.
unsafe fn load_entries(
    gpu: &Gpu,
    (arch, image): (Option<u32>, impl FnOnce() -> Result<Ptx, RtError>),
    variant: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    which: &[(Option<usize>, Option<SpmmEpilogue>)],
) -> Result<Vec<SpmmFunctions>, RtError> {
    let v = variant.canonical();
    let names: Vec<SpmmEntryNames> = which
        .iter()
        .map(|&(w, e)| SpmmEntryNames::of(&v, value, layout, w, e))
        .collect();
    let flat: Vec<String> = names.iter().flat_map(SpmmEntryNames::list).collect();
    // SAFETY: forwarded from the caller's contract (the entries are those
    // of `ptx`, a unit of this variant, value type and layout).
    let mut funcs = unsafe { gpu.functions_of_module(&flat, image) }?.into_iter();
    let mut out = Vec::with_capacity(which.len());
    for (&(width, _), names) in which.iter().zip(&names) {
        out.push(names.functions(v, width, arch, || {
            funcs
                .next()
                .ok_or_else(|| RtError::Compile("SpMM entry list mismatch".into()))
        })?);
    }
    Ok(out)
}
