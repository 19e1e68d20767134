//! Rendering: the Markdown table and the SVG plot.

use super::*;

pub(super) fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "-".to_string(),
    }
}

pub(super) fn fmt_x(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.2}x"),
        _ => "-".to_string(),
    }
}

pub(super) fn fmt_nnz(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

pub(super) fn short_alg(a: &str) -> &str {
    a.strip_prefix("CUSPARSE_SPMV_").unwrap_or(a)
}

pub(super) fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub(super) fn summary_bullets(out: &mut String, label: &str, s: &SummaryPart) {
    let _ = writeln!(
        out,
        "- {label}: speedup vs cuSPARSE (geomean) large **{}**, real {}; \
         real per-call latency {} (back to back), {} (graph replay); \
         min speedup {} on {}; ours vs template {}; ours vs oracle {}; \
         {} rows, ours failed {}, cuSPARSE failed {}",
        fmt_x(s.geomean_speedup_large),
        fmt_x(s.geomean_speedup_real),
        fmt_x(s.geomean_speedup_real_latency),
        fmt_x(s.geomean_speedup_real_graph),
        fmt_x(s.min_speedup),
        s.min_speedup_matrix.as_deref().unwrap_or("-"),
        fmt_x(s.geomean_ours_vs_template),
        fmt_x(s.geomean_ours_vs_oracle),
        s.rows,
        s.ours_failures,
        s.cusparse_failures,
    );
}

/// The summary part of the markdown report.
pub fn render_summary_md(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Summary\n");
    for (label, part) in [
        ("all", &r.summary.all),
        ("f32", &r.summary.f32),
        ("f64", &r.summary.f64),
    ] {
        if part.rows > 0 {
            summary_bullets(&mut out, label, part);
        }
    }
    let a = &r.summary.all;
    if a.geomean_speedup_irregular.is_some() || a.min_speedup_large_all.is_some() {
        let _ = writeln!(
            out,
            "- bandwidth-bound sets: irregular **{}** over cuSPARSE on the given order \
             (permutations inside our timing), **{}** kernel alone over cuSPARSE on the same \
             renumbered matrices; smallest speedup over both large sets {}",
            fmt_x(a.geomean_speedup_irregular),
            fmt_x(a.geomean_speedup_irregular_same_order),
            fmt_x(a.min_speedup_large_all),
        );
    }
    if r.rows.iter().any(|x| x.gather_floor_gbs.is_some()) {
        let at = &a.at_gather_limit;
        let _ = writeln!(
            out,
            "- gather floor (a microbenchmark of the gather limit of each matrix's given order, \
             not a proof): at the gather limit, ours and cuSPARSE both within {:.0}% of the \
             floor: {}",
            gather::AT_LIMIT * 100.0,
            if at.is_empty() {
                "none".to_string()
            } else {
                at.join(", ")
            },
        );
    }
    if a.geomean_reachable_large.is_some() || a.geomean_reachable_irregular.is_some() {
        let _ = writeln!(
            out,
            "- reachable by this run's measurements (the better of ours and a CSR kernel at the \
             gather floor of the best measured order, permutations included; see below): large \
             {}, irregular {} over cuSPARSE on the given order (geomean)",
            fmt_x(a.geomean_reachable_large),
            fmt_x(a.geomean_reachable_irregular),
        );
    }
    if r.summary.skipped > 0 {
        let _ = writeln!(out, "- skipped: {} (see below)", r.summary.skipped);
    }
    out
}

/// The first cells of a row of the tables by order: `| matrix | value | order |`.
fn lead_cells(x: &Row) -> String {
    format!(
        "| {} | {} | {} |",
        md_cell(&x.matrix),
        x.value,
        x.reorder.as_deref().unwrap_or("-")
    )
}

/// The same-order table: every row whose winner is renumbered, or of the
/// irregular suite.
fn same_order_table(out: &mut String, rows: &[Row]) {
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|x| x.suite == "irregular" || x.reorder.as_deref().is_some_and(|o| o != "none"))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## Ordering and kernel, separated\n\n`ours` includes the device permutations of \
         x and y of a renumbered variant; `kernel alone` is the same kernel on the renumbered \
         matrix without them; cuSPARSE runs on the given and on the same renumbered matrix. \
         `host s`: computing the ordering and renumbering the matrix (once, at upload).\n"
    );
    let _ = writeln!(
        out,
        "| matrix | value | order | host s | ours GB/s | cuSPARSE given GB/s | speedup | \
         kernel alone GB/s | cuSPARSE same order GB/s | speedup same order |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for x in rows {
        let _ = writeln!(
            out,
            "{} {} | {} | {} | {} | {} | {} | {} |",
            lead_cells(x),
            fmt_opt(x.reorder_host_seconds, 2),
            fmt_opt(x.ours_gbs, 0),
            fmt_opt(x.cusparse_gbs, 0),
            fmt_x(x.speedup_vs_cusparse),
            fmt_opt(x.ours_kernel_same_order_gbs, 0),
            fmt_opt(x.cusparse_same_order_gbs, 0),
            fmt_x(x.speedup_same_order),
        );
    }
}

