//! The measurement harness used by the build-time search and the benchmarks.
//!
//! A [`Bench`] holds one matrix on one GPU; it checks a compiled variant
//! against the float64 CPU reference ([`Bench::check`]) and times it
//! ([`Bench::measure`], [`Bench::time_graph_us`], [`Bench::time_back_to_back_us`]).

use crate::csr::Csr;
use crate::device::{DeviceCsr, Gpu, Layouts, Scalar};
use crate::epilogue::Epilogue;
use crate::error::{RenumberedError, RtError};
use crate::graph::{Graph, Session};
use crate::launch::EpArgs;
use crate::pin::Shared;
use crate::renumber::{EpLaunch, Numbering};
use crate::reorder::Reorder;
use crate::variant::{ValueType, Variant};
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, sys};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Largest number of launches queued between two host synchronizations while timing.
const MAX_BATCH: usize = 64;

/// Launches shorter than this (µs, one event pair around one launch) are
/// timed in groups: one event pair around several back-to-back launches,
/// because event resolution and launch gaps dominate a single short launch.
pub const SHORT_LAUNCH_US: f64 = 20.0;

/// Target duration (µs) of one timed group of short launches.
const GROUP_TARGET_US: f64 = 100.0;

/// Most launches in one timed group.
const MAX_GROUP: usize = 32;

/// Relative-error tolerance of the correctness check for a value type
/// (`1e-5` for `f32`, `1e-12` for `f64`).
pub fn tolerance(value: ValueType) -> f64 {
    match value {
        ValueType::F32 => 1e-5,
        ValueType::F64 => 1e-12,
    }
}

/// `||y - reference|| / ||reference||` (Euclidean norms), or `||y - reference||`
/// when the reference is zero. Any non-finite `y` entry or a length mismatch
/// gives `f64::INFINITY`. A global measure: it hides a wrong row whose values
/// are small next to the vector's norm; the correctness check uses
/// [`row_errors`].
pub fn rel_err(y: &[f64], reference: &[f64]) -> f64 {
    if y.len() != reference.len() || y.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let diff = y
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let norm = reference.iter().map(|v| v * v).sum::<f64>().sqrt();
    let e = if norm > 0.0 { diff / norm } else { diff };
    if e.is_nan() { f64::INFINITY } else { e }
}

/// The per-row outcome of comparing a result with its float64 reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowErrors {
    /// Largest per-row relative error (see [`row_errors`]); what the
    /// correctness check compares with [`tolerance`].
    pub max: f64,
    /// The row where it occurs.
    pub row: usize,
    /// The global relative error ([`rel_err`]), for reports.
    pub global: f64,
}

/// Per-row relative errors `|y_r - ref_r| / max(|ref_r|, m_r)`, where `m_r`
/// is the row's magnitude: the sum of the absolute values of the terms that
/// make up `ref_r` (`sum_j |a_rj x_j|`, plus `|beta y_r| + |gamma| + ...` for
/// an epilogue; [`row_magnitudes`], [`axpby_reference`]).
///
/// Why this floor: rounding while summing `n` terms in precision `u` errs by
/// at most about `n u m_r`, whatever the cancellation, so the error relative
/// to `m_r` is what a correct kernel keeps small on every row; relative to
/// `|ref_r|` alone a row that cancels to nearly zero would fail a correct
/// kernel. Since `m_r >= |ref_r|`, the floor only ever loosens cancelling
/// rows. A row with `m_r = 0` must be exactly 0 (else the error is infinite).
/// Unlike [`rel_err`], one wrong row fails however small its values are next
/// to the others. A non-finite `y` entry or a length mismatch gives infinity.
pub fn row_errors(y: &[f64], reference: &[f64], magnitude: &[f64]) -> RowErrors {
    let global = rel_err(y, reference);
    if y.len() != reference.len() || y.len() != magnitude.len() {
        return RowErrors {
            max: f64::INFINITY,
            row: 0,
            global,
        };
    }
    let mut worst = RowErrors {
        max: 0.0,
        row: 0,
        global,
    };
    for (r, ((&got, &want), &m)) in y.iter().zip(reference).zip(magnitude).enumerate() {
        let scale = want.abs().max(m);
        let e = match (got.is_finite(), scale > 0.0) {
            (false, _) => f64::INFINITY,
            (true, true) => (got - want).abs() / scale,
            (true, false) if got == want => 0.0,
            (true, false) => f64::INFINITY,
        };
        let e = if e.is_nan() { f64::INFINITY } else { e };
        if e > worst.max {
            worst.max = e;
            worst.row = r;
        }
    }
    worst
}

/// `sum_j |a_rj x_j|` per row: the magnitudes [`row_errors`] measures each
/// row against. `x` shorter than the matrix's columns counts as zeros.
pub fn row_magnitudes(csr: &Csr, x: &[f64]) -> Vec<f64> {
    let (ptr, idx, val) = (csr.indptr(), csr.indices(), csr.values());
    (0..csr.rows())
        .map(|r| {
            let (lo, hi) = (ptr[r] as usize, ptr[r + 1] as usize);
            (lo..hi)
                .map(|k| (val[k] * x.get(idx[k] as usize).copied().unwrap_or(0.0)).abs())
                .sum()
        })
        .collect()
}

/// Coefficients `{alpha, beta, gamma, gamma_dot}` a fused axpby entry is
/// checked with: none 0 or 1, so every term of
/// `y = alpha A x + beta y + gamma + gamma_dot dot[0]` counts (PageRank's
/// constant term is `gamma + gamma_dot dot[0]`). The timed launches keep
/// `{1, 0, 0, 0}`.
pub const CHECK_COEFS: [f64; 4] = [0.75, -0.5, 0.25, 0.125];

