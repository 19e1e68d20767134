//! Tests of `search`.

use super::*;

mod trust;

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

/// One correct sample at `gbs`, measured at a cost of `seconds`.
fn one_correct_sample(gbs: f64, seconds: f64) -> (Vec<SampleResult>, f64) {
    let res = SampleResult {
        correct: true,
        rel_err: 1e-7,
        gbs,
        median_us: 10.0,
        error: None,
    };
    (vec![res], seconds)
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
        Strategy::Sell => 90.0,
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
            Ok(one_correct_sample(g, 0.01))
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
            w.reorder != v.reorder,
        ];
        assert_eq!(diffs.iter().filter(|d| **d).count(), 1, "{w}");
    }
    assert!(n.iter().any(|w| w.reorder == Reorder::Rcm));
    assert!(n.iter().any(|w| w.reorder == Reorder::Degree));
}

/// A [`Sim`] whose samples are rectangular when `square` is false: no
/// renumbered variant can run.
struct Shaped {
    sim: Sim,
    square: bool,
    measured: Vec<Variant>,
}

impl MeasureSource for Shaped {
    fn samples(&self) -> usize {
        self.sim.samples()
    }
    fn measure(&mut self, v: &Variant, reps: u32) -> Result<(Vec<SampleResult>, f64), SearchError> {
        self.measured.push(*v);
        self.sim.measure(v, reps)
    }
    fn applicable(&self, v: &Variant) -> bool {
        self.square || v.reorder.is_none()
    }
}

/// A correct, noiseless [`Shaped`] source scored by `score`.
fn shaped(score: fn(&Variant) -> f64, square: bool) -> Shaped {
    Shaped {
        sim: Sim {
            score,
            ..sim(|_| false, 0.0, 0.1)
        },
        square,
        measured: Vec::new(),
    }
}

#[test]
fn a_renumbering_that_pays_wins_and_one_that_cannot_run_is_never_measured() {
    fn rcm_pays(v: &Variant) -> f64 {
        score(v)
            * match v.reorder {
                Reorder::Rcm => 1.6,
                Reorder::Degree => 0.9,
                Reorder::None => 1.0,
            }
    }
    let cfg = SearchConfig {
        budget_seconds: 60.0,
        ..SearchConfig::default()
    };
    let mut src = shaped(rcm_pays, true);
    let out = search(&proposals(), &mut src, &cfg).unwrap();
    assert_eq!(out.winner.reorder, Reorder::Rcm, "{}", out.winner);
    assert!(out.trials.iter().any(|t| t.phase == "renumber"));
    assert!(out.winner.id().ends_with("+rcm"));

    // Rectangular samples: the same scores, but no renumbered variant runs.
    let mut src = shaped(rcm_pays, false);
    let out = search(&proposals(), &mut src, &cfg).unwrap();
    assert_eq!(out.winner.reorder, Reorder::None);
    assert!(src.measured.iter().all(|v| v.reorder.is_none()));
}

#[test]
fn renumber_proposals_cover_the_other_orders_of_the_best() {
    let a = Variant::of(Strategy::GroupPerRow);
    let b = Variant {
        reorder: Reorder::Rcm,
        ..Variant::of(Strategy::Tiled)
    };
    let c = Variant::of(Strategy::NnzSplit);
    let p = renumber_proposals(&[(a, 3.0), (b, 2.0), (c, 1.0)]);
    assert_eq!(p.len(), 2 * RENUMBER_TOP);
    assert!(p.contains(&Variant {
        reorder: Reorder::Degree,
        ..a
    }));
    assert!(p.contains(&Variant {
        reorder: Reorder::None,
        ..b
    }));
    assert!(p.iter().all(|v| v.strategy != Strategy::NnzSplit));
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

#[test]
fn the_allowed_numberings_bind_every_candidate() {
    fn rcm_pays(v: &Variant) -> f64 {
        score(v) * if v.reorder == Reorder::Rcm { 1.6 } else { 1.0 }
    }
    // Only the given order: the faster renumbering is never measured.
    let mut src = shaped(rcm_pays, true);
    let cfg = SearchConfig {
        reorders: vec![Reorder::None],
        ..SearchConfig::default()
    };
    let out = search(&proposals(), &mut src, &cfg).unwrap();
    assert_eq!(out.winner.reorder, Reorder::None);
    assert!(src.measured.iter().all(|v| v.reorder.is_none()));
    // Only degree order: every candidate, the policy's included, takes it.
    src.measured.clear();
    let cfg = SearchConfig {
        reorders: vec![Reorder::Degree],
        ..SearchConfig::default()
    };
    let out = search(&proposals(), &mut src, &cfg).unwrap();
    assert_eq!(out.winner.reorder, Reorder::Degree);
    assert!(!src.measured.is_empty());
    assert!(src.measured.iter().all(|v| v.reorder == Reorder::Degree));
}

/// A source with fixed speeds for a few variants, 10 GB/s for the rest,
/// where `bad`, if any, turns wrong from its `from`-th measurement on.
struct Fixed {
    speeds: Vec<(Variant, f64)>,
    bad: Option<Variant>,
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
        let wrong = self.bad == Some(*v) && {
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
fn the_climb_also_starts_from_the_runners_up() {
    let p = proposals();
    let (t, r) = (p[0].canonical(), p[1].canonical());
    let w = Variant {
        block: if r.block == 64 { 128 } else { 64 },
        ..r
    }
    .canonical();
    assert!(w != t && !neighbors(&t).contains(&w), "{t} {r} {w}");
    assert!(neighbors(&r).contains(&w));
    // A landscape with a trap: the policy's first proposal `t` beats every
    // one of its neighbours, the runner-up `r` is 1% slower, and `w`, one
    // block size away from `r` (two parameters away from `t`), is 10% faster
    // than `t`; everything else is slow. The evolution stops after one
    // generation without improvement.
    let cfg = SearchConfig {
        initial: 2,
        patience: 1,
        min_explore: 0,
        budget_seconds: 1000.0,
        max_candidates: 1000,
        ..SearchConfig::default()
    };
    let mut src = Fixed {
        speeds: vec![(w, 1100.0), (t, 1000.0), (r, 990.0)],
        bad: None,
        from: 0,
        calls: 0,
    };
    let out = search(&p[..2], &mut src, &cfg).unwrap();
    assert_eq!(out.winner, w, "{}", out.stopped);
    assert!(
        out.trials
            .iter()
            .any(|tr| tr.variant == w && tr.phase == "climb"),
        "{}",
        out.stopped
    );
}