/// The gather-floor table: every row with a gather floor.
fn gather_table(out: &mut String, rows: &[Row]) {
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|x| x.gather_floor_gbs.is_some() || x.gather_floor_same_order_gbs.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## Gather floor\n\nA microbenchmark of the gather limit of each matrix, not a proof: \
         one kernel does the memory traffic of a perfectly balanced CSR SpMV with no row \
         structure (row pointers, indices and values streamed once, `x[indices[k]]` gathered \
         for every nonzero in the matrix's order, `y` written once), timed like ours and \
         cuSPARSE, in the same GB/s units; the faster of plain and `__ldg` loads of `x`. \
         `floor` is of the given order (what cuSPARSE runs on); `same-order floor` of the \
         matrix our kernel alone and cuSPARSE run on in the same-order comparison. \
         `floor / cuSPARSE`: the speedup over cuSPARSE of a kernel that read the CSR arrays \
         at exactly the floor (a layout that reads fewer bytes can go beyond it). At the \
         gather limit: ours and cuSPARSE both within {:.0}% of the floor.\n",
        gather::AT_LIMIT * 100.0
    );
    let _ = writeln!(
        out,
        "| matrix | value | floor GB/s (x loads) | ours / floor | cuSPARSE / floor | speedup | \
         floor / cuSPARSE | order | same-order floor GB/s | kernel alone / floor | \
         cuSPARSE same order / floor | at the gather limit |\n\
         |---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"
    );
    for x in rows {
        let floor = match (x.gather_floor_gbs, &x.gather_floor_load) {
            (Some(g), Some(l)) => format!("{g:.0} ({l})"),
            (g, _) => fmt_opt(g, 0),
        };
        let same = x.gather_floor_same_order_gbs;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md_cell(&x.matrix),
            x.value,
            floor,
            fmt_x(ratio(x.ours_gbs, x.gather_floor_gbs)),
            fmt_x(ratio(x.cusparse_gbs, x.gather_floor_gbs)),
            fmt_x(x.speedup_vs_cusparse),
            fmt_x(ratio(x.gather_floor_gbs, x.cusparse_gbs)),
            x.reorder.as_deref().unwrap_or("-"),
            fmt_opt(same, 0),
            fmt_x(ratio(x.ours_kernel_same_order_gbs, same)),
            fmt_x(ratio(x.cusparse_same_order_gbs, same)),
            if gather::at_gather_limit(x) {
                "yes"
            } else {
                "no"
            },
        );
    }
}

/// What a CSR kernel at the gather floor would reach: every row with a
/// gather floor.
fn reachable_table(out: &mut String, rows: &[Row]) {
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|x| x.gather_floor_gbs.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## At the floor\n\nThe speedup over cuSPARSE on the given order of a kernel that \
         read the CSR arrays at the gather floor: on the given order, and, where our winner is \
         renumbered, at the same-order floor plus the permutations of a launch in the user's \
         numbering as this run measured them (ours minus our kernel alone). `reachable`: the \
         better of those and ours (a layout that reads fewer bytes than CSR can go beyond the \
         floor). Orders the search did not pick have no same-order floor here.\n"
    );
    let _ = writeln!(
        out,
        "| matrix | value | order | ours | at the floor, given order | at the floor, renumbered | \
         reachable |\n|---|---|---|---:|---:|---:|---:|"
    );
    for x in rows {
        let (given, renumbered) = gather::at_floor(x);
        let _ = writeln!(
            out,
            "{} {} | {} | {} | {} |",
            lead_cells(x),
            fmt_x(x.speedup_vs_cusparse),
            fmt_x(given),
            fmt_x(renumbered),
            fmt_x(gather::reachable(x)),
        );
    }
}