/// The published value of the dot scalar (`dot[0]`) when a checked fused
/// entry starts (what its `gamma_dot` term multiplies).
pub const CHECK_DOT0: f64 = 2.0;

/// The float64 reference of an axpby epilogue, `alpha ax + beta y0 + gamma
/// + gamma_dot dot0` with `coefs = [alpha, beta, gamma, gamma_dot]`, and its
/// per-row magnitudes (`|alpha| m + |beta y0| + |gamma| + |gamma_dot dot0|`)
/// from the product `ax` and its magnitudes `m`.
pub fn axpby_reference(
    ax: &[f64],
    magnitude: &[f64],
    coefs: [f64; 4],
    y0: &[f64],
    dot0: f64,
) -> (Vec<f64>, Vec<f64>) {
    let [alpha, beta, gamma, gamma_dot] = coefs;
    let constant = gamma + gamma_dot * dot0;
    let constant_mag = gamma.abs() + (gamma_dot * dot0).abs();
    ax.iter()
        .zip(magnitude)
        .zip(y0)
        .map(|((&a, &m), &y)| {
            (
                alpha * a + beta * y + constant,
                alpha.abs() * m + (beta * y).abs() + constant_mag,
            )
        })
        .unzip()
}

/// The failed measurement of a check whose error `err` is above
/// [`tolerance`] (or not a number); `None` when it passed.
pub fn out_of_tolerance(variant: &Variant, value: ValueType, err: f64) -> Option<Measurement> {
    let tol = tolerance(value);
    // Written so that a NaN error fails too.
    if err <= tol {
        return None;
    }
    Some(Measurement::failed(
        *variant,
        value,
        err,
        format!("per-row relative error {err:.3e} above tolerance {tol:.0e}"),
    ))
}

/// Summary statistics of a sample of times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// 50th percentile.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
}

/// Percentile `p` in `[0, 1]` of sorted data, linearly interpolated between ranks.
fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let pos = p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Median, 10th and 90th percentile (linear interpolation between ranks);
/// `None` for an empty sample. NaN entries are ignored.
pub fn stats(times: &[f64]) -> Option<Stats> {
    let mut s: Vec<f64> = times.iter().copied().filter(|t| !t.is_nan()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    Some(Stats {
        median: percentile_sorted(&s, 0.5),
        p10: percentile_sorted(&s, 0.1),
        p90: percentile_sorted(&s, 0.9),
    })
}

/// Knobs of [`Bench::measure`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeasureOptions {
    /// Untimed launches before timing.
    pub warmup: u32,
    /// Timed launches (fewer when `max_seconds` runs out).
    pub reps: u32,
    /// Copies of `x` and `y` rotated between launches so that `x` is not
    /// served from L2 by the previous launch; 0 = automatic: 8 when the
    /// matrix's compulsory traffic fits in L2, else 1. Used when the
    /// [`Bench`] is built.
    pub x_copies: usize,
    /// Per-variant time guard in seconds: stop repeating once exceeded
    /// (at least one timed launch is always made).
    pub max_seconds: f64,
}

impl MeasureOptions {
    /// The `x`/`y` copies a [`Bench`] rotates for a matrix of `compulsory`
    /// bytes on a device with `l2` bytes of L2: `x_copies` when set, else 8
    /// when the working set fits in L2 (so a launch does not find the
    /// previous launch's `x` there), else 1.
    pub fn copies_for(&self, compulsory: u64, l2: u64) -> usize {
        match self.x_copies {
            0 if compulsory <= l2 => 8,
            0 => 1,
            n => n,
        }
    }
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            warmup: 5,
            reps: 50,
            x_copies: 0,
            max_seconds: 2.0,
        }
    }
}

/// The outcome of checking and timing one variant.
///
/// Non-finite numbers are written as `null` and read back as infinity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The variant measured.
    pub variant: Variant,
    /// Its value type.
    pub value: ValueType,
    /// Whether the result matched the reference within [`tolerance`].
    pub correct: bool,
    /// Largest per-row relative error of the check ([`row_errors`];
    /// infinity when it could not be computed).
    #[serde(with = "finite_or_null")]
    pub rel_err: f64,
    /// Median time of one SpMV in microseconds (infinity when not timed).
    #[serde(with = "finite_or_null")]
    pub median_us: f64,
    /// 10th percentile time in microseconds.
    #[serde(with = "finite_or_null")]
    pub p10_us: f64,
    /// 90th percentile time in microseconds.
    #[serde(with = "finite_or_null")]
    pub p90_us: f64,
    /// Effective bandwidth: compulsory bytes / median time, in GB/s (0 when not timed).
    #[serde(with = "finite_or_null")]
    pub gbs: f64,
    /// Timed launches actually made.
    pub reps: u32,
    /// Why the variant failed, if it did.
    pub error: Option<String>,
}

impl Measurement {
    /// A measurement of a variant that failed before or during timing.
    pub fn failed(variant: Variant, value: ValueType, rel_err: f64, error: String) -> Self {
        Measurement {
            variant,
            value,
            correct: false,
            rel_err,
            median_us: f64::INFINITY,
            p10_us: f64::INFINITY,
            p90_us: f64::INFINITY,
            gbs: 0.0,
            reps: 0,
            error: Some(error),
        }
    }
}

