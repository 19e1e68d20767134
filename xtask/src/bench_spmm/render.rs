//! Views of a `bench spmm` report: progress lines, the Markdown report and
//! the SVG plot (also `bench spmm --render`, without a GPU).

use super::report::{Report, Row, case_label, summarize};
use anyhow::{Context, Result, anyhow};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

fn f(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "-".into(),
    }
}

fn x(v: Option<f64>) -> String {
    match v {
        Some(s) if s.is_finite() => format!("{s:.2}x"),
        _ => "-".into(),
    }
}

fn short(alg: &str) -> &str {
    alg.strip_prefix("CUSPARSE_SPMM_").unwrap_or(alg)
}

fn nnz(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

/// One progress line per case.
pub fn print_row(r: &Row, elapsed: f64) {
    println!(
        "[{elapsed:6.1}s] {:5} {:26} {} {} n={:<3} nnz {:>6}: ours {} us ({} {}), cuSPARSE {} us \
         ({}), floor {} us -> {} ({:.1} s)",
        r.suite,
        r.matrix,
        r.value,
        r.layout,
        r.n,
        nnz(r.nnz),
        f(r.ours_us, 1),
        r.ours_variant.as_deref().unwrap_or("-"),
        r.ours_source.as_deref().unwrap_or("-"),
        f(r.cusparse_us, 1),
        r.cusparse_alg.as_deref().map_or("-", short),
        f(r.floor_us, 1),
        x(r.speedup),
        r.seconds
    );
    if let Some(e) = &r.ours_error {
        println!("          ours FAILED: {e}");
    }
    if r.cusparse_us.is_none()
        && let Some(e) = &r.cusparse_error
    {
        println!("          cuSPARSE FAILED: {e}");
    }
}

/// The summary bullets.
pub fn summary_md(r: &Report) -> String {
    let s = &r.summary;
    let mut out = String::from("## Summary\n\n");
    let _ = writeln!(
        out,
        "- speedup over cuSPARSE's best algorithm (geomean of cuSPARSE time / ours): all cases \
         **{}**; n = 32 {}, n = 64 {}, n = 128 {} (together {}); large graphs **{}**, real \
         matrices {}; smallest {} ({})",
        x(s.geomean_speedup_spmm),
        x(s.geomean_speedup_spmm_n32),
        x(s.geomean_speedup_spmm_n64),
        x(s.geomean_speedup_spmm_n128),
        x(s.geomean_speedup_spmm_n32_128),
        x(s.geomean_speedup_spmm_large),
        x(s.geomean_speedup_spmm_real),
        x(s.min_speedup_spmm),
        s.min_speedup_spmm_case.as_deref().unwrap_or("-"),
    );
    let by_n: Vec<String> = s
        .geomean_speedup_by_n
        .iter()
        .map(|(k, v)| format!("n = {} {}", k.trim_start_matches('0'), x(Some(*v))))
        .collect();
    let by_t: Vec<String> = s
        .geomean_speedup_by_type
        .iter()
        .map(|(k, v)| format!("{k} {}", x(Some(*v))))
        .collect();
    let _ = writeln!(
        out,
        "- per width: {}; per type: {}",
        by_n.join(", "),
        by_t.join(", ")
    );
    let _ = writeln!(
        out,
        "- latency-bound cases (compulsory bytes within L2) {}, bandwidth-bound {}",
        x(s.geomean_speedup_spmm_latency_bound),
        x(s.geomean_speedup_spmm_bandwidth_bound),
    );
    let _ = writeln!(
        out,
        "- X-row gather floor on the large graphs (floor time / time, geomean): ours {}, \
         cuSPARSE {}; best variant of our space where every variant was measured: {} over \
         cuSPARSE; the prior's first pick alone: {} over cuSPARSE",
        x(s.geomean_ours_vs_floor_large),
        x(s.geomean_cusparse_vs_floor_large),
        x(s.geomean_speedup_spmm_best_of_space),
        x(s.geomean_speedup_spmm_prior),
    );
    if let Some(g) = s.geomean_speedup_spmm_with_convert {
        let how = r
            .rows
            .iter()
            .find_map(|row| row.reorder.as_deref())
            .unwrap_or("-");
        let _ = writeln!(
            out,
            "- ours ran on the matrices renumbered ({how}), cuSPARSE on the given order; with \
             X's and Y's rows converted around every call: {} over cuSPARSE",
            x(Some(g))
        );
    }
    let _ = writeln!(
        out,
        "- {} cases, ours failed {}, cuSPARSE failed {}, skipped {}",
        s.cases, s.ours_failures, s.cusparse_failures, s.skipped
    );
    out
}

fn table(out: &mut String, title: &str, rows: &[&Row]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## {title}\n\n| matrix | value | layout | n | nnz | ours us | ours GB/s | % copy | ours \
         variant (choice) | cuSPARSE us (alg) | cuSPARSE GB/s | speedup | floor us | floor GB/s | \
         floor / ours | floor / cuSPARSE | prior pick us (speedup) | best of space us (speedup) |\n\
         |---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for r in rows {
        let best = match (&r.best_variant, r.best_us) {
            (Some(v), Some(us)) => format!("{us:.1} ({}, {v})", x(r.speedup_best)),
            _ => "-".into(),
        };
        let prior = match (&r.prior_variant, r.prior_us) {
            (Some(v), Some(us)) => format!("{us:.1} ({}, {v})", x(r.speedup_prior)),
            (Some(v), None) => format!("- ({v})"),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} ({}) | {} | **{}** | {} | {} | \
             {} | {} | {} | {} |",
            r.matrix.replace('|', "\\|"),
            r.value,
            r.layout,
            r.n,
            nnz(r.nnz),
            f(r.ours_us, 1),
            f(r.ours_gbs, 0),
            f(r.pct_copy, 1),
            r.ours_variant.as_deref().unwrap_or("-"),
            r.ours_source.as_deref().unwrap_or("-"),
            f(r.cusparse_us, 1),
            r.cusparse_alg.as_deref().map_or("-", short),
            f(r.cusparse_gbs, 0),
            x(r.speedup),
            f(r.floor_us, 1),
            f(r.floor_gbs, 0),
            x(r.ours_vs_floor),
            x(r.cusparse_vs_floor),
            prior,
            best,
        );
    }
}

