//! `cargo xtask vector-ptx`: compiles sparserl-rt's vector kernels
//! (`sparserl-rt/kernels/vector_ops.cu`) to the PTX that the runtime embeds
//! (`kernels/vector_ops.ptx`, compute capability 8.0), headed by the sha256
//! of the source so a unit test notices a stale file. `--check` compiles and
//! compares instead of writing.

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Compile and fail when the committed PTX differs from a fresh compile.
    #[arg(long)]
    pub check: bool,
}

/// The PTX file's text for `source`: the hash line, then NVRTC's PTX.
pub fn render(source: &str) -> Result<String> {
    let ptx = sparserl_rt::nvrtc::compile_ptx(source, "sm_80", &[])
        .context("compiling sparserl-rt/kernels/vector_ops.cu with NVRTC")?;
    let hex: String = Sha256::digest(source.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!("// source-sha256: {hex}\n{ptx}"))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    crate::provision::run(crate::provision::Args { force: false })?;
    let dir = crate::common::workspace_root().join("sparserl-rt/kernels");
    let source = std::fs::read_to_string(dir.join("vector_ops.cu"))?;
    let text = render(&source)?;
    let out = dir.join("vector_ops.ptx");
    if args.check {
        let committed = std::fs::read_to_string(&out).unwrap_or_default();
        if committed != text {
            bail!("{} is stale: run `cargo xtask vector-ptx`", out.display());
        }
        eprintln!("vector-ptx: {} is up to date", out.display());
        return Ok(());
    }
    std::fs::write(&out, text)?;
    eprintln!("vector-ptx: wrote {}", out.display());
    Ok(())
}
