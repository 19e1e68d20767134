//! `cargo xtask demo`: the product end to end on example-app.
//!
//! Builds example-app (its build script tunes or picks a kernel per declared
//! pattern), reports per kernel the variant, how it was chosen and where its
//! CUDA source and PTX are (SpMM kernels per declared width), then runs
//! example-app (which solves CG and PageRank and runs a GCN layer on a GPU,
//! or says there is none and exits cleanly).

use anyhow::{Context, Result, bail};
use sparserl_build::{Builder, CacheStatus, Output};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Build in debug mode instead of release.
    #[arg(long)]
    pub debug: bool,
}

/// Newest `OUT_DIR` of example-app under `target/<profile>/build`.
fn find_out_dir(target: &Path, profile: &str) -> Option<PathBuf> {
    let build = target.join(profile).join("build");
    std::fs::read_dir(build)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("example-app-"))
        .map(|e| e.path().join("out"))
        .filter(|p| p.join(sparserl_build::emit::MODULE_FILE).exists())
        .max_by_key(|p| {
            std::fs::metadata(p.join(sparserl_build::emit::MODULE_FILE))
                .and_then(|m| m.modified())
                .ok()
        })
}

/// The SpMM kernels of the listing: per declared width its variant, and
/// where the CUDA sources are.
fn print_spmm(report: &sparserl_build::BuildReport) {
    for k in &report.spmm_kernels {
        let e = &k.entry;
        for m in &e.widths {
            println!(
                "  {:<10} {} spmm N = {:<4} -> {:<32} [{}]{}",
                k.name,
                e.value,
                m.width.map_or("any".to_string(), |n| n.to_string()),
                m.variant.id(),
                e.note,
                if k.cache == CacheStatus::Hit {
                    ""
                } else {
                    " (regenerated)"
                }
            );
        }
        for p in &k.source_paths {
            println!("             source {}", p.display());
        }
        let arch: Vec<&str> = e.arch.iter().map(String::as_str).collect();
        println!(
            "             images {} per module ({} layout, fallback {})",
            if arch.is_empty() {
                "none (compiled at first use)".to_string()
            } else {
                arch.join(", ")
            },
            e.layout.as_str(),
            e.fallback.variant.id()
        );
    }
}

/// Runs the demo.
pub fn run(args: Args) -> Result<()> {
    let root = crate::common::workspace_root();
    // NVRTC from the wheels so PTX is generated even without a CUDA install.
    let provisioned = crate::provision::run(crate::provision::Args { force: false });
    if let Err(e) = &provisioned {
        eprintln!("demo: could not provision NVRTC ({e:#}); kernels will be compiled at first use");
    }
    let profile = if args.debug { "debug" } else { "release" };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(&cargo);
    build
        .current_dir(&root)
        .args(["build", "-p", "example-app"]);
    if !args.debug {
        build.arg("--release");
    }
    build.env("SPARSERL_TOOLS_DIR", root.join(".tools"));
    eprintln!("demo: building example-app ({profile}); its build script generates the kernels");
    let status = build.status().context("running cargo build")?;
    if !status.success() {
        bail!("building example-app failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let out_dir = find_out_dir(&target, profile)
        .context("cannot find example-app's generated module under the target directory")?;
    // Re-running the generation against the same cache is a cache hit: it
    // returns the report of what the build produced without redoing work.
    let report = Builder::new(root.join("example-app"), &out_dir)
        .output(Output::Quiet)
        .cache_dir(Some(target.join("sparserl-cache")))
        .try_run()
        .context("reading example-app's generated kernels")?;
    println!("\nGenerated kernels (mode: {:?}):", report.mode);
    for k in &report.kernels {
        println!(
            "  {:<10} {} -> {:<32} [{}]{}",
            k.name,
            k.entry.value,
            k.entry.variant.id(),
            k.entry.note,
            if k.cache == CacheStatus::Hit {
                ""
            } else {
                " (regenerated)"
            }
        );
        println!("             source {}", k.source_path.display());
        match &k.ptx_path {
            Some(p) => println!(
                "             PTX    {} ({})",
                p.display(),
                k.entry.arch.join(", ")
            ),
            None => println!(
                "             PTX    none (NVRTC unavailable at build time; compiled at first use)"
            ),
        }
    }
    print_spmm(&report);
    println!("  module {}\n", report.module.display());
    let exe = target.join(profile).join("example-app");
    eprintln!("demo: running {}", exe.display());
    let status = Command::new(&exe)
        .current_dir(&root)
        .status()
        .with_context(|| format!("running {}", exe.display()))?;
    if !status.success() {
        bail!("example-app failed");
    }
    Ok(())
}
