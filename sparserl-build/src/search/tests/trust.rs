//! Tests of `search`: what the search trusts. A variant that fails a check
//! once, in any phase, is never chosen; the winner is re-checked; failures
//! carry their reasons.

use super::*;

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
    fn measure(&mut self, v: &Variant, reps: u32) -> Result<(Vec<SampleResult>, f64), SearchError> {
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
        bad: Some(a),
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
        bad: Some(a),
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
    let back: TuneOutcome = serde_json::from_str(&serde_json::to_string(&out).unwrap()).unwrap();
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
