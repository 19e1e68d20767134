//! Tests of `bench`.

use super::*;

fn row(suite: &str, value: &str, name: &str, ours: f64, cus: f64) -> Row {
    Row {
        matrix: name.into(),
        class: "c".into(),
        nnz: 1_000_000,
        value: value.into(),
        suite: suite.into(),
        ours_gbs: Some(ours),
        cusparse_gbs: Some(cus),
        cusparse_alg: Some("CUSPARSE_SPMV_CSR_ALG2".into()),
        template_gbs: Some(ours / 2.0),
        oracle_gbs: Some(ours * 1.25),
        speedup_vs_cusparse: ratio(Some(ours), Some(cus)),
        pct_copy: Some(50.0),
        variant: Some("nnz-split.b256.i4.ldg".into()),
        ours_latency_us: Some(5.0),
        ours_graph_us: Some(2.0),
        cusparse_latency_us: Some(10.0),
        cusparse_graph_us: None,
        ..Row::default()
    }
}

fn fake_rows() -> Vec<Row> {
    let mut rows = vec![
        row("large", "f32", "a", 2000.0, 1000.0),
        row("large", "f32", "b", 1000.0, 2000.0),
        row("large", "f64", "c", 3000.0, 1000.0),
        row("real", "f32", "d", 400.0, 100.0),
    ];
    let mut bad = row("real", "f64", "e|bad", 0.0, 100.0);
    bad.ours_gbs = None;
    bad.speedup_vs_cusparse = None;
    bad.ours_error = Some("relative error 1e-1 above tolerance".into());
    bad.nnz = 5_000;
    rows.push(bad);
    rows
}