/// Serde helper: non-finite `f64` as `null`, `null` read back as infinity
/// (JSON has no infinity or NaN).
pub(crate) mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_some(v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// A timing event (the default `new_event` flags disable timing).
fn timing_event(gpu: &Gpu) -> Result<CudaEvent, RtError> {
    let _s = gpu.outside_capture("a timing event")?;
    // SAFETY: the context only makes an event, which this module records
    // on the Gpu's own stream (outside any capture: every caller holds an
    // `outside_capture` guard) and reads on the host.
    let ctx = unsafe { gpu.context() };
    Ok(ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?)
}

/// Device-to-device copy bandwidth in GB/s (1e9 bytes/s): median of 10
/// copies of 1 GiB, counting read plus write bytes. A practical upper bound
/// for the effective bandwidth of memory-bound kernels.
pub fn copy_bandwidth_gbs(gpu: &Gpu) -> Result<f64, RtError> {
    const BYTES: usize = 1 << 30;
    const REPS: usize = 10;
    let guard = gpu.outside_capture("copy_bandwidth_gbs")?;
    let stream = &*guard;
    let src = stream.alloc_zeros::<u32>(BYTES / 4)?;
    let mut dst = stream.alloc_zeros::<u32>(BYTES / 4)?;
    for _ in 0..2 {
        stream.memcpy_dtod(&src, &mut dst)?;
    }
    let start = timing_event(gpu)?;
    let stop = timing_event(gpu)?;
    let mut ms = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream)?;
        stream.memcpy_dtod(&src, &mut dst)?;
        stop.record(stream)?;
        ms.push(start.elapsed_ms(&stop)? as f64);
    }
    let median_ms = stats(&ms).map_or(f64::NAN, |s| s.median);
    Ok(2.0 * BYTES as f64 / (median_ms * 1e-3) / 1e9)
}

/// Mutable device state of a [`Bench`].
struct BenchState<T: Scalar> {
    xs: Vec<Shared<CudaSlice<T>>>,
    ys: Vec<Shared<CudaSlice<T>>>,
    rng: ChaCha8Rng,
    /// Next copy to use when rotating.
    next: usize,
    /// Checking inputs with their float64 references, drawn lazily; checks
    /// cycle through them so consecutive checks use different inputs while
    /// large matrices do not pay a CPU reference SpMV per check.
    checks: Vec<CheckInput<T>>,
    next_check: usize,
    /// The fused epilogue measured, with its operands.
    ep: Option<BenchEpilogue<T>>,
}

/// One checking input: `x` in `T`, its float64 product `A x` and the row
/// magnitudes `sum_j |a_rj x_j|` ([`row_magnitudes`]).
struct CheckInput<T> {
    x: Vec<T>,
    ax: Vec<f64>,
    magnitude: Vec<f64>,
}

impl<T: Scalar> BenchEpilogue<T> {
    /// The operands of a timed launch (`coefs`) or of a check (`check_coefs`).
    fn launch(&self, checking: bool) -> EpLaunch<'_, T> {
        EpLaunch {
            args: EpArgs {
                coef: if checking {
                    &self.check_coefs
                } else {
                    &self.coefs
                },
                w: &self.w,
                dot: &self.dot,
            },
            w_is_x: false,
            reads_y: self.epilogue.has_axpby(),
        }
    }
}

/// Operands of a fused launch in a [`Bench`]: the timed launches use
/// `{alpha, beta, gamma, gamma_dot} = {1, 0, 0, 0}`, checks [`CHECK_COEFS`]
/// with `y` starting at seeded random `y0` and the scalar's published value
/// at [`CHECK_DOT0`]; seeded random weights `w` (rows entries) and a device
/// scalar's buffer.
struct BenchEpilogue<T: Scalar> {
    epilogue: Epilogue,
    coefs: Shared<CudaSlice<f64>>,
    check_coefs: Shared<CudaSlice<f64>>,
    w: Shared<CudaSlice<T>>,
    w_host: Vec<f64>,
    y0: Vec<T>,
    dot: Shared<CudaSlice<f64>>,
}

/// Distinct random inputs (with precomputed references) a [`Bench`] cycles through.
pub const CHECK_INPUTS: usize = 4;

/// One matrix uploaded to one GPU, with rotating `x`/`y` buffers, ready to
/// check and time compiled variants of the kernel ABI.
///
/// Methods take `&self`; the buffers are behind a mutex, so concurrent calls
/// are serialized.
pub struct Bench<T: Scalar> {
    gpu: Gpu,
    csr: Csr,
    a: DeviceCsr<T>,
    /// The matrix renumbered by [`Reorder::Rcm`] and [`Reorder::Degree`],
    /// uploaded at first use (an error for rectangular matrices).
    renumbered: [OnceLock<Result<DeviceCsr<T>, Arc<RenumberedError>>>; 2],
    state: Mutex<BenchState<T>>,
}

impl<T: Scalar> Bench<T> {
    /// Seed of the random `x` vectors.
    pub const SEED: u64 = 0x5ba5_e517;

    /// Uploads `csr` with default options (see [`Bench::with_options`]).
    pub fn new(gpu: &Gpu, csr: &Csr) -> Result<Self, RtError> {
        Self::with_options(gpu, csr, &MeasureOptions::default())
    }

