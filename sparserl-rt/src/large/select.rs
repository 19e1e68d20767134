//! Choosing a large-path kernel on the full matrix (`tools`): every
//! variant checked against a float64 reference on sampled rows before it is
//! timed; a cost model over the row-length statistics ranks the space; a
//! short measured run of the first [`Options::measured`] ranked variants
//! picks the kernel.

use super::device::DeviceLargeCsr;
use super::host::{LargeCsr, Offset, RowStats, parallel_chunks};
use super::kernels::LargeVariant;
use super::{LargeError, ops};
use crate::device::{DeviceVec, Gpu, Scalar};
use crate::measure::{stats, time_launches, tolerance};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Uniformly drawn rows checked per variant (plus the longest rows and the
/// first and last row).
pub const SAMPLED_ROWS: usize = 4096;

/// Longest rows always checked.
pub const LONGEST_ROWS: usize = 8;

/// The rows a check compares, with their float64 reference and rounding
/// scale, for one host `x`.
#[derive(Debug, Clone)]
pub struct Reference {
    /// `(row, sum_j a_rj x_j, sum_j |a_rj x_j|)`.
    pub rows: Vec<(usize, f64, f64)>,
}

impl Reference {
    /// [`SAMPLED_ROWS`] uniform rows (seeded), the [`LONGEST_ROWS`] longest,
    /// the first and the last, deduplicated, with their float64 products
    /// (computed in parallel).
    pub fn sample<O: Offset, T: Scalar>(
        a: &LargeCsr<'_, O, T>,
        x: &[T],
        seed: u64,
    ) -> Result<Reference, LargeError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rows: Vec<usize> = (0..SAMPLED_ROWS.min(a.rows()))
            .map(|_| rng.random_range(0..a.rows()))
            .collect();
        rows.extend(longest_rows(a, LONGEST_ROWS));
        rows.extend([0, a.rows() - 1]);
        rows.sort_unstable();
        rows.dedup();
        let parts = parallel_chunks(rows.len(), |lo, hi| {
            rows[lo..hi]
                .iter()
                .map(|&r| a.row_dot_f64(r, x).map(|(s, m)| (r, s, m)))
                .collect::<Result<Vec<_>, _>>()
        });
        let mut out = Vec::with_capacity(rows.len());
        for p in parts {
            out.extend(p?);
        }
        Ok(Reference { rows: out })
    }
}

/// The `k` longest rows (ties to the lower index), found in parallel.
fn longest_rows<O: Offset, T: Scalar>(a: &LargeCsr<'_, O, T>, k: usize) -> Vec<usize> {
    let ip = a.indptr();
    let top = |lo: usize, hi: usize| {
        let mut best: Vec<(u64, usize)> = Vec::with_capacity(k + 1);
        for r in lo..hi {
            let len = ip[r + 1].get() - ip[r].get();
            if best.len() < k || len > best[best.len() - 1].0 {
                let at = best.partition_point(|&(l, _)| l >= len);
                best.insert(at, (len, r));
                best.truncate(k);
            }
        }
        best
    };
    let mut all: Vec<(u64, usize)> = parallel_chunks(a.rows(), top).concat();
    all.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    all.into_iter().take(k).map(|(_, r)| r).collect()
}

/// The outcome of one variant's check.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    /// Rows compared with the float64 reference.
    pub sampled_rows: usize,
    /// Largest `|y_r - ref_r| / max(|ref_r|, sum_j |a_rj x_j|)` over them
    /// (an all-zero row must be exactly zero).
    pub max_rel_err: f64,
    /// Rows of the whole `y` that are not finite (the NaN poison left, or
    /// an overflow).
    pub nonfinite_rows: u64,
    /// Whether the variant passed: no non-finite row, every sampled row
    /// within [`tolerance`] of the value type.
    pub passed: bool,
}

/// Poisons `y` with NaN, runs `variant`, reads `y` back and compares it
/// with `reference` (sampled rows) and for finiteness (every row).
pub fn check<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceLargeCsr<T>,
    variant: LargeVariant,
    x: &DeviceVec<T>,
    y: &mut DeviceVec<T>,
    reference: &Reference,
) -> Result<Check, LargeError> {
    ops::fill(gpu, T::from_f64(f64::NAN), y)?;
    a.spmv(gpu, variant, x, y)?;
    Ok(compare(&y.to_host(gpu)?, reference))
}

