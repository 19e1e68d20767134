//! The energy phase of the search: after the correctness gate and the time
//! search, an objective that needs energy ([`Objective::needs_energy`])
//! measures the joules per call of a bounded number of the time search's
//! finalists ([`EnergySearch`]) and picks among them by
//! [`crate::objective::choose`].
//!
//! Written against [`EnergySource`], so the same code runs on a GPU through
//! NVML ([`crate::gpu_energy`]) and in CPU tests. Energy that cannot be
//! measured (no NVML, a device without an energy counter, a counter too
//! slow for the window) is never an error: the time pick is kept and the
//! record says why.

use super::{SearchError, TuneOutcome};
use crate::objective::{
    Candidate, FinalistRecord, Objective, ObjectiveRecord, choose, pareto_front,
};
use sparserl_rt::Variant;
use sparserl_rt::energy::{EnergyMeasurement, EnergyOptions};
use std::time::Instant;

/// Bounds of the energy phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergySearch {
    /// Finalists measured, the time pick included.
    pub finalists: usize,
    /// The busy loop of each finalist (on the first sample).
    pub opts: EnergyOptions,
    /// Relative noise floor of the pick (as the time search's `min_noise`).
    pub min_noise: f64,
}

impl Default for EnergySearch {
    /// 3 finalists, each 0.1 s of warm-up and 3 windows of at least 0.15 s
    /// (about 0.7 s of busy loop per finalist, 2 s per kernel).
    fn default() -> Self {
        EnergySearch {
            finalists: 3,
            opts: EnergyOptions {
                warmup_s: 0.1,
                window_s: 0.15,
                repeats: 3,
                chunk_s: 0.002,
                idle: false,
            },
            min_noise: 0.01,
        }
    }
}

