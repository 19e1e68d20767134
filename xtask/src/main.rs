//! `cargo xtask`: SparseRL's developer and release workflows.
//!
//! One module per command. Commands that need a GPU (`gpu-check`, `retune`,
//! `collect`, `bench`) are plain binaries too: build with
//! `cargo build --release -p xtask` and run `target/release/xtask <command>`
//! on the GPU machine.

mod app_vendor;
mod bench;
mod bench_app;
mod bench_scale;
mod bench_spmm;
mod collect_energy;
mod common;
mod coverage;
mod cusparse;
mod cusparse_spmm;
mod demo;
mod energy;
mod energy_objective;
mod explain;
mod families;
mod gpu_check;
mod lab;
mod policy;
mod policy_classes;
mod provision;
mod ptxas;
mod retune;
mod retune_spmm;
mod spmm_cross;
mod spmm_loco;
mod spmm_records;
mod spmm_sweep;
mod spmv_forest;
mod spmv_records;
mod test;
mod vector_ptx;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "SparseRL developer workflows")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install NVRTC and ptxas from the PyPI wheels into `.tools/cuda` (no GPU needed).
    Provision(provision::Args),
    /// Provision, then run formatting and lint checks and every test.
    Test(test::Args),
    /// Build example-app, report the generated kernels, run it when a GPU is present.
    Demo(demo::Args),
    /// Check every generator variant against a float64 reference on a GPU.
    GpuCheck(gpu_check::Args),
    /// Re-run the measured search on this GPU and write the lock file.
    Retune(retune::Args),
    /// Measure the design space over a corpus and write a training dataset.
    Collect(retune::CollectArgs),
    /// Side-by-side benchmark: ours vs cuSPARSE vs template rule vs copy bandwidth.
    Bench(bench::Args),
    /// SpMV past 2^31 nonzeros: 64-bit offsets, ours vs cuSPARSE 32/64-bit, generated at scale.
    BenchScale(bench_scale::Args),
    /// Energy per SpMV through NVML: ours vs cuSPARSE, the energy objective's pick.
    Energy(energy::Args),
    /// One kernel with `objective = "energy"` tuned by retune's path and a
    /// measured build: prints the lock entry and the build's record.
    EnergyObjective(energy_objective::Args),
    /// Show every measurement behind a kernel's choice.
    Explain(explain::Args),
    /// Train a policy with libtorch (installed into `.tools/torch` if missing).
    Train(policy::TrainArgs),
    /// Evaluate the committed policy offline on its held-out H200 measurements.
    EvalPolicy(policy::EvalArgs),
    /// Evaluate the committed policy per structure class over repeated benchmark runs (offline).
    EvalClasses(policy_classes::Args),
    /// Distance in feature space from each evaluation record to the nearest training record (offline).
    Coverage(coverage::Args),
    /// Leave-one-class-out evaluation of training on the measured datasets (libtorch, CPU).
    PolicyLoco(policy::TrainArgs),
    /// The SpMM records a no-GPU build picks from: build them from benchmark reports, judge them.
    SpmmRecords(spmm_records::Args),
    /// The SpMV records a no-GPU build consults where the policy is unsure: build them from the datasets.
    SpmvRecords(spmv_records::Args),
    /// The SpMV records' forest pick: train it, or judge it leave-one-class-out (offline).
    SpmvForest(spmv_forest::Args),
    /// Whole iterations: CG and PageRank, ours vs cuSPARSE + cuBLAS.
    BenchApp(bench_app::Args),
    /// Check every fused-epilogue variant and CUDA-graph replay on a GPU.
    FusedCheck(bench_app::check::Args),
    /// Build a throwaway crate on this GPU and require its shipped images checked against float64.
    ShippedCheck(bench_app::shipped::Args),
    /// Register / stack / spill report of a generated kernel and its fused entries.
    Ptxas(ptxas::Args),
    /// Time candidate kernel builds side by side (developer tool).
    #[command(hide = true)]
    KernelLab(lab::Args),
    /// Compile sparserl-rt's vector kernels to the PTX the runtime embeds.
    VectorPtx(vector_ptx::Args),
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Provision(a) => provision::run(a).map(|_| ()),
        Cmd::Test(a) => test::run(a),
        Cmd::Demo(a) => demo::run(a),
        Cmd::GpuCheck(a) => gpu_check::run(a),
        Cmd::Retune(a) => retune::run(a),
        Cmd::Collect(a) => retune::collect(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::BenchScale(a) => bench_scale::run(a),
        Cmd::Energy(a) => energy::run(a),
        Cmd::EnergyObjective(a) => energy_objective::run(a),
        Cmd::Explain(a) => explain::run(a),
        Cmd::Train(a) => policy::train(a),
        Cmd::EvalPolicy(a) => policy::eval(a),
        Cmd::EvalClasses(a) => policy_classes::run(a),
        Cmd::Coverage(a) => coverage::run(a),
        Cmd::PolicyLoco(a) => policy::loco(a),
        Cmd::SpmmRecords(a) => spmm_records::run(a),
        Cmd::SpmvRecords(a) => spmv_records::run(a),
        Cmd::SpmvForest(a) => spmv_forest::run(a),
        Cmd::VectorPtx(a) => vector_ptx::run(a),
        Cmd::BenchApp(a) => bench_app::run(a),
        Cmd::FusedCheck(a) => bench_app::check::command(a),
        Cmd::ShippedCheck(a) => bench_app::shipped::command(a),
        Cmd::Ptxas(a) => ptxas::run(a),
        Cmd::KernelLab(a) => lab::run(a),
    }
}
