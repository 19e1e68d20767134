//! `cargo xtask provision`: NVRTC and ptxas from the PyPI wheels into `.tools/cuda`.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Pinned wheels (NVRTC for compiling, the nvcc wheel for ptxas).
pub const WHEELS: &[&str] = &["nvidia-cuda-nvrtc==13.0.88", "nvidia-cuda-nvcc==13.0.88"];

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Reinstall even when the tools are present.
    #[arg(long)]
    pub force: bool,
}

/// The provisioned toolkit root (`.tools/cuda/nvidia/cu13`).
pub fn toolkit_root() -> PathBuf {
    crate::common::workspace_root().join(".tools/cuda/nvidia/cu13")
}

/// `pip install --no-deps --target <target> <wheels>` with the first Python found.
pub fn pip_install(target: &Path, wheels: &[&str]) -> Result<()> {
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .context("python3 with pip is needed to install the pinned wheels")?;
    let status = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--upgrade",
            "--target",
        ])
        .arg(target)
        .args(wheels)
        .status()
        .context("running pip")?;
    if !status.success() {
        bail!("pip failed to install {}", wheels.join(" "));
    }
    Ok(())
}

/// Installs the wheels unless already present; returns the toolkit root.
pub fn run(args: Args) -> Result<PathBuf> {
    let root = toolkit_root();
    let ready = root.join("lib/libnvrtc.so.13").exists() && root.join("bin/ptxas").exists();
    if ready && !args.force {
        eprintln!("provision: NVRTC and ptxas present in {}", root.display());
        return Ok(root);
    }
    let target = crate::common::workspace_root().join(".tools/cuda");
    eprintln!(
        "provision: installing {} into {}",
        WHEELS.join(" "),
        target.display()
    );
    pip_install(&target, WHEELS)?;
    if !root.join("lib/libnvrtc.so.13").exists() {
        bail!(
            "the wheels did not provide {}",
            root.join("lib/libnvrtc.so.13").display()
        );
    }
    Ok(root)
}
