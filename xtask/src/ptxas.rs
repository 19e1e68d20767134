//! `cargo xtask ptxas`: the register, stack and spill report of a generated
//! kernel (plain and fused entries), from NVRTC and `ptxas -v`, no GPU needed.

use anyhow::{Context, Result, bail};
use sparserl_rt::{Epilogue, Strategy, ValueType, Variant};

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Strategy (e.g. `diagonal`, `tiled`, `group-per-row`).
    #[arg(long)]
    pub strategy: String,
    /// Threads per block.
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Lanes per row (group strategies).
    #[arg(long, default_value_t = 8)]
    pub lanes: u32,
    /// `f32` or `f64`.
    #[arg(long, default_value = "f64")]
    pub value: String,
    /// Target architecture.
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// Print the generated source too.
    #[arg(long)]
    pub source: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let strategy = Strategy::ALL
        .into_iter()
        .find(|s| s.as_str() == args.strategy)
        .with_context(|| format!("unknown strategy {}", args.strategy))?;
    let value = match args.value.as_str() {
        "f32" => ValueType::F32,
        "f64" => ValueType::F64,
        other => bail!("unknown value type {other}"),
    };
    let v = Variant {
        block: args.block,
        lanes: args.lanes,
        ..Variant::of(strategy)
    };
    let src = sparserl_build::codegen::generate_with(&v, value, &Epilogue::ALL)?;
    if args.source {
        println!("{}", src.source);
    }
    let ptx = sparserl_rt::nvrtc::compile_ptx(&src.source, &args.arch, &[])?;
    let report = sparserl_rt::nvrtc::ptxas_check(&ptx, &args.arch)?;
    for e in report.entries {
        println!(
            "{:<60} regs {:>3} stack {:>4} spill st/ld {}/{}",
            e.name, e.registers, e.stack_frame, e.spill_stores, e.spill_loads
        );
    }
    Ok(())
}
