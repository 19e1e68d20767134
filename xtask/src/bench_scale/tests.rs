//! CPU tests of the scale benchmark: generators, plan, report.

use super::generate::{self, Bijection};
use super::report::{Case, Report};
use super::*;
use sparserl_rt::large::LargeCsr;

fn valid(g: &generate::Generated) -> usize {
    LargeCsr::try_from_parts(g.n, g.n, &g.indptr, &g.indices, &g.values)
        .expect("generated matrices are valid")
        .nnz()
}

#[test]
fn bijection_is_a_permutation_with_its_inverse() {
    for n in [1u64, 2, 7, 1000, 1 << 12, 99_991] {
        let b = Bijection::new(n, 3);
        let mut seen = vec![false; n as usize];
        for v in 0..n {
            let w = b.apply(v);
            assert!(w < n && !seen[w as usize], "n = {n}");
            seen[w as usize] = true;
            assert_eq!(b.invert(w), v);
        }
    }
    // Not the identity.
    let b = Bijection::new(1 << 16, 9);
    assert!((0..100).filter(|&v| b.apply(v) == v).count() < 5);
}

#[test]
fn rmat_rows_are_deterministic_and_heavy_tailed() {
    let a = generate::rmat(12, 16, 5).unwrap();
    let b = generate::rmat(12, 16, 5).unwrap();
    assert_eq!((&a.indptr, &a.indices), (&b.indptr, &b.indices));
    assert_eq!(a.values, b.values);
    let nnz = valid(&a);
    let drawn = 16usize << 12;
    // Duplicates merge: fewer than drawn, but most survive.
    assert!(nnz < drawn && nnz > drawn / 2, "nnz {nnz}");
    let max = (0..a.n)
        .map(|r| a.indptr[r + 1] - a.indptr[r])
        .max()
        .unwrap();
    assert!(max > 40 * 16, "a hub row: {max}");
    assert_ne!(generate::rmat(12, 16, 6).unwrap().indices, a.indices);
}

#[test]
fn mesh_rows_are_the_seven_point_stencil_renumbered() {
    let g = generate::mesh3d(6, 1).unwrap();
    valid(&g);
    let lens: Vec<u64> = (0..g.n).map(|r| g.indptr[r + 1] - g.indptr[r]).collect();
    assert_eq!(lens.iter().filter(|&&l| l == 7).count(), 4 * 4 * 4);
    assert_eq!(*lens.iter().min().unwrap(), 4);
    // Symmetric pattern, diagonal present.
    let has =
        |r: usize, c: u32| g.indices[g.indptr[r] as usize..g.indptr[r + 1] as usize].contains(&c);
    for r in 0..g.n {
        assert!(has(r, r as u32));
        for k in g.indptr[r] as usize..g.indptr[r + 1] as usize {
            assert!(has(g.indices[k] as usize, r as u32));
        }
    }
    // Randomly numbered: row 0's neighbours are not 1, side, side^2.
    assert!(!(has(0, 1) && has(0, 6) && has(0, 36)));
}

#[test]
fn powerlaw_has_hub_columns_and_mean_near_eight() {
    let g = generate::powerlaw(50_000, 2).unwrap();
    let nnz = valid(&g);
    let mean = nnz as f64 / g.n as f64;
    assert!((6.0..10.0).contains(&mean), "mean {mean}");
    let mut per_col = vec![0u32; g.n];
    g.indices.iter().for_each(|&c| per_col[c as usize] += 1);
    let top = *per_col.iter().max().unwrap() as f64;
    assert!(top > 200.0 * mean, "hub column of {top}");
}

#[test]
fn values_lie_in_minus_one_one() {
    let v = generate::hashed_values(1, 10_000);
    assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    assert!(mean.abs() < 0.05);
}

fn args(extra: &[&str]) -> Args {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }
    let mut argv = vec!["bench-scale"];
    argv.extend(extra);
    Cli::parse_from(argv).a
}

#[test]
fn plan_runs_the_smallest_then_the_largest_scale() {
    let p = plan(&args(&[]));
    assert_eq!(
        p,
        vec![
            Spec::Rmat(24),
            Spec::Rmat(28),
            Spec::Mesh(470),
            Spec::Powerlaw(100_000_000),
            Spec::Rmat(25),
            Spec::Rmat(26),
            Spec::Rmat(27)
        ]
    );
    assert!(Spec::Mesh(470).rows() > 100_000_000);
    assert!(Spec::Rmat(28).nnz_estimate() > 1 << 31);
    let p = plan(&args(&["--scales", "26", "--skip-mesh", "--skip-powerlaw"]));
    assert_eq!(p, vec![Spec::Rmat(26)]);
    assert_eq!(plan(&args(&["--small"])).len(), 4);
}