    /// Uploads `csr` and allocates `opts.x_copies` (or the automatic number
    /// of) `x` and `y` buffers, `x` filled with seeded random values in [-1, 1).
    pub fn with_options(gpu: &Gpu, csr: &Csr, opts: &MeasureOptions) -> Result<Self, RtError> {
        let a = DeviceCsr::<T>::upload(gpu, csr)?;
        let copies = opts.copies_for(csr.compulsory_bytes(T::TYPE.size()), gpu.l2_bytes() as u64);
        let mut rng = ChaCha8Rng::seed_from_u64(Self::SEED);
        let guard = gpu.outside_capture("Bench::new")?;
        let stream = &*guard;
        let mut xs = Vec::with_capacity(copies);
        let mut ys = Vec::with_capacity(copies);
        for _ in 0..copies {
            let x: Vec<T> = random_x(&mut rng, csr.cols());
            xs.push(gpu.own(stream.clone_htod(&x)?));
            ys.push(gpu.own(stream.alloc_zeros::<T>(csr.rows())?));
        }
        stream.synchronize()?;
        drop(guard);
        Ok(Bench {
            gpu: gpu.clone(),
            csr: csr.clone(),
            a,
            renumbered: [OnceLock::new(), OnceLock::new()],
            state: Mutex::new(BenchState {
                xs,
                ys,
                rng,
                next: 0,
                checks: Vec::new(),
                next_check: 0,
                ep: None,
            }),
        })
    }

    /// Measures the fused entries of `epilogue` from now on: checks compare
    /// the fused dot with the float64 dot of the `y` the kernel wrote, and
    /// every timed launch carries the epilogue's operands (the dot is left
    /// in the accumulators, as in a solver before its update publishes it).
    pub fn with_epilogue(self, epilogue: Epilogue) -> Result<Self, RtError> {
        let guard = self.gpu.outside_capture("Bench::with_epilogue")?;
        let stream = &*guard;
        {
            let mut st = self.lock();
            let w: Vec<T> = random_x(&mut st.rng, self.csr.rows());
            let y0: Vec<T> = random_x(&mut st.rng, self.csr.rows());
            st.ep = Some(BenchEpilogue {
                epilogue,
                coefs: self.gpu.own(stream.clone_htod(&[1.0, 0.0, 0.0, 0.0])?),
                check_coefs: self.gpu.own(stream.clone_htod(&CHECK_COEFS)?),
                w_host: w.iter().map(|v| v.to_f64()).collect(),
                w: self.gpu.own(stream.clone_htod(&w)?),
                y0,
                dot: self
                    .gpu
                    .own(stream.alloc_zeros::<f64>(crate::scalar::SCALAR_LEN)?),
            });
        }
        drop(guard);
        Ok(self)
    }

    /// The epilogue this bench measures, if any.
    pub fn epilogue(&self) -> Option<Epilogue> {
        self.lock().ep.as_ref().map(|e| e.epilogue)
    }

    /// The host matrix.
    pub fn csr(&self) -> &Csr {
        &self.csr
    }

    /// The uploaded matrix.
    pub fn device_csr(&self) -> &DeviceCsr<T> {
        &self.a
    }

    /// The uploaded matrix in the numbering of `reorder` (uploaded, with
    /// every layout it qualifies for, at the first call); an error for a
    /// renumbering of a rectangular matrix. Variants with that numbering are
    /// checked and timed on it, the permutations of `x` and `y` inside.
    pub fn device_csr_for(&self, reorder: Reorder) -> Result<&DeviceCsr<T>, RtError> {
        let slot = match reorder {
            Reorder::None => return Ok(&self.a),
            Reorder::Rcm => &self.renumbered[0],
            Reorder::Degree => &self.renumbered[1],
        };
        let m = slot.get_or_init(|| {
            let layouts = Layouts {
                reorder,
                ..Layouts::ALL
            };
            match DeviceCsr::<T>::upload_with(&self.gpu, &self.csr, layouts) {
                Ok(m) if m.renumbering() == reorder => Ok(m),
                Ok(_) => Err(Arc::new(RenumberedError::NotSquare {
                    rows: self.csr.rows(),
                    cols: self.csr.cols(),
                })),
                Err(e) => Err(Arc::new(RenumberedError::Upload(e))),
            }
        });
        m.as_ref().map_err(|e| RtError::Renumbered(Arc::clone(e)))
    }

