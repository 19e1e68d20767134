//! The measured search: policy proposals, evolutionary refinement, noise-aware
//! finalist re-measurement, within a budget.
//!
//! The search is written against [`MeasureSource`], so the same code runs on
//! a GPU (through `sparserl_rt::measure`, see [`crate::gpu`]) and in CPU tests
//! against a recorded or simulated source.
//!
//! Algorithm:
//! 1. Measure the policy's first `initial` proposals (a variant that fails the
//!    correctness check on any sample is recorded and never chosen); after
//!    the first [`LAYOUT_AFTER`] of them, when the samples have a layout
//!    other than CSR, a few variants of the strategy that reads it
//!    ([`layout_proposals`]). Variants the samples
//!    cannot run ([`MeasureSource::applicable`]) are never measured.
//! 2. Generations: parents = the best `parents` correct variants; children by
//!    mutating one parameter (strategy, block, lanes, items, unroll, `x` load
//!    path, streaming stores, register cap) or crossing two parents; children
//!    already measured are skipped. Stop when the budget (seconds or
//!    candidates) is spent or `patience` generations bring no improvement
//!    larger than 1% (the latter only after `min_explore` candidates or a
//!    quarter of the budget, so cheap small-matrix searches keep exploring).
//! 3. Hill climbing: every single-parameter neighbour of the best variant is
//!    measured ([`neighbors`]); if one is better by more than 1% the climb
//!    continues from it, while the budget lasts.
//! 4. Finalists: the incumbent (best by first measurement) and up to
//!    `finalists - 1` challengers are re-measured up to `rounds` times (one
//!    round always; more while within the budget, of which 15% is reserved
//!    for this phase) with
//!    `final_reps` repetitions. A challenger replaces the incumbent only if
//!    its median over rounds beats the incumbent's by more than the noise
//!    (the larger relative spread of the two, at least `min_noise`).
//! 5. Verification: the winner is measured (and so checked) once more
//!    before it is returned; if that check fails, the next-best candidate
//!    is tried instead (the other finalists by median, then the rest by
//!    their first measurement, each first re-measured like a finalist).
//!
//! Every measurement goes through the source's correctness check. A variant
//! whose check fails once, in any phase and on any sample (a wrong result, a
//! launch error, a time guard, a sample left untimed: see [`failure`]), is
//! rejected for good: it is never measured again, never a parent and never
//! chosen, and [`TuneOutcome::rejected`] records why. A kernel that is
//! wrong only sometimes (a race) therefore cannot win on its median.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sparserl_rt::{Strategy, Variant};
use std::collections::HashMap;
use thiserror::Error;

/// Policy proposals measured before the layout proposals.
pub const LAYOUT_AFTER: usize = 4;

/// Share of the budget kept for re-measuring the finalists.
pub const FINALIST_RESERVE: f64 = 0.15;

/// A failure that stops the search (as opposed to a failing candidate, which
/// is recorded and skipped).
#[derive(Debug, Error)]
pub enum SearchError {
    /// The measurement source broke down (device lost, ...).
    #[error("measurement failed: {0}")]
    Source(String),
    /// No candidate passed the correctness check.
    #[error("no correct variant among {0} candidates")]
    NoCorrectVariant(usize),
}

/// Result of measuring one variant on one sample.
///
/// Non-finite numbers are written as `null` and read back as infinity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleResult {
    /// Passed the float64 reference check.
    pub correct: bool,
    /// Relative error against the reference.
    #[serde(with = "finite_or_null")]
    pub rel_err: f64,
    /// Effective bandwidth (compulsory bytes / median time), GB/s; 0 if not timed.
    #[serde(with = "finite_or_null")]
    pub gbs: f64,
    /// Median time, microseconds.
    #[serde(with = "finite_or_null")]
    pub median_us: f64,
    /// Error message when it failed.
    pub error: Option<String>,
}

/// Serde helper: a non-finite `f64` as `null` (JSON has no infinity or
/// NaN, and serde_json writes them as `null`), `null` read back as infinity.
mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// Where measurements come from.
pub trait MeasureSource {
    /// Number of samples of the pattern.
    fn samples(&self) -> usize;
    /// Measures `variant` on every sample with `reps` timed repetitions.
    /// Returns per-sample results and the seconds the call cost.
    fn measure(
        &mut self,
        variant: &Variant,
        reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError>;
    /// Whether `variant` can run on every sample at all (a strategy that
    /// needs a layout the samples lack cannot). The search skips variants
    /// that cannot and proposes layout strategies ([`layout_proposals`]) on
    /// the samples that have their layout.
    fn applicable(&self, variant: &Variant) -> bool {
        let _ = variant;
        true
    }
}

/// The layout-strategy variants the search measures right after the policy's
/// proposals when the samples have the layout (the policy's vocabulary covers
/// the CSR strategies only): diagonal kernels with block 256 and unroll 1 or
/// 8, and block 512 with unroll 4; binned kernels whose short-row lanes
/// follow the policy's first row-mapped proposal (its lanes, half and double
/// of them; thread-per-row counts as 2 lanes), block 256, and narrow-index
/// kernels with the same lanes; tiled kernels with block 256, 128 and 512,
/// and 256 with streaming loads; all with `__ldg` loads of `x`.
pub fn layout_proposals(proposals: &[Variant]) -> Vec<Variant> {
    let diagonal = [(256, 1), (256, 8), (512, 4)]
        .into_iter()
        .map(|(block, unroll)| Variant {
            block,
            unroll,
            ..Variant::of(Strategy::Diagonal)
        });
    let lanes = proposals
        .iter()
        .find_map(|p| match p.strategy {
            Strategy::GroupPerRow => Some(p.lanes),
            Strategy::ThreadPerRow => Some(2),
            _ => None,
        })
        .unwrap_or(8);
    let mut out: Vec<Variant> = diagonal.collect();
    out.extend(
        [(256, false), (128, false), (512, false), (256, true)].map(|(block, stream_y)| Variant {
            block,
            stream_y,
            ..Variant::of(Strategy::Tiled)
        }),
    );
    for s in [Strategy::Binned, Strategy::Narrow] {
        for l in [lanes, lanes / 2, lanes * 2] {
            let v = Variant {
                block: 256,
                lanes: l.clamp(2, 32),
                ..Variant::of(s)
            };
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// One entry of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Variant id.
    pub variant: Variant,
    /// Phase: `policy`, `layout`, `mutate`, `crossover`, `climb`, `final`
    /// (finalist re-measurement), `verify` (the winner's last check).
    pub phase: String,
    /// Geometric mean GB/s over samples (0 when incorrect).
    pub gbs: f64,
    /// Worst relative error over samples (`null` in JSON when not finite,
    /// read back as infinity).
    #[serde(with = "finite_or_null")]
    pub rel_err: f64,
    /// Correct, and timed, on every sample.
    pub correct: bool,
    /// Seconds spent.
    pub seconds: f64,
    /// Why the measurement failed (see [`failure`]); `None` when correct.
    pub error: Option<String>,
}

/// Search settings.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// Time budget, seconds (sum of measurement costs).
    pub budget_seconds: f64,
    /// Maximum distinct candidates measured.
    pub max_candidates: usize,
    /// Policy proposals measured first.
    pub initial: usize,
    /// Parents per generation.
    pub parents: usize,
    /// Children per generation.
    pub children: usize,
    /// Generations without >1% improvement before stopping.
    pub patience: usize,
    /// The patience stop applies only once this many candidates were
    /// measured or a quarter of the budget is spent, so that cheap
    /// measurements (small matrices) still explore the space.
    pub min_explore: usize,
    /// Finalists re-measured (incumbent included).
    pub finalists: usize,
    /// Re-measurement rounds per finalist.
    pub rounds: usize,
    /// Repetitions per measurement during exploration.
    pub reps: u32,
    /// Repetitions per finalist measurement.
    pub final_reps: u32,
    /// Noise floor (relative).
    pub min_noise: f64,
    /// RNG seed.
    pub seed: u64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            budget_seconds: 30.0,
            max_candidates: 160,
            initial: 12,
            parents: 4,
            children: 8,
            patience: 4,
            min_explore: 64,
            finalists: 3,
            rounds: 3,
            reps: 20,
            final_reps: 60,
            min_noise: 0.01,
            seed: 0x5eed,
        }
    }
}

