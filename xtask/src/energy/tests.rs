use super::*;
use sparserl_build::search::{Rejection, Trial};
use sparserl_rt::energy::Window;

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

#[test]
fn finalists_put_the_winner_first_then_best_gbs() {
    let v = space();
    let out = sparserl_build::TuneOutcome {
        winner: v[2],
        gbs: 90.0,
        candidates: 6,
        seconds: 1.0,
        stopped: "budget".into(),
        trials: vec![
            trial(v[0], 50.0, true),
            trial(v[1], 95.0, true), // faster once, but not the winner
            trial(v[2], 80.0, true),
            trial(v[2], 90.0, true),
            trial(v[3], 70.0, true),
            trial(v[4], 99.0, false), // incorrect
            trial(v[5], 85.0, true),  // rejected later
        ],
        rejected: vec![Rejection {
            variant: v[5],
            phase: "final".into(),
            reason: "sample 1: wrong result".into(),
        }],
    };
    let f = finalists(&out, 3);
    let ids: Vec<Variant> = f.iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![v[2], v[1], v[3]]);
    assert_eq!(f[0].1, 90.0);
    assert_eq!(finalists(&out, 10).len(), 4);
}

fn energy(jpc_mj: f64, us: f64, spread: f64) -> EnergyMeasurement {
    let w: Vec<Window> = [1.0 - spread / 2.0, 1.0, 1.0 + spread / 2.0]
        .iter()
        .map(|f| Window {
            joules: jpc_mj * 1e-3 * f * 1000.0,
            seconds: us * 1e-6 * 1000.0,
            calls: 1000.0,
        })
        .collect();
    EnergyMeasurement::from_windows(&w, Some(80.0), 10.0).unwrap()
}

fn row(suite: &str, fin: &[(f64, f64, f64)], cusparse_mj: f64) -> Row {
    let mut r = Row {
        matrix: format!("m-{suite}"),
        suite: suite.into(),
        ..Row::default()
    };
    for (i, &(mj, us, sp)) in fin.iter().enumerate() {
        r.finalists.push(Finalist {
            variant: format!("v{i}"),
            search_gbs: 100.0,
            energy: Some(energy(mj, us, sp)),
            error: None,
        });
    }
    r.finalists.push(Finalist {
        variant: "broken".into(),
        error: Some("relative error 1e0".into()),
        ..Finalist::default()
    });
    r.cusparse = Some(energy(cusparse_mj, 20.0, 0.01));
    r.conclude();
    r
}

#[test]
fn the_energy_pick_needs_more_than_the_noise() {
    // v1 uses 10% less energy than the time pick with 2% spreads, 5% slower.
    let r = row("large", &[(1.0, 10.0, 0.02), (0.9, 10.5, 0.02)], 2.0);
    assert_eq!(r.time_pick.as_deref(), Some("v0"));
    assert_eq!(r.energy_pick.as_deref(), Some("v1"));
    assert!(r.energy_pick_differs);
    assert!((r.energy_saved_pct.unwrap() - 10.0).abs() < 1e-9);
    assert!((r.time_lost_pct.unwrap() - 5.0).abs() < 1e-9);
    assert!((r.energy_ratio.unwrap() - 2.0).abs() < 1e-9);
    assert!((r.time_ratio.unwrap() - 2.0).abs() < 1e-9);
    // The same medians with a 20% spread: noise, the time pick stays.
    let r = row("large", &[(1.0, 10.0, 0.2), (0.9, 10.5, 0.02)], 2.0);
    assert_eq!(r.energy_pick.as_deref(), Some("v0"));
    assert!(!r.energy_pick_differs);
    assert_eq!(r.energy_saved_pct, Some(0.0));
    assert!(r.progress_line().contains("= time pick"));
}

#[test]
fn summary_splits_real_and_large() {
    let rows = vec![
        row("large", &[(1.0, 10.0, 0.01)], 2.0),
        row("large", &[(1.0, 10.0, 0.01)], 8.0),
        row("real", &[(1.0, 10.0, 0.01)], 0.5),
    ];
    let s = summarize(&rows);
    assert!((s.geomean_energy_ratio_large.unwrap() - 4.0).abs() < 1e-9);
    assert!((s.geomean_energy_ratio_real.unwrap() - 0.5).abs() < 1e-9);
    assert!((s.geomean_energy_ratio.unwrap() - 2.0).abs() < 1e-9);
    assert_eq!(s.compared, 3);
    assert_eq!(s.energy_picks_differ, 0);
    let report = Report {
        rows,
        summary: s,
        ..Report::default()
    };
    let md = render_markdown(&report);
    assert!(md.contains("| large | 4.00x |"), "{md}");
    assert!(md.contains("broken failed"), "{md}");
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["summary"]["geomean_energy_ratio"].is_number());
    assert_eq!(json["summary"]["geomean_energy_ratio_real"], 0.5);
}

#[test]
fn the_zero_shot_pick_is_scored_against_the_best_measured() {
    let mut r = row("large", &[(1.0, 10.0, 0.01), (0.8, 10.5, 0.01)], 2.0);
    r.zero_shot = Some(Finalist {
        variant: "z".into(),
        energy: Some(energy(1.2, 11.0, 0.01)),
        ..Finalist::default()
    });
    r.conclude();
    assert!((r.zero_shot_energy_over_best.unwrap() - 1.5).abs() < 1e-9);
    // A pick below every finalist is the best measured: 1.0.
    r.zero_shot.as_mut().unwrap().energy = Some(energy(0.5, 11.0, 0.01));
    r.conclude();
    assert!((r.zero_shot_energy_over_best.unwrap() - 1.0).abs() < 1e-9);
    let s = summarize(std::slice::from_ref(&r));
    assert_eq!(s.max_zero_shot_energy_over_best, Some(1.0));
    let md = render_markdown(&Report {
        rows: vec![r],
        summary: s,
        ..Report::default()
    });
    assert!(
        md.contains("| m-large | z | 0.500 | 11.0 | 1.000 |"),
        "{md}"
    );
}

#[test]
fn without_a_gpu_the_command_says_so() {
    if sparserl_rt::device::driver_present() {
        return; // a GPU machine: the command would measure
    }
    let Err(e) = open() else {
        panic!("no driver, yet the GPU opened");
    };
    assert!(format!("{e:#}").contains("no GPU"), "{e:#}");
}

#[test]
fn a_resumed_report_keeps_the_earlier_rows_and_names_both_runs() {
    let dir = std::env::temp_dir().join(format!("sparserl-energy-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let old = Report {
        gpu: "G".into(),
        commit: "aaa".into(),
        command: "first".into(),
        rows: vec![row("real", &[(1.0, 10.0, 0.01)], 2.0)],
        ..Report::default()
    };
    let p = dir.join("old.json");
    std::fs::write(&p, serde_json::to_string(&old).unwrap()).unwrap();
    let fresh = Report {
        gpu: "G".into(),
        commit: "bbb".into(),
        command: "second".into(),
        ..Report::default()
    };
    let r = super::resumed(fresh.clone(), &p).unwrap();
    assert_eq!(r.rows, old.rows);
    assert_eq!(r.command, "first ; second");
    assert_eq!(r.commit, "aaa + bbb (resumed)");
    let other_gpu = Report {
        gpu: "H".into(),
        ..fresh
    };
    let e = super::resumed(other_gpu, &p).unwrap_err().to_string();
    assert!(e.contains("measured on G"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