    /// Number of rotated `x`/`y` copies.
    pub fn copies(&self) -> usize {
        self.lock().xs.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BenchState<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `func` once on the next of [`CHECK_INPUTS`] seeded random inputs
    /// `x` (different from the previous check's) with `y` poisoned with NaN and
    /// returns the largest per-row relative error against [`Csr::spmv_f64`]
    /// of `x` rounded to `T` (see [`row_errors`]; compare with [`tolerance`]).
    /// With an epilogue ([`Bench::with_epilogue`]): an axpby entry runs with
    /// [`CHECK_COEFS`], `y` starting at seeded random values (an unwritten
    /// row keeps them and fails) and the scalar's published value at
    /// [`CHECK_DOT0`], against the float64 `alpha A x + beta y + gamma +
    /// gamma_dot dot`; a fused dot more than 1e-9 off the float64 dot of the
    /// `y` it wrote (relative to the sum of the terms' magnitudes) is an
    /// [`RtError::FusedScalar`].
    ///
    /// # Safety
    /// `func` must be a kernel of the SpMV ABI for `T` generated for
    /// `variant` (see [`launch_variant`](crate::launch_variant)), the fused
    /// entry of this bench's epilogue when it has one.
    pub unsafe fn check(&self, func: &CudaFunction, variant: &Variant) -> Result<f64, RtError> {
        let mut st = self.lock();
        let st = &mut *st;
        let guard = self.gpu.outside_capture("Bench::check")?;
        let stream = &*guard;
        if st.checks.len() < CHECK_INPUTS {
            let x: Vec<T> = random_x(&mut st.rng, self.csr.cols());
            let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
            st.checks.push(CheckInput {
                ax: self.csr.spmv_f64(&x64)?,
                magnitude: row_magnitudes(&self.csr, &x64),
                x,
            });
        }
        let slot = st.next_check % st.checks.len();
        st.next_check = st.next_check.wrapping_add(1);
        let input = &st.checks[slot];
        let axpby = st.ep.as_ref().filter(|e| e.epilogue.has_axpby());
        let (reference, magnitude) = match axpby {
            Some(e) => {
                let y0: Vec<f64> = e.y0.iter().map(|v| v.to_f64()).collect();
                axpby_reference(&input.ax, &input.magnitude, CHECK_COEFS, &y0, CHECK_DOT0)
            }
            None => (input.ax.clone(), input.magnitude.clone()),
        };
        let start_y = match axpby {
            Some(e) => e.y0.clone(),
            None => vec![T::from_f64(f64::NAN); self.csr.rows()],
        };
        let x = input.x.clone();
        stream.memcpy_htod(&x, &mut *st.xs[0])?;
        stream.memcpy_htod(&start_y, &mut *st.ys[0])?;
        if let Some(ep) = &mut st.ep {
            let mut dot0 = vec![0.0; crate::scalar::SCALAR_LEN];
            dot0[0] = CHECK_DOT0;
            stream.memcpy_htod(&dot0, &mut *ep.dot)?;
        }
        let ep = st.ep.as_ref().map(|e| e.launch(true));
        crate::renumber::launch(
            &self.gpu,
            (func, variant),
            self.device_csr_for(variant.reorder)?,
            Numbering::User,
            &st.xs[0],
            &mut st.ys[0],
            ep,
        )?;
        let y = stream.clone_dtoh(&*st.ys[0])?;
        let y64: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
        let err = row_errors(&y64, &reference, &magnitude).max;
        if let Some(e) = st.ep.as_ref().filter(|e| e.epilogue.has_dot()) {
            let buf = stream.clone_dtoh(&*e.dot)?;
            check_fused_dot(&buf, &y64, &e.w_host)?;
        }
        Ok(err)
    }

    /// Checks `func`, then times it with [`time_launches`]: `opts.warmup`
    /// untimed launches, then up to `opts.reps` samples, each one launch (or,
    /// for launches under [`SHORT_LAUNCH_US`], one replay of a CUDA graph of
    /// a group of launches) between its own pair of CUDA events (rotating the `x`/`y`
    /// copies; the `y` memset of variants that need a zeroed `y` is inside
    /// the timed region), stopping early once `opts.max_seconds` have passed.
    ///
    /// A wrong result or a recoverable driver error gives a measurement with
    /// `correct: false` and `error` set; only faults that destroy the CUDA
    /// context ([`RtError::is_context_fatal`]) are returned as `Err`.
    ///
    /// Short launches are timed as graph replays (GPU time without the CPU
    /// launch overhead); [`Bench::time_back_to_back_us`] gives the cost of
    /// calling in a loop.
    ///
    /// A renumbered variant ([`Variant::reorder`]) is checked and timed on
    /// the renumbered upload ([`Bench::device_csr_for`]): plain launches with
    /// the device permutations of `x` and `y` inside the timing (transparent
    /// use); fused launches ([`Bench::with_epilogue`]: the entries iterative
    /// methods call, in permuted space) checked with them and timed without.
    ///
    /// # Safety
    /// As [`Bench::check`].
    pub unsafe fn measure(
        &self,
        func: &CudaFunction,
        variant: &Variant,
        opts: &MeasureOptions,
    ) -> Result<Measurement, RtError> {
        // SAFETY: forwarded from the caller.
        let err = match unsafe { self.check(func, variant) } {
            Ok(e) => e,
            Err(e) if e.is_context_fatal() => return Err(e),
            Err(e) => {
                return Ok(Measurement::failed(
                    *variant,
                    T::TYPE,
                    f64::INFINITY,
                    format!("check failed: {e}"),
                ));
            }
        };
        if let Some(failed) = out_of_tolerance(variant, T::TYPE, err) {
            return Ok(failed);
        }
        match self.time_events(func, variant, opts) {
            Ok(times_us) => {
                let Some(s) = stats(&times_us) else {
                    return Ok(Measurement::failed(
                        *variant,
                        T::TYPE,
                        err,
                        "no timed launch completed".to_string(),
                    ));
                };
                let bytes = self.csr.compulsory_bytes(T::TYPE.size()) as f64;
                Ok(Measurement {
                    variant: *variant,
                    value: T::TYPE,
                    correct: true,
                    rel_err: err,
                    median_us: s.median,
                    p10_us: s.p10,
                    p90_us: s.p90,
                    gbs: bytes / (s.median * 1e3),
                    reps: times_us.len() as u32,
                    error: None,
                })
            }
            Err(e) if e.is_context_fatal() => Err(e),
            Err(e) => Ok(Measurement::failed(
                *variant,
                T::TYPE,
                err,
                format!("timing failed: {e}"),
            )),
        }
    }

    /// Launches `func` on the next rotated copy (asynchronous).
    fn launch_next(
        &self,
        st: &mut BenchState<T>,
        func: &CudaFunction,
        variant: &Variant,
    ) -> Result<(), RtError> {
        let i = st.next % st.xs.len();
        st.next = st.next.wrapping_add(1);
        // Only reached from the unsafe timing entry points, whose callers
        // vouch for `func`; the buffers are this Bench's own.
        let ep = st.ep.as_ref().map(|e| e.launch(false));
        // A fused entry serves iterative methods, which keep their vectors
        // in the renumbered order for the whole solve: timed without the
        // permutations (checked with them, on the same kernel and matrix).
        let numbering = if ep.is_some() {
            Numbering::Internal
        } else {
            Numbering::User
        };
        crate::renumber::launch(
            &self.gpu,
            (func, variant),
            self.device_csr_for(variant.reorder)?,
            numbering,
            &st.xs[i],
            &mut st.ys[i],
            ep,
        )
    }

    /// Warm-up plus per-launch event timing; microseconds per launch.
    fn time_events(
        &self,
        func: &CudaFunction,
        variant: &Variant,
        opts: &MeasureOptions,
    ) -> Result<Vec<f64>, RtError> {
        let mut st = self.lock();
        let st = &mut *st;
        time_launches(
            &self.gpu,
            &mut || self.launch_next(st, func, variant),
            opts.warmup,
            opts.reps,
            opts.max_seconds,
        )
    }

    /// Runs `body` with a closure that launches `func` once, asynchronously,
    /// on the next rotated `x`/`y` copy (as the timing does: `y` memsets
    /// where needed, a renumbered variant with its permutations): for
    /// measurements of other quantities than time (energy). `body` must not
    /// call this Bench (it holds the Bench's state).
    ///
    /// # Safety
    /// As [`Bench::check`].
    pub unsafe fn with_launcher<R>(
        &self,
        func: &CudaFunction,
        variant: &Variant,
        body: impl FnOnce(&mut dyn FnMut() -> Result<(), RtError>) -> R,
    ) -> R {
        let mut st = self.lock();
        let st = &mut *st;
        body(&mut || self.launch_next(st, func, variant))
    }

    /// Microseconds per SpMV of `n` launches queued back to back between two
    /// events (rotating copies; after one untimed round). Includes the `y`
    /// memsets of variants that need them and the gaps between launches.
    ///
    /// # Safety
    /// As [`Bench::check`].
    pub unsafe fn time_back_to_back_us(
        &self,
        func: &CudaFunction,
        variant: &Variant,
        n: usize,
    ) -> Result<f64, RtError> {
        let mut st = self.lock();
        let st = &mut *st;
        time_back_to_back(&self.gpu, &mut || self.launch_next(st, func, variant), n)
    }

    /// Microseconds per SpMV when `launches_per_graph` launches (rotating
    /// copies, including `y` memsets where needed) are captured into one CUDA
    /// graph and the graph is replayed: the steady-state cost without CPU
    /// launch overhead. Replays 10 times after one untimed replay.
    ///
    /// # Safety
    /// As [`Bench::check`].
    pub unsafe fn time_graph_us(
        &self,
        func: &CudaFunction,
        variant: &Variant,
        launches_per_graph: usize,
    ) -> Result<f64, RtError> {
        let mut st = self.lock();
        let st = &mut *st;
        time_graph(
            &self.gpu,
            &mut || self.launch_next(st, func, variant),
            launches_per_graph,
        )
    }
}

/// Warm-up plus event timing of any asynchronous `launch` on
/// [`Gpu::stream`]: `warmup` untimed launches, then up to `reps` samples,
/// queued in batches between host synchronizations and stopping once
/// `max_seconds` have passed. Microseconds per launch, one entry per sample.
///
/// A sample is one launch between its own pair of CUDA events, except for
/// launches shorter than [`SHORT_LAUNCH_US`] (probed after the warm-up, see
/// [`launch_group`]; a launch of several kernels that the host cannot queue
/// as fast as the GPU runs them is probed as graph replays too):
/// then a group of launches (enough for about 100 µs, at most 32) is captured
/// into a CUDA graph and one event pair brackets each replay; the sample is
/// the replay's time divided by the group size: the GPU cost per call without
/// the CPU launch overhead, which is the same for every kernel and would
/// otherwise dominate. Launches that cannot be captured are timed as a group
/// queued back to back instead. [`Bench`] and the cuSPARSE baseline share
/// this function so both sides are timed the same way.
pub fn time_launches<E: From<RtError>>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    warmup: u32,
    reps: u32,
    max_seconds: f64,
) -> Result<Vec<f64>, E> {
    let guard = gpu.outside_capture("time_launches")?;
    let stream = &*guard;
    let t0 = Instant::now();
    for i in 0..warmup {
        launch()?;
        if i == 0 {
            // One synchronized launch bounds the cost of the others.
            stream.synchronize().map_err(RtError::from)?;
            if t0.elapsed().as_secs_f64() * warmup as f64 > max_seconds {
                break;
            }
        }
    }
    stream.synchronize().map_err(RtError::from)?;

    let group = launch_group(gpu, launch)?;
    let reps = reps.max(1) as usize;
    if group > 1 {
        // Short launches: replay the group as one CUDA graph, so that the
        // sample is GPU time and not the CPU's launch rate (which is the same
        // for every variant and would hide their differences). Launches that
        // cannot be captured fall back to timing the group back to back.
        match time_graph_samples(gpu, launch, group, reps, max_seconds) {
            Ok(times) if !times.is_empty() => return Ok(times),
            Ok(_) => {}
            Err(e) => {
                let e: RtError = e;
                if e.is_context_fatal() {
                    return Err(e.into());
                }
            }
        }
        stream.synchronize().map_err(RtError::from)?;
    }
    let pairs = reps.min(MAX_BATCH);
    let (starts, stops) = event_pairs(gpu, pairs)?;
    let t0 = Instant::now();
    let mut times = Vec::with_capacity(reps);
    let mut batch = 1;
    while times.len() < reps {
        let n = batch.min(reps - times.len());
        for k in 0..n {
            starts[k].record(stream).map_err(RtError::from)?;
            for _ in 0..group {
                launch()?;
            }
            stops[k].record(stream).map_err(RtError::from)?;
        }
        for k in 0..n {
            let ms = starts[k].elapsed_ms(&stops[k]).map_err(RtError::from)?;
            times.push(ms as f64 * 1e3 / group as f64);
        }
        let spent = t0.elapsed().as_secs_f64();
        if spent > max_seconds {
            break;
        }
        let per_launch = spent / times.len() as f64;
        let fit = ((max_seconds - spent) / per_launch.max(1e-9)).floor();
        batch = (fit as usize).clamp(1, pairs);
    }
    Ok(times)
}

