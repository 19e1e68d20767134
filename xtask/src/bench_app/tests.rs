use super::*;

/// A committed report of a run on an H200 machine.
fn committed_report(rel: &str) -> Report {
    let path = crate::common::workspace_root().join(rel);
    let text = std::fs::read_to_string(&path).expect("a committed app report");
    serde_json::from_str(&text).expect("a committed app report parses")
}

#[test]
fn the_gather_floor_of_a_pagerank_matrix_is_reported_when_measured() {
    // Written before reports had a gather floor: it still parses, without one.
    let mut r = committed_report("docs/benchmarks/runs/app/7-65808d3/app-h200.json");
    assert!(r.pagerank.iter().all(|c| c.gather_floor_spmv_us.is_none()));
    let md = markdown(&r);
    assert!(!md.contains("Gather floor of one SpMV"), "{md}");

    // The current report measured it for every PageRank matrix.
    let current = committed_report("docs/benchmarks/app-h200.json");
    assert!(
        current
            .pagerank
            .iter()
            .all(|c| c.gather_floor_spmv_us.is_some())
    );
    assert!(markdown(&current).contains("Gather floor of one SpMV"));

    let spmv = r.pagerank[0].t.spmv_us;
    r.pagerank[0].gather_floor_spmv_us = Some(spmv / 2.0);
    let md = markdown(&r);
    let line = md
        .lines()
        .find(|l| l.starts_with("Gather floor of one SpMV"))
        .expect("the floor paragraph");
    let expected = format!(
        "{} {:.1} us (our SpMV in its stored order 2.00x of it)",
        r.pagerank[0].name,
        spmv / 2.0
    );
    assert!(line.contains(&expected), "{line}");
}

#[test]
fn iterations_per_call_cover_the_call_time_in_whole_chunks() {
    use super::energy::iterations_per_call;
    // 100 us per iteration: 500 iterations = 50 ms, in chunks of 50.
    assert_eq!(iterations_per_call(100.0, 50), 500);
    // 30 us: 1667 rounded up to a whole chunk of 10.
    assert_eq!(iterations_per_call(30.0, 10), 1670);
    // Slow iterations still run one chunk; fast ones are capped.
    assert_eq!(iterations_per_call(1e6, 50), 50);
    assert_eq!(iterations_per_call(1e-3, 10), 100_000);
    assert_eq!(iterations_per_call(f64::NAN, 10), 10);
}

#[test]
fn energy_per_iteration_is_reported_when_measured() {
    use sparserl_rt::energy::EnergyMeasurement;
    // A report from before `--energy` (the run of 829d61c): it parses,
    // without energy keys.
    let mut r = committed_report("docs/benchmarks/runs/app/14-829d61c/app-h200.json");
    assert!(r.cg.iter().all(|c| c.energy.is_none()));
    assert_eq!(r.summary.cg_energy_ratio, None);
    assert!(!markdown(&r).contains("Energy per iteration"));
    let m = |j: f64| EnergyMeasurement {
        joules_per_call: j,
        joules_per_call_p10: j,
        joules_per_call_p90: j,
        spread: 0.01,
        seconds_per_call: 1e-4,
        avg_power_w: j / 1e-4,
        idle_power_w: None,
        calls: 1e4,
        seconds: 1.0,
        windows: 3,
        counter_interval_ms: 10.0,
    };
    let e = super::energy::iter_energy(&m(0.02), 500, &m(0.03), 500, Some(80.0));
    assert!((e.energy_ratio - 1.5).abs() < 1e-12);
    r.cg[0].energy = Some(e.clone());
    r.summary.cg_energy_ratio =
        super::energy::geomean_ratio(r.cg.iter().map(|c| c.energy.as_ref()));
    assert_eq!(r.summary.cg_energy_ratio, Some(1.5));
    let md = markdown(&r);
    assert!(md.contains("Energy per iteration"), "{md}");
    assert!(
        md.contains(&format!("| {} | 20.0000 |", r.cg[0].name)),
        "{md}"
    );
    assert!(md.contains("**1.50x**"), "{md}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["summary"]["cg_energy_ratio"], 1.5);
    assert_eq!(json["cg"][0]["energy"]["energy_ratio"], 1.5);
}
