//! The measured SpMM search: per declared dense width N, the variants of
//! `spmm_space(N, layout)` in the prior's order, then the finalists
//! re-measured with the SpMV search's noise rule.
//!
//! Written against [`SpmmSource`] (the SpMM form of
//! [`MeasureSource`](super::MeasureSource)), so the same code runs on a GPU
//! (`crate::gpu_spmm`) and in CPU tests against a simulated source.
//!
//! Per width, with that width's share of the budget (the budget divided by
//! the widths left, so time a cheap width does not use goes to the next):
//! 1. Exploration ([`explore_width`]): candidates in the given order (a
//!    build's: the measured records' first few and the prior's alternately,
//!    then the prior's ranking of
//!    the whole space) for half of the width's
//!    exploration budget (its share less [`FINALIST_RESERVE`]), then a climb
//!    over the single-knob [`neighbors`] of the best measured so far, then
//!    the given order again, each measured once on every sample, until that
//!    budget or [`SpmmSearchConfig::max_candidates`] is spent. A variant whose check
//!    fails on any sample (wrong result, launch error, untimed: see
//!    [`failure`]) is rejected for good with its reason.
//! 2. Finalists: the best `finalists` are re-measured in up to `rounds`
//!    rounds of `final_reps` repetitions (one round always); a challenger
//!    replaces the incumbent only when its median beats the incumbent's by
//!    more than the larger relative spread of the two (at least
//!    `min_noise`). A finalist failing a check is out.
//! 3. Verification: the winner is measured (checked) once more; if that
//!    fails, the next finalist by median is tried, then the rest by their
//!    first measurement.

use super::{FINALIST_RESERVE, SampleResult, SearchError, failure};
use serde::{Deserialize, Serialize};
use sparserl_rt::spmm::SpmmVariant;

/// Where SpMM measurements come from.
pub trait SpmmSource {
    /// Number of samples of the pattern.
    fn samples(&self) -> usize;
    /// Measures `variant` at dense width `n` on every sample with `reps`
    /// timed repetitions (after the correctness check). Returns per-sample
    /// results and the seconds the call cost.
    fn measure(
        &mut self,
        variant: &SpmmVariant,
        n: usize,
        reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError>;
}

/// Settings of the SpMM search.
#[derive(Debug, Clone)]
pub struct SpmmSearchConfig {
    /// Time budget for all widths together, seconds (sum of measurement costs).
    pub budget_seconds: f64,
    /// Most distinct candidates measured per width.
    pub max_candidates: usize,
    /// Finalists re-measured per width (incumbent included).
    pub finalists: usize,
    /// Re-measurement rounds per finalist.
    pub rounds: usize,
    /// Repetitions per exploration measurement.
    pub reps: u32,
    /// Repetitions per finalist measurement.
    pub final_reps: u32,
    /// Noise floor (relative).
    pub min_noise: f64,
}

impl Default for SpmmSearchConfig {
    fn default() -> Self {
        SpmmSearchConfig {
            budget_seconds: 30.0,
            max_candidates: 96,
            finalists: 3,
            rounds: 3,
            reps: 20,
            final_reps: 60,
            min_noise: 0.01,
        }
    }
}

/// One measurement of the SpMM search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmmTrial {
    /// The variant.
    pub variant: SpmmVariant,
    /// Dense width N.
    pub n: usize,
    /// Phase: `explore`, `climb`, `final`, `verify`.
    pub phase: String,
    /// Geometric mean GB/s over samples (0 when it failed).
    pub gbs: f64,
    /// Correct and timed on every sample.
    pub correct: bool,
    /// Seconds spent.
    pub seconds: f64,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// What the search chose for one width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmmWidthOutcome {
    /// Dense width N.
    pub n: usize,
    /// The winner.
    pub winner: SpmmVariant,
    /// Its GB/s (median over the final rounds, geomean over samples).
    pub gbs: f64,
    /// Distinct candidates measured.
    pub candidates: usize,
    /// Why exploration stopped.
    pub stopped: String,
    /// Variants ruled out by a failed check, with the reason.
    pub rejected: Vec<(SpmmVariant, String)>,
}

/// What the search found, per width in the given order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmmTuneOutcome {
    /// One outcome per declared width.
    pub widths: Vec<SpmmWidthOutcome>,
    /// Seconds spent in all.
    pub seconds: f64,
    /// Every measurement, in order.
    pub trials: Vec<SpmmTrial>,
}

fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs {
        s += x.max(1e-12).ln();
        n += 1;
    }
    if n == 0 { 0.0 } else { (s / n as f64).exp() }
}

/// The bookkeeping of one width.
struct Ledger<'a> {
    n: usize,
    /// Variant -> GB/s of its first measurement; 0 once it failed any check.
    seen: Vec<(SpmmVariant, f64)>,
    rejected: Vec<(SpmmVariant, String)>,
    trials: &'a mut Vec<SpmmTrial>,
    spent: f64,
}

impl Ledger<'_> {
    /// Measures `v` once; a failed check rejects it for good.
    fn measure(
        &mut self,
        source: &mut dyn SpmmSource,
        v: &SpmmVariant,
        phase: &str,
        reps: u32,
    ) -> Result<SpmmTrial, SearchError> {
        let (res, seconds) = source.measure(v, self.n, reps)?;
        self.spent += seconds;
        let error = failure(&res, source.samples());
        let correct = error.is_none();
        let gbs = if correct {
            geomean(res.iter().map(|r| r.gbs))
        } else {
            0.0
        };
        match self.seen.iter_mut().find(|(s, _)| s == v) {
            Some(entry) if !correct => entry.1 = 0.0,
            Some(_) => {}
            None => self.seen.push((*v, gbs)),
        }
        if let Some(why) = &error {
            self.rejected.push((*v, format!("{phase}: {why}")));
        }
        let t = SpmmTrial {
            variant: *v,
            n: self.n,
            phase: phase.to_string(),
            gbs,
            correct,
            seconds,
            error,
        };
        self.trials.push(t.clone());
        Ok(t)
    }

    fn first_gbs(&self, v: &SpmmVariant) -> f64 {
        self.seen
            .iter()
            .find(|(s, _)| s == v)
            .map_or(0.0, |(_, g)| *g)
    }

    /// The variants not rejected, fastest first (ties: measurement order).
    fn ranked(&self) -> Vec<(SpmmVariant, f64)> {
        let mut r: Vec<(SpmmVariant, f64)> = self
            .seen
            .iter()
            .filter(|(_, g)| *g > 0.0)
            .copied()
            .collect();
        r.sort_by(|a, b| b.1.total_cmp(&a.1));
        r
    }
}

/// Runs the search. `candidates` holds, per declared width, the variants
/// to try in order (a ranking of `spmm_space(n, layout)`; a build's is
/// `spmm_search_order`).
pub fn search_spmm(
    candidates: &[(usize, Vec<SpmmVariant>)],
    source: &mut dyn SpmmSource,
    cfg: &SpmmSearchConfig,
) -> Result<SpmmTuneOutcome, SearchError> {
    let mut trials = Vec::new();
    let mut widths = Vec::with_capacity(candidates.len());
    let mut spent = 0.0;
    for (i, (n, list)) in candidates.iter().enumerate() {
        let share = (cfg.budget_seconds - spent).max(0.0) / (candidates.len() - i) as f64;
        let mut led = Ledger {
            n: *n,
            seen: Vec::new(),
            rejected: Vec::new(),
            trials: &mut trials,
            spent: 0.0,
        };
        let out = search_width(list, source, cfg, share, &mut led)?;
        spent += led.spent;
        widths.push(out);
    }
    Ok(SpmmTuneOutcome {
        widths,
        seconds: spent,
        trials,
    })
}

/// Exploration, finalists and verification of one width within `budget`.
fn search_width(
    list: &[SpmmVariant],
    source: &mut dyn SpmmSource,
    cfg: &SpmmSearchConfig,
    budget: f64,
    led: &mut Ledger<'_>,
) -> Result<SpmmWidthOutcome, SearchError> {
    let explore = budget * (1.0 - FINALIST_RESERVE);
    let stopped = explore_width(list, source, cfg, explore, led)?;
    let ranked = led.ranked();
    if ranked.is_empty() {
        return Err(SearchError::NoCorrectVariant(led.seen.len()));
    }
    let finalists: Vec<SpmmVariant> = ranked
        .iter()
        .take(cfg.finalists.max(1))
        .map(|r| r.0)
        .collect();
    let (stats, rounds) = remeasure_finalists(&finalists, source, cfg, budget, led)?;
    let winner_order = preference(&finalists, &stats, cfg.min_noise, &ranked);
    for (v, median) in winner_order {
        if led.first_gbs(&v) <= 0.0 {
            continue;
        }
        let median = match median {
            Some(m) => m,
            None => match remeasure_one(&v, rounds, source, cfg, led)? {
                Some(m) => m,
                None => continue,
            },
        };
        if led.measure(source, &v, "verify", cfg.final_reps)?.correct {
            return Ok(SpmmWidthOutcome {
                n: led.n,
                winner: v,
                gbs: median,
                candidates: led.seen.len(),
                stopped,
                rejected: led.rejected.clone(),
            });
        }
    }
    Err(SearchError::NoCorrectVariant(led.seen.len()))
}