/// Which cuSPARSE algorithms were skipped (not offered) or failed, by type.
fn alg_notes(out: &mut String, rows: &[Row]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        for a in r.cusparse_algs.iter().filter(|a| !a.correct) {
            let why = a.error.as_deref().unwrap_or("not timed");
            let why = why.split(':').next().unwrap_or(why);
            let key = format!("{} {} {}: {why}", short(&a.alg), r.value, r.layout);
            *seen.entry(key).or_default() += 1;
        }
    }
    if seen.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## cuSPARSE algorithms not timed\n");
    for (k, n) in seen {
        let _ = writeln!(out, "- {k} ({n} cases)");
    }
}

/// The Markdown report.
pub fn markdown(r: &Report) -> String {
    let mut out = format!(
        "# SpMM on {}{}\n\nCommit `{}`, policy `{}`, {}; {} (driver {}); command `{}`.\n\
         Copy bandwidth {:.0} GB/s (read + write), L2 {} MB.\n\n\
         `Y = A X` with X and Y of n columns. GB/s = compulsory bytes (values and column indices \
         once, row pointers once, X read once and Y written once: `nnz (v + 4) + (rows + 1) 4 + \
         (cols + rows) n v`) over the median time. cuSPARSE: `cusparseSpMM` with every CSR \
         algorithm, preprocessed, descriptors and buffers created once, the fastest one that \
         passed the float64 check. Speedup = cuSPARSE time / ours. **Floor**: a microbenchmark \
         of the traffic every CSR SpMM must do in the matrix's order without reusing X rows \
         beyond what the caches keep by themselves: the CSR arrays streamed once, the whole X \
         row of every nonzero gathered in CSR order (balanced, vector loads, several nonzeros \
         in flight per lane group; for column-major X one lane per nonzero and chunk of 8 \
         columns, so a warp gathers one column for 32 neighbouring nonzeros), Y written once; `floor / ours` \
         above 1 means ours reuses X rows explicitly or, in column-major, gathers from a \
         row-major copy (the transposed path, `.t`: two dense transposes buy whole-row gathers, \
         which the column-major floor does not model, so there it bounds only the direct \
         path), below 1 is room. Latency-bound: the case's compulsory bytes fit in \
         L2 (rotated X/Y copies keep it from being served by the previous call).\n\n",
        r.gpu,
        if r.partial {
            " (partial: the run was still going)"
        } else {
            ""
        },
        r.commit,
        r.policy,
        r.ours_choice,
        r.date,
        r.driver,
        r.command,
        r.copy_gbs,
        r.l2_bytes >> 20,
    );
    out += &summary_md(r);
    let bw: Vec<&Row> = r.rows.iter().filter(|x| x.bound == "bandwidth").collect();
    let lat: Vec<&Row> = r.rows.iter().filter(|x| x.bound != "bandwidth").collect();
    table(&mut out, "Bandwidth-bound cases", &bw);
    table(&mut out, "Latency-bound cases", &lat);
    alg_notes(&mut out, &r.rows);
    let failed: Vec<String> = r
        .rows
        .iter()
        .filter_map(|x| {
            x.ours_error
                .as_ref()
                .map(|e| format!("- {}: {e}", case_label(x)))
        })
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n## Ours failed\n\n{}", failed.join("\n"));
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(out, "\n## Skipped\n");
        for s in &r.skipped {
            let _ = writeln!(
                out,
                "- {} ({}, {}): {}",
                s.matrix, s.suite, s.what, s.reason
            );
        }
    }
    out
}

