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
//!    Then the renumber phase: the [`RENUMBER_TOP`] best so far on the
//!    samples renumbered each way ([`renumber_proposals`]; reverse
//!    Cuthill-McKee and degree order, square samples only), timed with the
//!    device permutations of `x` and `y` inside, so a renumbering wins only
//!    when its locality gain pays for them.
//! 2. Generations: parents = the best `parents` correct variants; children by
//!    mutating one parameter (strategy, block, lanes, items, unroll, `x` load
//!    path, streaming stores, numbering, register cap) or crossing two parents; children
//!    already measured are skipped. Stop when the budget (seconds or
//!    candidates) is spent or `patience` generations bring no improvement
//!    larger than 1% (the latter only after `min_explore` candidates or a
//!    quarter of the budget, so cheap small-matrix searches keep exploring).
//! 3. Hill climbing from several starts: every single-parameter neighbour
//!    ([`neighbors`]) of the best variant not yet climbed from among the
//!    `parents` best is measured, and again from the next such variant (a
//!    better neighbour found on the way is then the next start), until
//!    each of the `parents` best has been a start or the budget is spent.
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
use sparserl_rt::reorder::Reorder;
use sparserl_rt::{Strategy, Variant};
use std::collections::HashMap;
use thiserror::Error;

pub mod energy;
pub mod spmm;

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
    Source(#[source] sparserl_rt::RtError),
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

impl SampleResult {
    /// A variant that failed on the sample (not correct, not timed).
    pub fn failed(error: impl Into<String>) -> SampleResult {
        SampleResult {
            correct: false,
            rel_err: f64::INFINITY,
            gbs: 0.0,
            median_us: f64::INFINITY,
            error: Some(error.into()),
        }
    }
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
/// and 256 with streaming loads; SELL-C-sigma kernels with block 256 and
/// unroll 1 or 2, and block 512; all with `__ldg` loads of `x`.
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
    out.extend(
        [(256, 1), (256, 2), (512, 1)].map(|(block, unroll)| Variant {
            block,
            unroll,
            ..Variant::of(Strategy::Sell)
        }),
    );
    out
}

/// One entry of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Variant id.
    pub variant: Variant,
    /// Phase: `policy`, `layout`, `renumber`, `mutate`, `crossover`, `climb`, `final`
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
    /// Parents per generation, and starts of the hill climb.
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
    /// The numberings the search may choose from (every one by default, and
    /// when empty; a single one is applied to every candidate).
    pub reorders: Vec<Reorder>,
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
            reorders: Reorder::ALL.to_vec(),
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

/// How many of the best variants the renumber phase tries in each order.
pub const RENUMBER_TOP: usize = 2;

/// The renumber phase's candidates: the [`RENUMBER_TOP`] best of `ranked`
/// (fastest first) in every order other than their own.
pub fn renumber_proposals(ranked: &[(Variant, f64)]) -> Vec<Variant> {
    let mut out = Vec::new();
    for (v, _) in ranked.iter().take(RENUMBER_TOP) {
        for reorder in Reorder::ALL {
            let c = Variant { reorder, ..*v };
            if c != *v && !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Mutates one parameter of `v` (result is canonical and valid).
pub fn mutate(v: &Variant, rng: &mut impl Rng) -> Variant {
    for _ in 0..32 {
        let mut c = *v;
        match rng.random_range(0..9) {
            0 => {
                let s = *Strategy::ALL.choose(rng).unwrap_or(&Strategy::NnzSplit);
                c = Variant {
                    block: v.block,
                    ldg_x: v.ldg_x,
                    reorder: v.reorder,
                    ..Variant::of(s)
                };
            }
            1 => c.block = *[64, 128, 256, 512, 1024].choose(rng).unwrap_or(&256),
            2 => c.lanes = *[2, 4, 8, 16, 32].choose(rng).unwrap_or(&8),
            3 => c.items = *[1, 2, 3, 4, 6, 8, 12, 16].choose(rng).unwrap_or(&4),
            4 => c.unroll = *[1, 2, 4, 8].choose(rng).unwrap_or(&1),
            5 => c.ldg_x = !c.ldg_x,
            6 => c.stream_y = !c.stream_y,
            7 => c.reorder = *Reorder::ALL.choose(rng).unwrap_or(&Reorder::None),
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
    for reorder in Reorder::ALL {
        push(Variant { reorder, ..*v });
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
    c.reorder = if r.random_bool(0.5) {
        a.reorder
    } else {
        b.reorder
    };
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
    /// The numberings candidates may use ([`SearchConfig::reorders`]).
    allowed: Vec<Reorder>,
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
    /// and inapplicable ones, and those in a numbering not allowed; with one
    /// numbering allowed, every candidate takes it); whether it was measured.
    fn explore(
        &mut self,
        source: &mut dyn MeasureSource,
        v: Variant,
        phase: &str,
        reps: u32,
    ) -> Result<bool, SearchError> {
        let v = match self.allowed.as_slice() {
            [only] => Variant {
                reorder: *only,
                ..v
            },
            _ => v,
        }
        .canonical();
        if !self.allowed.is_empty() && !self.allowed.contains(&v.reorder) {
            return Ok(false);
        }
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

impl Ledger {
    fn new(cfg: &SearchConfig) -> Ledger {
        Ledger {
            allowed: cfg.reorders.clone(),
            seen: HashMap::new(),
            trials: Vec::new(),
            rejected: Vec::new(),
            spent: 0.0,
        }
    }

    /// Whether exploration must stop: its share of the budget (the rest is
    /// reserved for the finalists' re-measurement) or the candidate cap is
    /// spent.
    fn over_budget(&self, cfg: &SearchConfig) -> bool {
        let explore_budget = cfg.budget_seconds * (1.0 - FINALIST_RESERVE);
        self.spent >= explore_budget || self.seen.len() >= cfg.max_candidates
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
    let mut led = Ledger::new(cfg);
    let mut stopped = String::from("search space exhausted");
    explore_initial(&mut led, source, proposals, cfg, &mut stopped)?;
    explore_renumbered(&mut led, source, cfg)?;
    evolve(&mut led, source, cfg, &mut rng, &mut stopped)?;
    climb(&mut led, source, cfg, &mut stopped)?;
    if led.over_budget(cfg) && !stopped.contains("budget") {
        stopped = format!("{stopped}; budget spent");
    }
    let ranked = led.ranked();
    if ranked.is_empty() {
        return Err(SearchError::NoCorrectVariant(led.seen.len()));
    }
    let finalists = &ranked[..cfg.finalists.max(1).min(ranked.len())];
    let (rounds, rounds_taken) = finalist_rounds(&mut led, source, cfg, finalists)?;
    let order = preference_order(&ranked, finalists, &rounds, cfg);
    confirm_winner(led, source, cfg, &order, rounds_taken, stopped)
}

/// Phase 1a: the policy's first few proposals, then the layout strategies
/// (when the samples have their layout), then the rest of the policy's
/// proposals.
fn explore_initial(
    led: &mut Ledger,
    source: &mut dyn MeasureSource,
    proposals: &[Variant],
    cfg: &SearchConfig,
    stopped: &mut String,
) -> Result<(), SearchError> {
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
        if led.over_budget(cfg) {
            *stopped = "budget spent during the initial proposals".into();
            break;
        }
        led.explore(source, v, phase, cfg.reps)?;
    }
    Ok(())
}

/// Phase 1b, renumbering: the best kernels so far on the matrix renumbered
/// each way (square samples; the source times the permutations of x and y
/// too). Mutation, crossover and climbing then carry the numbering along.
fn explore_renumbered(
    led: &mut Ledger,
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
) -> Result<(), SearchError> {
    for v in renumber_proposals(&led.ranked()) {
        if led.over_budget(cfg) {
            break;
        }
        led.explore(source, v, "renumber", cfg.reps)?;
    }
    Ok(())
}

/// Phase 2, generations of mutated and crossed children of the best
/// variants, until the budget is spent or they stop improving.
fn evolve(
    led: &mut Ledger,
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
    rng: &mut ChaCha8Rng,
    stopped: &mut String,
) -> Result<(), SearchError> {
    let mut stale = 0;
    while !led.over_budget(cfg) {
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
        let Some(new) = generation(led, source, cfg, rng, &ranked)? else {
            *stopped = "budget spent".into();
            break;
        };
        let after = led.best().map(|b| b.1).unwrap_or(0.0);
        if after > before * 1.01 {
            stale = 0;
        } else {
            stale += 1;
        }
        let explored = led.seen.len() >= cfg.min_explore || led.spent >= cfg.budget_seconds * 0.25;
        if stale >= cfg.patience && explored {
            *stopped = format!("no improvement in {} generations", cfg.patience);
            break;
        }
        if new == 0 && stale > 0 {
            *stopped = "no new candidates".into();
            break;
        }
    }
    Ok(())
}

/// One generation: `cfg.children` children of the `ranked` parents; how
/// many were new, or `None` when the budget ran out during it.
fn generation(
    led: &mut Ledger,
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
    rng: &mut ChaCha8Rng,
    ranked: &[(Variant, f64)],
) -> Result<Option<usize>, SearchError> {
    let mut new = 0;
    for i in 0..cfg.children {
        if led.over_budget(cfg) {
            return Ok(None);
        }
        let a = ranked[i % ranked.len()].0;
        let (child, phase) = if i % 3 == 2 && ranked.len() > 1 {
            let b = ranked[(i / 3 + 1) % ranked.len()].0;
            (crossover(&a, &b, rng), "crossover")
        } else {
            (mutate(&a, rng), "mutate")
        };
        if led.explore(source, child, phase, cfg.reps)? {
            new += 1;
        }
    }
    Ok(Some(new))
}

/// Phase 3, hill climbing from several starts: every single-parameter
/// neighbour of the best variant not climbed from yet among the `parents`
/// best, until each of those is a start or the budget is spent. A neighbour
/// that beats the others becomes a start in turn (the climb continues from
/// it); the runners-up are starts too, because a local optimum of the fine
/// knobs can sit next to a better kernel one step from a runner-up.
fn climb(
    led: &mut Ledger,
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
    stopped: &mut String,
) -> Result<(), SearchError> {
    let mut climbed = 0;
    let mut starts: Vec<Variant> = Vec::new();
    'climb: while !led.over_budget(cfg) {
        let next = led
            .ranked()
            .into_iter()
            .take(cfg.parents.max(1))
            .find(|(v, _)| !starts.contains(v));
        let Some((start, _)) = next else {
            break;
        };
        starts.push(start);
        for n in neighbors(&start) {
            if led.over_budget(cfg) {
                break 'climb;
            }
            if led.explore(source, n, "climb", cfg.reps)? {
                climbed += 1;
            }
        }
    }
    if climbed > 0 {
        *stopped = format!(
            "{stopped}; then {climbed} neighbours of {} of the best measured",
            starts.len()
        );
    }
    Ok(())
}

/// Per finalist, its GB/s per round of re-measurement; `None` once a check failed.
type Rounds = Vec<Option<Vec<f64>>>;

/// Phase 4: the finalists re-measured in rounds (one always, more within
/// the budget); per finalist its GB/s per round, `None` once a check failed.
/// Also the number of rounds taken.
fn finalist_rounds(
    led: &mut Ledger,
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
    finalists: &[(Variant, f64)],
) -> Result<(Rounds, usize), SearchError> {
    let mut rounds: Rounds = vec![Some(Vec::new()); finalists.len()];
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
    Ok((rounds, rounds_taken))
}

/// Candidates in order of preference, with their finals median when they
/// were a finalist still in: the finalists' winner (the incumbent, the
/// first-ranked finalist still in, unless a challenger beats its median by
/// more than the noise), the other finalists still in (by median), then
/// the rest that never failed (by their first measurement).
fn preference_order(
    ranked: &[(Variant, f64)],
    finalists: &[(Variant, f64)],
    rounds: &[Option<Vec<f64>>],
    cfg: &SearchConfig,
) -> Vec<(Variant, Option<f64>)> {
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
    order
}

/// Phase 5: the first candidate of `order` that passes every check wins.
/// One that was not a finalist is first re-measured like one (as many
/// rounds as the finalists had, all checked); each then gets one more
/// checked measurement.
fn confirm_winner(
    mut led: Ledger,
    source: &mut dyn MeasureSource,
    cfg: &SearchConfig,
    order: &[(Variant, Option<f64>)],
    rounds_taken: usize,
    mut stopped: String,
) -> Result<TuneOutcome, SearchError> {
    'candidates: for &(v, finals_median) in order {
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
mod tests;