/// A downloaded `y` against `reference`: every row finite, every sampled
/// row within [`tolerance`] of `T` (the rule of [`check`]; also for another
/// library's output).
pub fn compare<T: Scalar>(host: &[T], reference: &Reference) -> Check {
    let nonfinite: u64 = parallel_chunks(host.len(), |lo, hi| {
        host[lo..hi]
            .iter()
            .filter(|v| !v.to_f64().is_finite())
            .count() as u64
    })
    .into_iter()
    .sum();
    let mut max_rel_err = 0.0f64;
    for &(r, want, scale) in &reference.rows {
        let Some(got) = host.get(r).map(|v| v.to_f64()) else {
            max_rel_err = f64::INFINITY;
            continue;
        };
        let denom = want.abs().max(scale);
        let err = if denom == 0.0 {
            if got == 0.0 { 0.0 } else { f64::INFINITY }
        } else {
            (got - want).abs() / denom
        };
        max_rel_err = max_rel_err.max(if err.is_nan() { f64::INFINITY } else { err });
    }
    Check {
        sampled_rows: reference.rows.len(),
        max_rel_err,
        nonfinite_rows: nonfinite,
        passed: nonfinite == 0 && max_rel_err <= tolerance(T::TYPE),
    }
}

/// Measured microseconds per call: median, 10th and 90th percentile, and
/// the number of samples.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// Median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Samples taken.
    pub samples: usize,
}

/// Microseconds per call of `variant` (a merge-path call includes its
/// clearing of `y`): `opts.warmup` untimed calls, then up to `opts.reps`
/// samples within `opts.max_seconds` ([`time_launches`], as the 32-bit benchmark times),
/// rotating over the given `x` / `y` copies.
pub fn time<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceLargeCsr<T>,
    variant: LargeVariant,
    xs: &[DeviceVec<T>],
    ys: &mut [DeviceVec<T>],
    opts: &Options,
) -> Result<Option<Timing>, LargeError> {
    if xs.is_empty() || xs.len() != ys.len() {
        return Err(LargeError::DimensionMismatch {
            what: "y copies (one per x copy, at least one)",
            expected: xs.len().max(1),
            found: ys.len(),
        });
    }
    let mut next = 0usize;
    let mut launch = || -> Result<(), LargeError> {
        let i = next % xs.len();
        next += 1;
        a.spmv(gpu, variant, &xs[i], &mut ys[i])
    };
    let times =
        time_launches::<LargeError>(gpu, &mut launch, opts.warmup, opts.reps, opts.max_seconds)?;
    gpu.synchronize()?;
    Ok(stats(&times).map(|s| Timing {
        median: s.median,
        p10: s.p10,
        p90: s.p90,
        samples: times.len(),
    }))
}

/// The cost model's prediction for one variant, in microseconds: the
/// compulsory bytes at `copy_gbs` divided by an efficiency, or the serial
/// walk of the longest row by one group when that is longer.
///
/// - group of `G` lanes: lane use `mean / (G ceil(mean / G))` (idle lanes
///   lower memory parallelism: efficiency `0.4 + 0.6 use`), times 0.8 for
///   one thread per row (lanes read different rows: poorer coalescing);
///   the longest row takes `max / G` dependent steps of
///   [`STEP_US`] (two loads in flight per lane).
/// - merge path: efficiency 0.8 (per-thread searches, atomics at cut
///   rows) plus clearing `y`, whatever the row lengths.
/// - nonzero split: efficiency 0.85 (no row-end items, one search per
///   warp for the window, one atomic per row and warp) plus clearing `y`,
///   whatever the row lengths; a prior, not fitted: the measured run on
///   the full matrix decides.
/// - stream: efficiency 0.9 (coalesced tiles, two searches per block,
///   atomics only at tile edges) plus clearing `y`; a prior as well.
pub fn predict_us(
    v: LargeVariant,
    s: &RowStats,
    bytes: u64,
    value_bytes: u64,
    copy_gbs: f64,
) -> f64 {
    let stream_us = bytes as f64 / (copy_gbs.max(1.0) * 1e3);
    match v {
        LargeVariant::Group { lanes } => {
            let g = lanes as f64;
            let use_ = if s.mean <= 0.0 {
                1.0 / g
            } else {
                s.mean / (g * (s.mean / g).ceil())
            };
            let coalesce = if lanes == 1 { 0.8 } else { 1.0 };
            let eff = (0.4 + 0.6 * use_) * coalesce;
            let walk = s.max as f64 / g * STEP_US;
            (stream_us / eff).max(walk)
        }
        LargeVariant::Merge { .. } => {
            stream_us / 0.8 + (s.rows * value_bytes) as f64 / (copy_gbs.max(1.0) * 1e3)
        }
        LargeVariant::NnzSplit { .. } => {
            stream_us / 0.85 + (s.rows * value_bytes) as f64 / (copy_gbs.max(1.0) * 1e3)
        }
        LargeVariant::Stream { .. } => {
            stream_us / 0.9 + (s.rows * value_bytes) as f64 / (copy_gbs.max(1.0) * 1e3)
        }
    }
}

