//! Tests of the objective's pick rule, Pareto front and record.

use super::*;
use proptest::prelude::*;
use sparserl_rt::energy::{EnergyMeasurement, energy_pick};

fn cand(t: f64, e: f64, spread: f64) -> Candidate {
    Candidate {
        seconds_per_call: t,
        joules_per_call: e,
        spread,
    }
}

fn measurement(c: &Candidate) -> EnergyMeasurement {
    EnergyMeasurement {
        joules_per_call: c.joules_per_call,
        joules_per_call_p10: c.joules_per_call,
        joules_per_call_p90: c.joules_per_call,
        spread: c.spread,
        seconds_per_call: c.seconds_per_call,
        avg_power_w: c.joules_per_call / c.seconds_per_call,
        idle_power_w: None,
        calls: 1.0,
        seconds: 1.0,
        windows: 3,
        counter_interval_ms: 10.0,
    }
}

#[test]
fn energy_picks_the_lowest_energy_only_beyond_the_noise() {
    // 20% less energy, 10% slower: the energy objective takes it.
    let c = [cand(1.0, 1.0, 0.02), cand(1.1, 0.8, 0.02)];
    let pick = choose(&Objective::Energy, &c, 0.01).unwrap();
    assert_eq!(pick.index, 1);
    assert_eq!(pick.noise, 0.02);
    // 1.5% less energy with a 2% spread: noise, the time pick stays.
    let c = [cand(1.0, 1.0, 0.02), cand(1.1, 0.985, 0.01)];
    assert_eq!(choose(&Objective::Energy, &c, 0.01).unwrap().index, 0);
    // The time objective never leaves the time pick for a slower one.
    let c = [cand(1.0, 1.0, 0.0), cand(1.1, 0.5, 0.0)];
    assert_eq!(choose(&Objective::Time, &c, 0.01).unwrap().index, 0);
}

#[test]
fn weights_trade_time_for_energy() {
    // 10% slower, 20% less energy.
    let c = [cand(1.0, 1.25, 0.0), cand(1.1, 1.0, 0.0)];
    let even = Objective::Weighted {
        time: 0.5,
        energy: 0.5,
    };
    let p = choose(&even, &c, 0.01).unwrap();
    assert_eq!(p.index, 1);
    assert!((p.scores[0] - 1.125).abs() < 1e-12, "{:?}", p.scores);
    assert!((p.scores[1] - 1.05).abs() < 1e-12, "{:?}", p.scores);
    // Mostly time: 0.9 * 1.1 + 0.1 * 1 = 1.09 against 0.9 + 0.1 * 1.25 = 1.025.
    let mostly_time = Objective::Weighted {
        time: 0.9,
        energy: 0.1,
    };
    assert_eq!(choose(&mostly_time, &c, 0.01).unwrap().index, 0);
}

#[test]
fn bad_figures_give_no_pick() {
    assert!(choose(&Objective::Energy, &[], 0.01).is_none());
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let c = [cand(1.0, 1.0, 0.0), cand(1.0, bad, 0.0)];
        assert!(choose(&Objective::Energy, &c, 0.01).is_none(), "{bad}");
        let c = [cand(bad, 1.0, 0.0), cand(1.0, 1.0, 0.0)];
        assert!(choose(&Objective::Energy, &c, 0.01).is_none(), "{bad}");
    }
}

proptest! {
    /// For the energy objective the rule is the runtime's `energy_pick`
    /// (what `cargo xtask energy` reports as the energy pick).
    #[test]
    fn energy_objective_agrees_with_the_runtime_rule(
        raw in proptest::collection::vec((0.1f64..10.0, 0.1f64..10.0, 0.0f64..0.2), 1..6),
    ) {
        let c: Vec<Candidate> = raw.iter().map(|&(t, e, s)| cand(t, e, s)).collect();
        let ms: Vec<EnergyMeasurement> = c.iter().map(measurement).collect();
        let ours = choose(&Objective::Energy, &c, 0.01).unwrap();
        let rt = energy_pick(0, &ms, 0.01).unwrap();
        prop_assert_eq!(ours.index, rt.index);
        prop_assert_eq!(ours.noise, rt.noise);
    }

    /// The pick is on the Pareto front whenever it leaves the time pick.
    #[test]
    fn a_changed_pick_is_never_dominated(
        raw in proptest::collection::vec((0.1f64..10.0, 0.1f64..10.0, 0.0f64..0.05), 2..6),
        wt in 0.0f64..1.0,
    ) {
        let c: Vec<Candidate> = raw.iter().map(|&(t, e, s)| cand(t, e, s)).collect();
        let obj = Objective::Weighted { time: wt, energy: 1.0 - wt };
        let p = choose(&obj, &c, 0.01).unwrap();
        let pts: Vec<(f64, f64)> = c.iter().map(|c| (c.seconds_per_call, c.joules_per_call)).collect();
        if p.index != 0 {
            prop_assert!(pareto_front(&pts).contains(&p.index));
        }
    }
}