#[test]
fn summary_geomeans_and_min() {
    let rows = fake_rows();
    let s = summarize(&rows, 2);
    let large = s.all.geomean_speedup_large.unwrap();
    assert!((large - (2.0f64 * 0.5 * 3.0).powf(1.0 / 3.0)).abs() < 1e-12);
    assert!((s.all.geomean_speedup_real.unwrap() - 4.0).abs() < 1e-12);
    assert!((s.f32.geomean_speedup_large.unwrap() - 1.0).abs() < 1e-12);
    assert!((s.f64.geomean_speedup_large.unwrap() - 3.0).abs() < 1e-12);
    assert_eq!(s.all.min_speedup, Some(0.5));
    assert_eq!(s.all.min_speedup_matrix.as_deref(), Some("b (f32)"));
    assert!((s.all.geomean_ours_vs_template.unwrap() - 2.0).abs() < 1e-12);
    assert!((s.all.geomean_ours_vs_oracle.unwrap() - 0.8).abs() < 1e-12);
    assert!((s.all.geomean_speedup_real_latency.unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(s.all.geomean_speedup_real_graph, None);
    assert_eq!(s.all.ours_failures, 1);
    assert_eq!(s.f64.geomean_speedup_real, None);
    assert_eq!(s.skipped, 2);
    let empty = summarize(&[], 0);
    assert_eq!(empty.all.geomean_speedup_large, None);
    assert_eq!(empty.all.min_speedup_matrix, None);
}

#[test]
fn json_has_the_required_shape() {
    let rows = fake_rows();
    let report = Report {
        gpu: "NVIDIA H200".into(),
        driver: "CUDA driver API 13.0".into(),
        date: "2025-01-01".into(),
        command: "cargo xtask bench".into(),
        copy_gbs: 4000.0,
        summary: summarize(&rows, 0),
        rows,
        ..Report::default()
    };
    let v = serde_json::to_value(&report).unwrap();
    for k in [
        "gpu", "driver", "date", "command", "copy_gbs", "rows", "summary",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
    let r0 = &v["rows"][0];
    for k in [
        "matrix",
        "class",
        "nnz",
        "value",
        "ours_gbs",
        "cusparse_gbs",
        "cusparse_alg",
        "template_gbs",
        "oracle_gbs",
        "speedup_vs_cusparse",
        "pct_copy",
        "variant",
        "suite",
        "ours_latency_us",
        "ours_graph_us",
        "cusparse_latency_us",
        "cusparse_graph_us",
        "device_bytes",
        "csr_bytes",
        "search_candidates",
        "search_seconds",
    ] {
        assert!(r0.get(k).is_some(), "row field {k}");
    }
    let s = &v["summary"];
    for k in [
        "geomean_speedup_large",
        "geomean_speedup_real",
        "geomean_speedup_real_latency",
        "min_speedup",
        "min_speedup_matrix",
        "geomean_ours_vs_template",
        "geomean_ours_vs_oracle",
    ] {
        assert!(s.get(k).is_some(), "summary field {k}");
        assert!(s["f32"].get(k).is_some(), "f32 summary field {k}");
    }
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(back.rows.len(), 5);
}

#[test]
fn markdown_has_tables_failures_and_latency() {
    let rows = fake_rows();
    let report = Report {
        gpu: "NVIDIA H200".into(),
        driver: "d".into(),
        date: "2025-01-01".into(),
        command: "cargo xtask bench --suite all".into(),
        copy_gbs: 4000.0,
        summary: summarize(&rows, 1),
        rows,
        skipped: vec![Skipped {
            matrix: "z".into(),
            suite: "real".into(),
            value: "f64".into(),
            reason: "time guard".into(),
        }],
        ..Report::default()
    };
    let md = render_markdown(&report);
    assert!(md.contains("`cargo xtask bench --suite all`"));
    assert!(md.contains("## large matrices, f32"));
    assert!(md.contains("## large matrices, f64"));
    assert!(md.contains("## real matrices, f32"));
    assert!(md.contains("ours graph us"));
    assert!(md.contains("2000 (CSR_ALG2)"));
    assert!(md.contains("2.00x"));
    assert!(md.contains("FAIL (relative error"));
    assert!(md.contains("e\\|bad"));
    assert!(md.contains("## Skipped"));
    assert!(md.contains("time guard"));
    // Large tables have no latency columns.
    let large = md.split("## large matrices, f32").nth(1).unwrap();
    let first_table_head = large.lines().nth(2).unwrap();
    assert!(!first_table_head.contains("graph"), "{first_table_head}");
    let summary = render_summary_md(&report);
    assert!(summary.contains("large **1.44x**"), "{summary}");
}

#[test]
fn svg_is_written() {
    let dir = std::env::temp_dir().join(format!("sparserl-bench-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.svg");
    render_svg(&fake_rows(), &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"));
    assert!(svg.contains("f32") && svg.contains("f64"));
    assert!(svg.contains("<circle"));
    render_svg(&[], &path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn large_suite_is_within_20_to_110_million() {
    let suite = large_suite(false);
    assert_eq!(suite.len(), 8);
    let names: std::collections::HashSet<_> = suite.iter().map(|s| s.name).collect();
    assert_eq!(names.len(), 8);
    for s in &suite {
        let n = s.expected_nnz();
        // Margins for random row lengths.
        assert!(
            (22_000_000..=100_000_000).contains(&n),
            "{}: {n} nonzeros",
            s.name
        );
        // Well over a 50 MB L2 in f32.
        assert!(n * 8 > 4 * 50_000_000, "{}", s.name);
    }
}

#[test]
fn quick_suite_generates_what_the_formula_says() {
    for (i, s) in large_suite(true).iter().enumerate() {
        let m = s.build(i as u64).unwrap();
        let expected = s.expected_nnz() as f64;
        let got = m.nnz() as f64;
        assert!(
            (got - expected).abs() <= 0.03 * expected,
            "{}: generated {got}, expected {expected}",
            s.name
        );
        assert!(m.nnz() < 2_000_000, "{}: quick size {}", s.name, m.nnz());
    }
}

#[test]
fn stencil_formula_is_exact_and_skewed_has_huge_rows() {
    let s = LargeSpec {
        name: "s",
        class: "stencil",
        gen_: Gen::Stencil {
            grid: vec![7, 5],
            points: 5,
        },
    };
    assert_eq!(s.build(0).unwrap().nnz() as u64, s.expected_nnz());
    let s = LargeSpec {
        name: "s3",
        class: "stencil",
        gen_: Gen::Stencil {
            grid: vec![4, 5, 6],
            points: 27,
        },
    };
    assert_eq!(s.build(0).unwrap().nnz() as u64, s.expected_nnz());
    let m = skewed(1000, 4, 300, 1).unwrap();
    let huge = (0..m.rows()).filter(|&r| m.row_len(r) == 300).count();
    assert_eq!(huge, 4);
    assert!((0..m.rows()).all(|r| m.row_len(r) == 300 || m.row_len(r) <= 6));
}

#[test]
fn value_args_and_no_gpu_error() {
    assert_eq!(ValueArg::Both.types().len(), 2);
    assert_eq!(ValueArg::F32.types(), vec![ValueType::F32]);
    if !sparserl_rt::device::driver_present() {
        let args = Args {
            op: None,
            suite: SuiteArg::Real,
            value: ValueArg::F32,
            large_value: ValueArg::F32,
            matrices: None,
            out: std::env::temp_dir().join("sparserl-bench-nogpu"),
            budget_large: 1.0,
            budget_real: 1.0,
            quick: true,
            max_seconds: 1.0,
            dataset: None,
            sweep_reps: 1,
            reps: 1,
            only: vec!["cti".into(), "road-network".into()],
            corpus: Vec::new(),
            stem: "spmv-h200".into(),
            commit: "unknown".into(),
            no_oracle: false,
            no_gather: false,
            render: None,
        };
        assert!(args.keeps("cti", "3D-mesh"));
        assert!(args.keeps("road_NY", "road-network"));
        assert!(!args.keeps("bcsstk13", "structural"));
        let e = run(args).unwrap_err().to_string();
        assert!(e.contains("no GPU"), "{e}");
    }
}

#[test]
fn a_partial_report_says_so_and_irregular_rows_get_their_summary() {
    let mut rows = fake_rows();
    rows[0].suite = "irregular".into();
    rows[0].speedup_same_order = Some(1.25);
    let report = Report {
        summary: summarize(&rows, 0),
        rows,
        partial: true,
        ..Report::default()
    };
    let md = render_markdown(&report);
    assert!(md.contains("**Partial**"), "{md}");
    assert!(md.contains("Ordering and kernel, separated"), "{md}");
    let back: Report = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
    assert!(back.partial);
    assert_eq!(
        back.summary.all.geomean_speedup_irregular_same_order,
        Some(1.25)
    );
    assert!(!render_markdown(&Report::default()).contains("**Partial**"));
}

#[test]
fn gather_kernels_compile_for_sm_90() {
    let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
    let toolkit = match sparserl_rt::nvrtc::locate() {
        Ok(t) => t,
        Err(e) if require => panic!("SPARSERL_REQUIRE_CUDA=1 but {e}"),
        Err(e) => {
            eprintln!("gather floor kernels: SKIPPED (no NVRTC)\n{e}");
            return;
        }
    };
    let ptx = sparserl_rt::nvrtc::compile_ptx(gather::SOURCE, "sm_90", &[]).unwrap();
    for value in [ValueType::F32, ValueType::F64] {
        for load in gather::Load::ALL {
            let e = gather::entry(value, load);
            assert!(ptx.contains(&format!(".entry {e}(")), "{e} missing");
        }
    }
    // The two load paths of x: coherent (plain) and read-only (`__ldg`).
    for t in ["f32", "f64"] {
        assert!(ptx.contains(&format!("ld.global.{t}")), "plain {t}");
        assert!(ptx.contains(&format!("ld.global.nc.{t}")), "ldg {t}");
    }
    if toolkit.ptxas.is_some() {
        let report = sparserl_rt::nvrtc::ptxas_check(&ptx, "sm_90").unwrap();
        assert_eq!(report.total_spill_bytes(), 0);
    }
}

/// Large rows with a gather floor: `a` at the limit (both within 5%), `b`
/// not (cuSPARSE 10% below), `c` without a floor.
fn gather_rows() -> Vec<Row> {
    let mut a = row("irregular", "f32", "rmat-s20", 980.0, 1000.0);
    a.gather_floor_gbs = Some(1000.0);
    a.gather_floor_load = Some("ldg".into());
    a.gather_floor_same_order_gbs = Some(1000.0);
    a.reorder = Some("none".into());
    a.ours_kernel_same_order_gbs = a.ours_gbs;
    a.cusparse_same_order_gbs = a.cusparse_gbs;
    let mut b = row("large", "f32", "banded", 1000.0, 900.0);
    b.gather_floor_gbs = Some(1000.0);
    b.gather_floor_load = Some("plain".into());
    let c = row("large", "f32", "no-floor", 1000.0, 1000.0);
    vec![a, b, c]
}

#[test]
fn gather_floor_is_summarized_and_rendered() {
    let rows = gather_rows();
    assert!(gather::at_gather_limit(&rows[0]));
    assert!(!gather::at_gather_limit(&rows[1]));
    assert!(!gather::at_gather_limit(&rows[2]));
    let report = Report {
        summary: summarize(&rows, 0),
        rows,
        ..Report::default()
    };
    assert_eq!(report.summary.all.at_gather_limit, vec!["rmat-s20 (f32)"]);
    let md = render_markdown(&report);
    assert!(md.contains("## Gather floor"), "{md}");
    assert!(md.contains("not a proof"), "{md}");
    // The section alone (up to the next heading).
    let table = md.split("## Gather floor").nth(1).unwrap();
    let table = table.split("\n## ").next().unwrap();
    assert!(table.contains("| floor GB/s (x loads) | ours / floor | cuSPARSE / floor |"));
    assert!(
        table.contains("| rmat-s20 | f32 | 1000 (ldg) | 0.98x | 1.00x | 0.98x | 1.00x | none | 1000 | 0.98x | 1.00x | yes |"),
        "{table}"
    );
    assert!(
        table.contains(
            "| banded | f32 | 1000 (plain) | 1.00x | 0.90x | 1.11x | 1.11x | - | - | - | - | no |"
        ),
        "{table}"
    );
    assert!(!table.contains("no-floor"), "{table}");
    let summary = render_summary_md(&report);
    assert!(
        summary.contains(
            "at the gather limit, ours and cuSPARSE both within 5% of the floor: rmat-s20 (f32)"
        ),
        "{summary}"
    );
    // Without floors (`--no-gather`, real matrices): no table, no line.
    let plain = Report {
        summary: summarize(&fake_rows(), 0),
        rows: fake_rows(),
        ..Report::default()
    };
    assert!(!render_markdown(&plain).contains("Gather floor"));
    assert!(!render_summary_md(&plain).contains("gather"));
}

#[test]
fn render_rewrites_the_views_of_a_json_report() {
    let rows = gather_rows();
    let report = Report {
        summary: summarize(&rows, 0),
        rows,
        ..Report::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("spmv-x.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    render::rerender(&json).unwrap();
    let md = std::fs::read_to_string(dir.path().join("spmv-x.md")).unwrap();
    assert_eq!(md, render_markdown(&report));
    assert!(md.contains("| floor / cuSPARSE |"), "{md}");
    assert!(dir.path().join("spmv-x.svg").exists());
    // Not a report: an error naming the file, nothing written.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"rows\": 3}").unwrap();
    let e = format!("{:#}", render::rerender(&bad).unwrap_err());
    assert!(
        e.contains("bad.json") && e.contains("not a bench report"),
        "{e}"
    );
    assert!(!dir.path().join("bad.md").exists());
}

#[test]
fn reports_without_gather_fields_still_parse() {
    let rows = gather_rows();
    let report = Report {
        summary: summarize(&rows, 0),
        rows,
        ..Report::default()
    };
    let mut v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["rows"][0]["gather_floor_gbs"], 1000.0);
    assert_eq!(v["rows"][0]["gather_floor_load"], "ldg");
    assert_eq!(v["summary"]["at_gather_limit"][0], "rmat-s20 (f32)");
    for r in v["rows"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        for k in [
            "gather_floor_gbs",
            "gather_floor_load",
            "gather_floor_same_order_gbs",
        ] {
            assert!(r.remove(k).is_some(), "{k}");
        }
    }
    for part in ["f32", "f64"] {
        v["summary"][part]
            .as_object_mut()
            .unwrap()
            .remove("at_gather_limit");
    }
    v["summary"]
        .as_object_mut()
        .unwrap()
        .remove("at_gather_limit");
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(back.rows[0].gather_floor_gbs, None);
    assert!(back.summary.all.at_gather_limit.is_empty());
}

#[test]
fn the_floor_bounds_add_the_measured_permutations_as_times() {
    // Rates of the same bytes: 1 / rate is a time. cuSPARSE on the given
    // order takes 1/500; the renumbered kernel alone 1/2000, ours with the
    // permutations 1/1000, so the permutations take 1/1000 - 1/2000 = 1/2000.
    // At the same-order floor (1/4000) plus them: 1/4000 + 1/2000 = 3/4000,
    // a speedup of (1/500) / (3/4000) = 8/3.
    let mut r = row("irregular", "f32", "mesh", 1000.0, 500.0);
    r.reorder = Some("rcm".into());
    r.ours_kernel_same_order_gbs = Some(2000.0);
    r.gather_floor_gbs = Some(600.0);
    r.gather_floor_same_order_gbs = Some(4000.0);
    let (given, renumbered) = gather::at_floor(&r);
    assert!((given.unwrap() - 1.2).abs() < 1e-12);
    assert!((renumbered.unwrap() - 8.0 / 3.0).abs() < 1e-12);
    assert!((gather::reachable(&r).unwrap() - 8.0 / 3.0).abs() < 1e-12);
    // Kept in the given order: no renumbered bound; ours counts where it is
    // faster than the floor (a layout of fewer bytes).
    let mut s = row("large", "f32", "stencil", 3000.0, 1500.0);
    s.reorder = Some("none".into());
    s.gather_floor_gbs = Some(2000.0);
    assert_eq!(gather::at_floor(&s), (Some(2000.0 / 1500.0), None));
    assert_eq!(gather::reachable(&s), Some(2.0));
    // Noise that makes ours faster than the kernel alone counts as free
    // permutations, not as a negative time.
    let mut n = r.clone();
    n.ours_gbs = Some(2100.0);
    assert!((gather::at_floor(&n).1.unwrap() - 8.0).abs() < 1e-12);
    let rows = vec![r, s, row("large", "f32", "no-floor", 1000.0, 1000.0)];
    let report = Report {
        summary: summarize(&rows, 0),
        rows,
        ..Report::default()
    };
    let a = &report.summary.all;
    assert!((a.geomean_reachable_irregular.unwrap() - 8.0 / 3.0).abs() < 1e-12);
    assert_eq!(a.geomean_reachable_large, Some(2.0));
    let md = render_markdown(&report);
    let table = md.split("## At the floor").nth(1).unwrap();
    let table = table.split("\n## ").next().unwrap();
    assert!(
        table.contains("| mesh | f32 | rcm | 2.00x | 1.20x | 2.67x | 2.67x |"),
        "{table}"
    );
    assert!(
        table.contains("| stencil | f32 | none | 2.00x | 1.33x | - | 2.00x |"),
        "{table}"
    );
    assert!(!table.contains("no-floor"), "{table}");
    assert!(
        render_summary_md(&report).contains("large 2.00x, irregular 2.67x"),
        "{}",
        render_summary_md(&report)
    );
}