/// `n` start and `n` stop timing events.
fn event_pairs(gpu: &Gpu, n: usize) -> Result<(Vec<CudaEvent>, Vec<CudaEvent>), RtError> {
    let make = || {
        (0..n)
            .map(|_| timing_event(gpu))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok((make()?, make()?))
}

/// Captures `n` launches into a CUDA graph ([`crate::graph`]'s capture:
/// other threads are refused meanwhile, the launches' operands pinned): the
/// outcome of the launches (the first error stops the capture and discards
/// it) and the graph.
fn capture<E>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    n: usize,
) -> Result<Result<Option<Graph>, E>, RtError> {
    let session = Session::begin(gpu, "a timing capture")?;
    for _ in 0..n {
        if let Err(e) = launch() {
            drop(session);
            return Ok(Err(e));
        }
    }
    Ok(Ok(session.into_graph()?))
}

/// Up to `reps` samples (µs per launch) of a CUDA graph of `group` captured
/// launches, each replay between its own pair of events, after one untimed
/// replay; stops once `max_seconds` have passed.
fn time_graph_samples<E: From<RtError>>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    group: usize,
    reps: usize,
    max_seconds: f64,
) -> Result<Vec<f64>, RtError> {
    let Ok(Some(graph)) = capture(gpu, launch, group)? else {
        return Ok(Vec::new());
    };
    let guard = gpu.outside_capture("time_launches")?;
    let stream = &*guard;
    graph.launch(gpu)?;
    stream.synchronize()?;
    let pairs = reps.min(MAX_BATCH);
    let (starts, stops) = event_pairs(gpu, pairs)?;
    let t0 = Instant::now();
    let mut times = Vec::with_capacity(reps);
    while times.len() < reps {
        let n = pairs.min(reps - times.len());
        for k in 0..n {
            starts[k].record(stream)?;
            graph.launch(gpu)?;
            stops[k].record(stream)?;
        }
        for k in 0..n {
            let ms = starts[k].elapsed_ms(&stops[k])?;
            times.push(ms as f64 * 1e3 / group as f64);
        }
        if t0.elapsed().as_secs_f64() > max_seconds {
            break;
        }
    }
    Ok(times)
}