#[test]
fn pareto_front_keeps_the_undominated() {
    let pts = [(1.0, 3.0), (2.0, 2.0), (3.0, 1.0), (2.5, 2.5), (1.0, 3.0)];
    // (2.5, 2.5) is dominated by (2.0, 2.0); equal points do not dominate
    // each other.
    assert_eq!(pareto_front(&pts), vec![0, 1, 2, 4]);
    assert!(pareto_front(&[]).is_empty());
}

#[test]
fn objectives_serialize_as_written() {
    let j = |o: Objective| serde_json::to_string(&o).unwrap();
    assert_eq!(j(Objective::Time), "\"time\"");
    assert_eq!(j(Objective::Energy), "\"energy\"");
    assert_eq!(
        j(Objective::Weighted {
            time: 0.25,
            energy: 0.75
        }),
        "{\"time\":0.25,\"energy\":0.75}"
    );
    assert!(Objective::Time.is_time() && !Objective::Time.needs_energy());
    assert!(Objective::Energy.needs_energy());
    let time_only = Objective::Weighted {
        time: 1.0,
        energy: 0.0,
    };
    assert!(!time_only.needs_energy() && !time_only.is_time());
    assert_eq!(time_only.label(), "time=1,energy=0");
}

fn record() -> ObjectiveRecord {
    ObjectiveRecord {
        objective: "energy".into(),
        time_pick: "a".into(),
        chosen: "b".into(),
        noise: Some(0.02),
        energy_saved_pct: Some(12.5),
        time_lost_pct: Some(3.0),
        extra_seconds: 2.1,
        fallback: None,
        finalists: vec![
            FinalistRecord {
                variant: "a".into(),
                search_gbs: 3000.0,
                seconds_per_call: Some(1.0e-5),
                joules_per_call: Some(4.0e-3),
                spread: Some(0.02),
                avg_power_w: Some(400.0),
                pareto: true,
                chosen: false,
                error: None,
            },
            FinalistRecord {
                variant: "b".into(),
                search_gbs: 2900.0,
                seconds_per_call: Some(1.03e-5),
                joules_per_call: Some(3.5e-3),
                spread: Some(0.01),
                avg_power_w: Some(340.0),
                pareto: true,
                chosen: true,
                error: None,
            },
            FinalistRecord {
                variant: "c".into(),
                search_gbs: 2000.0,
                error: Some("check failed".into()),
                ..FinalistRecord::default()
            },
        ],
    }
}

#[test]
fn lock_entries_keep_the_record_and_old_ones_still_parse() {
    // The example's committed lock file, written before objectives existed.
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-app");
    let old = std::fs::read_to_string(committed.join(crate::LOCK_FILE)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(crate::LOCK_FILE), &old).unwrap();
    let mut lock = crate::LockFile::read(dir.path()).unwrap().unwrap();
    assert!(!lock.kernel.is_empty());
    assert!(lock.kernel.iter().all(|k| k.objective.is_none()));
    lock.kernel[0].objective = Some(record());
    lock.write(dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join(crate::LOCK_FILE)).unwrap();
    assert!(text.contains("[kernel.objective]"), "{text}");
    assert!(text.contains("[[kernel.objective.finalists]]"), "{text}");
    assert!(text.contains("joules-per-call = 0.0035"), "{text}");
    let back = crate::LockFile::read(dir.path()).unwrap().unwrap();
    assert_eq!(back.kernel[0].objective, Some(record()));
    // Without a record the file is what it was.
    lock.kernel[0].objective = None;
    lock.write(dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join(crate::LOCK_FILE)).unwrap();
    assert!(!text.contains("objective"), "{text}");
    assert_eq!(text, old);
}

#[test]
fn records_roundtrip_through_json_without_unmeasured_fields() {
    let r = record();
    assert!(r.chosen_finalist().is_some_and(|f| f.variant == "b"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["finalists"][2]["error"], "check failed");
    assert!(json["finalists"][2].get("joules-per-call").is_none());
    let back: ObjectiveRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
    assert!(record().summary().contains("chose b over the time pick a"));
}
