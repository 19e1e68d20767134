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
