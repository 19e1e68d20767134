//! `cargo xtask energy-objective`: one SpMV kernel declared with an energy
//! objective, tuned on the GPU at hand the two ways the product does it:
//! `retune`'s path (the time search, then the energy phase, written into a
//! lock entry, printed) and a build's measured path (`Builder` in full
//! mode, its cache entry's record printed as `cargo xtask explain` shows
//! it). The crate is generated under the target directory.

use anyhow::{Context, Result, anyhow};
use sparserl_build::{Builder, GpuTuner, LOCK_FILE, Mode, Output};
use std::path::PathBuf;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The objective as written in a descriptor, e.g. `"energy"` or
    /// `{ time = 0.5, energy = 0.5 }`.
    #[arg(long, default_value = "\"energy\"")]
    pub objective: String,
    /// Rows of the power-law sample.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: usize,
    /// Mean nonzeros per row.
    #[arg(long, default_value_t = 16.0)]
    pub avg_degree: f64,
    /// Value type.
    #[arg(long, default_value = "f32")]
    pub value: String,
    /// Search budget per run, seconds.
    #[arg(long, default_value_t = 3.0)]
    pub budget: f64,
    /// Skip the build's path (run only `retune`'s).
    #[arg(long)]
    pub no_build: bool,
}

/// The generated crate's manifest.
pub fn manifest(args: &Args) -> String {
    format!(
        "[package]\nname = \"energy-objective-demo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [package.metadata.sparserl]\nbudget-seconds = {}\nobjective = {}\n\n\
         [[package.metadata.sparserl.kernel]]\nname = \"web\"\nop = \"spmv\"\nvalue = \"{}\"\n\
         pattern = {{ kind = \"power-law\", rows = {}, avg-degree = {}, exponent = 2.1, samples = 1 }}\n",
        args.budget, args.objective, args.value, args.rows, args.avg_degree
    )
}

/// Writes the crate (checking its descriptor) and returns its directory.
fn write_crate(args: &Args) -> Result<PathBuf> {
    let root = crate::common::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let dir = target.join("energy-objective");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let toml = dir.join("Cargo.toml");
    std::fs::write(&toml, manifest(args))?;
    // A previous run's lock entry would be used instead of measuring.
    let _ = std::fs::remove_file(dir.join(LOCK_FILE));
    sparserl_build::read_descriptor(&toml)?;
    Ok(dir)
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let dir = write_crate(&args)?;
    GpuTuner::probe().map_err(|e| {
        anyhow!(
            "no GPU: {e}. `energy-objective` measures kernels and needs an NVIDIA GPU with its \
             driver and NVRTC; run `target/release/xtask energy-objective` on the GPU machine"
        )
    })?;
    println!(
        "descriptor {}:\n{}",
        dir.join("Cargo.toml").display(),
        manifest(&args)
    );
    crate::retune::run(crate::retune::Args {
        manifest_dir: dir.clone(),
        out: dir.join("retune"),
        budget: Some(args.budget),
        no_exhaustive: true,
        check: false,
        kernels: Vec::new(),
    })?;
    let lock = std::fs::read_to_string(dir.join(LOCK_FILE)).context("reading the lock file")?;
    println!("\n--- {LOCK_FILE} (retune's path) ---\n{lock}");
    if args.no_build {
        return Ok(());
    }
    // The build's measured path: no lock file, no cache.
    std::fs::remove_file(dir.join(LOCK_FILE))?;
    let report = Builder::new(&dir, dir.join("out"))
        .mode(Mode::Full)
        .cache_dir(None)
        .output(Output::Terminal)
        .try_run()
        .context("the measured build")?;
    let k = report.kernels.first().context("no kernel built")?;
    println!(
        "\n--- the build's measured path ---\nkernel `{}`: {} ({})",
        k.name, k.entry.variant, k.entry.note
    );
    match &k.entry.objective {
        Some(r) => crate::explain::print_objective(r),
        None => println!("no objective record (the objective is time)"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(objective: &str) -> Args {
        Args {
            objective: objective.into(),
            rows: 1000,
            avg_degree: 8.0,
            value: "f32".into(),
            budget: 1.0,
            no_build: false,
        }
    }

    #[test]
    fn the_generated_crate_declares_the_objective() {
        use sparserl_build::Objective;
        let parse = |o: &str| {
            sparserl_build::descriptor::parse_descriptor(
                std::path::Path::new("demo/Cargo.toml"),
                &manifest(&args(o)),
            )
        };
        assert_eq!(
            parse("\"energy\"").unwrap().kernels[0].objective,
            Objective::Energy
        );
        assert_eq!(
            parse("{ time = 0.5, energy = 0.5 }").unwrap().kernels[0].objective,
            Objective::Weighted {
                time: 0.5,
                energy: 0.5
            }
        );
        let e = parse("\"power\"").unwrap_err();
        assert_eq!(e.key_path(), "package.metadata.sparserl.objective");
    }

    #[test]
    fn without_a_gpu_the_command_says_so() {
        if sparserl_rt::device::driver_present() {
            return; // a GPU machine: the command would measure
        }
        let e = run(args("\"energy\"")).unwrap_err();
        assert!(format!("{e:#}").contains("no GPU"), "{e:#}");
    }
}