/// Launches per timed sample: 1, or for launches shorter than
/// [`SHORT_LAUNCH_US`] enough back-to-back launches for about
/// [`GROUP_TARGET_US`], at most [`MAX_GROUP`].
///
/// The probe is one launch between two events; when that reads under
/// [`REPROBE_US`], [`PROBE_BATCH`] launches queued back to back are timed
/// instead and their time per launch decides. One launch on an idle GPU
/// also times the host queueing its kernels (a few µs each): a short launch
/// of several kernels then read 15-26 µs from one probe to the next and
/// crossed [`SHORT_LAUNCH_US`] at random, so the same variant was timed as
/// graph replays (GPU time) in one measurement and as single launches
/// (host-bound, up to 3x slower) in the next. Queued back to back, the GPU
/// runs one launch while the host queues the next.
///
/// A launch of several kernels can be bound by the host even queued back to
/// back (each kernel costs the host a few µs to queue): a column-major SpMM
/// through the transposed path queues five, and its batched probe read
/// 20-27 µs while its GPU time was 10 µs, so one measurement timed it as
/// graph replays and the next as host-bound single launches. A batched
/// probe at or over [`SHORT_LAUNCH_US`] (and under [`REPROBE_US`]) is
/// therefore probed once more as [`PROBE_BATCH`] replays of a graph of one
/// launch (one host call per replay whatever the kernel count), and the
/// smaller reading decides ([`probed_us`]).
fn launch_group<E: From<RtError>>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
) -> Result<usize, E> {
    let mut probe_us = probe(gpu, launch, 1)?;
    if probe_us < REPROBE_US {
        probe_us = probe(gpu, launch, PROBE_BATCH)?;
        if probe_us >= SHORT_LAUNCH_US {
            let graph_us = match probe_graph(gpu, launch) {
                Ok(g) => g,
                Err(e) if e.is_context_fatal() => return Err(e.into()),
                Err(_) => None, // timed without a graph, as before
            };
            probe_us = probed_us(probe_us, graph_us);
        }
    }
    Ok(group_size(probe_us))
}

