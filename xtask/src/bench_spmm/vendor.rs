//! cuSPARSE's side of `bench spmm` (and of the GCN layer in `bench-app`):
//! every CSR algorithm prepared (buffer, `cusparseSpMM_preprocess`), checked
//! against the float64 reference on a NaN-poisoned `Y`, then timed with the
//! same primitive as ours; the fastest correct one wins.

use super::report::AlgResult;
use super::rowerr::DeviceReference;
use crate::cusparse_spmm::{ALGS, CusparseSpmm, SpmmAlg};
use anyhow::Result;
use sparserl_rt::measure::{stats, time_launches};
use sparserl_rt::{Scalar, tolerance};

/// Checks `alg` on copy 0 with a NaN-poisoned `Y` (and, if that fails, with
/// a zeroed one, noted): the largest per-row relative error and a note.
fn check_alg<T: Scalar>(
    cs: &mut CusparseSpmm<'_, T>,
    alg: SpmmAlg,
    checker: &mut DeviceReference,
) -> Result<(f64, Option<String>)> {
    let (layout, ld) = (cs.layout(), cs.ldy());
    let mut run = |poison: bool| -> Result<f64> {
        cs.fill_y0(poison)?;
        cs.launch(alg, 0)?;
        checker.max_row_rel_err(cs.y0(), layout, ld)
    };
    let err = run(true)?;
    if err <= tolerance(T::TYPE) {
        return Ok((err, None));
    }
    let err0 = run(false)?;
    if err0 <= tolerance(T::TYPE) {
        return Ok((
            err0,
            Some(format!(
                "{} reads Y although beta = 0 (NaN-poisoned Y gave {err:.2e}); checked with a \
                 zeroed Y",
                alg.short()
            )),
        ));
    }
    Ok((err, None))
}

/// Median microseconds of `alg` over rotated copies (warm-up 3, `reps`
/// samples, at most `max_seconds`).
pub fn time_alg<T: Scalar>(
    cs: &mut CusparseSpmm<'_, T>,
    alg: SpmmAlg,
    reps: u32,
    max_seconds: f64,
) -> Result<Option<f64>> {
    let gpu = cs.gpu().clone();
    let times =
        time_launches::<anyhow::Error>(&gpu, &mut || cs.launch_next(alg), 3, reps, max_seconds)?;
    Ok(stats(&times).map(|s| s.median))
}

/// One algorithm: prepare (an error = not offered for this layout / value
/// type: skipped), check, time.
fn try_alg<T: Scalar>(
    cs: &mut CusparseSpmm<'_, T>,
    alg: SpmmAlg,
    checker: &mut DeviceReference,
    reps: u32,
) -> Result<AlgResult> {
    let mut res = AlgResult {
        alg: alg.name().to_string(),
        ..AlgResult::default()
    };
    if let Err(e) = cs.prepare(alg) {
        res.error = Some(format!("skipped, not offered here: {e:#}"));
        return Ok(res);
    }
    res.supported = true;
    res.preprocessed = cs.preprocessed(alg);
    let (err, note) = match check_alg(cs, alg, checker) {
        Ok(c) => c,
        Err(e) => {
            res.error = Some(format!("skipped, refused at launch: {e:#}"));
            return Ok(res);
        }
    };
    res.max_row_rel_err = Some(err).filter(|e| e.is_finite());
    res.error = note;
    let tol = tolerance(T::TYPE);
    if err > tol {
        res.error = Some(format!(
            "per-row relative error {err:.3e} above tolerance {tol:.0e}"
        ));
        return Ok(res);
    }
    res.correct = true;
    res.median_us = time_alg(cs, alg, reps, 1.0)?;
    Ok(res)
}

/// Re-times `alg` [`super::RETIMES`] times: each median in microseconds
/// (none where a re-time gave no sample).
pub fn retime_alg<T: Scalar>(
    cs: &mut CusparseSpmm<'_, T>,
    alg: SpmmAlg,
    reps: u32,
) -> Result<Vec<f64>> {
    let mut times = Vec::new();
    for _ in 0..super::RETIMES {
        if let Some(us) = time_alg(cs, alg, reps, 1.0)? {
            times.push(us);
        }
    }
    Ok(times)
}

/// Every algorithm's outcome, and the fastest correct one with its median
/// microseconds.
pub type Best = (Vec<AlgResult>, Option<(SpmmAlg, f64)>);

/// Every CSR algorithm on `cs`: the results and the fastest correct one
/// with its median microseconds.
pub fn best_alg<T: Scalar>(
    cs: &mut CusparseSpmm<'_, T>,
    checker: &mut DeviceReference,
    reps: u32,
) -> Result<Best> {
    let mut results = Vec::new();
    let mut best: Option<(SpmmAlg, f64)> = None;
    for alg in ALGS {
        let r = try_alg(cs, alg, checker, reps)?;
        if r.correct
            && let Some(us) = r.median_us
            && best.is_none_or(|b| us < b.1)
        {
            best = Some((alg, us));
        }
        results.push(r);
    }
    Ok((results, best))
}
