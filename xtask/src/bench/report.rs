//! Report types and the summary.

use super::*;

/// One cuSPARSE algorithm's outcome.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AlgResult {
    /// Enumerator name.
    pub alg: String,
    /// Passed the correctness check.
    pub correct: bool,
    /// Relative error of the check.
    pub rel_err: Option<f64>,
    /// Effective bandwidth, GB/s.
    pub gbs: Option<f64>,
    /// Median microseconds per SpMV.
    pub median_us: Option<f64>,
    /// Why it failed or anything notable.
    pub error: Option<String>,
}

/// One matrix and value type.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Matrix name.
    pub matrix: String,
    /// Structure class.
    pub class: String,
    /// Nonzeros.
    pub nnz: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `f32` / `f64`.
    pub value: String,
    /// Our tuned kernel, GB/s (null when it failed).
    pub ours_gbs: Option<f64>,
    /// Best cuSPARSE algorithm, GB/s (null when every algorithm failed).
    pub cusparse_gbs: Option<f64>,
    /// Best cuSPARSE algorithm.
    pub cusparse_alg: Option<String>,
    /// Template rule, GB/s.
    pub template_gbs: Option<f64>,
    /// Best of our design space, GB/s.
    pub oracle_gbs: Option<f64>,
    /// ours / cuSPARSE.
    pub speedup_vs_cusparse: Option<f64>,
    /// ours / copy bandwidth, percent.
    pub pct_copy: Option<f64>,
    /// Our chosen variant.
    pub variant: Option<String>,
    /// `large` / `real`.
    pub suite: String,
    /// Our back-to-back microseconds per call (real matrices).
    pub ours_latency_us: Option<f64>,
    /// Our CUDA-graph replay microseconds per call (real matrices).
    pub ours_graph_us: Option<f64>,
    /// cuSPARSE back-to-back microseconds per call (real matrices).
    pub cusparse_latency_us: Option<f64>,
    /// cuSPARSE CUDA-graph replay microseconds per call (null if capture failed).
    pub cusparse_graph_us: Option<f64>,
    /// Device bytes of the arrays our chosen kernel reads (its layout: CSR,
    /// or the diagonal layout for diagonal kernels).
    pub device_bytes: usize,
    /// Device bytes of plain CSR (32-bit indices).
    pub csr_bytes: usize,
    /// Distinct candidates our search measured.
    pub search_candidates: usize,
    /// Seconds our search spent.
    pub search_seconds: f64,
    /// Template variant.
    pub template_variant: Option<String>,
    /// Oracle variant.
    pub oracle_variant: Option<String>,
    /// Our relative error.
    pub ours_rel_err: Option<f64>,
    /// Why ours failed (search or correctness), if it did.
    pub ours_error: Option<String>,
    /// Why cuSPARSE failed, if every algorithm did.
    pub cusparse_error: Option<String>,
    /// Every cuSPARSE algorithm tried.
    pub cusparse_algs: Vec<AlgResult>,
    /// Variants of the oracle sweep that passed the check / were measured.
    pub sweep_correct: usize,
    /// Anything else worth knowing (graph capture failures, ...).
    pub notes: Vec<String>,
    /// Seconds this row took.
    pub seconds: f64,
    /// Numbering of our chosen variant (`none`, `rcm`, `degree`).
    #[serde(default)]
    pub reorder: Option<String>,
    /// Host seconds to compute that ordering and renumber the matrix.
    #[serde(default)]
    pub reorder_host_seconds: Option<f64>,
    /// Our chosen kernel alone on the renumbered matrix (no permutation), GB/s.
    #[serde(default)]
    pub ours_kernel_same_order_gbs: Option<f64>,
    /// cuSPARSE's best algorithm on the same renumbered matrix, GB/s.
    #[serde(default)]
    pub cusparse_same_order_gbs: Option<f64>,
    /// That algorithm.
    #[serde(default)]
    pub cusparse_same_order_alg: Option<String>,
    /// ours (kernel alone) / cuSPARSE, both on the renumbered matrix.
    #[serde(default)]
    pub speedup_same_order: Option<f64>,
    /// Gather floor of the matrix in the given order, GB/s (compulsory CSR
    /// bytes / median time of the gather microbenchmark, the faster flavour;
    /// bandwidth-bound suites only).
    #[serde(default)]
    pub gather_floor_gbs: Option<f64>,
    /// The faster flavour of the gather floor's `x` loads (`plain`, `ldg`).
    #[serde(default)]
    pub gather_floor_load: Option<String>,
    /// Gather floor of the matrix our kernel alone and cuSPARSE ran on in
    /// the same-order comparison (the given one when ours keeps it), GB/s.
    #[serde(default)]
    pub gather_floor_same_order_gbs: Option<f64>,
}