/// Share of the exploration budget spent on the prior's order before the
/// climb starts from the best variant measured so far.
const PRIOR_SHARE: f64 = 0.5;

/// Exploration of one width within `explore` seconds; why it stopped.
/// 1. The prior's order until [`PRIOR_SHARE`] of the budget is spent (the
///    first candidate always: every width gets a measured, checked winner
///    however small its share), but the first candidate of every strategy
///    ([`scouts`]) comes before any climb: a prior that ranks a whole family
///    wrong costs at most one measurement per family, even when one slow
///    candidate takes half the budget (a 12 ms kernel of a wide width).
/// 2. Climb: the untried [`neighbors`] of the best variant measured so far,
///    in the prior's order; a better one becomes the best, whose neighbours
///    come next. A prior that ranks a family right but a knob wrong (items,
///    unroll, vector width) is corrected within a few measurements.
/// 3. Once the best has no untried neighbour, the prior's order again.
fn explore_width(
    list: &[SpmmVariant],
    source: &mut dyn SpmmSource,
    cfg: &SpmmSearchConfig,
    explore: f64,
    led: &mut Ledger<'_>,
) -> Result<String, SearchError> {
    let full = |led: &Ledger<'_>| {
        if led.seen.len() >= cfg.max_candidates {
            Some(format!("{} candidates measured", cfg.max_candidates))
        } else if led.spent >= explore {
            Some("budget spent".to_string())
        } else {
            None
        }
    };
    let untried = |led: &Ledger<'_>, v: &SpmmVariant| !led.seen.iter().any(|(s, _)| s == v);
    let mut next_prior = 0;
    let scouts = scouts(list);
    loop {
        let past_prior = !led.seen.is_empty() && led.spent >= explore * PRIOR_SHARE;
        let scout = scouts.iter().find(|v| untried(led, v)).copied();
        let climb = match (past_prior, scout) {
            (true, None) => led
                .ranked()
                .first()
                .and_then(|b| neighbors(&b.0, list).into_iter().find(|v| untried(led, v))),
            _ => None,
        };
        let (v, phase) = match (climb, scout) {
            (Some(v), _) => (v, "climb"),
            (None, Some(v)) if past_prior => (v, "explore"),
            _ => {
                while next_prior < list.len() && !untried(led, &list[next_prior]) {
                    next_prior += 1;
                }
                match list.get(next_prior) {
                    Some(v) => (*v, "explore"),
                    None => return Ok("space exhausted".into()),
                }
            }
        };
        if !led.seen.is_empty()
            && let Some(why) = full(led)
        {
            return Ok(why);
        }
        led.measure(source, &v, phase, cfg.reps)?;
    }
}

/// The first variant of each family (strategy, and whether it runs on the
/// transposed path) in `list`, in `list`'s order: the candidates
/// exploration measures before it climbs.
pub fn scouts(list: &[SpmmVariant]) -> Vec<SpmmVariant> {
    let mut out: Vec<SpmmVariant> = Vec::new();
    for v in list {
        if !out
            .iter()
            .any(|u| u.strategy == v.strategy && u.trans == v.trans)
        {
            out.push(*v);
        }
    }
    out
}

/// What a search measures first whatever its budget: the [`scouts`], then
/// the rest of `list`'s first `k`, without repeats (the candidates worth
/// compiling ahead).
pub fn search_head(list: &[SpmmVariant], k: usize) -> Vec<SpmmVariant> {
    let mut head = scouts(list);
    for v in list.iter().take(k) {
        if !head.contains(v) {
            head.push(*v);
        }
    }
    head
}