/// What the search found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneOutcome {
    /// The winner.
    pub winner: Variant,
    /// Winner's GB/s (median over final rounds, geomean over samples).
    pub gbs: f64,
    /// Distinct candidates measured.
    pub candidates: usize,
    /// Seconds spent.
    pub seconds: f64,
    /// Why the search stopped.
    pub stopped: String,
    /// Every measurement, in order.
    pub trials: Vec<Trial>,
    /// Every variant ruled out by a failed check, with the reason, in order.
    #[serde(default)]
    pub rejected: Vec<Rejection>,
}

/// A variant the search ruled out for good, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejection {
    /// The variant.
    pub variant: Variant,
    /// Phase of the measurement that failed (see [`Trial::phase`]).
    pub phase: String,
    /// What failed, e.g. `sample 1: wrong result (relative error 5.00e-1)`.
    pub reason: String,
}

fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs {
        s += x.max(1e-12).ln();
        n += 1;
    }
    if n == 0 { 0.0 } else { (s / n as f64).exp() }
}

fn summarize(
    variant: Variant,
    phase: &str,
    res: &[SampleResult],
    samples: usize,
    seconds: f64,
) -> Trial {
    let failed = failure(res, samples);
    let correct = failed.is_none();
    Trial {
        variant,
        phase: phase.to_string(),
        gbs: if correct {
            geomean(res.iter().map(|r| r.gbs))
        } else {
            0.0
        },
        rel_err: res.iter().map(|r| r.rel_err).fold(0.0, f64::max),
        correct,
        seconds,
        error: failed,
    }
}

/// Why one measurement (per-sample results of a source that has `samples`
/// samples) disqualifies its variant, if it does: a sample that failed the
/// correctness check or reported an error (launch failure, time guard,
/// ...), a sample without a positive finite bandwidth, or fewer results
/// than samples.
pub fn failure(res: &[SampleResult], samples: usize) -> Option<String> {
    for (i, r) in res.iter().enumerate() {
        match (&r.error, r.correct) {
            (Some(e), _) => return Some(format!("sample {i}: {e}")),
            (None, false) => {
                return Some(format!(
                    "sample {i}: wrong result (relative error {:.2e})",
                    r.rel_err
                ));
            }
            (None, true) if !(r.gbs.is_finite() && r.gbs > 0.0) => {
                return Some(format!(
                    "sample {i}: not timed ({} GB/s, median {} us)",
                    r.gbs, r.median_us
                ));
            }
            _ => {}
        }
    }
    if res.is_empty() || res.len() < samples {
        return Some(format!(
            "measured on {} of {} samples",
            res.len(),
            samples.max(1)
        ));
    }
    None
}

/// Mutates one parameter of `v` (result is canonical and valid).
pub fn mutate(v: &Variant, rng: &mut impl Rng) -> Variant {
    for _ in 0..32 {
        let mut c = *v;
        match rng.random_range(0..8) {
            0 => {
                let s = *Strategy::ALL.choose(rng).unwrap_or(&Strategy::NnzSplit);
                c = Variant {
                    block: v.block,
                    ldg_x: v.ldg_x,
                    ..Variant::of(s)
                };
            }
            1 => c.block = *[64, 128, 256, 512, 1024].choose(rng).unwrap_or(&256),
            2 => c.lanes = *[2, 4, 8, 16, 32].choose(rng).unwrap_or(&8),
            3 => c.items = *[1, 2, 3, 4, 6, 8, 12, 16].choose(rng).unwrap_or(&4),
            4 => c.unroll = *[1, 2, 4, 8].choose(rng).unwrap_or(&1),
            5 => c.ldg_x = !c.ldg_x,
            6 => c.stream_y = !c.stream_y,
            _ => c.min_blocks = *[0, 1, 2, 4].choose(rng).unwrap_or(&0),
        }
        let c = c.canonical();
        if c != *v && c.validate().is_ok() {
            return c;
        }
    }
    *v
}

