//! cuSPARSE's side of the benchmark: every CSR algorithm checked against
//! the float64 reference, then timed with the same primitives as ours.

use super::*;

/// Checks `alg` on copy 0 with a NaN-poisoned `y` (and, if that fails, with a
/// zeroed `y`, noted). Returns the relative error and a note.
fn cusparse_check<T: Scalar>(
    cs: &mut CusparseSpmv<'_, T>,
    alg: Alg,
    reference: &[f64],
) -> Result<(f64, Option<String>)> {
    let rows = reference.len();
    let run = |cs: &mut CusparseSpmv<'_, T>, fill: f64| -> Result<f64> {
        cs.set_y0(&vec![T::from_f64(fill); rows])?;
        cs.launch(alg, 0)?;
        let y: Vec<f64> = cs.read_y0()?.iter().map(|v| v.to_f64()).collect();
        Ok(rel_err(&y, reference))
    };
    let err = run(cs, f64::NAN)?;
    if err <= tolerance(T::TYPE) {
        return Ok((err, None));
    }
    let err0 = run(cs, 0.0)?;
    if err0 <= tolerance(T::TYPE) {
        return Ok((
            err0,
            Some(format!(
                "{} reads y although beta = 0 (NaN-poisoned y gave {err:.2e}); checked with a zeroed y",
                alg.name()
            )),
        ));
    }
    Ok((err, None))
}

/// Times `alg` (warm-up 5, `ctx.reps` samples, at most 2 s): median
/// microseconds and GB/s for `bytes` compulsory bytes; `None` without samples.
pub(super) fn time_cusparse<T: Scalar>(
    ctx: &Ctx,
    cs: &mut CusparseSpmv<'_, T>,
    alg: Alg,
    bytes: f64,
) -> Result<Option<(f64, f64)>> {
    let times = time_launches::<anyhow::Error>(
        ctx.tuner.gpu(),
        &mut || cs.launch_next(alg),
        5,
        ctx.reps,
        2.0,
    )?;
    Ok(median(&times).map(|m| (m, bytes / (m * 1e3))))
}

/// Every cuSPARSE CSR algorithm: check, time; the best goes into `row`.
/// Returns the best algorithm (for latency measurements).
pub(super) fn run_cusparse<T: Scalar>(
    ctx: &Ctx,
    cs: &mut CusparseSpmv<'_, T>,
    csr: &Csr,
    reference: &[f64],
    row: &mut Row,
) -> Result<Option<Alg>> {
    let bytes = csr.compulsory_bytes(T::TYPE.size()) as f64;
    let tol = tolerance(T::TYPE);
    let mut best: Option<(Alg, f64)> = None;
    for alg in cusparse::ALGS {
        let mut res = AlgResult {
            alg: alg.name().to_string(),
            ..AlgResult::default()
        };
        match cs
            .prepare(alg)
            .and_then(|_| cusparse_check(cs, alg, reference))
        {
            Err(e) => res.error = Some(format!("{e:#}")),
            Ok((err, note)) => {
                res.rel_err = Some(err);
                if let Some(n) = note {
                    row.notes.push(n.clone());
                    res.error = Some(n);
                }
                if err > tol {
                    res.error = Some(format!(
                        "relative error {err:.3e} above tolerance {tol:.0e}"
                    ));
                } else {
                    res.correct = true;
                    if let Some((m, g)) = time_cusparse(ctx, cs, alg, bytes)? {
                        res.median_us = Some(m);
                        res.gbs = Some(g);
                        if best.is_none_or(|b| g > b.1) {
                            best = Some((alg, g));
                        }
                    }
                }
            }
        }
        row.cusparse_algs.push(res);
    }
    match best {
        Some((alg, g)) => {
            row.cusparse_gbs = Some(g);
            row.cusparse_alg = Some(alg.name().to_string());
        }
        None => {
            row.cusparse_error = Some(
                row.cusparse_algs
                    .iter()
                    .map(|a| {
                        format!(
                            "{}: {}",
                            short_alg(&a.alg),
                            a.error.as_deref().unwrap_or("not timed")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
    }
    Ok(best.map(|b| b.0))
}