fn case(name: &str, nnz: u64, given: (f64, f64), renumbered: Option<(f64, f64)>) -> Case {
    let order = |o: &str, (ours, vendor): (f64, f64)| {
        serde_json::json!({
            "order": o, "upload_s": 0.1, "checked_rows": 5, "candidates": [], "measured": 3,
            "model_pick": "merge8", "selected": "merge8", "selected_us": ours, "best": "merge8",
            "best_us": ours, "selected_over_best": 1.0, "model_over_best": 1.0, "cusparse": [],
            "cusparse64_us": vendor, "cusparse32_us": null, "kernel_speedup": vendor / ours,
            "selected_of_floor": 0.5, "notes": []
        })
    };
    let mut c: Case = serde_json::from_value(serde_json::json!({
        "name": name, "family": "rmat", "rows": 10, "nnz": nnz, "offsets": "u64",
        "stats": {"rows": 10, "nnz": nnz, "mean": 1.0, "cv": 0.0, "max": 1, "empty": 0},
        "generation_s": 1.0, "validation_s": 0.1, "given": order("given", given),
        "renumbering": null, "renumbered": renumbered.map(|r| order("degree", r)),
        "speedup": null, "speedup_vs_64": null, "speedup_given_order": null,
        "traffic_bytes": 100, "floor_us": 5.0, "iteration": {}, "notes": []
    }))
    .unwrap();
    c.finish();
    c
}

#[test]
fn summary_takes_the_product_speedup_geomean_min_and_largest() {
    let mut r = Report {
        cases: vec![
            // Given 20 us vs cuSPARSE 20 us; renumbered ours 10 us: 2x.
            case("a", 100, (20.0, 20.0), Some((10.0, 15.0))),
            case("b", 3 << 30, (40.0, 10.0), Some((20.0, 10.0))),
            case("c", 50, (10.0, 10.0), None),
        ],
        ..Report::default()
    };
    r.summarize();
    assert_eq!(r.cases[0].speedup, Some(2.0));
    assert_eq!(r.cases[1].speedup, Some(0.5));
    assert_eq!(
        r.cases[2].speedup, None,
        "no renumbered run: no product speedup"
    );
    assert_eq!(r.summary.geomean_speedup_scale, Some(1.0));
    assert_eq!(r.summary.min_speedup_scale, Some(0.5));
    let given = (1.0f64 * 0.25 * 1.0).cbrt();
    assert!((r.summary.geomean_speedup_scale_given_order.unwrap() - given).abs() < 1e-12);
    let kernel = (1.5f64 * 0.5).sqrt();
    assert!((r.summary.geomean_kernel_speedup_renumbered.unwrap() - kernel).abs() < 1e-12);
    assert_eq!(r.summary.largest_nnz, 3 << 30);
    assert!(r.summary.largest_past_2_31_checked);
    let md = report::render_markdown(&r);
    assert!(md.contains("| b |") && md.contains("min 0.50"));
    assert!(md.contains("ours on the matrix the product renumbers"));
}

#[test]
fn the_rule_picks_degree_order_for_skewed_rows_and_rcm_otherwise() {
    let stats = |cv: f64| sparserl_rt::large::RowStats {
        rows: 10,
        nnz: 70,
        mean: 7.0,
        cv,
        max: 9,
        empty: 0,
    };
    assert_eq!(run::renumber_rule(&stats(15.6)).0, run::Order::Degree);
    assert_eq!(run::renumber_rule(&stats(0.016)).0, run::Order::Rcm);
    assert!(run::renumber_rule(&stats(2.0)).1.contains("cv 2.00"));
}

#[test]
fn small_run_without_a_gpu_writes_its_report() {
    if sparserl_rt::device::driver_present() {
        eprintln!("driver present: the no-GPU smoke test is left to machines without one");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    run(args(&[
        "--small", "--out", out, "--stem", "s", "--commit", "abc",
    ]))
    .unwrap();
    let r: Report =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert!(!r.partial);
    assert_eq!(r.cases.len(), 4);
    assert_eq!(r.commit, "abc");
    assert!(
        r.cases
            .iter()
            .all(|c| c.nnz > 0 && c.notes[0].contains("no GPU"))
    );
    // Every matrix renumbered on the host: the mesh by RCM, the graphs by degree.
    for c in &r.cases {
        let n = c.renumbering.as_ref().expect("renumbered on the host");
        let want = if c.family == "mesh3d" {
            "rcm"
        } else {
            "degree"
        };
        assert_eq!(n.order, want, "{}", c.name);
        assert!(n.threads >= 1 && n.permute_s >= 0.0);
    }
    assert!(dir.path().join("s.md").exists());
}

#[test]
fn row_blocks_cut_past_the_limit_and_refuse_a_longer_row() {
    use super::vendor::row_blocks;
    // Rows of 3, 0, 4, 2, 5 nonzeros.
    let ip = [0u64, 3, 3, 7, 9, 14];
    assert_eq!(row_blocks(&ip, 100).unwrap(), vec![(0, 5)]);
    let blocks = row_blocks(&ip, 7).unwrap();
    assert_eq!(blocks, vec![(0, 3), (3, 5)]);
    for &(r0, r1) in &blocks {
        assert!(ip[r1] - ip[r0] <= 7);
    }
    // Blocks cover every row once, in order.
    assert!(blocks.windows(2).all(|w| w[0].1 == w[1].0));
    let err = row_blocks(&ip, 4).unwrap_err().to_string();
    assert!(err.contains("row 4 has 5 nonzeros"), "{err}");
}