/// The reading that decides the group: the batched direct probe, or the
/// graph probe where one was taken and read less (a launch that could not
/// be captured has none).
fn probed_us(direct_us: f64, graph_us: Option<f64>) -> f64 {
    match graph_us {
        Some(g) if g.is_finite() && g > 0.0 && g < direct_us => g,
        _ => direct_us,
    }
}

/// Microseconds per launch of [`PROBE_BATCH`] back-to-back replays of a
/// graph of one captured launch, after one untimed replay; `None` when the
/// launch cannot be captured.
fn probe_graph<E>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
) -> Result<Option<f64>, RtError> {
    let graph = match capture(gpu, launch, 1)? {
        Ok(Some(graph)) => graph,
        Ok(None) | Err(_) => return Ok(None),
    };
    let ms = replays_ms(gpu, &graph, PROBE_BATCH)?;
    Ok(Some(ms * 1e3 / PROBE_BATCH as f64))
}

/// Milliseconds of `replays` back-to-back replays of `graph` between one
/// pair of events, after one untimed replay.
fn replays_ms(gpu: &Gpu, graph: &Graph, replays: usize) -> Result<f64, RtError> {
    let guard = gpu.outside_capture("a graph's timed replays")?;
    let stream = &*guard;
    graph.launch(gpu)?;
    stream.synchronize()?;
    let start = timing_event(gpu)?;
    let stop = timing_event(gpu)?;
    start.record(stream)?;
    for _ in 0..replays {
        graph.launch(gpu)?;
    }
    stop.record(stream)?;
    Ok(start.elapsed_ms(&stop)? as f64)
}

/// A single-launch probe under this many µs is probed again as a batch
/// (see [`launch_group`]).
const REPROBE_US: f64 = 4.0 * SHORT_LAUNCH_US;

/// Launches in the batched probe of [`launch_group`].
const PROBE_BATCH: usize = 8;

/// Microseconds per launch of `n` launches queued back to back between one
/// pair of events.
fn probe<E: From<RtError>>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    n: usize,
) -> Result<f64, E> {
    let guard = gpu.outside_capture("time_launches")?;
    let stream = &*guard;
    let start = timing_event(gpu)?;
    let stop = timing_event(gpu)?;
    start.record(stream).map_err(RtError::from)?;
    for _ in 0..n {
        launch()?;
    }
    stop.record(stream).map_err(RtError::from)?;
    let ms = start.elapsed_ms(&stop).map_err(RtError::from)?;
    Ok(ms as f64 * 1e3 / n as f64)
}

/// Group size for a launch that took `probe_us` alone (see [`time_launches`]).
pub fn group_size(probe_us: f64) -> usize {
    if !(probe_us.is_finite() && probe_us > 0.0) || probe_us >= SHORT_LAUNCH_US {
        return 1;
    }
    ((GROUP_TARGET_US / probe_us).ceil() as usize).clamp(2, MAX_GROUP)
}

/// Microseconds per call of `n` launches queued back to back between two
/// events, after one untimed round of up to 64 launches.
pub fn time_back_to_back<E: From<RtError>>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    n: usize,
) -> Result<f64, E> {
    let n = n.max(1);
    let guard = gpu.outside_capture("time_back_to_back")?;
    let stream = &*guard;
    for _ in 0..n.min(MAX_BATCH) {
        launch()?;
    }
    let start = timing_event(gpu)?;
    let stop = timing_event(gpu)?;
    start.record(stream).map_err(RtError::from)?;
    for _ in 0..n {
        launch()?;
    }
    stop.record(stream).map_err(RtError::from)?;
    let ms = start.elapsed_ms(&stop).map_err(RtError::from)?;
    Ok(ms as f64 * 1e3 / n as f64)
}

/// Microseconds per call when `n` launches are captured into one CUDA graph
/// and the graph is replayed 10 times (after one untimed replay).
pub fn time_graph<E: From<RtError>>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    n: usize,
) -> Result<f64, E> {
    const REPLAYS: usize = 10;
    let n = n.max(1);
    let graph = capture(gpu, launch, n)??
        .ok_or_else(|| RtError::Compile("CUDA graph capture produced no graph".to_string()))?;
    let ms = replays_ms(gpu, &graph, REPLAYS)?;
    Ok(ms * 1e3 / (REPLAYS * n) as f64)
}

/// The fused dot left in a scalar's accumulators (`buf`, [`SCALAR_LEN`](crate::scalar::SCALAR_LEN)
/// doubles) against the float64 `w . y` of the `y` the kernel wrote: more
/// than 1e-9 off, relative to the sum of the terms' magnitudes, is an
/// [`RtError::FusedScalar`].
fn check_fused_dot(buf: &[f64], y: &[f64], w: &[f64]) -> Result<(), RtError> {
    let got: f64 = (0..crate::scalar::SLOTS)
        .map(|k| {
            buf.get(crate::scalar::SLOT_STRIDE * (k + 1))
                .copied()
                .unwrap_or(f64::NAN)
        })
        .sum();
    let want: f64 = y.iter().zip(w).map(|(a, b)| a * b).sum();
    let scale: f64 = y.iter().zip(w).map(|(a, b)| (a * b).abs()).sum();
    let dot_err = (got - want).abs() / scale.max(f64::MIN_POSITIVE);
    if dot_err.is_nan() || dot_err > 1e-9 {
        return Err(RtError::FusedScalar {
            rel_err: dot_err,
            got,
            want,
        });
    }
    Ok(())
}

/// `n` random values in [-1, 1), rounded to `T`.
pub(crate) fn random_x<T: Scalar>(rng: &mut ChaCha8Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect()
}

#[cfg(test)]
mod tests;