/// The markdown report (`spmv-h200.md`).
pub fn render_markdown(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# SpMV benchmark: SparseRL vs cuSPARSE\n");
    let _ = writeln!(out, "- GPU: {}", r.gpu);
    let _ = writeln!(out, "- Driver: {}", r.driver);
    let _ = writeln!(out, "- Date: {}", r.date);
    let _ = writeln!(out, "- Command: `{}`", r.command);
    if !r.commit.is_empty() || !r.policy.is_empty() {
        let _ = writeln!(out, "- Commit `{}`, policy `{}`", r.commit, r.policy);
    }
    let _ = writeln!(out, "- Copy bandwidth: {:.0} GB/s", r.copy_gbs);
    let _ = writeln!(
        out,
        "- Search budget: {} s per large matrix, {} s per real matrix; cuSPARSE preprocess: {}; \
         total {:.0} s{}",
        r.budgets[0],
        r.budgets[1],
        if r.cusparse_preprocess { "yes" } else { "no" },
        r.elapsed_seconds,
        if r.quick { " (quick sizes)" } else { "" }
    );
    if r.partial {
        let _ = writeln!(
            out,
            "- **Partial**: written after the last matrix below while the run went on; the run \
             did not reach its end (stopped from outside), so later matrices are missing"
        );
    }
    let _ = writeln!(
        out,
        "\nGB/s = compulsory bytes of CSR (values, indices, row pointers, x, y once) / median \
         time, for every kernel whatever layout it reads, so GB/s compare times. A kernel that \
         reads a smaller layout (diagonal: no indices, no row pointers; narrow: 16-bit column \
         offsets) can exceed the copy bandwidth in these units; `memory vs CSR` is the device \
         bytes of the layout our kernel reads over those of CSR. Speedup = ours / best cuSPARSE \
         algorithm; ours and that algorithm are timed twice, one right after the other, and \
         each keeps its faster median. Every kernel was checked against a float64 reference \
         before timing; `FAIL` marks a failed check.\n"
    );
    out.push_str(&render_summary_md(r));
    same_order_table(&mut out, &r.rows);
    gather_table(&mut out, &r.rows);
    reachable_table(&mut out, &r.rows);
    for suite in ["large", "irregular", "real", "corpus"] {
        for value in ["f32", "f64"] {
            let rows: Vec<&Row> = r
                .rows
                .iter()
                .filter(|x| x.suite == suite && x.value == value)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let real = suite == "real";
            let _ = writeln!(out, "\n## {suite} matrices, {value}\n");
            let mut head = String::from(
                "| matrix | class | nnz | ours GB/s | cuSPARSE GB/s (alg) | template GB/s | \
                 oracle GB/s | speedup | % copy | variant | memory vs CSR |",
            );
            let mut sep = String::from("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|");
            if real {
                head += " ours us | ours graph us | cuSPARSE us | cuSPARSE graph us |";
                sep += "---:|---:|---:|---:|";
            }
            let _ = writeln!(out, "{head}\n{sep}");
            for x in rows {
                let ours = match (x.ours_gbs, &x.ours_error) {
                    (Some(g), _) => format!("{g:.0}"),
                    (None, e) => format!("FAIL ({})", md_cell(e.as_deref().unwrap_or("?"))),
                };
                let cus = match (x.cusparse_gbs, &x.cusparse_alg) {
                    (Some(g), Some(a)) => format!("{g:.0} ({})", short_alg(a)),
                    (Some(g), None) => format!("{g:.0}"),
                    (None, _) => format!(
                        "FAIL ({})",
                        md_cell(x.cusparse_error.as_deref().unwrap_or("?"))
                    ),
                };
                let _ = write!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    md_cell(&x.matrix),
                    md_cell(&x.class),
                    fmt_nnz(x.nnz),
                    ours,
                    cus,
                    fmt_opt(x.template_gbs, 0),
                    fmt_opt(x.oracle_gbs, 0),
                    fmt_x(x.speedup_vs_cusparse),
                    fmt_opt(x.pct_copy, 1),
                    x.variant.as_deref().unwrap_or("-"),
                    if x.csr_bytes > 0 && x.device_bytes > 0 {
                        format!("{:.2}", x.device_bytes as f64 / x.csr_bytes as f64)
                    } else {
                        "-".into()
                    },
                );
                if real {
                    let graph = if x.cusparse_graph_us.is_none() && x.cusparse_gbs.is_some() {
                        "n/a".to_string()
                    } else {
                        fmt_opt(x.cusparse_graph_us, 2)
                    };
                    let _ = write!(
                        out,
                        " {} | {} | {} | {} |",
                        fmt_opt(x.ours_latency_us, 2),
                        fmt_opt(x.ours_graph_us, 2),
                        fmt_opt(x.cusparse_latency_us, 2),
                        graph
                    );
                }
                out.push('\n');
            }
        }
    }
    let notes: Vec<String> = r
        .rows
        .iter()
        .flat_map(|x| {
            x.notes
                .iter()
                .map(move |n| format!("- {} ({}): {}", x.matrix, x.value, md_cell(n)))
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n## Notes\n");
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(out, "\n## Skipped\n");
        for s in &r.skipped {
            let _ = writeln!(
                out,
                "- {} ({}, {}): {}",
                s.matrix,
                s.suite,
                s.value,
                md_cell(&s.reason)
            );
        }
    }
    out
}

