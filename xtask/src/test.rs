//! `cargo xtask test`: provision the compiler, then check formatting, lints
//! and run every test of the workspace; then provision libtorch and run the
//! policy crate's training tests (feature `train`: a small policy trained on
//! the committed H200 dataset must beat a uniformly random choice and the
//! template rule on the held-out matrices).

use anyhow::{Context, Result, bail};
use std::process::Command;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Skip `cargo fmt --check` and clippy.
    #[arg(long)]
    pub no_lint: bool,
    /// Skip the training tests (they install libtorch, about 1.3 GB).
    #[arg(long)]
    pub no_train: bool,
}

fn cargo(args: &[&str], envs: &[(&str, String)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask test: cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(crate::common::workspace_root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

/// Runs the whole test suite.
pub fn run(args: Args) -> Result<()> {
    let root = crate::provision::run(crate::provision::Args { force: false })?;
    let tools = crate::common::workspace_root().join(".tools");
    // Every generated kernel must compile here: no silent skips in CI.
    let envs = [
        ("SPARSERL_REQUIRE_CUDA", "1".to_string()),
        ("SPARSERL_TOOLS_DIR", tools.display().to_string()),
    ];
    eprintln!("xtask test: CUDA compiler tools from {}", root.display());
    if !args.no_lint {
        cargo(&["fmt", "--all", "--check"], &envs)?;
        cargo(
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
            &envs,
        )?;
    }
    cargo(&["test", "--workspace", "--all-targets"], &envs)?;
    cargo(&["test", "--workspace", "--doc"], &envs)?;
    if !args.no_train {
        let libtorch = crate::policy::provision_torch()?;
        let mut envs = envs.to_vec();
        envs.push(("LIBTORCH", libtorch.display().to_string()));
        if !args.no_lint {
            cargo(
                &[
                    "clippy",
                    "-p",
                    "sparserl-policies",
                    "--all-targets",
                    "--features",
                    "train",
                    "--",
                    "-D",
                    "warnings",
                ],
                &envs,
            )?;
        }
        cargo(
            &["test", "-p", "sparserl-policies", "--features", "train"],
            &envs,
        )?;
    }
    eprintln!("xtask test: all passed");
    Ok(())
}
