//! Tests of the energy phase against a recorded energy source.

use super::*;
use crate::search::{Rejection, Trial};
use std::collections::HashMap;

fn trial(v: Variant, gbs: f64, correct: bool) -> Trial {
    Trial {
        variant: v,
        phase: "policy".into(),
        gbs,
        rel_err: 0.0,
        correct,
        seconds: 0.01,
        error: None,
    }
}

fn space() -> Vec<Variant> {
    sparserl_rt::core_space().into_iter().take(6).collect()
}

/// The time search's outcome: `v[0]` won at 100 GB/s; `v[1]` 90, `v[2]`
/// 80, `v[3]` was wrong, `v[4]` rejected in the final rounds.
fn outcome(v: &[Variant]) -> TuneOutcome {
    TuneOutcome {
        winner: v[0],
        gbs: 100.0,
        candidates: 5,
        seconds: 1.0,
        stopped: "budget".into(),
        trials: vec![
            trial(v[0], 98.0, true),
            trial(v[1], 90.0, true),
            trial(v[2], 80.0, true),
            trial(v[3], 150.0, false),
            trial(v[4], 95.0, true),
        ],
        rejected: vec![Rejection {
            variant: v[4],
            phase: "final".into(),
            reason: "sample 0: wrong result".into(),
        }],
    }
}

fn m(seconds: f64, joules: f64, spread: f64) -> EnergyMeasurement {
    EnergyMeasurement {
        joules_per_call: joules,
        joules_per_call_p10: joules,
        joules_per_call_p90: joules,
        spread,
        seconds_per_call: seconds,
        avg_power_w: joules / seconds,
        idle_power_w: None,
        calls: 1000.0,
        seconds: 1.0,
        windows: 3,
        counter_interval_ms: 10.0,
    }
}

/// Recorded measurements per variant; a variant without one fails.
struct Recorded {
    table: HashMap<Variant, Result<EnergyMeasurement, &'static str>>,
    asked: Vec<Variant>,
    fatal: bool,
}

impl EnergySource for Recorded {
    fn measure(
        &mut self,
        variant: &Variant,
    ) -> Result<Result<EnergyMeasurement, Unmeasured>, SearchError> {
        self.asked.push(*variant);
        if self.fatal {
            return Err(SearchError::Source(sparserl_rt::RtError::InvalidArgument(
                "device lost".into(),
            )));
        }
        Ok(self
            .table
            .get(variant)
            .cloned()
            .unwrap_or(Err("not recorded"))
            .map_err(Unmeasured::NotRecorded))
    }
}

fn source(entries: Vec<(Variant, Result<EnergyMeasurement, &'static str>)>) -> Recorded {
    Recorded {
        table: entries.into_iter().collect(),
        asked: Vec::new(),
        fatal: false,
    }
}

#[test]
fn finalists_skip_wrong_and_rejected_variants() {
    let v = space();
    let f = finalists(&outcome(&v), 10);
    let ids: Vec<Variant> = f.iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![v[0], v[1], v[2]]);
    // Each with its best trial (the pick's record uses the search's final
    // figure for the winner).
    assert_eq!((f[0].1, f[1].1), (98.0, 90.0));
    assert_eq!(finalists(&outcome(&v), 0).len(), 1);
}

#[test]
fn the_time_objective_measures_nothing_and_records_nothing() {
    let v = space();
    let mut src = source(vec![]);
    let c = apply(
        &Objective::Time,
        &outcome(&v),
        &mut src,
        &EnergySearch::default(),
    )
    .unwrap();
    assert_eq!(c, ObjectiveChoice::time(&outcome(&v)));
    assert!(src.asked.is_empty());
}