/// Microseconds per dependent step of one group on a long row (half a
/// DRAM latency: two loads in flight per lane).
pub const STEP_US: f64 = 0.3;

/// The space ranked by [`predict_us`], fastest first.
pub fn rank(s: &RowStats, bytes: u64, value_bytes: u64, copy_gbs: f64) -> Vec<(LargeVariant, f64)> {
    let mut r: Vec<_> = LargeVariant::SPACE
        .iter()
        .map(|&v| (v, predict_us(v, s, bytes, value_bytes, copy_gbs)))
        .collect();
    r.sort_by(|a, b| a.1.total_cmp(&b.1));
    r
}

/// Knobs of [`select`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How many of the ranked variants the measured run times (the rest
    /// are only ranked; `LargeVariant::SPACE.len()` times the whole space).
    pub measured: usize,
    /// Untimed calls per variant.
    pub warmup: u32,
    /// Timed calls per variant (at most).
    pub reps: u32,
    /// Time guard per variant, seconds.
    pub max_seconds: f64,
}

/// One variant of a [`Selection`].
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Candidate {
    /// The variant.
    pub variant: LargeVariant,
    /// Its rank by the cost model (0 = predicted fastest).
    pub rank: usize,
    /// Predicted microseconds.
    pub predicted_us: f64,
    /// The check, when it was run (every measured variant first).
    pub check: Option<Check>,
    /// Median measured microseconds (checked variants only).
    pub measured: Option<Timing>,
}

/// What [`select`] found.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Selection {
    /// Every variant in rank order.
    pub candidates: Vec<Candidate>,
    /// The measured fastest among the measured, checked variants (`None`
    /// when none passed).
    pub pick: Option<LargeVariant>,
}

impl Selection {
    /// The median time of `v` when it was measured.
    pub fn median_us(&self, v: LargeVariant) -> Option<f64> {
        self.candidates
            .iter()
            .find(|c| c.variant == v)
            .and_then(|c| c.measured.map(|m| m.median))
    }
    /// The cost model's first choice.
    pub fn model_pick(&self) -> Option<LargeVariant> {
        self.candidates.first().map(|c| c.variant)
    }
    /// The fastest measured variant among the first `k` ranked ones.
    pub fn best_of_first(&self, k: usize) -> Option<(LargeVariant, f64)> {
        self.candidates
            .iter()
            .take(k)
            .filter_map(|c| c.measured.map(|m| (c.variant, m.median)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// Ranks the space for `a` (its statistics, compulsory bytes at
/// `copy_gbs`), then checks and times the first `opts.measured` variants in
/// rank order: a variant that fails its check is never timed. `x` and `y`
/// hold the copies timed in rotation (`x[0]` equal to `x_host`).
#[allow(clippy::too_many_arguments)]
pub fn select<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceLargeCsr<T>,
    reference: &Reference,
    xs: &[DeviceVec<T>],
    ys: &mut [DeviceVec<T>],
    copy_gbs: f64,
    opts: Options,
    mut progress: impl FnMut(&Candidate),
) -> Result<Selection, LargeError> {
    let vbytes = std::mem::size_of::<T>() as u64;
    let bytes = a.device_bytes() as u64 + (a.rows() + a.cols()) as u64 * vbytes;
    let mut candidates: Vec<Candidate> = rank(a.stats(), bytes, vbytes, copy_gbs)
        .into_iter()
        .enumerate()
        .map(|(rank, (variant, predicted_us))| Candidate {
            variant,
            rank,
            predicted_us,
            check: None,
            measured: None,
        })
        .collect();
    if xs.is_empty() || ys.is_empty() {
        return Err(LargeError::DimensionMismatch {
            what: "x / y copies",
            expected: 1,
            found: 0,
        });
    }
    for c in candidates.iter_mut().take(opts.measured) {
        let checked = check(gpu, a, c.variant, &xs[0], &mut ys[0], reference)?;
        c.check = Some(checked);
        if checked.passed {
            c.measured = time(gpu, a, c.variant, xs, ys, &opts)?;
        }
        progress(c);
    }
    let pick = candidates
        .iter()
        .filter_map(|c| c.measured.map(|m| (c.variant, m.median)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|p| p.0);
    Ok(Selection { candidates, pick })
}