/// Every variant that differs from `v` in exactly one parameter (canonical,
/// valid, deterministic order): the neighbourhood hill climbing explores.
pub fn neighbors(v: &Variant) -> Vec<Variant> {
    let mut out: Vec<Variant> = Vec::new();
    let mut push = |c: Variant| {
        let c = c.canonical();
        if c != *v && c.validate().is_ok() && !out.contains(&c) {
            out.push(c);
        }
    };
    for block in [64, 128, 256, 512, 1024] {
        push(Variant { block, ..*v });
    }
    match v.strategy {
        Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow => {
            for lanes in [2, 4, 8, 16, 32] {
                push(Variant { lanes, ..*v });
            }
        }
        Strategy::NnzSplit => {
            for items in [1, 2, 3, 4, 6, 8, 12, 16] {
                push(Variant { items, ..*v });
            }
        }
        _ => {}
    }
    if v.strategy != Strategy::NnzSplit {
        for unroll in [1, 2, 4, 8] {
            push(Variant { unroll, ..*v });
        }
    }
    push(Variant {
        ldg_x: !v.ldg_x,
        ..*v
    });
    push(Variant {
        stream_y: !v.stream_y,
        ..*v
    });
    for min_blocks in [0, 1, 2, 4] {
        push(Variant { min_blocks, ..*v });
    }
    out
}

/// Uniform crossover of two parents (strategy from one of them).
pub fn crossover(a: &Variant, b: &Variant, rng: &mut impl Rng) -> Variant {
    let pick = |rng: &mut ChaCha8Rng, x: u32, y: u32| if rng.random_bool(0.5) { x } else { y };
    let mut r = ChaCha8Rng::seed_from_u64(rng.random());
    let mut c = if r.random_bool(0.5) { *a } else { *b };
    c.block = pick(&mut r, a.block, b.block);
    c.lanes = pick(&mut r, a.lanes.max(2), b.lanes.max(2));
    c.items = pick(&mut r, a.items, b.items);
    c.unroll = pick(&mut r, a.unroll, b.unroll);
    c.min_blocks = pick(&mut r, a.min_blocks, b.min_blocks);
    c.ldg_x = if r.random_bool(0.5) { a.ldg_x } else { b.ldg_x };
    c.stream_y = if r.random_bool(0.5) {
        a.stream_y
    } else {
        b.stream_y
    };
    let c = c.canonical();
    if c.validate().is_ok() { c } else { *a }
}

/// The bookkeeping every phase shares: what was measured, what was ruled
/// out and why, and the seconds spent.
struct Ledger {
    /// Variant -> GB/s of its first measurement; 0 once it failed any check.
    seen: HashMap<Variant, f64>,
    trials: Vec<Trial>,
    rejected: Vec<Rejection>,
    spent: f64,
}

impl Ledger {
    /// Measures `v` once and records the trial. A failed check rejects `v`
    /// for good (its `seen` entry becomes 0 and a [`Rejection`] is kept).
    fn measure(
        &mut self,
        source: &mut dyn MeasureSource,
        v: &Variant,
        phase: &str,
        reps: u32,
    ) -> Result<Trial, SearchError> {
        let (res, secs) = source.measure(v, reps)?;
        self.spent += secs;
        let t = summarize(*v, phase, &res, source.samples(), secs);
        match &t.error {
            Some(reason) if !t.correct => {
                self.seen.insert(*v, 0.0);
                self.rejected.push(Rejection {
                    variant: *v,
                    phase: phase.to_string(),
                    reason: reason.clone(),
                });
            }
            _ => {
                self.seen.entry(*v).or_insert(t.gbs);
            }
        }
        self.trials.push(t.clone());
        Ok(t)
    }

    /// Measures a variant not measured before (skipping measured, invalid
    /// and inapplicable ones); whether it was measured.
    fn explore(
        &mut self,
        source: &mut dyn MeasureSource,
        v: Variant,
        phase: &str,
        reps: u32,
    ) -> Result<bool, SearchError> {
        let v = v.canonical();
        if self.seen.contains_key(&v) || v.validate().is_err() || !source.applicable(&v) {
            return Ok(false);
        }
        self.measure(source, &v, phase, reps)?;
        Ok(true)
    }

    /// The variants not rejected, fastest first (ties: variant order).
    fn ranked(&self) -> Vec<(Variant, f64)> {
        let mut ranked: Vec<(Variant, f64)> = self
            .seen
            .iter()
            .filter(|(_, g)| **g > 0.0)
            .map(|(v, g)| (*v, *g))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    fn best(&self) -> Option<(Variant, f64)> {
        self.seen
            .iter()
            .filter(|(_, g)| **g > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(v, g)| (*v, *g))
    }
}

/// Runs the search. `proposals` come from the policy, best first.
///
/// Every measurement is correctness-checked by the source; a variant that
/// fails any check, in any phase, is rejected for good
/// ([`TuneOutcome::rejected`] says why). The winner is measured once more
/// before it is returned; if that check fails, the next-best variant that
/// has not failed is re-measured like a finalist and checked instead, and
/// so on.
pub fn search(
    proposals: &[Variant],
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
) -> Result<TuneOutcome, SearchError> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut led = Ledger {
        seen: HashMap::new(),
        trials: Vec::new(),
        rejected: Vec::new(),
        spent: 0.0,
    };
    let mut stopped = String::from("search space exhausted");

    // Exploration keeps a reserve of the budget for the finalists' re-measurement.
    let explore_budget = cfg.budget_seconds * (1.0 - FINALIST_RESERVE);
    let over_budget =
        |led: &Ledger| led.spent >= explore_budget || led.seen.len() >= cfg.max_candidates;

    // The policy's first few proposals, then the layout strategies (when the
    // samples have their layout), then the rest of the policy's proposals.
    let initial: Vec<Variant> = proposals.iter().take(cfg.initial).copied().collect();
    let head = initial.len().min(LAYOUT_AFTER);
    let order = initial[..head]
        .iter()
        .map(|v| (*v, "policy"))
        .chain(
            layout_proposals(proposals)
                .into_iter()
                .map(|v| (v, "layout")),
        )
        .chain(initial[head..].iter().map(|v| (*v, "policy")));
    for (v, phase) in order {
        if over_budget(&led) {
            stopped = "budget spent during the initial proposals".into();
            break;
        }
        led.explore(source, v, phase, cfg.reps)?;
    }

