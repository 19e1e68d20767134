//! Ours on one case: the product's measured SpMM search
//! (`sparserl_build::search::spmm::search_spmm`, the code a build runs)
//! over the space in the product's order (`spmm_search_order`: the records'
//! first 8, the case's own class left out, and the SpMM prior's first 8
//! alternately, then the prior's ranking),
//! measuring through this
//! benchmark's harness ([`CaseSource`]: the in-process specs, the device
//! check against float64 on a NaN-poisoned Y, `time_launches`). The winner
//! is timed once more like cuSPARSE (warm-up 3, `--reps`).

use super::ours::{Built, Inputs, Operands, RuntimeSpmm, check, time};
use super::report::{OursResult, Row};
use super::rowerr::DeviceReference;
use anyhow::Result;
use sparserl_build::search::spmm::{SpmmSearchConfig, SpmmSource, search_spmm};
use sparserl_build::search::{SampleResult, SearchError};
use sparserl_policies::{spmm_prior_for, spmm_search_order};
use sparserl_rt::spmm::SpmmVariant;
use sparserl_rt::{Features, Gpu, RtError, Scalar, tolerance};
use std::time::Instant;

/// The search's view of one case (one sample: the case's matrix).
struct CaseSource<'a, T: Scalar> {
    gpu: &'a Gpu,
    list: &'a [(SpmmVariant, Built)],
    inp: &'a Inputs<'a, T>,
    ops: &'a mut Operands<T>,
    checker: &'a mut DeviceReference,
    bytes: u64,
    /// Every measurement, for the report.
    log: Vec<OursResult>,
}

impl<T: Scalar> CaseSource<'_, T> {
    fn failed(error: String, rel_err: f64) -> SampleResult {
        SampleResult {
            rel_err,
            ..SampleResult::failed(error)
        }
    }

    /// Checks, then times `v`; errors other than device faults are results.
    fn sample(&mut self, v: &SpmmVariant, reps: u32) -> Result<SampleResult> {
        let want = v.canonical();
        let Some((_, built)) = self.list.iter().find(|(c, _)| c.canonical() == want) else {
            return Ok(Self::failed(
                "not in the compiled space".into(),
                f64::INFINITY,
            ));
        };
        let k = match built {
            Ok(spec) => RuntimeSpmm::<T>::from_spec(spec)?,
            Err(e) => return Ok(Self::failed(format!("not compiled: {e}"), f64::INFINITY)),
        };
        let err = match check(self.gpu, &k, self.inp.a, self.ops, self.checker) {
            Ok(e) => e,
            Err(e) => {
                let fatal = e
                    .downcast_ref::<sparserl_rt::RtError>()
                    .is_some_and(|e| e.is_context_fatal());
                if fatal {
                    return Err(e);
                }
                return Ok(Self::failed(format!("launch failed: {e:#}"), f64::INFINITY));
            }
        };
        let tol = tolerance(T::TYPE);
        if err > tol {
            let why = format!("per-row relative error {err:.3e} above {tol:.0e}");
            return Ok(Self::failed(why, err));
        }
        let us = time(self.gpu, &k, self.inp.a, self.ops, (2, reps, 1.0))?;
        Ok(match us {
            Some(us) => SampleResult {
                correct: true,
                rel_err: err,
                gbs: self.bytes as f64 / (us * 1e3),
                median_us: us,
                error: None,
            },
            None => Self::failed("not timed".into(), err),
        })
    }
}

impl<T: Scalar> SpmmSource for CaseSource<'_, T> {
    fn samples(&self) -> usize {
        1
    }

    fn measure(
        &mut self,
        variant: &SpmmVariant,
        _n: usize,
        reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError> {
        let t = Instant::now();
        let r = self
            .sample(variant, reps)
            .map_err(|e| match e.downcast::<RtError>() {
                Ok(rt) => SearchError::Source(rt),
                Err(e) => SearchError::Source(RtError::InvalidArgument(format!("{e:#}"))),
            })?;
        self.log.push(OursResult {
            variant: variant.id(),
            correct: r.correct,
            max_row_rel_err: Some(r.rel_err).filter(|e| e.is_finite()),
            median_us: Some(r.median_us).filter(|u| u.is_finite()),
            error: r.error.clone(),
            phase: None,
        });
        Ok((vec![r], t.elapsed().as_secs_f64()))
    }
}

/// The search on one case into `row`: `ours_*`, `prior_*`, `search_*`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run<T: Scalar>(
    gpu: &Gpu,
    list: &[(SpmmVariant, Built)],
    inp: &Inputs<'_, T>,
    ops: &mut Operands<T>,
    checker: &mut DeviceReference,
    row: &mut Row,
    budget: f64,
) -> Result<()> {
    // The product's order, the records of the case's own class left out (the
    // benchmark judges matrices as if the records had never seen them).
    let features = Features::compute(inp.csr);
    let order = spmm_search_order(&features, T::TYPE, inp.n, inp.layout, Some(&row.class));
    let prior = spmm_prior_for(&features, T::TYPE, inp.n, inp.layout)
        .first()
        .copied();
    let cfg = SpmmSearchConfig {
        budget_seconds: budget,
        ..SpmmSearchConfig::default()
    };
    let mut src = CaseSource {
        gpu,
        list,
        inp,
        ops,
        checker,
        bytes: row.bytes,
        log: Vec::new(),
    };
    let outcome = search_spmm(&[(inp.n, order)], &mut src, &cfg);
    let mut log = std::mem::take(&mut src.log);
    if let Ok(o) = &outcome {
        // One trial per measurement, in the same order as the log.
        for (r, t) in log.iter_mut().zip(&o.trials) {
            r.phase = Some(t.phase.clone());
        }
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            row.ours_error = Some(format!("search failed: {e}"));
            row.search_trials = log;
            return Ok(());
        }
    };
    row.search_seconds = Some(outcome.seconds);
    if let Some(p) = prior {
        row.prior_variant = Some(p.id());
        row.prior_us = log
            .iter()
            .find(|r| r.variant == p.id())
            .and_then(|r| r.median_us);
    }
    let Some(w) = outcome.widths.first() else {
        row.ours_error = Some("the search returned no width".into());
        return Ok(());
    };
    row.search_candidates = Some(w.candidates);
    row.search_stopped = Some(w.stopped.clone());
    row.search_trials = log;
    let mut again = CaseSource {
        gpu,
        list,
        inp,
        ops: src.ops,
        checker: src.checker,
        bytes: row.bytes,
        log: Vec::new(),
    };
    row.ours_variant = Some(w.winner.id());
    row.ours_source = Some("search".into());
    // Checked and timed afresh RETIMES times, until settled; the median is reported.
    let chosen_us = (w.gbs > 0.0).then(|| row.bytes as f64 / (w.gbs * 1e3));
    let round = || {
        let mut times = Vec::new();
        for _ in 0..super::RETIMES {
            let r = again.sample(&w.winner, inp.reps)?;
            if r.rel_err.is_finite() {
                let worst = row.ours_max_row_rel_err.unwrap_or(0.0).max(r.rel_err);
                row.ours_max_row_rel_err = Some(worst);
            }
            if let Some(e) = r.error {
                row.ours_error = Some(format!("the winner failed its re-check: {e}"));
                return Ok(None);
            }
            times.push(r.median_us);
        }
        Ok(Some(times))
    };
    if let Some((times, us, note)) = super::retime_settled(chosen_us, round)? {
        row.ours_retimes_us = times;
        row.ours_us = us;
        row.notes.extend(note.map(|n| format!("ours {n}")));
    }
    Ok(())
}