/// Draws speedup vs cuSPARSE per matrix (x = nnz, log scale) into an SVG file.
pub fn render_svg(rows: &[Row], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let points = |value: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.value == value && r.nnz > 0)
            .filter_map(|r| r.speedup_vs_cusparse.map(|s| (r.nnz as f64, s)))
            .filter(|p| p.1.is_finite())
            .collect()
    };
    let (p32, p64) = (points("f32"), points("f64"));
    let all: Vec<&(f64, f64)> = p32.iter().chain(&p64).collect();
    let xmin = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = all.iter().map(|p| p.0).fold(0.0, f64::max);
    let (xmin, xmax) = if all.is_empty() {
        (1e3, 1e9)
    } else {
        ((xmin / 2.0).max(1.0), xmax * 2.0)
    };
    let ymax = all.iter().map(|p| p.1).fold(1.5f64, f64::max) * 1.15;
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "SpMV speedup vs best cuSPARSE algorithm",
            ("sans-serif", 22),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((xmin..xmax).log_scale(), 0f64..ymax)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("nonzeros")
        .y_desc("speedup (ours / cuSPARSE)")
        .x_label_formatter(&|v| format!("{v:.0e}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
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
    chart
        .draw_series(
            p32.iter()
                .map(|&(x, y)| Circle::new((x, y), 5, BLUE.filled())),
        )
        .map_err(|e| err(&e))?
        .label("f32")
        .legend(|(x, y)| Circle::new((x + 9, y), 5, BLUE.filled()));
    chart
        .draw_series(
            p64.iter()
                .map(|&(x, y)| TriangleMarker::new((x, y), 6, RED.filled())),
        )
        .map_err(|e| err(&e))?
        .label("f64")
        .legend(|(x, y)| TriangleMarker::new((x + 9, y), 6, RED.filled()));
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// `bench --render`: rewrites the Markdown and SVG views of a JSON report
/// beside it (`<stem>.md`, `<stem>.svg`), without a GPU.
pub fn rerender(json: &Path) -> Result<()> {
    let text = std::fs::read_to_string(json)
        .with_context(|| format!("reading the report {}", json.display()))?;
    let mut report: Report = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a bench report", json.display()))?;
    // The summary as this version derives it from the rows (the rows are
    // the measurements; the JSON file is left as the run wrote it).
    report.summary = summarize(&report.rows, report.summary.skipped);
    let md = json.with_extension("md");
    std::fs::write(&md, render_markdown(&report))
        .with_context(|| format!("writing {}", md.display()))?;
    render_svg(&report.rows, &json.with_extension("svg"))?;
    eprintln!("bench: wrote {}", md.display());
    Ok(())
}