/// A matrix that was not benchmarked, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    /// Matrix name.
    pub matrix: String,
    /// `large` / `real`.
    pub suite: String,
    /// Value types not run.
    pub value: String,
    /// Why.
    pub reason: String,
}

/// Summary over a set of rows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SummaryPart {
    /// Geometric mean of ours / cuSPARSE GB/s over large matrices.
    pub geomean_speedup_large: Option<f64>,
    /// Same over real matrices.
    pub geomean_speedup_real: Option<f64>,
    /// Same over the large irregular matrices (ours with the permutations
    /// inside the timing, cuSPARSE on the given order).
    #[serde(default)]
    pub geomean_speedup_irregular: Option<f64>,
    /// Over the large irregular matrices, our kernel alone / cuSPARSE, both
    /// on the same renumbered matrix (the given one when ours keeps it).
    #[serde(default)]
    pub geomean_speedup_irregular_same_order: Option<f64>,
    /// Smallest ours / cuSPARSE over both large sets (large and irregular).
    #[serde(default)]
    pub min_speedup_large_all: Option<f64>,
    /// Geometric mean of cuSPARSE / ours back-to-back latency over real matrices.
    pub geomean_speedup_real_latency: Option<f64>,
    /// Geometric mean of cuSPARSE / ours graph-replay latency over real matrices.
    pub geomean_speedup_real_graph: Option<f64>,
    /// Smallest ours / cuSPARSE.
    pub min_speedup: Option<f64>,
    /// Where the smallest speedup occurs (`name (value)`).
    pub min_speedup_matrix: Option<String>,
    /// Geometric mean of ours / template GB/s.
    pub geomean_ours_vs_template: Option<f64>,
    /// Geometric mean of ours / oracle GB/s.
    pub geomean_ours_vs_oracle: Option<f64>,
    /// Rows summarized.
    pub rows: usize,
    /// Rows where our kernel failed.
    pub ours_failures: usize,
    /// Rows where every cuSPARSE algorithm failed.
    pub cusparse_failures: usize,
    /// Over the large set's rows with a gather floor: the geometric mean of
    /// [`gather::reachable`] (the better of ours and a CSR kernel at the
    /// floor of the best measured order, permutations included).
    #[serde(default)]
    pub geomean_reachable_large: Option<f64>,
    /// The same over the irregular set.
    #[serde(default)]
    pub geomean_reachable_irregular: Option<f64>,
    /// Large and irregular rows (`name (value)`) where ours and cuSPARSE
    /// are both within 5% of the gather floor of the given order: at the
    /// gather limit.
    #[serde(default)]
    pub at_gather_limit: Vec<String>,
}

/// The summary: over all rows, then per value type.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Over all rows.
    #[serde(flatten)]
    pub all: SummaryPart,
    /// Over `f32` rows.
    pub f32: SummaryPart,
    /// Over `f64` rows.
    pub f64: SummaryPart,
    /// Matrices skipped.
    pub skipped: usize,
}

