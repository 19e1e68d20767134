//! Arguments of `cargo xtask bench`.

use super::*;

/// Which matrices to benchmark.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteArg {
    /// Large synthetic matrices (well over L2).
    Large,
    /// Large irregular graphs and meshes (most randomly numbered).
    Irregular,
    /// Both large sets (bandwidth-bound).
    Bandwidth,
    /// Real matrices from `--matrices` (latency-bound).
    Real,
    /// All three.
    All,
}

/// Which value types to benchmark.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueArg {
    /// 32-bit floats.
    F32,
    /// 64-bit floats.
    F64,
    /// Both.
    Both,
}

impl ValueArg {
    pub(crate) fn types(self) -> Vec<ValueType> {
        match self {
            ValueArg::F32 => vec![ValueType::F32],
            ValueArg::F64 => vec![ValueType::F64],
            ValueArg::Both => vec![ValueType::F32, ValueType::F64],
        }
    }
}

/// Other operations than SpMV (`cargo xtask bench spmm ...`).
#[derive(clap::Subcommand, Debug)]
pub enum BenchOp {
    /// SpMM `Y = A X`: ours vs cuSPARSE SpMM vs the X-row gather floor.
    Spmm(Box<crate::bench_spmm::SpmmArgs>),
}

/// Arguments of `cargo xtask bench` (SpMV; `bench spmm` for SpMM).
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Benchmark another operation (the flags below are SpMV's).
    #[command(subcommand)]
    pub op: Option<BenchOp>,
    /// Matrix suite.
    #[arg(long, value_enum, default_value = "all")]
    pub suite: SuiteArg,
    /// Value types for the real matrices.
    #[arg(long, value_enum, default_value = "both")]
    pub value: ValueArg,
    /// Value types for the large synthetic matrices.
    #[arg(long = "large-value", value_enum, default_value = "f32")]
    pub large_value: ValueArg,
    /// Directory of real Matrix Market matrices (default `.device/matrices`,
    /// else `tests/fixtures/matrices`).
    #[arg(long)]
    pub matrices: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "target/bench")]
    pub out: PathBuf,
    /// Search budget in seconds per large matrix.
    #[arg(long, default_value_t = 6.0)]
    pub budget_large: f64,
    /// Search budget in seconds per real matrix.
    #[arg(long, default_value_t = 2.0)]
    pub budget_real: f64,
    /// Small synthetic sizes, for a smoke run.
    #[arg(long)]
    pub quick: bool,
    /// Total time guard in seconds: a matrix is started only while the time
    /// elapsed plus the mean time per matrix so far stays within it; the
    /// others are skipped (and recorded as skipped).
    #[arg(long, default_value_t = 480.0)]
    pub max_seconds: f64,
    /// Where to write the sweep dataset (default `<out>/sweep.json.gz`;
    /// gzip-compressed when the name ends in `.gz`).
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// Timed repetitions per variant in the oracle sweep.
    #[arg(long, default_value_t = 10)]
    pub sweep_reps: u32,
    /// Timed repetitions for the finalists (ours, template, oracle, cuSPARSE).
    #[arg(long, default_value_t = 50)]
    pub reps: u32,
    /// Keep only matrices whose name or class is in this comma-separated
    /// list (default: every matrix).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Also benchmark synthetic matrices of the training corpus (`xtask
    /// collect`), as suite `corpus` with the real matrices' budget: `all`, or
    /// a comma-separated list of names (default: none).
    #[arg(long, value_delimiter = ',')]
    pub corpus: Vec<String>,
    /// File stem of the outputs (`<stem>.json`, `.md`, `.svg`).
    #[arg(long, default_value = "spmv-h200")]
    pub stem: String,
    /// Recorded in the JSON: the commit that was built.
    #[arg(long, default_value = "unknown")]
    pub commit: String,
    /// Skip the oracle sweep of the whole design space (about half of a large
    /// matrix's time): no oracle column, no dataset rows.
    #[arg(long)]
    pub no_oracle: bool,
    /// Skip the gather-floor microbenchmark of the bandwidth-bound matrices
    /// (no gather floor table).
    #[arg(long)]
    pub no_gather: bool,
    /// Only rewrite the Markdown and SVG views of this JSON report beside it
    /// (no GPU, nothing measured).
    #[arg(long)]
    pub render: Option<PathBuf>,
}

impl Args {
    /// Whether the `--only` filter keeps a matrix.
    pub(super) fn keeps(&self, name: &str, class: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name || o == class)
    }
}