/// Why one finalist has no energy figure (it is then not a candidate of
/// the energy pick; its record keeps the reason).
#[derive(Debug, thiserror::Error)]
pub enum Unmeasured {
    /// Generating, compiling or loading the variant failed.
    #[error("compile failed: {0}")]
    Compile(#[source] crate::gpu::GpuError),
    /// The float64 check could not run.
    #[error("check failed: {0}")]
    Check(#[source] sparserl_rt::RtError),
    /// The check ran and the result was wrong.
    #[error("relative error {err:.3e} above tolerance {tol:.0e}: not measured")]
    Wrong {
        /// The largest per-row relative error.
        err: f64,
        /// The tolerance of the value type.
        tol: f64,
    },
    /// A launch of the timed loop failed.
    #[error("{0}")]
    Launch(#[source] sparserl_rt::RtError),
    /// The energy counter gave no usable figure.
    #[error("{0}")]
    Energy(#[source] sparserl_rt::energy::EnergyError),
    /// A recorded source (tests, replays) has no figure for the variant.
    #[error("{0}")]
    NotRecorded(&'static str),
}

/// Where energy measurements come from.
pub trait EnergySource {
    /// Checks `variant` against the float64 reference and measures its
    /// energy per call. `Ok(Err(why))`: this variant could not be measured
    /// (it is then not a candidate); `Err`: the device broke down.
    fn measure(
        &mut self,
        variant: &Variant,
    ) -> Result<Result<EnergyMeasurement, Unmeasured>, SearchError>;
}

/// The search's finalists: the winner first, then the other variants that
/// were correct on every measurement and never rejected, by their best
/// GB/s; at most `k` (at least the winner).
pub fn finalists(out: &TuneOutcome, k: usize) -> Vec<(Variant, f64)> {
    let mut best: Vec<(Variant, f64)> = Vec::new();
    for t in out.trials.iter().filter(|t| t.correct && t.gbs > 0.0) {
        if out.rejected.iter().any(|r| r.variant == t.variant) {
            continue;
        }
        match best.iter_mut().find(|(v, _)| *v == t.variant) {
            Some(b) => b.1 = b.1.max(t.gbs),
            None => best.push((t.variant, t.gbs)),
        }
    }
    best.sort_by(|a, b| b.1.total_cmp(&a.1));
    let w = best.iter().position(|(v, _)| *v == out.winner);
    let winner = w.map_or((out.winner, out.gbs), |i| best.remove(i));
    std::iter::once(winner).chain(best).take(k.max(1)).collect()
}

/// What the objective chose.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectiveChoice {
    /// The variant to build.
    pub winner: Variant,
    /// Its GB/s in the time search (the search's final figure for the time
    /// pick, its best trial for another finalist).
    pub gbs: f64,
    /// What the energy phase did; `None` for the time objective (nothing
    /// measured, nothing recorded: the time objective's output is what it
    /// was before objectives existed).
    pub record: Option<ObjectiveRecord>,
}

impl ObjectiveChoice {
    /// The time search's pick, unchanged.
    pub fn time(out: &TuneOutcome) -> Self {
        ObjectiveChoice {
            winner: out.winner,
            gbs: out.gbs,
            record: None,
        }
    }
}

/// The record of an energy phase that could not run (`why`): the time pick.
pub fn fallback(objective: &Objective, out: &TuneOutcome, why: String) -> ObjectiveChoice {
    ObjectiveChoice {
        record: Some(ObjectiveRecord {
            objective: objective.label(),
            time_pick: out.winner.id(),
            chosen: out.winner.id(),
            fallback: Some(why),
            ..ObjectiveRecord::default()
        }),
        ..ObjectiveChoice::time(out)
    }
}

/// Applies `objective` to the time search's outcome `out`: for an
/// objective that needs energy, measures the finalists through `source`
/// and picks by [`choose`]; the time pick when the objective is time, when
/// fewer than two finalists could be measured (the record says why), or
/// when no finalist beats it by more than the noise.
pub fn apply(
    objective: &Objective,
    out: &TuneOutcome,
    source: &mut dyn EnergySource,
    cfg: &EnergySearch,
) -> Result<ObjectiveChoice, SearchError> {
    if !objective.needs_energy() {
        return Ok(ObjectiveChoice::time(out));
    }
    let t0 = Instant::now();
    let finals = finalists(out, cfg.finalists.max(1));
    let mut recs = Vec::with_capacity(finals.len());
    for (v, gbs) in &finals {
        let mut r = FinalistRecord {
            variant: v.id(),
            search_gbs: *gbs,
            ..FinalistRecord::default()
        };
        match source.measure(v)? {
            Ok(m) => {
                r.seconds_per_call = Some(m.seconds_per_call);
                r.joules_per_call = Some(m.joules_per_call);
                r.spread = Some(m.spread);
                r.avg_power_w = Some(m.avg_power_w);
            }
            Err(why) => r.error = Some(why.to_string()),
        }
        recs.push(r);
    }
    let extra = t0.elapsed().as_secs_f64();
    Ok(conclude(
        objective,
        out,
        &finals,
        recs,
        extra,
        cfg.min_noise,
    ))
}

/// The pick among the measured finalists `recs` (of `finals`, the time
/// pick first) and the record of it.
fn conclude(
    objective: &Objective,
    out: &TuneOutcome,
    finals: &[(Variant, f64)],
    mut recs: Vec<FinalistRecord>,
    extra_seconds: f64,
    min_noise: f64,
) -> ObjectiveChoice {
    // The measured finalists, by index into `recs`.
    let measured: Vec<(usize, Candidate)> = recs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            Some((
                i,
                Candidate {
                    seconds_per_call: r.seconds_per_call?,
                    joules_per_call: r.joules_per_call?,
                    spread: r.spread?,
                },
            ))
        })
        .collect();
    let mut record = ObjectiveRecord {
        objective: objective.label(),
        time_pick: out.winner.id(),
        chosen: out.winner.id(),
        extra_seconds,
        ..ObjectiveRecord::default()
    };
    let cands: Vec<Candidate> = measured.iter().map(|m| m.1).collect();
    let choice = match measured.first() {
        Some((0, _)) if measured.len() >= 2 => choose(objective, &cands, min_noise),
        _ => None,
    };
    let Some(choice) = choice else {
        record.fallback = Some(format!(
            "energy measured for {} of {} finalist(s), the time pick {}: nothing to compare",
            measured.len(),
            recs.len(),
            if measured.first().is_some_and(|m| m.0 == 0) {
                "included"
            } else {
                "not included"
            }
        ));
        record.finalists = recs;
        return ObjectiveChoice {
            record: Some(record),
            ..ObjectiveChoice::time(out)
        };
    };
    let points: Vec<(f64, f64)> = cands
        .iter()
        .map(|c| (c.seconds_per_call, c.joules_per_call))
        .collect();
    for k in pareto_front(&points) {
        recs[measured[k].0].pareto = true;
    }
    let (ci, c) = measured[choice.index];
    recs[ci].chosen = true;
    let tp = cands[0];
    record.chosen = recs[ci].variant.clone();
    record.noise = Some(choice.noise);
    record.energy_saved_pct = Some((1.0 - c.joules_per_call / tp.joules_per_call) * 100.0);
    record.time_lost_pct = Some((c.seconds_per_call / tp.seconds_per_call - 1.0) * 100.0);
    record.finalists = recs;
    let (winner, gbs) = if ci == 0 {
        (out.winner, out.gbs)
    } else {
        finals[ci]
    };
    ObjectiveChoice {
        winner,
        gbs,
        record: Some(record),
    }
}

#[cfg(test)]
mod tests;
