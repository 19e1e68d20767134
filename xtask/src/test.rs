//! `cargo xtask test`: provision the compiler, then check formatting, lints
//! and run every test of the workspace; then provision libtorch and run the
//! policy crate's training tests (feature `train`: a small policy trained on
//! the committed H200 dataset must beat a uniformly random choice and the
//! template rule on the held-out matrices); then a bounded fuzzing smoke run
//! of the two parsers when a nightly toolchain and cargo-fuzz are present.

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
    /// Skip the fuzzing smoke run.
    #[arg(long)]
    pub no_fuzz: bool,
    /// Seconds per fuzz target in the smoke run.
    #[arg(long, default_value_t = 20)]
    pub fuzz_seconds: u32,
}

/// The cargo-fuzz targets of `fuzz/` (the parsers that read user files).
const FUZZ_TARGETS: [&str; 2] = ["mtx", "descriptor"];

/// The build mode of the fuzz smoke run, given to both `fuzz build` and
/// `fuzz run` (a run in another mode would rebuild).
const FUZZ_MODE: &str = "--dev";

/// A `cargo +nightly ...` command in `dir` (through the rustup proxy, with
/// the toolchain of the calling cargo unset so that `+nightly` applies).
fn nightly_cargo(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly")
        .args(args)
        .current_dir(dir)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC");
    c
}

/// Runs every fuzz target for `seconds` (libFuzzer's own time limit); a
/// crash fails the test run and leaves its input in `fuzz/artifacts/`.
/// Built unoptimised (`--dev`: debug assertions and overflow checks, as
/// cargo-fuzz's default release build has, at about half its build time on
/// a fresh machine; the run is bounded by time, not by executions).
/// Needs a nightly toolchain and cargo-fuzz; without them it says so and
/// runs nothing (the parsers' property tests run on stable regardless).
fn fuzz_smoke(seconds: u32) -> Result<()> {
    let dir = crate::common::workspace_root().join("fuzz");
    let available = nightly_cargo(&dir, &["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !available {
        eprintln!(
            "xtask test: fuzz smoke run skipped: it needs a nightly toolchain and cargo-fuzz \
             (`rustup toolchain install nightly`, `cargo install cargo-fuzz`)"
        );
        return Ok(());
    }
    // Building needs the nightly sanitizer support; a machine where it does
    // not build cannot fuzz, which is not a finding about the parsers.
    let built = nightly_cargo(&dir, &["fuzz", "build", FUZZ_MODE])
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!(
            "xtask test: fuzz smoke run skipped: the fuzz targets do not build with this \
             nightly toolchain (see the output above)"
        );
        return Ok(());
    }
    for target in FUZZ_TARGETS {
        let limit = format!("-max_total_time={seconds}");
        eprintln!("xtask test: cargo +nightly fuzz run {FUZZ_MODE} {target} -- {limit}");
        let status = nightly_cargo(
            &dir,
            &[
                "fuzz",
                "run",
                FUZZ_MODE,
                target,
                "--",
                &limit,
                "-rss_limit_mb=4096",
            ],
        )
        .status()
        .with_context(|| format!("running the fuzz target {target}"))?;
        if !status.success() {
            bail!("fuzz target {target} failed: its crashing input is in fuzz/artifacts/{target}");
        }
    }
    Ok(())
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
    if !args.no_fuzz {
        fuzz_smoke(args.fuzz_seconds)?;
    }
    eprintln!("xtask test: all passed");
    Ok(())
}
