//! Arguments of `cargo xtask bench spmm`.

use crate::bench::ValueArg;
use sparserl_rt::dense::DenseLayout;
use std::path::PathBuf;

/// Which matrices.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpmmSuite {
    /// The generated large graphs (bandwidth-bound).
    Large,
    /// The real matrices of `--matrices` (mostly latency-bound).
    Real,
    /// Both.
    All,
}

/// Which dense layouts (X and Y).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutArg {
    /// Row-major (PyTorch / GNN feature matrices).
    RowMajor,
    /// Column-major (BLAS).
    ColMajor,
    /// Both.
    Both,
}

impl LayoutArg {
    /// The layouts, row-major first.
    pub fn layouts(self) -> Vec<DenseLayout> {
        match self {
            LayoutArg::RowMajor => vec![DenseLayout::RowMajor],
            LayoutArg::ColMajor => vec![DenseLayout::ColMajor],
            LayoutArg::Both => DenseLayout::ALL.to_vec(),
        }
    }
}

/// Which renumbering ours runs on (cuSPARSE keeps the given order).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReorderArg {
    /// The given order.
    None,
    /// Reverse Cuthill-McKee.
    Rcm,
    /// Decreasing degree (hubs first).
    Degree,
}

impl ReorderArg {
    /// The runtime's renumbering.
    pub fn reorder(self) -> sparserl_rt::reorder::Reorder {
        use sparserl_rt::reorder::Reorder;
        match self {
            ReorderArg::None => Reorder::None,
            ReorderArg::Rcm => Reorder::Rcm,
            ReorderArg::Degree => Reorder::Degree,
        }
    }
}

/// Where every variant of the space is measured besides the search.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepArg {
    /// Nowhere.
    None,
    /// On the real matrices.
    Real,
    /// On every matrix (slow on the large graphs).
    All,
}

/// Arguments of `cargo xtask bench spmm`.
#[derive(clap::Args, Debug, Clone)]
pub struct SpmmArgs {
    /// Widths n (columns of X and Y).
    #[arg(long = "n", value_delimiter = ',', default_values_t = [16, 32, 64, 128, 256])]
    pub widths: Vec<usize>,
    /// Dense layout of X and Y.
    #[arg(long, value_enum, default_value = "row-major")]
    pub layout: LayoutArg,
    /// Matrix suite.
    #[arg(long, value_enum, default_value = "all")]
    pub suite: SpmmSuite,
    /// Value types on the real matrices (the large graphs run f32).
    #[arg(long, value_enum, default_value = "both")]
    pub value: ValueArg,
    /// Directory of real Matrix Market matrices (default `.device/matrices`,
    /// else `tests/fixtures/matrices`).
    #[arg(long)]
    pub matrices: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "target/bench")]
    pub out: PathBuf,
    /// File stem of the outputs (`<stem>.json`, `.md`, `.svg`).
    #[arg(long, default_value = "spmm-h200")]
    pub stem: String,
    /// Recorded in the JSON: the commit that was built.
    #[arg(long, default_value = "unknown")]
    pub commit: String,
    /// Small graphs (about 1/64 of the rows), widths 16 and 64, the first
    /// six real matrices: a smoke run of a minute or two.
    #[arg(long)]
    pub quick: bool,
    /// Time guard in seconds: a case starts only while the time elapsed
    /// plus the mean time of a case of its suite so far stays within it
    /// (the others are recorded as skipped).
    #[arg(long, default_value_t = 330.0)]
    pub max_seconds: f64,
    /// Timed repetitions per measurement.
    #[arg(long, default_value_t = 20)]
    pub reps: u32,
    /// Keep only matrices whose name or class is in this comma-separated list.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// The product's measured-search budget per large case, seconds.
    #[arg(long, default_value_t = 2.0)]
    pub budget_large: f64,
    /// The same per real case.
    #[arg(long, default_value_t = 0.15)]
    pub budget_real: f64,
    /// Also measure every variant of the space (the best of the space and
    /// the untuned fallback beside ours): on the real matrices, everywhere,
    /// or nowhere.
    #[arg(long, value_enum, default_value = "none")]
    pub sweep: SweepArg,
    /// Timed repetitions of every correct variant of our space in the sweep.
    #[arg(long, default_value_t = 3)]
    pub sweep_reps: u32,
    /// Fastest variants of the sweep re-timed with `--reps`.
    #[arg(long, default_value_t = 3)]
    pub finalists: usize,
    /// Skip the X-row gather floor.
    #[arg(long)]
    pub no_floor: bool,
    /// Ours on square matrices renumbered this way (`P A Pᵀ`, X's rows
    /// permuted; the kernel in the stored order, as after
    /// `dense_to_internal`), cuSPARSE on the given order; the two row
    /// conversions around a call are timed apart (`convert_us`).
    #[arg(long, value_enum, default_value = "none")]
    pub reorder: ReorderArg,
    /// Only rewrite the Markdown and SVG views of this JSON report beside it.
    #[arg(long)]
    pub render: Option<PathBuf>,
    /// Only merge these reports (`.json` or `.json.gz`, one GPU) into
    /// `<out>/<stem>.json` with its views, the summary over all their rows.
    #[arg(long, num_args = 1.., conflicts_with = "render")]
    pub merge: Vec<PathBuf>,
}

impl SpmmArgs {
    /// Whether `--only` keeps a matrix.
    pub fn keeps(&self, name: &str, class: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name || o == class)
    }

    /// The widths to run (`--quick`: 16 and 64 of them, or the first).
    pub fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.widths.iter().copied().filter(|&n| n > 0).collect();
        if self.quick {
            let keep: Vec<usize> = w.iter().copied().filter(|n| matches!(n, 16 | 64)).collect();
            w = if keep.is_empty() {
                w.into_iter().take(1).collect()
            } else {
                keep
            };
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: SpmmArgs,
    }

    fn parse(a: &[&str]) -> SpmmArgs {
        Cli::try_parse_from(std::iter::once("spmm").chain(a.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn widths_layouts_and_filters() {
        let d = parse(&[]);
        assert_eq!(d.widths(), vec![16, 32, 64, 128, 256]);
        assert_eq!(d.layout.layouts(), vec![DenseLayout::RowMajor]);
        assert!(d.keeps("anything", "any-class"));
        let q = parse(&["--quick", "--layout", "both", "--only", "cnr-2000,mesh"]);
        assert_eq!(q.widths(), vec![16, 64]);
        assert_eq!(q.layout.layouts().len(), 2);
        assert!(q.keeps("cnr-2000", "web") && q.keeps("x", "mesh") && !q.keeps("x", "y"));
        assert_eq!(parse(&["--quick", "--n", "8,0,24"]).widths(), vec![8]);
        assert_eq!(parse(&["--n", "8,0,24"]).widths(), vec![8, 24]);
    }
}