/// The variants of `list` that differ from `v` in one knob (same strategy:
/// block, group, vector width, coarsening, tile, items, range cut, split, unroll,
/// the load path or the transposed path), in `list`'s order.
pub fn neighbors(v: &SpmmVariant, list: &[SpmmVariant]) -> Vec<SpmmVariant> {
    let v = v.canonical();
    let knobs = |u: &SpmmVariant| {
        let u = u.canonical();
        [
            u.block,
            u.group,
            u.vec,
            u.coarsen,
            u.tile,
            u.items,
            u.sub,
            u.split,
            u.unroll,
            u32::from(u.ldg_x),
            u32::from(u.trans),
        ]
    };
    let mine = knobs(&v);
    list.iter()
        .filter(|u| u.strategy == v.strategy)
        .filter(|u| knobs(u).iter().zip(&mine).filter(|(a, b)| a != b).count() == 1)
        .copied()
        .collect()
}

/// Per finalist still in: (index into `finalists`, median, relative
/// spread); and the rounds taken.
type FinalStats = (Vec<(usize, f64, f64)>, usize);

fn remeasure_finalists(
    finalists: &[SpmmVariant],
    source: &mut dyn SpmmSource,
    cfg: &SpmmSearchConfig,
    budget: f64,
    led: &mut Ledger<'_>,
) -> Result<FinalStats, SearchError> {
    let mut rounds: Vec<Option<Vec<f64>>> = vec![Some(Vec::new()); finalists.len()];
    let mut taken = 0;
    for round in 0..cfg.rounds.max(1) {
        if round > 0 && led.spent >= budget {
            break;
        }
        taken += 1;
        for (i, v) in finalists.iter().enumerate() {
            if rounds[i].is_none() {
                continue;
            }
            let t = led.measure(source, v, "final", cfg.final_reps)?;
            match (&mut rounds[i], t.correct) {
                (Some(r), true) => r.push(t.gbs),
                (slot, _) => *slot = None,
            }
        }
    }
    let stats = rounds
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let mut s = r.clone()?;
            s.sort_by(f64::total_cmp);
            let med = s[s.len() / 2];
            Some((i, med, (s[s.len() - 1] - s[0]) / med))
        })
        .collect();
    Ok((stats, taken))
}

/// The order in which candidates may win: the finalists' winner by the
/// noise rule, the other finalists still in by median, then the rest of
/// `ranked` (without a final median yet).
fn preference(
    finalists: &[SpmmVariant],
    stats: &[(usize, f64, f64)],
    min_noise: f64,
    ranked: &[(SpmmVariant, f64)],
) -> Vec<(SpmmVariant, Option<f64>)> {
    let mut inc: Option<usize> = None;
    for (k, &(_, cm, cs)) in stats.iter().enumerate() {
        let better = match inc {
            None => true,
            Some(j) => {
                let (_, im, is) = stats[j];
                cm > im * (1.0 + cs.max(is).max(min_noise))
            }
        };
        if better {
            inc = Some(k);
        }
    }
    let mut order: Vec<(SpmmVariant, Option<f64>)> = Vec::new();
    if let Some(k) = inc {
        order.push((finalists[stats[k].0], Some(stats[k].1)));
    }
    let mut others: Vec<&(usize, f64, f64)> = stats
        .iter()
        .enumerate()
        .filter(|(k, _)| Some(*k) != inc)
        .map(|(_, s)| s)
        .collect();
    others.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order.extend(others.iter().map(|s| (finalists[s.0], Some(s.1))));
    order.extend(
        ranked
            .iter()
            .filter(|(v, _)| !finalists.contains(v))
            .map(|(v, _)| (*v, None)),
    );
    order
}

/// Re-measures a non-finalist like a finalist (`rounds` checked rounds);
/// its median, or `None` when a check failed.
fn remeasure_one(
    v: &SpmmVariant,
    rounds: usize,
    source: &mut dyn SpmmSource,
    cfg: &SpmmSearchConfig,
    led: &mut Ledger<'_>,
) -> Result<Option<f64>, SearchError> {
    let mut gbs = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        let t = led.measure(source, v, "final", cfg.final_reps)?;
        if !t.correct {
            return Ok(None);
        }
        gbs.push(t.gbs);
    }
    gbs.sort_by(f64::total_cmp);
    Ok(Some(gbs[gbs.len() / 2]))
}

#[cfg(test)]
mod tests;
