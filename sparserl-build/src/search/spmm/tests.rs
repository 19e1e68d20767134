//! Tests of the SpMM search against a simulated CPU source.

use super::*;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmStrategy, spmm_space};

/// A deterministic fake GPU: a score per (variant, width), optional noise,
/// some variants wrong, a fixed cost per call.
struct Fake {
    samples: usize,
    cost: f64,
    noise: f64,
    calls: u64,
    wrong: fn(&SpmmVariant, usize) -> bool,
    score: fn(&SpmmVariant, usize) -> f64,
}

impl SpmmSource for Fake {
    fn samples(&self) -> usize {
        self.samples
    }
    fn measure(
        &mut self,
        v: &SpmmVariant,
        n: usize,
        _reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError> {
        self.calls += 1;
        let wrong = (self.wrong)(v, n);
        // A reproducible jitter in [-noise/2, noise/2].
        let jitter = 1.0 + self.noise * ((self.calls * 7919 % 1000) as f64 / 1000.0 - 0.5);
        let res = (0..self.samples)
            .map(|_| SampleResult {
                correct: !wrong,
                rel_err: if wrong { 0.5 } else { 1e-7 },
                gbs: if wrong {
                    0.0
                } else {
                    (self.score)(v, n) * jitter
                },
                median_us: 10.0,
                error: None,
            })
            .collect();
        Ok((res, self.cost))
    }
}

/// Faster with wider vector loads and larger blocks; nnz-split best at
/// wide N, row-warp at narrow N.
fn score(v: &SpmmVariant, n: usize) -> f64 {
    let base = match (v.strategy, n >= 64) {
        (SpmmStrategy::NnzSplit, true) => 1000.0,
        (SpmmStrategy::RowWarp, false) => 1000.0,
        _ => 500.0,
    };
    base + 20.0 * f64::from(v.vec) + f64::from(v.block) / 100.0 + f64::from(v.items)
}

fn fake(wrong: fn(&SpmmVariant, usize) -> bool, noise: f64, cost: f64) -> Fake {
    Fake {
        samples: 2,
        cost,
        noise,
        calls: 0,
        wrong,
        score,
    }
}

fn candidates(widths: &[usize]) -> Vec<(usize, Vec<SpmmVariant>)> {
    widths
        .iter()
        .map(|&n| (n, spmm_space(n, DenseLayout::RowMajor)))
        .collect()
}

fn best_of_space(n: usize, wrong: fn(&SpmmVariant, usize) -> bool) -> SpmmVariant {
    let mut best: Option<(SpmmVariant, f64)> = None;
    for v in spmm_space(n, DenseLayout::RowMajor) {
        if wrong(&v, n) {
            continue;
        }
        let s = score(&v, n);
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((v, s));
        }
    }
    best.unwrap().0
}

fn roomy() -> SpmmSearchConfig {
    SpmmSearchConfig {
        budget_seconds: 1e6,
        max_candidates: 10_000,
        ..SpmmSearchConfig::default()
    }
}

#[test]
fn finds_the_best_variant_of_every_width() {
    let mut f = fake(|_, _| false, 0.0, 0.01);
    let out = search_spmm(&candidates(&[32, 128]), &mut f, &roomy()).unwrap();
    assert_eq!(out.widths.len(), 2);
    for w in &out.widths {
        assert_eq!(w.winner, best_of_space(w.n, |_, _| false), "N = {}", w.n);
        assert_eq!(w.candidates, spmm_space(w.n, DenseLayout::RowMajor).len());
        assert!(w.gbs > 0.0);
    }
    assert_eq!(out.widths[0].winner.strategy, SpmmStrategy::RowWarp);
    assert_eq!(out.widths[1].winner.strategy, SpmmStrategy::NnzSplit);
    // Every trial is of a declared width.
    assert!(out.trials.iter().all(|t| t.n == 32 || t.n == 128));
}