#[test]
fn energy_picks_a_finalist_using_less_energy_than_the_noise() {
    let v = space();
    let mut src = source(vec![
        (v[0], Ok(m(1.0e-5, 1.0e-3, 0.02))),
        (v[1], Ok(m(1.1e-5, 0.8e-3, 0.02))), // 20% less energy, 10% slower
        (v[2], Ok(m(1.3e-5, 0.9e-3, 0.02))), // dominated by v[1]
    ]);
    let cfg = EnergySearch::default();
    let c = apply(&Objective::Energy, &outcome(&v), &mut src, &cfg).unwrap();
    assert_eq!(src.asked, vec![v[0], v[1], v[2]]);
    assert_eq!(c.winner, v[1]);
    assert_eq!(c.gbs, 90.0);
    let r = c.record.unwrap();
    assert_eq!(r.objective, "energy");
    assert_eq!(
        (r.time_pick.as_str(), r.chosen.as_str()),
        (&*v[0].id(), &*v[1].id())
    );
    assert!((r.energy_saved_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!((r.time_lost_pct.unwrap() - 10.0).abs() < 1e-9);
    let pareto: Vec<bool> = r.finalists.iter().map(|f| f.pareto).collect();
    assert_eq!(pareto, vec![true, true, false]);
    assert_eq!(r.chosen_finalist().unwrap().variant, v[1].id());
    assert!(r.fallback.is_none());
    assert!(r.summary().contains("20.0% less energy"), "{}", r.summary());
}

#[test]
fn a_difference_within_the_noise_keeps_the_time_pick() {
    let v = space();
    let mut src = source(vec![
        (v[0], Ok(m(1.0e-5, 1.0e-3, 0.05))),
        (v[1], Ok(m(1.1e-5, 0.97e-3, 0.01))), // 3% less, spread 5%
        (v[2], Err("check failed: wrong result")),
    ]);
    let c = apply(
        &Objective::Energy,
        &outcome(&v),
        &mut src,
        &EnergySearch::default(),
    )
    .unwrap();
    assert_eq!((c.winner, c.gbs), (v[0], 100.0));
    let r = c.record.unwrap();
    assert_eq!(r.chosen, v[0].id());
    assert_eq!(r.noise, Some(0.05));
    assert_eq!(r.energy_saved_pct, Some(0.0));
    assert_eq!(
        r.finalists[2].error.as_deref(),
        Some("check failed: wrong result")
    );
    assert!(!r.finalists[2].pareto && !r.finalists[2].chosen);
    assert!(
        r.summary().contains("kept the time pick"),
        "{}",
        r.summary()
    );
}

#[test]
fn an_unmeasured_time_pick_keeps_it_and_says_why() {
    let v = space();
    let mut src = source(vec![
        (v[1], Ok(m(1.1e-5, 0.5e-3, 0.0))),
        (v[2], Ok(m(1.3e-5, 0.4e-3, 0.0))),
    ]);
    let c = apply(
        &Objective::Energy,
        &outcome(&v),
        &mut src,
        &EnergySearch::default(),
    )
    .unwrap();
    assert_eq!(c.winner, v[0]);
    let why = c.record.unwrap().fallback.unwrap();
    assert!(
        why.contains("2 of 3") && why.contains("not included"),
        "{why}"
    );
}

#[test]
fn the_number_of_finalists_is_bounded() {
    let v = space();
    let mut src = source(vec![
        (v[0], Ok(m(1.0e-5, 1.0e-3, 0.0))),
        (v[1], Ok(m(1.1e-5, 0.5e-3, 0.0))),
    ]);
    let cfg = EnergySearch {
        finalists: 2,
        ..EnergySearch::default()
    };
    let c = apply(&Objective::Energy, &outcome(&v), &mut src, &cfg).unwrap();
    assert_eq!(src.asked, vec![v[0], v[1]]);
    assert_eq!(c.winner, v[1]);
}

#[test]
fn a_device_fault_is_an_error() {
    let v = space();
    let mut src = source(vec![]);
    src.fatal = true;
    let r = apply(
        &Objective::Energy,
        &outcome(&v),
        &mut src,
        &EnergySearch::default(),
    );
    assert!(matches!(r, Err(SearchError::Source(_))));
}

#[test]
fn a_fallback_keeps_the_time_pick_and_its_reason() {
    let v = space();
    let out = outcome(&v);
    let obj = Objective::Weighted {
        time: 0.5,
        energy: 0.5,
    };
    let c = fallback(&obj, &out, "no NVML".into());
    assert_eq!((c.winner, c.gbs), (out.winner, out.gbs));
    let r = c.record.unwrap();
    assert_eq!(r.objective, "time=0.5,energy=0.5");
    assert_eq!(r.fallback.as_deref(), Some("no NVML"));
    assert!(r.finalists.is_empty());
    assert!(r.summary().contains("no NVML"), "{}", r.summary());
}