    let mut stale = 0;
    'gens: while !over_budget(&led) {
        let mut ranked = led.ranked();
        ranked.truncate(cfg.parents.max(1));
        if ranked.is_empty() {
            // Nothing correct yet: fall back to the always-safe variant.
            if !led.explore(source, Variant::FALLBACK, "mutate", cfg.reps)? {
                break;
            }
            continue;
        }
        let before = ranked[0].1;
        let mut new = 0;
        for i in 0..cfg.children {
            if over_budget(&led) {
                stopped = "budget spent".into();
                break 'gens;
            }
            let a = ranked[i % ranked.len()].0;
            let (child, phase) = if i % 3 == 2 && ranked.len() > 1 {
                let b = ranked[(i / 3 + 1) % ranked.len()].0;
                (crossover(&a, &b, &mut rng), "crossover")
            } else {
                (mutate(&a, &mut rng), "mutate")
            };
            if led.explore(source, child, phase, cfg.reps)? {
                new += 1;
            }
        }
        let after = led.best().map(|b| b.1).unwrap_or(0.0);
        if after > before * 1.01 {
            stale = 0;
        } else {
            stale += 1;
        }
        let explored = led.seen.len() >= cfg.min_explore || led.spent >= cfg.budget_seconds * 0.25;
        if stale >= cfg.patience && explored {
            stopped = format!("no improvement in {} generations", cfg.patience);
            break;
        }
        if new == 0 && stale > 0 {
            stopped = "no new candidates".into();
            break;
        }
    }
    // Hill climbing: measure every single-parameter neighbour of the best
    // variant, move to a better one, repeat, while the budget lasts.
    let mut climbed = 0;
    while !over_budget(&led) {
        let Some((best, best_gbs)) = led.best() else {
            break;
        };
        for n in neighbors(&best) {
            if over_budget(&led) {
                break;
            }
            if led.explore(source, n, "climb", cfg.reps)? {
                climbed += 1;
            }
        }
        match led.best() {
            Some((_, g)) if g > best_gbs * 1.01 => continue,
            _ => break,
        }
    }
    if climbed > 0 {
        stopped = format!("{stopped}; then {climbed} neighbours of the best measured");
    }
    if over_budget(&led) && !stopped.contains("budget") {
        stopped = format!("{stopped}; budget spent");
    }

    // Finalists: re-measured in rounds; one failed check disqualifies.
    let ranked = led.ranked();
    if ranked.is_empty() {
        return Err(SearchError::NoCorrectVariant(led.seen.len()));
    }
    let finalists = &ranked[..cfg.finalists.max(1).min(ranked.len())];
    // GB/s per round, per finalist; `None` once disqualified.
    let mut rounds: Vec<Option<Vec<f64>>> = vec![Some(Vec::new()); finalists.len()];
    let mut rounds_taken = 0;
    for round in 0..cfg.rounds.max(1) {
        if round > 0 && led.spent >= cfg.budget_seconds {
            break; // one round is always taken; more only within the budget
        }
        rounds_taken += 1;
        for (i, (v, _)) in finalists.iter().enumerate() {
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
    // (finalist index, median, relative spread) of the finalists still in.
    let stats: Vec<(usize, f64, f64)> = rounds
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let mut s = r.clone()?;
            s.sort_by(f64::total_cmp);
            let med = s[s.len() / 2];
            Some((i, med, (s[s.len() - 1] - s[0]) / med))
        })
        .collect();
    // The incumbent is the first-ranked finalist still in; a challenger
    // replaces it only by beating its median by more than the noise.
    let mut inc: Option<usize> = None;
    for (k, &(_, cm, cs)) in stats.iter().enumerate() {
        let better = match inc {
            None => true,
            Some(j) => {
                let (_, im, is) = stats[j];
                cm > im * (1.0 + cs.max(is).max(cfg.min_noise))
            }
        };
        if better {
            inc = Some(k);
        }
    }
    // Candidates in order of preference: the finalists' winner, the other
    // finalists still in (by median), then the rest that never failed (by
    // their first measurement). One that was not a finalist is first
    // re-measured like one (as many rounds as the finalists had, all
    // checked); each then gets one more checked measurement, and the first
    // that passes every check is the winner.
    let mut order: Vec<(Variant, Option<f64>)> = Vec::new();
    if let Some(k) = inc {
        order.push((finalists[stats[k].0].0, Some(stats[k].1)));
    }
    let mut others: Vec<&(usize, f64, f64)> = stats
        .iter()
        .enumerate()
        .filter(|(k, _)| Some(*k) != inc)
        .map(|(_, s)| s)
        .collect();
    others.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order.extend(others.iter().map(|s| (finalists[s.0].0, Some(s.1))));
    order.extend(ranked[finalists.len()..].iter().map(|(v, _)| (*v, None)));
    'candidates: for (v, finals_median) in order {
        if led.seen.get(&v).is_none_or(|g| *g <= 0.0) {
            continue;
        }
        let median = match finals_median {
            Some(m) => m,
            None => {
                let mut gbs = Vec::with_capacity(rounds_taken);
                for _ in 0..rounds_taken {
                    let t = led.measure(source, &v, "final", cfg.final_reps)?;
                    if !t.correct {
                        continue 'candidates;
                    }
                    gbs.push(t.gbs);
                }
                gbs.sort_by(f64::total_cmp);
                gbs[gbs.len() / 2]
            }
        };
        if !led.measure(source, &v, "verify", cfg.final_reps)?.correct {
            continue;
        }
        let late = led
            .rejected
            .iter()
            .filter(|r| r.phase == "final" || r.phase == "verify")
            .count();
        if late > 0 {
            stopped = format!("{stopped}; {late} rejected when re-measured");
        }
        return Ok(TuneOutcome {
            winner: v,
            gbs: median,
            candidates: led.seen.len(),
            seconds: led.spent,
            stopped,
            trials: led.trials,
            rejected: led.rejected,
        });
    }
    Err(SearchError::NoCorrectVariant(led.seen.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic simulated GPU: a score per variant, optional noise, some
    /// variants wrong.
    struct Sim {
        samples: usize,
        cost: f64,
        noise: f64,
        rng: ChaCha8Rng,
        wrong: fn(&Variant) -> bool,
        score: fn(&Variant) -> f64,
        calls: usize,
    }

    impl MeasureSource for Sim {
        fn samples(&self) -> usize {
            self.samples
        }
        fn measure(
            &mut self,
            v: &Variant,
            _reps: u32,
        ) -> Result<(Vec<SampleResult>, f64), SearchError> {
            self.calls += 1;
            let res = (0..self.samples)
                .map(|_| {
                    let wrong = (self.wrong)(v);
                    let jitter = 1.0 + self.noise * (self.rng.random::<f64>() - 0.5);
                    SampleResult {
                        correct: !wrong,
                        rel_err: if wrong { 0.5 } else { 1e-7 },
                        gbs: if wrong { 0.0 } else { (self.score)(v) * jitter },
                        median_us: 10.0,
                        error: None,
                    }
                })
                .collect();
            Ok((res, self.cost))
        }
    }

    fn score(v: &Variant) -> f64 {
        let base = match v.strategy {
            Strategy::GroupPerRow => 1000.0 + 50.0 * (v.lanes as f64).log2(),
            Strategy::NnzSplit => 900.0,
            Strategy::ThreadPerRow => 500.0,
            Strategy::BlockPerRow => 100.0,
            Strategy::Diagonal => 50.0,
            Strategy::Binned => 60.0,
            Strategy::Tiled => 70.0,
            Strategy::Narrow => 80.0,
        };
        base + if v.stream_y { 30.0 } else { 0.0 } + v.block as f64 / 100.0
    }

    fn sim(wrong: fn(&Variant) -> bool, noise: f64, cost: f64) -> Sim {
        Sim {
            samples: 2,
            cost,
            noise,
            rng: ChaCha8Rng::seed_from_u64(1),
            wrong,
            score,
            calls: 0,
        }
    }

    fn proposals() -> Vec<Variant> {
        sparserl_policies::Prior
            .propose(
                &sparserl_rt::Features {
                    mean_row: 6.0,
                    p90_row: 9.0,
                    p99_row: 12.0,
                    ..Default::default()
                },
                sparserl_rt::ValueType::F32,
                12,
            )
            .into_iter()
            .map(|p| p.variant)
            .collect()
    }

    use sparserl_policies::Policy;

    #[test]
    fn a_wrong_variant_is_never_chosen() {
        // The fastest family (8+ lanes) is wrong: it must never win.
        let mut s = sim(
            |v| v.strategy == Strategy::GroupPerRow && v.lanes >= 8,
            0.0,
            0.1,
        );
        let out = search(&proposals(), &mut s, &SearchConfig::default()).unwrap();
        assert!(!(out.winner.strategy == Strategy::GroupPerRow && out.winner.lanes >= 8));
        assert!(
            out.trials.iter().any(|t| !t.correct),
            "the wrong variant was tried"
        );
        for t in out.trials.iter().filter(|t| t.variant == out.winner) {
            assert!(t.correct);
        }
        // Every failed trial is a rejection with its reason, and nothing else is.
        let failed: Vec<Variant> = out
            .trials
            .iter()
            .filter(|t| !t.correct)
            .map(|t| t.variant)
            .collect();
        let rejected: Vec<Variant> = out.rejected.iter().map(|r| r.variant).collect();
        assert_eq!(failed, rejected);
        for r in &out.rejected {
            assert!(r.reason.contains("wrong result"), "{}", r.reason);
        }
    }

    #[test]
    fn finds_the_best_of_a_simple_landscape() {
        let mut s = sim(|_| false, 0.0, 0.1);
        let cfg = SearchConfig {
            max_candidates: 200,
            budget_seconds: 100.0,
            patience: 6,
            ..Default::default()
        };
        let out = search(&proposals(), &mut s, &cfg).unwrap();
        assert_eq!(out.winner.strategy, Strategy::GroupPerRow);
        assert_eq!(out.winner.lanes, 32);
        assert!(out.winner.stream_y);
    }

    #[test]
    fn the_budget_is_respected() {
        // Every measurement costs 0.25 s; the landscape keeps improving slowly
        // enough that only the budget can stop the search.
        let mut s = sim(|_| false, 0.0, 0.25);
        let cfg = SearchConfig {
            budget_seconds: 10.0,
            patience: 1000,
            max_candidates: 10_000,
            ..Default::default()
        };
        let out = search(&proposals(), &mut s, &cfg).unwrap();
        let explore: f64 = out
            .trials
            .iter()
            .filter(|t| t.phase != "final" && t.phase != "verify")
            .map(|t| t.seconds)
            .sum();
        assert!(
            explore <= 10.0 * (1.0 - FINALIST_RESERVE) + 0.25 + 1e-9,
            "exploration spent {explore}"
        );
        // One finalist round may overrun by at most its own cost, and the
        // winner's re-check (one measurement) comes on top.
        assert!(
            out.seconds <= 10.0 + 3.0 * 0.25 + 0.25 + 1e-9,
            "total {}",
            out.seconds
        );
        let verify: Vec<&Trial> = out.trials.iter().filter(|t| t.phase == "verify").collect();
        assert_eq!(verify.len(), 1);
        assert_eq!(verify[0].variant, out.winner);
        let cfg = SearchConfig {
            max_candidates: 5,
            budget_seconds: 1e9,
            ..Default::default()
        };
        let out = search(&proposals(), &mut sim(|_| false, 0.0, 1.0), &cfg).unwrap();
        assert_eq!(out.candidates, 5);
    }

    #[test]
    fn cheap_measurements_keep_exploring_before_the_patience_stop() {
        // A flat landscape: nothing ever improves, measurements are cheap.
        let mut s = sim(|_| false, 0.0, 0.001);
        s.score = |_| 100.0;
        let cfg = SearchConfig {
            patience: 1,
            ..Default::default()
        };
        let out = search(&proposals(), &mut s, &cfg).unwrap();
        assert!(
            out.candidates >= cfg.min_explore.min(cfg.max_candidates),
            "stopped after {} candidates: {}",
            out.candidates,
            out.stopped
        );
    }

    #[test]
    fn layout_strategies_are_measured_only_where_they_apply() {
        // A source whose samples have the diagonal layout, on which diagonal
        // kernels are fastest: the search proposes them and one wins.
        struct Layout(Sim, bool);
        impl MeasureSource for Layout {
            fn samples(&self) -> usize {
                self.0.samples()
            }
            fn measure(
                &mut self,
                v: &Variant,
                reps: u32,
            ) -> Result<(Vec<SampleResult>, f64), SearchError> {
                assert!(self.applicable(v), "measured an inapplicable {v}");
                self.0.measure(v, reps)
            }
            fn applicable(&self, v: &Variant) -> bool {
                self.1 || !v.strategy.needs_layout()
            }
        }
        let mut fast = sim(|_| false, 0.0, 0.01);
        fast.score = |v| match v.strategy {
            Strategy::Diagonal => 3000.0 + v.unroll as f64,
            _ => score(v),
        };
        let mut with = Layout(fast, true);
        let out = search(&proposals(), &mut with, &SearchConfig::default()).unwrap();
        assert_eq!(out.winner.strategy, Strategy::Diagonal);
        assert!(out.trials.iter().any(|t| t.phase == "layout"));
        // Without the layout, no diagonal variant is ever measured.
        let mut without = Layout(sim(|_| false, 0.0, 0.01), false);
        let out = search(&proposals(), &mut without, &SearchConfig::default()).unwrap();
        assert!(
            out.trials
                .iter()
                .all(|t| t.variant.strategy != Strategy::Diagonal)
        );
    }

    #[test]
    fn layout_proposals_cover_every_layout_strategy() {
        let policy = [Variant {
            lanes: 4,
            ..Variant::of(Strategy::GroupPerRow)
        }];
        let out = layout_proposals(&policy);
        for s in Strategy::ALL.iter().filter(|s| s.needs_layout()) {
            assert!(out.iter().any(|v| v.strategy == *s), "{s:?} not proposed");
        }
        for v in &out {
            assert_eq!(*v, v.canonical());
            v.validate().unwrap();
        }
        let unique: std::collections::HashSet<_> = out.iter().collect();
        assert_eq!(unique.len(), out.len());
        // Lane-mapped layout kernels follow the policy's lanes: 4, 2 and 8.
        for s in [Strategy::Binned, Strategy::Narrow] {
            let mut lanes: Vec<u32> = out
                .iter()
                .filter(|v| v.strategy == s)
                .map(|v| v.lanes)
                .collect();
            lanes.sort_unstable();
            assert_eq!(lanes, vec![2, 4, 8], "{s:?}");
        }
        assert!(
            out.iter()
                .any(|v| v.strategy == Strategy::Tiled && v.stream_y)
        );
    }

    #[test]
    fn a_noisy_tie_does_not_flip_the_incumbent() {
        // Two finalists whose true speeds are equal, measured with 5% noise:
        // the first-ranked incumbent stays.
        struct Tie(ChaCha8Rng, Variant, Variant);
        impl MeasureSource for Tie {
            fn samples(&self) -> usize {
                1
            }
            fn measure(
                &mut self,
                v: &Variant,
                _r: u32,
            ) -> Result<(Vec<SampleResult>, f64), SearchError> {
                let base = if *v == self.1 {
                    1001.0
                } else if *v == self.2 {
                    1000.0
                } else {
                    10.0
                };
                let g = base * (1.0 + 0.05 * (self.0.random::<f64>() - 0.5));
                Ok((
                    vec![SampleResult {
                        correct: true,
                        rel_err: 0.0,
                        gbs: g,
                        median_us: 1.0,
                        error: None,
                    }],
                    0.01,
                ))
            }
        }
        let a = Variant::of(Strategy::GroupPerRow);
        let b = Variant::of(Strategy::NnzSplit);
        for seed in 0..20 {
            let mut src = Tie(ChaCha8Rng::seed_from_u64(seed), a, b);
            let cfg = SearchConfig {
                initial: 2,
                max_candidates: 2,
                finalists: 2,
                ..Default::default()
            };
            let out = search(&[a, b], &mut src, &cfg).unwrap();
            let first = out
                .trials
                .iter()
                .filter(|t| t.phase != "final" && t.phase != "verify")
                .max_by(|x, y| x.gbs.total_cmp(&y.gbs))
                .unwrap()
                .variant;
            assert_eq!(
                out.winner, first,
                "seed {seed}: noise flipped the incumbent"
            );
        }
    }

    #[test]
    fn neighbours_differ_in_one_parameter() {
        let v = Variant::of(Strategy::NnzSplit);
        let n = neighbors(&v);
        assert!(n.iter().any(|w| w.items == 8 && w.block == v.block));
        for w in &n {
            w.validate().unwrap();
            let diffs = [
                w.strategy != v.strategy,
                w.block != v.block,
                w.lanes != v.lanes,
                w.items != v.items,
                w.unroll != v.unroll,
                w.ldg_x != v.ldg_x,
                w.stream_y != v.stream_y,
                w.min_blocks != v.min_blocks,
            ];
            assert_eq!(diffs.iter().filter(|d| **d).count(), 1, "{w}");
        }
    }

    #[test]
    fn mutation_and_crossover_stay_valid() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut v = Variant::of(Strategy::ThreadPerRow);
        for _ in 0..500 {
            let w = mutate(&v, &mut rng);
            w.validate().unwrap();
            assert_eq!(w, w.canonical());
            let c = crossover(&v, &w, &mut rng);
            c.validate().unwrap();
            v = w;
        }
    }

    #[test]
    fn all_wrong_is_an_error() {
        let mut s = sim(|_| true, 0.0, 0.1);
        let e = search(
            &proposals(),
            &mut s,
            &SearchConfig {
                max_candidates: 20,
                ..Default::default()
            },
        );
        assert!(matches!(e, Err(SearchError::NoCorrectVariant(_))));
    }

    /// Reason of the rejection of `v` in `out`, if it was rejected.
    fn rejection<'a>(out: &'a TuneOutcome, v: &Variant) -> Option<&'a Rejection> {
        out.rejected.iter().find(|r| r.variant == *v)
    }

    /// Asserts the winner passed every check it had, including the final
    /// re-check (the last trial), and that a rejected variant is never
    /// measured after its failing trial.
    fn assert_trustworthy(out: &TuneOutcome) {
        for t in out.trials.iter().filter(|t| t.variant == out.winner) {
            assert!(t.correct, "winner {} failed a check: {t:?}", out.winner);
        }
        let last = out.trials.last().unwrap();
        assert_eq!((last.phase.as_str(), last.variant), ("verify", out.winner));
        assert!(rejection(out, &out.winner).is_none());
        for r in &out.rejected {
            let fail = out
                .trials
                .iter()
                .position(|t| t.variant == r.variant && !t.correct)
                .unwrap_or_else(|| panic!("no failed trial for rejected {}", r.variant));
            assert_eq!(out.trials[fail].phase, r.phase);
            assert!(
                out.trials[fail + 1..]
                    .iter()
                    .all(|t| t.variant != r.variant),
                "{} measured again after it was rejected",
                r.variant
            );
        }
    }

    /// A source over `Sim` where the variants `racy` selects give a wrong
    /// result on every third of their own measurements, starting at the
    /// `3 - phase`-th one (a race that loses one time in three).
    struct Racy {
        sim: Sim,
        racy: fn(&Variant) -> bool,
        phase: usize,
        counts: HashMap<Variant, usize>,
    }

    impl MeasureSource for Racy {
        fn samples(&self) -> usize {
            self.sim.samples()
        }
        fn measure(
            &mut self,
            v: &Variant,
            reps: u32,
        ) -> Result<(Vec<SampleResult>, f64), SearchError> {
            let (mut res, secs) = self.sim.measure(v, reps)?;
            if (self.racy)(v) {
                let n = self.counts.entry(*v).or_insert(0);
                *n += 1;
                if (*n + self.phase).is_multiple_of(3) {
                    res[1] = SampleResult {
                        correct: false,
                        rel_err: 0.3,
                        gbs: 0.0,
                        ..res[1].clone()
                    };
                }
            }
            Ok((res, secs))
        }
    }

    #[test]
    fn a_fastest_kernel_wrong_one_time_in_three_is_never_chosen() {
        // The fastest family (group-per-row with 8+ lanes) races: its result
        // is wrong on one measurement in three. Whether the wrong one comes
        // first (exploration), second (a finalist round) or third (a later
        // round, or the winner's re-check), it must never win.
        let racy = |v: &Variant| v.strategy == Strategy::GroupPerRow && v.lanes >= 8;
        for rounds in [3, 1] {
            for phase in 0..3 {
                let mut src = Racy {
                    sim: sim(|_| false, 0.0, 0.1),
                    racy,
                    phase,
                    counts: HashMap::new(),
                };
                let cfg = SearchConfig {
                    rounds,
                    ..Default::default()
                };
                let out = search(&proposals(), &mut src, &cfg).unwrap();
                let at = format!("rounds {rounds}, phase {phase}");
                assert!(!racy(&out.winner), "{at}: racy {} chosen", out.winner);
                assert_trustworthy(&out);
                let racy_rejections: Vec<&Rejection> =
                    out.rejected.iter().filter(|r| racy(&r.variant)).collect();
                assert!(
                    !racy_rejections.is_empty(),
                    "{at}: no racy variant measured"
                );
                for r in &racy_rejections {
                    assert!(
                        r.reason.contains("sample 1: wrong result"),
                        "{at}: {}",
                        r.reason
                    );
                }
                // When the first measurement passes, the race is caught only
                // by re-measuring: in a finalist round or by the re-check.
                let late = racy_rejections
                    .iter()
                    .any(|r| r.phase == "final" || r.phase == "verify");
                assert_eq!(late, phase != 2, "{at}: {racy_rejections:?}");
                if rounds == 1 && phase == 0 {
                    assert!(
                        racy_rejections.iter().any(|r| r.phase == "verify"),
                        "{at}: the re-check caught nothing: {racy_rejections:?}"
                    );
                }
            }
        }
    }

    /// A source with fixed speeds for a few variants, 10 GB/s for the rest,
    /// where `bad` turns wrong from its `from`-th measurement on.
    struct Fixed {
        speeds: Vec<(Variant, f64)>,
        bad: Variant,
        from: usize,
        calls: usize,
    }

    impl MeasureSource for Fixed {
        fn samples(&self) -> usize {
            1
        }
        fn measure(
            &mut self,
            v: &Variant,
            _reps: u32,
        ) -> Result<(Vec<SampleResult>, f64), SearchError> {
            let wrong = *v == self.bad && {
                self.calls += 1;
                self.calls >= self.from
            };
            let gbs = self
                .speeds
                .iter()
                .find(|(w, _)| w == v)
                .map_or(10.0, |(_, g)| *g);
            Ok((
                vec![SampleResult {
                    correct: !wrong,
                    rel_err: if wrong { 1.0 } else { 0.0 },
                    gbs: if wrong { 0.0 } else { gbs },
                    median_us: 1.0,
                    error: None,
                }],
                0.01,
            ))
        }
    }

    #[test]
    fn a_winner_that_fails_its_recheck_gives_way_to_the_next_best() {
        let a = Variant::of(Strategy::GroupPerRow);
        let b = Variant::of(Strategy::NnzSplit);
        let c = Variant::of(Strategy::ThreadPerRow);
        let speeds = vec![(a, 1200.0), (b, 1000.0), (c, 800.0)];
        // `a` passes exploration and both finalist rounds, then fails its
        // re-check (its 4th measurement): the next finalist, `b`, is checked
        // and wins with its finalist median.
        let mut src = Fixed {
            speeds: speeds.clone(),
            bad: a,
            from: 4,
            calls: 0,
        };
        let cfg = SearchConfig {
            initial: 3,
            max_candidates: 3,
            finalists: 2,
            rounds: 2,
            budget_seconds: 100.0,
            ..Default::default()
        };
        let out = search(&[a, b, c], &mut src, &cfg).unwrap();
        assert_eq!(out.winner, b);
        assert!((out.gbs - 1000.0).abs() < 1e-9, "{}", out.gbs);
        assert_trustworthy(&out);
        let r = rejection(&out, &a).expect("a rejected");
        assert_eq!(r.phase, "verify");
        assert!(r.reason.contains("wrong result"), "{}", r.reason);
        let verified: Vec<Variant> = out
            .trials
            .iter()
            .filter(|t| t.phase == "verify")
            .map(|t| t.variant)
            .collect();
        assert_eq!(verified, [a, b]);
        assert!(
            out.stopped.contains("1 rejected when re-measured"),
            "{}",
            out.stopped
        );
        // With one finalist, the fallback is a candidate that was only
        // explored: it is re-measured like a finalist (two rounds), then
        // re-checked, and its finalist median is reported.
        let mut src = Fixed {
            speeds,
            bad: a,
            from: 4,
            calls: 0,
        };
        let cfg = SearchConfig {
            finalists: 1,
            ..cfg
        };
        let out = search(&[a, b, c], &mut src, &cfg).unwrap();
        assert_eq!(out.winner, b);
        assert!((out.gbs - 1000.0).abs() < 1e-9, "{}", out.gbs);
        assert_trustworthy(&out);
        assert_eq!(
            rejection(&out, &a).map(|r| r.phase.as_str()),
            Some("verify")
        );
        let tail: Vec<(&str, Variant)> = out
            .trials
            .iter()
            .skip_while(|t| t.phase != "verify")
            .map(|t| (t.phase.as_str(), t.variant))
            .collect();
        assert_eq!(
            tail,
            [("verify", a), ("final", b), ("final", b), ("verify", b)]
        );
    }

    #[test]
    fn faulty_variants_are_rejected_with_their_reasons() {
        // Four injected faults, each faster than every sound variant:
        // - `wrong`: a wrong result on every sample;
        // - `oob`: the check of sample 1 hits a launch error (an illegal
        //   address, as the harness reports a recoverable launch failure);
        // - `slow`: correct at first, then exceeds the time guard before a
        //   timed launch completes (a failure reported by the source);
        // - `untimed`: claims to be correct but was never timed.
        let wrong = Variant {
            lanes: 32,
            ..Variant::of(Strategy::GroupPerRow)
        };
        let oob = Variant {
            lanes: 16,
            ..Variant::of(Strategy::GroupPerRow)
        };
        let slow = Variant {
            items: 8,
            ..Variant::of(Strategy::NnzSplit)
        };
        let untimed = Variant {
            block: 512,
            ..Variant::of(Strategy::BlockPerRow)
        };
        struct Faulty {
            sim: Sim,
            faults: [Variant; 4],
            slow_calls: usize,
        }
        impl MeasureSource for Faulty {
            fn samples(&self) -> usize {
                self.sim.samples()
            }
            fn measure(
                &mut self,
                v: &Variant,
                reps: u32,
            ) -> Result<(Vec<SampleResult>, f64), SearchError> {
                let (mut res, secs) = self.sim.measure(v, reps)?;
                let [wrong, oob, slow, untimed] = self.faults;
                let failed = |rel_err: f64, msg: &str| SampleResult {
                    correct: false,
                    rel_err,
                    gbs: 0.0,
                    median_us: f64::INFINITY,
                    error: Some(msg.to_string()),
                };
                let fast = |r: &mut SampleResult| r.gbs = 5000.0;
                if *v == wrong {
                    for r in &mut res {
                        *r = SampleResult {
                            correct: false,
                            rel_err: 0.25,
                            gbs: 0.0,
                            ..r.clone()
                        };
                    }
                } else if *v == oob {
                    fast(&mut res[0]);
                    res[1] = failed(
                        f64::INFINITY,
                        "check failed: launch failed: CUDA_ERROR_ILLEGAL_ADDRESS",
                    );
                } else if *v == slow {
                    self.slow_calls += 1;
                    if self.slow_calls == 1 {
                        res.iter_mut().for_each(fast);
                    } else {
                        res[0] = failed(1e-7, "no timed launch completed within the 0.5 s guard");
                    }
                } else if *v == untimed {
                    res.iter_mut().for_each(|r| {
                        r.gbs = f64::NAN;
                        r.median_us = f64::INFINITY;
                    });
                }
                Ok((res, secs))
            }
        }
        let faults = [wrong, oob, slow, untimed];
        let mut src = Faulty {
            sim: sim(|_| false, 0.0, 0.01),
            faults,
            slow_calls: 0,
        };
        let mut props = faults.to_vec();
        props.extend(proposals());
        let out = search(&props, &mut src, &SearchConfig::default()).unwrap();
        assert!(!faults.contains(&out.winner), "{} chosen", out.winner);
        assert_trustworthy(&out);
        let expect = [
            (
                wrong,
                "policy",
                "sample 0: wrong result (relative error 2.50e-1)",
            ),
            (
                oob,
                "policy",
                "sample 1: check failed: launch failed: CUDA_ERROR_ILLEGAL_ADDRESS",
            ),
            (
                slow,
                "final",
                "sample 0: no timed launch completed within the 0.5 s guard",
            ),
            (untimed, "policy", "sample 0: not timed (NaN GB/s"),
        ];
        for (v, phase, reason) in expect {
            let r = rejection(&out, &v).unwrap_or_else(|| panic!("{v} not rejected"));
            assert_eq!(r.phase, phase, "{v}");
            assert!(r.reason.starts_with(reason), "{v}: {}", r.reason);
        }
        // The rejections survive the trip through the cache (serde).
        let back: TuneOutcome =
            serde_json::from_str(&serde_json::to_string(&out).unwrap()).unwrap();
        assert_eq!(back.rejected, out.rejected);
    }

    #[test]
    fn failure_reasons() {
        let ok = SampleResult {
            correct: true,
            rel_err: 1e-7,
            gbs: 100.0,
            median_us: 1.0,
            error: None,
        };
        assert_eq!(failure(&[ok.clone(), ok.clone()], 2), None);
        assert_eq!(
            failure(std::slice::from_ref(&ok), 2).as_deref(),
            Some("measured on 1 of 2 samples")
        );
        assert_eq!(
            failure(&[], 0).as_deref(),
            Some("measured on 0 of 1 samples")
        );
        let err = SampleResult {
            error: Some("boom".into()),
            ..ok.clone()
        };
        assert_eq!(
            failure(&[ok.clone(), err], 2).as_deref(),
            Some("sample 1: boom")
        );
        let zero = SampleResult { gbs: 0.0, ..ok };
        assert!(
            failure(&[zero], 1)
                .unwrap()
                .starts_with("sample 0: not timed")
        );
    }
}