#[test]
fn a_wrong_variant_is_never_chosen() {
    // The fastest family at N = 128 (nnz-split) is wrong there.
    let wrong = |v: &SpmmVariant, n: usize| v.strategy == SpmmStrategy::NnzSplit && n == 128;
    let mut f = fake(wrong, 0.0, 0.01);
    let out = search_spmm(&candidates(&[128]), &mut f, &roomy()).unwrap();
    let w = &out.widths[0];
    assert_ne!(w.winner.strategy, SpmmStrategy::NnzSplit);
    assert_eq!(w.winner, best_of_space(128, wrong));
    assert!(!w.rejected.is_empty());
    assert!(
        w.rejected
            .iter()
            .all(|(v, why)| v.strategy == SpmmStrategy::NnzSplit && why.contains("wrong result"))
    );
    // A rejected variant is measured once only.
    let nnz_trials = out
        .trials
        .iter()
        .filter(|t| t.variant.strategy == SpmmStrategy::NnzSplit)
        .count();
    assert_eq!(nnz_trials, w.rejected.len());
    // The winner passed every one of its checks, the last one included.
    let mine: Vec<&SpmmTrial> = out
        .trials
        .iter()
        .filter(|t| t.variant == w.winner)
        .collect();
    assert!(mine.iter().all(|t| t.correct));
    assert_eq!(mine.last().unwrap().phase, "verify");
}

#[test]
fn nothing_correct_is_an_error() {
    let mut f = fake(|_, _| true, 0.0, 0.01);
    let e = search_spmm(&candidates(&[64]), &mut f, &roomy()).unwrap_err();
    assert!(
        matches!(e, SearchError::NoCorrectVariant(n) if n > 0),
        "{e}"
    );
}

#[test]
fn the_budget_is_shared_by_the_widths_and_respected() {
    let mut f = fake(|_, _| false, 0.0, 0.5);
    let cfg = SpmmSearchConfig {
        budget_seconds: 20.0,
        max_candidates: 10_000,
        ..SpmmSearchConfig::default()
    };
    let out = search_spmm(&candidates(&[32, 64]), &mut f, &cfg).unwrap();
    // Exploration of each width stays within its share less the finalist
    // reserve (plus the one measurement that crossed it); finalists and the
    // check come on top, at most 3 rounds of 3 finalists and one check.
    for w in &out.widths {
        let explore: f64 = out
            .trials
            .iter()
            .filter(|t| t.n == w.n && (t.phase == "explore" || t.phase == "climb"))
            .map(|t| t.seconds)
            .sum();
        assert!(
            explore <= 10.0 * (1.0 - FINALIST_RESERVE) + 0.5 + 1e-9,
            "N = {}: {explore}",
            w.n
        );
        assert!(w.stopped.contains("budget"), "{}", w.stopped);
    }
    assert!(
        out.seconds <= 20.0 + 2.0 * (10.0 * 0.5) + 1e-9,
        "{}",
        out.seconds
    );
    // The candidate limit stops exploration too.
    let cfg = SpmmSearchConfig {
        max_candidates: 5,
        ..roomy()
    };
    let out = search_spmm(&candidates(&[64]), &mut fake(|_, _| false, 0.0, 0.1), &cfg).unwrap();
    assert_eq!(out.widths[0].candidates, 5);
}

#[test]
fn a_challenger_within_the_noise_does_not_replace_the_incumbent() {
    // Two variants 0.5% apart with 5% measurement noise: the first-ranked
    // one (by first measurement) stays unless a challenger is clearly better.
    let a = SpmmVariant::of(SpmmStrategy::RowWarp);
    let b = SpmmVariant {
        block: 128,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    let mut f = fake(|_, _| false, 0.05, 0.01);
    f.score = |v, _| if v.block == 256 { 1000.0 } else { 1005.0 };
    let cfg = SpmmSearchConfig {
        min_noise: 0.02,
        ..roomy()
    };
    let out = search_spmm(&[(64, vec![a, b])], &mut f, &cfg).unwrap();
    let first: Vec<&SpmmTrial> = out.trials.iter().filter(|t| t.phase == "explore").collect();
    let leader = if first[0].gbs >= first[1].gbs { a } else { b };
    assert_eq!(out.widths[0].winner, leader);
    // Clearly better (20%): the challenger wins even when measured second-best first.
    let mut f = fake(|_, _| false, 0.0, 0.01);
    f.score = |v, _| if v.block == 256 { 1000.0 } else { 1200.0 };
    let out = search_spmm(&[(64, vec![a, b])], &mut f, &cfg).unwrap();
    assert_eq!(out.widths[0].winner, b);
}

#[test]
fn a_finalist_failing_late_is_replaced() {
    // The best variant passes its first check and fails when re-measured
    // (a race): the next one wins.
    struct Flaky {
        inner: Fake,
        bad: SpmmVariant,
        seen: u32,
    }
    impl SpmmSource for Flaky {
        fn samples(&self) -> usize {
            self.inner.samples
        }
        fn measure(
            &mut self,
            v: &SpmmVariant,
            n: usize,
            reps: u32,
        ) -> Result<(Vec<SampleResult>, f64), SearchError> {
            let (mut res, s) = self.inner.measure(v, n, reps)?;
            if *v == self.bad {
                self.seen += 1;
                if self.seen > 1 {
                    res[1].correct = false;
                    res[1].rel_err = 0.3;
                }
            }
            Ok((res, s))
        }
    }
    let best = best_of_space(64, |_, _| false);
    let mut f = Flaky {
        inner: fake(|_, _| false, 0.0, 0.01),
        bad: best,
        seen: 0,
    };
    let out = search_spmm(&candidates(&[64]), &mut f, &roomy()).unwrap();
    let w = &out.widths[0];
    assert_ne!(w.winner, best);
    assert!(
        w.rejected
            .iter()
            .any(|(v, why)| *v == best && why.starts_with("final"))
    );
}

#[test]
fn neighbors_differ_in_one_knob_within_the_list() {
    let list = spmm_space(64, DenseLayout::RowMajor);
    let v = list[0];
    let ns = neighbors(&v, &list);
    assert!(!ns.is_empty());
    for u in &ns {
        assert!(
            list.contains(u) && *u != v && u.strategy == v.strategy,
            "{u}"
        );
    }
    // Order kept: the list's.
    let pos: Vec<usize> = ns
        .iter()
        .map(|u| list.iter().position(|x| x == u).unwrap())
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]));
    assert!(neighbors(&v, &[]).is_empty());
}