/// The plot: speedup over cuSPARSE per case against n.
pub fn svg(r: &Report, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let pts = |suite: &str, value: &str| -> Vec<(f64, f64)> {
        r.rows
            .iter()
            .filter(|x| x.suite == suite && x.value == value)
            .filter_map(|x| x.speedup.map(|s| ((x.n as f64).log2(), s)))
            .collect()
    };
    let sets = [
        ("large f32", pts("large", "f32"), RGBColor(31, 119, 180)),
        ("real f32", pts("real", "f32"), RGBColor(255, 127, 14)),
        ("real f64", pts("real", "f64"), RGBColor(44, 160, 44)),
    ];
    let all: Vec<&(f64, f64)> = sets.iter().flat_map(|s| s.1.iter()).collect();
    let xmin = all
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .min(4.0)
        - 0.5;
    let xmax = all.iter().map(|p| p.0).fold(0.0, f64::max).max(8.0) + 0.5;
    let ymax = all.iter().map(|p| p.1).fold(1.5f64, f64::max) * 1.1;
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "SpMM speedup vs best cuSPARSE algorithm",
            ("sans-serif", 22),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(xmin..xmax, 0f64..ymax)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("n (columns of X)")
        .y_desc("speedup (cuSPARSE time / ours)")
        .x_label_formatter(&|v| format!("{:.0}", 2f64.powf(*v)))
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new(
            vec![(xmin, 1.0), (xmax, 1.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| err(&e))?
        .label("1.0 = cuSPARSE")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    for (i, (label, p, color)) in sets.iter().enumerate() {
        let dx = (i as f64 - 1.0) * 0.12;
        let color = *color;
        chart
            .draw_series(
                p.iter()
                    .map(|&(x, y)| Circle::new((x + dx, y), 4, color.filled())),
            )
            .map_err(|e| err(&e))?
            .label(*label)
            .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// `bench spmm --render`: the Markdown and SVG views of a JSON report,
/// rewritten beside it (summary re-derived from the rows).
pub fn rerender(json: &Path) -> Result<()> {
    let text = std::fs::read_to_string(json)
        .with_context(|| format!("reading the report {}", json.display()))?;
    let mut report: Report = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a bench spmm report", json.display()))?;
    report.summary = summarize(&report.rows, report.skipped.len());
    let md = json.with_extension("md");
    std::fs::write(&md, markdown(&report)).with_context(|| format!("writing {}", md.display()))?;
    svg(&report, &json.with_extension("svg"))?;
    eprintln!("bench spmm: wrote {}", md.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::report::{Row, derive};
    use super::*;

    fn report() -> Report {
        let mut rows = Vec::new();
        for (suite, n, ours, cs) in [("large", 64, 100.0, 150.0), ("real", 16, 10.0, 9.0)] {
            let mut r = Row {
                matrix: format!("{suite}-m"),
                suite: suite.into(),
                bound: if suite == "large" {
                    "bandwidth"
                } else {
                    "latency"
                }
                .into(),
                value: "f32".into(),
                layout: "row-major".into(),
                n,
                nnz: 1000,
                bytes: 4_000_000,
                ours_us: Some(ours),
                cusparse_us: Some(cs),
                cusparse_alg: Some("CUSPARSE_SPMM_CSR_ALG3".into()),
                floor_us: Some(90.0),
                ..Row::default()
            };
            derive(&mut r, 4000.0);
            rows.push(r);
        }
        Report {
            gpu: "test GPU".into(),
            commit: "abc".into(),
            policy: "prior".into(),
            summary: summarize(&rows, 0),
            rows,
            partial: true,
            ..Report::default()
        }
    }

    #[test]
    fn the_json_has_the_issue_keys_and_the_views_render() {
        let r = report();
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        for k in ["gpu", "commit", "policy"] {
            assert!(v.get(k).is_some(), "{k}");
        }
        let s = &v["summary"];
        for k in [
            "geomean_speedup_spmm",
            "geomean_speedup_spmm_n32",
            "geomean_speedup_spmm_n64",
            "geomean_speedup_spmm_n128",
            "min_speedup_spmm",
            "geomean_speedup_spmm_large",
        ] {
            assert!(s.get(k).is_some(), "summary.{k}");
        }
        assert!((s["geomean_speedup_spmm_large"].as_f64().unwrap() - 1.5).abs() < 1e-12);
        let md = markdown(&r);
        assert!(md.contains("(partial"));
        assert!(md.contains("## Bandwidth-bound cases") && md.contains("## Latency-bound cases"));
        assert!(md.contains("**1.50x**") && md.contains("CSR_ALG3"));
        let lines: Vec<&str> = md.lines().collect();
        let head = lines
            .iter()
            .position(|l| l.starts_with("| matrix"))
            .unwrap();
        let cells = |l: &str| l.matches(" | ").count();
        assert_eq!(
            cells(lines[head]),
            cells(lines[head + 2]),
            "{}",
            lines[head + 2]
        );
        assert_eq!(
            lines[head].matches('|').count(),
            lines[head + 1].matches('|').count()
        );
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("spmm.json");
        std::fs::write(&json, serde_json::to_string(&r).unwrap()).unwrap();
        rerender(&json).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("spmm.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("SpMM speedup"));
    }
}