/// The whole report (`spmv-h200.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// Device name.
    pub gpu: String,
    /// Driver version.
    pub driver: String,
    /// Date, YYYY-MM-DD.
    pub date: String,
    /// The exact command.
    pub command: String,
    /// The commit that was built (`--commit`).
    #[serde(default)]
    pub commit: String,
    /// The policy that proposed the search's first candidates (its version:
    /// `learned-1-<sha256>` or the prior's).
    #[serde(default)]
    pub policy: String,
    /// Device copy bandwidth, GB/s.
    pub copy_gbs: f64,
    /// One row per matrix and value type.
    pub rows: Vec<Row>,
    /// Summary.
    pub summary: Summary,
    /// Matrices skipped (time guard, unreadable, empty).
    pub skipped: Vec<Skipped>,
    /// Whether `cusparseSpMV_preprocess` was used.
    pub cusparse_preprocess: bool,
    /// Total seconds.
    pub elapsed_seconds: f64,
    /// Search budgets (large, real), seconds.
    pub budgets: [f64; 2],
    /// Small smoke-run sizes.
    pub quick: bool,
    /// Written after a matrix while the run went on: the run may have been
    /// stopped before the rest (the final write clears it).
    #[serde(default)]
    pub partial: bool,
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub(super) fn gm(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(common::geomean(xs))
    }
}

/// Summary of `rows` (any mix of suites and value types).
pub fn summarize_part<'a>(rows: impl Iterator<Item = &'a Row>) -> SummaryPart {
    let rows: Vec<&Row> = rows.collect();
    let speed = |suite: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.suite == suite)
            .filter_map(|r| ratio(r.ours_gbs, r.cusparse_gbs))
            .collect()
    };
    let reach = |suite: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.suite == suite && r.gather_floor_gbs.is_some())
            .filter_map(|r| gather::reachable(r))
            .collect()
    };
    let lat: Vec<f64> = rows
        .iter()
        .filter(|r| r.suite == "real")
        .filter_map(|r| ratio(r.cusparse_latency_us, r.ours_latency_us))
        .collect();
    let graph: Vec<f64> = rows
        .iter()
        .filter(|r| r.suite == "real")
        .filter_map(|r| ratio(r.cusparse_graph_us, r.ours_graph_us))
        .collect();
    let min = rows
        .iter()
        .filter_map(|r| ratio(r.ours_gbs, r.cusparse_gbs).map(|s| (s, *r)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let tmpl: Vec<f64> = rows
        .iter()
        .filter_map(|r| ratio(r.ours_gbs, r.template_gbs))
        .collect();
    let orac: Vec<f64> = rows
        .iter()
        .filter_map(|r| ratio(r.ours_gbs, r.oracle_gbs))
        .collect();
    let irregular_same: Vec<f64> = rows
        .iter()
        .filter(|r| r.suite == "irregular")
        .filter_map(|r| r.speedup_same_order)
        .collect();
    let min_large = rows
        .iter()
        .filter(|r| r.suite == "large" || r.suite == "irregular")
        .filter_map(|r| ratio(r.ours_gbs, r.cusparse_gbs))
        .min_by(f64::total_cmp);
    SummaryPart {
        geomean_speedup_large: gm(&speed("large")),
        geomean_speedup_real: gm(&speed("real")),
        geomean_speedup_irregular: gm(&speed("irregular")),
        geomean_speedup_irregular_same_order: gm(&irregular_same),
        min_speedup_large_all: min_large,
        geomean_speedup_real_latency: gm(&lat),
        geomean_speedup_real_graph: gm(&graph),
        min_speedup: min.map(|m| m.0),
        min_speedup_matrix: min.map(|m| format!("{} ({})", m.1.matrix, m.1.value)),
        geomean_ours_vs_template: gm(&tmpl),
        geomean_ours_vs_oracle: gm(&orac),
        rows: rows.len(),
        ours_failures: rows.iter().filter(|r| r.ours_gbs.is_none()).count(),
        cusparse_failures: rows.iter().filter(|r| r.cusparse_gbs.is_none()).count(),
        geomean_reachable_large: gm(&reach("large")),
        geomean_reachable_irregular: gm(&reach("irregular")),
        at_gather_limit: rows
            .iter()
            .filter(|r| r.suite == "large" || r.suite == "irregular")
            .filter(|r| gather::at_gather_limit(r))
            .map(|r| format!("{} ({})", r.matrix, r.value))
            .collect(),
    }
}

/// The full summary of a report's rows.
pub fn summarize(rows: &[Row], skipped: usize) -> Summary {
    Summary {
        all: summarize_part(rows.iter()),
        f32: summarize_part(rows.iter().filter(|r| r.value == "f32")),
        f64: summarize_part(rows.iter().filter(|r| r.value == "f64")),
        skipped,
    }
}