#[test]
fn the_climb_fixes_a_knob_the_prior_ranked_wrong() {
    // The prior ranks the right family first but the best variant last:
    // measuring its order alone would need the whole space.
    let n = 64;
    let best = best_of_space(n, |_, _| false);
    let mut list: Vec<SpmmVariant> = spmm_space(n, DenseLayout::RowMajor)
        .into_iter()
        .filter(|v| *v != best)
        .collect();
    let first = list
        .iter()
        .position(|v| neighbors(v, &[best]).len() == 1)
        .unwrap();
    let start = list.remove(first);
    list.insert(0, start);
    list.push(best);
    let mut f = fake(|_, _| false, 0.0, 1.0);
    let cfg = SpmmSearchConfig {
        // About 40 measurements of exploration.
        budget_seconds: 48.0,
        ..SpmmSearchConfig::default()
    };
    let out = search_spmm(&[(n, list.clone())], &mut f, &cfg).unwrap();
    let w = &out.widths[0];
    assert_eq!(w.winner, best, "{:?}", w.stopped);
    assert!(
        w.candidates < list.len() / 2,
        "{} of {}",
        w.candidates,
        list.len()
    );
    assert!(out.trials.iter().any(|t| t.phase == "climb"));
}

#[test]
fn every_family_is_measured_before_the_climb() {
    // The prior ranks every row-warp variant first, but nnz-split is the
    // best family at this width; a budget of about four measurements.
    let n = 64;
    let mut list = spmm_space(n, DenseLayout::RowMajor);
    list.sort_by_key(|v| v.strategy != SpmmStrategy::RowWarp);
    assert_eq!(scouts(&list).len(), 3);
    assert_eq!(scouts(&list)[0], list[0]);
    let mut f = fake(|_, _| false, 0.0, 1.0);
    let cfg = SpmmSearchConfig {
        budget_seconds: 4.5,
        ..SpmmSearchConfig::default()
    };
    let out = search_spmm(&[(n, list.clone())], &mut f, &cfg).unwrap();
    let w = &out.widths[0];
    assert_eq!(
        w.winner.strategy,
        SpmmStrategy::NnzSplit,
        "{:?}",
        out.trials
    );
    let explored: Vec<SpmmStrategy> = out
        .trials
        .iter()
        .filter(|t| t.phase == "explore")
        .map(|t| t.variant.strategy)
        .collect();
    assert_eq!(explored.len(), 4, "{explored:?}");
    assert!(!out.trials.iter().any(|t| t.phase == "climb"));
}

#[test]
fn the_head_is_the_scouts_then_the_first_of_the_list() {
    let mut list = spmm_space(64, DenseLayout::RowMajor);
    list.sort_by_key(|v| v.strategy != SpmmStrategy::RowWarp);
    let head = search_head(&list, 5);
    assert_eq!(&head[..3], &scouts(&list)[..]);
    // The list's first 5 are row-warp variants; its first is a scout already.
    assert_eq!(head.len(), 3 + 4);
    for v in list.iter().take(5) {
        assert!(head.contains(v), "{v}");
    }
    let mut sorted = head.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), head.len(), "no repeats");
    assert!(search_head(&[], 5).is_empty());
}
