//! The build-time check of shipped images, run through the real build
//! path: a throwaway crate declaring kernels with every epilogue for two
//! target architectures is built in `full` mode on this machine's GPU, and
//! every kernel must come back checked (`Entry::checked_on`): each image
//! the device can run, plain, fused and fallback entries, against float64
//! with non-trivial epilogue coefficients (`sparserl_build::verify`).

use anyhow::{Context, Result, bail};
use sparserl_build::{Builder, Mode, Output};

const MANIFEST: &str = r#"[package]
name = "shipped-check"
version = "0.1.0"
edition = "2024"

[package.metadata.sparserl]
arch = ["sm_80", "sm_90"]

[[package.metadata.sparserl.kernel]]
name = "graph"
op = "spmv"
value = "f32"
epilogues = ["axpby", "dot", "axpby-dot"]
pattern = { kind = "power-law", rows = 20000, avg-degree = 8, exponent = 2.0 }

[[package.metadata.sparserl.kernel]]
name = "mesh"
op = "spmv"
value = "f64"
epilogues = ["axpby", "dot", "axpby-dot"]
pattern = { kind = "stencil", grid = [96, 96], points = 5 }
"#;

/// Builds the throwaway crate in `dir` (emptied first; its generated
/// module and kernels stay there for inspection) with a measured search of
/// `budget` seconds per kernel; the build's own lines (one "shipped images
/// checked" line per kernel) go to stderr. Returns a summary per kernel,
/// nothing when there is no GPU (said on stdout).
pub fn run(dir: &std::path::Path, budget: f64) -> Result<Vec<String>> {
    if let Err(why) = sparserl_build::gpu::GpuTuner::probe() {
        println!("shipped-check: skipped, no GPU: {why}");
        return Ok(Vec::new());
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("Cargo.toml"), MANIFEST)?;
    let report = Builder::new(dir, dir.join("out"))
        .mode(Mode::Full)
        .cache_dir(None)
        .output(Output::Terminal)
        .budget_seconds(budget)
        .try_run()
        .context("the throwaway crate's build (with its shipped-image check) failed")?;
    let mut lines = Vec::new();
    for k in &report.kernels {
        let Some(device) = &k.entry.checked_on else {
            bail!(
                "kernel `{}` was built without its shipped-image check",
                k.name
            );
        };
        let archs: Vec<&str> = k.entry.images.iter().map(|i| i.arch.as_str()).collect();
        lines.push(format!(
            "shipped-check: kernel `{}` ({}, {}): images [{}] checked on {device}",
            k.name,
            k.entry.value.as_str(),
            k.entry.variant,
            archs.join(", ")
        ));
    }
    Ok(lines)
}

/// Arguments of `cargo xtask shipped-check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the throwaway crate is built (emptied first).
    #[arg(long, default_value = "target/gpu-check/shipped-check")]
    pub dir: std::path::PathBuf,
    /// Search budget per kernel, seconds.
    #[arg(long, default_value_t = 3.0)]
    pub budget: f64,
}

/// `cargo xtask shipped-check`: [`run`], printing its summaries.
pub fn command(args: Args) -> Result<()> {
    for line in run(&args.dir, args.budget)? {
        println!("{line}");
    }
    Ok(())
}
