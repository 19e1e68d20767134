//! `cargo xtask explain <kernel>`: the audit trail behind a kernel's choice.

use anyhow::{Context, Result, bail};
use sparserl_build::{Builder, Output};
use std::path::PathBuf;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Kernel name as declared.
    pub kernel: String,
    /// Crate directory holding the declaring Cargo.toml.
    #[arg(long, default_value = "example-app")]
    pub manifest_dir: PathBuf,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let root = crate::common::workspace_root();
    let dir = root.join(&args.manifest_dir);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let scratch = target.join("xtask-explain");
    // The same generation a build runs: a cache hit returns the stored
    // entry, measurements included, without redoing any work.
    let report = Builder::new(&dir, &scratch)
        .output(Output::Quiet)
        .cache_dir(Some(target.join("sparserl-cache")))
        .try_run()
        .context("reading the kernel declarations")?;
    if let Some(k) = report.spmm_kernels.iter().find(|k| k.name == args.kernel) {
        return explain_spmm(k, args.json);
    }
    let Some(k) = report.kernels.iter().find(|k| k.name == args.kernel) else {
        let names: Vec<&str> = report
            .kernels
            .iter()
            .map(|k| k.name.as_str())
            .chain(report.spmm_kernels.iter().map(|k| k.name.as_str()))
            .collect();
        bail!(
            "no kernel named `{}`; declared: {}",
            args.kernel,
            names.join(", ")
        );
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&k.entry.trials)?);
        return Ok(());
    }
    println!(
        "kernel `{}` ({}): {}",
        k.name, k.entry.value, k.entry.variant
    );
    println!("chosen: {} ({})", k.entry.provenance, k.entry.note);
    if let Some(r) = &k.entry.objective {
        print_objective(r);
    }
    if k.entry.trials.is_empty() {
        println!("no measurements recorded: this choice was not measured on a GPU here");
        return Ok(());
    }
    println!(
        "{:<4} {:<9} {:<38} {:>10} {:>10} {:>8}",
        "#", "phase", "variant", "GB/s", "rel err", "secs"
    );
    for (i, t) in k.entry.trials.iter().enumerate() {
        println!(
            "{:<4} {:<9} {:<38} {:>10.1} {:>10.1e} {:>8.2}{}",
            i,
            t.phase,
            t.variant.id(),
            t.gbs,
            t.rel_err,
            t.seconds,
            if t.correct {
                ""
            } else {
                "  WRONG (never chosen)"
            }
        );
    }
    Ok(())
}

/// The choice behind an SpMM kernel: one variant per declared width, and
/// the search's measurements when it was measured here.
fn explain_spmm(k: &sparserl_build::entry_spmm::SpmmKernelReport, json: bool) -> Result<()> {
    let e = &k.entry;
    if json {
        println!("{}", serde_json::to_string_pretty(&e.trials)?);
        return Ok(());
    }
    println!(
        "spmm kernel `{}` ({}, {} X and Y, epilogues: {})",
        k.name,
        e.value,
        e.layout.as_str(),
        if e.epilogues.is_empty() {
            "none".to_string()
        } else {
            e.epilogues
                .iter()
                .map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    println!("chosen: {} ({})", e.provenance, e.note);
    for m in &e.widths {
        let how = match (m.measured_gbs, m.predicted) {
            (Some(g), _) => format!("{g:.0} GB/s measured"),
            (None, Some(p)) => format!("predicted {:.0}% of copy bandwidth (estimate)", 100.0 * p),
            (None, None) => "not measured".to_string(),
        };
        println!(
            "  N = {:<5} {:<38} {how}",
            m.width.unwrap_or(0),
            m.variant.id()
        );
    }
    println!(
        "  other N: the generic-width entry of the nearest tuned width's variant; no tuned width: {}",
        e.fallback.variant.id()
    );
    if e.trials.is_empty() {
        println!("no measurements recorded: this choice was not measured on a GPU here");
        return Ok(());
    }
    println!(
        "{:<4} {:<6} {:<8} {:<38} {:>10} {:>8}",
        "#", "N", "phase", "variant", "GB/s", "secs"
    );
    for (i, t) in e.trials.iter().enumerate() {
        println!(
            "{:<4} {:<6} {:<8} {:<38} {:>10.1} {:>8.2}{}",
            i,
            t.n,
            t.phase,
            t.variant.id(),
            t.gbs,
            t.seconds,
            match &t.error {
                Some(why) if !t.correct => format!("  REJECTED: {why}"),
                _ => String::new(),
            }
        );
    }
    Ok(())
}

/// The energy phase behind a kernel whose objective is not time: time and
/// energy per call of every finalist, the Pareto front, the pick.
pub(crate) fn print_objective(r: &sparserl_build::ObjectiveRecord) {
    println!("{}", r.summary());
    if r.finalists.is_empty() {
        return;
    }
    println!(
        "{:<38} {:>9} {:>10} {:>10} {:>7} {:>7}  front",
        "finalist", "GB/s", "us/call", "mJ/call", "spread", "W"
    );
    for f in &r.finalists {
        let num = |x: Option<f64>, scale: f64, prec: usize| {
            x.map_or("-".to_string(), |v| format!("{:.*}", prec, v * scale))
        };
        let mark = match (&f.error, f.chosen, f.pareto) {
            (Some(e), _, _) => format!("  not measured: {e}"),
            (None, true, _) => "  Pareto, CHOSEN".to_string(),
            (None, false, true) => "  Pareto".to_string(),
            (None, false, false) => String::new(),
        };
        println!(
            "{:<38} {:>9.1} {:>10} {:>10} {:>6}% {:>7}{mark}",
            f.variant,
            f.search_gbs,
            num(f.seconds_per_call, 1e6, 2),
            num(f.joules_per_call, 1e3, 4),
            num(f.spread, 100.0, 1),
            num(f.avg_power_w, 1.0, 0),
        );
    }
}
