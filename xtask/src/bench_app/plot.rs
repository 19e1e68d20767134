//! The SVG view of an application benchmark report: per case, our time per
//! iteration relative to the cuSPARSE + cuBLAS graph form and to the
//! textbook form (above 1 = ours is faster), and the traffic floor.

use super::Report;
use anyhow::{Result, anyhow};
use std::path::Path;

/// Draws the speedups of every CG and PageRank case into `path`.
pub fn write(r: &Report, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    // (label, ours / vendor graph, ours / textbook, floor / ours)
    let mut cases: Vec<(String, f64, f64, f64)> = Vec::new();
    for c in &r.cg {
        cases.push((
            format!("CG {}", c.name),
            c.t.speedup_vs_graph,
            c.t.speedup_vs_textbook,
            c.floor_us_per_iter / c.t.ours_us_per_iter,
        ));
    }
    for c in &r.pagerank {
        cases.push((
            format!("PR {}", c.name),
            c.t.speedup_vs_graph,
            c.t.speedup_vs_textbook,
            c.floor_us_per_iter / c.t.ours_us_per_iter,
        ));
    }
    let n = cases.len().max(1);
    let ymax = cases
        .iter()
        .flat_map(|c| [c.1, c.2])
        .filter(|v| v.is_finite())
        .fold(2.0f64, f64::max)
        * 1.1;
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (1100, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let labels: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Time per iteration, speedup of ours ({}, {})",
                r.gpu, r.commit
            ),
            ("sans-serif", 20),
        )
        .margin(14)
        .x_label_area_size(120)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_style(
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .y_desc("speedup (their time / our time)")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new(
            vec![(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| err(&e))?
        .label("1.0 = same time")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    let series = [
        ("vs cuSPARSE + cuBLAS, CUDA graph", BLUE, 1usize),
        ("vs textbook (host sync per dot)", RED, 2),
        ("traffic floor / our time", GREEN, 3),
    ];
    for (name, color, k) in series {
        let pts: Vec<(f64, f64)> = cases
            .iter()
            .enumerate()
            .map(|(i, c)| (i as f64, [c.1, c.2, c.3][k - 1]))
            .filter(|p| p.1.is_finite())
            .collect();
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 5, color.filled())),
            )
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 9, y), 5, color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
