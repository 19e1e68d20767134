//! `cargo xtask test`: provision the compiler, then check formatting, lints
//! and run every test of the workspace.

use anyhow::{Context, Result, bail};
use std::process::Command;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Skip `cargo fmt --check` and clippy.
    #[arg(long)]
    pub no_lint: bool,
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
    eprintln!("xtask test: all passed");
    Ok(())
}
